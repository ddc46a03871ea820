"""What an answer commits to: one value, or why it commits to none.

The judge grades the commitment, never a substring. Given the value mentions a typed finder saw
(:mod:`memlens.eval.judge.values`), :func:`commit` reads the structure of the answer around them:

1. **Retraction**: a value before "actually", "wait", "no,", "sorry", "I mean", "correction",
   "scratch that", "on second thought", "I misread" ... is replaced by the values after it
   ("B. Actually, no - A lasted longer." commits to A).
2. **Supersession**: a value introduced as a first thought or an original plan ("I first thought",
   "the original plan was", "initially", "originally") or followed by its change ("5,99 \u20ac, reduced
   to 5,00 \u20ac", "moved it from X to Y") gives way to a later value ("The original plan was 12:15,
   but we settled on 13:15." commits to 13:15).
3. **Context**: a value in a clause that cites where the answer came from ("you mentioned it on
   ...", "according to", "dated", "from the session on ...") or inside parentheses is context, as
   long as a value outside such clauses remains ("2024/12/14 - you mentioned it on 2024/12/17").
4. **Negation**: "not X", "X, not Y", "wasn't X", "rather than X", "instead of X", "X is wrong":
   the negated value is not committed; when every value is negated, the answer is a pure
   **denial** ("It definitely wasn't 2.").
5. **Conclusion**: with several values left, the ones after the last concluding marker ("so",
   "therefore", "in total", "=", "which makes", "the answer is" ...) are the committed ones; a final
   value standing alone after a sentence end, a line break or a colon is committed ("Two large and
   one small one: 3."); a head value followed by ":" or " - " and a breakdown commits to the head
   ("3 plants: one in ...").
6. Still more than one value: a **range** ("between 3 and 5", "3-5", "from May 2 to May 4") or
   an **ambiguous** answer (a hedge "3 or 4", "either ... or", a list of candidates).
7. One value left: a **bound** when every mention of it is one ("at least 3", "more than 2", "3 or
   more", for dates and times "after ...", "before ...", "by ..."), **approximate** when every
   mention is ("about 5", "roughly 7:45"), else the committed **value**.

A hedge about certainty with one value ("probably 5", "I think it was 5") commits to that value.
:func:`commit_phrase` does the same for a free-text reference, whose alternatives the judge cannot
enumerate: it reads the structure around each occurrence of the reference instead.
"""

from __future__ import annotations

import bisect
import itertools
import re
from functools import lru_cache
from typing import NamedTuple

from memlens.eval.judge.values import Mention

VALUE = "value"
NONE = "none"
AMBIGUOUS = "ambiguous"
RANGE = "range"
BOUND = "bound"
APPROXIMATE = "approximate"
DENIAL = "denial"
RETRACTED = "retracted"
SUPERSEDED = "superseded"
CONCLUDED_OTHER = "concluded-other"


class Commitment(NamedTuple):
    status: str
    value: object = None
    values: tuple = ()


_NONE = Commitment(NONE)

