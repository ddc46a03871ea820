"""Tests for the template text bank and the versioned topic ontology."""

from __future__ import annotations

import json
import random
import re
from importlib import resources

import pytest

from memlens.construction.text import textbank as tb

FAMILIES = {
    "object_scene",
    "receipt",
    "price_tag",
    "named_sign",
    "ticket",
    "clock",
    "calendar_page",
    "chat_screenshot",
    "app_screenshot",
}
SUB_ATTRIBUTES = {
    "identification": {
        "retail_and_commerce",
        "home_objects_and_belongings",
        "vehicles_and_mobility",
        "urban_environment_and_landmarks",
        "workspace_and_institutions",
    },
    "experience": {
        "dining_and_food_activities",
        "fitness_and_outdoor_recreation",
        "social_and_community_gatherings",
        "cultural_and_entertainment_outings",
        "routines_and_errands",
        "travel_and_mobility_outings",
        "home_life_and_indoor_hobbies",
    },
    "document": {
        "receipts_and_bills",
        "tickets_passes_and_itineraries",
        "schedules_and_calendars",
        "contracts_and_application_forms",
        "personal_records_and_logs",
        "subscriptions_and_digital_records",
        "health_and_service_records",
    },
}
TARGET_SHARES = {"identification": 0.4, "experience": 0.4, "document": 0.2}

DIGIT = re.compile(r"\d")
# Number words, months and weekdays would look like answer-critical facts.
NUMBER_WORDS = re.compile(
    r"\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|"
    r"thousand|million|dozen|dozens|percent|january|february|march|april|june|july|august|september|"
    r"october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|"
    r"tomorrow|o'clock)\b",
    re.IGNORECASE,
)
MENTIONS = [
    "I snapped the receipt from lunch <image> and I'm trying to keep my spending in check.",
    "Here's the bridge I walked across with Emma <image>, we met there at 7:30 pm.",
    "My new favorite drink is this tangy round thing <image>",
    "the shelf shown in <image> is where I keep the spare keys.",
    "I took a screenshot of the booking <image> — it says the total was $84.20 for 3 nights!",
]


@pytest.fixture(scope="module")
def ontology() -> dict:
    path = resources.files("memlens.construction.ontology").joinpath("data/ontology_v1.json")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def topics(ontology) -> list[tuple[str, str, str]]:
    out = []
    for track, tdata in ontology["tracks"].items():
        for sa in tdata["sub_attributes"].values():
            for topic in sa["topics"]:
                for sub in topic["subtopics"]:
                    out.append((track, topic["title"], sub))
    return out


def _sample(rng: random.Random, topics):
    track, title, sub = rng.choice(topics)
    return {"track": track, "topic_title": title, "subtopic": sub}


# ------------------------------------------------------------------ ontology
def test_ontology_structure(ontology):
    assert ontology["version"] == "1"
    assert set(ontology["tracks"]) == set(SUB_ATTRIBUTES)
    for track, tdata in ontology["tracks"].items():
        assert set(tdata["sub_attributes"]) == SUB_ATTRIBUTES[track]
        assert tdata["share"] == pytest.approx(TARGET_SHARES[track])
        for sa in tdata["sub_attributes"].values():
            assert sa["title"] and len(sa["topics"]) >= 5


def test_ontology_shares_near_40_40_20(ontology):
    counts = {t: sum(len(sa["topics"]) for sa in d["sub_attributes"].values()) for t, d in ontology["tracks"].items()}
    total = sum(counts.values())
    assert total >= 150
    for track, n in counts.items():
        assert abs(n / total - TARGET_SHARES[track]) <= 0.05, (track, n, total)


def test_ontology_topics_valid(ontology):
    titles = []
    for tdata in ontology["tracks"].values():
        for sa in tdata["sub_attributes"].values():
            for topic in sa["topics"]:
                titles.append(topic["title"].lower())
                fams = topic["families"]
                assert len(fams) >= 2 and len(set(fams)) == len(fams), topic["title"]
                assert set(fams) <= FAMILIES, topic["title"]
                subs = topic["subtopics"]
                assert len(subs) >= 8, topic["title"]
                assert len({s.lower() for s in subs}) == len(subs), topic["title"]
                for text in [topic["title"], *subs]:
                    assert text == text.strip() and text
                    assert not DIGIT.search(text), text
                    assert "<image>" not in text
    assert len(titles) == len(set(titles)), "topic titles must be unique"


