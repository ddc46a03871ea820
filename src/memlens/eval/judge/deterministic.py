"""Deterministic (LLM-free) judge for MemLens predictions.

Public API:

* :func:`task_key` - the official routing of (type, subtype, reference) to the ten judge task keys
  (facts §4.3).
* :func:`score` - grade one prediction, returning a frozen :class:`Grade`.

Pipeline of :func:`score` (every task key):

1. ``prepare_prediction`` (official pre-processing: parse, tail truncation, word count). An
   auto-zero prediction (> 500 words after truncation) scores 0 ("auto-zero: N words").
2. An empty prediction scores 0 ("empty"). This includes ``answer_refusal``: an empty output is a
   failure to respond, not an explicit decline, so it is *not* an abstention (the official SubEM
   report counts it as a refusal; the official LLM judge asks for an explicit decline).
3. ``extract_final_answer`` picks the committed final answer.
4. Refusals: if the final answer contains a refusal phrase, only text *after the last* refusal
   phrase can carry a committed guess ("..., but I think it is 5" is scored as 5). A guess holds
   a guess phrase ("I think", "probably", "my best guess", ...) or, for typed keys, a parseable
   value introduced by punctuation or a connective ("Insufficient information. 5"). A refusal
   without a guess is an abstention: correct only for ``AR_AnswerRefusal`` (whatever its stored
   reference), otherwise "refusal" with ``parsed=None``.
5. The task key's matcher (one entry per key in ``_TASKS``) parses and compares. Typed matchers
   read the *committed clause* of the final answer: the whole answer when it holds one distinct
   value, else the last clause (split at sentences, ";", "=", "->", "so", "therefore", "in
   total", "actually", ...) that holds a value. Two different counts, dates or A/B choices
   there are "ambiguous" (wrong); arithmetic takes the clause's last amount unless the last two
   form a range or alternative ("$10 to $15", "between ...", "15 or 20"); order ranking takes
   the last index sequence.

The question-type logic lives in one matcher per task key; shared machinery (clause splitting,
number/amount/date finders, text normalisation) knows nothing about task keys.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from memlens.core.constants import NUMBER_WORDS, REFUSAL_REFERENCE
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
from memlens.eval.judge.parsing import extract_final_answer, last_refusal_span, prepare_prediction

__all__ = ["Grade", "score", "task_key", "TASK_KEYS", "ABSTENTION_ANSWER", "RULES_VERSION"]

#: Version of the rules below. Bump it whenever a verdict can change: it is part of the judge's
#: identity (``judge_key`` in the judge manifest), and archived verdicts of an older version are
#: dropped, never mixed with new ones (:mod:`memlens.eval.judge.stage`).
#: 2: amounts in every printed notation ("7,98 €", "1.234,50 €", "45,00 kr.", "CHF 1'234.00",
#: "7.98$"), money references of IE/KU matched as amounts, the concluding choice of a reasoned
#: A/B answer ("..., so B"; "B, not A"), partitive counts ("one of the three" -> 1).
RULES_VERSION = "2"

# --------------------------------------------------------------------------------------------
# Task keys and routing (official §4.3)
# --------------------------------------------------------------------------------------------

#: What an abstention is compared against officially (the AR reference is ignored).
ABSTENTION_ANSWER = REFUSAL_REFERENCE


# --------------------------------------------------------------------------------------------
# Grade
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Grade:
    """The outcome of judging one prediction.

    ``parsed`` is the canonical answer extracted from the prediction (``"5"``, ``"15.50 USD"``,
    ``"2024/05/31"``, ``"(2)(3)(1)"``, ``"A"``, ``"Yes"``, the normalised final answer for text
    keys, ``ABSTENTION_ANSWER`` for an AR abstention) or None when nothing was extracted.
    ``reason`` is a short machine-friendly explanation ("int-match", "int-mismatch: 3 != 5",
    "auto-zero: 612 words", "refusal", "no-answer", ...). ``degenerate`` is the official
    degeneracy diagnostic, None unless ``score(..., diagnostics=True)``.
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
# Shared machinery: clauses and parentheticals
# --------------------------------------------------------------------------------------------

# Split points of a final answer into clauses; the last clause holding a value is the committed
# one ("2 + 3 = 5", "I first thought 3, actually 4", "..., so 5 in total").
_CLAUSE_SPLIT_RE = re.compile(
    r"(?<=[.!?])\s+|\n+|;\s*|=>|->|\u2192|="
    r"|(?=\b(?:so|therefore|thus|hence|consequently|overall|altogether|in\s+total|in\s+summary|"
    r"in\s+conclusion|total(?:s|ing)?|which\s+(?:is|gives|makes|comes\s+to|equals)|"
    r"that\s+(?:makes|gives|comes\s+to)|i\.e\.|giving|making|equals?|comes\s+to|"
    r"adds\s+up\s+to|sums?\s+(?:up\s+)?to|actually|no\s+wait)\b)",
    re.I,
)
_PARENS_RE = re.compile(r"\s*\([^()]*\)")

Finder = Callable[[str], list]


def _drop_parens(text: str, finder: Finder) -> str:
    """Remove parenthetical asides when a value remains outside them ("5 (2 + 3)")."""
    if "(" not in text:
        return text
    stripped = _PARENS_RE.sub("", text)
    return stripped if finder(stripped) else text


def _committed(text: str, finder: Finder) -> tuple[str, list]:
    """The committed clause of ``text`` and the values ``finder`` sees in it.

    When the whole text holds at most one distinct value it is used as is; otherwise the last
    clause (see ``_CLAUSE_SPLIT_RE``) holding any value is committed.
    """
    vals = finder(text)
    if len(set(vals)) <= 1:
        return text, vals
    for clause in reversed(_CLAUSE_SPLIT_RE.split(text)):
        if clause and not clause.isspace():
            v = finder(clause)
            if v:
                return clause, v
    return text, vals