# clause breaks: punctuation followed by a space (not inside numbers), dashes, brackets, line ends
_BREAK_RE = re.compile(r"[;!?\n(]|[.:,](?=\s|$)|\s[-\u2013\u2014]+\s|\u2014|\.\.\.")
_NEG_RE = re.compile(
    r"(?:\b(?:not|never|neither|nor|no|no\s+longer|rather\s+than|instead\s+of|other\s+than|except(?:\s+for)?)|n't)"
    r"(?!\s+(?:sure|certain|entirely|completely|totally|quite|100|exactly\s+sure))"
    r"(?:\s+[\w']+){0,3}?\s*[\"'(*_]*$",
    re.I,
)
_NEG_AFTER_RE = re.compile(
    r"^[\"')*_]*\s*(?:is|was|would\s+be|seems)?\s*(?:wrong|incorrect|not\s+(?:right|correct|it)\b|"
    r"isn't\s+(?:right|correct|it)\b|wasn't\s+(?:right|correct|it)\b)",
    re.I,
)
_BOUND_RE = re.compile(
    r"(?:\b(?:at\s+least|at\s+most|more\s+than|less\s+than|fewer\s+than|greater\s+than|over|under|above|below|"
    r"(?<!add\s)(?<!adds\s)(?<!added\s)(?<!sum\s)(?<!sums\s)up\s+to|no\s+more\s+than|no\s+fewer\s+than|no\s+less\s+than|not\s+more\s+than|not\s+less\s+than|"
    r"a\s+minimum\s+of|a\s+maximum\s+of|upwards\s+of|in\s+excess\s+of|beyond|exceeding)|[<>\u2264\u2265]=?)\s*$",
    re.I,
)
_TIME_BOUND_RE = re.compile(
    r"\b(?:after|before|since|until|till|by|no\s+later\s+than|no\s+earlier\s+than|later\s+than|earlier\s+than|"
    r"prior\s+to)\s*$",
    re.I,
)
_BOUND_AFTER_RE = re.compile(
    r"^\s*(?:\+|or\s+(?:more|fewer|less|above|below|higher|lower|later|earlier|after|before|over|under)\b|"
    r"and\s+(?:up|above|over|more|beyond)\b|at\s+(?:the\s+)?(?:least|most|latest|earliest)\b)",
    re.I,
)
_APPROX_RE = re.compile(
    r"(?:\b(?:about|around|roughly|approximately|approx\.?|circa|ca\.|nearly|almost|close\s+to|"
    r"give\s+or\s+take)|~)\s*$",
    re.I,
)
_APPROX_AFTER_RE = re.compile(r"^\s*(?:-?ish\b|or\s+so\b|give\s+or\s+take\b|,?\s*more\s+or\s+less\b)", re.I)
_CONTEXT_RE = re.compile(
    r"\b(?:you\s+(?:first\s+|also\s+|later\s+|had\s+)?(?:mentioned|told|said|shared|sent|showed|posted|wrote|"
    r"uploaded|asked|brought\s+(?:it|this|that)\s+up)|(?:mentioned|shared|sent|posted|told\s+me|said|uploaded|"
    r"taken|snapped|photographed)\s+(?:it\s+|this\s+|that\s+|them\s+)?(?:on|in|back\s+in|around)|"
    r"according\s+to|as\s+(?:shown|seen|stated|noted)|dated|(?:in|from|on)\s+(?:the|your|our|that)\s+"
    r"(?:message|session|chat|conversation|photo|picture|screenshot|receipt|post)s?\s+(?:on|from|of|dated)|"
    r"the\s+(?:session|message|conversation|chat|photo)\s+(?:on|from|of))\b",
    re.I,
)
#: a unit price or a per-item figure next to the total asked for ("at 754 DKK each")
_EACH_AFTER_RE = re.compile(r"^\s*(?:each|apiece|a\s+piece|per\s+(?:item|ticket|piece|unit|person|night|one))\b", re.I)
#: a first thought named after the value ("It was 18:30 at first, but ...")
_SUPERSEDED_AFTER_RE = re.compile(r"^\s*,?\s*(?:at\s+first|originally|initially|to\s+begin\s+with)\b", re.I)
#: a change "from X to Y": X is what it was, Y what it became (not a range)
_CHANGE_FROM_RE = re.compile(
    r"\b(?:mov|chang|switch|shift|push|resched|brought|bring|updat|rais|lower|drop|bump|delay|postpon|"
    r"went|go|turn)\w*\s+(?:it\s+|that\s+|this\s+|things\s+|the\s+\w+\s+)?(?:back\s+|forward\s+|up\s+)?from\s*$",
    re.I,
)
_TO_AFTER_RE = re.compile(r"^\s*(?:to|into|until)\b", re.I)
#: a value followed by its change ("5,99 \u20ac, reduced to 5,00 \u20ac", "12:15, later moved to 13:15"): what it became
_CHANGED_TO_AFTER_RE = re.compile(
    r"^[\s*_]*[,;]?\s*(?:(?:and|but|then|later|since|now|which\s+was|which\s+got)\s+)*(?:(?:was|were|got|been)\s+)?"
    r"(?:reduced|lowered|cut|discounted|marked\s+down|dropped|raised|increased|changed|moved|pushed|rescheduled|"
    r"updated|bumped|brought\s+(?:forward|back)|corrected|amended|revised)\s+(?:it\s+)?(?:down\s+|up\s+)?to\b",
    re.I,
)
_SUPERSEDED_RE = re.compile(
    r"\b(?:first\s+(?:thought|said|guessed|agreed|planned)|i\s+thought|initially|originally|at\s+first|"
    r"the\s+original|was\s+going\s+to\s+be|had\s+planned|had\s+(?:said|suggested|agreed)|before\s+changing)\b",
    re.I,
)
_RETRACT_WORDS = (
    r"\b(?:actually|wait|hold\s+on|correction|scratch\s+that|i\s+mean|sorry|on\s+second\s+thought|"
    r"let\s+me\s+correct(?:\s+that)?|i\s+was\s+wrong|my\s+mistake|make\s+that|or\s+rather|"
    r"i\s+take\s+(?:that|it)\s+back|strike\s+that|i\s+misread|i\s+misspoke|on\s+reflection|"
    r"that(?:'s|\s+is|\s+was)\s+(?:wrong|not\s+right|incorrect)|that\s+can't\s+be\s+right|let\s+me\s+recount|"
    r"(?:on\s+)?(?:a\s+)?closer\s+look|looking\s+again|re-?checking)\b"
)
_RETRACT_RE = re.compile(_RETRACT_WORDS, re.I)
#: a leading "No," also retracts, except where "No" is itself an answer (yes/no)
_RETRACT_NO_RE = re.compile(
    _RETRACT_WORDS + r"|(?:^|[.!?]\s+|[,;]\s*|\s[-\u2013\u2014]+\s*)no\s*[,.!:\-\u2013\u2014]", re.I
)
_CONCLUSION_RE = re.compile(
    r"=>|->|\u2192|=|\b(?:so|therefore|thus|hence|consequently|overall|altogether|in\s+total|in\s+summary|"
    r"in\s+conclusion|in\s+short|total(?:s|ing)?|which\s+(?:is|gives|makes|comes\s+to|equals|means)|"
    r"that\s+(?:makes|gives|comes\s+to|means)|i\.e\.|giv(?:es|ing)|mak(?:es|ing)|equals?|comes\s+to|adds\s+up\s+to|"
    r"brings?\s+(?:it\s+|the\s+total\s+)?to|for\s+a\s+total\s+of|"
    r"sums?\s+(?:up\s+)?to|come\s+to|would\s+(?:be|cost|come\s+to)|will\s+(?:be|cost)|"
    r"final\s+answer|the\s+answer\s+is|my\s+answer\s+is|answer\s*:|"
    r"i(?:'d|\s+would)\s+(?:say|pick|choose|go\s+with)|meaning)\b",
    re.I,
)
_HEAD_RE = re.compile(r":\s|\s[-\u2013\u2014]+\s|,?\s+(?:because|since|given\s+that)\b")
_HEDGE_RE = re.compile(
    r"\b(?:or|either|maybe|perhaps|possibly|probably|could|might|may|not\s+sure|unsure|"
    r"candidates?|options?)\b|/",
    re.I,
)
_RANGE_GAP_RE = re.compile(r"^\s*(?:-|\u2013|\u2014|to|and|through|thru|till|until)\s*$", re.I)
_RANGE_LEAD_RE = re.compile(r"\b(?:between|from|range|ranging)\b[^.;]*$", re.I)


