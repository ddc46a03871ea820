"""Reactions to the kind of image, sentence variation (no verbatim repeats), evidence clauses in
haystack mentions."""

from __future__ import annotations

import random
import re

import pytest

from memlens.construction.abilities import ku, tr
from memlens.construction.generate import echoes
from memlens.construction.text import textbank as tb
from memlens.construction.text.sessions import Mention, SessionWriter, WriterConfig
from memlens.construction.text.validators import RejectionLog
from memlens.core.schema import Topic

NUMBER_WORDS = re.compile(
    r"\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|january|february|"
    r"march|april|june|july|august|september|october|november|december|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|yesterday|o'clock)\b|\d",
    re.IGNORECASE,
)
KIND_WORD = {
    "receipt": ("receipt",),
    "boarding_pass": ("pass",),
    "calendar_page": ("calendar",),
    "clock": ("clock",),
    "book_cover": ("book", "cover"),
    "license_plate": ("plate",),
    "price_tag": ("price", "label"),
}


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= tb.SHORT_SENTENCE_WORDS]


def test_reactions_name_the_kind_of_image_and_no_value():
    rng = random.Random(0)
    for kind in tb.IMAGE_KINDS:
        for _ in range(30):
            r = tb.image_reaction(rng, kind)
            assert not NUMBER_WORDS.search(r), (kind, r)
            assert r[0].isupper() and r.endswith("."), r
            if kind in KIND_WORD:
                assert any(w in r.lower() for w in KIND_WORD[kind]), (kind, r)
    # an unknown kind reads as an image of any kind
    assert "receipt" not in tb.image_reaction(random.Random(1), "hologram")
    # reactions vary: many distinct sentences per kind
    assert len({tb.image_reaction(rng, "receipt") for _ in range(200)}) > 100


def test_assistant_reply_opens_with_the_reaction_and_keeps_its_shape():
    rng = random.Random(3)
    for _ in range(40):
        text = tb.assistant_reply(
            rng, topic_title="Grocery shopping", subtopic="the dairy section", track="experience", reaction="receipt"
        )
        first = text.split("\n\n")[0]
        assert "receipt" in first.lower() and "the picture you shared" not in text
        assert 150 <= tb.count_words(text) <= 250 and text.rstrip().endswith("?")
        assert not NUMBER_WORDS.search(text), text


def test_vary_rewrites_within_the_sentence_and_keeps_articles_right():
    rng = random.Random(5)
    s = "It is an important and really helpful habit to use a simple budget for things like this."
    outs = {tb.vary(rng, s, level) for level in (0, 1, 2) for _ in range(40)}
    assert s not in outs or len(outs) > 50
    assert len(outs) > 60
    for o in outs:
        assert not re.search(r"\ban [^aeiouAEIOU\W]|\ba [aeioAEIO]", o), o  # a/an agree with the new word
        assert not NUMBER_WORDS.search(o) and o.endswith(".")
    lvl2 = [tb.vary(rng, s, 2) for _ in range(20)]
    assert all(o.split(",")[0] in {x.rstrip(",") for x in tb._OPENERS} for o in lvl2)  # an opener in front
    q = "Where would you start?"
    assert all(tb.vary(rng, q, 2).endswith("?") and tb.vary(rng, q, 2) != q for _ in range(20))


def topic(i: int) -> Topic:
    return Topic(f"t{i}", "experience", "hobbies", "Home baking", ["sourdough starter"])


def test_no_sentence_repeats_across_sessions_of_one_writer():
    """Sixty sessions on one subtopic (the worst case for template reuse): no sentence of four or
    more words appears twice, the mentions stay verbatim, and the bank alone would have repeated."""
    w = SessionWriter(WriterConfig(), RejectionLog())
    seen_mentions = []
    all_sents: list[str] = []
    for i in range(60):
        rng = random.Random(i)
        m = Mention(f"I took a picture of the receipt from the bakery run number{i} <image>.", [f"img{i}"])
        m.text = m.text.replace(f"number{i}", "with Ada" if i % 2 else "with Ben")
        m.image_kind = "receipt"
        s = w.write(rng, "haystack", topic(0), "sourdough starter", [m])
        texts = [t.content for t in s.turns]
        assert any(m.text in t for t in texts)  # verbatim mention
        seen_mentions.append(m.text)
        for t in texts:
            all_sents += [x for x in sentences(t.replace(m.text, " ")) if "<image>" not in x]
        for j, t in enumerate(s.turns):  # the reply to the image turn reacts to a receipt
            if t.images:
                assert "receipt" in s.turns[j + 1].content.split("\n\n")[0].lower()
    dup = [x for x in set(all_sents) if all_sents.count(x) > 1]
    assert not dup, dup[:5]
    assert w.repeats["rewritten"] > 100 and w.repeats["kept"] == 0


