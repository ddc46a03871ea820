"""Typed values in free text, with where they occur: what the deterministic judge compares.

Every finder returns :class:`Mention` s (a canonical value and its span) in text order; none of them
knows about task keys or about what an answer commits to (:mod:`memlens.eval.judge.commit` decides
that). Canonical values:

* counts: ``float`` ("three" -> 3.0, "a dozen" -> 12.0, "twice" -> 2.0, "a pair of" -> 2.0, "a single" ->
  1.0, "none" -> 0.0); labels such
  as "session 3", dates and times are not counts, and of a partitive ("one of the three") only the
  part is;
* amounts: :class:`Amount` (value and currency; every notation the image renderers print:
  "$1,234.50", "1.234,50 €", "45,00 kr.", "CHF 1'234.00", "7.98$");
* dates: ``"YYYY/MM/DD"`` from ISO, slash, dotted, compact ("20250304"), two-digit years ("04/03/25"),
  "March 4, 2025", "4 March 2025", "the 4th of March, 2025", "March fourth, 2025", weekday prefixes; ``d/m/yyyy`` and ``m/d/yyyy`` only where the
  two readings agree or one is impossible, else ``AMBIGUOUS_DATE``;
* times: ``"HH:MM"`` from "19:45", "7:45 PM", "7.45 p.m.", "19.45", "19h45", "7 pm", "7:45 in the
  evening", "noon", "midnight", and in words: "half past two in the afternoon", "quarter to eight",
  "seven thirty pm", "six o'clock" (a bare "7:45" or "half past seven" is read as 24-hour);
* durations: minutes (``float``) from "1 hour 30 minutes", "90 min", "1.5 hours", "2 days", "a week";
* quantities: ``(unit, amount)`` in a base unit (grams, millilitres, millimetres, or the counted
  noun: "40 bags"), so "0.5 kg" = "500 g" and "2kg" = "2 kilograms";
* codes (flight numbers, plates, booking references): the code in upper case without spaces or
  hyphens, found by the shape of the reference ("AD72 KPB" finds "ad72kpb", "AD72-KPB", "YM37 KEV");
* text: :func:`text_tokens` (the documented normalisation) and :func:`find_phrase` (word-bounded
  occurrences, never a raw substring).
"""

from __future__ import annotations

import datetime as _dt
import re
from functools import lru_cache
from typing import NamedTuple

from memlens.core.constants import NUMBER_WORDS


class Mention(NamedTuple):
    value: object
    start: int
    end: int


def short_cache(fn):
    """Memoise a finder on short texts (<= 256 characters: final answers), as the judge's text
    normalisation always was; the result is a tuple, so no caller can change a cached value."""
    cached = lru_cache(maxsize=16384)(lambda *a, **k: tuple(fn(*a, **k)))

    def finder(text: str, *a, **k):
        return cached(text, *a, **k) if len(text) <= 256 else tuple(fn(text, *a, **k))

    finder.__doc__, finder.__name__, finder.__wrapped__ = fn.__doc__, fn.__name__, fn
    return finder


def blank(text: str, rx: re.Pattern) -> str:
    """``text`` with every match of ``rx`` replaced by spaces (offsets are kept)."""
    return rx.sub(lambda m: " " * (m.end() - m.start()), text)


_YEAR4_RE = re.compile(r"\d{4}")


def blank_dates(text: str) -> str:
    """``text`` without its dates (scanned only where a four-digit year can make one)."""
    return blank(text, DATE_RE) if _YEAR4_RE.search(text) else text


def blank_dates_and_clocks(text: str) -> str:
    """``text`` without its dates and clock times (their numbers are neither counts nor amounts);
    the scans run only where a four-digit year or a ":"/"." can make one."""
    text = blank_dates(text)
    if ":" in text or "." in text:
        text = blank(text, _CLOCK_RE)
    return text


# --------------------------------------------------------------------------------------------
# Dates
# --------------------------------------------------------------------------------------------

_MONTHS = {
    m: i
    for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)
}
_MONTH_RE = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_ORD_WORDS = [
    *("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"),
    *("eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth"),
    *("eighteenth", "nineteenth", "twentieth"),
]
_DAY_WORDS = {w: i for i, w in enumerate(_ORD_WORDS, start=1)}
_DAY_WORDS.update({f"twenty-{w}": 20 + i for i, w in enumerate(_ORD_WORDS[:9], start=1)})
_DAY_WORDS.update({f"twenty {w}": 20 + i for i, w in enumerate(_ORD_WORDS[:9], start=1)})
_DAY_WORDS.update({"thirtieth": 30, "thirty-first": 31, "thirty first": 31})
_DAY_WORD_RE = "(?:" + "|".join(sorted(map(re.escape, _DAY_WORDS), key=len, reverse=True)) + ")"
_DAY = r"(?:\d{1,2}(?:st|nd|rd|th)?|" + _DAY_WORD_RE + ")"
DATE_RE = re.compile(
    r"(?<![\d/.\-])(?P<y1>\d{4})[/\-.](?P<m1>\d{1,2})[/\-.](?P<d1>\d{1,2})"
    r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?!\d)"
    r"|\b(?P<m2>" + _MONTH_RE + r")\.?\s+(?:the\s+)?(?P<d2>" + _DAY + r"),?\s+(?P<y2>\d{4})(?!\d)"
    r"|\b(?:the\s+)?(?P<d3>" + _DAY + r")\s+(?:of\s+)?(?P<m3>" + _MONTH_RE + r")\.?,?\s+(?P<y3>\d{4})(?!\d)"
    r"|(?<![\d/.\-])(?P<a4>\d{1,2})(?P<s4>[/\-.])(?P<b4>\d{1,2})(?P=s4)(?P<y4>\d{4})(?!\d)"
    r"|(?<![\d/.\-])(?P<a6>\d{1,2})(?P<s6>[/.])(?P<b6>\d{1,2})(?P=s6)(?P<y6>\d{2})(?![\d/.]\d|\d)"
    r"|(?<![\d/.\-])(?P<y5>(?:19|20)\d\d)(?P<m5>0[1-9]|1[0-2])(?P<d5>0[1-9]|[12]\d|3[01])(?!\d)",
    re.I,
)
AMBIGUOUS_DATE = "ambiguous-date"


