"""What a benchmark knows a wrong answer could be: per question, decoy values in the reference's format.

The judge self-test (:mod:`memlens.eval.judge.selftest`) writes wrong answers from these values, so
that a judge is tested on the mistakes a system would really make on *this* build, not on random
strings. Every decoy carries its source:

* ``ku_old`` / ``ku_chain``: the outdated answer of a knowledge-update question, and the earlier
  values of its update chain;
* ``history_image``: the value the question's derivation gives when one of its evidence images is
  replaced by another image of the same family that the history shows (the plate of another car,
  the date on another receipt, the total of another receipt ...);
* ``same_image``: another object of the same scene ("which object stood left of ..." asks for one
  object; the others are there too);
* ``partial_sum``: an arithmetic total with one operand left out;
* ``evidence_date``: the date a photo was *shared* (the session date), where the question asks for
  the date the image shows;
* ``neighbour``: a nearby value of the reference's type (a count +-1 or 2, a date a day or a year
  off, the day and month swapped, a time an hour or 12 hours off, an amount a unit off, a code with
  one character changed);
* ``other_option`` / ``other_polarity`` / ``other_order``: the other A/B option, the other yes/no
  answer, another order of the events (adjacent swaps, the reverse);
* ``guess`` (answer-refusal questions): values of the question's source format that a system could
  invent (the names and values of the source question, which the history never shows).

Decoys equal to the reference under :func:`same_value` are dropped, and so are text decoys that
contain the reference as a phrase or are contained in it ("Paris" vs "Paris, Texas": no reader can
call one right and the other wrong by construction).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from memlens.core.schema import Question
from memlens.core.tasks import (
    AR_REFUSAL,
    IE_ENTITY,
    IE_PREVIOUS,
    KU_UPDATE,
    MSR_ARITHMETIC,
    MSR_COUNTING,
    MSR_YESNO,
    TR_DATE,
    TR_DURATION,
    TR_ORDER,
    task_key,
)

#: how many decoys of one source a question keeps (the first ones in a deterministic order)
PER_SOURCE = 4

_DATE_RE = re.compile(r"^(\d{4})/(\d{2})/(\d{2})$")
_TIME_RE = re.compile(r"^(\d{1,2}):(\d{2})$")
_INT_RE = re.compile(r"^\d+$")
_MONEY_RE = re.compile(r"^(?P<pre>[$€£¥]|[A-Z]{3} )?(?P<num>\d[\d,]*(?:\.\d+)?)(?P<post> [A-Z]{3})?$")
_CODE_RE = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9]+(?:[ -][A-Za-z0-9]+)*$")
_QTY_RE = re.compile(
    r"^(?P<num>\d+(?:\.\d+)?)\s?(?P<unit>kg|g|mg|lb|oz|l|ml|cl|km|m|cm|mm|bags|tabs|tablets|pods|capsules|pieces)$",
    re.I,
)
_ORDER_RE = re.compile(r"^(?:\(\d+\))+$")


@dataclass(frozen=True)
class Decoy:
    value: str
    source: str


@dataclass
class Facts:
    """One question with what the self-test needs of it: its task key, reference kind and decoys."""

    question: Question
    key: str
    kind: str  # date | time | amount | integer | code | quantity | order | ab | yesno | text | refusal
    decoys: list[Decoy] = field(default_factory=list)
    #: release dates ("YYYY/MM/DD (Ddd) HH:MM") of the evidence sessions, in order
    evidence_dates: list[str] = field(default_factory=list)

    def of(self, *sources: str) -> list[Decoy]:
        return [d for d in self.decoys if not sources or d.source in sources]


def value_kind(key: str, ref: str) -> str:
    """The type a reference is written in (what the self-test formats and perturbs)."""
    ref = ref.strip()
    if key == AR_REFUSAL:
        return "refusal"
    if key == TR_DURATION:
        return "ab"
    if key == MSR_YESNO:
        return "yesno"
    if key == TR_ORDER and _ORDER_RE.match(ref):
        return "order"
    if _DATE_RE.match(ref) and _valid_date(ref):
        return "date"
    t = _TIME_RE.match(ref)
    if t and int(t.group(1)) < 24 and int(t.group(2)) < 60:
        return "time"
    m = _MONEY_RE.match(ref)
    if m and (m.group("pre") or m.group("post")):
        return "amount"
    if _INT_RE.match(ref):
        return "code" if len(ref) > 1 and ref.startswith("0") else "integer"
    if _QTY_RE.match(ref):
        return "quantity"
    if _CODE_RE.match(ref):
        return "code"
    return "text"


def _valid_date(ref: str) -> bool:
    try:
        dt.date(*map(int, _DATE_RE.match(ref).groups()))
    except ValueError:
        return False
    return True


def _compact(s: str) -> str:
    return re.sub(r"[^0-9a-z.]", "", s.lower())


def same_value(kind: str, a: str, b: str) -> bool:
    """Whether two values in the same format are the same answer (decoys equal to the reference go)."""
    if kind == "amount":
        va, vb = _money_value(a), _money_value(b)
        return va is not None and va == vb
    if kind == "text":
        return _words(a) == _words(b) or _contains_phrase(a, b) or _contains_phrase(b, a)
    return _compact(a) == _compact(b)


def _words(s: str) -> str:
    s = re.sub(r"[^0-9a-z]+", " ", s.lower())
    return " ".join(w for w in s.split() if w not in ("the", "a", "an"))


def _contains_phrase(hay: str, needle: str) -> bool:
    n = _words(needle)
    return bool(n) and f" {n} " in f" {_words(hay)} "


def _money_value(s: str) -> Decimal | None:
    m = _MONEY_RE.match(s.strip())
    if not m:
        return None
    try:
        return Decimal(m.group("num").replace(",", ""))
    except InvalidOperation:
        return None


def _stable(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


# ------------------------------------------------------------------------------- neighbours
def neighbours(kind: str, ref: str) -> list[str]:
    """Nearby wrong values of the reference's own type and format."""
    ref = ref.strip()
    if kind == "integer":
        n = int(ref)
        return [str(v) for v in (n + 1, n - 1, n + 2, n - 2) if v >= 0]
    if kind == "date":
        y, m, d = map(int, _DATE_RE.match(ref).groups())
        day = dt.date(y, m, d)
        out = [day + dt.timedelta(days=1), day - dt.timedelta(days=1), day + dt.timedelta(days=7)]
        if d <= 12 and d != m:
            out.append(dt.date(y, d, m))  # day and month swapped
        out.append(_shift_year(day, 1))
        return [x.strftime("%Y/%m/%d") for x in out]
    if kind == "time":
        h, mi = map(int, _TIME_RE.match(ref).groups())
        return [f"{(h + dh) % 24:02d}:{(mi + dm) % 60:02d}" for dh, dm in ((1, 0), (-1, 0), (12, 0), (0, 15))]
    if kind == "amount":
        m = _MONEY_RE.match(ref)
        num = Decimal(m.group("num").replace(",", ""))
        places = len(m.group("num").split(".")[1]) if "." in m.group("num") else 0
        q = Decimal(1).scaleb(-places)
        out = []
        for v in (num + 1, num - 1 if num > 1 else num + 2, num * 10, num + Decimal("0.5") if places else num + 10):
            v = v.quantize(q)
            digits = f"{v:,.{places}f}" if "," in ref or v >= 1000 else f"{v:.{places}f}"
            out.append(f"{m.group('pre') or ''}{digits}{m.group('post') or ''}")
        return out
    if kind == "code":
        return [_change_char(ref, i) for i in (len(ref) - 1, 0)]
    if kind == "quantity":
        m = _QTY_RE.match(ref)
        num = Decimal(m.group("num"))
        sep = " " if " " in ref else ""
        return [f"{v}{sep}{m.group('unit')}" for v in (num + 1, num * 2, (num + Decimal("0.5")))]
    return []


