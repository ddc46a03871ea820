"""Temporal Reasoning (TR): joint reasoning over session timestamps, textual dates and visual
temporal artifacts, linked to the question through evidence images.

Official subtypes and their finer variants (``details.mode`` is the paper's generation mode):

- ``duration_comparison`` ("Which lasted longer: (A) ... or (B) ...?", reference ``A``/``B``):
  ``mode_B`` (every endpoint printed on an artifact: boarding passes of a trip, a calendar page with
  a start and an end mark, receipts, event tickets), ``mode_C`` (entity images whose fact states a
  textual date, plus at least one artifact endpoint), ``mode_D`` (entity images anchored by their
  session timestamp, plus at least one artifact endpoint), ``mode_B_clock`` (two activities timed
  from a textual start to the time on a clock photo; minutes).
  Both options are intervals of one kind with endpoints of one kind (one artifact kind, one entity
  kind), so their turns are worded alike and the text cannot tell which dates belong to which
  option; the letter is balanced per build (``want``, :mod:`.balance`).
- ``order_ranking`` ("Put these events in the order they happened: (1) ... (2) ...", reference
  ``(2)(3)(1)``, a uniform permutation): 3-5 events of one artifact kind whose dates are printed
  only (``mode_B_show`` / ``mode_B_flight`` / ``mode_B_receipt`` / ``mode_B_calendar``): no written
  date or time phrase in their turns, their sessions in a block before (tickets) or after all of
  them in a random order, their facts in a random order, each named by what its image prints
  (show, destination, store, calendar label). Modes C and D would date events in the text or by
  their sessions, which orders them up to which image is which; they are not planned here.
- ``temporal_info_extraction`` ("When did I ...? Answer in YYYY/MM/DD."): ``B_calendar``,
  ``B_ticket``, ``B_receipt`` (the date is printed only in the image, and the image is also what
  the question names). Modes C and D are not planned here: a textual date names the answer, and a
  session-anchored one ("the sign I saw this morning") narrows it to one of the few evidence
  sessions' dates, so a reader handed the evidence text without its images guesses it at
  1 / (1 + decoys); mode D's session anchors are tested by duration comparison instead.

Why text alone cannot answer: every question names things that only images show (a shop sign or
book cover, the destination on a boarding pass, a show on a ticket, a store on a receipt, a label
on a calendar); entity and store names are drawn from lists the haystack image samplers never use,
so each is shown by exactly one image of the history. Artifact dates are never the date of the
session that shares them. Mode C textual dates are stated, but which entity they belong to is
visible only in the image; they never equal a reference answer (TR answers that are dates come
from artifacts or session timestamps only).

Time line: the plan fixes the question date and every evidence session's exact timestamp
(``FactDraft.at``), all inside the haystack's window and strictly before the question date, one
session per day; printed dates are constrained into the images. Only contexts a question names are
reserved (the calendar page of a calendar question); the occasion of a ticket, receipt or place is
never named, so it is drawn from the shared phrase space without using it up, and a time suffix
(" last month", " in spring", ...) is used only when true; a weekday (" on Friday") never is,
since with the session's date it names the day. Dates and times in mentions are written
in words (no digits), and the subtopic avoids strings that images print (see :func:`_subtopic`).

Derivations: ``get`` on artifact truths, ``const`` for textual dates/times, ``fact_date`` (and
``date_add``) for session anchors, combined by ``longer`` / ``order``. Entity anchors are wrapped in
a ``pick`` (select the value whose image shows the named entity) when the derivation module
provides that op (see :data:`HAS_PICK`).
"""

from __future__ import annotations

import calendar as _calendar
import itertools
import random
import re
from datetime import date, datetime, timedelta
from functools import lru_cache

from memlens.construction.abilities import contexts as ctxs
from memlens.construction.abilities.base import Ability, Draft, FactDraft, ImageRequest, Plan, pick
from memlens.construction.abilities.derive import derive
from memlens.construction.images.synthetic import vocab
from memlens.construction.images.synthetic.formats import MONTHS
from memlens.construction.images.truth import printed_strings
from memlens.construction.text import textbank
from memlens.construction.text.leakage import PhraseIndex
from memlens.construction.text.validators import contains_token_bounded
from memlens.core.constants import HISTORY_SPAN_DAYS, NUMBER_WORDS, ORDINAL_WORDS
from memlens.core.registry import component
from memlens.core.schema import IMAGE_PLACEHOLDER, TR, Question, format_date, parse_date

# --------------------------------------------------------------------------------------------------
# Time line
# --------------------------------------------------------------------------------------------------
EPOCH = datetime(2024, 1, 1, 8, 0)
WINDOW = 225  # evidence sessions and events stay inside this many days
#: clock hours in words, index = hour % 12
HOUR_WORDS = (NUMBER_WORDS[12], *NUMBER_WORDS[1:12])
MINUTE_WORDS = {5: "five", 10: "ten", 20: "twenty", 25: "twenty-five"}
CHANCE_WINDOW_DAYS = 180