def _mkdate(y, m, d) -> str | None:
    try:
        return _dt.date(int(y), int(m), int(d)).strftime("%Y/%m/%d")
    except ValueError:
        return None


def _day(s: str) -> int:
    s = s.lower()
    return _DAY_WORDS[s] if s in _DAY_WORDS else int(re.match(r"\d+", s).group(0))


def _date_of(m: re.Match) -> str | None:
    g = m.group
    if g("y1"):
        return _mkdate(g("y1"), g("m1"), g("d1"))
    if g("y2"):
        return _mkdate(g("y2"), _MONTHS[g("m2")[:3].lower()], _day(g("d2")))
    if g("y3"):
        return _mkdate(g("y3"), _MONTHS[g("m3")[:3].lower()], _day(g("d3")))
    if g("y5"):
        return _mkdate(g("y5"), g("m5"), g("d5"))  # 20231123
    if g("y6"):
        a, b, y = int(g("a6")), int(g("b6")), 2000 + int(g("y6"))  # 23/11/23, 11/23/23: a two-digit year
    else:
        a, b, y = int(g("a4")), int(g("b4")), g("y4")
    if a > 12:
        return _mkdate(y, b, a)  # dd/mm/yyyy
    if b > 12 or a == b:
        return _mkdate(y, a, b)  # mm/dd/yyyy
    return AMBIGUOUS_DATE


@short_cache
def find_dates(text: str) -> list[Mention]:
    out = []
    for m in DATE_RE.finditer(text):
        d = _date_of(m)
        if d is not None:
            out.append(Mention(d, m.start(), m.end()))
    return out


@lru_cache(maxsize=4096)
def ref_date(ref: str) -> str | None:
    ds = {m.value for m in find_dates(ref)}
    return next(iter(ds)) if len(ds) == 1 and AMBIGUOUS_DATE not in ds else None


# --------------------------------------------------------------------------------------------
# Times
# --------------------------------------------------------------------------------------------

_TIME_RE = re.compile(
    r"(?<![\d.:/,])(?P<h>[01]?\d|2[0-3])(?:(?P<sep>[:.h])(?P<mi>[0-5]\d))?(?![\d:/])"
    r"(?:\s*(?P<ampm>[ap]\.?\s?m\b\.?)|\s*o'?clock)?"
    r"(?:\s+(?:in\s+the\s+(?P<part>morning|afternoon|evening)|at\s+(?P<night>night)))?"
    r"|\b(?P<noon>noon|midday|midnight)\b",
    re.I,
)


def _time_of(m: re.Match) -> str | None:
    if m.group("noon"):
        return "00:00" if m.group("noon").lower() == "midnight" else "12:00"
    h, mi = int(m.group("h")), int(m.group("mi") or 0)
    ampm = (m.group("ampm") or "").lower()
    part = (m.group("part") or m.group("night") or "").lower()
    if not (m.group("sep") or ampm or part or "clock" in m.group(0).lower()):
        return None  # a bare number is not a time
    if m.group("sep") == "." and not (ampm or part) and h < 10 and len(m.group("h")) == 1:
        return None  # "7.45" without a marker reads as a number
    if ampm.startswith("p") or part in ("afternoon", "evening") or (part == "night" and h >= 6):
        if h > 12:
            return None
        h = h % 12 + 12 if not (part == "afternoon" and h == 12) else 12
    elif ampm.startswith("a") or part == "morning":
        if h > 12:
            return None
        h %= 12
    return f"{h:02d}:{mi:02d}"


_HOUR_WORDS = {
    w: i
    for i, w in enumerate(
        ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"), start=1
    )
}
_HOUR_WORD = r"(?:" + "|".join(sorted(_HOUR_WORDS, key=len, reverse=True)) + r"|1[0-2]|0?[1-9])"
_PAST_MINUTES = {"five": 5, "ten": 10, "quarter": 15, "a quarter": 15, "twenty": 20, "twenty-five": 25}
_PAST_MINUTES.update({"twenty five": 25, "half": 30})
_CLOCK_MINUTES = {"oh five": 5, "ten": 10, "fifteen": 15, "twenty": 20, "twenty-five": 25, "twenty five": 25}
_CLOCK_MINUTES.update({"thirty": 30, "thirty-five": 35, "thirty five": 35, "forty": 40, "forty-five": 45})
_CLOCK_MINUTES.update({"forty five": 45, "fifty": 50, "fifty-five": 55, "fifty five": 55})
_DAY_PART = (
    r"(?:\s*(?P<ampm>[ap]\.?\s?m\b\.?)|\s+in\s+the\s+(?P<part>morning|afternoon|evening)|\s+at\s+(?P<night>night))?"
)
#: clock times in words: "half past two in the afternoon", "quarter to eight", "seven thirty pm", "six o'clock"
_WORD_TIME_RE = re.compile(
    r"\b(?:(?P<pm>" + "|".join(sorted(map(re.escape, _PAST_MINUTES), key=len, reverse=True)) + r")"
    r"(?:\s+minutes)?\s+(?P<dir>past|after|to|before)\s+(?P<h1>" + _HOUR_WORD + r")"
    r"|(?P<h2>"
    + _HOUR_WORD.replace("|1[0-2]|0?[1-9]", "")
    + r")(?:\s+(?P<cm>"
    + "|".join(sorted(map(re.escape, _CLOCK_MINUTES), key=len, reverse=True))
    + r")|\s*(?P<oc>o'?clock))"
    r")\b" + _DAY_PART,
    re.I,
)