def _shift_year(d: dt.date, years: int) -> dt.date:
    try:
        return d.replace(year=d.year + years)
    except ValueError:  # 29 February
        return d.replace(year=d.year + years, day=28)


def _change_char(code: str, i: int) -> str:
    while i >= 0 and not code[i].isalnum():
        i -= 1
    c = code[i]
    new = str((int(c) + 3) % 10) if c.isdigit() else ("X" if c.upper() != "X" else "Q")
    if c.islower():
        new = new.lower()
    return code[:i] + new + code[i + 1 :]


def other_orders(ref: str) -> list[str]:
    idx = re.findall(r"\d+", ref)
    out = []
    for i in range(len(idx) - 1):
        sw = idx[:]
        sw[i], sw[i + 1] = sw[i + 1], sw[i]
        out.append(sw)
    out.append(idx[::-1])
    return ["".join(f"({i})" for i in seq) for seq in out]


# ------------------------------------------------------------------------------- from the build
def _derivation_decoys(q: Question, images: dict, history: list[str]) -> list[Decoy]:
    """``history_image`` and ``same_image`` decoys: the derivation re-run on other images."""
    from memlens.construction.abilities.derive import derive

    d = q.details or {}
    prog, ids = d.get("derivation"), list(d.get("image_ids") or [])
    if not prog or not ids or any(i not in images for i in ids):
        return []
    truths = [images[i].truth for i in ids]
    ctx = {"evidence_dates": [e.date for e in q.evidence]}
    out: list[Decoy] = []
    used = sorted({k for k in _img_refs(prog) if 0 <= k < len(ids)})
    for k in used:
        kind = _image_kind(images[ids[k]])
        others = sorted({i for i in history if i not in ids and i in images and _image_kind(images[i]) == kind})
        others.sort(key=lambda i: _stable(q.question_id, i))
        for other in others[: 3 * PER_SOURCE]:
            alt = list(truths)
            alt[k] = images[other].truth
            v = _try_derive(derive, prog, alt, ctx)
            if v is not None:
                out.append(Decoy(v, "history_image"))
    for alt_prog in _same_image_variants(prog, truths):
        v = _try_derive(derive, alt_prog, truths, ctx)
        if v is not None:
            out.append(Decoy(v, "same_image"))
    if prog.get("op") == "sum" and len(prog.get("args") or []) > 1:
        args = prog["args"]
        for i in range(len(args)):
            v = _try_derive(derive, {**prog, "args": args[:i] + args[i + 1 :]}, truths, ctx)
            if v is not None:
                out.append(Decoy(v, "partial_sum"))
    return out


