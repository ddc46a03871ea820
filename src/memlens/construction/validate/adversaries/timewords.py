"""Dates a text-only reader can get from a session: its timestamp moved by the time words of a
sentence ("this morning", "yesterday evening", "on Friday", "three days ago") or a date written in
words ("the twelfth of August last year", "12 August 2023").

:func:`sentence_anchor` parses a sentence once into an anchor that :func:`resolve` turns into a
date for any session timestamp (the same session sits at different dates in different histories).
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

from memlens.core.constants import NUMBER_WORDS, ORDINAL_WORDS


def _ordinal_words() -> dict[str, int]:
    """Day ordinals as written: ``twenty-first`` and ``twenty first``."""
    out = {w: day for day, w in enumerate(ORDINAL_WORDS, 1)}
    return out | {w.replace("-", " "): day for w, day in out.items() if "-" in w}


ORDINAL_DAY = _ordinal_words()
MONTH_NO = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
WEEKDAY_NO = {d.lower(): i for i, d in enumerate(calendar.day_name)}
NUMBER_NO = {w: i for i, w in enumerate(NUMBER_WORDS[:20])} | {"a couple of": 2, "a few": 3}

_ORD = "|".join(sorted((re.escape(k) for k in ORDINAL_DAY), key=len, reverse=True))
_MON = "|".join(MONTH_NO)
_WDAY = "|".join(WEEKDAY_NO)
_NUM = "|".join(sorted((re.escape(k) for k in NUMBER_NO), key=len, reverse=True)) + r"|\d+"
_YEAR = r"(?:\s*,?\s*(?P<yl>last year)|\s*,?\s*(?P<y>(?:19|20)\d\d))?"

DATE_WORDS = re.compile(rf"\bthe (?P<d>{_ORD}) of (?P<m>{_MON}){_YEAR}", re.I)
DATE_NUM = re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<m>{_MON}){_YEAR}", re.I)
DATE_MD = re.compile(rf"\b(?P<m>{_MON}) (?P<d>\d{{1,2}})(?:st|nd|rd|th)?{_YEAR}", re.I)
REL = (
    (re.compile(r"\bthe day before yesterday\b", re.I), 2),
    (re.compile(r"\b(?:yesterday|last night)\b", re.I), 1),
    (re.compile(r"\b(?:this morning|this afternoon|this evening|tonight|today|earlier today|just now)\b", re.I), 0),
    (re.compile(r"\blast week\b", re.I), 7),
)
AGO = re.compile(rf"\b(?P<n>{_NUM}) (?P<u>days?|weeks?) ago\b", re.I)
WEEKDAY = re.compile(rf"\b(?:on|last|this past) (?P<w>{_WDAY})\b", re.I)


ANY = re.compile(
    rf"\b(?:{_MON}|{_WDAY}|ago|yesterday|last night|last week|this morning|this afternoon|this evening|tonight|today"
    r"|just now)\b",
    re.I,
)


def sentence_anchor(sentence: str) -> tuple | None:
    """``("abs", month, day, year|None, last_year)``, ``("back", days)``, ``("weekday", 0-6)`` or None."""
    if not ANY.search(sentence):
        return None
    for rx in (DATE_WORDS, DATE_NUM, DATE_MD):
        m = rx.search(sentence)
        if m:
            day = ORDINAL_DAY.get(m["d"].lower()) if rx is DATE_WORDS else int(m["d"])
            if day:
                return ("abs", MONTH_NO[m["m"].lower()], day, int(m["y"]) if m["y"] else None, bool(m["yl"]))
    m = AGO.search(sentence)
    if m:
        n = NUMBER_NO.get(m["n"].lower())
        n = int(m["n"]) if n is None else n
        return ("back", n * (7 if m["u"].lower().startswith("week") else 1))
    for rx, back in REL:
        if rx.search(sentence):
            return ("back", back)
    m = WEEKDAY.search(sentence)
    if m:
        return ("weekday", WEEKDAY_NO[m["w"].lower()])
    return None


def resolve(anchor: tuple | None, session_day: date) -> date:
    """The date an anchor names, read at a session held on ``session_day`` (None: that day)."""
    if anchor is None:
        return session_day
    kind = anchor[0]
    if kind == "back":
        return session_day - timedelta(days=anchor[1])
    if kind == "weekday":
        back = (session_day.weekday() - anchor[1]) % 7 or 7
        return session_day - timedelta(days=back)
    _, month, day, year, last_year = anchor
    y = year or (session_day.year - 1 if last_year else session_day.year)
    try:
        d = date(y, month, day)
    except ValueError:
        return session_day
    if year is None and not last_year and d > session_day:
        d = date(y - 1, month, min(day, 28)) if (month, day) == (2, 29) else date(y - 1, month, day)
    return d