# --------------------------------------------------------------------------------------------
# Numbers (counting)
# --------------------------------------------------------------------------------------------

_UNITS = {w: i for i, w in enumerate(NUMBER_WORDS[:20])}
_TENS = {
    w: 10 * i
    for i, w in enumerate(["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], start=2)
}
_TENS["fourty"] = 40
_NUM_WORDS = sorted([*_UNITS, *_TENS, "hundred", "thousand", "dozen"], key=len, reverse=True)
_W = "(?:" + "|".join(_NUM_WORDS) + ")"
_LABEL = (
    r"(?:\b(?:sessions?|images?|photos?|pictures?|pics?|turns?|steps?|messages?|number|no\.?|nr\.?)"
    r"|#)\s*"
)
_COUNT_TOKEN_RE = re.compile(
    r"(?P<label>" + _LABEL + r"(?:\d+|" + _W + r")\b(?:\s*(?:,|and|&|or)\s*(?:and\s+)?\d+\b)*)"
    r"|(?P<num>(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?!\w|[/:]\d)"
    r"|(?P<words>(?<![\w-])(?:an?\s+(?=(?:hundred|thousand|dozen)\b))?"
    + _W
    + r"(?:(?:\s+|\s*-\s*)(?:and\s+)?"
    + _W
    + r")*(?![\w-]))"
    r"|(?P<times>\b(?:twice|thrice)\b)",
    re.I,
)
_PRONOUN_ONE_RE = re.compile(
    r"\b(?:the|this|that|which|each|every|any|no|another|other|some|a|last|first|only|right|wrong|"
    r"same|new|old|[a-z]+(?:er|est|ed))\s+$",
    re.I,
)
_WHOLE_COUNT_WORDS = {"none": 0, "once": 1, "never": 0}
_YEAR_RE = re.compile(r"^(?:19|20)\d\d$")


def _words_to_ints(seq: str) -> list[int]:
    """Parse a run of English number words into one or more integers.

    "twenty-one" -> [21], "three hundred and five" -> [305], "a dozen" -> [12],
    "one and two" -> [1, 2] (a unit after a unit starts a new number).
    """
    out: list[int] = []
    total = cur = 0
    last = ""
    started = False

    def flush() -> None:
        nonlocal total, cur, started, last
        if started:
            out.append(total + cur)
        total = cur = 0
        started = False
        last = ""

    for tok in re.split(r"[\s-]+", seq.lower()):
        if tok in ("a", "an", "and", ""):
            continue
        if tok in _UNITS:
            v = _UNITS[tok]
            if last in ("unit", "teen") or (last == "tens" and v >= 10):
                flush()
            cur += v
            last = "teen" if v >= 10 else "unit"
        elif tok in _TENS:
            if last in ("unit", "teen", "tens"):
                flush()
            cur += _TENS[tok]
            last = "tens"
        elif tok == "hundred":
            cur = (cur or 1) * 100
            last = "hundred"
        elif tok == "thousand":
            total += (cur or 1) * 1000
            cur = 0
            last = "thousand"
        elif tok == "dozen":
            cur = (cur or 1) * 12
            last = "dozen"
        started = True
    flush()
    return out


def _to_number(raw: str) -> float:
    return float(raw.replace(",", ""))


def _is_pronoun_one(text: str, start: int) -> bool:
    """ "the red one", "this one", "no one": not the number 1."""
    return _PRONOUN_ONE_RE.search(text, max(0, start - 12), start) is not None


#: a part of a whole: "one of the three receipts", "2 out of 5", "none of the four"; the count is the part
_PARTITIVE_RE = re.compile(
    r"(?<![\w-])(?P<n>\d+|none|" + _W + r")(?P<of>\s+(?:out\s+)?of\s+(?:the|all|those|these|my|your|our)?\s*"
    r"(?:\d+|" + _W + r"))(?![\w-])",
    re.I,
)


def _blank_partitives(text: str) -> str:
    """Blank the whole of each "N of the M" ("one of the three" -> "one"); "none of" -> "0";
    "only one of the three" is a count even though "only one" alone may be a pronoun."""

    def part(m: re.Match) -> str:
        n = m.group("n")
        low = n.lower()
        if low == "none":
            n = "0   "
        elif low == "one" and re.search(r"\bonly\s+$", text[max(0, m.start() - 6) : m.start()], re.I):
            n = "1  "
        return n + " " * len(m.group("of"))

    return _PARTITIVE_RE.sub(part, text)


def _find_counts(text: str) -> list[float]:
    """Every number (digits or words) in ``text`` except labels such as "session 3" and the
    whole of a partitive ("one of the three receipts" holds the count 1, never 3)."""
    vals: list[float] = []
    if " of " in text.lower():
        text = _blank_partitives(text)
    for m in _COUNT_TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind == "num":
            vals.append(_to_number(m.group("num")))
        elif kind == "words":
            w = m.group("words")
            if w.lower() == "one" and _is_pronoun_one(text, m.start()):
                continue
            vals.extend(float(v) for v in _words_to_ints(w))
        elif kind == "times":
            vals.append(2.0 if m.group("times").lower() == "twice" else 3.0)
    if not vals:
        word = text.strip(" .!*\"'").lower()
        if word in _WHOLE_COUNT_WORDS:
            vals.append(float(_WHOLE_COUNT_WORDS[word]))
    return vals


_COLON_RE = re.compile(r":(?!\d)")


def _single_count(clause: str) -> float | str | None:
    """Resolve one committed clause to a single count, None (no number) or "ambiguous"."""
    vals = _find_counts(clause)
    if not vals:
        return None
    if len(set(vals)) == 1:
        return vals[0]
    m = _COLON_RE.search(clause)
    if m:  # "There are 3 plants: one in session 1, ..." / "Total: 5"
        head = _find_counts(clause[: m.start()])
        if len(set(head)) == 1:
            return head[0]
        if not head:
            return _single_count(clause[m.end() :])
    blanked = _DATE_RE.sub(" ", clause)
    vals = [v for v in _find_counts(blanked) if not _YEAR_RE.match(f"{v:g}")] or vals
    return vals[0] if len(set(vals)) == 1 else "ambiguous"


def _fmt(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))


@lru_cache(maxsize=4096)
def _ref_count(ref: str) -> float | None:
    vals = _find_counts(ref)
    if len(set(vals)) != 1 or vals[0] != int(vals[0]):
        return None
    return vals[0]


def _match_count(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = _ref_count(ref)
    if want is None:
        return _fallback_text(ref, text, ctx)
    text = _drop_parens(text, _find_counts)
    clause, _ = _committed(text, _find_counts)
    got = _single_count(clause)
    if got is None:
        return _Outcome(False, None, "no-answer")
    if got == "ambiguous":
        values = ", ".join(_fmt(v) for v in dict.fromkeys(_find_counts(clause)))
        return _Outcome(False, None, f"ambiguous: {values}")
    parsed = _fmt(got)
    if got == want:
        return _Outcome(True, parsed, "int-match")
    return _Outcome(False, parsed, f"int-mismatch: {parsed} != {_fmt(want)}")


# --------------------------------------------------------------------------------------------
# Amounts (arithmetic)
# --------------------------------------------------------------------------------------------

_SYMBOLS = {
    "$": "USD",
    "us$": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "₹": "INR",
    "₩": "KRW",
    "c$": "CAD",
    "ca$": "CAD",
    "a$": "AUD",
    "au$": "AUD",
    "%": "%",
}
_CODES = {
    "usd": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "bucks": "USD",
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "gbp": "GBP",
    "pound": "GBP",
    "pounds": "GBP",
    "quid": "GBP",
    "jpy": "JPY",
    "yen": "JPY",
    "inr": "INR",
    "rupee": "INR",
    "rupees": "INR",
    "rs": "INR",
    "krw": "KRW",
    "won": "KRW",
    "dkk": "DKK",
    "sek": "SEK",
    "nok": "NOK",
    "isk": "ISK",
    "kr": "KR",
    "krone": "KR",
    "kroner": "KR",
    "kronor": "KR",
    "kronur": "KR",
    "chf": "CHF",
    "franc": "CHF",
    "francs": "CHF",
    "irr": "IRR",
    "rial": "IRR",
    "rials": "IRR",
    "cad": "CAD",
    "aud": "AUD",
    "cny": "CNY",
    "rmb": "CNY",
    "yuan": "CNY",
    "mxn": "MXN",
    "percent": "%",
}
_KRONA = {"DKK", "SEK", "NOK", "ISK", "KR"}
_PRE_CODES = "usd|eur|gbp|jpy|inr|krw|dkk|sek|nok|isk|chf|irr|cad|aud|cny|rmb|mxn|rs|kr"
_POST_CODES = "|".join(sorted((c for c in _CODES if c not in ("rs",)), key=len, reverse=True))
#: an amount's digits, in every notation the image renderers print (construction/images/synthetic/formats.py:
#: "$1,234.50", "1.234,50 €", "45,00 kr.", "CHF 1'234.00", "¥1,280") and answers use; alternatives are
#: tried in order, so "1.234,50" is one number and "7,98" is 7.98, never 7 and 98
_NUM = (
    r"-?(?:\d{1,3}(?:\.\d{3})+,\d{1,2}(?![\d,])"  # 1.234,50 (dot thousands, comma decimals)
    r"|\d{1,3}(?:['\u2019]\d{3})+(?:\.\d{1,2})?(?!\d)"  # 1'234.50 (Swiss thousands)
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])"  # 1,234.50 (comma thousands)
    r"|\d{1,3}(?:\.\d{3}){2,}(?![\d.,])"  # 1.234.567 (dot thousands only)
    r"|\d+,\d{1,2}(?!\d|,\d)"  # 7,98 (comma decimals; not a list such as 5,10,15)
    r"|\d+(?:\.\d+)?"
    r"|\.\d+)"
)
_AMOUNT_RE = re.compile(
    r"(?:(?P<pre>(?:us|ca|au|a|c)?\$|[€£¥₹₩]|\b(?:" + _PRE_CODES + r")\.?)\s?|(?<![\w.']))"
    r"(?P<num>" + _NUM + r")(?!\d|[/:]\d)"
    r"(?:\s?(?P<post>[€£¥₹₩$](?!\s?\d)|%|(?:" + _POST_CODES + r")\b\.?))?",
    re.I,
)
_COMMA_THOUSANDS_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def _amount_value(raw: str) -> float:
    """The value of an amount's digits: the last of "," / "." is the decimal mark when both occur;
    a lone "," is a thousands separator before exactly three digits ("1,500"), else a decimal mark
    ("7,98"); several "." are thousands separators ("1.234.567"); apostrophes group thousands."""
    s = raw.replace("'", "").replace("\u2019", "")
    if "," in s and "." in s:
        s = s.replace(".", "").replace(",", ".") if s.rfind(",") > s.rfind(".") else s.replace(",", "")
    elif "," in s:
        s = s.replace(",", "") if _COMMA_THOUSANDS_RE.fullmatch(s) else s.replace(",", ".")
    elif s.count(".") > 1:
        s = s.replace(".", "")
    return float(s)