def _image_kind(rec) -> tuple[str, str]:
    """Family and kind of an image (a shop sign and a street sign are both ``named_sign``)."""
    return rec.family, str((rec.truth or {}).get("kind", ""))


def _try_derive(derive, prog, truths, ctx) -> str | None:
    try:
        return derive(prog, truths, ctx)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, ArithmeticError):
        return None


def _img_refs(prog) -> Iterable[int]:
    if isinstance(prog, dict):
        if isinstance(prog.get("img"), int):
            yield prog["img"]
        for v in prog.values():
            yield from _img_refs(v)
    elif isinstance(prog, list):
        for v in prog:
            yield from _img_refs(v)


def _same_image_variants(prog: dict, truths: list) -> list[dict]:
    """A ``format`` of one object of a scene, re-pointed at the scene's other objects."""
    if prog.get("op") != "format":
        return []
    path = list(prog.get("path") or [])
    if len(path) != 2 or path[0] != "objects" or not isinstance(path[1], int):
        return []
    objs = (truths[prog["img"]] or {}).get("objects") or []
    return [{**prog, "path": ["objects", j]} for j in range(len(objs)) if j != path[1]]


def _fact_dates(q: Question) -> list[Decoy]:
    return [Decoy(e.date[:10], "evidence_date") for e in q.evidence if _DATE_RE.match(e.date[:10])]