_WORD_RE = re.compile(r"[a-z]+")


@lru_cache(maxsize=16384)
def _words(text: str) -> frozenset[str]:
    """The lower-case words of ``text``: a cheap test of which cue families can occur at all."""
    return frozenset(_WORD_RE.findall(text.lower()))


def _has(text: str, words: frozenset[str], symbols: str = "") -> bool:
    return not words.isdisjoint(_words(text)) or "n't" in text or "n\u2019t" in text or any(c in text for c in symbols)


_NEG_WORDS = frozenset(
    ["not", "never", "neither", "nor", "no", "rather", "instead", "other", "except", "wrong", "incorrect"]
)
_BOUND_WORDS = frozenset(
    [
        "least",
        "most",
        "more",
        "less",
        "fewer",
        "greater",
        "over",
        "under",
        "above",
        "below",
        "up",
        "minimum",
        "maximum",
        "upwards",
        "excess",
        "beyond",
        "exceeding",
        "after",
        "before",
        "since",
        "until",
        "till",
        "by",
        "later",
        "earlier",
        "prior",
        "about",
        "around",
        "roughly",
        "approx",
        "approximately",
        "circa",
        "ca",
        "nearly",
        "almost",
        "close",
        "give",
        "ish",
        "so",
        "or",
    ]
)
_CONTEXT_WORDS = frozenset(
    [
        "you",
        "mentioned",
        "shared",
        "sent",
        "posted",
        "told",
        "said",
        "uploaded",
        "taken",
        "snapped",
        "photographed",
        "according",
        "as",
        "dated",
        "in",
        "from",
        "on",
        "the",
        "each",
        "apiece",
        "per",
    ]
)
#: words (or symbols) without which one repeated value is simply committed: negation, bound, approximation
_SINGLE_CUE_WORDS = _NEG_WORDS | _BOUND_WORDS
_SINGLE_CUE_SYMBOLS = "~+<>\u2264\u2265"


