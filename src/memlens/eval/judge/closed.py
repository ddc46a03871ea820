"""Closed answers: which A/B option, which polarity, which order of events an answer names.

Each reader turns an answer into value mentions (:class:`memlens.eval.judge.values.Mention`) and
lets :func:`memlens.eval.judge.commit.commit` decide what it commits to:

* **A/B** (:func:`read_choice`): the letter in any form ("A", "(A)", "option a", "A." but not the
  article in "A trip"), "the first/former", "the second/latter" (when the question names options
  A and B), and the option's own words as the question states them ("Your trip to Porto lasted
  longer."); a comparative reads as the question asks ("B is shorter than A" and "B was quicker"
  answer A for "which lasted longer"); denying the only option named chooses the other ("It's not A." is B).
* **yes/no** (:func:`read_yes_no`): "yes"/"no" and the words of the comparison ("the same place",
  "different shops", "not the same", "identical"); "Yes and no." commits to nothing.
* **order** (:func:`read_order`): parenthesised indices "(2)(3)(1)", plain index sequences with
  any separator ("2, 3, 1", "3-4-1-2", "2 -> 3", "Earliest first: 2, then 1, then 3"), numbered
  lists (of indices or of the events), the question's events named in order (in prose with order
  words, or as a bare list "Bistro, Opticians, Charity run"), or one digit string holding each of
  at most nine indices once ("213"); "latest first" reverses the sequence.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

from memlens.eval.judge.commit import AMBIGUOUS, DENIAL, VALUE, Commitment, commit
from memlens.eval.judge.values import Mention, blank_dates, text_tokens

# --------------------------------------------------------------------------------------------
# the question's options and events
# --------------------------------------------------------------------------------------------

_OPTION_RE = re.compile(r"\((A|B)\)\s*(.+?)(?=\s*,?\s*(?:or\s+)?\(B\)|\?|$)", re.S)
_EVENT_RE = re.compile(r"\((\d+)\)\s*(.+?)(?=\s*[;,]?\s*(?:and\s+)?\(\d+\)|\.\s+Answer|\.?\s*$)", re.S)
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "to",
        "from",
        "in",
        "on",
        "at",
        "for",
        "with",
        "and",
        "or",
        "my",
        "your",
        "our",
        "i",
        "you",
        "me",
        "it",
        "that",
        "this",
        "time",
        "visiting",
        "visit",
        "went",
        "going",
        "when",
        "was",
        "were",
    ]
)


@lru_cache(maxsize=4096)
def ab_options(question: str | None) -> dict[str, str]:
    """The two option texts of an A/B question ("(A) the trip to Rome, or (B) ..."), else {}."""
    if not question:
        return {}
    found = {m.group(1): m.group(2).strip() for m in _OPTION_RE.finditer(question)}
    return found if set(found) == {"A", "B"} else {}


@lru_cache(maxsize=4096)
def order_events(question: str | None) -> dict[str, str]:
    """The numbered events of an order question ("(1) the concert; (2) ..."), else {}."""
    if not question:
        return {}
    return {m.group(1): m.group(2).strip() for m in _EVENT_RE.finditer(question)}


@lru_cache(maxsize=4096)
def _keys(options: tuple[tuple[str, str], ...]) -> dict[str, frozenset[str]]:
    """The words that name each option and no other one (stop words aside)."""
    toks = {k: {t.norm for t in text_tokens(v)} - _STOP for k, v in options}
    out = {}
    for k, words in toks.items():
        others = set().union(*(w for o, w in toks.items() if o != k))
        out[k] = frozenset(w for w in words - others if len(w) > 1 and not w.isdigit())
    return out


def _named(text: str, options: dict[str, str]) -> list[Mention]:
    """Mentions of options by their own words: each run of one option's key words is one mention."""
    keys = _keys(tuple(sorted(options.items())))
    out: list[Mention] = []
    for t in text_tokens(text):
        owner = next((k for k, ws in keys.items() if t.norm in ws), None)
        if owner is None:
            continue
        if out and out[-1].value == owner and len(text[out[-1].end : t.start].split()) <= 3:
            out[-1] = Mention(owner, out[-1].start, t.end)
        else:
            out.append(Mention(owner, t.start, t.end))
    return out


