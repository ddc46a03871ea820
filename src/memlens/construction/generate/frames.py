"""Mention frames: haystack mentions drawn from the evidence mentions' own phrase distribution.

A *frame* is an evidence mention with its fillers replaced by slots: the shared phrase-bank
pieces (occasions, people, plans, apps, owners, places, rooms), knowledge-update attributes and
descriptors, anaphors of named things, dates and clock times in words, activities. What is left
(the mention template, the "when" phrase, the clause wording) is the frame. :func:`measure`
collects the frames of the built evidence mentions per image family and kind; a haystack mention
of an image of that family and kind is a frame drawn from that pool (so each frame comes back at
the rate the evidence uses it) refilled with values that agree with the haystack image and that
no question uses:

- context compounds (an occasion with its companion and time suffix, a chat, an app page, a
  scene, a clock's or calendar's room) are drawn again and never clash with a reserved context
  (the rule of ``contexts.thing_for``: neither contains the other);
- a chat is with the contact the image shows; a knowledge-update attribute and descriptor come
  from a category the image fits (a café sign gets the café's attribute), never a reserved one;
- an anaphor is one of the image's own category; a date is one no question or fact names; a
  start time lies before the time a clock shows; activities are outside the temporal questions'.

A frame holding anything else that could carry a question's value (digits, quoted names) is not
used, and a filled mention holding a reserved context or a forbidden string is rejected.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import date

from memlens.construction.abilities import contexts, ie, ku, tr
from memlens.construction.generate import echoes
from memlens.construction.text import abstraction
from memlens.core.constants import ORDINAL_WORDS

#: relative time suffixes of an occasion (``contexts.TIME_SUFFIXES``)
SUFFIXES = tuple(contexts.TIME_SUFFIXES)
_SLOT = re.compile(r"\{(\w+)\}")
#: an amount stated in the text ("$29.99", "175.49 DKK", "€4,50")
AMOUNT = r"(?<![\w.,])(?:[$€£¥]\d+(?:[.,]\d{2})?|\d+(?:[.,]\d{2})? [A-Z]{3})(?![\w])"
_AMOUNT = re.compile(AMOUNT)
_AMOUNT_DIGITS = re.compile(r"\d+(?:[.,]\d{2})?")
_AMOUNT_SLOT = re.compile(r"\{amt:([^{}]*)\}")


def _alt(phrases) -> str:
    """A longest-first alternation of literal phrases, token-bounded."""
    ps = sorted({p for p in phrases if p}, key=lambda p: (-len(p), p))
    return r"(?<![\w'])(?:" + "|".join(re.escape(p) for p in ps) + r")(?![\w'])"


def _time_phrases() -> list[str]:
    return [tr.time_words(f"{h:02d}:{m:02d}") for h in range(24) for m in range(0, 60, 5)]


def _ku_attrs() -> dict[str, ku.Category]:
    return {r[0].format(q=q): c for c in ku.CATEGORIES for r in c.roles for q in c.quals}


def _ku_descs() -> dict[str, list[ku.Category]]:
    out: dict[str, list[ku.Category]] = {}
    for c in ku.CATEGORIES:
        for d in c.descriptors:
            out.setdefault(d.split(" ", 1)[1], []).append(c)
    return out


def _anaphors() -> dict[str, str]:
    """anaphor noun phrase (without its ``<image>``) -> its category."""
    out: dict[str, str] = {}
    for cat, ts in abstraction.ANAPHORS.items():
        for t in ts:
            out.setdefault(t[: -len(" " + abstraction.IMAGE)], cat)
    return out


@dataclass(frozen=True)
class Lexicon:
    """The slot vocabularies and the one regular expression that finds them in a mention."""

    pattern: re.Pattern
    attrs: dict[str, ku.Category]
    descs: dict[str, list[ku.Category]]
    anaphors: dict[str, str]
    lists: dict[str, tuple[str, ...]]

    @classmethod
    def build(cls) -> Lexicon:
        lists = {
            "occ": tuple(dict.fromkeys(contexts.OCCASIONS + ie.EXTRA_OCCASIONS)),
            "p": tuple(contexts.PEOPLE),
            "plan": tuple(dict.fromkeys(contexts.PLANS + [p for v in ie.CHAT_PLANS.values() for p in v])),
            "app": tuple(contexts.APPS),
            "owner": tuple(contexts.OWNERS),
            "place": tuple(contexts.PLACES),
            "room": tuple(contexts.ROOMS),
            "act": tuple(dict.fromkeys(tuple(tr.ACTIVITIES) + echoes.ACTIVITIES)),
        }
        attrs, descs, anaphors = _ku_attrs(), _ku_descs(), _anaphors()
        months = "|".join(tr.MONTHS)
        ords = "|".join(sorted(map(re.escape, ORDINAL_WORDS), key=len, reverse=True))
        groups = [
            ("attr", _alt(attrs)),
            ("ana", _alt(anaphors)),
            ("desc", r"(?<![\w'])(?:this|that|the) (?:" + _alt(descs)[len(r"(?<![\w'])") :] + r")"),
            ("date", rf"\bthe (?:{ords}) of (?:{months})\b"),
            ("amt", AMOUNT),
            ("time", _alt(_time_phrases())),
            *[(k, _alt(v)) for k, v in lists.items()],
        ]
        pat = re.compile("|".join(f"(?P<{k}>{p})" for k, p in groups))
        return cls(pat, attrs, descs, anaphors, lists)

    def frame_of(self, text: str) -> tuple[str, list[tuple[str, str]]] | None:
        """(frame, its fillers as (slot, text) in order) of a mention, or None when the mention
        holds text that could carry a value (digits, quotes, braces) or no ``<image>``. An anaphor
        of a generic category ("that thing I showed you") is slot ``anag``, kept generic."""
        if "<image>" not in text or any(c in text for c in '{}"“”'):
            return None
        if any(c.isdigit() for c in _AMOUNT.sub(" ", text)):
            return None
        seen: list[tuple[str, str]] = []

        def rep(m: re.Match) -> str:
            kind = m.lastgroup
            s = m.group(0)
            if kind == "ana" and self.anaphors.get(s) in abstraction.GENERIC:
                kind = "anag"
            seen.append((kind, s))
            if kind == "amt":  # the currency as written, the number refilled
                return "{amt:" + _AMOUNT_DIGITS.sub("#", s) + "}"
            if kind == "desc":
                det, _ = s.split(" ", 1)
                return f"{det} {{desc}}"
            return "{" + kind + "}"

        return self.pattern.sub(rep, text), seen


#: context compounds over a frame, as ``contexts.thing_for`` draws their contexts
_COMPOUNDS = re.compile(
    r"(?P<occctx>\{occ\}(?P<with> with \{p\})?(?P<sfx>"
    + "|".join(map(re.escape, SUFFIXES))
    + r")?)"
    + r"|(?P<chat>my chat with \{p\} about \{plan\})"
    + r"|(?P<group>the group chat about \{plan\})"
    + r"|(?P<appctx>\{app\} page for \{plan\})"
    + r"|(?P<roomctx>the (?:clock|calendar) in \{owner\} \{room\})"
    + r"|(?P<scene>\{owner\} \{place\})"
)
#: time words that place an image relative to the session sharing it ("this morning", " last
#: month"): true in the evidence that uses them (temporal questions fix the session date against
#: the printed one), never said of a haystack image that prints a date (``contexts.DATED_FAMILIES``)
RELATIVE = re.compile(_alt(list(contexts.RELATIVE_WHEN) + [s.strip() for s in SUFFIXES]))
#: knowledge-update app categories by the image kind their screenshots have (``ku`` constraints)
KU_APP_KIND = {"streaming": "streaming_bill", "online_shop": "order_confirmation", "hotel": "booking_confirmation"}


def ku_categories(family: str, truth: dict) -> list[ku.Category]:
    """The knowledge-update categories an image of ``family`` with ``truth`` fits (its kind, its
    shop type, its product)."""
    kind = truth.get("kind")
    out = []
    for c in ku.CATEGORIES:
        if c.family != family:
            continue
        if family == "named_sign" and c.variant != kind:
            continue
        if family == "app_screenshot" and KU_APP_KIND.get(c.key) != kind:
            continue
        if c.variant == "shop_sign":
            text = str(truth.get("text", "")).lower()
            if not any(t.lower() in text for t in c.extra.get("types", ())):
                continue
        if c.variant == "product_box" and truth.get("text") not in c.extra.get("products", ()):
            continue
        if c.variant == "price_tag" and truth.get("product") != c.extra.get("product"):
            continue
        out.append(c)
    return out


@dataclass
class Frames:
    """The evidence frame pools and their refilling (see the module docstring). ``reserved``: every
    question's contexts; ``dates``: (month, day) pairs named by questions and facts; ``forbidden``:
    answers and abstracted names of every question."""

    pools: dict[tuple[str, str, str], list[str]]
    reserved: set[str]
    dates: set[tuple[int, int]]
    forbidden: list[str] = field(default_factory=list)
    #: slot -> the fillers the evidence mentions use (each as often as they use it); a slot
    #: without any is filled from its phrase list
    fillers: dict[str, list[str]] = field(default_factory=dict)
    lex: Lexicon = field(default_factory=Lexicon.build)
    #: ``forbidden`` as one phrase index (built on first use): a filled mention is tokenised once,
    #: not once per forbidden string
    _forbidden_index: tuple[int, object] | None = field(default=None, init=False, repr=False, compare=False)

    def _has_forbidden(self, text: str) -> bool:
        from memlens.construction.text.leakage import PhraseIndex

        if self._forbidden_index is None or self._forbidden_index[0] != len(self.forbidden):
            self._forbidden_index = (len(self.forbidden), PhraseIndex(self.forbidden))
        return bool(self._forbidden_index[1].find(text))

    def _pick(self, rng: random.Random, slot: str) -> str:
        opts = self.fillers.get(slot) or self.lex.lists[slot]
        return opts[rng.randrange(len(opts))]

    # ------------------------------------------------------------------ fillers
    def _ctx(self, rng: random.Random, make) -> str | None:
        for _ in range(60):
            c = make()
            if not ku.clashes(c, self.reserved):
                return c
        return None

    def fill(self, rng: random.Random, frame: str, family: str, truth: dict) -> str | None:
        """``frame`` filled for an image of ``family`` with ``truth`` (None when it cannot be: no
        free context, no category the image fits, a group chat for a chat with one person, a
        relative time word for an image that prints a date).
        Reserved contexts and forbidden strings are checked by :meth:`draw`."""
        if family in contexts.DATED_FAMILIES and RELATIVE.search(frame):
            return None  # its printed date could contradict "this morning" / "last month"
        lists = self.lex.lists
        contact = None if truth.get("is_group", False) else truth.get("title")
        if family == "chat_screenshot" and "{p}" in frame and not contact:
            return None  # a group chat has no one person to name
        person = (lambda: contact) if family == "chat_screenshot" else (lambda: self._pick(rng, "p"))

        def compound(m: re.Match) -> str | None:
            k = "occctx" if m.group("occctx") else m.lastgroup
            if k == "occctx":
                w, sfx = m.group("with"), m.group("sfx") or ""
                return self._ctx(rng, lambda: self._pick(rng, "occ") + (f" with {person()}" if w else "") + sfx)
            if k == "chat":
                return self._ctx(rng, lambda: f"my chat with {person()} about {self._pick(rng, 'plan')}")
            if k == "group":
                return self._ctx(rng, lambda: f"the group chat about {self._pick(rng, 'plan')}")
            if k == "appctx":
                return self._ctx(rng, lambda: f"{self._pick(rng, 'app')} page for {self._pick(rng, 'plan')}")
            if k == "roomctx":
                noun = "clock" if "clock" in m.group(0) else "calendar"
                return self._ctx(rng, lambda: f"the {noun} in {self._pick(rng, 'owner')} {self._pick(rng, 'room')}")
            return self._ctx(rng, lambda: f"{self._pick(rng, 'owner')} {self._pick(rng, 'place')}")

        out, at = [], 0
        for m in _COMPOUNDS.finditer(frame):
            filled = compound(m)
            if filled is None:
                return None
            out += [frame[at : m.start()], filled]
            at = m.end()
        text = "".join(out) + frame[at:]
        if "{attr}" in text or "{desc}" in text:
            cats = ku_categories(family, truth)
            free = [
                (r[0].format(q=q), c)
                for c in cats
                for r in c.roles
                for q in c.quals
                if not ku.clashes(r[0].format(q=q), self.reserved)
            ]
            if not free:
                return None
            attr, cat = free[rng.randrange(len(free))]
            text = text.replace("{attr}", attr, 1)
            while "{desc}" in text:
                text = text.replace("{desc}", rng.choice(cat.descriptors).split(" ", 1)[1], 1)
        while "{anag}" in text:  # a generic anaphor stays generic, as often as in the evidence
            text = text.replace("{anag}", self._pick(rng, "anag") if self.fillers.get("anag") else "that thing", 1)
        if "{ana}" in text:
            cat = abstraction.classify(str(truth.get("text", "")), truth.get("kind"))
            while "{ana}" in text:
                text = text.replace("{ana}", abstraction.anaphor(rng, cat)[: -len(" " + abstraction.IMAGE)], 1)
        while "{date}" in text:
            free_d = [(mo, d) for mo in range(1, 13) for d in range(1, 29) if (mo, d) not in self.dates]
            if not free_d:
                return None
            mo, d = free_d[rng.randrange(len(free_d))]
            day = date(2001, mo, d)
            text = text.replace("{date}", tr.date_words(day, day), 1)
        text = _AMOUNT_SLOT.sub(lambda m: self._amount(rng, m.group(1)), text)
        while "{time}" in text:
            t = self._time(rng, family, truth)
            if t is None:
                return None
            text = text.replace("{time}", t, 1)

        def single(m: re.Match) -> str:
            k = m.group(1)
            if k == "p":
                return person() or rng.choice(lists["p"])
            if k == "act":
                return rng.choice(echoes.ACTIVITIES)  # never an activity a temporal question asks about
            return self._pick(rng, k) if k in lists else m.group(0)

        text = _SLOT.sub(single, text)
        return None if "{" in text else text

    @staticmethod
    def _amount(rng: random.Random, shape: str) -> str:
        """A fresh amount written like the frame's ("$#" -> "$23.49"; "#" -> "175.49")."""
        whole = rng.randint(3, 90)
        return shape.replace("#", f"{whole}.{rng.choice(['00', '29', '49', '50', '79', '99'])}", 1)

    @staticmethod
    def _time(rng: random.Random, family: str, truth: dict) -> str | None:
        """A start time before the time a clock shows (same half of the day), else any time."""
        h, m = truth.get("hour"), truth.get("minute")
        if family != "clock":
            h, m = rng.randrange(8, 21), 5 * rng.randrange(12)
            return tr.time_words(f"{h:02d}:{m:02d}")
        if not isinstance(h, int) or not isinstance(m, int) or not 0 <= h < 24:
            return None
        start = h * 60 + m - 5 * rng.randint(3, 30)
        start -= start % 5
        if start < 0 or (start < 12 * 60 <= h * 60 + m):
            return None
        return tr.time_words(f"{start // 60:02d}:{start % 60:02d}")

    # ------------------------------------------------------------------ public
    def pool(self, family: str, truth: dict | None) -> list[str]:
        """The frames of the most specific non-empty pool of :func:`pool_keys`."""
        for key in pool_keys(family, truth):
            if self.pools.get(key):
                return self.pools[key]
        return []

    def draw(self, rng: random.Random, family: str, truth: dict | None, tries: int = 8) -> str | None:
        """A haystack mention of an image of ``family`` (ground truth ``truth``), or None when its
        pool is empty or no frame could be filled."""
        truth = truth or {}
        pool = self.pool(family, truth)
        for _ in range(tries if pool else 0):
            text = self.fill(rng, pool[rng.randrange(len(pool))], family, truth)
            if text is None or text.count("<image>") != 1:
                continue
            low = text.lower()
            if any(r.lower() in low for r in self.reserved if len(r) > 3):
                continue
            if self._has_forbidden(text):
                continue
            return text[:1].upper() + text[1:]
        return None


