"""Where a value occurs in a history: the ground truth the exact error taxonomy traces answers to.

A built benchmark knows what every image shows (its ``truth``), what every session says and when,
which images and sessions are a question's evidence and which are not. :class:`HistoryIndex` holds,
for one question at one length, every value of the history in a comparable form:

* **values** (:class:`Value`): a number (``Decimal``), a date (``YYYY/MM/DD``), a clock time
  (``HH:MM``) or a text (the judge's
  normalisation, :func:`memlens.eval.judge.deterministic.normalize_text`), each with where it was
  seen: the image (and the path of the truth leaf), or the session;
* the evidence images in derivation order (``details.image_ids``), the other images of the history
  with their family, the evidence sessions and the other sessions with their dates and texts.

Truth leaves that describe how an image was drawn (colours as RGB lists, bounding boxes, the photo
effect, seeds, layout sizes, calendar cell positions ...) are not values a person reads off the
image and are left out (:data:`DRAWING_KEYS`). Small integers (0-9) say little about where they
come from: they are *not distinctive* (:meth:`Value.distinctive`), so the taxonomy only traces them
at the path the question asks (the same field of a same-family image) and never by a history-wide
search.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from memlens.eval.judge.deterministic import normalize_text

__all__ = [
    "Value",
    "DRAWING_KEYS",
    "canon_number",
    "canon_date",
    "canon_order",
    "canon_time",
    "canon_text",
    "times_in",
    "truth_leaves",
    "text_values",
    "ValueIndex",
    "excluded",
    "Ground",
    "HistoryIndex",
]

#: truth keys that describe how an image was drawn, not what it shows
DRAWING_KEYS = frozenset(
    {
        "accent",
        "bbox",
        "cells",
        "center",
        "cols",
        "date_format",
        "date_shown",
        "days_in_month",
        "facing",
        "family",
        "first_weekday",
        "hour_angle_deg",
        "hour_format",
        "id",
        "is_group",
        "kind",
        "lines",
        "minute_angle_deg",
        "n_weeks",
        "numerals",
        "photo",
        "relations",
        "second_angle_deg",
        "seed",
        "size",
        "style",
    }
)

_NUM_RE = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")
_DATE_RES = (
    re.compile(r"^(\d{4})[/\-.](\d{1,2})[/\-.](\d{1,2})(?:\b|T|\s|$)"),
    re.compile(r"^(\d{4}) (\d{1,2}) (\d{1,2})$"),  # a normalised slash date ("2024 05 31")
)
_TEXT_DATE_RE = re.compile(r"(?<!\d)(\d{4})[/\-.](\d{1,2})[/\-.](\d{1,2})(?!\d)")
_TEXT_NUM_RE = re.compile(r"(?<![\w.,:])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w:]|[.,]\d)")
_ORDER_RE = re.compile(r"^(?:\(\d+\))+$")
_TIME_RE = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::\d{2})?(?![\d:])(?:\s*([ap])\.?\s?m\b\.?)?", re.I)


def canon_text(v: str) -> str:
    """The judge's text normalisation applied until it no longer changes the text: one form for a
    raw value and for a value the judge already normalised (its stemmer is not idempotent:
    "coffee" -> "coffe" -> "coff"), so an answer parsed by the judge meets the raw truth."""
    s = str(v)
    for _ in range(6):
        t = normalize_text(s)
        if t == s:
            break
        s = t
    return s


def canon_number(v) -> Decimal | None:
    """A number leaf or string ("1.89", "1,234.50", 7) as a Decimal; None otherwise."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        try:
            return Decimal(str(v)).normalize()
        except InvalidOperation:
            return None
    s = str(v).strip()
    for pre in ("$", "€", "£", "¥"):
        s = s.removeprefix(pre)
    s = re.sub(r"\s*(?:[A-Z]{3}|kr\.?)$", "", s)
    if not _NUM_RE.match(s):
        return None
    try:
        return Decimal(s.replace(",", "")).normalize()
    except InvalidOperation:
        return None


def canon_date(v) -> str | None:
    """``YYYY/MM/DD`` of a date leaf ("2024/05/31", "2024-05-31", "2024/05/31 (Fri) 07:58")."""
    if not isinstance(v, str):
        return None
    s = v.strip()
    for rx in _DATE_RES:
        m = rx.match(s)
        if m:
            y, mo, d = (int(g) for g in m.groups())
            if 1 <= mo <= 12 and 1 <= d <= 31:
                return f"{y:04d}/{mo:02d}/{d:02d}"
    return None