def _guesses(q: Question) -> list[Decoy]:
    d = q.details or {}
    vals = [str(v) for v in d.get("forbidden") or [] if str(v).strip()]
    fmt = d.get("source_answer_format")
    if fmt == "yes_no":
        vals = ["Yes", "No"]
    elif fmt == "integer":
        vals = ["2", "3", "4"]
    elif fmt == "date":
        vals = [v for v in vals if _DATE_RE.match(v)] or ["2024/05/14"]
    return [Decoy(v, "guess") for v in vals]


def build_facts(q: Question, images: dict | None = None, history: list[str] | None = None) -> Facts:
    """The self-test facts of one question; ``images`` (sha -> record with ``truth``) and ``history``
    (the image ids its history shows) give the build's own decoys when the build is at hand."""
    ref = str(q.answer).strip()
    key = task_key(q.question_type, q.question_subtype, ref)
    kind = value_kind(key, ref)
    raw: list[Decoy] = []
    if key == KU_UPDATE:
        if q.old_answer:
            raw.append(Decoy(q.old_answer, "ku_old"))
        chain = (q.details or {}).get("chain_values") or []
        raw += [Decoy(str(v), "ku_chain") for v in chain if str(v) != q.old_answer]
    if key == AR_REFUSAL:
        raw += _guesses(q)
    elif kind == "ab":
        raw.append(Decoy("B" if ref.upper() == "A" else "A", "other_option"))
    elif kind == "yesno":
        raw.append(Decoy("No" if ref == "Yes" else "Yes", "other_polarity"))
    elif kind == "order":
        raw += [Decoy(v, "other_order") for v in other_orders(ref)]
    else:
        if images is not None and key in (IE_ENTITY, IE_PREVIOUS, TR_DATE, MSR_ARITHMETIC, KU_UPDATE, MSR_COUNTING):
            raw += _derivation_decoys(q, images, history or [])
        if kind == "date":
            raw += _fact_dates(q)
        raw += [Decoy(v, "neighbour") for v in neighbours(kind, ref)]
    return Facts(q, key, kind, _clean(kind, ref, raw), [e.date for e in q.evidence])


def _clean(kind: str, ref: str, raw: list[Decoy]) -> list[Decoy]:
    """Distinct decoys unlike the reference, at most :data:`PER_SOURCE` per source, in order."""
    out: list[Decoy] = []
    seen: set[str] = set()
    per: dict[str, int] = {}
    for d in raw:
        v = d.value.strip()
        if kind == "refusal":
            bad = not v
        else:
            bad = not v or same_value(kind, ref, v) or (kind != "text" and value_kind("", v) != value_kind("", ref))
        if bad or _compact(v) in seen or per.get(d.source, 0) >= PER_SOURCE:
            continue
        if kind == "text" and any(same_value("text", v, o.value) for o in out):
            continue
        seen.add(_compact(v))
        per[d.source] = per.get(d.source, 0) + 1
        out.append(Decoy(v, d.source))
    return out


def benchmark_facts(bench) -> list[Facts]:
    """Facts of every question of a benchmark (:class:`memlens.eval.benchmark.Benchmark`), sorted by id.

    For a built benchmark, the history of each question at the first length and the image index
    give the ``history_image`` / ``same_image`` decoys; an official release has no image ground
    truth, so its decoys are the type-based ones only."""
    from memlens.core.items import BuiltBenchmark

    src = bench.source
    images, histories = None, {}
    if isinstance(src, BuiltBenchmark):
        images = src.images
        lengths = src.lengths()
        if lengths:
            sessions = src.sessions
            for inst in src.instances(lengths[0]):
                ids = []
                for sid in inst.session_ids:
                    s = sessions.get(sid)
                    if s is not None:
                        ids += [i for t in s.turns for i in t.images]
                histories[inst.question_id] = ids
    return [build_facts(q, images, histories.get(qid)) for qid, q in sorted(bench.questions.items())]
