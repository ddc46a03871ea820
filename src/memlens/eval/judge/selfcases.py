"""The judge self-test's cases: right answers in every format and wrong answers in every pattern.

Every case is labelled by construction: a *right* case commits to the reference (in another
format, in a sentence, after reasoning, after retracting a decoy, as "R, not D" ...), a *wrong*
case commits to a decoy of :mod:`memlens.eval.judge.decoys` or to nothing (a hedge between the
reference and a decoy, a list of candidates, a range or bound, a pure denial, a refusal of an
answerable question, more than 500 words). Patterns are named ``right:<name>`` and
``wrong:<name>``; :data:`PATTERNS` documents each.

Which patterns a question gets depends on its value kind (``Facts.kind``): ranges and bounds only
for ordered values (counts, amounts, dates, times, quantities), option texts only for A/B, event
names and numbered lists only for order ranking, directions only for knowledge updates. The text
of a case is chosen by a hash of (seed, question id, pattern), so a build and a seed give the same
cases everywhere.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal

from memlens.construction.images.synthetic.formats import MONTHS, WEEKDAYS
from memlens.core.tasks import KU_UPDATE
from memlens.eval.judge.decoys import Decoy, Facts, neighbours

#: every pattern of the self-test, with what it is
PATTERNS: dict[str, str] = {
    "right:exact": "the reference as stored",
    "right:format": "the reference in another notation (date, time, amount, unit, code spacing, case, number word)",
    "right:sentence": "the reference inside a short sentence",
    "right:markdown": "the reference in markdown emphasis or after an 'Answer:' label",
    "right:reasoning": "reasoning that mentions decoys, then the reference as the conclusion",
    "right:tagged": "[REASONING] ... [ANSWER] reference, or a <think> block before it",
    "right:not_pair": "'R, not D'",
    "right:negation_pair": "'It wasn't D, it was R'",
    "right:retraction": "'D. Actually, no - R.'",
    "right:superseded": "'I first thought D, but it was R'",
    "right:context": "the reference followed by context holding another value of its type",
    "right:guess_after_refusal": "a hedge about certainty, then a committed guess of the reference",
    "right:direction": "knowledge update: 'from OLD to R', 'R replaced OLD', 'no longer OLD, now R'",
    "right:option_text": "A/B: the option's text as the question states it, or 'the former/latter'",
    "right:sequence": "order: the indices in another notation",
    "right:event_names": "order: the events named in order",
    "right:numbered_list": "order: a numbered list of the events or their indices",
    "right:latest_first": "order: stated latest first, in reverse",
    "right:polarity": "yes/no: a committed polarity in words ('the same one', 'different places')",
    "right:refusal": "answer refusal: a refusal in one of many phrasings",
    "wrong:decoy": "a decoy value of this build, in the reference's or another notation",
    "wrong:hedge": "a hedge between the reference and a decoy ('Either R or D')",
    "wrong:candidates": "a list of candidates without a choice",
    "wrong:not_pair": "'D, not R'",
    "wrong:negation_pair": "'It wasn't R, it was D'",
    "wrong:retraction": "'R. Actually, no - D.'",
    "wrong:superseded": "'I first thought R, but it was D'",
    "wrong:denial": "only denies a value ('It definitely wasn't D.')",
    "wrong:bound": "a bound instead of a value ('At least R')",
    "wrong:range": "a range around the reference ('between D1 and D2')",
    "wrong:refusal": "a refusal of an answerable question",
    "wrong:auto_zero": "the reference after more than 500 words (official auto-zero)",
    "wrong:reasoning": "reasoning that mentions the reference, then a decoy as the conclusion",
    "wrong:ku_old": "knowledge update: the outdated value as current",
    "wrong:ku_reverse": "knowledge update: the direction reversed ('from R to OLD')",
    "wrong:ku_both": "knowledge update: both values without a committed current one",
    "wrong:yes_and_no": "yes/no: both polarities or neither",
    "wrong:other_option": "A/B: the other option, by letter or by its text",
    "wrong:other_order": "order: another order, in any notation",
    "wrong:partial_order": "order: only some of the events",
    "wrong:guess": "answer refusal: an invented answer",
    "wrong:refusal_then_guess": "answer refusal: a refusal followed by a guess",
}

_MONTHS = MONTHS
_DAYS = WEEKDAYS
_ORD_WORDS = [
    *("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"),
    *("eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth"),
    *("eighteenth", "nineteenth", "twentieth"),
]
_NUM_WORDS = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"),
    *("nineteen", "twenty"),
]
_CUR_WORDS = {"USD": "dollars", "EUR": "euros", "GBP": "pounds", "JPY": "yen", "CHF": "Swiss francs", "DKK": "kroner"}
_SYMBOL_CUR = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
_UNIT_WORDS = {"g": "grams", "kg": "kilograms", "ml": "millilitres", "l": "litres", "bags": "bags", "tabs": "tablets"}


@dataclass(frozen=True)
class Case:
    """One labelled answer to one question of the build."""

    case_id: str
    question_id: str
    task_key: str
    pattern: str
    expected: bool
    prediction: str
    decoy_source: str | None = None


# ------------------------------------------------------------------------------- formatting
def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _day_words(n: int) -> str:
    if n <= 20:
        return _ORD_WORDS[n - 1]
    tens = {2: "twenty", 3: "thirty"}[n // 10]
    return tens[:-1] + "ieth" if n % 10 == 0 else f"{tens}-{_ORD_WORDS[n % 10 - 1]}"


def date_forms(ref: str) -> list[tuple[str, str]]:
    y, m, d = map(int, ref.split("/"))
    day = dt.date(y, m, d)
    mon = _MONTHS[m - 1]
    out = [
        ("iso", f"{y}-{m:02d}-{d:02d}"),
        ("dotted", f"{y}.{m:02d}.{d:02d}"),
        ("month_day_year", f"{mon} {d}, {y}"),
        ("day_month_year", f"{d} {mon} {y}"),
        ("ordinal", f"the {_ordinal(d)} of {mon}, {y}"),
        ("abbrev", f"{mon[:3]} {d}, {y}"),
        ("weekday", f"{_DAYS[day.weekday()]}, {mon} {d}, {y}"),
        ("ordinal_words", f"{mon} {_day_words(d)}, {y}"),
    ]
    if d > 12:  # only where day and month cannot be confused
        out += [("us_slash", f"{m:02d}/{d:02d}/{y}"), ("eu_slash", f"{d:02d}/{m:02d}/{y}")]
    return out


def time_forms(ref: str) -> list[tuple[str, str]]:
    h, mi = map(int, ref.split(":"))
    h12 = h % 12 or 12
    ampm = "AM" if h < 12 else "PM"
    part = "in the morning" if h < 12 else "in the afternoon" if h < 18 else "in the evening"
    out = [
        ("12h", f"{h12}:{mi:02d} {ampm}"),
        ("12h_lower", f"{h12}:{mi:02d}{ampm.lower()}"),
        ("dotted", f"{h:02d}.{mi:02d}"),
    ]
    out += [("dotted_12h", f"{h12}.{mi:02d} {'a.m.' if h < 12 else 'p.m.'}"), ("day_part", f"{h12}:{mi:02d} {part}")]
    if mi == 0:
        out.append(("hour_only", f"{h12} {ampm.lower()}"))
    return out


def _money_parts(ref: str) -> tuple[str, Decimal, int]:
    m = re.match(r"^(?P<pre>[$€£¥]|[A-Z]{3} )?(?P<num>[\d,]+(?:\.\d+)?)(?P<post> [A-Z]{3})?$", ref.strip())
    if not m:
        raise ValueError(f"not an amount: {ref!r}")
    pre, post = (m.group("pre") or "").strip(), (m.group("post") or "").strip()
    cur = _SYMBOL_CUR.get(pre) or pre or post
    num = m.group("num")
    return cur, Decimal(num.replace(",", "")), len(num.split(".")[1]) if "." in num else 0


def amount_forms(ref: str) -> list[tuple[str, str]]:
    cur, v, places = _money_parts(ref)
    plain = f"{v:.{places}f}"
    out = [("code_after", f"{plain} {cur}"), ("code_before", f"{cur} {plain}")]
    if cur in _CUR_WORDS:
        out.append(("currency_word", f"{plain} {_CUR_WORDS[cur]}"))
    if cur == "EUR":
        out.append(("comma_decimal", f"{plain.replace('.', ',')} €"))
    if cur == "DKK":
        out.append(("kr", f"{plain.replace('.', ',')} kr."))
    if v >= 1000:
        out.append(("grouped", f"{cur} {v:,.{places}f}"))
    return out


def integer_forms(ref: str) -> list[tuple[str, str]]:
    n = int(ref)
    return [("word", _NUM_WORDS[n])] if n <= 20 else [("grouped", f"{n:,}")] if n >= 1000 else []


def code_forms(ref: str) -> list[tuple[str, str]]:
    compact = re.sub(r"[\s-]", "", ref)
    out = [("lower", ref.lower())]
    if compact != ref:
        out.append(("no_space", compact))
        out.append(("hyphen", re.sub(r"\s+", "-", ref)))
    elif compact.isalnum():
        m = re.match(r"^([A-Za-z]+)(\d+)$", compact)
        if m:
            out.append(("spaced", f"{m.group(1)} {m.group(2)}"))
    return out


def quantity_forms(ref: str) -> list[tuple[str, str]]:
    m = re.match(r"^(\d+(?:\.\d+)?)\s?([A-Za-z]+)$", ref.strip())
    num, unit = m.group(1), m.group(2)
    out = [("no_space" if " " in ref else "spaced", f"{num}{unit}" if " " in ref else f"{num} {unit}")]
    word = _UNIT_WORDS.get(unit.lower())
    if word and word != unit:
        out.append(("unit_word", f"{num} {word}"))
    if unit.lower() == "g" and Decimal(num) >= 100:
        out.append(("converted", f"{Decimal(num) / 1000:g} kg"))
    return out


def text_forms(ref: str) -> list[tuple[str, str]]:
    out = [("lower", ref.lower())]
    if ref != ref.title():
        out.append(("title", ref.title()))
    if ref.lower() == ref and not ref.lower().startswith(("the ", "a ")):
        out.append(("article", f"the {ref}"))
    if "grey" in ref.lower():
        out.append(("spelling", ref.replace("grey", "gray").replace("Grey", "Gray")))
    return out


_FORMS: dict[str, Callable[[str], list[tuple[str, str]]]] = {
    "date": date_forms,
    "time": time_forms,
    "amount": amount_forms,
    "integer": integer_forms,
    "code": code_forms,
    "quantity": quantity_forms,
    "text": text_forms,
}


def forms(kind: str, value: str) -> list[tuple[str, str]]:
    f = _FORMS.get(kind)
    return f(value) if f else []


# ------------------------------------------------------------------------------- the question
_OPTION_RE = re.compile(r"\((A|B)\)\s*(.+?)(?=,?\s+or\s+\(B\)|\?|$)")
_EVENT_RE = re.compile(r"\((\d+)\)\s*(.+?)(?=;\s*\(\d+\)|\.\s+Answer|\.?$)")


def ab_options(question: str) -> dict[str, str]:
    """The two option texts of an A/B question ("(A) the trip to Rome, or (B) ...")."""
    return {m.group(1): m.group(2).strip() for m in _OPTION_RE.finditer(question)}


def order_events(question: str) -> dict[str, str]:
    """The numbered events of an order question ("(1) the concert; (2) ...")."""
    return {m.group(1): m.group(2).strip() for m in _EVENT_RE.finditer(question)}


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _low(s: str) -> str:
    return s[:1].lower() + s[1:]


# ------------------------------------------------------------------------------- the generator
class _Gen:
    """Cases of one question; ``pick`` is a deterministic choice per (seed, question, pattern)."""

    def __init__(self, facts: Facts, seed: int):
        self.f = facts
        self.q = facts.question
        self.ref = str(self.q.answer).strip()
        self.seed = seed
        self.cases: list[Case] = []

    def rng(self, pattern: str) -> random.Random:
        h = hashlib.sha256(f"{self.seed}\x1f{self.q.question_id}\x1f{pattern}".encode()).digest()
        return random.Random(int.from_bytes(h[:8], "big"))

    def add(self, pattern: str, expected: bool, text: str, source: str | None = None) -> None:
        n = sum(1 for c in self.cases if c.pattern == pattern)
        self.cases.append(
            Case(f"{self.q.question_id}:{pattern}:{n}", self.q.question_id, self.f.key, pattern, expected, text, source)
        )

    def decoy(self, pattern: str, *prefer: str) -> Decoy | None:
        pool = self.f.of(*prefer) or self.f.of()
        return self.rng(pattern).choice(pool) if pool else None

    def context_date(self) -> str:
        """A date from the question's history (the evidence session's), in words."""
        for d in self.f.evidence_dates:
            y, m, day = d[:10].split("/")
            if d[:10] != self.ref:
                return f"{_MONTHS[int(m) - 1]} {int(day)}, {y}"
        return "the fourteenth"


def _sentence(key_kind: str, v: str, rng: random.Random) -> str:
    starts = {
        "date": ["It was on {v}.", "That was on {v}.", "It happened on {v}.", "The date was {v}."],
        "time": ["We agreed on {v}.", "It was {v}.", "The time was {v}.", "At {v}."],
        "amount": ["It came to {v}.", "The total was {v}.", "That's {v}.", "It was {v} altogether."],
        "integer": ["There were {v}.", "I count {v}.", "The number is {v}.", "It was {v}."],
        "code": ["It was {v}.", "It read {v}.", "The code was {v}.", "That's {v}."],
        "quantity": ["It was {v}.", "The box said {v}.", "{v}, according to the box."],
        "text": ["It was {v}.", "That would be {v}.", "The answer is {v}.", "It's {v}."],
    }.get(key_kind, ["It was {v}."])
    return rng.choice(starts).format(v=v.rstrip("."))


_REFUSALS = [
    "Insufficient information.",
    "I don't have that information.",
    "You never mentioned that.",
    "There's nothing in our conversations about that.",
    "I can't tell from what you've shared with me.",
    "I have no record of that.",
    "That wasn't mentioned in our chats.",
    "I'm not able to answer that; it never came up between us.",
    "I don't see any photo of that in our conversation, so I can't say.",
    "You didn't share enough for me to work that out.",
    "There's no way for me to know that from our conversations.",
    "I can't find anything about that in our history.",
    "Sorry, I don't know. You haven't told me about it.",
    "I don't think you ever showed me that, so I can't answer.",
    "Nothing you've shared covers that, unfortunately.",
]
_REFUSALS_BY_FORMAT = {
    "integer": [
        "I can't count them: you never shared those photos.",
        "I have no photos of those, so I can't count them.",
    ],
    "yes_no": [
        "I only have one of those, so I can't tell whether they were the same.",
        "I can't compare them: I have nothing about the other one.",
    ],
    "date": ["I don't have a date for that.", "You never told me when that was."],
    "ab": [
        "I have dates for one of those periods, but nothing about the other, so I can't compare them.",
        "I can't work out which was longer from what you told me.",
    ],
    "order": ["I don't have dates for all of those events, so I can't order them."],
}
_REASON_LEADS = [
    "Looking back through our conversations, ",
    "Going through the sessions you shared, ",
    "From what I can see in our chats, ",
]
_FILLER = (
    "I went back over the sessions one by one and looked at every photo and every message you shared "
    "so that nothing would be missed and each detail could be checked against the others carefully "
)


def _right_value_cases(g: _Gen) -> None:
    """Right answers of value kinds (IE, counting, arithmetic, dates, KU values)."""
    ref, kind = g.ref, g.f.kind
    g.add("right:exact", True, ref)
    for _, text in forms(kind, ref):
        g.add("right:format", True, text)
    r = g.rng("right:sentence")
    alt = [t for _, t in forms(kind, ref)]
    g.add("right:sentence", True, _sentence(kind, ref, r))
    if alt:
        g.add("right:sentence", True, _sentence(kind, r.choice(alt), r))
    g.add("right:markdown", True, r.choice([f"**{ref}**", f"**Answer:** {ref}", f"Answer: {ref}"]))
    d = g.decoy("right:reasoning", "history_image", "same_image", "partial_sum", "ku_chain", "neighbour")
    lead = r.choice(_REASON_LEADS)
    if d:
        g.add(
            "right:reasoning",
            True,
            f"{lead}one photo shows {d.value}, but that is a different one. The one you asked about shows "
            f"{ref}. So the answer is {ref}.",
            d.source,
        )
        g.add("right:not_pair", True, r.choice([f"{ref}, not {d.value}.", f"It was {ref}, not {d.value}."]), d.source)
        g.add("right:negation_pair", True, f"It wasn't {d.value}, it was {ref}.", d.source)
        g.add(
            "right:retraction",
            True,
            r.choice([f"{d.value}. Actually, no - {ref}.", f"{d.value}... wait, no, it was {ref}."]),
            d.source,
        )
        g.add("right:superseded", True, f"I first thought it was {d.value}, but it was {ref}.", d.source)
    g.add(
        "right:tagged",
        True,
        r.choice([f"[REASONING] {lead}the detail is in one session.\n[ANSWER] {ref}", f"<think>{lead}</think>{ref}"]),
    )
    if kind in ("integer", "amount") and d is not None and d.source == "partial_sum":
        g.add("right:reasoning", True, f"{lead}the items you told me about add up to {ref}, so {ref} in total.")
    if kind == "integer" and int(ref) >= 2:
        n = int(ref)
        g.add("right:reasoning", True, f"I counted {n - 1} in one session and 1 in another, so {n} in total.")
    ctx = g.context_date()
    g.add("right:context", True, f"{ref} - you mentioned it on {ctx}.")
    g.add("right:guess_after_refusal", True, f"I can't be completely sure, but I think it was {ref}.")


def _wrong_value_cases(g: _Gen) -> None:
    f, ref, kind = g.f, g.ref, g.f.kind
    r = g.rng("wrong")
    for d in f.decoys:
        if d.source in ("ku_old",):
            continue
        g.add("wrong:decoy", False, d.value, d.source)
        alt = [t for _, t in forms(kind, d.value)]
        if alt:
            g.add("wrong:decoy", False, _sentence(kind, r.choice(alt), r), d.source)
    d = g.decoy("wrong:pairs", "history_image", "same_image", "ku_chain", "partial_sum", "neighbour")
    if d is None:
        return
    dv = d.value
    g.add(
        "wrong:hedge",
        False,
        r.choice([f"Either {ref} or {dv}.", f"{ref} or {dv}", f"Maybe {ref}, maybe {dv}."]),
        d.source,
    )
    g.add("wrong:hedge", False, f"It's {dv} or possibly {ref}.", d.source)
    others = [x.value for x in f.decoys if x.value != dv][:1]
    if others:
        g.add("wrong:candidates", False, f"It could be {dv}, {ref}, or {others[0]}.", d.source)
    else:
        g.add("wrong:candidates", False, f"The candidates are {ref} and {dv}.", d.source)
    g.add("wrong:not_pair", False, r.choice([f"{dv}, not {ref}.", f"It was {dv}, not {ref}."]), d.source)
    g.add("wrong:negation_pair", False, f"It wasn't {ref}, it was {dv}.", d.source)
    g.add(
        "wrong:retraction",
        False,
        r.choice([f"{ref}. Actually, no - {dv}.", f"{ref}... wait, no, it was {dv}."]),
        d.source,
    )
    g.add("wrong:superseded", False, f"I first thought it was {ref}, but it was {dv}.", d.source)
    g.add("wrong:denial", False, r.choice([f"It definitely wasn't {dv}.", f"It wasn't {ref}."]), d.source)
    g.add(
        "wrong:reasoning",
        False,
        f"{r.choice(_REASON_LEADS)}one photo shows {ref}, but that is a different one. The one you asked "
        f"about shows {dv}. So the answer is {dv}.",
        d.source,
    )
    _bounds_and_ranges(g, r)
    g.add("wrong:refusal", False, r.choice(_REFUSALS))
    words = (_FILLER * 20).split()[:520]
    g.add("wrong:auto_zero", False, " ".join(words) + f". Final answer: {ref}")


def _bounds_and_ranges(g: _Gen, r: random.Random) -> None:
    kind, ref = g.f.kind, g.ref
    near = neighbours(kind, ref)
    if kind == "integer":
        n = int(ref)
        g.add("wrong:bound", False, r.choice([f"At least {n}.", f"{n} or more.", f"No more than {n}."]))
        g.add("wrong:bound", False, f"More than {max(n - 1, 0)}.")
        g.add("wrong:range", False, r.choice([f"Between {max(n - 1, 0)} and {n + 1}.", f"{max(n - 1, 0)}-{n + 1}"]))
    elif kind in ("amount", "quantity") and len(near) >= 2:
        g.add("wrong:bound", False, r.choice([f"At least {ref}.", f"Under {near[0]}.", f"Up to {ref}."]))
        g.add("wrong:range", False, f"Somewhere between {ref} and {near[0]}.")
    elif kind == "date" and len(near) >= 2:
        g.add("wrong:bound", False, r.choice([f"Sometime after {near[1]}.", f"Before {near[0]}."]))
        g.add("wrong:range", False, f"Between {near[1]} and {near[0]}.")
    elif kind == "time" and len(near) >= 2:
        g.add("wrong:bound", False, r.choice([f"After {near[1]}.", f"Sometime before {near[0]}."]))
        g.add("wrong:range", False, f"Between {near[1]} and {near[0]}.")


def _ku_cases(g: _Gen) -> None:
    old = g.q.old_answer
    if not old:
        return
    ref = g.ref
    r = g.rng("ku")
    g.add("right:direction", True, f"You switched from {old} to {ref}.", "ku_old")
    g.add("right:direction", True, r.choice([f"{ref} replaced {old}.", f"{old} was replaced by {ref}."]), "ku_old")
    g.add("right:direction", True, f"No longer {old} - now it's {ref}.", "ku_old")
    g.add("right:direction", True, f"It used to be {old}, but now it's {ref}.", "ku_old")
    g.add("right:direction", True, f"Currently {ref} (before that, {old}).", "ku_old")
    g.add("wrong:ku_old", False, old, "ku_old")
    g.add("wrong:ku_old", False, f"It's {old} now.", "ku_old")
    g.add("wrong:ku_old", False, f"It's {old} now; it used to be {ref}.", "ku_old")
    g.add("wrong:ku_reverse", False, f"You switched from {ref} to {old}.", "ku_old")
    g.add("wrong:ku_reverse", False, r.choice([f"{old} replaced {ref}.", f"{ref} was replaced by {old}."]), "ku_old")
    g.add("wrong:ku_reverse", False, f"No longer {ref} - now it's {old}.", "ku_old")
    g.add("wrong:ku_both", False, r.choice([f"{ref} and {old}.", f"Either {ref} or {old}."]), "ku_old")
    g.add("wrong:ku_both", False, f"It's {old} or {ref}, I'm not sure which is current.", "ku_old")


def _ab_cases(g: _Gen) -> None:
    ref = g.ref.upper()
    other = "B" if ref == "A" else "A"
    opts = ab_options(g.q.question)
    r = g.rng("ab")
    shorter = bool(re.search(r"\bshort", g.q.question.split("(A)", 1)[0], re.I))
    won, lost = ("was shorter", "longer") if shorter else ("lasted longer", "shorter")
    for text in (ref, f"({ref})", f"Option {ref}", f"{ref}.", f"**{ref}**", f"The answer is {ref}."):
        g.add("right:exact" if text == ref else "right:format", True, text)
    g.add("right:sentence", True, f"{ref} - it {won}.")
    g.add("right:reasoning", True, f"{r.choice(_REASON_LEADS)}{other} was the {lost} one, so {ref}.")
    g.add("right:not_pair", True, f"{ref}, not {other}.")
    g.add("right:retraction", True, f"{other}. Actually, no - {ref} {won}.")
    g.add("right:tagged", True, f"[REASONING] {r.choice(_REASON_LEADS)}I compared the two.\n[ANSWER] {ref}")
    g.add("right:guess_after_refusal", True, f"I can't be completely sure, but I think {ref}.")
    g.add("right:option_text", True, "The former." if ref == "A" else "The latter.")
    g.add("right:option_text", True, f"The {'first' if ref == 'A' else 'second'} one.")
    if ref in opts:
        g.add("right:option_text", True, f"{_cap(opts[ref])} {won}.")
        g.add("right:option_text", True, f"({ref}) {opts[ref]}")
    for text in (other, f"Option {other}", f"The answer is {other}."):
        g.add("wrong:other_option", False, text, "other_option")
    if other in opts:
        g.add("wrong:other_option", False, f"{_cap(opts[other])} {won}.", "other_option")
    g.add("wrong:other_option", False, "The latter." if ref == "A" else "The former.", "other_option")
    g.add("wrong:hedge", False, r.choice([f"{ref} or {other}", f"Either {ref} or {other}."]), "other_option")
    g.add("wrong:hedge", False, "They lasted about the same.", "other_option")
    g.add("wrong:not_pair", False, f"{other}, not {ref}.", "other_option")
    g.add("wrong:retraction", False, f"{ref}. Actually, no - {other} {won}.", "other_option")
    g.add("wrong:reasoning", False, f"{r.choice(_REASON_LEADS)}{ref} was the {lost} one, so {other}.", "other_option")
    g.add("wrong:refusal", False, r.choice(_REFUSALS))


def _yesno_cases(g: _Gen) -> None:
    ref = g.ref
    word = (g.q.details or {}).get("entity_word") or "place"
    r = g.rng("yesno")
    same = [f"It was the same {word}.", f"Same {word}.", "They were the same one."]
    diff = [f"They were different {word}s.", f"No, different {word}s.", f"Not the same {word}."]
    yes_forms = ["Yes", "Yes.", f"Yes, it was the same {word}.", *same]
    no_forms = ["No", "No.", f"No, they were different {word}s.", *diff]
    good, bad = (yes_forms, no_forms) if ref == "Yes" else (no_forms, yes_forms)
    other = "No" if ref == "Yes" else "Yes"
    for t in good:
        g.add("right:exact" if t == ref else "right:polarity", True, t)
    g.add("right:retraction", True, f"{other}. Sorry, I misread the photos: {_low(r.choice(good[2:]))}")
    g.add(
        "right:reasoning",
        True,
        f"{r.choice(_REASON_LEADS)}I compared the first photo with the last one. {r.choice(good[2:])}",
    )
    g.add("right:guess_after_refusal", True, f"I can't be completely sure, but I think {_low(good[2])}")
    for t in bad:
        g.add("wrong:decoy", False, t, "other_polarity")
    g.add("wrong:yes_and_no", False, r.choice(["Yes and no.", "Yes or no, hard to say.", "Maybe."]), "other_polarity")
    g.add("wrong:retraction", False, f"{ref}. Sorry, I misread the photos: {_low(r.choice(bad[2:]))}", "other_polarity")
    g.add("wrong:refusal", False, r.choice(_REFUSALS))


def _order_cases(g: _Gen) -> None:
    ref = g.ref
    idx = re.findall(r"\d+", ref)
    events = order_events(g.q.question)
    r = g.rng("order")
    g.add("right:exact", True, ref)
    seqs = {
        "comma": ", ".join(idx),
        "dash": "-".join(idx),
        "arrow": " -> ".join(idx),
        "unicode_arrow": " \u2192 ".join(idx),
        "space": " ".join(idx),
        "bracket": "[" + ", ".join(idx) + "]",
        "paren_comma": ", ".join(f"({i})" for i in idx),
        "then": "Earliest first: " + ", then ".join(idx) + ".",
    }
    for text in seqs.values():
        g.add("right:sequence", True, text)
    g.add("right:sentence", True, f"The order is {ref}.")
    g.add("right:latest_first", True, "Latest first: " + ", ".join(reversed(idx)) + ".")
    if all(i in events for i in idx):
        names = [events[i] for i in idx]
        g.add("right:event_names", True, "First " + ", then ".join(names) + ".")
        g.add("right:numbered_list", True, "\n".join(f"{k + 1}. {_cap(n)}" for k, n in enumerate(names)))
        g.add("right:numbered_list", True, "\n".join(f"{k + 1}. ({i}) {events[i]}" for k, i in enumerate(idx)))
    g.add("right:tagged", True, f"[REASONING] {r.choice(_REASON_LEADS)}I lined up the dates.\n[ANSWER] {ref}")
    for d in g.f.of("other_order"):
        alt = re.findall(r"\d+", d.value)
        g.add("wrong:other_order", False, d.value, d.source)
        g.add("wrong:other_order", False, r.choice([", ".join(alt), "-".join(alt), " -> ".join(alt)]), d.source)
        if all(i in events for i in alt):
            g.add("wrong:other_order", False, "First " + ", then ".join(events[i] for i in alt) + ".", d.source)
    d = g.decoy("order-pair", "other_order")
    if d:
        g.add("wrong:hedge", False, f"Either {ref} or {d.value}.", d.source)
        g.add("wrong:retraction", False, f"{ref}. Actually, no - {d.value}.", d.source)
        g.add("wrong:other_order", False, "Latest first: " + ", ".join(idx) + ".", "other_order")
    g.add("wrong:partial_order", False, "".join(f"({i})" for i in idx[:-1]))
    g.add("wrong:refusal", False, r.choice(_REFUSALS))


def _refusal_cases(g: _Gen) -> None:
    fmt = (g.q.details or {}).get("source_answer_format") or ""
    for text in _REFUSALS + _REFUSALS_BY_FORMAT.get(fmt, []):
        g.add("right:refusal", True, text)
    r = g.rng("ar")
    for d in g.f.of("guess")[:3]:
        g.add("wrong:guess", False, d.value, d.source)
        g.add("wrong:guess", False, f"It was {d.value}.", d.source)
        g.add(
            "wrong:refusal_then_guess",
            False,
            r.choice(
                [
                    f"I'm not sure, but I think it was {d.value}.",
                    f"There's no record of it, but my best guess would be {d.value}.",
                    f"You never said exactly. Probably {d.value}.",
                ]
            ),
            d.source,
        )


def question_cases(facts: Facts, seed: int = 0) -> list[Case]:
    """Every case of one question (see :data:`PATTERNS`)."""
    g = _Gen(facts, seed)
    kind = facts.kind
    if kind == "refusal":
        _refusal_cases(g)
    elif kind == "ab":
        _ab_cases(g)
    elif kind == "yesno":
        _yesno_cases(g)
    elif kind == "order":
        _order_cases(g)
    else:
        _right_value_cases(g)
        _wrong_value_cases(g)
        if facts.key == KU_UPDATE:
            _ku_cases(g)
    return g.cases


def generate(all_facts: list[Facts], seed: int = 0) -> Iterator[Case]:
    for f in all_facts:
        yield from question_cases(f, seed)