_RANGE_GAP_RE = re.compile(r"^\W*(?:or|to|and|-|\u2013|~|/)\W*$", re.I)
_RANGE_WORD_RE = re.compile(r"\b(?:between|either|range|ranging)\b", re.I)


class _Amount(NamedTuple):
    value: float
    currency: str | None
    start: int
    end: int


def _find_amounts(text: str) -> list[_Amount]:
    out = []
    for m in _AMOUNT_RE.finditer(text):
        pre, post = m.group("pre"), m.group("post")
        cur = None
        for tag in (pre, post):
            if tag:
                t = tag.lower().rstrip(".")
                cur = _SYMBOLS.get(t) or _CODES.get(t) or cur
        out.append(_Amount(_amount_value(m.group("num")), cur, m.start(), m.end()))
    return out


def _amount_key(a: _Amount) -> float:
    return round(a.value, 6)


def _last_amount(text: str) -> _Amount | str | None:
    """The committed amount: last amount of the committed clause; "ambiguous" for ranges."""
    text = _drop_parens(text, _find_amounts)
    vals = _find_amounts(text)
    if len({_amount_key(a) for a in vals}) > 1:
        for clause in reversed(_CLAUSE_SPLIT_RE.split(text)):
            if clause and not clause.isspace():
                v = _find_amounts(clause)
                if v:
                    text, vals = clause, v
                    break
    if not vals:
        return None
    if len({_amount_key(a) for a in vals}) > 1:
        a, b = vals[-2], vals[-1]
        if _RANGE_GAP_RE.match(text[a.end : b.start]) or _RANGE_WORD_RE.search(text):
            return "ambiguous"
    return vals[-1]


