"""Deterministic (LLM-free) judge for MemLens predictions.

Public API:

* :func:`task_key` - the official routing of (type, subtype, reference) to the ten judge task keys
  (facts §4.3).
* :func:`score` - grade one prediction, returning a frozen :class:`Grade`.

Pipeline of :func:`score` (every task key):

1. ``prepare_prediction`` (official pre-processing: parse, tail truncation, word count). An
   auto-zero prediction (> 500 words after truncation) scores 0 ("auto-zero: N words").
2. An empty prediction scores 0 ("empty"). This includes ``answer_refusal``: an empty output is a
   failure to respond, not an explicit decline, so it is *not* an abstention.
3. ``extract_final_answer`` picks the final answer of a long output (an ``[ANSWER]`` tag, a "Final
   answer:" line, the last line or sentence).
4. Refusals (:func:`memlens.eval.judge.parsing.last_refusal_span`: "cannot compare", "not
   mentioned", "no record", "you never told me", ... by a maintained list and their structure):
   only text *after the last* refusal phrase can carry a committed guess ("..., but I think it is
   5" is graded as 5). A guess holds a guess phrase ("I think", "probably", "my best guess", ...)
   or, for typed references, a value introduced by punctuation or a connective ("Insufficient
   information. 5"). A refusal without a guess is an abstention: correct only for
   ``AR_AnswerRefusal`` (whatever its stored reference), otherwise "refusal"; a refusal followed by
   a guess is an answer, so it is wrong on an answer-refusal item.
5. **Commitment first, then matching**: the task key's matcher (one entry per key in ``_TASKS``)
   finds the typed values of the answer (:mod:`memlens.eval.judge.values`) and what the answer
   commits to (:mod:`memlens.eval.judge.commit`: the final value after reasoning, the value after
   a retraction, X in "X, not Y", the affirmed value of a negation pair), and compares that one
   value with the reference. A hedge between values, a list of candidates, a range, a bound, an
   approximation or a pure denial commits to nothing and is wrong.

References are compared by type, IE and KU included (:func:`reference_kind`): a count, an amount,
a date, a time, a duration, a quantity with a unit or a code (flight, plate, booking reference) is
compared as that type with its normalisation; any other reference as word-bounded text under the
normalisation of :func:`memlens.eval.judge.values.text_tokens` (case, punctuation, articles,
number words, plural endings, a few spellings). Closed answers are read by
:mod:`memlens.eval.judge.closed` (A/B by letter, ordinal or the option's text; orders in any
notation, as a numbered list or as the question's events named in order; yes/no by a committed
polarity). Knowledge updates read direction ("from X to Y", "X replaced Y", "no longer X, now Y",
"used to be X"): the old value as current, or both values without a committed current one, is
wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from memlens.core.constants import REFUSAL_REFERENCE
from memlens.core.tasks import (
    AR_REFUSAL,
    IE_ENTITY,
    IE_PREVIOUS,
    KU_UPDATE,
    MSR_ARITHMETIC,
    MSR_COUNTING,
    MSR_YESNO,
    TASK_KEYS,
    TR_DATE,
    TR_DURATION,
    TR_ORDER,
    task_key,
)
from memlens.eval.judge import commit as cm
from memlens.eval.judge.closed import index_runs, letters, polarities, read_choice, read_order, read_yes_no
from memlens.eval.judge.parsing import extract_final_answer, last_refusal_span, prepare_prediction
from memlens.eval.judge.values import (
    AMBIGUOUS_DATE,
    Amount,
    Mention,
    amounts_equal,
    code_shape,
    currency_ok,
    find_amounts,
    find_codes,
    find_colours,
    find_counts,
    find_dates,
    find_durations,
    find_phrase,
    find_quantities,
    find_times,
    fmt_amount,
    fmt_number,
    fmt_quantity,
    normalize_text,
    ref_amount,
    ref_colour,
    ref_count,
    ref_date,
    ref_duration,
    ref_quantity,
    ref_time,
    ref_tokens,
)

__all__ = [
    "Grade",
    "score",
    "task_key",
    "reference_kind",
    "normalize_text",
    "TASK_KEYS",
    "ABSTENTION_ANSWER",
    "RULES_VERSION",
]

#: Version of the rules below. Bump it whenever a verdict can change: it is part of the judge's
#: identity (``judge_key`` in the judge manifest), and archived verdicts of an older version are
#: dropped, never mixed with new ones (:mod:`memlens.eval.judge.stage`).
#: 2: amounts in every printed notation, money references of IE/KU matched as amounts, the
#: concluding choice of a reasoned A/B answer, partitive counts.
#: 3: commitment first (retractions, "X, not Y", negation pairs, supersession, context; hedges,
#: candidate lists, ranges, bounds, approximations and denials are wrong), typed matching of every
#: reference kind in IE and KU (dates, times, durations, quantities, codes, counts, amounts),
#: word-bounded text, A/B by the option's text and comparatives, orders in any notation, yes/no by
#: committed polarity, KU direction, refusals by meaning.
#: 4: the red-team rules (tests/judge/natural_items_redteam.py): more refusal phrasings, coordinated
#: and appositive values, "changed to" supersession, times in words, inverted and joined names, paired
#: units, a final standalone value, KU swap / "left" / "from <source>", quicker/faster, trimmed order
#: runs, digit-string orders, bare event lists, compact and two-digit-year dates, amounts in words,
#: dotted yen thousands.
RULES_VERSION = "4"

#: What an abstention is compared against officially (the AR reference is ignored).
ABSTENTION_ANSWER = REFUSAL_REFERENCE


@dataclass(frozen=True, slots=True)
class Grade:
    """The outcome of judging one prediction.

    ``parsed`` is the canonical committed answer ("5", "15.50 USD", "2024/05/31", "19:45",
    "(2)(3)(1)", "A", "Yes", the normalised text for text references, ``ABSTENTION_ANSWER`` for an
    AR abstention) or None when the answer commits to nothing. ``reason`` is a short
    machine-friendly explanation ("int-match", "int-mismatch: 3 != 5", "ambiguous: 3, 4",
    "range: 3 - 5", "bound: 3", "approximate: 5", "denial: 2", "auto-zero: 612 words", "refusal",
    "no-answer", "outdated", ...). ``degenerate`` is the official degeneracy diagnostic, None unless
    ``score(..., diagnostics=True)``.
    """

    correct: bool
    parsed: str | None
    reason: str
    task_key: str
    abstained: bool = False
    auto_zero: bool = False
    truncated: bool = False
    degenerate: bool | None = None
    parsed_words: int = 0

    @property
    def score(self) -> int:
        """0/1, like the official ``judge_score``."""
        return int(self.correct)


class _Ctx(NamedTuple):
    old_answer: str | None
    tolerance: float | None
    question: str | None


class _Outcome(NamedTuple):
    correct: bool
    parsed: str | None
    reason: str


# --------------------------------------------------------------------------------------------
# Reference kinds and their comparison
# --------------------------------------------------------------------------------------------


class _Kind(NamedTuple):
    """How one reference kind is found, compared and printed."""

    name: str  # reason prefix: "int", "amount", "date", ...
    want: Callable[[str], object]  # the reference's value, or None
    find: Callable[[str, object], list[Mention]]  # value mentions of an answer (given the reference's value)
    same: Callable[[object, object, _Ctx], bool]  # a committed value equals the reference's
    fmt: Callable[[object], str]
    ordered: bool = True
    timeline: bool = False


def _same_amount(want: Amount, got: Amount, ctx: _Ctx) -> bool:
    tol = ctx.tolerance if ctx.tolerance is not None else 0.005
    return currency_ok(want.currency, got.currency) and amounts_equal(want, got, tol)


def _eq(a, b, ctx) -> bool:
    return a == b


_KINDS: dict[str, _Kind] = {
    "count": _Kind("int", ref_count, lambda t, w: find_counts(t), _eq, fmt_number),
    "amount": _Kind("amount", ref_amount, lambda t, w: find_amounts(t), _same_amount, fmt_amount),
    "date": _Kind("date", ref_date, lambda t, w: find_dates(t), _eq, str, timeline=True),
    "time": _Kind("time", ref_time, lambda t, w: find_times(t), _eq, str, timeline=True),
    "duration": _Kind("duration", ref_duration, lambda t, w: find_durations(t), _eq, lambda v: f"{fmt_number(v)} min"),
    "quantity": _Kind("quantity", ref_quantity, lambda t, w: find_quantities(t), _eq, fmt_quantity),
    "colour": _Kind("colour", ref_colour, lambda t, w: find_colours(t), _eq, str, ordered=False),
    "code": _Kind(
        "code",
        lambda r: (r.strip(), code_shape(r)) if code_shape(r) is not None else None,
        lambda t, w: find_codes(t, w[1]),
        lambda w, g, ctx: g == re.sub(r"[\s-]", "", w[0]).upper(),
        str,
        ordered=False,
    ),
}


@lru_cache(maxsize=4096)
def reference_kind(ref: str) -> str:
    """The type a free-text (IE/KU) reference is compared as: ``date``, ``time``, ``amount``,
    ``count``, ``duration``, ``quantity``, ``code``, ``colour`` (one colour word, compared among the
    colours the answer names) or ``text`` (the first that parses the whole
    reference; a bare integer is a count unless it has a leading zero, then a code)."""
    r = ref.strip()
    if ref_date(r) is not None and re.fullmatch(r"[\w ,./-]+", r) and len(find_dates(r)) == 1:
        d = find_dates(r)[0]
        if not r[: d.start].strip() and not r[d.end :].strip(" ."):
            return "date"
    if ref_time(r) is not None:
        return "time"
    if re.fullmatch(r"0\d+", r):
        return "code"
    if ref_count(r) is not None and re.fullmatch(r"(?:\d{1,3}(?:,\d{3})+|\d+)", r):
        return "count"
    if ref_amount(r) is not None and re.search(r"\d", r):
        return "amount"
    if ref_duration(r) is not None:
        return "duration"
    if ref_quantity(r) is not None:
        return "quantity"
    if code_shape(r) is not None and len(re.sub(r"[\s-]", "", r)) >= 2:
        return "code"
    if ref_colour(r) is not None:
        return "colour"
    return "text"


def _verdict(kind: _Kind, want, c: cm.Commitment, ctx: _Ctx) -> _Outcome:
    """Grade a commitment against the reference's value."""
    fmt = kind.fmt
    if c.status == cm.NONE:
        return _Outcome(False, None, "no-answer")
    if c.status == cm.AMBIGUOUS:
        if AMBIGUOUS_DATE in c.values:
            return _Outcome(False, None, "ambiguous-date: day/month order")
        return _Outcome(False, None, "ambiguous: " + ", ".join(fmt(v) for v in c.values))
    if c.status == cm.RANGE:
        return _Outcome(False, None, "range: " + " - ".join(fmt(v) for v in c.values))
    if c.status == cm.DENIAL:
        return _Outcome(False, None, "denial: " + ", ".join(fmt(v) for v in c.values))
    if c.status in (cm.BOUND, cm.APPROXIMATE):
        return _Outcome(False, None, f"{c.status}: {fmt(c.value)}")
    if c.value == AMBIGUOUS_DATE:
        return _Outcome(False, None, "ambiguous-date: day/month order")
    parsed = fmt(c.value)
    if kind.name == "amount" and not currency_ok(want.currency, c.value.currency):
        return _Outcome(False, parsed, f"currency-mismatch: {c.value.currency} != {want.currency}")
    if kind.same(want, c.value, ctx):
        return _Outcome(True, parsed, f"{kind.name}-match")
    return _Outcome(False, parsed, f"{kind.name}-mismatch: {parsed} != {fmt(want if kind.name != 'code' else want[0])}")