# --------------------------------------------------------------------------------------------------
# Names only these questions use (the haystack image samplers draw from memlens.construction.images.synthetic.vocab,
# so none of these is ever shown by a haystack image)
# --------------------------------------------------------------------------------------------------
NAME_WORDS = [
    "Pemberton",
    "Kestrel",
    "Marlowe",
    "Thistle",
    "Brackenridge",
    "Halloran",
    "Vesper",
    "Ashgrove",
    "Calloway",
    "Dunmore",
    "Everly",
    "Fenwick",
    "Galloway",
    "Hartwell",
    "Lindqvist",
    "Mirabel",
    "Norcross",
    "Oakhurst",
    "Pellham",
    "Rosewick",
    "Quillon",
    "Tamsin",
    "Upton",
    "Wexford",
    "Yarrow",
    "Bellamy",
    "Corliss",
    "Larkspur",
    "Montague",
    "Whitlock",
    "Aldous",
    "Brightwater",
]
#: entity shop signs: type -> occasion words that would hint at it (never paired with it)
ENTITY_SHOPS = {
    "Barbers": [],
    "Tailors": ["wedding"],
    "Opticians": [],
    "Records": ["flea", "night market"],
    "Florist": ["garden"],
    "Gelato": ["beach", "kiosk"],
    "Framing": ["museum"],
    "Cobblers": [],
    "Pottery": ["craft"],
    "Tea Room": ["brunch", "cafe"],
    "Deli": ["picnic", "grocery"],
    "Bistro": ["dinner", "lunch", "brunch", "food"],
}
BOOK_A = [
    "The Amber",
    "The Velvet",
    "A Distant",
    "The Ninth",
    "The Wandering",
    "Under the Pale",
    "The Iron",
    "The Painted",
    "The Forgotten",
    "A Season of",
]
BOOK_B = [
    "Compass",
    "Lagoon",
    "Meridian",
    "Canyon",
    "Harvest",
    "Bellwether",
    "Citadel",
    "Monsoon",
    "Carousel",
    "Thicket",
    "Aviary",
    "Quarry",
]
BOOK_CLASH = ["book", "library"]
#: receipt store types -> occasion words that would hint at them
STORE_CLASH = {
    "bakery": ["bakery"],
    "cafe": ["cafe", "brunch"],
    "grocery": ["grocery", "market"],
    "pharmacy": ["pharmacy"],
    "hardware": ["hardware", "garden"],
    "restaurant": ["dinner", "lunch", "brunch", "food"],
    "bookstore": ["book"],
}
CITIES = [
    ("Valletta", "MLA"),
    ("Ljubljana", "LJU"),
    ("Tallinn", "TLL"),
    ("Porto", "OPO"),
    ("Bergen", "BGO"),
    ("Gdansk", "GDN"),
    ("Bologna", "BLQ"),
    ("Seville", "SVQ"),
    ("Krakow", "KRK"),
    ("Riga", "RIX"),
    ("Vilnius", "VNO"),
    ("Salzburg", "SZG"),
    ("Nantes", "NTE"),
    ("Naples", "NAP"),
    ("Marrakesh", "RAK"),
    ("Granada", "GRX"),
    ("Dubrovnik", "DBV"),
    ("Tbilisi", "TBS"),
    ("Bordeaux", "BOD"),
]
SHOWS = {
    "concert": [
        "The Marigold Quartet",
        "Velvet Static",
        "Northbound Choir",
        "The Amber Lanterns",
        "Saltwater Strings",
        "Paper Kites Revival",
    ],
    "theatre": ["The Clockmaker's Daughter", "A Lantern in Winter", "The Cartographer's Wife", "Salt and Sorrel"],
    "sports": ["Kestrel Rovers vs Ashford Town", "Harbourside Hawks vs Millbrook"],
    "exhibition": ["Shapes of Water", "Northern Weaves", "The Printmakers' Year"],
    "festival": ["Lantern River Festival", "Orchard Harvest Fair", "Tidewater Folk Weekend"],
}
SHOW_NOUN = {
    "concert": "concert",
    "theatre": "play",
    "sports": "match",
    "exhibition": "exhibition",
    "festival": "festival",
}
CAL_LABELS = [
    "Pottery class",
    "Dentist",
    "Eye exam",
    "Tax filing",
    "Guitar lesson",
    "Vet visit",
    "Plumber visit",
    "Flu shot",
    "Team offsite",
    "Language exam",
    "Photo shoot",
    "Charity run",
    "Wine tasting",
    "Boiler check",
    "Open day",
    "Choir concert",
    "Blood test",
    "Bike service",
    "Visa appointment",
    "Quiz night",
]
CAL_SPANS = [
    ("Course starts", "Course ends", "course"),
    ("House-sit begins", "House-sit ends", "house-sitting stint"),
    ("Renovation starts", "Renovation done", "renovation"),
    ("Guests arrive", "Guests leave", "guests' stay"),
    ("Project kickoff", "Project due", "project"),
    ("Leave starts", "Back to work", "time off"),
    ("Training starts", "Race day", "race training"),
    ("Detox starts", "Detox ends", "detox challenge"),
]
#: how ``contexts.thing_for`` introduces an occasion for these families
OCCASION_NOUN = {"receipt": "the receipt from", "named_sign": "the place from", "ticket": "the ticket for"}
ACTIVITIES = [
    "the laundry",
    "proofing the bread dough",
    "my study session",
    "the long video call",
    "assembling the bookshelf",
    "the slow-cooker stew",
    "my piano practice",
    "repotting the plants",
    "the jigsaw puzzle",
    "painting the fence",
    "the batch of jam",
    "sorting the garage",
]


# --------------------------------------------------------------------------------------------------
# Derivation helpers
# --------------------------------------------------------------------------------------------------
def _probe_pick() -> bool:
    """Whether the derivation module has the ``pick`` op (select the value whose key matches)."""
    prog = {
        "op": "pick",
        "match": "x",
        "cases": [[{"op": "get", "img": 0, "path": ["text"]}, {"op": "const", "value": "1"}]],
    }
    try:
        return derive(prog, [None]) is None and derive(prog, [{"text": "X"}]) == "1"
    except Exception:  # unknown op
        return False


#: ``pick`` is available: entity anchors carry their image dependency in the derivation
HAS_PICK = _probe_pick()


def _get(img: int, *path) -> dict:
    return {"op": "get", "img": img, "path": list(path)}


def _const(v: str) -> dict:
    return {"op": "const", "value": v}


def _fact_date(k: int, back: int = 0) -> dict:
    p = {"op": "fact_date", "fact": k}
    return {"op": "date_add", "date": p, "days": -back} if back else p


# --------------------------------------------------------------------------------------------------
# Small text helpers
# --------------------------------------------------------------------------------------------------
def _day(s: str) -> date:
    return datetime.strptime(s, "%Y/%m/%d").date()


def _ds(d: date) -> str:
    return d.strftime("%Y/%m/%d")


def date_words(d: date, anchor: date) -> str:
    """'the third of March' (+ ' last year' when the anchor is in a later year); no digits."""
    s = f"the {ORDINAL_WORDS[d.day - 1]} of {MONTHS[d.month - 1]}"
    if d.year < anchor.year:
        s += " last year" if d.year == anchor.year - 1 else f" {d.year}"
    return s


def time_words(hhmm: str) -> str:
    """'a quarter past nine in the morning' for 24 h 'HH:MM' (minutes a multiple of 5)."""
    h, m = (int(x) for x in hhmm.split(":"))
    part = "in the morning" if h < 12 else ("in the afternoon" if h < 18 else "in the evening")
    nxt = HOUR_WORDS[(h + 1) % 12]
    cur = HOUR_WORDS[h % 12]
    if m == 0:
        s = f"{cur} o'clock"
    elif m == 15:
        s = f"a quarter past {cur}"
    elif m == 30:
        s = f"half past {cur}"
    elif m == 45:
        s = f"a quarter to {nxt}"
    elif m < 30:
        s = f"{MINUTE_WORDS[m]} past {cur}"
    else:
        s = f"{MINUTE_WORDS[60 - m]} to {nxt}"
    return f"{s} {part}"


def show_phrase(name: str, etype: str) -> str:
    """'the "Velvet Static" concert', '"The Printmakers' Year" exhibition', 'the "Lantern River Festival"'."""
    noun = SHOW_NOUN[etype]
    art = "" if name.startswith(("The ", "A ")) else "the "
    return f'{art}"{name}"' + ("" if name.lower().endswith(noun) else f" {noun}")