def times_in(text: str) -> list[str]:
    """Every clock time written in ``text`` as ``HH:MM`` (24-hour; "7:45 PM" -> "19:45")."""
    out = []
    for h, m, ap in _TIME_RE.findall(str(text)):
        hour, minute = int(h), int(m)
        if ap:
            if not 1 <= hour <= 12:
                continue
            hour = hour % 12 + (12 if ap.lower() == "p" else 0)
        if hour < 24 and minute < 60:
            out.append(f"{hour:02d}:{minute:02d}")
    return out


def canon_time(v) -> str | None:
    """``HH:MM`` of a time leaf ("19:00", "7:45 PM"); None otherwise."""
    if not isinstance(v, str):
        return None
    found = times_in(v.strip())
    return found[0] if len(found) == 1 and _TIME_RE.fullmatch(v.strip()) else None


def canon_order(v) -> str | None:
    s = str(v or "").replace(" ", "")
    return s if _ORDER_RE.match(s) else None


@dataclass(frozen=True)
class Value:
    """One comparable value and where it was seen (``where``: ``image`` or ``session``; ``ref``: the
    image's SHA-256 or the session id; ``path``: the truth leaf's path for an image)."""

    kind: str  # number | date | time | text
    key: object  # Decimal | "YYYY/MM/DD" | normalised text
    where: str
    ref: str
    path: tuple = ()

    @property
    def distinctive(self) -> bool:
        """Worth tracing by a history-wide search: not a small integer, not a tiny text."""
        if self.kind == "number":
            k = self.key
            return not (k == k.to_integral_value() and abs(k) < 10)
        if self.kind == "text":
            s = str(self.key)
            return len(s) >= 3 and (any(c.isalpha() for c in s) or sum(c.isdigit() for c in s) >= 4)
        return True

    @property
    def specific(self) -> bool:
        """Rare enough that finding it anywhere in a long history says where an answer came from:
        a date, a clock time, an amount with decimals or a number of 3+ digits, a text of two or
        more words or six or more characters. (A two-digit number or a short word turns up in some
        image or session of a 256K history by chance alone; searched everywhere, such values would
        make "another session" grow with the length of the history.)"""
        if not self.distinctive:
            return False
        if self.kind == "number":
            k = self.key
            return k != k.to_integral_value() or abs(k) >= 100
        if self.kind == "text":
            s = str(self.key)
            return " " in s or len(s) >= 6
        return True


def _leaf_values(v, where: str, ref: str, path: tuple) -> list[Value]:
    out = []
    if isinstance(v, bool) or v is None:
        return out
    num = canon_number(v)
    if num is not None:
        out.append(Value("number", num, where, ref, path))
        return out
    if isinstance(v, str):
        d = canon_date(v)
        if d is not None:
            out.append(Value("date", d, where, ref, path))
        t = canon_time(v)
        if t is not None:
            out.append(Value("time", t, where, ref, path))
        t = canon_text(v)
        if t:
            out.append(Value("text", t, where, ref, path))
            n = canon_number(t)  # "1150*", "#4492": a number once its marks are gone
            if n is not None:
                out.append(Value("number", n, where, ref, path))
    return out


def truth_leaves(truth, ref: str) -> list[Value]:
    """Every value an image shows (its truth without :data:`DRAWING_KEYS` and RGB colour lists)."""
    out: list[Value] = []

    def walk(x, path: tuple) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k in DRAWING_KEYS or (str(k).endswith("color") and isinstance(v, (list, tuple))):
                    continue
                walk(v, (*path, k))
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(v, (*path, i))
        else:
            out.extend(_leaf_values(x, "image", ref, path))

    walk(truth or {}, ())
    return out


def text_values(text: str, where: str, ref: str) -> list[Value]:
    """Dates and numbers written in a text (a session's turns, a session date)."""
    out = [
        Value("date", f"{int(y):04d}/{int(m):02d}/{int(d):02d}", where, ref) for y, m, d in _TEXT_DATE_RE.findall(text)
    ]
    for m in _TEXT_NUM_RE.finditer(_TIME_RE.sub(" ", _TEXT_DATE_RE.sub(" ", text))):
        n = canon_number(m.group(0))
        if n is not None:
            out.append(Value("number", n, where, ref))
    return out


