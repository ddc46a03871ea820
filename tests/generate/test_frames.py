"""Mention frames: every phrasing the evidence uses is one the haystack writes, with fresh values.

Evidence mentions come from the abilities themselves (plan + sampled ground truth + build, no
rendering), a few plans per variant; a haystack image is a fresh sample of the same request.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from memlens.construction.abilities import answerable
from memlens.construction.generate import frames
from memlens.construction.images.synthetic import get_family
from memlens.construction.ontology.stage import build_topics, load_ontology_file

SEEDS = range(3)


def _sample(req, key: str) -> dict:
    return get_family(req.family).sample(random.Random(key), **req.constraints)


@pytest.fixture(scope="module")
def evidence():
    """(family, truth, mention, request, question) for the image facts of plans of every variant."""
    topics = build_topics(load_ontology_file(), 42)
    reserved: set[str] = set()
    out, drafts = [], []
    for cls in answerable():
        ab = cls()
        for sub, variants in ab.variants.items():
            for v in variants:
                for seed in SEEDS:
                    key = f"{ab.question_type}-{sub}-{v}-{seed}"
                    rng = random.Random(key)
                    topic = topics[rng.randrange(len(topics))]
                    try:
                        plan = ab.plan(random.Random("plan-" + key), topic, sub, v, "p-" + key, reserved)
                        truths = [_sample(r, f"img-{key}-{k}") for k, r in enumerate(plan.images)]
                        d = ab.build(random.Random("build-" + key), plan, truths)
                    except (ValueError, KeyError, RuntimeError):
                        continue  # a draw the ability rejects (the generate stage drops it too)
                    drafts.append(d)
                    for f in d.facts:
                        if f.image_idx:
                            k = f.image_idx[0]
                            req = plan.images[k]
                            out.append((req.family, truths[k], f.mention, req, key))
    return out, drafts, reserved


@pytest.fixture(scope="module")
def framer(evidence):
    ev, drafts, reserved = evidence
    pools, fillers = frames.measure([(fam, kind, text) for fam, kind, text, _, _ in ev])
    forbidden = sorted({f for d in drafts for f in d.forbidden if f})
    dates = frames.echoes.taken_dates([f.mention for d in drafts for f in d.facts] + [d.question for d in drafts])
    reserved = reserved | {c for d in drafts for c in d.contexts}
    return frames.Frames(pools, reserved, dates, forbidden, fillers)


def _same(a: str, b: str) -> bool:
    return a.replace("{anag}", "{ana}") == b.replace("{anag}", "{ana}")


def test_the_abilities_write_evidence_of_every_family(evidence):
    ev, _, _ = evidence
    fams = Counter(fam for fam, *_ in ev)
    assert set(fams) >= {"named_sign", "receipt", "price_tag", "ticket", "chat_screenshot", "app_screenshot"}
    assert set(fams) >= {"clock", "calendar_page", "object_scene"}


def test_every_evidence_mention_has_a_frame(evidence):
    """A mention whose wording has no frame (e.g. a value the slots do not cover) would be a
    phrasing only evidence uses."""
    lex = frames.Lexicon.build()
    unframed = [text for _, _, text, _, _ in evidence[0] if lex.frame_of(text) is None]
    assert not unframed, unframed[:5]


def test_every_evidence_frame_is_in_the_haystack_frame_space(evidence, framer):
    """Each evidence frame, refilled for a fresh image of its own request, is a mention of the same
    frame (so the haystack writes it) carrying none of the question's values."""
    from memlens.construction.abilities.contexts import DATED_FAMILIES

    lex = framer.lex
    ev, _, _ = evidence
    missing, relative = [], 0
    for i, (fam, _, text, req, key) in enumerate(ev):
        frame = lex.frame_of(text)[0]
        if fam in DATED_FAMILIES and frames.RELATIVE.search(frame):
            relative += 1  # the one evidence-only kind: a dated image placed relative to its session
            continue
        truth = _sample(req, f"haystack-{key}-{i}")
        got = None
        for t in range(6):
            got = framer.fill(random.Random(f"fill-{i}-{t}"), frame, fam, truth)
            if got is not None:
                break
        back = lex.frame_of(got) if got else None
        if back is None or not _same(back[0], frame):
            missing.append((fam, frame, got))
    assert len(missing) <= 0.02 * len(ev), missing[:8]
    assert relative <= 0.04 * len(ev), relative


def test_haystack_mentions_hold_no_reserved_context_nor_forbidden_string(evidence, framer):
    from memlens.construction.text.validators import contains_token_bounded

    ev, _, _ = evidence
    n = 0
    for i, (fam, _, _, req, key) in enumerate(ev):
        truth = _sample(req, f"draw-{key}-{i}")
        m = framer.draw(random.Random(f"draw-{i}"), fam, truth)
        if m is None:
            continue
        n += 1
        low = m.lower()
        assert m.count("<image>") == 1
        assert not [r for r in framer.reserved if len(r) > 3 and r.lower() in low], m
        assert not [f for f in framer.forbidden if contains_token_bounded(m, f)], m
        assert not frames.echoes.taken_dates([m]) & framer.dates, m
    assert n >= 0.9 * len(ev)


def test_a_chat_mention_names_the_contact_the_image_shows(framer):
    pool = framer.pool("chat_screenshot", {"kind": "chat"})
    assert pool and all("{p}" in f for f in pool)
    m = framer.fill(random.Random(0), pool[0], "chat_screenshot", {"kind": "chat", "title": "Quentin"})
    assert m is not None and "Quentin" in m
    assert framer.fill(random.Random(0), pool[0], "chat_screenshot", {"kind": "chat", "is_group": True}) is None


def test_an_image_that_prints_a_date_is_never_placed_relative_to_the_session(framer):
    """A temporal fact may say "the receipt from ... last month" (its session date is fixed against
    the printed one); a haystack receipt, dated at random, never is."""
    frame = "Here's the receipt from {occ} with {p} last month <image> from this morning."
    assert framer.fill(random.Random(0), frame, "receipt", {"kind": "cafe"}) is None
    got = framer.fill(random.Random(0), "Here's the receipt from {occ} with {p} <image>.", "receipt", {"kind": "cafe"})
    assert got is not None and "<image>" in got
    assert framer.fill(random.Random(0), frame, "named_sign", {"kind": "book_cover"}) is not None


def test_a_frame_with_a_value_outside_the_slots_is_not_used():
    lex = frames.Lexicon.build()
    assert lex.frame_of('Here\'s my ticket for "Velvet Static" <image>.') is None
    assert lex.frame_of("I kept the receipt from lunch <image>, it lists 12 items.") is None
    f, fills = lex.frame_of("Here's the receipt from the flea market with Leo <image> and I paid $29.99 there.")
    assert "{amt:$#}" in f and ("p", "Leo") in fills and "29" not in f