class _Seen(NamedTuple):
    m: Mention
    negated: bool
    bound: bool
    approx: bool
    context: bool
    superseded: bool


def _breaks(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _BREAK_RE.finditer(text)]


def _lead_start(breaks: list[tuple[int, int]], lo: int, hi: int) -> int:
    """Where the clause of a value starting at ``hi`` begins: after the last break ending by ``hi``
    (breaks do not overlap, so their ends are sorted), not before ``lo``."""
    i = bisect.bisect_right(breaks, (hi, hi)) - 1
    while i >= 0 and breaks[i][1] > hi:
        i -= 1
    return max(lo, breaks[i][1]) if i >= 0 else lo


def _sentence_start(text: str, hi: int) -> int:
    i = max(text.rfind(". ", 0, hi), text.rfind("\n", 0, hi), text.rfind("! ", 0, hi), text.rfind("? ", 0, hi))
    return 0 if i < 0 else i + 1


def _inside(pos: int, ms) -> bool:
    return any(x.start <= pos < x.end for x in ms)


def _in_parens(text: str, m: Mention) -> bool:
    open_ = text.rfind("(", 0, m.start)
    return open_ >= 0 and text.find(")", open_, m.start) < 0 and text.find(")", m.end) >= 0


def roles(
    text: str,
    mentions: list[Mention],
    *,
    ordered: bool = True,
    timeline: bool = False,
    negated_at: frozenset[int] = frozenset(),
) -> list[_Seen]:
    """Each mention with what its surroundings make of it (negated, bound, context, ...);
    ``negated_at``: starts of mentions a caller's own rule rules out."""
    breaks = _breaks(text)
    # which families of cues occur at all (one scan each), so that absent ones cost nothing per mention
    low = text.lower()
    has_neg = _has(low, _NEG_WORDS) or bool(negated_at)
    has_bound = ordered and _has(low, _BOUND_WORDS, _SINGLE_CUE_SYMBOLS)
    has_ctx = _has(low, _CONTEXT_WORDS, "(") if ordered else not _CONTEXT_WORDS.isdisjoint(_words(low))
    has_sup = bool(_SUPERSEDED_RE.search(text))
    out = []
    prev_end = 0
    n = len(mentions)
    for i, m in enumerate(mentions):
        ls = _lead_start(breaks, prev_end, m.start)
        lead = text[ls : m.start]
        nxt = mentions[i + 1].start if i + 1 < n else len(text)
        tail = text[m.end : min(nxt, m.end + 40)]
        negated = m.start in negated_at or (has_neg and bool(_NEG_RE.search(lead) or _NEG_AFTER_RE.match(tail)))
        bound = approx = False
        if has_bound:
            bound = bool(
                _BOUND_RE.search(lead) or _BOUND_AFTER_RE.match(tail) or (timeline and _TIME_BOUND_RE.search(lead))
            )
            approx = bool(_APPROX_RE.search(lead) or _APPROX_AFTER_RE.match(tail))
        context = (has_ctx and (bool(_CONTEXT_RE.search(lead)) or (ordered and _in_parens(text, m)))) or bool(
            ordered and _EACH_AFTER_RE.match(tail)
        )
        sup = (
            (has_sup and bool(_SUPERSEDED_RE.search(lead)))
            or bool(_SUPERSEDED_AFTER_RE.match(tail))
            or bool(_CHANGE_FROM_RE.search(lead) and _TO_AFTER_RE.match(tail))
            or bool(_CHANGED_TO_AFTER_RE.match(tail))
        )
        out.append(_Seen(m, negated, bound, approx, context, sup))
        prev_end = m.end
    return out