# --------------------------------------------------------------------------------------------
# A/B
# --------------------------------------------------------------------------------------------

_LETTER_VERBS = (
    r"(?:is|was|took|takes|lasted|lasts|has|had|because|since|as|and|or|with|wins|it|would|"
    r"should|seems|appears|clearly|definitely|longer|shorter|not|but|then|than)"
)
_NOT_ARTICLE = r"(?!\s+(?!" + _LETTER_VERBS + r"\b)[a-z])"  # "A trip ..." is an article
_CHOICE_RE = re.compile(
    r"(?i:\b(?:option|choice|answer)\s*[:\-]?\s*)\(?(?P<o>[ABab])\)?(?![\w])"
    r"|\((?P<p>[ABab])\)"
    r"|(?<![\w'\"\u201c])(?P<l>[AB])(?![\w'])"
    + _NOT_ARTICLE
    + r"|(?i:\b(?P<first>the\s+first(?:\s+one|\s+option)?|the\s+former|first\s+option)\b)"
    r"|(?i:\b(?P<second>the\s+second(?:\s+one|\s+option)?|the\s+latter|second\s+option)\b)"
)
_QUESTION_OPTIONS_RE = re.compile(r"(?:\(A\)|\bA[).:]|option\s+A\b).*?(?:\(B\)|\bB[).:]|option\s+B\b)", re.I | re.S)
_CMP_RE = re.compile(
    r"[^.!?]{0,30}?\b(?P<c>longer|longest|more|most|greater|bigger|further|slower|slowest|shorter|shortest|less|least|"
    r"fewer|smaller|quicker|quickest|faster|fastest|briefer)\b(?P<than>[^.!?]*?\bthan\b)?",
    re.I,
)
_MORE = frozenset(("longer", "longest", "more", "most", "greater", "bigger", "further", "slower", "slowest"))


def question_direction(question: str | None) -> str:
    """ "less" when the question asks which was shorter, else "more" (read before the options, whose
    own words may say "long" or "short")."""
    if not question:
        return "more"
    stem = question.split("(A)", 1)[0]
    if re.search(r"\b(?:short|quick|fast|brief)", stem, re.I) and not re.search(r"\b(?:long|slow)", stem, re.I):
        return "less"
    return "more"


def letters(text: str, ordinals: bool) -> list[Mention]:
    out = []
    for m in _CHOICE_RE.finditer(text):
        kind = m.lastgroup
        if kind in ("o", "p", "l"):
            out.append(Mention(m.group(kind).upper(), m.start(), m.end()))
        elif ordinals:
            out.append(Mention("A" if kind == "first" else "B", m.start(), m.end()))
    return out


def read_choice(text: str, question: str | None = None) -> Commitment:
    """The A/B option ``text`` commits to (see the module docstring)."""
    bare = text.strip(" \t\n.()*_\"'`").upper()
    if bare in ("A", "B"):
        return Commitment(VALUE, bare, (bare,))
    ordinals = question is None or bool(_QUESTION_OPTIONS_RE.search(question))
    mentions = letters(text, ordinals)
    opts = ab_options(question)
    if opts:
        mentions += [n for n in _named(text, opts) if not any(x.start <= n.start < x.end for x in mentions)]
    mentions.sort(key=lambda m: m.start)
    direction = question_direction(question)
    forced = _comparatives(text, mentions, direction)
    got = commit(text, mentions, ordered=False, negated_at=forced)
    if got.status == DENIAL and len(got.values) == 1:
        other = "B" if got.values[0] == "A" else "A"
        return Commitment(VALUE, other, (other,))
    if got.status == AMBIGUOUS:  # measurements of both, then one stated to be longer: that one
        claimed = _claimed(text, mentions, direction)
        if len(claimed) == 1:
            return Commitment(VALUE, claimed[0], tuple(claimed))
    return got


def _claimed(text: str, mentions: list[Mention], direction: str) -> list[str]:
    """The options a comparative agreeing with the question is said of ("B lasted longer")."""
    out = []
    for i, m in enumerate(mentions):
        nxt = mentions[i + 1] if i + 1 < len(mentions) else None
        cm = _CMP_RE.match(text, m.end, nxt.start if nxt else len(text))
        if cm is not None and (cm.group("c").lower() in _MORE) == (direction == "more"):
            out.append(m.value)
    return list(dict.fromkeys(out))


