"""Pure text utilities shared by the MemLens judges.

Everything here is deterministic and dependency-free (stdlib only):

* :func:`parse_model_output` - the official post-processing of a raw model output (facts §5.1).
* :func:`prepare_prediction` - the official judge pre-processing (facts §4.4): parse, degeneracy
  diagnostics, tail truncation and the auto-zero word count, with three deliberate fixes
  (documented on the function).
* :func:`extract_final_answer` - pull the committed final answer out of a long output.
* :func:`is_refusal` / :func:`last_refusal_span` - abstention detection with a phrase set that,
  unlike the official regex (facts §5.3, §8.10), does not fire on "sufficient information" or on
  the bare word "none".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "TRUNCATION_MARKER",
    "Prepared",
    "parse_model_output",
    "prepare_prediction",
    "extract_final_answer",
    "is_refusal",
    "last_refusal_span",
    "degeneracy",
    "hedging_count",
    "unique_5gram_ratio",
]

# --------------------------------------------------------------------------------------------
# parse_model_output (official §5.1)
# --------------------------------------------------------------------------------------------

_THINK_CLOSE = "</think>"
_SPECIAL_TOKEN_RE = re.compile(r"<\|[^>]*\|>")
_CONTENT_FILTER = "[CONTENT_FILTER_REJECTED]"


def parse_model_output(text: str | None) -> str:
    """Official output parsing: text after the first ``</think>``, special tokens removed.

    Steps (in order): keep only what follows the first ``</think>`` (an unclosed ``<think>`` is
    kept as is); delete every ``<|...|>`` special token (keeping the text between e.g. GLM's
    ``<|begin_of_box|>``/``<|end_of_box|>``); delete ``[CONTENT_FILTER_REJECTED]``; strip.
    """
    if not text:
        return ""
    idx = text.find(_THINK_CLOSE)
    if idx >= 0:
        text = text[idx + len(_THINK_CLOSE) :]
    if "<|" in text:
        text = _SPECIAL_TOKEN_RE.sub("", text)
    if _CONTENT_FILTER in text:
        text = text.replace(_CONTENT_FILTER, "")
    return text.strip()


# --------------------------------------------------------------------------------------------
# Degeneracy diagnostics (official §4.4 step 4, with word-bounded markers)
# --------------------------------------------------------------------------------------------

_HEDGE_MARKERS = (
    "wait",
    "let me re-read",
    "let me re read",
    "let me double check",
    "let me double-check",
    "let me reconsider",
    "let me look again",
    "let's reconsider",
    "let s reconsider",
    "re-evaluating",
    "re evaluating",
    "actually looking",
    "actually let me",
    "hold on",
    "let me look at",
    "let me check",
    "let's re-read",
    "let s re-read",
    "i need to reconsider",
    "wait let me",
)
# The same 20 markers as a trie, word-bounded, longest alternative first, so a scan is
# leftmost-longest and non-overlapping ("wait let me" is one hit, not "wait" + "wait let me").
# The start boundary sits after each branch's first letter ("w(?<!\w\w)ait" = "\bwait") so that
# `re` can use its first-character prefilter; this halves the scan time on long outputs.
_B = r"(?<!\w\w)"
_HEDGE_RE = re.compile(
    r"(?:w" + _B + r"ait(?: let me)?"
    r"|l" + _B + r"et(?: me (?:re-read|re read|double check|double-check|reconsider|look again|"
    r"look at|check)|'s (?:reconsider|re-read)| s (?:reconsider|re-read))"
    r"|r" + _B + r"e-evaluating|r" + _B + r"e evaluating"
    r"|a" + _B + r"ctually (?:looking|let me)"
    r"|h" + _B + r"old on"
    r"|i" + _B + r" need to reconsider)\b"
)
_DEGENERACY_MIN_CHARS = 500
_DEGENERATE_HEDGES = 6
_DEGENERATE_RATIO = 0.40
_CURLY = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def hedging_count(lowered: str) -> int:
    """Count hedge markers in already-lowercased text.

    Unlike the official substring count, markers are word-bounded ("awaiting" is not "wait") and
    the scan is non-overlapping leftmost-longest, so "wait let me" counts once (as does any other
    pair of overlapping markers such as "actually let me look at").
    """
    return len(_HEDGE_RE.findall(lowered))


def unique_5gram_ratio(lowered: str) -> float:
    """Distinct / total whitespace-token 5-grams, rounded to 3 decimals; 1.0 below 5 tokens."""
    toks = lowered.split()
    n = len(toks) - 4
    if n <= 0:
        return 1.0
    grams = set(zip(toks, toks[1:], toks[2:], toks[3:], toks[4:]))
    return round(len(grams) / n, 3)


# --------------------------------------------------------------------------------------------
# prepare_prediction (official §4.4)
# --------------------------------------------------------------------------------------------

TRUNCATION_MARKER = "[...truncated earlier reasoning...]"


@dataclass(frozen=True, slots=True)
class Prepared:
    """A prediction after the judge's pre-processing.

    ``text`` is the parsed text, tail-truncated when long (then prefixed with
    ``TRUNCATION_MARKER`` and a newline). ``parsed_words`` counts whitespace words of ``text``
    *excluding* the truncation marker (see :func:`prepare_prediction`). The three degeneracy
    diagnostics are None when they were not computed (``diagnostics=False``).
    """

    text: str
    original_len: int
    was_truncated: bool
    parsed_words: int
    auto_zero: bool
    is_degenerate: bool | None
    hedging_count: int | None
    unique_5gram_ratio: float | None


_NOT_DEGENERATE = (False, 0, 1.0)
_NO_DIAGNOSTICS = (None, None, None)


def degeneracy(parsed: str) -> tuple[bool, int, float]:
    """(is_degenerate, hedging_count, unique_5gram_ratio) of a parsed output (official §4.4.4)."""
    if len(parsed) < _DEGENERACY_MIN_CHARS:
        return _NOT_DEGENERATE
    lowered = parsed.lower().translate(_CURLY)
    hedges = hedging_count(lowered)
    ratio = unique_5gram_ratio(lowered)
    return hedges >= _DEGENERATE_HEDGES or ratio < _DEGENERATE_RATIO, hedges, ratio


def prepare_prediction(
    text: str | None,
    *,
    tail_char_limit: int = 6000,
    tail_fraction: float = 0.3,
    min_len_for_truncation: int = 3000,
    max_words: int = 500,
    diagnostics: bool = True,
) -> Prepared:
    """Official judge pre-processing (facts §4.4) with three deliberate fixes.

    1. ``original_len`` is the character length before parsing.
    2. The text is parsed with :func:`parse_model_output`.
    3. Degeneracy (diagnostic only; never changes a score): texts under 500 characters are not
       degenerate. Otherwise the lowercased text is scanned for hedge markers and its unique
       5-gram ratio computed; degenerate means ``hedging_count >= 6`` or ratio ``< 0.40``.
       *Fix*: markers are word-bounded and not double counted (see :func:`hedging_count`).
    4. Tail truncation: when the parsed text is longer than ``tail_char_limit`` and than
       ``min_len_for_truncation`` characters, only ``text[int((1 - tail_fraction) * len):]``
       is kept, prefixed by ``TRUNCATION_MARKER`` and a newline.
    5. Auto-zero: ``parsed_words > max_words``. *Fix*: ``parsed_words`` counts the words of the
       kept text **excluding** the three-word truncation marker; the official judge counts the
       marker, so a truncated text could be auto-zeroed by the judge's own annotation.

    ``diagnostics=False`` skips step 3 (the degeneracy fields are then None); scoring never needs
    it, and on long outputs it costs more than everything else together.
    """
    if not text:
        diag = _NOT_DEGENERATE if diagnostics else _NO_DIAGNOSTICS
        return Prepared("", 0, False, 0, False, *diag)
    original_len = len(text)
    parsed = parse_model_output(text)
    diag = degeneracy(parsed) if diagnostics else _NO_DIAGNOSTICS
    n = len(parsed)
    if n > tail_char_limit and n > min_len_for_truncation:
        tail = parsed[int((1.0 - tail_fraction) * n) :]
        words = len(tail.split())
        out = f"{TRUNCATION_MARKER}\n{tail}"
        truncated = True
    else:
        words = len(parsed.split())
        out = parsed
        truncated = False
    return Prepared(out, original_len, truncated, words, words > max_words, *diag)


# --------------------------------------------------------------------------------------------
# Refusal detection
# --------------------------------------------------------------------------------------------

_INFO = r"(?:information|info|context|details?|data|evidence|records?|mention|memory)"
_VERB = (
    r"(?:determine|answer|provide|find|identify|tell|say|know|confirm|recall|infer|specify|"
    r"locate)"
)
_NEG_AUX = r"(?:does\s+not|doesn't|did\s+not|didn't|do\s+not|don't|dont)"
_ADV = r"(?:explicitly\s+|specifically\s+|directly\s+|clearly\s+|actually\s+)?"
_REFUSAL_PATTERNS = (
    r"insufficient\s+" + _INFO,
    _INFO + r"\s+(?:is|are|was|were)\s+(?:insufficient|not\s+(?:enough|sufficient|available))",
    r"(?:not|no|isn't|aren't|without|lacks?|lacking)\s+(?:enough|sufficient|adequate)\s+" + _INFO,
    r"not\s+enough\s+to\s+(?:determine|answer|tell|know)",
    r"(?:can\s*not|can't|cant|could\s+not|couldn't|unable\s+to|not\s+able\s+to|impossible\s+to)"
    r"\s+(?:be\s+)?" + _VERB,
    r"(?:can\s*not|can't|cannot)\s+be\s+(?:determined|answered|known|inferred|found|identified)",
    r"(?:i\s+)?" + _NEG_AUX + r"\s+(?:know|recall|remember)",
    _NEG_AUX + r"\s+(?:provide|give|contain|include|have)\s+"
    r"(?:enough|sufficient|any|that|this|the)?\s*" + _INFO,
    r"(?:conversations?|context|history|chat|sessions?|records?|memory|text|it)\s+"
    + _NEG_AUX
    + r"\s+(?:mention|specify|state|say|include|contain|indicate|reveal)",
    r"(?:no|without)\s+(?:relevant\s+|specific\s+|such\s+|clear\s+)?" + _INFO,
    r"lack(?:s|ing)?\s+(?:of\s+)?" + _INFO,
    r"(?:not|\w+n't)[\s_]+(?:been\s+)?" + _ADV + r"mentioned",
    r"never\s+" + _ADV + r"(?:mentioned|discussed|stated|specified|provided)",
    r"(?:not|\w+n't)\s+(?:been\s+)?" + _ADV + r"(?:specified|stated|provided|discussed|recorded|"
    r"indicated|documented|given|shared|included)(?:\s+(?:in|anywhere|within)|(?=\s*(?:[.,;!?]|$)))",
    r"nothing\s+(?:is|was|has\s+been)\s+(?:mentioned|said|recorded|stated)",
    r"(?:un|not\s+)answerable",
    r"(?:there(?:'s|\s+is)\s+)?no\s+way\s+to\s+(?:know|tell|determine|answer)",
)
_REFUSAL_RE = re.compile(r"\b(?:" + "|".join(_REFUSAL_PATTERNS) + r")(?!\w)", re.I)
# Whole-answer abstentions: weak on their own inside a longer answer (a hedge, not a refusal).
_WHOLE_REFUSAL_RE = re.compile(
    r"^\W*(?:unknown|n/?a|(?:i'?m|i\s+am)\s+not\s+(?:sure|certain)|not\s+sure|no\s+idea|"
    r"idk|unsure|cannot\s+say|can't\s+say)\W*$",
    re.I,
)


def last_refusal_span(text: str) -> tuple[int, int] | None:
    """Span of the last refusal phrase in ``text`` (the whole text for whole-answer forms)."""
    if not text:
        return None
    t = text.translate(_CURLY)
    if _WHOLE_REFUSAL_RE.match(t):
        return (0, len(t))
    spans = [m.span() for m in _REFUSAL_RE.finditer(t)]
    return spans[-1] if spans else None


def is_refusal(text: str) -> bool:
    """True when ``text`` declines to answer / claims missing information.

    Matches phrases such as "Insufficient information", "not mentioned", "NOT_MENTIONED",
    "cannot be determined", "can't determine", "I don't know", "not enough information",
    "unable to determine/answer", "no information", "unanswerable", "not provided in the
    conversation", and whole-answer "unknown" / "N/A" / "I'm not sure". Deliberately *not*
    matched (official regex bugs): "sufficient information" without a negation (an affirmative
    statement) and the bare word "none". An empty string is not a refusal here (callers decide).
    """
    return last_refusal_span(text) is not None


# --------------------------------------------------------------------------------------------
# Final-answer extraction
# --------------------------------------------------------------------------------------------

_ANSWER_TAG_RE = re.compile(r"\[\s*answer\s*\]", re.I)
_REASONING_TAG_RE = re.compile(r"\[\s*reasoning\s*\]", re.I)
_MARKER_RE = re.compile(
    r"(?:\b(?:final|correct|short|my)\s+answer\b|(?<![\w'])answer\b)\s*(?:\*\*|__)?\s*[:\uff1a]"
    r"|\b(?:the|my)\s+(?:final\s+|correct\s+|short\s+)?answer\s+"
    r"(?:is|would\s+be|will\s+be|=)\b\s*:?",
    re.I,
)
_MARKER_QUESTION_RE = re.compile(r"\b(?:whether|if|what|know|sure)\s*$", re.I)
_MARKER_TAIL_WORDS = 60
_CLEAN_CHARS = " \t\r\n*_`\"'#>-:\u2014"
_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=\S)")
_DECOR_RE = re.compile(r"^[\W_]*$")
_PLEASANTRY_RE = re.compile(
    r"^\W*(?:let\s+me\s+know|hope\s+(?:this|that)\s+helps|i\s+hope\s+this|feel\s+free|"
    r"is\s+there\s+anything|if\s+you\s+(?:have|need)|happy\s+to\s+help)",
    re.I,
)
SHORT_OUTPUT_WORDS = 40


def _clean(seg: str) -> str:
    """Trim markdown emphasis, quotes, leading bullets and a single trailing period."""
    seg = seg.strip(_CLEAN_CHARS)
    if seg.endswith(".") and not seg.endswith(".."):
        seg = seg[:-1].rstrip(_CLEAN_CHARS)
    return seg


def _tagged_answer(text: str) -> str | None:
    """Last non-empty ``[ANSWER]`` segment (up to a following ``[REASONING]``/``[ANSWER]`` tag).

    Returns None when there is no tag, "" when every tagged segment is empty.
    """
    tags = list(_ANSWER_TAG_RE.finditer(text))
    if not tags:
        return None
    for i in range(len(tags) - 1, -1, -1):
        end = tags[i + 1].start() if i + 1 < len(tags) else len(text)
        seg = text[tags[i].end() : end]
        r = _REASONING_TAG_RE.search(seg)
        if r:
            seg = seg[: r.start()]
        if seg.strip(_CLEAN_CHARS):
            return seg.strip()
    return ""


def _after_marker(text: str) -> str:
    """Text after the last committed answer marker, up to the end of its line.

    "Final answer:" always commits. A weak marker ("Answer:", "The answer is") only commits when
    it is not a question ("whether the answer is ...") and at most ``_MARKER_TAIL_WORDS`` words
    follow its line, so a mid-reasoning "the answer is probably 3" is not taken as final.
    """
    matches = list(_MARKER_RE.finditer(text))
    for m in reversed(matches):
        if _MARKER_QUESTION_RE.search(text, max(0, m.start() - 12), m.start()):
            continue
        rest = text[m.end() :]
        nl = rest.find("\n")
        if "inal" not in m.group(0) and nl >= 0 and len(rest[nl:].split()) > _MARKER_TAIL_WORDS:
            continue
        for line in rest.split("\n"):
            seg = _clean(line)
            if seg:
                return seg
        return ""
    return ""


def _is_short(text: str) -> bool:
    return len(text) <= 4 * SHORT_OUTPUT_WORDS or len(text.split()) <= SHORT_OUTPUT_WORDS


def _last_sentence(line: str) -> str:
    sentences = [s for s in _SENT_SPLIT_RE.split(line) if not _DECOR_RE.match(s)]
    while len(sentences) > 1 and _PLEASANTRY_RE.match(sentences[-1]):
        sentences.pop()
    return sentences[-1] if sentences else line


def _extract_untagged(text: str) -> str:
    if "nswer" in text or "NSWER" in text:
        seg = _after_marker(text)
        if seg:
            return seg
    if _is_short(text):
        return text
    lines = [ln for ln in text.split("\n") if not _DECOR_RE.match(ln)]
    while len(lines) > 1 and _PLEASANTRY_RE.match(lines[-1]):
        lines.pop()
    last = lines[-1] if lines else text
    if len(last.split()) > SHORT_OUTPUT_WORDS or len(lines) == 1:
        last = _last_sentence(last)
    return _clean(last) or text


def extract_final_answer(text: str) -> str:
    """The committed final answer of a (possibly long) model output.

    In order of preference:

    1. the text after the last non-empty ``[ANSWER]`` tag (case-insensitive), stopping at a
       following ``[REASONING]`` tag; markers inside it ("The answer is X") are then applied;
    2. the rest of the line after the last "Final answer:", "Answer:" or "The answer is" marker;
    3. short outputs (at most ~40 words) are returned unchanged;
    4. otherwise the last non-decorative, non-pleasantry line; when that line is itself long
       (or the output is a single long paragraph) its last sentence.

    A leading :data:`TRUNCATION_MARKER` is removed first. Markdown emphasis, quotes and one
    trailing period are trimmed from extracted segments (not from unchanged short outputs).
    """
    t = text.strip()
    if t.startswith(TRUNCATION_MARKER):
        t = t[len(TRUNCATION_MARKER) :].lstrip()
    if not t:
        return ""
    if "[" in t:
        tagged = _tagged_answer(t)
        if tagged:
            return _extract_untagged(_clean(tagged))
        if tagged is not None:  # tags present but all empty: look at the rest of the text
            t = _REASONING_TAG_RE.sub(" ", _ANSWER_TAG_RE.sub(" ", t)).strip()
            if not t:
                return ""
    return _extract_untagged(t)
