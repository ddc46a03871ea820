"""Knowledge Update (KU): four-fact chains whose values are visible only in the images."""

from __future__ import annotations

import random
from dataclasses import asdict
from pathlib import Path

import pytest

from memlens.construction.abilities import ability_for, chance_answer
from memlens.construction.abilities.base import Plan
from memlens.construction.abilities.derive import derive
from memlens.construction.abilities.ku import (
    BRANDS,
    CATEGORIES,
    CHAIN,
    FIRST_TAILS,
    HOTELS,
    MAX_DESCRIPTOR_WORDS,
    MEET_PLACES,
    ONLINE_SHOPS,
    SERVICES,
    UPDATE_TAILS,
    VARIANTS,
    KnowledgeUpdate,
    distinctive,
    name_of,
    tokens,
)
from memlens.construction.filter.channels import MetadataChannel
from memlens.construction.images.synthetic import get_family, render_bytes
from memlens.construction.images.truth import printed_strings
from memlens.construction.ontology.stage import build_topics, load_ontology_file
from memlens.construction.text.validators import contains_token_bounded
from memlens.core.schema import KU, ImageRecord, Question

SEEDS = range(12)


@pytest.fixture(scope="module")
def topics():
    return build_topics(load_ontology_file(), 42)


def make(seed: int, variant: str, topics, reserved=None):
    ku = KnowledgeUpdate()
    rng = random.Random(seed)
    topic = topics[rng.randrange(len(topics))]
    reserved = set() if reserved is None else reserved
    plan = ku.plan(random.Random(f"plan-{seed}-{variant}"), topic, "", variant, f"p{seed}", reserved)
    truths = [
        get_family(r.family).sample(random.Random(f"img-{seed}-{k}"), **r.constraints)
        for k, r in enumerate(plan.images)
    ]
    draft = ku.build(random.Random(f"build-{seed}"), plan, truths)
    return plan, truths, draft


def cases(topics):
    for variant in VARIANTS:
        for seed in SEEDS:
            yield variant, seed, *make(seed, variant, topics)


def test_registry_and_official_subtype():
    ku = ability_for(KU)
    assert isinstance(ku, KnowledgeUpdate)
    assert ku.question_type == "knowledge_update"
    assert list(ku.variants) == [""]
    assert set(ku.variants[""]) == set(ku.families) == set(VARIANTS)
    assert len(CATEGORIES) >= 10 and len({c.key for c in CATEGORIES}) == len(CATEGORIES)


def test_chain_answer_and_derivation(topics):
    for variant, _seed, plan, truths, d in cases(topics):
        assert plan.question_type == KU and plan.question_subtype == "" and plan.variant == variant
        assert len(plan.images) == CHAIN and len(d.facts) == CHAIN
        cat = next(c for c in CATEGORIES if c.key == d.details["category"])
        names = [name_of(t, cat.path) for t in truths]
        assert names == plan.latent["names"], "the image shows the planned name"
        assert len({n.lower() for n in names}) == CHAIN
        assert d.answer == names[-1] and d.old_answer == names[-2]
        assert derive(d.derivation, truths) == d.answer
        assert d.derivation["op"] == "last"
        assert derive(d.derivation, [None] * CHAIN) is None, "not derivable from text alone"
        assert d.ordered and d.image_essential
        assert [f.image_idx for f in d.facts] == [[k] for k in range(CHAIN)]


def test_details_labels(topics):
    for variant, _seed, _plan, _truths, d in cases(topics):
        det = d.details
        assert det["chain_length"] == CHAIN and det["answer_format"] == "name"
        assert det["category"] in {c.key for c in CATEGORIES}
        assert len(det["descriptors"]) == CHAIN and len(set(det["descriptors"])) == CHAIN
        assert det["ambiguity"] == d.forbidden == det["chain_values"]
        assert d.answer in d.forbidden and d.old_answer in d.forbidden
        assert d.contexts == [det["attribute"]]
        if variant in ("shop_sign", "book_cover", "product_box", "license_plate", "street_sign"):
            assert det["kind"] == variant


def test_mentions_keep_identity_in_images_only(topics):
    for _variant, _seed, _plan, truths, d in cases(topics):
        cat = next(c for c in CATEGORIES if c.key == d.details["category"])
        name_words = set().union(*(distinctive(cat, n) for n in d.forbidden))
        # what only the images show (a chat's contact is shown and named: it links text and image)
        drawn = {v for t in truths for v in printed_strings(t, min_len=2)}
        for j, f in enumerate(d.facts):
            m = f.mention
            if cat.family == "chat_screenshot":  # the chat is with the person the mention names
                t = truths[f.image_idx[0]]
                assert not t["is_group"] and t["named_in_text"] == [t["title"]]
                assert f"my chat with {t['title']} about" in m, (m, t["title"])
            assert m.count("<image>") == 1 == len(f.image_idx)
            desc = d.details["descriptors"][j]
            assert desc.split()[0] in ("this", "that", "the") and len(desc.split()) <= MAX_DESCRIPTOR_WORDS
            assert desc in m and m.index(desc) < m.index("<image>")
            assert d.details["attribute"] in m, "every fact restates the attribute it updates"
            for s in d.forbidden:
                assert not contains_token_bounded(m, s), (m, s)
            for s in drawn:
                assert not contains_token_bounded(m, s), (m, s)
            assert not tokens(m.replace("<image>", " ")) & name_words, m
            assert m.rstrip()[-1] in ".!?"
        for s in d.forbidden:
            assert not contains_token_bounded(d.question, s)
        assert d.question.rstrip().endswith(".") and "now" in d.question


