"""Evidence phrasings for haystack mentions: the same clauses, at the same rates, carrying no fact.

Evidence mentions end in clauses that a question needs: a knowledge-update clause (", and it's the
café I go to before work now"), a date in words ("— that was on the third of March"), a start time
beside a clock ("; I had started at half past nine in the morning"). If only evidence used them, the
clause alone would point at the evidence. Haystack mentions get the same clauses, written with the
abilities' own phrase lists, at the rate the evidence mentions of the same image family use them
(counted on the built questions, :func:`measure_rates`), with values no question uses: knowledge-update
attributes never reserved by a question, dates no question or fact names, activities outside the
temporal questions' list, and a start time before the time the clock shows.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import date

from memlens.construction.abilities import ku, tr
from memlens.core.constants import ORDINAL_WORDS

#: the knowledge-update clause templates, as regular expressions over a mention
_KU_TAILS = tuple(ku.FIRST_TAILS) + tuple(ku.UPDATE_TAILS)
_KU_RE = tuple(
    re.compile(re.escape(t.split("{attr}")[0]) + r".+?" + re.escape(t.split("{attr}")[1]) + r"\b") for t in _KU_TAILS
)
_DATE_RE = re.compile(r"\bthe (" + "|".join(map(re.escape, ORDINAL_WORDS)) + r") of (" + "|".join(tr.MONTHS) + r")\b")
_STARTED_RE = re.compile(r"\bI had started at\b")
#: how temporal evidence attaches a date in words to an image (``tr`` entity facts)
DATE_TAILS = ("— that was on {dw}", "(from {dw})", ", taken on {dw}", "; that was back on {dw}")
#: activities a clock can mark the end of; none is one a temporal question asks about
ACTIVITIES = (
    "the ironing",
    "defrosting the freezer",
    "my language lesson",
    "the grocery run",
    "descaling the kettle",
    "my yoga class",
    "sorting the recycling",
    "the marmalade batch",
    "rearranging the bookshelves",
    "my knitting session",
    "washing the car",
    "the quarterly filing",
    "clearing the gutters",
    "the sourdough starter feed",
    "my sketching hour",
    "the podcast recording",
)
KINDS = ("update", "date", "started")


def kinds_in(text: str) -> set[str]:
    """Which evidence clause kinds a mention holds."""
    out = set()
    if any(r.search(text) for r in _KU_RE):
        out.add("update")
    if _DATE_RE.search(text):
        out.add("date")
    if _STARTED_RE.search(text):
        out.add("started")
    return out


def taken_dates(texts) -> set[tuple[int, int]]:
    """(month, day) of every date in words in ``texts`` (questions and facts): never reused."""
    out = set()
    for t in texts:
        for m in _DATE_RE.finditer(t):
            out.add((tr.MONTHS.index(m.group(2)) + 1, ORDINAL_WORDS.index(m.group(1)) + 1))
    return out


def measure_rates(mentions: list[tuple[str, str]]) -> dict[str, dict[str, float]]:
    """family -> clause kind -> share of the evidence mentions (``(family, text)``) holding it."""
    n: dict[str, int] = {}
    hits: dict[str, dict[str, int]] = {}
    for fam, text in mentions:
        n[fam] = n.get(fam, 0) + 1
        for k in kinds_in(text):
            hits.setdefault(fam, {}).setdefault(k, 0)
            hits[fam][k] += 1
    return {f: {k: hits.get(f, {}).get(k, 0) / n[f] for k in KINDS} for f in sorted(n)}


@dataclass
class Echoes:
    """Draws haystack clauses: ``rates`` from :func:`measure_rates`, ``reserved`` the questions'
    contexts (knowledge-update attributes among them), ``dates`` the (month, day) pairs in use."""

    rates: dict[str, dict[str, float]]
    reserved: set[str]
    dates: set[tuple[int, int]]

    def _update(self, rng: random.Random, family: str, truth: dict) -> str | None:
        cats = [c for c in ku.CATEGORIES if c.family == family]
        kind = truth.get("kind")
        if kind and any(c.variant == kind for c in cats):
            cats = [c for c in cats if c.variant == kind]
        if family == "named_sign" and kind == "shop_sign":  # the café clause for a café's sign
            text = str(truth.get("text", "")).lower()
            fit = [c for c in cats if any(t.lower() in text for t in c.extra.get("types", ()))]
            cats = fit or cats
        free = [
            (r[0], q) for c in cats for r in c.roles for q in c.quals if not ku.clashes(r[0].format(q=q), self.reserved)
        ]
        if not free:
            return None
        tpl, qual = free[rng.randrange(len(free))]
        return rng.choice(_KU_TAILS).format(attr=tpl.format(q=qual))

    def _date(self, rng: random.Random) -> str | None:
        free = [(m, d) for m in range(1, 13) for d in range(1, 29) if (m, d) not in self.dates]
        if not free:
            return None
        m, d = free[rng.randrange(len(free))]
        day = date(2001, m, d)
        return rng.choice(DATE_TAILS).format(dw=tr.date_words(day, day))

    def _started(self, rng: random.Random, truth: dict) -> str | None:
        h, m = truth.get("hour"), truth.get("minute")
        if not isinstance(h, int) or not isinstance(m, int) or not 0 <= h < 24:
            return None
        start = h * 60 + m - 5 * rng.randint(3, 30)
        start -= start % 5
        if start < 0 or (start < 12 * 60 <= h * 60 + m):  # same half of the day, as the temporal facts
            return None
        return f", which is when I finished {rng.choice(ACTIVITIES)}; I had started at {tr.time_words(f'{start // 60:02d}:{start % 60:02d}')}"

    def tail(self, rng: random.Random, family: str, truth: dict | None) -> str | None:
        """One clause for a haystack mention of an image of ``family`` (or None), drawn at the
        evidence rates of that family."""
        truth = truth or {}
        rates = self.rates.get(family, {})
        u = rng.random()
        acc = 0.0
        for kind in KINDS:
            acc += rates.get(kind, 0.0)
            if u < acc:
                if kind == "update":
                    return self._update(rng, family, truth)
                if kind == "date":
                    return self._date(rng)
                return self._started(rng, truth)
        return None