def after_retraction(text: str, seen: list[_Seen], *, no_retracts: bool = True) -> list[_Seen]:
    """The mentions after the last retraction that has a mention on both sides (a leading "No,"
    retracts unless ``no_retracts`` is False), without first thoughts that a later value replaces."""
    if len(seen) > 1:
        seen = _after_retraction(text, seen, _RETRACT_NO_RE if no_retracts else _RETRACT_RE)
    if len(seen) > 1:
        later = [i for i, s in enumerate(seen) if not s.superseded]
        if later:
            seen = [s for i, s in enumerate(seen) if not s.superseded or i > later[-1]]
    return seen


def _after_retraction(text: str, seen: list[_Seen], rx: re.Pattern) -> list[_Seen]:
    """The mentions after the last retraction that has a mention on both sides."""
    ms = [s.m for s in seen]
    first_end = ms[0].end
    last_start = ms[-1].start
    cut = None
    for c in rx.finditer(text, first_end, last_start):
        if not _inside(c.start(), ms):
            cut = c.end()
    return seen if cut is None else [s for s in seen if s.m.start >= cut]


def _distinct(seen: list[_Seen]) -> list:
    return list(dict.fromkeys(s.m.value for s in seen))


def commit(
    text: str,
    mentions: list[Mention],
    *,
    ordered: bool = True,
    timeline: bool = False,
    no_retracts: bool = True,
    negated_at: frozenset[int] = frozenset(),
    question: str | None = None,
) -> Commitment:
    """The commitment of ``text`` given its value ``mentions`` (see the module docstring).

    ``ordered``: the values have an order (counts, amounts, dates, times): bounds, approximations,
    ranges and parenthesised context apply. ``timeline``: dates and times ("after", "before",
    "by" are bounds). ``no_retracts``: a leading "No," retracts (off where "No" is an answer).
    ``negated_at``: starts of mentions ruled out by the caller (a comparative, see ``closed``).
    ``question``: with several values left and no hedge, the one whose clause names what the
    question asks about ("the grey car had CJV 44E", "6 nights, for 2 guests") is committed.
    """
    if not mentions:
        return _NONE
    first = mentions[0].value
    if (
        not negated_at
        and all(m.value == first for m in mentions)
        and not _has(text, _SINGLE_CUE_WORDS, _SINGLE_CUE_SYMBOLS)
    ):
        return Commitment(VALUE, first, (first,))  # one value, nothing that could deny or bound it
    mentions = sorted(mentions, key=lambda m: m.start)
    seen = roles(text, mentions, ordered=ordered, timeline=timeline, negated_at=negated_at)
    seen = after_retraction(text, seen, no_retracts=no_retracts)
    kept = [s for s in seen if not s.context]
    seen = kept or seen
    affirmed = [s for s in seen if not s.negated]
    if not affirmed:
        return Commitment(DENIAL, None, tuple(_distinct(seen)))
    if len(_distinct(affirmed)) > 1:
        affirmed = _concluded(text, affirmed, question)
    values = _distinct(affirmed)
    if len(values) > 1:
        if len(values) == 2 and ordered and _is_range(text, affirmed):
            return Commitment(RANGE, None, tuple(values))
        return Commitment(AMBIGUOUS, None, tuple(values))
    if all(s.bound for s in affirmed):
        return Commitment(BOUND, values[0], tuple(values))
    if all(s.approx for s in affirmed):
        return Commitment(APPROXIMATE, values[0], tuple(values))
    return Commitment(VALUE, values[0], tuple(values))