def _word_time_of(m: re.Match) -> str | None:
    g = m.group
    if g("h1"):
        h = _HOUR_WORDS.get(g("h1").lower()) or int(g("h1"))
        mi = _PAST_MINUTES[re.sub(r"\s+", " ", g("pm").lower())]
        if g("dir").lower() in ("to", "before"):
            h, mi = (h - 2) % 12 + 1, 60 - mi
    else:
        h = _HOUR_WORDS[g("h2").lower()]
        mi = _CLOCK_MINUTES[re.sub(r"\s+", " ", g("cm").lower())] if g("cm") else 0
    ampm = (g("ampm") or "").lower()
    part = (g("part") or g("night") or "").lower()
    if ampm.startswith("a") or part == "morning" or (part == "night" and h == 12):
        h %= 12
    elif ampm.startswith("p") or part in ("afternoon", "evening") or (part == "night" and h >= 6):
        h = h % 12 + 12
    return f"{h:02d}:{mi:02d}"


@short_cache
def find_times(text: str) -> list[Mention]:
    text = blank_dates(text)
    out = []
    for m in _TIME_RE.finditer(text):
        t = _time_of(m)
        if t is not None:
            out.append(Mention(t, m.start(), m.end()))
    if _WORDY_TIME_CUES.search(text):
        words = [Mention(_word_time_of(m), m.start(), m.end()) for m in _WORD_TIME_RE.finditer(text)]
        if words:
            out = [x for x in out if not any(w.start <= x.start < w.end for w in words)] + words
            out.sort(key=lambda x: x.start)
    return out


_WORDY_TIME_CUES = re.compile(r"past|after|to\b|before|o'?clock|thirty|fifteen|forty|fifty|twenty|\boh\b|ten\b", re.I)


_REF_TIME_RE = re.compile(
    r"^\s*(?:[01]?\d|2[0-3])(?::[0-5]\d)?\s*(?:[ap]\.?\s?m\.?)?\s*$|^\s*(?:noon|midnight)\s*$", re.I
)


@lru_cache(maxsize=4096)
def ref_time(ref: str) -> str | None:
    """The time a reference consists of ("19:00", "7:45 pm"), else None."""
    if not _REF_TIME_RE.match(ref) or not re.search(r":|[ap]\.?\s?m|noon|midnight", ref, re.I):
        return None
    found = find_times(ref)
    return found[0].value if len(found) == 1 else None


# --------------------------------------------------------------------------------------------
# Counts
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
    r"\b(?:sessions?|images?|photos?|pictures?|pics?|turns?|steps?|messages?|"
    r"options?|events?|items?\s+(?=\(?\d+\)))\s*"
)
_COUNT_TOKEN_RE = re.compile(
    r"(?P<label>" + _LABEL + r"\(?(?:\d+|" + _W + r")\b\)?(?:\s*(?:,|and|&|or)\s*(?:and\s+)?\(?\d+\b\)?)*)"
    r"|(?P<num>(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?!\w|[/:]\d|\.\d)"
    r"|(?P<words>(?<![\w-])(?:an?\s+(?=(?:hundred|thousand|dozen)\b))?"
    + _W
    + r"(?:(?:\s+|\s*-\s*)(?:and\s+)?"
    + _W
    + r")*(?!\w)(?!-\s*(?:\d|"
    + _W
    + r")))"
    r"|(?P<times>\b(?:twice|thrice|once)\b)"
    r"|(?P<pair>\ba\s+pair\s+of\b)|(?P<single>\ba\s+single\b(?!\s+one\b))"
    r"|(?P<none>\b(?:none|nothing|no\s+(?:one|ones)\b|not\s+(?:a\s+)?(?:single\s+)?one\b|"
    r"(?:weren't|wasn't|aren't|isn't|were\s+not|was\s+not|are\s+not|is\s+not)\s+any\b|"
    r"no(?=\s+[a-z]+)(?!\s+(?:longer|more|less|idea|way|doubt|matter|problem|information|info|record|records|"
    r"mention|data|details?|clue|sign|time|need|other|such|further|later|earlier|than)\b)))",
    re.I,
)
#: "the red one", "this one", "the only one", "no one", "one small one", "the bigger one": not the number
#: 1 ("only one receipt", "I counted one" are)
_PRONOUN_ONE_RE = re.compile(
    r"\b(?:the|this|that|which|each|every|any|no|another|other|some|a|last|first|right|wrong|"
    r"same|new|old|(?<=the\s)[a-z]+(?:er|est|ed)|(?<=a\s)[a-z]+(?:er|est|ed)|small|large|big|little|tiny|huge|short|long|tall|round|square|plain|"
    r"red|orange|yellow|green|blue|purple|pink|brown|black|white|grey|gray|silver|gold|beige|cream)\s+(?:only\s+)?$",
    re.I,
)
_YEAR_RE = re.compile(r"^(?:19|20)\d\d$")
#: "one" in idioms that count nothing ("one by one", "one after another", "one at a time")
_IDIOM_ONE_RE = re.compile(r"\bone\s+(?:by\s+one|after\s+(?:another|the\s+other)|at\s+a\s+time|another)\b", re.I)
#: the number of a numbered list's item ("1. on sale"), a position, not a count
_LIST_MARKER_RE = re.compile(r"^[ \t]*\d+[.)](?=[ \t])", re.M)
_SET_SIZE_RE = re.compile(r"\b(?:all|the|these|those|both|each\s+of\s+the)\s+$", re.I)
_CLOCK_RE = re.compile(
    r"(?<![\d.])\d{1,2}:\d{2}(?:\s*[ap]\.?\s?m\b\.?)?|(?<![\d.])\d{1,2}\.\d{2}\s*[ap]\.?\s?m\b\.?", re.I
)
_PARTITIVE_RE = re.compile(
    r"(?<![\w-])(?P<n>\d+|none|" + _W + r")(?P<of>\s+(?:out\s+)?of\s+(?:the|all|those|these|my|your|our)?\s*"
    r"(?:\d+|" + _W + r"))(?![\w-])",
    re.I,
)