def _currency_ok(ref: str | None, got: str | None) -> bool:
    if ref is None or got is None or ref == got:
        return True
    return ref in _KRONA and got in _KRONA and "KR" in (ref, got)


def _fmt_amount(a: _Amount) -> str:
    """Canonical amount: "15.50 USD", "185.00 DKK", "12.5", "25%"."""
    if a.currency == "%":
        return f"{_fmt(a.value)}%"
    num = f"{a.value:.2f}" if a.value != int(a.value) or a.currency else _fmt(a.value)
    return f"{num} {a.currency}" if a.currency else num


@lru_cache(maxsize=4096)
def _ref_amount(ref: str) -> _Amount | None:
    got = _last_amount(ref)
    return got if isinstance(got, _Amount) else None


def _amounts_equal(want: _Amount, got: _Amount, tol: float) -> bool:
    if abs(want.value - got.value) < tol:
        return True
    # Percent vs plain fraction: "25%" == "0.25".
    if want.currency == "%" and got.currency is None:
        return abs(want.value - got.value * 100) < tol
    if got.currency == "%" and want.currency is None:
        return abs(want.value * 100 - got.value) < tol
    return False


def _match_amount(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = _ref_amount(ref)
    if want is None:
        return _fallback_text(ref, text, ctx)
    got = _last_amount(text)
    if got is None:
        return _Outcome(False, None, "no-answer")
    if got == "ambiguous":
        return _Outcome(False, None, "ambiguous: range or alternatives")
    parsed = _fmt_amount(got)
    if not _currency_ok(want.currency, got.currency):
        return _Outcome(False, parsed, f"currency-mismatch: {got.currency} != {want.currency}")
    tol = ctx.tolerance if ctx.tolerance is not None else 0.005
    if _amounts_equal(want, got, tol):
        return _Outcome(True, parsed, "amount-match")
    return _Outcome(False, parsed, f"amount-mismatch: {parsed} != {_fmt_amount(want)}")


# --------------------------------------------------------------------------------------------
# Dates
# --------------------------------------------------------------------------------------------

_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH_RE = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_ORD = r"(?:st|nd|rd|th)?"
_DATE_RE = re.compile(
    r"(?<!\d)(?P<y1>\d{4})[/\-.](?P<m1>\d{1,2})[/\-.](?P<d1>\d{1,2})"
    r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?!\d)"
    r"|\b(?P<m2>" + _MONTH_RE + r")\.?\s+(?P<d2>\d{1,2})" + _ORD + r",?\s+(?P<y2>\d{4})(?!\d)"
    r"|\b(?P<d3>\d{1,2})" + _ORD + r"\s+(?:of\s+)?(?P<m3>" + _MONTH_RE + r")\.?,?\s+"
    r"(?P<y3>\d{4})(?!\d)"
    r"|(?<![\d/.\-])(?P<a4>\d{1,2})(?P<s4>[/\-.])(?P<b4>\d{1,2})(?P=s4)(?P<y4>\d{4})(?!\d)",
    re.I,
)
_AMBIGUOUS = "ambiguous"


def _mkdate(y: str | int, m: str | int, d: str | int) -> str | None:
    try:
        return _dt.date(int(y), int(m), int(d)).strftime("%Y/%m/%d")
    except ValueError:
        return None


def _date_of(m: re.Match) -> str | None:
    g = m.group
    if g("y1"):
        return _mkdate(g("y1"), g("m1"), g("d1"))
    if g("y2"):
        return _mkdate(g("y2"), _MONTHS[g("m2")[:3].lower()], g("d2"))
    if g("y3"):
        return _mkdate(g("y3"), _MONTHS[g("m3")[:3].lower()], g("d3"))
    a, b, y = int(g("a4")), int(g("b4")), g("y4")
    if a > 12:
        return _mkdate(y, b, a)  # dd/mm/yyyy
    if b > 12 or a == b:
        return _mkdate(y, a, b)  # mm/dd/yyyy
    return _AMBIGUOUS