def _concluded(text: str, affirmed: list[_Seen], question: str | None = None) -> list[_Seen]:
    """The mentions a conclusion, an answer head or the question's own words commit to, when
    several values are left (see the module docstring, step 5)."""
    ms = [s.m for s in affirmed]
    cut = None
    for c in _CONCLUSION_RE.finditer(text, 0, ms[-1].end + 24):
        if _inside(c.start(), ms):
            continue
        before = [s for s in affirmed if s.m.end <= c.start() and not text[s.m.end : c.start()].strip(" \t")]
        if before and _POSTFIX_CONCLUSION_RE.match(c.group(0)):  # "$71.06 in total: ..."
            cut = ("at", before[-1])
        elif any(m.start >= c.end() for m in ms):
            cut = ("after", c.end())
    if cut is not None:
        if cut[0] == "at":
            return [s for s in affirmed if s.m.value == cut[1].m.value]
        after = [s for s in affirmed if s.m.start >= cut[1]]
        if len(_distinct(after)) == 1 or not _hedged(text, ms, cut[1]):
            return after
    last = ms[-1]
    if (
        _STANDS_ALONE_BEFORE_RE.search(text, 0, last.start)
        and _STANDS_ALONE_AFTER_RE.fullmatch(text, last.end)
        and not _labelled_list(text, ms)
    ):  # a final value on its own after the reasoning ("Two large and one small: 3.", "... Records. $215.37.")
        return [s for s in affirmed if s.m.value == last.value]
    head = _HEAD_RE.search(text, ms[0].end)
    if head is not None and not _labelled_list(text, ms):
        before = [s for s in affirmed if s.m.end <= head.start()]
        if len(_distinct(before)) == 1 and not _hedged(text, ms, head.end()):
            return before
    if _hedged(text, ms):
        return affirmed
    first = _FIRST_SENTENCE_RE.match(text)
    if first is not None and len(first.group(0).split()) <= 6 and not _labelled_list(text, ms):
        lead = [s for s in affirmed if s.m.end <= first.end()]
        if len(_distinct(lead)) == 1:  # "B. The festival stretch was 58 days, versus 32 for A."
            return lead
    if question:
        return _asked(text, affirmed, question)
    return affirmed


#: a final value that stands alone: after a sentence end, a line break or a colon, with nothing after it
_STANDS_ALONE_BEFORE_RE = re.compile(r"(?:[.!?:]\s+|\n)[\s*_#>(]*$")
_STANDS_ALONE_AFTER_RE = re.compile(r"[\s*_.!)]*")
_POSTFIX_CONCLUSION_RE = re.compile(r"(?:in\s+total|altogether|total)$", re.I)
_FIRST_SENTENCE_RE = re.compile(r"^[^\n]*?[.!?](?=\s|$)")
_Q_STOP = frozenset(
    [
        "the",
        "a",
        "an",
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
        "my",
        "i",
        "you",
        "your",
        "me",
        "what",
        "which",
        "how",
        "many",
        "much",
        "was",
        "were",
        "is",
        "did",
        "do",
        "does",
        "that",
        "this",
        "it",
        "its",
        "as",
        "by",
        "about",
    ]
)


def _hedged(text: str, ms: list[Mention], start: int = 0) -> bool:
    """A hedge word or "/" from ``start`` on, outside the values themselves ("2023/05/08" is no hedge)."""
    return any(not _inside(h.start(), ms) for h in _HEDGE_RE.finditer(text, start))


def _labelled_list(text: str, ms: list[Mention]) -> bool:
    """Several values each under its own label ("A: 32 days. B: 58 days.", "- White car: GY63 PCL"):
    a list, not an answer head followed by its explanation."""
    labels = sum(
        1 for m in ms if text[m.end : m.end + 2].startswith(":") or text[max(0, m.start - 2) : m.start].endswith(": ")
    )
    return labels >= 2