def excluded(v: Value, prefixes: tuple) -> bool:
    return any(v.path[: len(p)] == p for p in prefixes)


class ValueIndex:
    """The distinctive values of one image or session, for lookups: by (kind, key), and the texts
    by each of their words (a text answer is searched by the words it has)."""

    __slots__ = ("keyed", "by_word")

    def __init__(self, values: Iterable[Value]):
        self.keyed: dict[tuple[str, object], list[Value]] = {}
        self.by_word: dict[str, list[Value]] = {}
        for v in values:
            if not v.distinctive:
                continue
            self.keyed.setdefault((v.kind, v.key), []).append(v)
            if v.kind == "text":
                for w in set(str(v.key).split()):
                    self.by_word.setdefault(w, []).append(v)

    def get(self, kind: str, key, exclude: tuple = ()) -> Value | None:
        """The first value of that kind and key whose path starts with none of ``exclude``."""
        for v in self.keyed.get((kind, key), ()):
            if not excluded(v, exclude):
                return v
        return None

    def texts_with(self, words: Iterable[str]) -> Iterator[Value]:
        seen = set()
        for w in words:
            for v in self.by_word.get(w, ()):
                if id(v) not in seen:
                    seen.add(id(v))
                    yield v


class Ground:
    """The ground truth of a built benchmark, with the values of each image and session computed
    once (histories share them): ``truths`` and ``families`` by image id, ``texts`` by session id."""

    def __init__(self, truths: dict[str, dict], families: dict[str, str], texts: dict[str, str]):
        self.truths = truths
        self.families = families
        self.texts = texts
        self._images: dict[str, ValueIndex] = {}
        self._sessions: dict[str, ValueIndex] = {}
        self._norms: dict[str, str] = {}

    @classmethod
    def of_benchmark(cls, built) -> Ground:
        """From a :class:`memlens.core.items.BuiltBenchmark`."""
        imgs = built.images
        texts = {sid: s.text for sid, s in built.sessions.items()}
        return cls({k: r.truth for k, r in imgs.items()}, {k: r.family for k, r in imgs.items()}, texts)

    def image_index(self, image_id: str) -> ValueIndex:
        got = self._images.get(image_id)
        if got is None:
            got = self._images[image_id] = ValueIndex(truth_leaves(self.truths.get(image_id), image_id))
        return got

    def session_index(self, session_id: str) -> ValueIndex:
        got = self._sessions.get(session_id)
        if got is None:
            got = self._sessions[session_id] = ValueIndex(
                text_values(self.texts.get(session_id, ""), "session", session_id)
            )
        return got

    def session_norm(self, session_id: str) -> str:
        got = self._norms.get(session_id)
        if got is None:
            got = self._norms[session_id] = canon_text(self.texts.get(session_id, ""))
        return got


@dataclass
class HistoryIndex:
    """One question's history at one length over a :class:`Ground` (see the module docstring)."""

    ground: Ground
    evidence_images: list[str]
    other_images: list[str]
    evidence_sessions: list[str]
    other_sessions: list[str]
    session_dates: dict[str, str] = field(default_factory=dict)

    def truth(self, image_id: str) -> dict | None:
        return self.ground.truths.get(image_id)

    def family(self, image_id: str) -> str | None:
        return self.ground.families.get(image_id)

    def evidence_families(self) -> set[str]:
        return {f for i in self.evidence_images if (f := self.family(i))}

    def distractor_images(self) -> list[str]:
        """Non-evidence images of the history that share a family with an evidence image."""
        fams = self.evidence_families()
        return [i for i in self.other_images if self.family(i) in fams]

    def image_indexes(self, ids: Iterable[str]) -> Iterator[ValueIndex]:
        for i in ids:
            yield self.ground.image_index(i)

    def session_indexes(self, ids: Iterable[str], *, dates: bool = False) -> Iterator[ValueIndex]:
        """The values said in each session, and with ``dates`` the session's date in this history
        (only for questions whose answer is a session date: with ~100 sessions over 240 days, any
        other date is a session's date by chance alone)."""
        for s in ids:
            yield self.ground.session_index(s)
            d = canon_date(self.session_dates.get(s, "")) if dates else None
            if d:
                yield ValueIndex([Value("date", d, "session", s, ("date",))])

    def session_norm(self, session_id: str) -> str:
        return self.ground.session_norm(session_id)