def _find_dates(text: str) -> list[str]:
    out = []
    for m in _DATE_RE.finditer(text):
        d = _date_of(m)
        if d is not None:
            out.append(d)
    return out


@lru_cache(maxsize=4096)
def _ref_date(ref: str) -> str | None:
    ds = _find_dates(ref)
    return ds[0] if len(set(ds)) == 1 and ds[0] != _AMBIGUOUS else None


def _match_date(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = _ref_date(ref)
    if want is None:
        return _fallback_text(ref, text, ctx)
    _, dates = _committed(_drop_parens(text, _find_dates), _find_dates)
    if not dates:
        return _Outcome(False, None, "no-answer")
    if _AMBIGUOUS in dates:
        return _Outcome(False, None, "ambiguous-date: day/month order")
    if len(set(dates)) > 1:
        return _Outcome(False, None, f"ambiguous: {', '.join(dict.fromkeys(dates))}")
    got = dates[0]
    if got == want:
        return _Outcome(True, got, "date-match")
    return _Outcome(False, got, f"date-mismatch: {got} != {want}")


# --------------------------------------------------------------------------------------------
# Order ranking
# --------------------------------------------------------------------------------------------

_SEP = r"(?:,|;|->|\u2192|=>|>|\bthen\b|\band\b)"
_ORDER_RUN_RE = re.compile(
    r"(?P<paren>(?:\(\s*\d+\s*\)\s*(?:" + _SEP + r"\s*)*){2,})"
    r"|(?P<plain>(?<![\w.])\d+(?:(?:\s*" + _SEP + r"\s*(?:and\s+)?|\s+)\d+)+(?![\w.]\d))",
    re.I,
)
_INT_RE = re.compile(r"\d+")


def _find_order(text: str) -> list[str]:
    """Index sequences in ``text``, canonical "(2)(3)(1)"; "(i)(j)" runs win over plain lists.

    Plain runs ("2, 3, 1", "[2,3,1]", "2 -> 3 -> 1") only count when no parenthesised run is
    present, so "(2)(3)(1), from sessions 4 and 7" is read as (2)(3)(1).
    """
    runs: dict[str, list[str]] = {"paren": [], "plain": []}
    for m in _ORDER_RUN_RE.finditer(text):
        runs[m.lastgroup].append("".join(f"({int(n)})" for n in _INT_RE.findall(m.group(0))))
    return runs["paren"] or runs["plain"]


@lru_cache(maxsize=4096)
def _ref_order(ref: str) -> str | None:
    runs = _find_order(ref)
    return runs[-1] if runs else None


def _match_order(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = _ref_order(ref)
    if want is None:
        return _fallback_text(ref, text, ctx)
    runs = _find_order(text)
    if not runs:
        return _Outcome(False, None, "no-answer")
    got = runs[-1]
    if got == want:
        return _Outcome(True, got, "order-match")
    return _Outcome(False, got, f"order-mismatch: {got} != {want}")


# --------------------------------------------------------------------------------------------
# A/B choice (duration comparison)
# --------------------------------------------------------------------------------------------

_LETTER_VERBS = (
    r"(?:is|was|took|takes|lasted|lasts|has|had|because|since|as|and|or|with|wins|it|would|"
    r"should|seems|appears|clearly|definitely|longer|shorter)"
)
_NOT_ARTICLE = r"(?!\s+(?!" + _LETTER_VERBS + r"\b)[a-z])"  # "A trip ..." is an article
_LEADING_CHOICE_RE = re.compile(
    r"^[\s*_\"'`]*(?:(?i:option|choice)\s*)?(?:\((?P<p>[ABab])\)|(?P<l>[AB])(?=$|[\s.,:;)\]*!])" + _NOT_ARTICLE + ")"
)
_ALTERNATIVE_RE = re.compile(r"\s*(?:,|/|\bor\b|\band\b|&)\s*(?:option\s+)?\(?([AB])\b", re.I)
_CHOICE_RE = re.compile(
    r"(?i:\b(?:option|choice|answer)\s*[:\-]?\s*)\(?(?P<o>[ABab])\)?(?![\w])"
    r"|\((?P<p>[AB])\)"
    r"|(?<![\w'])(?P<l>[AB])(?![\w'])"
    + _NOT_ARTICLE
    + r"|(?i:\b(?P<first>the\s+first(?:\s+one|\s+option)?|the\s+former|first\s+option)\b)"
    r"|(?i:\b(?P<second>the\s+second(?:\s+one|\s+option)?|the\s+latter|second\s+option)\b)"
)
_QUESTION_OPTIONS_RE = re.compile(r"(?:\(A\)|\bA[).:]|option\s+A\b).*?(?:\(B\)|\bB[).:]|option\s+B\b)", re.I | re.S)


#: a concluding marker: the choice after the last one is the committed answer ("..., so B")
_CONCLUSION_RE = re.compile(
    r"\b(?:so|therefore|thus|hence|consequently|overall|in\s+conclusion|in\s+summary|in\s+short|"
    r"final\s+answer|the\s+answer\s+is|my\s+answer\s+is|answer\s*:|"
    r"i(?:'d|\s+would)\s+(?:say|pick|choose|go\s+with)|which\s+means|that\s+means|meaning)\b",
    re.I,
)
#: a rejected option: "not A", "rather than A", "instead of (A)"
_NEGATED_CHOICE_RE = re.compile(
    r"\b(?i:not|never|rather\s+than|instead\s+of|isn't|wasn't)\s+(?i:option\s+|choice\s+)?"
    r"(?:\((?P<p>[ABab])\)|(?P<l>[AB])(?![\w']))"
)
_LEAD_PUNCT_RE = re.compile(r"^\s*(?:$|[.,:;!)\]*\-\u2013\u2014])")
_JUSTIFY_RE = re.compile(r"\b(?:because|since|as|due|wins?)\b", re.I)
_MORE_RE = re.compile(r"\b(?:longer|longest|more|most|greater|bigger|further)\b", re.I)
_LESS_RE = re.compile(r"\b(?:shorter|shortest|less|least|fewer|smaller)\b", re.I)


def _mentions(text: str, allow_ordinals: bool) -> list[str]:
    """Every option named in ``text`` ("A", "(B)", "option a", "the former" ...), in order."""
    out = []
    for m in _CHOICE_RE.finditer(text):
        kind = m.lastgroup
        if kind in ("o", "p", "l"):
            out.append(m.group(kind).upper())
        elif allow_ordinals:
            out.append("A" if kind == "first" else "B")
    return out


def _question_direction(question: str | None) -> str | None:
    """ "more" when the question asks which lasted longer, "less" for shorter, else None."""
    if not question:
        return None
    more, less = bool(re.search(r"\blong", question, re.I)), bool(re.search(r"\bshort", question, re.I))
    return "more" if more and not less else "less" if less and not more else None


def _resolve_choice(text: str, allow_ordinals: bool = True, direction: str | None = None) -> list[str]:
    """The option(s) an A/B answer commits to; two distinct letters mean it is ambiguous.

    1. The choice after the last concluding marker that is followed by one ("A lasted 9 days and
       B lasted 21 days, so B." -> B; "..., therefore the answer is B, not A" -> B), read as in 2.
    2. An answer-first reply: a leading option followed by punctuation, a justification or a
       comparative agreeing with the question ("B, because ...", "A is longer than B"; for a
       "longer" question "B is shorter than A" does not commit to B). "A or B" stays ambiguous.
    3. Otherwise every option named and not rejected ("not A", "rather than A", "instead of A");
       when the only options named are rejected ones, the other option ("It's not A." -> B).
    Rejected options never count in 1 and 2 either ("B, not A" -> B).
    """
    bare = text.strip(" \t\n.()*_\"'`").upper()
    if bare in ("A", "B"):
        return [bare]
    negated = [(m.group("p") or m.group("l")).upper() for m in _NEGATED_CHOICE_RE.finditer(text)]
    kept = _NEGATED_CHOICE_RE.sub(lambda m: " " * len(m.group(0)), text)
    marks = list(_CONCLUSION_RE.finditer(kept))
    for i in range(len(marks) - 1, -1, -1):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(kept)
        got = _segment_choice(kept[marks[i].end() : end].lstrip(" ,:;-\u2013\u2014"), allow_ordinals, direction)
        if got:
            return got
    got = _segment_choice(kept, allow_ordinals, direction)
    if not got and len(set(negated)) == 1:
        return ["B" if negated[0] == "A" else "A"]
    return got


def _segment_choice(text: str, allow_ordinals: bool, direction: str | None) -> list[str]:
    """Steps 2 and 3 of :func:`_resolve_choice` on one stretch of text (rejections already blanked)."""
    bare = text.strip(" \t\n.()*_\"'`").upper()
    if bare in ("A", "B"):
        return [bare]
    lead = _LEADING_CHOICE_RE.match(text)
    if lead:
        letter = (lead.group("p") or lead.group("l")).upper()
        alt = _ALTERNATIVE_RE.match(text, lead.end())
        if alt:
            return [letter, alt.group(1).upper()]
        rest = text[lead.end() :]
        nxt = _CHOICE_RE.search(rest)
        span = rest[: nxt.start()] if nxt else rest
        agrees = _MORE_RE.search(span) if direction != "less" else _LESS_RE.search(span)
        opposes = (_LESS_RE if direction != "less" else _MORE_RE).search(span) if direction else None
        if nxt is None or _LEAD_PUNCT_RE.match(rest) or _JUSTIFY_RE.search(span) or (agrees and not opposes):
            return [letter]
    return _mentions(text, allow_ordinals)


def _FIND_CHOICE(text: str) -> list[str]:
    return _resolve_choice(text, True)


def _ref_choice(ref: str) -> str | None:
    r = ref.strip().strip("().").upper()
    return r if r in ("A", "B") else None


def _match_choice(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = _ref_choice(ref)
    if want is None:
        return _fallback_text(ref, text, ctx)
    ordinals = ctx.question is None or bool(_QUESTION_OPTIONS_RE.search(ctx.question))
    got = _resolve_choice(text, ordinals, _question_direction(ctx.question))
    if not got:
        return _Outcome(False, None, "no-answer")
    if len(set(got)) > 1:
        return _Outcome(False, None, "ambiguous: A and B")
    if got[0] == want:
        return _Outcome(True, got[0], "choice-match")
    return _Outcome(False, got[0], f"choice-mismatch: {got[0]} != {want}")


# --------------------------------------------------------------------------------------------
# Yes / No
# --------------------------------------------------------------------------------------------

_LEADING_YN_RE = re.compile(r"^[\W_]*(?:(?P<yes>yes|yep|yeah|correct|true)|(?P<no>no|nope|false))\b", re.I)
_TRAILING_YN_RE = re.compile(r"\b(?:(?P<yes>yes)|(?P<no>no))[\W_]*$", re.I)
_SAME_RE = re.compile(r"\b(?:not\s+different|no\s+difference|isn't\s+different|aren't\s+different)\b", re.I)
_NO_PHRASE_RE = re.compile(
    r"\b(?:not\s+(?:the\s+)?same|different|distinct|isn't\s+the\s+same|aren't\s+the\s+same|"
    r"not\s+identical)\b",
    re.I,
)
_YES_PHRASE_RE = re.compile(r"\b(?:(?:the\s+)?same|identical|yes)\b", re.I)


def _find_yes_no(text: str) -> list[str]:
    m = _LEADING_YN_RE.match(text) or _TRAILING_YN_RE.search(text)
    if m:
        return ["Yes" if m.lastgroup == "yes" else "No"]
    if _SAME_RE.search(text):
        return ["Yes"]
    if _NO_PHRASE_RE.search(text):
        return ["No"]
    if _YES_PHRASE_RE.search(text):
        return ["Yes"]
    return []


def _match_yes_no(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = ref.strip().capitalize()
    if want not in ("Yes", "No"):
        return _fallback_text(ref, text, ctx)
    _, got = _committed(text, _find_yes_no)
    if not got:
        return _Outcome(False, None, "no-answer")
    if got[0] == want:
        return _Outcome(True, got[0], "yesno-match")
    return _Outcome(False, got[0], f"yesno-mismatch: {got[0]} != {want}")


# --------------------------------------------------------------------------------------------
# Free text (IE, KU): token-bounded normalised containment
# --------------------------------------------------------------------------------------------

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "&": " and "})
_DROP_THE_AN_RE = re.compile(r"\b(?:the|an)\s+(?=[^\W\d_])", re.I)
_DROP_A_RE = re.compile(r"(?<![\w'])a\s+(?=[a-z])")
_DROP_CAP_A_RE = re.compile(r"(?:^|(?<=[.!?:]\s))A\s+(?=[a-z])(?!" + _LETTER_VERBS + r"\b)")
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}\b)")
_PUNCT_RE = re.compile(r"[^\w\s.:/]|_|(?<!\d)[.:/]|[.:/](?!\d)")
_TRAILING_ZEROS_RE = re.compile(r"(\d)\.0+\b|(\.\d*?[1-9])0+\b")
_WORD_DIGITS = {w: str(i) for i, w in enumerate(NUMBER_WORDS)}