def _asked(text: str, affirmed: list[_Seen], question: str) -> list[_Seen]:
    """The values whose own words share the most with the question, when one value does. A value's
    own words are those before it in its clause (the last three of a clause longer than six words) and
    those after it up to a connective
    ("the grey car had CJV 44E", "6 nights, for 2 guests", "check-in on 2023/05/08 and check-out on
    2023/05/11", "the card receipt was $51.10 and the cash one $32.40"); a pair of the question's words
    in a row ("check-out", "grey car") counts twice more. Values joined only by "and" or a comma
    share the words before the first ("The label showed \u00a36.99 and \u00a35.89": a list, no choice), and a
    value standing alone after a comma takes the clause it closes ("the orange car was the California
    one, 0ZXT695")."""
    from memlens.eval.judge.values import text_tokens

    q_tokens = [t.norm for t in text_tokens(question)]
    asked = set(q_tokens) - _Q_STOP
    pairs = {p for p in itertools.pairwise(q_tokens) if not set(p) & _Q_STOP}  # "check out", "grey car"
    if not asked:
        return affirmed
    ms = [s.m for s in affirmed]
    breaks = [m.span() for m in _ASK_BREAK_RE.finditer(text)]  # a label's colon stays in its value's words
    best: dict = {}
    before = ""
    for i, s in enumerate(affirmed):
        prev_end = ms[i - 1].end if i else 0
        hi = ms[i + 1].start if i + 1 < len(ms) else len(text)
        stop = _TAIL_STOP_RE.search(text, s.m.end, hi)
        if not (i and _COORDINATED_RE.match(text, prev_end, s.m.start)):  # else: the previous value's words
            lo = _lead_start(breaks, prev_end, s.m.start)
            lead = text[lo : s.m.start].split()
            if lo > prev_end and text[lo - 1] == "," and not _WORDY_RE.search(text, lo, s.m.start):
                # an appositive after a comma: the words of the clause it closes
                clause = text[_lead_start(breaks, prev_end, lo - 1) : lo - 1].split()
                lead = clause if len(clause) <= 8 else clause[-3:]
            elif len(lead) > 6:
                lead = lead[-3:]  # a long clause: its last words
            before = " ".join(lead)
        own = before + " " + text[s.m.end : stop.start() if stop else hi]
        toks = [t.norm for t in text_tokens(own)]
        hits = len(set(toks) & asked) + 2 * len(set(itertools.pairwise(toks)) & pairs)
        best[s.m.value] = max(best.get(s.m.value, 0), hits)
    top = max(best.values())
    winners = [v for v, n in best.items() if n == top]
    if top > 0 and len(winners) == 1:
        return [s for s in affirmed if s.m.value == winners[0]]
    return affirmed


_COORDINATED_RE = re.compile(r"\s*(?:,\s*|,?\s*(?:and|&|plus)\s+)(?:the\s+)?$", re.I)
_WORDY_RE = re.compile(r"[^\W\d_]")
_TAIL_STOP_RE = re.compile(r"[,;.!?():\n]|\b(?:and|but|while|whereas|versus|vs|than|or|then)\b", re.I)
_ASK_BREAK_RE = re.compile(r"[;!?\n(]|[.,](?=\s|$)|\s[-\u2013\u2014]+\s")


def _is_range(text: str, affirmed: list[_Seen]) -> bool:
    for a, b in itertools.pairwise(affirmed):
        if a.m.value != b.m.value and _RANGE_GAP_RE.match(text[a.m.end : b.m.start]):
            gap = text[a.m.end : b.m.start].strip().lower()
            if gap in ("-", "\u2013", "\u2014", "to", "through", "thru") or _RANGE_LEAD_RE.search(text[: a.m.start]):
                return True
    return False


# --------------------------------------------------------------------------------------------
# Free-text references
# --------------------------------------------------------------------------------------------

