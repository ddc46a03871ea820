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

#: Refusal by meaning: a maintained list of phrase families, each with its structure (an inability
#: verb, a missing-information noun, who never said it ...). A response holding one of them says the
#: information it needs is missing or insufficient. Families:
#:
#: 1. insufficiency: "insufficient information", "not enough details", "the data is insufficient";
#: 2. inability: "can't/cannot/unable to/no way to/not possible to/hard to" + determine, answer,
#:    tell, say, know, compare, count, work out, figure out, order, find, confirm, pin down, ...;
#: 3. not known: "I don't know/recall/remember", "I have no idea";
#: 4. not had or seen: "I don't have/see/find" + (a, any, that, the ...) + information, details,
#:    record, photo, picture, image, date, receipt, screenshot, message; "I have no photos of ...";
#: 5. never said: "you never/didn't/haven't" + mentioned, told, shared, showed, sent, said, brought
#:    up; "it never came up"; "I don't think you ever showed me";
#: 6. not mentioned: "not mentioned/specified/stated/provided (in ...)", "never mentioned",
#:    "nothing is/was mentioned";
#: 7. nothing there: "there's nothing in/about ...", "nothing you've shared", "nothing about the
#:    other", "there's nothing for me to total / to go on"; a negative subject with a verb of being
#:    shared: "no receipts from that trip were ever shared", "none of those visits appear in our chats";
#: 8. not in the record: "no record/mention/information of", "not in our conversation(s)",
#:    "doesn't appear in the history", "it's unclear from the conversation";
#: 9. unanswerable: "unanswerable", "not answerable", "there's no way to know".
_INFO = r"(?:information|info|context|details?|data|evidence|records?|mention|memory)"
_MEDIA = (
    r"(?:photos?|pictures?|images?|dates?|receipts?|screenshots?|messages?|timestamps?|records?|timings?|times|"
    r"durations?|figures?|numbers?|prices?|amounts?)"
)
_VERB = (
    r"(?:determine|answer|provide|find|identify|tell|say|know|confirm|recall|infer|specify|"
    r"locate|compare|count|order|rank|establish|verify|pin\s+(?:it\s+|that\s+)?down|work\s+(?:it\s+|that\s+|this\s+)?out|"
    r"figure\s+(?:it\s+|that\s+|this\s+)?out|calculate|work\s+that\s+out|give\s+(?:you\s+)?(?:an?\s+)?answer)"
)
_NEG_AUX = r"(?:does\s+not|doesn't|did\s+not|didn't|do\s+not|don't|dont)"
_ADV = r"(?:explicitly\s+|specifically\s+|directly\s+|clearly\s+|actually\s+|ever\s+|really\s+)?"
_SAID = (
    r"(?:mention(?:ed)?|share(?:d)?|tell|told|show(?:n|ed)?|sen[dt]|say|said|talk(?:ed)?\s+about|"
    r"br(?:ing|ought)\s+(?:it\s+|that\s+|this\s+)?up|specif(?:y|ied)|include(?:d)?|gave|give(?:n)?|provide(?:d)?)"
)
_INFO_WORDS = ("information", "info", "context", "detail", "data", "evidence", "record", "mention", "memory")
#: (guard substrings, patterns): a family's regex only runs on text holding one of its guards
#: (lower case), which keeps the scan fast; every pattern of a family contains one of them
_REFUSAL_FAMILIES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (  # 1 insufficiency
        ("insufficient", "enough", "sufficient", "adequate", "available", "lack"),
        (
            r"insufficient\s+" + _INFO,
            _INFO + r"\s+(?:is|are|was|were)\s+(?:insufficient|not\s+(?:enough|sufficient|available))",
            _INFO + r"\s+(?:isn't|aren't|wasn't|weren't|is\s+not|are\s+not)\s+(?:available|known|given|there)",
            r"(?:not|no|isn't|aren't|without|lacks?|lacking)\s+(?:enough|sufficient|adequate)\s+" + _INFO,
            r"(?:not|\w+n't\s+have)\s+enough\s+to\s+(?:determine|answer|tell|know|say|work|compare|count|go\s+(?:on|by))",
            r"lack(?:s|ing)?\s+(?:of\s+)?" + _INFO,
        ),
    ),
    (  # 2 inability
        ("can", "unable", "able to", "possible", "no way", "hard to", "difficult", "couldn"),
        (
            r"(?:can\s*not|can't|cant|could\s+not|couldn't|unable\s+to|not\s+able\s+to|impossible\s+to|"
            r"not\s+possible\s+to|no\s+way\s+(?:for\s+me\s+)?to|hard\s+to|difficult\s+to)\s+(?:be\s+)?" + _VERB,
            r"(?:can\s*not|can't|cannot)\s+be\s+(?:determined|answered|known|inferred|found|identified|compared|counted)",
            r"not\s+something\s+i\s+(?:can|could|am\s+able\s+to)\s+" + _VERB,
        ),
    ),
    (  # 3 not known
        ("know", "recall", "remember", "idea"),
        (r"(?:i\s+)?" + _NEG_AUX + r"\s+(?:know|recall|remember)", r"(?:i\s+have\s+|i've\s+)?no\s+idea"),
    ),
    (  # 4 not had or seen
        ("have", "see", "find", "spot", "had", "got", "contain", "include", "provide", "give"),
        (
            _NEG_AUX
            + r"\s+(?:provide|give|contain|include|have)\s+(?:enough|sufficient|any|that|this|the)?\s*"
            + _INFO,
            r"(?:i\s+)?(?:" + _NEG_AUX + r"|can't|cannot|couldn't)\s+(?:have|see|find|spot)\s+"
            r"(?:(?:a|an|any|that|this|the|those|these|such|enough)\s+)?(?:[\w']+\s+){0,2}?(?:"
            + _INFO
            + "|"
            + _MEDIA
            + r")\b",
            r"i\s+(?:have|had|got)\s+no\s+(?:[\w']+\s+)?(?:" + _INFO + "|" + _MEDIA + r")\b",
        ),
    ),
    (  # 5 never said
        ("never", "n't", "not", "come up", "came up"),
        (
            r"(?:you|it|that|this|they)(?:'ve|'d|\s+have|\s+had)?\s+"
            r"(?:never|didn't|did\s+not|haven't|have\s+not|hasn't|has\s+not)\s+" + _ADV + _SAID,
            r"(?:don't|do\s+not)\s+think\s+you\s+(?:ever\s+)?" + _SAID,
            r"(?:never|didn't|did\s+not|hasn't|has\s+not)\s+(?:come|came)\s+up",
            r"(?:conversations?|context|history|chat|sessions?|records?|memory|text|it)\s+"
            + _NEG_AUX
            + r"\s+(?:mention|specify|state|say|include|contain|indicate|reveal)",
        ),
    ),
    (  # 6 not mentioned
        ("mention", "never", "specified", "stated", "provided", "discussed", "recorded", "indicated")
        + ("documented", "given", "shared", "included", "nothing", "covered"),
        (
            r"(?:not|\w+n't)[\s_]+(?:been\s+)?" + _ADV + r"mentioned",
            r"never\s+" + _ADV + r"(?:mentioned|discussed|stated|specified|provided|shared|shown|said)",
            r"(?:not|\w+n't)\s+(?:been\s+)?" + _ADV + r"(?:specified|stated|provided|discussed|recorded|"
            r"indicated|documented|given|shared|included|covered)(?:\s+(?:in|anywhere|within)|(?=\s*(?:[.,;!?]|$)))",
            r"nothing\s+(?:is|was|has\s+been)\s+(?:mentioned|said|recorded|stated)",
        ),
    ),
    (  # 7 nothing there
        ("nothing",),
        (
            r"there(?:'s|\s+is|\s+was)\s+nothing\s+(?:in|about|on|regarding|from|that)\b",
            r"nothing\s+(?:that\s+)?you(?:'ve|\s+have)?\s+(?:shared|told|mentioned|said|sent|shown|showed)",
            r"nothing\s+(?:about|on|regarding)\s+(?:the|that|it|this|those|these|them|how|what|when|where|which|who)\b",
            r"nothing\s+(?:in|from)\s+(?:our|the|your|what|my|any)\b",
            r"nothing\s+(?:for\s+me\s+)?to\s+(?:go\s+(?:on|by)|total|count|add(?:\s+up)?|sum|compare|order|rank|"
            r"work\s+(?:with|from)|check)",
        ),
    ),
    (  # 7b nothing of it was shared: a negative subject ("no ...", "none of ...") with a verb of being shared
        ("shared", "shown", "sent", "mention", "given", "provided", "recorded", "appear", "show up", "came up")
        + ("come up",),
        (
            r"(?:no|none\s+of)\s+(?:[\w'&]+\s+){0,10}?(?:was|were|has\s+been|have\s+been|had\s+been)\s+(?:ever\s+)?"
            r"(?:shared|shown|sent|mentioned|given|provided|recorded)",
            r"(?:no|none\s+of)\s+(?:[\w'&]+\s+){0,10}?(?:appears?|appeared|shows?\s+up|showed\s+up|comes?\s+up|came\s+up)"
            r"\s+(?:anywhere\s+)?(?:in|within|during)\b",
        ),
    ),
    (  # 8 not in the record
        _INFO_WORDS,
        (
            r"(?:no|without)\s+(?:relevant\s+|specific\s+|such\s+|clear\s+)?" + _INFO,
            r"(?:isn't|aren't|wasn't|weren't|is\s+not|are\s+not|was\s+not|were\s+not)\s+(?:any|a)\s+"
            r"(?:relevant\s+|specific\s+|such\s+)?" + _INFO,
        ),
    ),
    (
        ("conversation", "history", "chat", "record", "message", "session", "unclear", "not clear"),
        (
            r"(?:isn't|is\s+not|wasn't|was\s+not|aren't|are\s+not|doesn't\s+appear|does\s+not\s+appear|not\s+found)\s+"
            r"(?:anywhere\s+)?(?:in|within)\s+(?:the|our|your|my|any\s+of\s+our)\s+"
            r"(?:conversations?|history|chats?|records?|messages?|sessions?)",
            r"(?:unclear|not\s+clear)\s+(?:from|based\s+on|in)\s+(?:the|our|your|what)",
        ),
    ),
    (  # 9 unanswerable
        ("answerable", "no way"),
        (
            r"(?:un|not\s+)answerable",
            r"(?:there(?:'s|\s+is)\s+)?no\s+way\s+(?:for\s+me\s+)?(?:to|of)\s+(?:know|knowing|tell|telling|determine|answer|say)",
        ),
    ),
)
_REFUSAL_RES = tuple(
    (frozenset(guards), re.compile(r"\b(?:" + "|".join(pats) + r")(?!\w)", re.I)) for guards, pats in _REFUSAL_FAMILIES
)
#: every guard found at every position (a lookahead, so overlapping guards such as "can" / "n't" in
#: "can't" are all seen)
_GUARD_RE = re.compile(
    "(?=(" + "|".join(sorted({re.escape(w) for ws, _ in _REFUSAL_FAMILIES for w in ws}, key=len, reverse=True)) + "))"
)
# Whole-answer abstentions: weak on their own inside a longer answer (a hedge, not a refusal).
_WHOLE_REFUSAL_RE = re.compile(
    r"^\W*(?:unknown|n/?a|(?:i'?m|i\s+am)\s+not\s+(?:sure|certain)|not\s+sure|no\s+idea|"
    r"idk|unsure|cannot\s+say|can't\s+say|unclear|not\s+clear|not\s+specified|not\s+stated|unspecified|"
    r"undetermined|indeterminate|no\s+answer)\W*$",
    re.I,
)


def last_refusal_span(text: str) -> tuple[int, int] | None:
    """Span of the last refusal phrase in ``text`` (the whole text for whole-answer forms)."""
    if not text:
        return None
    t = text.translate(_CURLY)
    if _WHOLE_REFUSAL_RE.match(t):
        return (0, len(t))
    found = set(_GUARD_RE.findall(t.lower()))
    if not found:
        return None
    best = None
    for guards, rx in _REFUSAL_RES:
        if not guards.isdisjoint(found):
            for m in rx.finditer(t):
                if best is None or m.start() > best[0] or (m.start() == best[0] and m.end() > best[1]):
                    best = m.span()
    return best


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