@lru_cache(maxsize=65536)
def _fold(tok: str) -> str:
    """Number words to digits, then a light stemmer applied identically to both sides.

    Plural endings go (ies -> i, es, s; not ss/us/is), then a final e, and a final y becomes i,
    so "puppies"/"puppy", "movies"/"movie", "houses"/"house", "boxes"/"box", "buses"/"bus"
    and "glasses"/"glass" meet. Tokens of 3 characters or fewer and non-alphabetic tokens are kept.
    """
    if tok in _WORD_DIGITS:
        return _WORD_DIGITS[tok]
    if len(tok) <= 3 or not tok.isalpha():
        return tok
    if tok.endswith("ies") and len(tok) > 4:
        tok = tok[:-3] + "i"
    elif tok.endswith("es"):
        tok = tok[:-2]
    elif tok.endswith("s") and not tok.endswith(("ss", "us", "is")):
        tok = tok[:-1]
    if len(tok) > 3:
        if tok.endswith("e"):
            tok = tok[:-1]
        elif tok.endswith("y"):
            tok = tok[:-1] + "i"
    return tok


def _normalize_uncached(s: str) -> str:
    s = s.translate(_QUOTES)
    s = _DROP_THE_AN_RE.sub("", s)
    s = _DROP_A_RE.sub("", s)
    s = _DROP_CAP_A_RE.sub("", s)
    s = _THOUSANDS_RE.sub("", s.lower())
    s = _PUNCT_RE.sub(" ", s)
    if "." in s:
        s = _TRAILING_ZEROS_RE.sub(lambda m: m.group(1) or m.group(2), s)
    return " ".join(_fold(t) for t in s.split())