def _words_to_ints(seq: str) -> list[int]:
    """A run of English number words as integers: "twenty-one" -> [21], "three hundred and five"
    -> [305], "a dozen" -> [12], "one and two" -> [1, 2] (a unit after a unit starts a new number)."""
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


def _blank_partitives(text: str) -> str:
    """Blank the whole of "N of the M" but N ("one of the three" -> "one"); "none of" -> "0"."""

    def part(m: re.Match) -> str:
        n = m.group("n")
        low = n.lower()
        if low == "none":
            n = "0   "
        elif low == "one" and re.search(r"\bonly\s+$", text[max(0, m.start() - 6) : m.start()], re.I):
            n = "1  "
        return n + " " * len(m.group("of"))

    return _PARTITIVE_RE.sub(part, text)


@short_cache
def find_counts(text: str) -> list[Mention]:
    """Every count in ``text`` (digits or words) except labels ("session 3", "#2"), the numbers of
    dates and clock times, and the whole of a partitive ("one of the three receipts" holds 1).
    Years (19xx/20xx) are dropped when another count is present."""
    if any(c.isdigit() for c in text):
        text = blank_dates_and_clocks(text)
        if "\n" in text and len(_LIST_MARKER_RE.findall(text)) > 1:  # a numbered list: its item numbers are positions
            text = blank(text, _LIST_MARKER_RE)
    if " of " in text.lower():
        text = _blank_partitives(text)
    if "one " in text.lower():
        text = blank(text, _IDIOM_ONE_RE)
    out: list[Mention] = []
    for m in _COUNT_TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind == "num":
            out.append(Mention(float(m.group("num").replace(",", "")), m.start(), m.end()))
        elif kind == "words":
            w = m.group("words")
            if w.lower() == "one" and _PRONOUN_ONE_RE.search(text, max(0, m.start() - 16), m.start()):
                continue
            out.extend(Mention(float(v), m.start(), m.end()) for v in _words_to_ints(w))
        elif kind == "times":
            t = m.group("times").lower()
            out.append(Mention({"once": 1.0, "twice": 2.0}.get(t, 3.0), m.start(), m.end()))
        elif kind == "none":
            out.append(Mention(0.0, m.start(), m.end()))
        elif kind in ("pair", "single"):  # "a pair of mugs", "a single receipt"
            out.append(Mention(2.0 if kind == "pair" else 1.0, m.start(), m.end()))
    if len(out) > 1:  # years, and the size of a set the count is taken from ("all three receipts")
        kept = [x for x in out if not _YEAR_RE.match(f"{x.value:g}")]
        kept = [x for x in kept if not _SET_SIZE_RE.search(text, max(0, x.start - 12), x.start)] or kept
        out = kept or out
    return out


@lru_cache(maxsize=4096)
def ref_count(ref: str) -> float | None:
    if not re.fullmatch(r"\s*(?:\d{1,3}(?:,\d{3})+|\d+)\s*|\s*[a-zA-Z -]+\s*", ref):
        return None
    vals = {m.value for m in find_counts(ref)}
    if len(vals) != 1:
        return None
    v = next(iter(vals))
    return v if v == int(v) else None


# --------------------------------------------------------------------------------------------
# Amounts
# --------------------------------------------------------------------------------------------