def test_shared_seen_set_spans_writers_and_fillers():
    seen: set[str] = set()
    a = SessionWriter(WriterConfig(), RejectionLog(), seen=seen)
    b = SessionWriter(WriterConfig(), RejectionLog(), seen=seen)
    out = []
    for i in range(15):
        for w in (a, b):
            s = w.write_filler(random.Random(i), n_turns=8)
            out += [x for t in s.turns for x in sentences(t.content)]
    assert len(out) == len(set(out))
    assert a.repeats["rewritten"] + b.repeats["rewritten"] > 0


# -------------------------------------------------------------------------------------- echoes
def test_clause_kinds_are_recognised_in_the_abilities_own_phrasings():
    attr = "the café I go to before work"
    for t in ku.FIRST_TAILS + ku.UPDATE_TAILS:
        assert echoes.kinds_in("I took a picture of it <image>" + t.format(attr=attr)) == {"update"}
    from datetime import date

    assert echoes.kinds_in("x, taken on " + tr.date_words(date(2024, 3, 3), date(2024, 5, 1))) == {"date"}
    assert echoes.kinds_in("; I had started at " + tr.time_words("09:15")) == {"started"}
    assert echoes.kinds_in("I took a picture of the place from lunch <image>.") == set()


def test_rates_are_measured_per_family():
    rates = echoes.measure_rates(
        [("named_sign", "a <image>, and it's my spot now"), ("named_sign", "b <image>"), ("clock", "c <image>")]
    )
    assert rates["named_sign"]["update"] == 0.5 and rates["clock"] == {"update": 0.0, "date": 0.0, "started": 0.0}


def test_haystack_clauses_avoid_what_questions_use():
    reserved = {
        r[0].format(q=q) for c in ku.CATEGORIES if c.family == "named_sign" for r in c.roles for q in c.quals[:-1]
    }
    taken = {(m, d) for m in range(1, 13) for d in range(1, 28)}  # only the 28th of each month is free
    e = echoes.Echoes({"named_sign": {"update": 0.5, "date": 0.5}, "clock": {"started": 1.0}}, reserved, taken)
    rng = random.Random(0)
    kinds = {"update": 0, "date": 0}
    for _ in range(300):
        t = e.tail(rng, "named_sign", {"kind": "shop_sign", "text": "Luna Cafe"})
        if t is None:
            continue
        k = echoes.kinds_in("x <image>" + t)
        assert len(k) == 1
        kinds[next(iter(k))] += 1
        assert not any(r in t for r in reserved), t
        if "date" in k:
            assert "twenty-eighth" in t, t
    assert kinds["update"] > 100 and kinds["date"] > 100
    # the clock clause: a start time before the time the clock shows, same half of the day
    for _ in range(50):
        t = e.tail(rng, "clock", {"hour": 15, "minute": 40})
        assert t is None or ("I had started at" in t and "afternoon" in t)
        assert t is None or not any(a in t for a in tr.ACTIVITIES)
    assert e.tail(rng, "receipt", {}) is None  # a family whose evidence never uses a clause


@pytest.mark.parametrize("family", ["named_sign", "price_tag", "ticket"])
def test_update_clauses_fit_the_image_family(family):
    e = echoes.Echoes({family: {"update": 1.0}}, set(), set())
    fams = {c.family for c in ku.CATEGORIES}
    t = e.tail(random.Random(2), family, {})
    if family in fams:
        attrs = {r[0].format(q=q) for c in ku.CATEGORIES if c.family == family for r in c.roles for q in c.quals}
        assert any(a in t for a in attrs), t
    else:
        assert t is None