def _comparatives(text: str, mentions: list[Mention], direction: str) -> frozenset[int]:
    """Starts of mentions a comparative rules out: "B is shorter (than A)" for a "longer" question
    rules out B (and keeps A); "A is longer than B" rules out B."""
    out = set()
    for i, m in enumerate(mentions):
        nxt = mentions[i + 1] if i + 1 < len(mentions) else None
        cm = _CMP_RE.match(text, m.end, nxt.start if nxt else len(text))
        if cm is None:
            continue
        agrees = (cm.group("c").lower() in _MORE) == (direction == "more")
        if not agrees:
            out.add(m.start)
        if cm.group("than") and nxt is not None and agrees and nxt.value != m.value:
            out.add(nxt.start)
    return frozenset(out)


# --------------------------------------------------------------------------------------------
# yes / no
# --------------------------------------------------------------------------------------------

_POLARITY_RE = re.compile(
    r"(?P<no1>\b(?:not|never)\s+(?:\w+\s+){0,2}?(?:the\s+)?(?:same|identical)\b|\b\w+n't\s+(?:\w+\s+){0,2}?"
    r"(?:the\s+)?(?:same|identical)\b)"
    r"|(?P<yes1>\b(?:not|n't)\s+(?:\w+\s+)?different\b|\bno\s+difference\b|\bone\s+and\s+the\s+same\b)"
    r"|(?P<no2>\b(?:different|distinct|two\s+separate|separate)\b)"
    r"|(?P<yes2>\b(?:the\s+same|same|identical)\b)"
    r"|(?P<no4>\b(?:(?:i\s+)?(?:don't|do\s+not)\s+think\s+so|i\s+doubt\s+it|(?:of\s+course|certainly|definitely)\s+not|"
    r"not\s+really)\b)"
    r"|(?P<yes4>\b(?:i\s+(?:think|believe)\s+so|that's\s+right|of\s+course|definitely|absolutely)\b)"
    r"|(?P<yes3>\b(?:yes|yep|yeah|yup|correct|true|affirmative|indeed)\b)"
    r"|(?P<no3>\b(?:no|nope|false|negative)\b(?!\s+(?:one|longer|idea|information|info|record|records|"
    r"mention|data|details?|way|doubt|matter|clue)\b))",
    re.I,
)


def polarities(text: str) -> list[Mention]:
    """Every yes/no polarity the text states ("yes", "the same shop", "not the same", "different")."""
    return [
        Mention("Yes" if m.lastgroup.startswith("yes") else "No", m.start(), m.end())
        for m in _POLARITY_RE.finditer(text)
    ]


def read_yes_no(text: str) -> Commitment:
    return commit(text, polarities(text), ordered=False, no_retracts=False)


# --------------------------------------------------------------------------------------------
# order ranking
# --------------------------------------------------------------------------------------------

_SEP = r"(?:,|;|->|\u2192|=>|>|/|-|\u2013|\bthen\b|\band\b|\bfollowed\s+by\b)"
_ORDER_RUN_RE = re.compile(
    r"(?P<paren>(?:\(\s*\d+\s*\)\s*(?:" + _SEP + r"\s*)*){2,})"
    r"|(?P<plain>(?<![\w.(])\[?\d+(?:(?:\s*" + _SEP + r"\s*(?:and\s+|then\s+)?|\s+)\(?\d+\)?)+\]?(?![\w.]\d|\d))",
    re.I,
)
_LABEL_RUN_RE = re.compile(r"\b(?:sessions?|images?|photos?|pictures?|days?|steps?|events?|items?|options?)\s*$", re.I)
_INT_RE = re.compile(r"\d+")
_LIST_ITEM_RE = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s+(?P<item>.+?)\s*$", re.M)
_REVERSED_RE = re.compile(
    r"\b(?:latest|most\s+recent|newest|last)\s+(?:one\s+|event\s+)?first\b|\breverse\s+(?:chronological\s+)?order\b|"
    r"\bfrom\s+(?:the\s+)?(?:latest|most\s+recent|newest)\b",
    re.I,
)
_ORDER_WORDS_RE = re.compile(r"\b(?:first|then|after|before|followed|next|finally|last|earliest|order)\b", re.I)


