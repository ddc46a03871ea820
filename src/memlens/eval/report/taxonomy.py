"""The exact wrong-answer taxonomy: every wrong verdict traced to where its committed value occurs.

The paper labels wrong answers with an LLM into seven labels in two groups (section 4.3, §G.4):
*near-miss* (an evidence anchor was located before erring) and *total-miss* (no correct evidence
anchor). It names three of the labels (grounding failure, unsupported answer, computation slip);
MemLens uses these seven:

==========================  ==========  ===================================================================
label                       group       the committed value is ...
==========================  ==========  ===================================================================
``grounding_failure``       near-miss   another value of an evidence image or session (the right image, a
                                        wrong detail), or a misreading of the asked fact (one digit, one
                                        date field, one word, two characters off)
``computation_slip``        near-miss   the right operands with wrong arithmetic: a computed number off by
                                        one / one digit / two swapped digits, a computed date a day off, an
                                        order with one adjacent pair swapped (from the derivation)
``incomplete_aggregation``  near-miss   the asked fact of one evidence image of a multi-image question, or a
                                        sum / count over part of the evidence
``stale_knowledge``         near-miss   the KU old value (or an earlier value of the update chain)
``wrong_evidence``          total-miss  a value of a same-family distractor image (the same field; also as an
                                        extra or swapped operand of an aggregate) or of another session
``unsupported_answer``      total-miss  nowhere in the history; also no single committed value (a hedge, a
                                        range, nothing parseable) and any answer to a refusal item
``false_refusal``           total-miss  a refusal on an answerable item
==========================  ==========  ===================================================================

Where the paper had to guess, MemLens knows: :func:`classify` decides each wrong answer from the
ground truth (:mod:`memlens.eval.report.trace`, :mod:`memlens.eval.report.operands`), in the order
of the table of :data:`SOURCES` (the first that applies wins). Its ``source`` is the exact finding;
the label and group follow from it. One kind of answer cannot be traced from its value: the other
option of a binary question (A/B, Yes/No) is ``untraceable`` (its own group): the value says
nothing of where it came from.

The committed value is the judge's parse of the answer (:class:`Commitment`, the one interface to
the judge: ``Verdict.parsed``; when a judge stores none, e.g. the LLM judge, the deterministic
judge's parse of the answer text).

Modality (Figure 4b): where the evidence the question needs is (``images``, ``text``, ``both``;
:func:`memlens.eval.report.operands.needs`) and where the taxonomy places the error decide whether
an error is *Visual* (failing to locate or read an image), *Reasoning* (combining found evidence:
slips, partial aggregates, stale state; or failing on text evidence) or *Mixed* (evidence in images
and text; untraceable binary flips). Refusal items have no evidence: their errors have no modality.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from memlens.core.constants import AR, KU
from memlens.core.schema import Question
from memlens.core.tasks import MSR_YESNO, TR_DURATION
from memlens.eval.report import operands as ops
from memlens.eval.report.trace import (
    HistoryIndex,
    Value,
    canon_date,
    canon_number,
    canon_order,
    canon_text,
    canon_time,
    excluded,
    times_in,
)

__all__ = [
    "LABELS",
    "GROUPS",
    "NEAR_MISS",
    "TOTAL_MISS",
    "UNTRACEABLE",
    "SOURCES",
    "MODALITIES",
    "Commitment",
    "commitment_of",
    "Trace",
    "classify",
    "substituted",
]

NEAR_MISS, TOTAL_MISS, UNTRACEABLE = "near-miss", "total-miss", "untraceable"
LABELS = (
    "grounding_failure",
    "computation_slip",
    "incomplete_aggregation",
    "stale_knowledge",
    "wrong_evidence",
    "unsupported_answer",
    "false_refusal",
)
GROUPS = {label: (NEAR_MISS if i < 4 else TOTAL_MISS) for i, label in enumerate(LABELS)} | {UNTRACEABLE: UNTRACEABLE}
#: exact source -> label, in the order :func:`classify` tries them
SOURCES = {
    "refusal_on_answerable": "false_refusal",
    "answer_on_refusal_item": "unsupported_answer",
    "no_commitment": "unsupported_answer",
    "binary_choice": UNTRACEABLE,
    "stale_value": "stale_knowledge",
    "hedged": "unsupported_answer",
    "evidence_operand": "incomplete_aggregation",
    "evidence_subset": "incomplete_aggregation",
    "arithmetic_slip": "computation_slip",
    "evidence_other_value": "grounding_failure",
    "distractor_image": "wrong_evidence",
    "other_session": "wrong_evidence",
    "asked_fact_misread": "grounding_failure",
    "not_in_history": "unsupported_answer",
}
MODALITIES = ("Visual", "Reasoning", "Mixed")
_BINARY_KEYS = frozenset({MSR_YESNO, TR_DURATION})


# ------------------------------------------------------------------------------------ the judge's parse
@dataclass(frozen=True)
class Commitment:
    """What an answer commits to, as the judge parsed it: an abstention, or a value (None: nothing)."""

    abstained: bool
    value: str | None
    reason: str = ""


def commitment_of(verdict: dict, question: Question | None = None, answer: str | None = None) -> Commitment:
    """The commitment of a verdict record: its ``parsed`` value and ``abstained`` flag; for a verdict
    without a parse (the LLM judge stores none) and a known ``answer`` text, the deterministic
    judge's parse of that text."""
    parsed = verdict.get("parsed")
    if parsed is None and answer is not None and question is not None:
        from memlens.eval.judge.deterministic import score

        g = score(
            question.question_type,
            question.question_subtype,
            question.answer,
            answer,
            old_answer=question.old_answer,
            question=question.question,
        )
        return Commitment(bool(g.abstained), g.parsed, g.reason)
    return Commitment(
        bool(verdict.get("abstained")), None if parsed is None else str(parsed), verdict.get("reason") or ""
    )