_SYMBOLS = {"$": "USD", "us$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR", "₩": "KRW", "円": "JPY"}
_SYMBOLS.update({"c$": "CAD", "ca$": "CAD", "a$": "AUD", "au$": "AUD", "%": "%"})
_CODES = {
    **dict.fromkeys(("usd", "dollar", "dollars", "bucks"), "USD"),
    **dict.fromkeys(("eur", "euro", "euros"), "EUR"),
    **dict.fromkeys(("gbp", "pound", "pounds", "quid"), "GBP"),
    **dict.fromkeys(("jpy", "yen"), "JPY"),
    **dict.fromkeys(("inr", "rupee", "rupees", "rs"), "INR"),
    **dict.fromkeys(("krw", "won"), "KRW"),
    **{c: c.upper() for c in ("dkk", "sek", "nok", "isk", "irr", "cad", "aud", "cny", "mxn", "chf")},
    **dict.fromkeys(("kr", "krone", "kroner", "kronor", "kronur"), "KR"),
    **dict.fromkeys(("franc", "francs", "swiss francs"), "CHF"),
    **dict.fromkeys(("rial", "rials"), "IRR"),
    **dict.fromkeys(("rmb", "yuan"), "CNY"),
    "percent": "%",
}
_KRONA = {"DKK", "SEK", "NOK", "ISK", "KR"}
_PRE_CODES = "usd|eur|gbp|jpy|inr|krw|dkk|sek|nok|isk|chf|irr|cad|aud|cny|rmb|mxn|rs|kr"
_POST_CODES = "|".join(
    sorted((re.escape(c).replace(r"\ ", r"\s+") for c in _CODES if c != "rs"), key=len, reverse=True)
)
#: an amount's digits, in every notation the image renderers print (construction/images/synthetic/
#: formats.py) and answers use; alternatives are tried in order, so "1.234,50" is one number and
#: "7,98" is 7.98, never 7 and 98
_NUM = (
    r"-?(?:\d{1,3}(?:\.\d{3})+,\d{1,2}(?!\d|,\d)"  # 1.234,50 (dot thousands, comma decimals)
    r"|\d{1,3}(?:['\u2019]\d{3})+(?:\.\d{1,2})?(?!\d)"  # 1'234.50 (Swiss thousands)
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|,\d)"  # 1,234.50 (comma thousands; "2,250, not" ends at its comma)
    r"|\d{1,3}(?:\.\d{3}){2,}(?![\d.,])"  # 1.234.567 (dot thousands only)
    r"|\d+,\d{1,2}(?!\d|,\d)"  # 7,98 (comma decimals; not a list such as 5,10,15)
    r"|\d+(?:\.\d+)?"
    r"|\.\d+)"
)
_AMOUNT_RE = re.compile(
    r"(?:(?P<pre>(?:us|ca|au|a|c)?\$|[€£¥₹₩]|\b(?:" + _PRE_CODES + r")\.?)\s?|(?<![\w.']))"
    r"(?P<num>" + _NUM + r")(?!\d|[/:]\d)"
    r"(?:\s?(?P<post>[€£¥₹₩$円](?!\s?\d)|%|(?:" + _POST_CODES + r")\b\.?))?",
    re.I,
)
_COMMA_THOUSANDS_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


class Amount(NamedTuple):
    value: float
    currency: str | None

    def key(self) -> tuple:
        return (round(self.value, 6), self.currency)


def amount_value(raw: str) -> float:
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


@short_cache
def find_amounts(text: str) -> list[Mention]:
    """Every amount, as ``Mention(Amount, start, end)``; the numbers of dates and clock times are not
    amounts, and when any amount names a currency, numbers without one are not amounts either."""
    if any(c.isdigit() for c in text):
        text = blank_dates_and_clocks(text)
    out = []
    for m in _AMOUNT_RE.finditer(text):
        cur = None
        for tag in (m.group("pre"), m.group("post")):
            if tag:
                t = re.sub(r"\s+", " ", tag.lower().rstrip("."))
                cur = _SYMBOLS.get(t) or _CODES.get(t) or cur
        raw = m.group("num")
        if cur in _NO_MINOR_UNIT and _DOT_THOUSANDS_RE.fullmatch(raw):
            raw = raw.replace(".", "")  # "55.600 \u00a5": yen have no decimals, the dot groups thousands
        out.append(Mention(Amount(amount_value(raw), cur), m.start(), m.end()))
    if _CURRENCY_WORD_RE.search(text):
        out = sorted(out + _word_amounts(text, out), key=lambda x: x.start)
    if any(x.value.currency for x in out):
        out = _inherit_currency(text, out)
        out = [x for x in out if x.value.currency]
    return out


_NO_MINOR_UNIT = frozenset(("JPY", "KRW"))
_DOT_THOUSANDS_RE = re.compile(r"\d{1,3}(?:\.\d{3})+")
_CURRENCY_WORDS = "dollars?|bucks|euros?|pounds?|quid|yen|francs?|kron(?:e|er|or|ur)|rupees?|won"
_CURRENCY_WORD_RE = re.compile(r"\b(?:" + _CURRENCY_WORDS + r")\b", re.I)
#: an amount in number words: "fourteen dollars", "fifty-five thousand six hundred yen"
_WORD_AMOUNT_RE = re.compile(
    r"(?<![\w-])(?P<w>(?:an?\s+(?=(?:hundred|thousand)\b))?" + _W + r"(?:(?:\s+|\s*-\s*)(?:and\s+)?" + _W + r")*)"
    r"\s+(?P<cur>" + _CURRENCY_WORDS + r")\b",
    re.I,
)


def _word_amounts(text: str, found: list[Mention]) -> list[Mention]:
    out = []
    for m in _WORD_AMOUNT_RE.finditer(text):
        vals = _words_to_ints(m.group("w"))
        if len(vals) == 1 and not any(x.start < m.end() and m.start() < x.end for x in found):
            out.append(Mention(Amount(float(vals[0]), _CODES[m.group("cur").lower()]), m.start(), m.end()))
    return out


_PAIR_GAP_RE = re.compile(r"^\s*(?:-|\u2013|to|and|or)\s*$", re.I)