def _seq(nums: list[str]) -> str:
    return "".join(f"({int(n)})" for n in nums)


def index_runs(text: str) -> list[Mention]:
    t = blank_dates(text)
    runs = {"paren": [], "plain": []}
    for m in _ORDER_RUN_RE.finditer(t):
        if m.lastgroup == "plain" and _LABEL_RUN_RE.search(t, max(0, m.start() - 12), m.start()):
            continue
        run = m.group(0)
        end = (
            m.start()
            + max(run.rfind(")"), run.rfind("]"), max((d.end() for d in _INT_RE.finditer(run)), default=0) - 1)
            + 1
        )
        # the run ends at its last index: a trailing separator ("(3)(1)(2) - no, ...") is not part of it
        runs[m.lastgroup].append(Mention(_seq(_INT_RE.findall(run)), m.start(), end))
    return runs["paren"] or runs["plain"]


def _listed(text: str, events: dict[str, str]) -> list[Mention]:
    """A numbered or bulleted list, each item an index "(3)" or one of the events."""
    if "\n" not in text:
        return []
    items = list(_LIST_ITEM_RE.finditer(text))
    if len(items) < 2:
        return []
    seq = []
    for it in items:
        body = it.group("item")
        idx = re.match(r"\(?(\d+)\)", body)
        if idx:
            seq.append(idx.group(1))
            continue
        named = {n.value for n in _named(body, events)} if events else set()
        if len(named) != 1:
            return []
        seq.append(next(iter(named)))
    return [Mention(_seq(seq), items[0].start(), items[-1].end())]


def _named_in_order(text: str, events: dict[str, str]) -> list[Mention]:
    """The events named in prose, in the order of their first naming (every event named)."""
    if not events:
        return []
    named = _named(text, events)
    if not _ORDER_WORDS_RE.search(text) and not _only_separators(text, named):
        return []
    first: dict[str, int] = {}
    for n in named:
        first.setdefault(n.value, n.start)
    if set(first) != set(events):
        return []
    seq = sorted(first, key=first.get)
    return [Mention(_seq(seq), named[0].start, named[-1].end)]


_DIGIT_RUN_RE = re.compile(r"(?<![\w.,/:])[1-9]{2,9}(?![\w.,/:]\d|\w)")


def _digit_string(text: str, events: dict[str, str]) -> list[Mention]:
    """The indices written as one digit string ("213") when the question has at most nine events:
    each of them exactly once."""
    if not events or len(events) > 9:
        return []
    want = set(events)
    return [
        Mention(_seq(list(m.group(0))), m.start(), m.end())
        for m in _DIGIT_RUN_RE.finditer(blank_dates(text))
        if len(m.group(0)) == len(want) and set(m.group(0)) == want
    ]


_SEPARATOR_WORDS_RE = re.compile(
    r"(?:[\W_]|\b(?:the|a|an|and|then|to|at|visiting|visit|shopping|finding|flying)\b)*", re.I
)


def _only_separators(text: str, named: list[Mention]) -> bool:
    """The events listed with nothing but separators between them ("Bistro, Opticians, Charity run")."""
    if len(named) < 2:
        return False
    gaps = (
        [text[: named[0].start]]
        + [text[a.end : b.start] for a, b in itertools.pairwise(named)]
        + [text[named[-1].end :]]
    )
    return all(_SEPARATOR_WORDS_RE.fullmatch(g) for g in gaps)


def read_order(text: str, question: str | None = None) -> Commitment:
    events = order_events(question)
    mentions = _listed(text, events) or index_runs(text) or _named_in_order(text, events) or _digit_string(text, events)
    if "first" in text.lower() or "reverse" in text.lower() or "from" in text.lower():
        reverse = bool(_REVERSED_RE.search(text))
    else:
        reverse = False
    if reverse:
        mentions = [Mention(_seq(_INT_RE.findall(m.value)[::-1]), m.start, m.end) for m in mentions]
    return commit(text, mentions, ordered=False)