def _match_kind(kind_name: str, ref: str, text: str, ctx: _Ctx) -> _Outcome:
    kind = _KINDS[kind_name]
    want = kind.want(ref.strip())
    if want is None:
        return _fallback_text(ref, text, ctx)
    mentions = kind.find(text, want)
    if not mentions and kind_name == "count" and ctx.question:
        mentions = _initial_labels(text, ctx.question)
    c = cm.commit(text, mentions, ordered=kind.ordered, timeline=kind.timeline, question=ctx.question)
    return _verdict(kind, want, c, ctx)


_LETTER_NUMBER_RE = re.compile(r"\b([A-Z])(\d{1,4})\b")


def _initial_labels(text: str, question: str) -> list[Mention]:
    """A number written with the initial of what the question numbers ("T1" for "which terminal
    number", "G12" for "which gate"): the word before "number" or after "which" in the question."""
    words = re.findall(r"\b(\w+)\s+number\b|\bwhich\s+(\w+)", question, re.I)
    initials = {(a or b)[0].upper() for a, b in words if (a or b)}
    return [
        Mention(float(m.group(2)), m.start(), m.end())
        for m in _LETTER_NUMBER_RE.finditer(text)
        if m.group(1) in initials
    ]


def _match_count(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    return _match_kind("count", ref, text, ctx)


def _match_amount(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    return _match_kind("amount", ref, text, ctx)


def _match_date(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    return _match_kind("date", ref, text, ctx)


# --------------------------------------------------------------------------------------------
# Free text (IE, KU, fallbacks): word-bounded, committed
# --------------------------------------------------------------------------------------------


def _match_text(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = ref_tokens(ref)
    if not want:
        ok = ref.strip().lower() == text.strip().lower()
        return _Outcome(ok, normalize_text(text) or None, "text-match" if ok else "text-mismatch")
    status = cm.commit_phrase(text, _phrase_spans(text, ref))
    if status == cm.VALUE:
        return _Outcome(True, " ".join(want), "text-match")
    if status == cm.NONE:
        return _Outcome(False, normalize_text(text) or None, "text-mismatch")
    return _Outcome(False, None, f"{status}: {' '.join(want)}")


_ALNUM_RE = re.compile(r"[^\W_]+")


def _phrase_spans(text: str, ref: str) -> list[tuple[int, int]]:
    """Word-bounded occurrences of a text reference, or of the reference written otherwise."""
    want = ref_tokens(ref)
    return find_phrase(text, want) or _written_otherwise(text, ref, want)


def _written_otherwise(text: str, ref: str, want: tuple[str, ...]) -> list[tuple[int, int]]:
    """Occurrences of a text reference written another way: with its words joined or split
    ("Movie Nest" for "MovieNest", "JuniperYard" for "Juniper Yard"), or a name surname first
    after a comma ("KELLY, LEAH" for "Leah Kelly")."""
    if len(want) >= 2:
        inverted = find_phrase(text, (want[-1], *want[:-1]))
        inverted = [(a, b) for a, b in inverted if "," in text[a:b]]
        if inverted:
            return inverted
    joined = "".join(_ALNUM_RE.findall(ref.lower()))
    words = [(m.start(), m.end(), m.group().lower()) for m in _ALNUM_RE.finditer(text)]
    out = []
    for i in range(len(words)):
        acc = ""
        for j in range(i, min(len(words), i + len(want) + 3)):
            acc += words[j][2]
            if acc == joined and (j > i or len(want) > 1):
                out.append((words[i][0], words[j][1]))
            if not joined.startswith(acc):
                break
    return out


def _match_entity(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    """IE: the reference is compared as its kind (:func:`reference_kind`), text otherwise."""
    kind = reference_kind(ref)
    if kind == "text":
        return _match_text(ref, text, ctx)
    return _match_kind(kind, ref, text, ctx)


def _fallback_text(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    """Used when a typed key's reference cannot be parsed in its expected format."""
    out = _match_text(ref, text, ctx)
    return out._replace(reason=f"ref-unparsed; {out.reason}")


# --------------------------------------------------------------------------------------------
# Closed answers: A/B, order, yes/no (readers in memlens.eval.judge.closed)
# --------------------------------------------------------------------------------------------


def _closed(got: cm.Commitment, want: str, name: str) -> _Outcome:
    if got.status == cm.VALUE:
        if got.value == want:
            return _Outcome(True, got.value, f"{name}-match")
        return _Outcome(False, got.value, f"{name}-mismatch: {got.value} != {want}")
    if got.status == cm.NONE:
        return _Outcome(False, None, "no-answer")
    return _Outcome(False, None, f"{got.status}: {' and '.join(map(str, got.values))}")


def _ref_choice(ref: str) -> str | None:
    r = ref.strip().strip("().").upper()
    return r if r in ("A", "B") else None


def _match_choice(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = _ref_choice(ref)
    if want is None:
        return _fallback_text(ref, text, ctx)
    return _closed(read_choice(text, ctx.question), want, "choice")


_REF_ORDER_RE = re.compile(r"^\s*(?:\(\s*\d+\s*\)\s*)+$")


def _match_order(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    if not _REF_ORDER_RE.match(ref):
        return _fallback_text(ref, text, ctx)
    want = "".join(f"({int(n)})" for n in re.findall(r"\d+", ref))
    return _closed(read_order(text, ctx.question), want, "order")


def _match_yes_no(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = ref.strip().capitalize()
    if want not in ("Yes", "No"):
        return _fallback_text(ref, text, ctx)
    return _closed(read_yes_no(text), want, "yesno")


# --------------------------------------------------------------------------------------------
# Knowledge update: the current value, read by direction
# --------------------------------------------------------------------------------------------

#: cues before a value: the nearest one (at most three words before it) says what the value is
_KU_CUES = (
    (
        re.compile(
            r"\b(?:now|currently|these\s+days|nowadays|at\s+the\s+moment|at\s+present|today|lately|"
            r"from\s+now\s+on|replaced\s+(?:by|with)|switched\s+(?:over\s+)?to|changed\s+(?:it\s+|over\s+)?to|"
            r"moved\s+(?:on\s+|over\s+)?to|upgraded\s+to|went\s+(?:with|for)|settled\s+on|the\s+new|new|"
            r"(?:swapped|traded|exchanged)\s+(?:out\s+|in\s+)?for|"
            r"current|latest)\b",
            re.I,
        ),
        2,
    ),
    (re.compile(r"\b(?:it's|it\s+is|is|are)\b|'s\b", re.I), 1),
    (
        re.compile(
            r"(?:\b(?:from|used\s+to|previously|formerly|originally|initially|at\s+first|no\s+longer|before|"
            r"earlier|the\s+old|old|prior|instead\s+of|rather\s+than|replaced|replacing|not|never|until\s+recently|"
            r"had\s+been|back\s+then|in\s+the\s+past|once|finished|stopped\s+\w+ing|quit|gave\s+up(?:\s+on)?|"
            r"dropped|swapped|swapping|traded|trading|exchanged|ditched|ditching|left|leaving|abandoned)\b|n't)",
            re.I,
        ),
        -2,
    ),
    (re.compile(r"\b(?:was|were)\b", re.I), -1),
)
_KU_PASSIVE_AFTER = re.compile(
    r"^\W*(?:was|were|has\s+been|have\s+been|had\s+been|got|is|are)\s+"
    r"(?:replaced|swapped|traded|exchanged|dropped|ditched|abandoned)\b",
    re.I,
)
_KU_ACTIVE_AFTER = re.compile(r"^\W*(?:has\s+|have\s+|now\s+)?replac(?:ed|es)\b", re.I)
_KU_PAST_AFTER = re.compile(
    r"^\W*(?:(?:was|were|is)\s+)?(?:before|previously|earlier|originally|at\s+first|in\s+the\s+past|back\s+then|"
    r"formerly|no\s+longer|not\s+anymore|anymore|until\s+recently)\b"
    r"|^\W*(?:was|were|is)\s+(?:the\s+|your\s+)?(?:old|previous|former|earlier|original|first)\b",
    re.I,
)
_KU_CURRENT_AFTER = re.compile(
    r"^\W*(?:(?:is|are)\s+(?:it\s+)?)?(?:now|currently|these\s+days|nowadays|at\s+the\s+moment|today)\b"
    r"|^\W*(?:is|'s|are)\s+(?:the\s+|your\s+)?(?:new|current|latest|newest|present)\b",
    re.I,
)
_KU_HEDGE_RE = re.compile(r"\b(?:or|either|not\s+sure\s+which|unsure\s+which|one\s+of)\b|/", re.I)
_KU_TO_RE = re.compile(r"^\W*(?:and\s+)?(?:then\s+)?(?:to|into|for|with)\s*$", re.I)
#: a change away from what follows "from" ("switched from", "moved there from", "moving on from")
_KU_LEFT_FROM = re.compile(
    r"\b(?:mov\w*|switch\w*|chang\w*|came|come|coming|went|go|gone|going|upgrad\w*|shift\w*|transfer\w*|"
    r"away|on|over|back)\s+(?:\w+\s+){0,2}from$",
    re.I,
)
_KU_TO_AFTER = re.compile(r"^\W*(?:(?:and|then|over|on)\s+)*(?:to|into)\b", re.I)
#: what a value after "to", "for" or "with" replaces: "from X to Y", "swapped X for Y", "replaced X with Y"
_KU_FROM_BEFORE = re.compile(
    r"\b(?:from|swapped|swapping|swap|traded|trading|trade|exchanged|exchanging|replaced|replacing|ditched|left|"
    r"leaving|abandoned)\W*$",
    re.I,
)


def _ku_score(text: str, m: Mention, prev: Mention | None, nxt: Mention | None, prev_from: bool) -> int:
    """How strongly the surroundings of one value call it current (> 0) or past (< 0): the nearest
    cue before it (within its sentence, at most three words away), and a cue right after it."""
    lead = text[prev.end if prev else 0 : m.start]
    cut = max(lead.rfind("; "), lead.rfind(". "), lead.rfind("! "), lead.rfind("? "), lead.rfind("\n"))
    if cut >= 0:  # a cue of the previous sentence ("... now; Cobble Scoops was before") is not this value's
        lead = lead[cut + 1 :]
    tail = text[m.end : nxt.start if nxt else len(text)]
    s = 2 if prev_from and _KU_TO_RE.match(lead) else 0
    cues = [(c.end(), c.start(), w) for rx, w in _KU_CUES for c in rx.finditer(lead)]
    if cues:
        end, start, w = max(cues)
        if lead[start:end].lower() == "from" and not (_KU_TO_AFTER.match(tail) or _KU_LEFT_FROM.search(lead, 0, end)):
            w = 0  # a source ("you buy it from X now"), not a change ("from X to Y", "switched from X")
        if len(lead[end:].split()) <= 3:
            s += w
    if _KU_PASSIVE_AFTER.match(tail) or _postfix(_KU_PAST_AFTER, tail, nxt):
        s -= 2
    elif _KU_ACTIVE_AFTER.match(tail) or _postfix(_KU_CURRENT_AFTER, tail, nxt):
        s += 2
    return s


def _postfix(rx: re.Pattern, tail: str, nxt: Mention | None) -> bool:
    """A cue after a value ("London before.", "Rome now; ...") that belongs to it: nothing follows,
    or a clause break closes the cue before the next value ("London, no longer Paris": the cue is
    Paris's)."""
    m = rx.match(tail)
    if m is None:
        return False
    return nxt is None or bool(_CUE_CLOSED_RE.match(tail[m.end() :]))


_CUE_CLOSED_RE = re.compile(r"\s*(?:[\w']+\s*){0,2}[.;,!?)]")


def _ku_mentions(ref: str, old: str, text: str, ctx: _Ctx) -> list[Mention] | None:
    """Mentions of the current (``"ref"``), the outdated (``"old"``) and other values of the
    reference's kind; None when the reference is free text and the old value is not in the answer."""
    kind = reference_kind(ref)
    if kind != "text":
        k = _KINDS[kind]
        want, was = k.want(ref.strip()), k.want(old.strip())
        if want is not None and was is not None:
            out = []
            for x in k.find(text, want):
                label = "ref" if k.same(want, x.value, ctx) else "old" if k.same(was, x.value, ctx) else "other"
                out.append(Mention(label, x.start, x.end))
            return out
    o_spans = _phrase_spans(text, old)
    if not o_spans:
        return []
    r_spans = _phrase_spans(text, ref)
    # one value inside the other ("Paris" / "Paris, Texas"): the longer one is the mention
    r_spans = [s for s in r_spans if not any(o[0] <= s[0] and s[1] <= o[1] and o != s for o in o_spans)]
    o_spans = [s for s in o_spans if not any(r[0] <= s[0] and s[1] <= r[1] and r != s for r in r_spans)]
    return [Mention("ref", *s) for s in r_spans] + [Mention("old", *s) for s in o_spans]


def _match_update(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    """KU: the value the answer calls current must be the reference (see the module docstring).

    Without an old answer, or when the answer does not mention it, the reference is matched as in
    IE. Otherwise each value's surroundings score it as current ("now", "currently", "switched
    to", "replaced by", "X replaced ...", "to" after "from") or past ("used to", "previously",
    "from", "no longer", "not", "before that", "... was replaced"); the committed current value is
    the one scored highest after retractions and first thoughts are set aside. The old value as
    current is "outdated"; a tie, a hedge or both values with no direction is ambiguous (wrong)."""
    old = (ctx.old_answer or "").strip()
    base = _match_entity(ref, text, ctx)
    if not old or ref_tokens(old) == ref_tokens(ref):
        return base
    mentions = _ku_mentions(ref, old, text, ctx)
    if mentions is None or not any(m.value == "old" for m in mentions):
        return base
    mentions.sort(key=lambda m: m.start)
    seen = cm.after_retraction(text, cm.roles(text, mentions, ordered=False))
    ms = [s.m for s in seen]
    labels = {m.value for m in ms}
    if labels == {"old"}:
        return _Outcome(False, normalize_text(old), "outdated")
    if "ref" not in labels:
        return base
    scores = []
    prev_from = False
    for i, m in enumerate(ms):
        s = _ku_score(text, m, ms[i - 1] if i else None, ms[i + 1] if i + 1 < len(ms) else None, prev_from)
        prev_from = bool(_KU_FROM_BEFORE.search(text, ms[i - 1].end if i else 0, m.start))
        scores.append(s)
    top = max(scores)
    winners = {m.value for m, s in zip(ms, scores) if s == top}
    hedged = top <= 1 and _KU_HEDGE_RE.search(text[ms[0].start : ms[-1].end])
    if winners == {"ref"} and not hedged:
        return _Outcome(True, base.parsed or " ".join(ref_tokens(ref)), f"{base.reason}: old value marked as previous")
    if winners == {"old"}:
        return _Outcome(False, normalize_text(old), "outdated")
    return _Outcome(False, None, "outdated: old value not marked as previous")


# --------------------------------------------------------------------------------------------
# Task table: one matcher per key
# --------------------------------------------------------------------------------------------

Finder = Callable[[str], list]


class _Task(NamedTuple):
    #: grades the (non-refusal) final answer against the reference
    match: Callable[[str, str, _Ctx], _Outcome] | None
    #: finds a typed value in text after a refusal (None: decided by the reference's kind)
    finder: Finder | None
    #: the key rewards abstaining (AR): correct iff abstained, the reference is ignored
    expects_abstention: bool = False


def _choices(text: str) -> list:
    return letters(text, True)


_TASKS: dict[str, _Task] = {
    IE_ENTITY: _Task(_match_entity, None),
    IE_PREVIOUS: _Task(_match_entity, None),
    MSR_ARITHMETIC: _Task(_match_amount, find_amounts),
    MSR_COUNTING: _Task(_match_count, find_counts),
    MSR_YESNO: _Task(_match_yes_no, polarities),
    TR_DURATION: _Task(_match_choice, _choices),
    TR_ORDER: _Task(_match_order, index_runs),
    TR_DATE: _Task(_match_date, find_dates),
    KU_UPDATE: _Task(_match_update, None),
    AR_REFUSAL: _Task(None, None, expects_abstention=True),
}


def _kind_finder(ref: str) -> Finder | None:
    """The value finder of a free-text reference's kind (None for text: a guess phrase is needed)."""
    kind = reference_kind(ref)
    if kind == "text":
        return None
    k = _KINDS[kind]
    want = k.want(ref.strip())
    return None if want is None else (lambda t: k.find(t, want))


_GUESS_RE = re.compile(
    r"\b(?:i\s+think|i\s+believe|i\s+guess|i'?d\s+guess|i\s+would\s+guess|best\s+guess|my\s+guess|"
    r"if\s+i\s+(?:had|have)\s+to\s+(?:guess|say|pick|choose)|probably|likely|possibly|perhaps|"
    r"maybe|might\s+be|may\s+be|could\s+be|would\s+be|i'?d\s+say|i\s+would\s+say|"
    r"the\s+answer\s+is|answer\s*:|seems\s+to\s+be|appears\s+to\s+be|i\s+suspect|"
    r"my\s+estimate|estimated?\s+(?:at|to\s+be)|(?:is|was|are|were)\s+(?:about|around|roughly))\b",
    re.I,
)
_GUESS_LEAD_RE = re.compile(r"^[\W_]*(?:(?:but|however|though|although|that\s+said|still|yet|so)\b[\W_]*)*", re.I)


def _split_refusal(final: str, finder: Finder | None) -> tuple[bool, str]:
    """(abstained, text to grade). A refusal keeps only a committed guess that follows it.

    The guess must follow the *last* refusal phrase and either contain a guess phrase
    ("I think", "probably", "my best guess", ...) or, for typed references, be introduced by
    punctuation or a connective ("but", "however", "so") and hold a value of the reference's kind -
    so "no information about the 2 dogs" stays a refusal while "Insufficient information. 5" and
    "I can't tell, but 5" are graded as 5.
    """
    span = last_refusal_span(final)
    if span is None:
        return False, final
    tail = final[span[1] :]
    if tail.strip(" .,;:!?-\n\t"):
        lead = _GUESS_LEAD_RE.match(tail).group(0)
        guess = tail[len(lead) :]
        if _GUESS_RE.search(guess):
            return False, guess
        if finder is not None and lead.strip() and finder(guess):
            return False, guess
    return True, final


def score(
    question_type: str,
    question_subtype: str | None,
    reference: str,
    prediction: str,
    *,
    old_answer: str | None = None,
    tolerance: float | None = None,
    question: str | None = None,
    diagnostics: bool = False,
) -> Grade:
    """Grade ``prediction`` against ``reference`` without an LLM (see the module docstring).

    ``old_answer`` is the outdated value of a KU question; ``tolerance`` an absolute tolerance for
    arithmetic (default: exact to the cent, |diff| < 0.005); ``question`` gives the A/B options and
    the events of an order question (their texts are accepted as answers) and enables the
    first/former/second/latter readings only when it names options A and B (without a question
    they are always enabled); ``diagnostics=True`` also computes the degeneracy diagnostic
    (``Grade.degenerate``), which never changes the score. Raises ``ValueError`` for an unknown
    ``question_type``.
    """
    reference = "" if reference is None else str(reference)  # JSON may hold ints
    key = task_key(question_type, question_subtype, reference)
    prep = prepare_prediction(prediction, diagnostics=diagnostics)
    common = dict(
        task_key=key,
        auto_zero=prep.auto_zero,
        truncated=prep.was_truncated,
        degenerate=prep.is_degenerate,
        parsed_words=prep.parsed_words,
    )
    if prep.auto_zero:
        return Grade(False, None, f"auto-zero: {prep.parsed_words} words", **common)
    if not prep.text:
        return Grade(False, None, "empty", **common)
    final = extract_final_answer(prep.text)
    if not final:
        return Grade(False, None, "no-answer", **common)
    task = _TASKS[key]
    finder = task.finder if task.finder is not None or task.expects_abstention else _kind_finder(reference)
    abstained, text = _split_refusal(final, finder)
    if task.expects_abstention:
        if abstained:
            return Grade(True, ABSTENTION_ANSWER, "abstained", abstained=True, **common)
        return Grade(False, final, "answered", **common)
    if abstained:
        return Grade(False, None, "refusal", abstained=True, **common)
    out = task.match(reference, text, _Ctx(old_answer, tolerance, question))
    return Grade(out.correct, out.parsed, out.reason, **common)