def _inherit_currency(text: str, out: list[Mention]) -> list[Mention]:
    """A bare number paired with an amount ("10-15 dollars", "$10 or 15") takes its currency."""
    res = list(out)
    for i in range(len(res) - 1):
        a, b = res[i], res[i + 1]
        if bool(a.value.currency) != bool(b.value.currency) and _PAIR_GAP_RE.match(text[a.end : b.start]):
            cur = a.value.currency or b.value.currency
            if a.value.currency is None:
                res[i] = Mention(Amount(a.value.value, cur), a.start, a.end)
            else:
                res[i + 1] = Mention(Amount(b.value.value, cur), b.start, b.end)
    return res


@lru_cache(maxsize=4096)
def ref_amount(ref: str, *, need_currency: bool = False) -> Amount | None:
    """The amount a reference consists of ("€7.98", "185.00 DKK", "15.5"), else None; with
    ``need_currency`` a bare number is not an amount reference."""
    r = ref.strip()
    found = find_amounts(r)
    if len(found) != 1:
        return None
    a = found[0]
    if r[: a.start].strip() or r[a.end :].strip(" ."):
        return None
    if need_currency and a.value.currency in (None, "%"):
        return None
    return a.value


def currency_ok(ref: str | None, got: str | None) -> bool:
    if ref is None or got is None or ref == got:
        return True
    return ref in _KRONA and got in _KRONA and "KR" in (ref, got)


def amounts_equal(want: Amount, got: Amount, tol: float) -> bool:
    if abs(want.value - got.value) < tol:
        return True
    if want.currency == "%" and got.currency is None:  # "25%" == "0.25"
        return abs(want.value - got.value * 100) < tol
    if got.currency == "%" and want.currency is None:
        return abs(want.value * 100 - got.value) < tol
    return False


def fmt_number(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))


def fmt_amount(a: Amount) -> str:
    """Canonical amount: "15.50 USD", "185.00 DKK", "12.5", "25%"."""
    if a.currency == "%":
        return f"{fmt_number(a.value)}%"
    num = f"{a.value:.2f}" if a.value != int(a.value) or a.currency else fmt_number(a.value)
    return f"{num} {a.currency}" if a.currency else num


# --------------------------------------------------------------------------------------------
# Durations and quantities
# --------------------------------------------------------------------------------------------

_DUR_UNITS = {"minute": 1.0, "min": 1.0, "hour": 60.0, "hr": 60.0, "h": 60.0, "day": 1440.0, "week": 10080.0}
_NUMBER = r"(?:\d+(?:\.\d+)?|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|half\s+an?)"
_DUR_PART = r"(?P<n{i}>" + _NUMBER + r")\s*(?P<u{i}>minutes?|mins?|hours?|hrs?|h|days?|weeks?)\b"
_DURATION_RE = re.compile(
    r"(?<![\w.])" + _DUR_PART.format(i=1) + r"(?:\s*(?:and\s+)?" + _DUR_PART.format(i=2) + r")?", re.I
)


def _num(s: str) -> float:
    s = s.lower().strip()
    if s.startswith("half"):
        return 0.5
    if s in ("a", "an"):
        return 1.0
    return float(_UNITS[s]) if s in _UNITS else float(s)


def _dur_unit(u: str) -> float:
    u = u.lower().rstrip("s") if u.lower() not in ("hrs", "mins") else u.lower()[:-1]
    return _DUR_UNITS[u]


def find_durations(text: str) -> list[Mention]:
    """Every duration, in minutes; a bare number paired with one ("2 or 3 days") takes its unit."""
    out = []
    for m in _DURATION_RE.finditer(text):
        v = _num(m.group("n1")) * _dur_unit(m.group("u1"))
        if m.group("n2"):
            v += _num(m.group("n2")) * _dur_unit(m.group("u2"))
        out.append(Mention(round(v, 6), m.start(), m.end()))
        bare = _BARE_BEFORE_RE.search(text, 0, m.start())
        if bare is not None and not m.group("n2"):
            b = float(bare.group("n").replace(",", ".")) * _dur_unit(m.group("u1"))
            out.insert(len(out) - 1, Mention(round(b, 6), bare.start(), bare.start() + len(bare.group("n"))))
    return out


@lru_cache(maxsize=4096)
def ref_duration(ref: str) -> float | None:
    found = find_durations(ref)
    if len(found) != 1 or ref[: found[0].start].strip() or ref[found[0].end :].strip(" ."):
        return None
    return found[0].value


_QTY_UNITS = {
    **dict.fromkeys(("mg", "milligram", "milligrams"), ("g", 0.001)),
    **dict.fromkeys(("g", "gr", "gram", "grams", "gramme", "grammes"), ("g", 1.0)),
    **dict.fromkeys(("kg", "kgs", "kilo", "kilos", "kilogram", "kilograms", "kilogramme", "kilogrammes"), ("g", 1e3)),
    **dict.fromkeys(("ml", "millilitre", "millilitres", "milliliter", "milliliters"), ("ml", 1.0)),
    **dict.fromkeys(("cl", "centilitre", "centilitres", "centiliter", "centiliters"), ("ml", 10.0)),
    **dict.fromkeys(("l", "litre", "litres", "liter", "liters"), ("ml", 1e3)),
    **dict.fromkeys(("mm", "millimetre", "millimetres", "millimeter", "millimeters"), ("mm", 1.0)),
    **dict.fromkeys(("cm", "centimetre", "centimetres", "centimeter", "centimeters"), ("mm", 10.0)),
    **dict.fromkeys(("m", "metre", "metres", "meter", "meters"), ("mm", 1e3)),
    **dict.fromkeys(("km", "kilometre", "kilometres", "kilometer", "kilometers"), ("mm", 1e6)),
    **dict.fromkeys(("oz", "ounce", "ounces"), ("oz", 1.0)),
    **dict.fromkeys(("lb", "lbs", "pound", "pounds"), ("lb", 1.0)),
    **dict.fromkeys(("bag", "bags", "teabag", "teabags", "tea bags"), ("bag", 1.0)),
    **dict.fromkeys(("tab", "tabs", "tablet", "tablets"), ("tablet", 1.0)),
    **dict.fromkeys(("pod", "pods"), ("pod", 1.0)),
    **dict.fromkeys(("capsule", "capsules", "caps"), ("capsule", 1.0)),
    **dict.fromkeys(("piece", "pieces", "pcs"), ("piece", 1.0)),
}
_QTY_RE = re.compile(
    r"(?<![\w.,])(?P<n>\d+(?:[.,]\d+)?)\s*(?P<u>"
    + "|".join(sorted((re.escape(u).replace(r"\ ", r"\s+") for u in _QTY_UNITS), key=len, reverse=True))
    + r")\b",
    re.I,
)