def answer_forms(ans: str) -> list[str]:
    """Text forms of a YYYY/MM/DD answer (all of them are forbidden in the history)."""
    d = _day(ans)
    mon = MONTHS[d.month - 1]
    return [
        ans,
        d.strftime("%Y-%m-%d"),
        f"{mon} {d.day}, {d.year}",
        f"{d.day} {mon} {d.year}",
        f"{mon[:3]} {d.day}, {d.year}",
        f"{d.day} {mon[:3]} {d.year}",
    ]


def _render_mention(
    rng: random.Random, family: str, thing: str, when: str | None, tail: str | None, force_when: bool
) -> str:
    """A mention in the shared haystack phrasing (``textbank`` templates); ``force_when`` picks a
    template that states ``when`` (mode D: the session's own day is the anchor)."""
    kind = ctxs.mention_kind(family)
    return textbank.render_mention(rng, kind=kind, thing=thing, when=when, tail=tail, require_when=force_when)


# --------------------------------------------------------------------------------------------------
# Plan building blocks
# --------------------------------------------------------------------------------------------------
def _clashes(c: str, taken) -> bool:
    """Same rule as ``contexts``: a context clashes with a taken one when either contains the other."""
    return c in taken or any(c in r or r in c for r in taken)


class _Retry(Exception):
    """The sampled time line does not fit; sample again (same rng stream, so deterministic)."""