# ------------------------------------------------------------------------------------ committed forms
_NUM_TOKENS_RE = re.compile(r"(?<![\w.:/])-?\d+(?:\.\d+)?(?![\w:/]|\.\d)")
_NORM_DATE_RE = re.compile(r"(?<!\d)(\d{4})[/ .-](\d{1,2})[/ .-](\d{1,2})(?!\d)")


#: a text answer is traced to a text value only when that value covers this share of the answer's
#: own words (those not in the question): "red" alone does not explain "red bottle"
TEXT_COVERAGE = 0.6


@dataclass(frozen=True)
class _Committed:
    kind: str  # number | date | time | order | text
    key: object
    text: str  # normalised text
    numbers: frozenset
    dates: frozenset
    residual: frozenset = frozenset()  # the answer's own words (text answers)
    times: frozenset = frozenset()

    def matches(self, v: Value, *, coverage: float = TEXT_COVERAGE) -> bool:
        if self.kind in ("number", "date", "time"):
            return v.kind == self.kind and v.key == self.key
        if self.kind != "text":
            return False
        if v.kind == "number":
            return v.key in self.numbers
        if v.kind == "date":
            return v.key in self.dates
        if v.kind == "time":
            return v.key in self.times
        if not (v.distinctive and f" {v.key} " in f" {self.text} "):
            return False
        if not self.residual or coverage <= 0:
            return True
        return len(set(str(v.key).split()) & self.residual) / len(self.residual) >= coverage

    def key_of(self) -> tuple[str, object]:
        return (self.kind, self.key)


_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "i",
        "my",
        "me",
        "you",
        "your",
        "it",
        "its",
        "is",
        "was",
        "were",
        "be",
        "been",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "with",
        "and",
        "or",
        "but",
        "that",
        "this",
        "these",
        "those",
        "there",
        "their",
        "they",
        "he",
        "she",
        "we",
        "our",
        "what",
        "which",
        "who",
        "when",
        "how",
        "did",
        "do",
        "does",
        "so",
        "answer",
        "question",
    ]
)