_COUNTED_UNITS = {u: v for u, v in _QTY_UNITS.items() if v[0] not in ("g", "ml", "mm", "oz", "lb")}
#: a count of a counted noun with words between ("60 dishwasher tablets", "20 coffee pods")
_COUNTED_QTY_RE = re.compile(
    r"(?<![\w.,])(?P<n>\d+)\s+(?:(?!(?:of|out|and|or|to|per|each|from|in|at)\b)[a-z]+\s+){1,2}(?P<u>"
    + "|".join(sorted((re.escape(u).replace(r"\ ", r"\s+") for u in _COUNTED_UNITS), key=len, reverse=True))
    + r")\b",
    re.I,
)


def find_quantities(text: str) -> list[Mention]:
    """Every quantity with a unit; a bare number paired with one ("1 or 2 kg", "1-2 kg") takes its unit;
    a counted noun may follow its describing words ("60 dishwasher tablets")."""
    out = []
    matches = list(_QTY_RE.finditer(text))
    matches += [
        m
        for m in _COUNTED_QTY_RE.finditer(text)
        if not any(x.start() < m.end() and m.start() < x.end() for x in matches)
    ]
    for m in sorted(matches, key=lambda m: m.start()):
        unit, factor = _QTY_UNITS[re.sub(r"\s+", " ", m.group("u").lower())]
        v = float(m.group("n").replace(",", ".")) * factor
        out.append(Mention((unit, round(v, 6)), m.start(), m.end()))
        bare = _BARE_BEFORE_RE.search(text, 0, m.start())
        if bare is not None:
            b = float(bare.group("n").replace(",", ".")) * factor
            out.insert(len(out) - 1, Mention((unit, round(b, 6)), bare.start(), bare.start() + len(bare.group("n"))))
    return out


#: a bare number right before a value with a unit, joined to it as a pair ("1 or 2 kg", "2-3 days")
_BARE_BEFORE_RE = re.compile(r"(?<![\w.,:/])(?P<n>\d+(?:[.,]\d+)?)\s*(?:or|-|\u2013|to|and|/)\s*$", re.I)


@lru_cache(maxsize=4096)
def ref_quantity(ref: str) -> tuple | None:
    found = find_quantities(ref)
    if len(found) != 1 or ref[: found[0].start].strip() or ref[found[0].end :].strip(" ."):
        return None
    return found[0].value


def fmt_quantity(q: tuple) -> str:
    return f"{fmt_number(q[1])} {q[0]}"


# --------------------------------------------------------------------------------------------
# Colours
# --------------------------------------------------------------------------------------------

COLOURS = frozenset(
    [
        "red",
        "orange",
        "yellow",
        "green",
        "blue",
        "purple",
        "pink",
        "brown",
        "black",
        "white",
        "grey",
        "silver",
        "gold",
        "beige",
        "navy",
        "teal",
        "turquoise",
        "cream",
        "maroon",
        "violet",
        "cyan",
        "magenta",
        "tan",
        "olive",
        "lime",
        "lilac",
        "burgundy",
    ]
)
_COLOUR_RE = re.compile(
    r"\b(?:(?:dark|light|pale|bright|deep|navy)[\s-]+)?(?P<c>" + "|".join(sorted(COLOURS | {"gray"})) + r")(?:ish)?\b",
    re.I,
)


def find_colours(text: str) -> list[Mention]:
    """Every colour word ("dark grey" is grey, "gray" is grey)."""
    return [
        Mention(m.group("c").lower().replace("gray", "grey"), m.start(), m.end()) for m in _COLOUR_RE.finditer(text)
    ]


@lru_cache(maxsize=4096)
def ref_colour(ref: str) -> str | None:
    """The colour a reference consists of ("grey", "White"), else None."""
    r = ref.strip().lower().replace("gray", "grey")
    return r if r in COLOURS else None


# --------------------------------------------------------------------------------------------
# Codes
# --------------------------------------------------------------------------------------------

_REF_CODE_RE = re.compile(
    r"^(?=[A-Za-z0-9 -]*\d)(?=[A-Za-z0-9 -]*[A-Za-z])[A-Za-z0-9]+(?:[ -][A-Za-z0-9]+)*$|^\d+(?:-\d+)+$"
)
_ZERO_LEAD_RE = re.compile(r"^0\d+$")


def compact_code(s: str) -> str:
    return re.sub(r"[\s-]", "", s).upper()