def test_descriptors_are_short_and_neutral():
    for cat in CATEGORIES:
        assert len(cat.descriptors) >= CHAIN + 1, cat.key
        words = tokens(cat.key.replace("_", " "))
        for desc in cat.descriptors:
            assert desc.startswith("this ")  # the plan may say "that" or "the" instead
            assert len(desc.split()) <= MAX_DESCRIPTOR_WORDS, desc
            assert not tokens(desc) & words, (cat.key, desc)
        for role, question in cat.roles:
            assert "{q}" in role and "{q}" in question


def test_update_phrasing():
    for t in FIRST_TAILS + UPDATE_TAILS:
        assert t.startswith(", ") and "{attr}" in t


def test_determinism(topics):
    for variant in VARIANTS:
        a = make(3, variant, topics)
        b = make(3, variant, topics)
        assert a[0].to_dict() == b[0].to_dict()
        assert asdict(a[2]) == asdict(b[2])
        plan = Plan.from_dict(a[0].to_dict())
        assert asdict(KnowledgeUpdate().build(random.Random("build-3"), plan, a[1])) == asdict(a[2])


def test_reserved_attributes_are_unique(topics):
    ku = KnowledgeUpdate()
    reserved = {"the café I go to before work"}
    seen = []
    for i in range(96):
        variant = VARIANTS[i % len(VARIANTS)]
        p = ku.plan(random.Random(i), topics[i % len(topics)], "", variant, f"p{i}", reserved)
        seen.append(p.latent["context"])
        assert p.latent["context"] in reserved
    assert len(seen) == len(set(seen))
    assert "the café I go to before work" not in seen


def test_requests_render_and_pass_metadata_filter(topics):
    ch = MetadataChannel()
    for variant in VARIANTS:
        plan, truths, _d = make(7, variant, topics)
        for k, (req, truth) in enumerate(zip(plan.images, truths)):
            rec = ImageRecord(
                sha256="0" * 64,
                family=req.family,
                role="evidence",
                width=truth["size"][0],
                height=truth["size"][1],
                format="png",
                source="synthetic",
                topic_id="t",
                truth=truth,
            )
            assert ch.score(Path("x"), rec, {"constraints": req.constraints}) >= ch.threshold, (variant, req)
            if k < 2:
                data, ext = render_bytes(truth)
                assert data and ext in ("png", "jpg")


def test_names_do_not_occur_in_generated_text():
    """Names are forbidden in every history text: none may be a phrase the text bank writes."""
    from memlens.construction.text import textbank

    here = Path(textbank.__file__)
    src = here.read_text() + "".join(p.read_text() for p in sorted((here.parent / "data").glob("*.yaml")))
    for n in BRANDS + SERVICES + ONLINE_SHOPS + HOTELS + MEET_PLACES:
        assert not contains_token_bounded(src, n), n


def test_chance_answer_and_answer_refusal(topics):
    _plan, _truths, d = make(1, "book_cover", topics)
    q = Question(
        question_id="q_1",
        question_type=KU,
        question_subtype="",
        question=d.question,
        answer=d.answer,
        question_date="2024/05/31 (Fri) 07:58",
        details=d.details,
    )
    rng = random.Random(0)
    assert KnowledgeUpdate().chance_answer(q, rng) == ""
    guess = chance_answer(q, rng)  # open form: an arbitrary committed guess, never an abstention
    assert guess.startswith("My guess: ") and guess != d.answer
    ar = ability_for("answer_refusal")
    assert any(a is ability_for(KU) for a, _, _ in ar.sources)
    ku_src = [(a, s, v) for a, s, v in ar.sources if a.question_type == KU]
    assert {v for _, _, v in ku_src} == set(VARIANTS)


def test_bad_subtype_or_variant(topics):
    ku = KnowledgeUpdate()
    with pytest.raises(ValueError):
        ku.plan(random.Random(0), topics[0], "update", "shop_sign", "p", set())
    with pytest.raises(ValueError):
        ku.plan(random.Random(0), topics[0], "", "nope", "p", set())


def test_occasions_avoid_other_questions_contexts(topics):
    from memlens.construction.abilities.contexts import OCCASIONS
    from memlens.construction.abilities.ku import OCCASION_SUFFIXES

    reserved = {o + s for o in OCCASIONS for s in OCCASION_SUFFIXES if o != "the flea market"}
    reserved.add("the flea market on Friday with Leo")  # clashes with "the flea market on Friday"
    before, added = set(reserved), set()
    for i, variant in enumerate(VARIANTS):
        plan = KnowledgeUpdate().plan(random.Random(i), topics[i], "", variant, f"p{i}", reserved)
        occs = {s["occ"] for s in plan.latent["slots"]}
        assert occs <= {"the flea market", "the flea market last month", "the flea market in spring"}
        added.add(plan.latent["context"])
    assert reserved - before == added, "only the attributes are reserved"
    assert not any(r.startswith("the flea market") for r in added), "occasions are shared phrase space"