def pool_keys(family: str, truth: dict | None) -> tuple[tuple[str, str, str], ...]:
    """The pools an image draws from, most specific first: its family, kind and whether it fits a
    knowledge-update category (a café sign can carry a café's update clause, a bakery's price
    label for honey cannot carry the honey one); its family and kind; its family (not for a named
    sign: its mention names what the kind is, "the place from" a shop front, "the box from" a
    product box, so another kind's frame would not fit)."""
    truth = truth or {}
    kind = str(truth.get("kind") or "")
    fit = "ku" if ku_categories(family, truth) else "-"
    if family == "named_sign":
        return ((family, kind, fit), (family, kind, "*"))
    return ((family, kind, fit), (family, kind, "*"), (family, "*", "*"))


def measure(
    mentions: list[tuple[str, dict | None, str]], lex: Lexicon | None = None
) -> tuple[dict[tuple[str, str, str], list[str]], dict[str, list[str]]]:
    """Frame pools and fillers from evidence mentions ``(family, image truth, text)``: pool key
    (:func:`pool_keys`) -> frames (one per usable mention, so a frame's share is its evidence
    share); and slot -> the fillers used (phrase-list slots and generic anaphors)."""
    lex = lex or Lexicon.build()
    pools: dict[tuple[str, str, str], list[str]] = {}
    fillers: dict[str, list[str]] = {}
    for fam, truth, text in mentions:
        f = lex.frame_of(text)
        if f is None:
            continue
        for key in pool_keys(fam, truth):
            pools.setdefault(key, []).append(f[0])
        for slot, s in f[1]:
            if slot in lex.lists or slot == "anag":
                fillers.setdefault(slot, []).append(s)
    return {k: pools[k] for k in sorted(pools)}, {k: fillers[k] for k in sorted(fillers)}