class _Builder:
    """Accumulates facts (one image, one session each) and events for one plan."""

    def __init__(self, rng: random.Random, reserved: set[str]):
        self.rng = rng
        self.reserved = reserved
        self.qdt = EPOCH + timedelta(
            days=HISTORY_SPAN_DAYS + rng.randrange(700), hours=rng.randrange(0, 13), minutes=rng.randrange(60)
        )
        self.q0 = self.qdt.date()
        self.lo = self.q0 - timedelta(days=WINDOW)
        self.hi = self.q0 - timedelta(days=1)
        self.facts: list[dict] = []
        self.events: list[dict] = []
        self.used_words: set[str] = set()
        self.used_names: set[str] = set()
        self.session_days: set[date] = set()
        self.new_ctx: list[str] = []  # contexts this question reserves (it names them)
        self.used_ctx: set[str] = set()
        self.forbidden: list[str] = []
        self.sources: set[str] = set()
        # the user: one home airport; the name on every pass and ticket is the benchmark's persona
        # (memlens.construction.images.persona, set by the crawl stage)
        self.home = pick(rng, vocab.CITIES)
        # one show type, store type and entity kind per question: events of one question are told
        # apart only by what their images print, never by the wording of their turns
        self.fixed: dict[str, str] = {}

    def _fixed(self, key: str, draw) -> str:
        if key not in self.fixed:
            self.fixed[key] = draw()
        return self.fixed[key]

    # ---------------------------------------------------------------- names
    def _word(self) -> str:
        free = [w for w in NAME_WORDS if w not in self.used_words]
        w = pick(self.rng, free)
        self.used_words.add(w)
        return w

    def _fresh(self, make) -> str:
        for _ in range(200):
            v = make()
            if v not in self.used_names:
                self.used_names.add(v)
                return v
        raise _Retry("names exhausted")

    # ---------------------------------------------------------------- contexts
    def _ctx(
        self,
        family: str,
        avoid: list[str],
        event_day: date | None = None,
        session_day: date | None = None,
        reserve: bool = False,
        kind: str | None = None,
    ) -> tuple[str, str]:
        """(thing, context phrase) drawn like ``contexts.thing_for`` draws them.

        Only contexts the question names are reserved (calendar pages: the question says which
        calendar); the others (the occasion of a ticket, receipt or place, a clock's room) are
        never referred to, since the question names what only the image shows, so they may
        repeat elsewhere and need not use up the shared context space. Phrases reserved by other
        questions are still avoided while free ones remain. An occasion's time suffix
        (" last month", " in spring", " back in winter") is used only when it is true of the event as
        seen from the session; never a weekday, which with the session's date names the day."""
        if family in OCCASION_NOUN:
            suffixes = [""]
            if event_day is not None and session_day is not None and session_day > event_day:
                gap = (session_day - event_day).days
                prev = session_day.replace(day=1) - timedelta(days=1)
                if (event_day.year, event_day.month) == (prev.year, prev.month):
                    suffixes.append(" last month")
                if (
                    event_day.month in (3, 4, 5)
                    and session_day.month in (3, 4, 5, 6)
                    and event_day.year == session_day.year
                ):
                    suffixes.append(" in spring")
                if event_day.month in (12, 1, 2) and session_day.month in range(3, 11) and gap >= 45:
                    suffixes.append(" back in winter")

            def draw():
                occ = (
                    pick(self.rng, ctxs.OCCASIONS)
                    + pick(self.rng, ["", f" with {pick(self.rng, ctxs.PEOPLE)}"])
                    + pick(self.rng, suffixes)
                )
                return f"{ctxs.occasion_noun(family, kind)} {occ}", occ
        else:

            def draw():
                return ctxs.thing_for(self.rng, family, None)

        fallback = None
        for _i in range(300):
            thing, ctx = draw()
            if any(a in ctx.lower() for a in avoid):
                continue
            if _clashes(ctx, self.reserved) or _clashes(ctx, self.used_ctx):
                fallback = fallback or (thing, ctx)
                continue
            break
        else:
            if reserve or fallback is None:
                raise RuntimeError(f"TR: no free {family} context; enlarge memlens.construction.abilities.contexts")
            thing, ctx = fallback
        self.used_ctx.add(ctx)
        if reserve:
            self.reserved.add(ctx)
            self.new_ctx.append(ctx)
        return thing, ctx

    # ---------------------------------------------------------------- sessions
    def _session_at(self, day: date, hours=(8, 22)) -> str:
        if not (self.lo <= day <= self.hi) or day in self.session_days:
            raise _Retry("session day")
        self.session_days.add(day)
        t = datetime(day.year, day.month, day.day, self.rng.randrange(*hours), self.rng.randrange(60))
        return format_date(t)

    def _in_window(self, d: date) -> None:
        if not (self.lo <= d <= self.hi):
            raise _Retry("event day")

    def _fact(
        self, family: str, constraints: dict, at: str, thing: str, ctx: str, *, when=None, force_when=False, tail=None
    ) -> int:
        self.facts.append(
            {
                "family": family,
                "constraints": constraints,
                "at": at,
                "thing": thing,
                "ctx": ctx,
                "when": when,
                "force_when": force_when,
                "tail": tail,
            }
        )
        return len(self.facts) - 1

    def _event(self, **ev) -> dict:
        self.events.append(ev)
        return ev

    def _loose_when(self, event_day: date, session_day: date) -> str | None:
        """A haystack-style 'when' consistent with a session shortly after the event, or none."""
        gap = (session_day - event_day).days
        if 2 <= gap <= 4 and self.rng.random() < 0.5:
            return "the other day"
        return None

    # ---------------------------------------------------------------- artifacts (mode B cues)
    def flight(
        self, day: date, shared: str = "any", city=None, home=None, back=False, sday: date | None = None
    ) -> dict:
        """A boarding pass dated ``day``; ``back`` = the return leg from ``city`` to ``home``.
        ``sday``: the day of the session that shares it, given (then its turn carries no time
        phrase: the date is only printed), else drawn near the flight."""
        self._in_window(day)
        if city is None:
            name, code = self._fresh_city()
        else:
            name, code = city
        hname, hcode, _ = home or self.home
        plain = sday is not None
        if not plain:
            sday = self._share_day(day, shared, before=(1, 6), after=(1, 15))
        thing, ctx = self._ctx("ticket", [], None if plain else day, sday)
        cons = {
            "kind": "boarding_pass",
            "date": _ds(day),
            "from_code": code if back else hcode,
            "from_city": name if back else hname,
            "to_code": hcode if back else code,
            "to_city": hname if back else name,
        }
        when = None if plain or sday <= day else self._loose_when(day, sday)
        k = self._fact("ticket", cons, self._session_at(sday), thing, ctx, when=when)
        self.forbidden.append(name)
        self.sources.add("ticket")
        return self._event(
            fact=k, src="get", path=["date"], day=_ds(day), desc=f"flying to {name}", city=name, code=code
        )

    def _fresh_city(self) -> tuple[str, str]:
        free = [c for c in CITIES if c[0] not in self.used_names]
        if not free:
            raise _Retry("cities exhausted")
        c = pick(self.rng, free)
        self.used_names.add(c[0])
        return c

    def show(self, day: date, shared: str = "any", sday: date | None = None) -> dict:
        """An event ticket dated ``day`` (``sday`` as for :meth:`flight`)."""
        self._in_window(day)
        etype = self._fixed("etype", lambda: pick(self.rng, sorted(SHOWS)))
        name = self._fresh(lambda: pick(self.rng, SHOWS[etype]))
        plain = sday is not None
        if not plain:
            sday = self._share_day(day, shared, before=(2, 25), after=(1, 15))
        thing, ctx = self._ctx("ticket", [], None if plain else day, sday)
        cons = {"kind": "event_ticket", "event": name, "event_type": etype, "date": _ds(day)}
        when = None if plain or sday <= day else self._loose_when(day, sday)
        k = self._fact("ticket", cons, self._session_at(sday), thing, ctx, when=when)
        self.forbidden.append(name)
        self.sources.add("ticket")
        return self._event(fact=k, src="get", path=["date"], day=_ds(day), desc=show_phrase(name, etype), show=name)

    def receipt(self, day: date, sday: date | None = None) -> dict:
        """A receipt dated ``day``, shared after it (``sday`` as for :meth:`flight`)."""
        self._in_window(day)
        stype = self._fixed("stype", lambda: pick(self.rng, sorted(STORE_CLASH)))
        suffix = pick(self.rng, vocab.STORES[stype][0])
        name = self._fresh(lambda: f"{self._word()} {suffix}")
        plain = sday is not None
        if plain and sday <= day:
            raise ValueError("TR: a receipt is shared after the purchase")
        if not plain:
            sday = day + timedelta(days=self.rng.randint(2, 30))
        thing, ctx = self._ctx("receipt", STORE_CLASH[stype], None if plain else day, sday)
        cons = {
            "store": name,
            "store_type": stype,
            "date": _ds(day),
            "time": f"{self.rng.randint(8, 20):02d}:{self.rng.randrange(60):02d}",
        }
        when = None if plain else self._loose_when(day, sday)
        k = self._fact("receipt", cons, self._session_at(sday), thing, ctx, when=when)
        self.forbidden.append(name)
        self.sources.add("receipt")
        return self._event(fact=k, src="get", path=["date"], day=_ds(day), desc=f"shopping at {name}", store=name)

    def calendar(self, days: list[date], labels: list[str], extra_marks: int = 0) -> list[dict]:
        """One calendar page (all ``days`` in one month) with a labelled mark per day."""
        for d in days:
            self._in_window(d)
        y, m = days[0].year, days[0].month
        if any((d.year, d.month) != (y, m) for d in days):
            raise _Retry("calendar month")
        marks = [{"date": _ds(d), "label": lab} for d, lab in zip(days, labels)]
        ndays = _calendar.monthrange(y, m)[1]
        taken = {d.day for d in days}
        others = [lab for lab in CAL_LABELS if lab not in labels and lab not in self.used_names]
        for _ in range(extra_marks):
            free = [x for x in range(1, ndays + 1) if x not in taken]
            dd = pick(self.rng, free)
            taken.add(dd)
            lab = pick(self.rng, others)
            others.remove(lab)
            self.used_names.add(lab)
            marks.append({"date": _ds(date(y, m, dd)), "label": lab})
        marks.sort(key=lambda mk: mk["date"])
        first, last = min(days), max(days)
        if self.rng.random() < 0.5:
            sday = first - timedelta(days=self.rng.randint(2, 25))
        else:
            sday = last + timedelta(days=self.rng.randint(2, 15))
        thing, ctx = self._ctx("calendar_page", [], reserve=True)
        k = self._fact("calendar_page", {"year": y, "month": m, "marked": marks}, self._session_at(sday), thing, ctx)
        self.sources.add("calendar_page")
        return [
            self._event(fact=k, src="calendar", label=lab, day=_ds(d), desc=f'the "{lab}" marked on {ctx}', ctx=ctx)
            for d, lab in zip(days, labels)
        ]

    def session_block(self, days: list[date], before: bool, span: int = 40) -> list[date]:
        """Session days for events on ``days``: distinct days all before the first event or all
        after the last (within ``span`` days of it), dealt to the events in a random order, so the
        order of the sessions says nothing about the order of the events."""
        if before:
            lo, hi = max(self.lo, min(days) - timedelta(days=span)), min(days) - timedelta(days=1)
        else:
            lo, hi = max(days) + timedelta(days=1), min(self.hi, max(days) + timedelta(days=span))
        free = [lo + timedelta(days=k) for k in range((hi - lo).days + 1)]
        free = [d for d in free if d not in self.session_days]
        if len(free) < len(days):
            raise _Retry("session block")
        return self.rng.sample(free, len(days))

    def _share_day(self, day: date, shared: str, before, after) -> date:
        if shared == "any":
            shared = "before" if self.rng.random() < 0.5 else "after"
        if shared == "before":
            return day - timedelta(days=self.rng.randint(*before))
        return day + timedelta(days=self.rng.randint(*after))

    def artifact(self, day: date, kinds=("flight", "show", "receipt", "calendar"), sday: date | None = None) -> dict:
        """An artifact dated ``day``; every artifact of a question is of one kind (``sday`` as
        for :meth:`flight`; not for a calendar)."""
        kind = self._fixed("artifact", lambda: pick(self.rng, list(kinds)))
        if kind == "flight":
            return self.flight(day, sday=sday)
        if kind == "show":
            return self.show(day, sday=sday)
        if kind == "receipt":
            return self.receipt(day, sday=sday)
        lab = pick(self.rng, [x for x in CAL_LABELS if x not in self.used_names])
        self.used_names.add(lab)
        return self.calendar([day], [lab], extra_marks=self.rng.choice([0, 0, 1]))[0]

    # ---------------------------------------------------------------- entities (modes C and D)
    def _entity_kind(self, kind: str | None = None) -> tuple[str, dict, str, str, list[str]]:
        """(name, named_sign constraints, event phrase for lists, question phrase, clash words);
        ``kind`` forces a shop sign or a book cover."""
        if kind is None:
            kind = self._fixed("entity", lambda: "shop_sign" if self.rng.random() < 0.7 else "book_cover")
        if kind == "shop_sign":
            stype = pick(self.rng, sorted(ENTITY_SHOPS))
            name = self._fresh(lambda: f"{self._word()} {stype}")
            return (
                name,
                {"kind": "shop_sign", "text": name},
                f"visiting {name}",
                f"visit {name}",
                ENTITY_SHOPS[stype] + [stype.lower()],
            )
        title = self._fresh(lambda: f"{pick(self.rng, BOOK_A)} {pick(self.rng, BOOK_B)}")
        return (
            title,
            {"kind": "book_cover", "text": title},
            f'finding the book "{title}"',
            f'come across the book "{title}"',
            BOOK_CLASH,
        )

    def entity_c(self, day: date) -> dict:
        """Mode C: the fact states the date in words; only the image says which entity it was."""
        self._in_window(day)
        name, cons, desc, qphrase, avoid = self._entity_kind()
        sday = day + timedelta(days=self.rng.randint(3, 45))
        thing, ctx = self._ctx("named_sign", avoid, kind=cons["kind"])
        dw = date_words(day, sday)
        tail = pick(self.rng, [f"— that was on {dw}", f"(from {dw})", f", taken on {dw}", f"; that was back on {dw}"])
        k = self._fact("named_sign", cons, self._session_at(sday), thing, ctx, tail=tail)
        self.forbidden.append(name)
        self.sources.add("textual_date")
        return self._event(fact=k, src="textual", day=_ds(day), desc=desc, qphrase=qphrase, entity=name)

    def entity_d(self, day: date, anchor: str = "today", kind: str | None = None) -> dict:
        """Mode D: the session's own timestamp dates the entity ('... from this morning')."""
        self._in_window(day)
        name, cons, desc, qphrase, avoid = self._entity_kind(kind)
        k = cons["kind"]
        if anchor == "today":
            back, when, force = 0, "this morning", True
            thing, ctx = self._ctx("named_sign", avoid, kind=k)
            at = self._session_at(day, hours=(12, 22))
        elif anchor == "yesterday":
            back, when, force = 1, "yesterday evening", True
            thing, ctx = self._ctx("named_sign", avoid, kind=k)
            at = self._session_at(day + timedelta(days=1))
        else:
            raise ValueError(anchor)
        k = self._fact("named_sign", cons, at, thing, ctx, when=when, force_when=force)
        self.forbidden.append(name)
        self.sources.add("session_timestamp")
        if back:
            self.sources.add("relative_expression")
        return self._event(
            fact=k, src="session", back=back, day=_ds(day), desc=desc, qphrase=qphrase, entity=name, anchor=anchor
        )

    def entity(self, mode: str, day: date) -> dict:
        if mode == "C":
            return self.entity_c(day)
        return self.entity_d(day, "today" if self.rng.random() < 0.8 else "yesterday")

    # ---------------------------------------------------------------- days
    def rand_day(self, lo_pad: int = 50, hi_pad: int = 2) -> date:
        span = WINDOW - lo_pad - hi_pad
        return self.lo + timedelta(days=lo_pad + self.rng.randrange(span))

    def distinct_days(self, n: int, gap: int = 3, lo_pad: int = 50, hi_pad: int = 2) -> list[date]:
        for _ in range(200):
            ds = sorted(self.rand_day(lo_pad, hi_pad) for _ in range(n))
            if all((b - a).days >= gap for a, b in itertools.pairwise(ds)):
                return ds
        raise _Retry("days")

    def plan_images(self) -> list[ImageRequest]:
        return [ImageRequest(f["family"], dict(f["constraints"])) for f in self.facts]