# ------------------------------------------------------------------ determinism
def test_deterministic(topics):
    kw = _sample(random.Random(3), topics)
    for fn, extra in [
        (tb.assistant_reply, {"acknowledge": "the photo of your shelf"}),
        (tb.user_turn, {"mention": MENTIONS[0]}),
        (tb.user_turn, {}),
        (tb.session_opening, {}),
    ]:
        a = fn(random.Random(42), **kw, **extra)
        b = fn(random.Random(42), **kw, **extra)
        c = fn(random.Random(43), **kw, **extra)
        assert a == b
        assert a != c
    assert tb.filler_session(random.Random(9), n_turns=8) == tb.filler_session(random.Random(9), n_turns=8)
    assert tb.filler_session(random.Random(9), n_turns=8) != tb.filler_session(random.Random(10), n_turns=8)


def test_only_passed_rng_is_used(topics):
    kw = _sample(random.Random(5), topics)
    random.seed(1)
    a = tb.assistant_reply(random.Random(7), **kw)
    random.seed(2)
    b = tb.assistant_reply(random.Random(7), **kw)
    assert a == b


# ------------------------------------------------------------------ assistant replies
@pytest.mark.parametrize("words", [(150, 250), (100, 140), (60, 90), (200, 300)])
def test_assistant_word_range(topics, words):
    rng = random.Random(hash(words) & 0xFFFF)
    for seed in range(300):
        kw = _sample(rng, topics)
        ack = rng.choice([None, "the photo of your shelf", "the receipt you shared"])
        text = tb.assistant_reply(random.Random(seed), **kw, words=words, acknowledge=ack)
        n = tb.count_words(text)
        assert words[0] <= n <= words[1], (n, words, text)


def test_assistant_tiny_range_still_bounded(topics):
    for seed in range(50):
        kw = _sample(random.Random(seed), topics)
        text = tb.assistant_reply(random.Random(seed), **kw, words=(5, 12))
        assert tb.count_words(text) <= 12
        assert text.endswith("?")


def test_assistant_no_numbers_no_image(topics):
    rng = random.Random(0)
    for seed in range(400):
        kw = _sample(rng, topics)
        ack = rng.choice([None, "the photo of your shelf", "the receipt <image> with 3 items for $12.50"])
        text = tb.assistant_reply(random.Random(seed), **kw, acknowledge=ack)
        assert not DIGIT.search(text), text
        assert "<image>" not in text
        assert not NUMBER_WORDS.search(text), NUMBER_WORDS.search(text).group(0)


def test_assistant_structure(topics):
    rng = random.Random(1)
    for seed in range(300):
        kw = _sample(rng, topics)
        text = tb.assistant_reply(random.Random(seed), **kw, acknowledge="the photo you sent" if seed % 2 else None)
        assert text.endswith("?")
        sentences = re.split(r"(?<=[.?!])\s+", text)
        # exactly one question, and it is the knowledge-oriented follow-up at the end
        assert sum(s.endswith("?") for s in sentences) == 1, text
        last = sentences[-1]
        assert re.match(r"^(Would|Should|Shall|Do you want|Want me)\b", last), last
        assert not re.search(r"\b(prefer|favorite|favourite|how are you|how do you feel)\b", last, re.I), last
        if seed % 2:
            assert "the photo you sent" in sentences[0].lower()  # acknowledged up front


def test_assistant_mentions_subtopic(topics):
    rng = random.Random(2)
    hits = 0
    for seed in range(200):
        kw = _sample(rng, topics)
        text = tb.assistant_reply(random.Random(seed), **kw)
        hits += kw["subtopic"].lower() in text.lower()
    assert hits >= 190


def test_assistant_rejects_bad_args():
    with pytest.raises(ValueError):
        tb.assistant_reply(random.Random(0), topic_title="X", subtopic="y", track="nope")
    with pytest.raises(ValueError):
        tb.assistant_reply(random.Random(0), topic_title="X", subtopic="y", track="document", words=(10, 5))


# ------------------------------------------------------------------ user turns
def test_user_turn_word_range_and_no_digits(topics):
    rng = random.Random(4)
    for seed in range(500):
        kw = _sample(rng, topics)
        text = tb.user_turn(random.Random(seed), **kw)
        assert 25 <= tb.count_words(text) <= 90, text
        assert not DIGIT.search(text) and "<image>" not in text
        assert not NUMBER_WORDS.search(text), text


def test_user_turn_custom_range(topics):
    rng = random.Random(5)
    for seed in range(200):
        kw = _sample(rng, topics)
        text = tb.user_turn(random.Random(seed), **kw, words=(40, 60))
        assert 40 <= tb.count_words(text) <= 60, text