#: words (or symbols) without which an occurrence of a free-text reference is simply committed
_PHRASE_CUE_WORDS = _NEG_WORDS | frozenset(
    [
        "or",
        "and",
        "either",
        "maybe",
        "possibly",
        "perhaps",
        "could",
        "might",
        "may",
        "sure",
        "candidate",
        "candidates",
        "option",
        "options",
        "one",
        "actually",
        "wait",
        "hold",
        "correction",
        "scratch",
        "mean",
        "sorry",
        "second",
        "correct",
        "mistake",
        "make",
        "take",
        "strike",
        "misread",
        "misspoke",
        "reflection",
        "first",
        "thought",
        "initially",
        "originally",
        "original",
        "going",
        "planned",
        "said",
        "suggested",
        "agreed",
        "before",
        "so",
        "therefore",
        "thus",
        "hence",
        "consequently",
        "overall",
        "altogether",
        "total",
        "totals",
        "totaling",
        "totalling",
        "summary",
        "conclusion",
        "short",
        "which",
        "that",
        "giving",
        "gives",
        "making",
        "makes",
        "equal",
        "equals",
        "comes",
        "adds",
        "sum",
        "sums",
        "bring",
        "brings",
        "answer",
        "d",
        "id",
        "would",
        "meaning",
        "unsure",
        "ie",
        "e",
        "at",
    ]
)
_PHRASE_CUE_SYMBOLS = ",/=\u2192"
_LIST_BEFORE_RE = re.compile(
    r"(?:,|\bor|\beither|/|\band|\bmaybe|\bpossibly|\bperhaps)(?:\s+(?:the|a|an))?\s*[\"'*]*$", re.I
)
_LIST_AFTER_RE = re.compile(r"^[\"'*]*\s*(?:,(?!\s*(?:not|but|and\s+not)\b)|or\b|/|and\b)", re.I)
_LIST_HEDGE_RE = re.compile(
    r"\b(?:or|either|maybe|perhaps|possibly|could|might|may|not\s+sure|unsure|candidates?|options?|"
    r"one\s+of)\b",
    re.I,
)
_CONTENT_RE = re.compile(r"[^\W\d_]{3,}|\d", re.I)
_PLEASANTRY_RE = re.compile(r"\b(?:hope\s+(?:this|that)\s+helps|let\s+me\s+know|happy\s+to\s+help)\b", re.I)


def commit_phrase(text: str, spans: list[tuple[int, int]]) -> str:
    """The status of a free-text reference in ``text``, given where it occurs: ``VALUE`` when the
    answer commits to it, else why not (``NONE``, ``DENIAL``, ``AMBIGUOUS`` for a hedge or a list
    of candidates, ``RETRACTED``, ``SUPERSEDED``, ``CONCLUDED_OTHER`` when a later conclusion
    names something else)."""
    if not spans:
        return NONE
    if not _has(text, _PHRASE_CUE_WORDS, _PHRASE_CUE_SYMBOLS) and "->" not in text:
        return VALUE  # nothing that could deny, hedge, retract or supersede it
    ms = [Mention(None, s, e) for s, e in spans]
    seen = roles(text, ms, ordered=False)
    affirmed = []
    hedged = False
    for s in seen:
        if s.negated:
            continue
        if _is_listed(text, s.m):
            hedged = True
            continue
        affirmed.append(s)
    if not affirmed:
        return AMBIGUOUS if hedged else DENIAL
    last = affirmed[-1]
    rest = text[last.m.end :]
    r = _RETRACT_NO_RE.search(rest)
    if r and _CONTENT_RE.search(rest[r.end() :]):
        return RETRACTED
    if last.superseded and re.search(r"\b(?:but|however|though|then|later|now)\b", rest, re.I):
        return SUPERSEDED
    c = None
    for c in _CONCLUSION_RE.finditer(rest):  # noqa: B007 - the last one
        pass
    if c is not None and _CONTENT_RE.search(rest[c.end() :]) and not _PLEASANTRY_RE.search(rest[c.end() :]):
        return CONCLUDED_OTHER
    return VALUE


def _is_listed(text: str, m: Mention) -> bool:
    """An occurrence that is one item of a hedge or of a list of candidates."""
    before = text[max(0, m.start - 20) : m.start]
    after = text[m.end : m.end + 12]
    if not (_LIST_BEFORE_RE.search(before) or _LIST_AFTER_RE.match(after)):
        return False
    s = _sentence_start(text, m.start)
    e = text.find(". ", m.end)
    return bool(_LIST_HEDGE_RE.search(text[s : len(text) if e < 0 else e]))