@lru_cache(maxsize=1)
def _generic_drawn() -> frozenset[str]:
    """Strings that images of any family print again and again ("BOARDING PASS", "FESTIVAL",
    "ADMIT ONE", weekday headers): the distractor images the generate stage adds to an evidence
    session are checked against its text too."""
    from collections import Counter

    from memlens.construction.images.synthetic import FAMILIES, get_family
    from memlens.construction.images.truth import drawn_values

    rng = random.Random(20240531)
    seen: Counter = Counter()
    for fam in sorted(FAMILIES):
        for _ in range(100):
            seen.update(set(drawn_values(get_family(fam).sample(rng))))
    return frozenset(v for v, n in seen.items() if n >= 4)


def _subtopic(rng: random.Random, topic, requests: list[ImageRequest]) -> str:
    """A subtopic whose words do not name a string these images always print ("BOARDING PASS",
    "ADMIT ONE", ...): session text about it would repeat what only the image should show, and
    the writer's semantic-leakage check could never admit the turn."""
    from memlens.construction.images.synthetic import get_family
    from memlens.construction.images.truth import drawn_values

    vrng = random.Random(rng.getrandbits(64))
    drawn = {
        v for r in requests for _ in range(2) for v in drawn_values(get_family(r.family).sample(vrng, **r.constraints))
    } | _generic_drawn()
    options = topic.subtopics or [topic.title]
    printed = PhraseIndex(drawn)  # one index of them all: any(contains_token_bounded(...)) at once
    ok = [sub for sub in options if not printed.find(f"{topic.title} {sub}")]
    return pick(rng, ok or options)


def _shuffle_facts(rng: random.Random, b: _Builder, latent: dict) -> None:
    """Put the facts (the images, the evidence list) in a random order: the order they were
    drawn in follows the events' order, the options' order or puts a target first."""
    perm = list(range(len(b.facts)))
    rng.shuffle(perm)  # new position i holds old fact perm[i]
    new_of = {old: new for new, old in enumerate(perm)}
    b.facts[:] = [b.facts[old] for old in perm]
    for ev in b.events:
        ev["fact"] = new_of[ev["fact"]]


def _sample(rng: random.Random, make):
    for _ in range(400):
        try:
            return make()
        except _Retry:
            continue
    raise RuntimeError("TR: could not fit a time line (400 attempts)")


# --------------------------------------------------------------------------------------------------
# The ability
# --------------------------------------------------------------------------------------------------