@lru_cache(maxsize=4096)
def code_shape(ref: str) -> re.Pattern | None:
    """A pattern finding codes shaped like ``ref`` in any case, spacing or hyphenation: each run of
    letters or digits keeps its length, any separator (or none) may stand between runs. None when
    the reference is not a code (it needs letters and digits, or digits with a leading zero)."""
    r = ref.strip()
    if not (_REF_CODE_RE.match(r) or _ZERO_LEAD_RE.match(r)):
        return None
    if any(c.islower() for c in r) and not re.search(r"[A-Za-z]\d|\d[A-Za-z]", r):
        return None  # "3 cats", "Route 66": words with a number, not a code
    runs = re.findall(r"[A-Za-z]+|\d+", r)
    parts = [rf"[A-Za-z]{{{len(x)}}}" if x.isalpha() else rf"\d{{{len(x)}}}" for x in runs]
    return re.compile(r"(?<![A-Za-z0-9])" + r"[\s-]?".join(parts) + r"(?![A-Za-z0-9])")


#: any code-like run: upper-case letter and digit groups (joined by single spaces or hyphens) holding both
_ANY_CODE_RE = re.compile(
    r"(?<![A-Za-z0-9])(?=[A-Z0-9 -]*\d)(?=[A-Z0-9 -]*[A-Z])[A-Z0-9]+(?:[ -][A-Z0-9]+)*(?![A-Za-z0-9])"
)


def find_codes(text: str, shape: re.Pattern) -> list[Mention]:
    """Codes shaped like the reference in any case and spacing, and any other upper-case code-like
    run ("5SGR106" next to a reference "NBS-718"), so that a hedge between two codes is seen."""
    out = [Mention(compact_code(m.group(0)), m.start(), m.end()) for m in shape.finditer(text)]
    for m in _ANY_CODE_RE.finditer(text):
        if not any(x.start < m.end() and m.start() < x.end for x in out):
            out.append(Mention(compact_code(m.group(0)), m.start(), m.end()))
    return sorted(out, key=lambda x: x.start)


# --------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.:/]\d+)*|[^\W\d_]+|&")
_ARTICLES = frozenset(("the", "a", "an"))
_SPELLINGS = {"gray": "grey", "colour": "color", "colours": "colors", "favourite": "favorite", "centre": "center"}
#: first letters of folded words that other letters fold to ("gray" -> "grei", "&" -> "and")
_FOLDED_PREFIXES = frozenset([*(v[:3] for v in _SPELLINGS.values()), "and"])
_WORD_DIGITS = {w: str(i) for i, w in enumerate(NUMBER_WORDS)}
_TRAILING_ZEROS_RE = re.compile(r"(\d)\.0+$|(\.\d*?[1-9])0+$")


class Token(NamedTuple):
    norm: str
    start: int
    end: int


@lru_cache(maxsize=65536)
def fold(tok: str) -> str:
    """One token's normal form: lower case, "&" -> "and", number words zero..twenty as digits,
    thousands separators and trailing decimal zeros dropped, a few British/American spellings
    merged, and a light stemmer applied identically to both sides: plural endings go (ies -> i, es,
    s; not ss/us/is), then a final e, and a final y becomes i ("puppies"/"puppy", "boxes"/"box").
    Tokens of 3 characters or fewer and non-alphabetic tokens are not stemmed."""
    tok = tok.lower()
    if tok == "&":
        return "and"
    if tok in _WORD_DIGITS:
        return _WORD_DIGITS[tok]
    if tok[0].isdigit():
        tok = tok.replace(",", "")
        return _TRAILING_ZEROS_RE.sub(lambda m: m.group(1) or m.group(2), tok) if "." in tok else tok
    tok = _SPELLINGS.get(tok, tok)
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


@short_cache
def text_tokens(text: str, *, keep_articles: bool = False) -> list[Token]:
    """The word tokens of ``text`` in normal form (see :func:`fold`), with their spans; "&" is
    "and", punctuation separates tokens (kept inside numbers: "7:45", "2024/05/31", "1,500"),
    and the articles "the", "a", "an" are dropped unless ``keep_articles``."""
    toks = [Token(fold(m.group()), *m.span()) for m in _TOKEN_RE.finditer(text)]
    return toks if keep_articles else [t for t in toks if t.norm not in _ARTICLES]


@lru_cache(maxsize=16384)
def ref_tokens(ref: str) -> tuple[str, ...]:
    toks = tuple(t.norm for t in text_tokens(ref))
    return toks or tuple(t.norm for t in text_tokens(ref, keep_articles=True))


def normalize_text(s: str) -> str:
    """The text normal form the judge compares: the tokens of :func:`text_tokens`, space-joined."""
    return " ".join(t.norm for t in text_tokens(s))


def find_phrase(text: str, phrase: tuple[str, ...], tokens: list[Token] | None = None) -> list[tuple[int, int]]:
    """Spans of every word-bounded occurrence of the token sequence ``phrase`` in ``text``."""
    if not phrase:
        return []
    first = phrase[0]
    if tokens is None:  # a cheap test first: folding keeps a word's first three letters
        low = text.lower()
        if any(w.isalpha() and w[:3] not in _FOLDED_PREFIXES and w[:3] not in low for w in phrase):
            return []
    toks = tokens if tokens is not None else text_tokens(text, keep_articles=first in _ARTICLES)
    n = len(phrase)
    out = []
    for i in range(len(toks) - n + 1):
        if toks[i].norm == first and all(toks[i + j].norm == phrase[j] for j in range(1, n)):
            out.append((toks[i].start, toks[i + n - 1].end))
    return out