def _committed(value: str, question: str = "") -> _Committed:
    text = canon_text(value)
    order = canon_order(value)
    if order:
        return _Committed("order", order, text, frozenset(), frozenset())
    d = canon_date(value)
    if d and d == canon_date(value.split()[0]):
        return _Committed("date", d, text, frozenset(), frozenset({d}))
    t = canon_time(value)
    if t:
        return _Committed("time", t, text, frozenset(), frozenset(), times=frozenset({t}))
    n = canon_number(value)
    if n is not None:
        return _Committed("number", n, text, frozenset({n}), frozenset())
    nums = frozenset(Decimal(t).normalize() for t in _NUM_TOKENS_RE.findall(_NORM_DATE_RE.sub(" ", text)))
    dates = frozenset(f"{int(y):04d}/{int(m):02d}/{int(dd):02d}" for y, m, dd in _NORM_DATE_RE.findall(text))
    asked = set(canon_text(question).split())
    residual = frozenset(w for w in text.split() if w not in asked and w not in _STOP)
    return _Committed("text", text, text, nums, dates, residual, frozenset(times_in(value)))


def _value_of(raw, where: str = "image", ref: str = "") -> list[Value]:
    from memlens.eval.report.trace import truth_leaves

    return truth_leaves({"v": raw}, ref) if where == "image" else []


# ------------------------------------------------------------------------------------ the trace
@dataclass(frozen=True)
class Trace:
    """The taxonomy's decision on one wrong answer."""

    source: str
    label: str
    group: str
    modality: str
    matched: str = ""  # the value found (as compared)
    where: str = ""  # image SHA-256 or session id it was found in


def _modality(label: str, need: str, where_kind: str) -> str:
    if label in ("computation_slip", "incomplete_aggregation", "stale_knowledge"):
        return "Reasoning"
    if label == UNTRACEABLE:
        return "Mixed"
    by_need = {"images": "Visual", "text": "Reasoning", "both": "Mixed"}
    if label == "wrong_evidence":
        if where_kind == "image":
            return "Visual" if need == "images" else "Mixed"
        return "Reasoning" if need == "text" else "Mixed"
    return by_need.get(need, "Mixed")


def _trace(source: str, question: Question, need: str, matched="", where="", where_kind="") -> Trace:
    label = SOURCES[source]
    modality = "" if question.question_type == AR else _modality(label, need, where_kind)
    shown = format(matched, "f") if isinstance(matched, Decimal) else str(matched)
    return Trace(source, label, GROUPS[label], modality, shown, where)


def _evidence(question: Question) -> list[str]:
    ids = question.details.get("image_ids")
    return [str(i) for i in ids] if isinstance(ids, list) and ids else question.evidence_image_ids


def _truths(question: Question, hist: HistoryIndex | None) -> list[dict | None]:
    if hist is None:
        return []
    return [hist.truth(i) for i in _evidence(question)]


def _stale_values(question: Question) -> list[str]:
    chain = question.details.get("chain_values")
    vals = [str(x) for x in chain[:-1]] if isinstance(chain, list) and len(chain) > 1 else []
    if question.old_answer and question.old_answer not in vals:
        vals.append(str(question.old_answer))
    return [v for v in vals if v and canon_text(v) != canon_text(question.answer)]


def _hits(com: _Committed, raw, coverage: float = TEXT_COVERAGE) -> bool:
    return any(com.matches(v, coverage=coverage) for v in _value_of(raw))


def _first(com: _Committed, values) -> Value | None:
    for v in values:
        if v.distinctive and com.matches(v):
            return v
    return None


def _find(com: _Committed, indexes, *, specific: bool = False, exclude: tuple = ()) -> Value | None:
    """The first index holding the committed value; for a text answer the longest text it holds.
    ``specific``: only values specific enough for a history-wide search (:meth:`Value.specific`);
    ``exclude``: truth paths not to look at (the parts of a formatted answer)."""

    def ok(v: Value | None) -> bool:
        return v is not None and (v.specific or not specific)

    for idx in indexes:
        if com.kind in ("number", "date", "time"):
            if ok(v := idx.get(com.kind, com.key, exclude)):
                return v
            continue
        if com.kind != "text":
            continue
        keyed = (
            [("time", t) for t in com.times] + [("number", n) for n in com.numbers] + [("date", d) for d in com.dates]
        )
        for kind, key in keyed:
            if ok(v := idx.get(kind, key, exclude)):
                return v
        best = None
        for v in idx.texts_with(com.residual or com.text.split()):
            if not ok(v) or excluded(v, exclude) or not com.matches(v):
                continue
            if best is None or len(str(v.key)) > len(str(best.key)):
                best = v
        if best is not None:
            return best
    return None