_normalize_cached = lru_cache(maxsize=16384)(_normalize_uncached)


def normalize_text(s: str) -> str:
    """Normalisation for containment: lowercase, punctuation to spaces (kept inside numbers),
    thousands separators and trailing decimal zeros dropped, "&" -> "and", articles dropped
    without touching option letters ("A." / "(A)" / "A is longer" keep their A), number words
    zero..twenty as digits, a light stemmer (see ``_fold``), whitespace collapsed."""
    return _normalize_cached(s) if len(s) <= 256 else _normalize_uncached(s)


def _contains(hay: str, needle: str) -> bool:
    return bool(needle) and f" {needle} " in f" {hay} "


def _match_text(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    want = normalize_text(ref)
    got = normalize_text(text)
    if not want:
        ok = ref.strip().lower() == text.strip().lower()
        return _Outcome(ok, got or None, "text-match" if ok else "text-mismatch")
    if _contains(got, want):
        return _Outcome(True, got, "text-match")
    return _Outcome(False, got or None, "text-mismatch")


def _match_entity(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    """IE: a money reference ("€7.98") is matched as an amount (any notation, currency checked);
    anything else by normalised containment."""
    if _amount_reference(ref) is not None:
        return _match_amount(ref, text, ctx)
    return _match_text(ref, text, ctx)


def _canonical_amounts(text: str) -> str:
    """Money amounts written with a currency or a comma/apostrophe notation, rewritten as plain
    decimals ("7,98 €" -> "7.98", "1.234,50 kr." -> "1234.50"), so containment sees one form."""

    def canon(m: re.Match) -> str:
        if not (m.group("pre") or m.group("post")) and not re.search(r"[,'\u2019]", m.group("num")):
            return m.group(0)
        return f"{_amount_value(m.group('num')):.2f}"

    return _AMOUNT_RE.sub(canon, text)


@lru_cache(maxsize=4096)
def _amount_reference(ref: str) -> _Amount | None:
    """The amount a free-text reference consists of, when it is nothing but a money amount
    ("€7.98", "185.00 DKK", "$1,234.50"): such a reference is also matched as an amount, so the
    notations of the images ("7,98 €", "1.234,50 €", "185,00 kr.") are accepted; a bare number
    without a currency ("12") is not an amount reference."""
    found = _find_amounts(ref.strip())
    if len(found) != 1 or found[0].currency in (None, "%"):
        return None
    a = found[0]
    return a if not ref.strip()[: a.start].strip() and not ref.strip()[a.end :].strip(" .") else None


def _fallback_text(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    """Used when a typed key's reference cannot be parsed in its expected format."""
    out = _match_text(ref, text, ctx)
    return out._replace(reason=f"ref-unparsed; {out.reason}")


_KU_CLAUSE_RE = re.compile(
    r"[;,!?\n]|(?<!\bdr)(?<!\bmr)(?<!\bmrs)(?<!\bms)(?<!\bst)(?<!\bjr)(?<!\bsr)(?<!\bvs)\.(?=\s|$)"
    r"|\b(?:but|while|whereas|however|now|currently|today)\b",
    re.I,
)
_PAST_MARKER_RE = re.compile(
    r"\b(?:previously|previous|used\s+to|before|was|were|earlier|formerly|former|originally|"
    r"initially|at\s+first|no\s+longer|not\s+anymore|anymore|changed|switched|moved|replaced|"
    r"updated|from|old|prior|instead\s+of|rather\s+than|not)\b",
    re.I,
)


def _remove(hay: str, needle: str) -> str:
    return f" {hay} ".replace(f" {needle} ", " ").strip()


def _match_update(ref: str, text: str, ctx: _Ctx) -> _Outcome:
    """KU: current value present; an outdated value present must be marked as past.

    Both present: correct only if every clause (split at , ; ! ? sentence-final . and
    but/while/whereas/however/now/currently/today) that mentions the old value carries a
    past/replacement marker ("previously", "used to", "before", "was", "earlier", "changed
    from", "no longer", "instead of", "not", ...).
    When one value contains the other ("Paris" vs "Paris, Texas"), the longer one is removed
    before looking for the shorter.
    """
    amount = _amount_reference(ref)
    if amount is not None:  # money values: one notation on every side, then the currency checked
        got_amounts = [a for a in _find_amounts(text) if abs(a.value - amount.value) < 0.005]
        if got_amounts and not any(_currency_ok(amount.currency, a.currency) for a in got_amounts):
            return _Outcome(False, _fmt_amount(got_amounts[-1]), f"currency-mismatch: {got_amounts[-1].currency}")
        ref, text = _canonical_amounts(ref), _canonical_amounts(text)
        ctx = ctx._replace(old_answer=_canonical_amounts(ctx.old_answer or ""))
    out = _match_text(ref, text, ctx)
    old = normalize_text(ctx.old_answer or "")
    want = normalize_text(ref)
    if not old or not want or old == want:
        return out
    got = normalize_text(text)
    has_ref = _contains(_remove(got, old) if _contains(old, want) else got, want)
    has_old = _contains(_remove(got, want) if _contains(want, old) else got, old)
    if not has_old:
        return out
    if not has_ref:
        return _Outcome(False, out.parsed, "outdated")
    for clause in _KU_CLAUSE_RE.split(text):
        c = normalize_text(clause)
        if (
            _contains(c, old)
            and not (_contains(want, old) and _contains(c, want))
            and not _PAST_MARKER_RE.search(clause)
        ):
            return _Outcome(False, out.parsed, "outdated: old value not marked as previous")
    return _Outcome(True, out.parsed, "text-match: old value marked as previous")


# --------------------------------------------------------------------------------------------
# Task table: one matcher per key
# --------------------------------------------------------------------------------------------


class _Task(NamedTuple):
    #: grades the (non-refusal) final answer against the reference
    match: Callable[[str, str, _Ctx], _Outcome] | None
    #: finds a typed value in text after a refusal (None: free-text key, guess phrase required)
    finder: Finder | None
    #: the key rewards abstaining (AR): correct iff abstained, the reference is ignored
    expects_abstention: bool = False


_TASKS: dict[str, _Task] = {
    IE_ENTITY: _Task(_match_entity, None),
    IE_PREVIOUS: _Task(_match_entity, None),
    MSR_ARITHMETIC: _Task(_match_amount, _find_amounts),
    MSR_COUNTING: _Task(_match_count, _find_counts),
    MSR_YESNO: _Task(_match_yes_no, _find_yes_no),
    TR_DURATION: _Task(_match_choice, _FIND_CHOICE),
    TR_ORDER: _Task(_match_order, _find_order),
    TR_DATE: _Task(_match_date, _find_dates),
    KU_UPDATE: _Task(_match_update, None),
    AR_REFUSAL: _Task(None, None, expects_abstention=True),
}

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
    ("I think", "probably", "my best guess", ...) or, for typed keys, be introduced by
    punctuation or a connective ("but", "however", "so") and hold a parseable value - so
    "no information about the 2 dogs" stays a refusal while "Insufficient information. 5" and
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
    arithmetic (default: exact to the cent, |diff| < 0.005); ``question`` enables the
    first/former/second/latter readings of A/B answers only when it names options A and B
    (without a question they are always enabled); ``diagnostics=True`` also computes the
    degeneracy diagnostic (``Grade.degenerate``), which never changes the score. Raises
    ``ValueError`` for an unknown ``question_type``.
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
    abstained, text = _split_refusal(final, task.finder)
    if task.expects_abstention:
        if abstained:
            return Grade(True, ABSTENTION_ANSWER, "abstained", abstained=True, **common)
        return Grade(False, final, "answered", **common)
    if abstained:
        return Grade(False, None, "refusal", abstained=True, **common)
    out = task.match(reference, text, _Ctx(old_answer, tolerance, question))
    return Grade(out.correct, out.parsed, out.reason, **common)