def test_user_turn_mention_verbatim(topics):
    rng = random.Random(6)
    first = later = 0
    for seed in range(500):
        kw = _sample(rng, topics)
        mention = MENTIONS[seed % len(MENTIONS)]
        text = tb.user_turn(random.Random(seed), **kw, mention=mention)
        assert mention in text, (mention, text)
        assert text.count("<image>") == mention.count("<image>")
        n_mention = tb.count_words(mention)
        assert tb.count_words(text) <= max(90, n_mention + 10)
        assert tb.count_words(text) >= 25
        if text.startswith(mention):
            first += 1
        else:
            later += 1
    # indirect embedding: usually the turn opens with something else, sometimes with the mention
    assert later > 0.6 * (first + later)
    assert first > 0.05 * (first + later)


def test_user_turn_text_around_mention_has_no_digits(topics):
    rng = random.Random(7)
    for seed in range(200):
        kw = _sample(rng, topics)
        mention = MENTIONS[1]
        text = tb.user_turn(random.Random(seed), **kw, mention=mention)
        assert not DIGIT.search(text.replace(mention, ""))


def test_long_mention_is_kept(topics):
    mention = " ".join(["I noticed the sign <image> and"] + ["it was really quite something"] * 20) + "."
    text = tb.user_turn(random.Random(0), **_sample(random.Random(0), topics), mention=mention)
    assert mention in text


def test_session_opening(topics):
    rng = random.Random(8)
    for seed in range(300):
        kw = _sample(rng, topics)
        text = tb.session_opening(random.Random(seed), **kw)
        assert 20 <= tb.count_words(text) <= 80, text
        assert not DIGIT.search(text) and "<image>" not in text


# ------------------------------------------------------------------ filler sessions
@pytest.mark.parametrize("n_turns", [0, 1, 2, 7, 10, 20])
def test_filler_session_shape(n_turns):
    for seed in range(40):
        turns = tb.filler_session(random.Random(seed), n_turns=n_turns)
        assert len(turns) == n_turns
        for i, (role, text) in enumerate(turns):
            assert role == ("user" if i % 2 == 0 else "assistant")
            assert text.strip()
            assert not DIGIT.search(text) and "<image>" not in text
            if role == "assistant":
                assert 150 <= tb.count_words(text) <= 250, tb.count_words(text)


def test_filler_custom_words_and_variety():
    firsts = set()
    for seed in range(200):
        turns = tb.filler_session(random.Random(seed), n_turns=6, words=(80, 120))
        firsts.add(turns[0][1])
        for role, text in turns:
            if role == "assistant":
                assert 80 <= tb.count_words(text) <= 120
    assert len(firsts) > 120


def test_filler_long_sessions_do_not_repeat_much():
    for seed in range(20):
        turns = tb.filler_session(random.Random(seed), n_turns=20)
        sents = [s for role, t in turns if role == "assistant" for s in re.split(r"(?<=[.?!])\s+", t)]
        assert len(set(sents)) / len(sents) > 0.6


# ------------------------------------------------------------------ mentions
def test_mention_templates():
    assert set(tb.MENTION_KINDS) >= {"photo", "screenshot", "document"}
    for kind in tb.MENTION_KINDS:
        temps = tb.mention_templates(kind)
        assert len(temps) >= 5
        for t in temps:
            assert "{thing} <image>" in t
            assert not DIGIT.search(t)
    assert set(tb.FAMILY_KIND) == FAMILIES
    assert set(tb.FAMILY_KIND.values()) <= set(tb.MENTION_KINDS)
    with pytest.raises(ValueError):
        tb.mention_templates("video")


def test_render_mention():
    for seed in range(100):
        rng = random.Random(seed)
        m = tb.render_mention(rng, kind="photo", thing="the receipt from lunch")
        assert "the receipt from lunch <image>" in m and "{" not in m and m[-1] in ".!?"
        m = tb.render_mention(
            rng, kind="document", thing="my ticket", when="the concert", tail="and the seat was great"
        )
        assert "my ticket <image>" in m and m.endswith("and the seat was great.")


# ------------------------------------------------------------------ vocabulary and speed
def test_template_inventory_is_large():
    inv = tb.template_inventory()
    assert inv["total"] >= 600
    assert inv["angle_supports"] + inv["domain"] >= 250
    assert inv["filler_domains"] >= 10


def test_style_varies_across_sessions(topics):
    rng = random.Random(12)
    replies = [tb.assistant_reply(random.Random(s), **_sample(rng, topics)) for s in range(200)]
    first_sentences = {re.split(r"(?<=[.?!])\s+", r)[0] for r in replies}
    assert len(first_sentences) > 120
    trigrams: dict[str, int] = {}
    for r in replies:
        for s in set(re.split(r"(?<=[.?!])\s+", r)):
            trigrams[s] = trigrams.get(s, 0) + 1
    # no single sentence dominates the corpus
    assert max(trigrams.values()) < 0.25 * len(replies)