def _contains_reference(com: _Committed, question: Question) -> bool:
    return com.kind == "text" and _hits(com, question.answer, coverage=0.0)


def _near_value(com: _Committed, targets: list) -> object | None:
    for raw in targets:
        for v in _value_of(raw):
            if v.kind != com.kind and com.kind != "text":
                continue
            if com.kind == "number" and v.kind == "number" and ops.near_number(com.key, v.key):
                return raw
            if com.kind == "date" and v.kind == "date" and ops.near_date(com.key, v.key):
                return raw
            if com.kind == "time" and v.kind == "time" and ops.near_time(com.key, v.key):
                return raw
            if com.kind == "text":
                if v.kind == "number" and any(ops.near_number(n, v.key) for n in com.numbers):
                    return raw
                if v.kind == "date" and any(ops.near_date(d, v.key) for d in com.dates):
                    return raw
                if v.kind == "time" and any(ops.near_time(t, v.key) for t in com.times):
                    return raw
                if v.kind == "text" and ops.near_text(v.key, com.text):
                    return raw
    return None


@dataclass
class _Case:
    """One wrong answer being traced, and what its question's derivation reads."""

    question: Question
    com: _Committed
    hist: HistoryIndex | None
    prog: dict | None
    need: str
    substitutions: Callable[[], dict] | None = None

    def __post_init__(self) -> None:
        self.truths = _truths(self.question, self.hist)
        self.context = {"evidence_dates": [e.date for e in self.question.evidence]}
        self.evidence = _evidence(self.question)
        self.found = ops.operands(self.prog, self.truths)
        self.top = ops.top_op(self.prog)
        # a formatted answer's parts (an object's colour, kind ...) are no values of their own
        self.parts = tuple({o.path[:-1] for o in self.found if o.template and o.path})
        self.session_dates = "fact_date" in str(self.prog)

    def trace(self, source: str, matched="", where="", where_kind="") -> Trace:
        return _trace(source, self.question, self.need, matched, where, where_kind)


def _stale(c: _Case) -> Trace | None:
    if c.question.question_type == KU:
        for old in _stale_values(c.question):
            if _hits(c.com, old):
                return c.trace("stale_value", old)
    return None


def _hedged(c: _Case) -> Trace | None:
    return c.trace("hedged", c.question.answer) if _contains_reference(c.com, c.question) else None


def _partial(c: _Case) -> Trace | None:
    stated = ops.consts(c.prog)
    if c.top not in ops.AGGREGATE_OPS or len(c.found) + len(stated) <= 1:
        return None
    for o in c.found:
        if _hits(c.com, o.value):
            img = c.evidence[o.img] if o.img < len(c.evidence) else ""
            return c.trace("evidence_operand", o.value, img, "image")
    for v in stated:
        if _hits(c.com, v):
            return c.trace("evidence_operand", v, "", "session")
    if c.com.key_of() in ops.subset_results(c.prog, c.truths, c.context):
        return c.trace("evidence_subset", c.com.key)
    return None


def _slip(c: _Case) -> Trace | None:
    if c.com.kind != "text" and ops.is_slip(c.prog, c.question.answer, c.com.key_of()):
        return c.trace("arithmetic_slip", c.com.key)
    return None


def _in_evidence(c: _Case) -> Trace | None:
    if c.hist is None:
        return None
    h = c.hist
    shown = [Value("text", canon_text(t), "image", c.evidence[i]) for i, t in ops.template_values(c.prog, c.truths)]
    hit = _first(c.com, shown) or _find(c.com, h.image_indexes(h.evidence_images), exclude=c.parts)
    if hit is None:
        hit = _find(c.com, h.session_indexes(h.evidence_sessions, dates=c.session_dates))
    if hit is None and c.com.kind == "text":
        hit = _text_in_sessions(c.com, c.question, h, h.evidence_sessions)
    return None if hit is None else c.trace("evidence_other_value", hit.key, hit.ref, hit.where)


def _small_misread(c: _Case) -> Trace | None:
    """A small count one off the asked one: a miscount, however many same-family images show it."""
    k = c.com.key
    if c.com.kind == "number" and k == k.to_integral_value() and abs(k) < 10:
        return _misread(c)
    return None


