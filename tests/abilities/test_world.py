"""The world of a history is consistent: one user, chats with the contact the text names, nouns that
fit the image, time words that agree with what an image prints, and answers no template predicts."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from memlens.construction.abilities import ability_for, contexts
from memlens.construction.images.persona import USER_FAMILIES, persona_for, with_user
from memlens.construction.images.synthetic import get_family, render_bytes
from memlens.construction.images.truth import drawn_values, printed_strings
from memlens.construction.ontology.stage import build_topics, load_ontology_file
from memlens.core.schema import TR


@pytest.fixture(scope="module")
def topics():
    return build_topics(load_ontology_file(), 42)


def test_persona_is_one_per_seed_and_printed_where_the_user_appears():
    user = persona_for(42)
    assert user == persona_for(42) and re.fullmatch(r"[A-Z][\w'-]+ [A-Z][\w' -]+", user)
    assert len({persona_for(s) for s in range(40)}) > 5  # seeds differ
    rng = random.Random(0)
    for _ in range(6):
        bp = get_family("ticket").sample(rng, **with_user("ticket", {"kind": "boarding_pass"}, user))
        assert bp["passenger"] == user and bp["passenger_printed"] in bp["texts"]
        ev = get_family("ticket").sample(rng, **with_user("ticket", {"kind": "event_ticket"}, user))
        assert ev["holder"] == user and user in ev["texts"]
        chat = get_family("chat_screenshot").sample(rng, **with_user("chat_screenshot", {}, user))
        assert chat["me"] == user.split()[0] and chat["me"] in chat["participants"]
        bk = get_family("app_screenshot").sample(
            rng, **with_user("app_screenshot", {"kind": "booking_confirmation"}, user)
        )
        assert bk["guest_name"] == user
    # a plan's own passenger wins; families that never show the user do not receive it
    bp = get_family("ticket").sample(rng, **with_user("ticket", {"kind": "boarding_pass", "passenger": "A B"}, user))
    assert bp["passenger"] == "A B"
    assert with_user("receipt", {"n_items": 2}, user) == {"n_items": 2}
    assert set(USER_FAMILIES) == {"ticket", "chat_screenshot", "app_screenshot"}
    # ... and the user never changes what a family without a user draws
    a = get_family("receipt").sample(random.Random(3), n_items=2)
    b = get_family("receipt").sample(random.Random(3), n_items=2, user=user)
    assert a == b


def test_chat_shows_the_contact_the_mention_names():
    rng = random.Random(1)
    for _ in range(30):
        t = get_family("chat_screenshot").sample(rng)
        thing, _ctx = contexts.thing_for(rng, "chat_screenshot", set(), truth=t)
        if t["is_group"]:
            assert thing.startswith("the group chat about ") and t["named_in_text"] == []
        else:
            assert thing.startswith(f"my chat with {t['title']} about ") and t["named_in_text"] == [t["title"]]
            # the contact links text and image: it is not a value only the image shows
            assert t["title"] not in drawn_values(t) and t["title"] not in printed_strings(t)
            assert t["title"] in t["texts"]
    # a chat planned with a contact is a one-to-one chat with them
    t = get_family("chat_screenshot").sample(random.Random(2), contact="Maya", title="Maya")
    assert not t["is_group"] and t["title"] == "Maya" and t["named_in_text"] == ["Maya"]


def test_named_sign_nouns_fit_the_kind():
    rng = random.Random(4)
    seen = Counter()
    for kind, noun in contexts.SIGN_NOUN.items():
        for _ in range(5):
            t = get_family("named_sign").sample(rng, kind=kind)
            thing, ctx = contexts.thing_for(rng, "named_sign", set(), truth=t)
            assert thing == f"{noun} {ctx}"
            seen[kind] += 1
    assert contexts.SIGN_NOUN["book_cover"] != contexts.SIGN_NOUN["shop_sign"] == "the place from"
    assert len(seen) == 5


def test_time_words_agree_with_printed_dates():
    """Images that print a date or a time never get a session-relative time word or time suffix
    from the shared phrasing; undated ones do (so the words do not mark evidence)."""
    rel = re.compile(
        r"this morning|yesterday evening|the other day|last weekend|last week|last month|on Friday|in spring|back in winter"
    )
    rng = random.Random(5)
    for fam in sorted(contexts.DATED_FAMILIES):
        for _ in range(150):
            thing, _ctx = contexts.thing_for(rng, fam, set())
            m = contexts.mention_for(rng, fam, thing)
            assert not rel.search(m), (fam, m)
    undated = [
        contexts.mention_for(rng, "named_sign", contexts.thing_for(rng, "named_sign", set())[0]) for _ in range(200)
    ]
    share = sum(bool(re.search(r"this morning|yesterday evening", m)) for m in undated) / len(undated)
    assert 0.35 < share < 0.65, share


def test_shop_sign_colours_are_ground_truth_and_constraints():
    rng = random.Random(6)
    t = get_family("named_sign").sample(rng, kind="shop_sign", board_color=[20, 36, 72], awning_color=[30, 90, 60])
    assert t["board_color"] == [20, 36, 72] and t["awning_color"] == [30, 90, 60]
    img = get_family("named_sign").render(t)
    # the awning is drawn in the colour the truth records
    w, h = img.size
    px = Counter(img.getpixel((x, y)) for x in range(0, w, 7) for y in range(int(h * 0.33), int(h * 0.45), 5))
    assert any(abs(c[0] - 30) + abs(c[1] - 90) + abs(c[2] - 60) < 20 for c in px)
    assert render_bytes(t) == render_bytes(dict(t))


def _dc_plans(topics, n):
    ab = ability_for(TR)
    out = []
    for i in range(n):
        v = ab.variants["duration_comparison"][i % 3]  # the day-based modes
        rng = random.Random(f"dc-{i}")
        out.append(ab.plan(rng, topics[i % len(topics)], "duration_comparison", v, f"p{i}", set()))
    return out


def test_duration_comparison_not_predictable_from_option_kinds(topics):
    """Both options' durations follow one law (the tighter cap of the two kinds), so which one is
    longer does not follow the kinds of interval listed."""
    cap = {"trip": 45, "calendar_span": 24}
    by_kind: dict[str, list[int]] = {}
    for p in _dc_plans(topics, 90):
        kinds, (da, db) = p.latent["interval_kinds"], p.latent["durations"]
        m = min(cap.get(kinds[0], 90), cap.get(kinds[1], 90))
        assert da <= m and db <= m
        for k, won in ((kinds[0], da > db), (kinds[1], db > da)):
            if kinds[0] != kinds[1]:
                by_kind.setdefault(k, []).append(int(won))
    for k, wins in by_kind.items():
        if len(wins) >= 20:  # no kind of interval is usually the longer one
            assert 0.25 < sum(wins) / len(wins) < 0.75, (k, sum(wins), len(wins))


def test_mention_phrasing_fits_the_family():
    """A wall calendar is photographed, never "found in my bag" or "filed away" like a receipt."""
    from memlens.construction.text import textbank

    rng = random.Random(8)
    kept = re.compile(r"in my bag|filing it away|holding on to|scanned")
    photo = {t.split("{thing}")[0] for t in textbank.mention_templates("photo")}
    for _ in range(100):
        thing, _ctx = contexts.thing_for(rng, "calendar_page", set())
        m = contexts.mention_for(rng, "calendar_page", thing)
        assert not kept.search(m), m
        assert any(m.startswith(p.strip()) for p in photo if p.strip()) or m.startswith(("This", "Here"))
    assert contexts.mention_kind("receipt") == textbank.FAMILY_KIND["receipt"] == "document"