@component("question_type", "temporal_reasoning")
class TemporalReasoning(Ability):
    question_type = TR
    variants = {
        "duration_comparison": ["mode_B", "mode_C", "mode_D", "mode_B_clock"],
        "order_ranking": ["mode_B_show", "mode_B_flight", "mode_B_receipt", "mode_B_calendar"],
        "temporal_info_extraction": ["B_calendar", "B_ticket", "B_receipt"],
    }
    _ART = ["ticket", "calendar_page", "receipt"]
    families = {
        "mode_B": _ART,
        "mode_C": ["named_sign"] + _ART,
        "mode_D": ["named_sign"] + _ART,
        "mode_B_clock": ["clock"],
        "mode_B_show": ["ticket"],
        "mode_B_flight": ["ticket"],
        "mode_B_receipt": ["receipt"],
        "mode_B_calendar": ["calendar_page"],
        "B_calendar": ["calendar_page"],
        "B_ticket": ["ticket"],
        "B_receipt": ["receipt"],
    }

    # ------------------------------------------------------------------------------------ plan
    def answer_classes(self, subtype, variant):
        """Duration comparison's letters, balanced per build (:mod:`memlens.construction.abilities.balance`)."""
        return ("A", "B") if subtype == "duration_comparison" else None

    def plan(self, rng, topic, subtype, variant, plan_id, reserved, want: str | None = None):
        """``want``: the letter a duration comparison answers (balanced per build); None draws it."""
        makers = {
            "duration_comparison": self._plan_dc,
            "order_ranking": self._plan_or,
            "temporal_info_extraction": self._plan_tie,
        }
        if subtype not in makers:
            raise ValueError(f"TR: unknown subtype {subtype!r}")
        if want is not None and want not in (self.answer_classes(subtype, variant) or ()):
            raise ValueError(f"TR: {subtype}/{variant} cannot be planned to answer {want!r}")

        def attempt():
            trial = set(reserved)
            b = _Builder(rng, trial)
            latent = makers[subtype](b, variant, want) if want is not None else makers[subtype](b, variant)
            return b, latent

        b, latent = _sample(rng, attempt)
        _shuffle_facts(rng, b, latent)
        subtopic = _subtopic(rng, topic, b.plan_images())
        reserved.update(b.new_ctx)
        latent.update(
            {
                "qdate": format_date(b.qdt),
                "facts": b.facts,
                "events": b.events,
                "contexts": b.new_ctx,
                "forbidden": b.forbidden,
                "sources": sorted(b.sources),
            }
        )
        return Plan(plan_id, TR, subtype, variant, topic.topic_id, subtopic, b.plan_images(), latent)

    # duration comparison ---------------------------------------------------------------------
    @staticmethod
    def _durations(rng, max_a: int, max_b: int, lo: int = 3, gap: int = 2) -> tuple[int, int]:
        """Two durations that differ clearly: by ``gap`` units and by 20% of the longer one."""
        for _ in range(200):
            a, b = rng.randint(lo, max_a), rng.randint(lo, max_b)
            if abs(a - b) >= max(gap, 0.2 * max(a, b)):
                return a, b
        raise _Retry("durations")

    def _interval(
        self, b: _Builder, kind: str, dur: int, mode: str, start: date | None = None, sdays=None
    ) -> tuple[dict, dict, str]:
        """Two endpoint events and the phrase for an interval of ``dur`` days from ``start``
        (drawn when None); ``sdays``: an iterator of the days of the sessions that share its
        artifact endpoints (see :meth:`_Builder.session_block`), else drawn near each."""
        rng = b.rng
        if kind == "calendar_span":
            start = b.rand_day(lo_pad=40, hi_pad=20)
            ndays = _calendar.monthrange(start.year, start.month)[1]
            if start.day + dur > ndays:  # move the span back into its month (a retry would make
                start -= timedelta(days=start.day + dur - ndays)  # long spans rarer than short ones)
            if start.day < 1 or start.day + dur > ndays:
                raise _Retry("span month")
            l1, l2, noun = pick(rng, CAL_SPANS)
            if l1 in b.used_names:
                raise _Retry("span label")
            b.used_names.add(l1)
            e1, e2 = b.calendar([start, start + timedelta(days=dur)], [l1, l2], extra_marks=rng.choice([0, 0, 1]))
            return e1, e2, f'the {noun} marked on {e1["ctx"]} (from "{l1}" to "{l2}")'
        start = start or b.rand_day(lo_pad=40, hi_pad=dur + 20)
        end = start + timedelta(days=dur)

        def sday():
            return None if sdays is None else next(sdays)

        if kind == "trip":
            e1 = b.flight(start, shared="any", sday=sday())
            home = next(c for c in vocab.CITIES if c[1] == b.facts[e1["fact"]]["constraints"]["from_code"])
            e2 = b.flight(end, shared="after", city=(e1["city"], e1["code"]), home=home, back=True, sday=sday())
            e2["desc"] = f"flying back from {e1['city']}"
            return e1, e2, f"my trip to {e1['city']} (from the flight out to the flight back)"
        # "between": two events of the given kinds
        k1, k2 = kind.split(":")[1:]
        # no calendar endpoints here: a calendar is named by its place in both the question and
        # its turn, so its session's date would tell roughly when its mark is, option by option
        arts = ("flight", "show", "receipt")
        e1 = b.entity(mode, start) if k1 == "E" else b.artifact(start, kinds=arts, sday=sday())
        e2 = b.entity(mode, end) if k2 == "E" else b.artifact(end, kinds=arts, sday=sday())
        return e1, e2, f"the time from {e1['desc']} to {e2['desc']}"

    def _plan_dc(self, b: _Builder, variant: str, want: str | None = None) -> dict:
        rng = b.rng
        if variant == "mode_B_clock":
            return self._plan_dc_clock(b, want)
        mode = {"mode_B": "B", "mode_C": "C", "mode_D": "D"}[variant]
        # both options are intervals of one kind, with endpoints of one kind (one artifact kind,
        # one entity kind): the turns of (A) and (B) are worded alike, so the text cannot tell
        # which dates belong to which option; only the images' prints say so
        if mode == "B":
            kind = pick(rng, ["trip", "calendar_span", "between:A:A"])
        else:
            kind = pick(rng, ["between:E:A", "between:A:E"])  # at least one date printed only
        kinds = [kind, kind]
        cap = {"trip": 45, "calendar_span": 24}
        m = cap.get(kind, 90)
        da, db = self._durations(rng, m, m)
        if want is not None and ("A" if da > db else "B") != want:
            da, db = db, da
        if kind == "calendar_span":
            ia = self._interval(b, kind, da, mode)
            ib = self._interval(b, kind, db, mode)
        else:
            # the artifact endpoints of both options are shared in one block of sessions after
            # them all, in a random order: their session dates say nothing about the spans
            starts = [b.rand_day(lo_pad=40, hi_pad=d + 40) for d in (da, db)]
            ends = [st + timedelta(days=d) for st, d in zip(starts, (da, db))]
            ends_kind = ["A", "A"] if kind == "trip" else kind.split(":")[1:]
            art_days = [day for st, en in zip(starts, ends) for day, k in zip((st, en), ends_kind) if k == "A"]
            sdays = iter(b.session_block(art_days, before=False))
            ia = self._interval(b, kind, da, mode, starts[0], sdays)
            ib = self._interval(b, kind, db, mode, starts[1], sdays)
        q = f"Which lasted longer: (A) {ia[2]}, or (B) {ib[2]}? Answer A or B."
        return {
            "mode": mode,
            "answer_format": "ab",
            "unit": "days",
            "question": q,
            "intervals": [
                [self._ev_index(b, ia[0]), self._ev_index(b, ia[1])],
                [self._ev_index(b, ib[0]), self._ev_index(b, ib[1])],
            ],
            "planned_answer": "A" if da > db else "B",
            "durations": [da, db],
            "interval_kinds": kinds,
        }

    @staticmethod
    def _ev_index(b: _Builder, ev: dict) -> int:
        return next(i for i, e in enumerate(b.events) if e is ev)

    def _plan_dc_clock(self, b: _Builder, want: str | None = None) -> dict:
        rng = b.rng
        da, db = self._durations(rng, 34, 34, lo=6, gap=3)  # 5-minute steps: >= 15 min and 20% apart
        da, db = da * 5, db * 5
        if want is not None and ("A" if da > db else "B") != want:
            da, db = db, da
        acts = rng.sample(ACTIVITIES, 2)
        days = b.distinct_days(2, gap=2, lo_pad=40, hi_pad=25)
        idx = []
        for dur, act, day in zip((da, db), acts, days):
            if rng.random() < 0.5:
                start = rng.randrange(7 * 60, 9 * 60 + 1, 5)
            else:
                start = rng.randrange(13 * 60, 15 * 60 + 1, 5)
            end = start + dur
            if start < 12 * 60 <= end:
                raise _Retry("half day")
            s_hm, e_hm = f"{start // 60:02d}:{start % 60:02d}", f"{end // 60:02d}:{end % 60:02d}"
            style = pick(rng, ["analog", "analog", "digital"])
            cons = {"time": e_hm, "style": style}
            if style == "digital":
                cons["date"] = None
            thing, ctx = b._ctx("clock", [])
            sday = day + timedelta(days=rng.randint(1, 20))
            tail = f", which is when I finished {act}; I had started at {time_words(s_hm)}"
            k = b._fact("clock", cons, b._session_at(sday), thing, ctx, tail=tail)
            e1 = b._event(fact=k, src="text_time", day=s_hm, desc=act)
            e2 = b._event(fact=k, src="get", path=["time"], day=e_hm, desc=act)
            idx.append([self._ev_index(b, e1), self._ev_index(b, e2)])
        b.sources.update({"clock", "textual_time"})
        q = f"Which took longer: (A) {acts[0]}, or (B) {acts[1]}? Answer A or B."
        return {
            "mode": "B",
            "answer_format": "ab",
            "unit": "minutes",
            "question": q,
            "intervals": idx,
            "planned_answer": "A" if da > db else "B",
            "durations": [da, db],
            "interval_kinds": ["clock", "clock"],
        }

    # order ranking ---------------------------------------------------------------------------
    def _plan_or(self, b: _Builder, variant: str) -> dict:
        """3-5 events of one artifact kind (``variant``: ``mode_B_<kind>``) whose dates are printed
        only: no written date, no time phrase in their turns, and the sessions that share them
        come in a block before or after all of them (tickets may be shared before the show,
        receipts and boarding passes after), in a random order independent of the events' order.
        The question names each event by what its image prints (destination, show, store,
        calendar label), so neither the wording nor the session dates order them."""
        rng = b.rng
        kind = variant.removeprefix("mode_B_")
        n = rng.choice([3, 3, 4, 4, 5])
        if kind == "calendar":
            first = b.rand_day(lo_pad=60, hi_pad=40).replace(day=1)
            ndays = _calendar.monthrange(first.year, first.month)[1]
            for _ in range(200):
                ds = sorted(rng.sample(range(1, ndays + 1), n))
                if all(y - x >= 2 for x, y in itertools.pairwise(ds)):
                    break
            else:
                raise _Retry("calendar days")
            days = [first.replace(day=d) for d in ds]
            labels = rng.sample([x for x in CAL_LABELS if x not in b.used_names], n)
            b.used_names.update(labels)
            evs = b.calendar(days, labels, extra_marks=rng.choice([0, 1]))
        else:
            days = b.distinct_days(n, gap=3, lo_pad=60, hi_pad=45)
            sdays = b.session_block(days, before=kind == "show" and rng.random() < 0.5)
            make = {"show": b.show, "flight": b.flight, "receipt": b.receipt}[kind]
            # the facts (and so the evidence list) in a random order, not the events' order
            evs: list = [None] * n
            for i in rng.sample(range(n), n):
                evs[i] = make(days[i], sday=sdays[i])
        listed = list(range(n))
        rng.shuffle(listed)
        order = sorted(range(n), key=lambda j: days[listed[j]])
        items = "; ".join(f"({j + 1}) {evs[listed[j]]['desc']}" for j in range(n))
        q = (
            f"Put these events in the order they happened: {items}. "
            f"Answer with the numbers in parentheses, earliest first."
        )
        return {
            "mode": "B",
            "cue": kind,
            "answer_format": "order",
            "question": q,
            "listed": [self._ev_index(b, evs[i]) for i in listed],
            "planned_answer": "".join(f"({j + 1})" for j in order),
            "n_events": n,
        }

    # temporal info extraction -----------------------------------------------------------------
    def _plan_tie(self, b: _Builder, variant: str) -> dict:
        rng = b.rng
        day = b.rand_day(lo_pad=40, hi_pad=3)
        if variant == "B_calendar":
            lab = pick(rng, CAL_LABELS)
            b.used_names.add(lab)
            ev = b.calendar([day], [lab], extra_marks=rng.choice([0, 1, 1, 2]))[0]
            q = f'On what date was the "{lab}" I had marked on {ev["ctx"]}? Answer in YYYY/MM/DD.'
        elif variant == "B_ticket":
            if rng.random() < 0.5:
                ev = b.flight(day)
                q = f"When did I fly to {ev['city']}? Answer in YYYY/MM/DD."
            else:
                ev = b.show(day)
                q = f"When did I go to {ev['desc']}? Answer in YYYY/MM/DD."
        elif variant == "B_receipt":
            ev = b.receipt(day)
            q = f"When did I shop at {ev['store']}? Answer in YYYY/MM/DD."
        else:
            raise ValueError(f"TR: unknown variant {variant!r}")
        mode = variant[0]
        b.forbidden.extend(answer_forms(ev["day"]))
        return {
            "mode": mode,
            "answer_format": "date",
            "question": q,
            "target_event": self._ev_index(b, ev),
            "planned_answer": ev["day"],
        }

    # ------------------------------------------------------------------------------------ build
    def build(self, rng, plan, truths):
        lat = plan.latent
        facts, events = lat["facts"], lat["events"]
        if len(truths) != len(facts):
            raise ValueError("TR: one truth per fact image expected")
        for f, t in zip(facts, truths):
            self._check_truth(f, t)
        progs = [self._event_prog(ev, events, facts, truths) for ev in events]
        sub = plan.question_subtype
        if sub == "duration_comparison":
            (a0, a1), (b0, b1) = lat["intervals"]
            prog = {"op": "longer", "a": [progs[a0], progs[a1]], "b": [progs[b0], progs[b1]], "unit": lat["unit"]}
        elif sub == "order_ranking":
            prog = {"op": "order", "args": [progs[i] for i in lat["listed"]], "key": "date"}
        else:
            prog = progs[lat["target_event"]]
        ctx = {"evidence_dates": [f["at"] for f in facts]}
        answer = derive(prog, truths, ctx)
        if answer != lat["planned_answer"]:
            raise ValueError(f"TR: derived {answer!r} != planned {lat['planned_answer']!r}")
        forbidden = list(dict.fromkeys(lat["forbidden"]))
        fact_drafts = []
        for k, (f, t) in enumerate(zip(facts, truths)):
            fact_drafts.append(FactDraft(self._mention(rng, f, t, forbidden), [k], at=f["at"]))
        ents = sorted({named_kind(f) for f in facts if f["family"] == "named_sign"})
        details = {
            "mode": lat["mode"],
            "answer_format": lat["answer_format"],
            "temporal_sources": lat["sources"],
            "n_images": len(facts),
            "families": sorted({f["family"] for f in facts}),
        }
        if ents:
            details["entity_kinds"] = ents
            # the abstracted entities (named only in their images) and their kinds
            details["entities"] = {
                f["constraints"]["text"]: named_kind(f)
                for f in facts
                if f["family"] == "named_sign" and f["constraints"].get("text")
            }
        if sub == "duration_comparison":
            details.update(
                {"unit": lat["unit"], "durations": lat["durations"], "interval_kinds": lat["interval_kinds"]}
            )
        if sub == "order_ranking":
            details["n_events"] = lat["n_events"]
            details["cue"] = lat["cue"]
        return Draft(
            question=lat["question"],
            answer=answer,
            facts=fact_drafts,
            details=details,
            forbidden=forbidden,
            contexts=list(lat["contexts"]),
            derivation=prog,
            question_date=lat["qdate"],
            image_essential=True,
        )

    @staticmethod
    def _check_truth(f: dict, t: dict) -> None:
        c = f["constraints"]
        if f["family"] in ("ticket", "receipt") and t.get("date") != c["date"]:
            raise ValueError("TR: artifact date differs from the plan")
        if f["family"] == "named_sign" and t.get("text") != c["text"]:
            raise ValueError("TR: entity name differs from the plan")
        if f["family"] == "clock" and t.get("time") != c["time"]:
            raise ValueError("TR: clock time differs from the plan")
        if f["family"] == "calendar_page":
            want = {(m["date"], m["label"]) for m in c["marked"]}
            got = {(m["date"], m.get("label")) for m in t.get("marked", [])}
            if not want <= got:
                raise ValueError("TR: calendar marks differ from the plan")

    @staticmethod
    def _event_prog(ev: dict, events: list[dict], facts: list[dict], truths: list[dict]) -> dict:
        k = ev["fact"]
        src = ev["src"]
        if src == "get":
            return _get(k, *ev["path"])
        if src == "calendar":
            marks = truths[k]["marked"]
            j = next(i for i, m in enumerate(marks) if m.get("label") == ev["label"])
            return _get(k, "marked", j, "date")
        if src == "text_time":
            return _const(ev["day"])
        if src == "textual":
            inner = _const(ev["day"])
        elif src == "session":
            inner = _fact_date(k, ev.get("back", 0))
        else:
            raise ValueError(f"TR: unknown event source {src!r}")
        if not HAS_PICK:
            return inner
        # select, among the question's entity images, the one that shows the named entity
        cases = []
        for other in events:
            if other.get("entity") is None:
                continue
            o_inner = (
                _const(other["day"]) if other["src"] == "textual" else _fact_date(other["fact"], other.get("back", 0))
            )
            cases.append([_get(other["fact"], "text"), o_inner])
        return {"op": "pick", "match": ev["entity"], "cases": cases}

    @staticmethod
    def _mention(rng: random.Random, f: dict, truth: dict, forbidden: list[str]) -> str:
        drawn = printed_strings(truth)
        from memlens.construction.text import abstraction

        # entity images (modes C/D): a share phrased with an anaphor; its category is the generic
        # "thing" (a shop type or "book" would tell the question's entities apart by text)
        use_anaphor = (
            f["family"] == "named_sign"
            and f["constraints"].get("kind") in ("shop_sign", "book_cover")
            and rng.random() < abstraction.ANAPHOR_SHARE
        )
        for i in range(30):
            if use_anaphor and i < 15:
                m = abstraction.mention(
                    rng,
                    abstraction.anaphor(rng, "thing"),
                    f["ctx"],
                    when=f["when"],
                    tail=f["tail"],
                    force_when=f["force_when"],
                )
            else:
                m = _render_mention(rng, f["family"], f["thing"], f["when"], f["tail"], f["force_when"])
            if m.count(IMAGE_PLACEHOLDER) != 1:
                continue
            if any(contains_token_bounded(m, s) for s in forbidden + drawn):
                continue
            return m
        raise ValueError("TR: could not write a mention free of drawn strings")

    # ------------------------------------------------------------------------------------ chance
    def chance_answer(self, question: Question, rng):
        sub = question.question_subtype
        fmt = (question.details or {}).get("answer_format")
        if sub == "duration_comparison" or fmt == "ab":
            return rng.choice(["A", "B"])
        if sub == "order_ranking" or fmt == "order":
            labels = list(dict.fromkeys(re.findall(r"\((\d+)\)", question.question)))
            if not labels:
                return ""
            rng.shuffle(labels)
            return "".join(f"({x})" for x in labels)
        if sub == "temporal_info_extraction" or fmt == "date":
            try:
                q = parse_date(question.question_date)
            except ValueError:
                return ""
            return _ds(q.date() - timedelta(days=rng.randint(1, CHANCE_WINDOW_DAYS)))
        return ""


def named_kind(f: dict) -> str:
    return f["constraints"].get("kind", "")