def _distractor(c: _Case) -> Trace | None:
    if c.hist is None:
        return None
    subs = c.substitutions() if c.substitutions is not None else substituted(c.question, c.hist)
    did = subs.get(c.com.key_of()) if c.com.kind != "text" else _text_substitution(c.com, subs)
    if did is None:
        hit = _find(c.com, c.hist.image_indexes(c.hist.distractor_images()), specific=True)
        did = hit.ref if hit is not None else None
    return None if did is None else c.trace("distractor_image", c.com.key, did, "image")


def _elsewhere(c: _Case) -> Trace | None:
    if c.hist is None:
        return None
    h = c.hist
    near = set(h.distractor_images())
    hit = _find(c.com, h.image_indexes(i for i in h.other_images if i not in near), specific=True)
    if hit is None:
        hit = _find(c.com, h.session_indexes(h.other_sessions, dates=c.session_dates), specific=True)
    if hit is None and c.com.kind == "text":
        hit = _text_in_sessions(c.com, c.question, h, h.other_sessions)
    return None if hit is None else c.trace("other_session", hit.key, hit.ref, hit.where)


def _misread(c: _Case) -> Trace | None:
    if c.top in ops.ARITHMETIC_OPS:
        return None
    got = _near_value(c.com, [o.value for o in c.found] or [c.question.answer])
    return None if got is None else c.trace("asked_fact_misread", got)


def classify(
    question: Question,
    commitment: Commitment,
    hist: HistoryIndex | None,
    task_key: str,
    *,
    substitutions: Callable[[], dict] | None = None,
) -> Trace:
    """The taxonomy of one wrong answer (see the module docstring); ``hist`` is its history (None:
    no ground truth, e.g. an official release: only what the question itself knows is traced).
    ``substitutions`` returns :func:`memlens.eval.report.operands.substituted_results` of this
    history (a cached function: the work is done once per history, whichever system erred there)."""
    prog = question.details.get("derivation") if isinstance(question.details.get("derivation"), dict) else None
    need = ops.needs(prog, question.image_essential)
    if question.question_type == AR:
        return _trace("answer_on_refusal_item", question, need, commitment.value or "")
    if commitment.abstained:
        return _trace("refusal_on_answerable", question, need)
    if not commitment.value:
        return _trace("no_commitment", question, need)
    if task_key in _BINARY_KEYS:
        return _trace("binary_choice", question, need, commitment.value)
    case = _Case(question, _committed(commitment.value, question.question), hist, prog, need, substitutions)
    for step in (_stale, _hedged, _partial, _slip, _in_evidence, _small_misread, _distractor, _elsewhere, _misread):
        t = step(case)
        if t is not None:
            return t
    return _trace("not_in_history", question, need, commitment.value)


def substituted(question: Question, hist: HistoryIndex) -> dict:
    """The answers of ``question`` with one evidence image swapped for (or joined by) a same-family
    distractor image of ``hist`` (:func:`memlens.eval.report.operands.substituted_results`)."""
    prog = question.details.get("derivation") if isinstance(question.details.get("derivation"), dict) else None
    distractors = {i: hist.truth(i) for i in hist.distractor_images() if hist.truth(i)}
    context = {"evidence_dates": [e.date for e in question.evidence]}
    return ops.substituted_results(prog, _truths(question, hist), distractors, context)


def _text_substitution(com: _Committed, subs: dict) -> str | None:
    best = None
    for (kind, key), did in subs.items():
        v = Value(kind, key, "image", did)
        if com.matches(v) and (best is None or len(str(v.key)) > len(str(best[0]))):
            best = (v.key, did)
    return best[1] if best else None


def _text_in_sessions(com: _Committed, question: Question, hist: HistoryIndex, sessions: list[str]) -> Value | None:
    """A text answer's own words (beyond those of the question) said in one of ``sessions``."""
    words = [w for w in com.text.split() if w in com.residual]
    if not words or (len(words) < 2 and len(words[0]) < 6):  # as specific as Value.specific
        return None
    phrase = " ".join(words)
    for s in sessions:
        if f" {phrase} " in f" {hist.session_norm(s)} ":
            return Value("text", phrase, "session", s)
    return None
