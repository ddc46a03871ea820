"""Information Extraction: plans, drafts, derivations, leakage invariants and chance answers."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from memlens.construction.abilities import contexts
from memlens.construction.abilities.ar import AnswerRefusal
from memlens.construction.abilities.derive import derive
from memlens.construction.abilities.ie import SAFE_COLORS, InformationExtraction
from memlens.construction.images.synthetic import get_family, render_bytes
from memlens.construction.images.truth import drawn_values as image_values
from memlens.construction.ontology.stage import build_topics, load_ontology_file
from memlens.construction.text.sessions import Mention, SessionWriter, WriterConfig
from memlens.construction.text.textbank import mention_templates
from memlens.construction.text.validators import RejectionLog, contains_token_bounded
from memlens.core.schema import IE, IMAGE_PLACEHOLDER, Question

AB = InformationExtraction()
TOPICS = build_topics(load_ontology_file(), 42)
CASES = [(sub, v) for sub, vs in AB.variants.items() for v in vs]
N_SEEDS = 120

FORMAT_RE = {
    "integer": re.compile(r"^\d+$"),
    "currency": re.compile(r"^([$€£]\d{1,3}(,\d{3})*\.\d{2}|¥\d{1,3}(,\d{3})*|\d{1,3}(,\d{3})*\.\d{2} [A-Z]{3})$"),
    "time": re.compile(r"^([01]\d|2[0-3]):[0-5]\d$"),
    "date": re.compile(r"^\d{4}/(0[1-9]|1[0-2])/(0[1-9]|[12]\d|3[01])$"),
    "code": re.compile(r"^[A-Z0-9][A-Z0-9 #*\-]*$"),
    "color": re.compile(rf"^({'|'.join(SAFE_COLORS)})$"),
    "color_kind": re.compile(r"^[a-z]+ [a-z ]+$"),
    "quantity": re.compile(r"^\d+(\.\d+)? [a-z]+$"),
    "name": re.compile(r"^[A-Z][a-z]+ [A-Z][a-z]+$"),
}


def _make(sub, v, seed, reserved=None):
    reserved = set() if reserved is None else reserved
    rng = random.Random(f"plan-{sub}-{v}-{seed}")
    topic = TOPICS[rng.randrange(len(TOPICS))]
    plan = AB.plan(rng, topic, sub, v, f"p{seed}", reserved)
    truths = [
        get_family(r.family).sample(random.Random(f"img-{v}-{seed}-{k}"), **r.constraints)
        for k, r in enumerate(plan.images)
    ]
    draft = AB.build(random.Random(f"build-{v}-{seed}"), plan, truths)
    return plan, truths, draft


def _question(draft, sub="entity"):
    return Question.from_dict(
        {
            "question_id": "q_x",
            "question_type": IE,
            "question_subtype": sub,
            "question": draft.question,
            "answer": draft.answer,
            "question_date": "2025/03/03 (Mon) 10:00",
            "details": draft.details,
        }
    )


# phrases every haystack mention or session may contain: forbidden strings must avoid them all
_SHARED_TEXT = " | ".join(
    contexts.OWNERS
    + contexts.PLACES
    + contexts.OCCASIONS
    + contexts.PEOPLE
    + contexts.PLANS
    + contexts.APPS
    + contexts.WHEN
    + [t for k in ("photo", "screenshot", "document") for t in mention_templates(k)]
    + [s for t in TOPICS for s in [t.title, *t.subtopics]]
)


def test_variants_and_families():
    assert AB.question_type == IE
    assert AB.variants == {
        "entity": ["counting", "spatial", "disambiguation", "alignment", "arithmetic"],
        "previnfo": ["chat_screenshot", "app_interface", "natural_photo"],
    }
    fams = set(get_family(f).name for vs in AB.families.values() for f in vs)
    assert all(v in AB.families and AB.families[v] for _, v in CASES)
    assert fams <= {"object_scene", "named_sign", "price_tag", "receipt", "ticket", "chat_screenshot", "app_screenshot"}
    # the crawl stage cycles variants over the question index: every variant evenly
    for _sub, vs in AB.variants.items():
        picked = [vs[i % len(vs)] for i in range(5 * len(vs))]
        assert all(picked.count(v) == 5 for v in vs)


@pytest.mark.parametrize("sub,v", CASES)
def test_drafts(sub, v):
    reserved: set[str] = set()
    kinds, fmts = set(), set()
    for seed in range(N_SEEDS):
        if seed % 40 == 0:  # a fresh context space now and then (one variant alone uses it at 40 per run)
            reserved = set()
        before = set(reserved)
        plan, truths, d = _make(sub, v, seed, reserved)
        assert plan.question_type == IE and plan.question_subtype == sub and plan.variant == v
        # contexts: reserved by the plan, new, and recorded in the draft
        assert d.contexts and all(c in reserved and c not in before for c in d.contexts)
        # derivation re-derives the answer from the truths, never from text alone
        assert derive(d.derivation, truths, {}) == d.answer
        assert derive(d.derivation, [None] * len(truths), {}) != d.answer
        # details labels
        key = "visual_skill" if sub == "entity" else "image_source"
        assert d.details[key] == v
        fmt = d.details["answer_format"]
        assert FORMAT_RE[fmt].match(d.answer), (v, fmt, d.answer)
        kinds.add(d.details["kind"])
        fmts.add(fmt)
        # facts: one mention per image, exactly one <image> per image shown, every image shown once
        shown = sorted(k for f in d.facts for k in f.image_idx)
        assert shown == list(range(len(plan.images)))
        assert d.image_essential and d.answer in d.forbidden
        for f in d.facts:
            assert f.mention.count(IMAGE_PLACEHOLDER) == len(f.image_idx)
            assert f.mention.rstrip()[-1] in ".!?"
            for s in d.forbidden:  # no answer or abstracted name in the text
                assert not contains_token_bounded(f.mention, s), (v, s, f.mention)
            for k in f.image_idx:  # no string drawn in the image
                for s in image_values(truths[k]):
                    assert not contains_token_bounded(f.mention, s), (v, s, f.mention)
        assert not contains_token_bounded(d.question, d.answer), (v, d.question, d.answer)
        # forbidden strings never occur in shared phrases (haystack writing would stall on them)
        for s in d.forbidden:
            assert not contains_token_bounded(_SHARED_TEXT, s), (v, s)
        # the question names the context (or, for disambiguation, the entity drawn in the image)
        if v == "disambiguation":
            t = truths[d.details["target_image"]]
            name = t["brand"] if t["kind"] == "product_box" else t["text"]
            assert name.lower() in d.question.lower() and name in d.forbidden
        else:
            assert d.contexts[0] in d.question
    expected = {
        "disambiguation": {"shop_sign", "street_sign", "book_cover", "product_box", "license_plate"},
        "alignment": {"price_tag", "receipt", "license_plate", "ticket"},
        "arithmetic": {"receipt_pair", "price_multiple", "ticket_multiple"},
        "natural_photo": {"count", "color", "plate", "car_color"},
    }.get(v)
    if expected:
        assert kinds == expected
    if v == "arithmetic":
        assert fmts == {"currency"}


@pytest.mark.parametrize("sub,v", CASES)
def test_deterministic(sub, v):
    for seed in (1, 7):
        p1, t1, d1 = _make(sub, v, seed)
        p2, t2, d2 = _make(sub, v, seed)
        assert p1.to_dict() == p2.to_dict() and t1 == t2
        assert dataclasses.asdict(d1) == dataclasses.asdict(d2)


@pytest.mark.parametrize("sub,v", CASES)
def test_constraints_render(sub, v):
    plan, truths, _d = _make(sub, v, 3)
    for k, _r in enumerate(plan.images):
        data, ext = render_bytes(truths[k])
        assert len(data) > 1000 and ext in ("jpg", "png")


def test_arithmetic_values():
    """The arithmetic answers are the arithmetic of the drawn numbers."""
    from decimal import Decimal

    from memlens.construction.abilities.derive import money

    for seed in range(30):
        plan, truths, d = _make("entity", "arithmetic", seed)
        t, kind = truths[0], d.details["kind"]
        if kind == "receipt_pair":
            names = [n for n in (it["name"] for it in t["items"]) if n in d.question]
            lines = [Decimal(it["line_total"]) for it in t["items"] if it["name"] in names]
            assert len(lines) == 2 and d.answer == money(sum(lines), t["currency"])
        else:
            assert d.answer == money(Decimal(t["price"]) * plan.latent["k"], t["currency"])


def test_disambiguation_lookalikes_differ():
    for seed in range(30):
        _plan, truths, _d = _make("entity", "disambiguation", seed)
        assert 2 <= len(truths) <= 3
        assert len({t["kind"] for t in truths}) == 1
        key = "brand" if truths[0]["kind"] == "product_box" else "text"
        assert len({t[key] for t in truths}) == len(truths)
        # the asked detail differs between the look-alikes, so only the named one answers it
        field = {
            "shop_sign": "number",
            "street_sign": "number",
            "book_cover": "author",
            "product_box": "weight",
            "license_plate": "car_color",
        }[truths[0]["kind"]]
        assert len({t[field] for t in truths}) == len(truths)


def test_alignment_description_matches_one_image():
    for seed in range(30):
        _plan, truths, d = _make("entity", "alignment", seed)
        k = d.details["target_image"]
        kind = d.details["kind"]
        if kind == "price_tag":
            assert [t["on_sale"] for t in truths].count(True) == 1 and truths[k]["on_sale"]
        elif kind == "receipt":
            card = [bool(t["payment"]["card_last4"]) for t in truths]
            assert card.count(card[k]) == 1
        elif kind == "license_plate":
            assert truths[k]["car_color"] in d.question
        else:
            assert truths[k]["event_type"] in d.question.lower()


def test_unique_contexts_and_names_across_plans():
    """Paper scale (entity 120, previnfo 126, plus answer refusal wrapping IE): no context repeats."""
    reserved: set[str] = set()
    seen = set()
    for sub, n in (("entity", 120 + 30), ("previnfo", 126 + 30)):
        vs = AB.variants[sub]
        for i in range(n):
            v = vs[i % len(vs)]
            rng = random.Random(f"multi-{sub}-{i}")
            plan = AB.plan(rng, TOPICS[rng.randrange(len(TOPICS))], sub, v, f"m{i}", reserved)
            assert plan.latent["context"] not in seen
            seen.add(plan.latent["context"])


def test_evidence_sessions_admit():
    """The session writer embeds every mention verbatim with no leak (the generate-stage chain)."""
    topic = TOPICS[0]
    for sub, v in CASES:
        for seed in range(3):
            _plan, truths, d = _make(sub, v, seed)
            writer = SessionWriter(WriterConfig(), RejectionLog())
            for f in d.facts:
                vals = [s for k in f.image_idx for s in image_values(truths[k])]
                m = Mention(f.mention, [f"img{k}" for k in f.image_idx], True, vals)
                s = writer.write(
                    random.Random(seed), "evidence", topic, topic.subtopics[0], [m], extra_forbidden=d.forbidden
                )
                text = " ".join(t.content for t in s.turns)
                assert f.mention in text
                assert not any(contains_token_bounded(text.replace(IMAGE_PLACEHOLDER, " "), x) for x in d.forbidden)


@pytest.mark.parametrize("sub,v", CASES)
def test_chance_answers_valid(sub, v):
    rng = random.Random(0)
    for seed in range(6):
        _, _, d = _make(sub, v, seed)
        q = _question(d, sub)
        fmt = d.details["answer_format"]
        for _ in range(10):
            g = AB.chance_answer(q, rng)
            if fmt == "name":
                assert g == ""
            elif fmt in ("color", "quantity"):
                assert g in d.details["choices"]
            else:
                assert FORMAT_RE[fmt].match(g), (fmt, g)
                if fmt == "code":
                    assert len(g) == len(d.answer)
                if fmt == "currency":
                    assert g[:1] == d.answer[:1] or g[-3:] == d.answer[-3:]


def test_answer_refusal_wraps_every_variant():
    ar = AnswerRefusal([(AB, sub, v) for sub, v in CASES])
    reserved: set[str] = set()
    discussed = 0
    for i in range(24):
        rng = random.Random(i)
        p = ar.plan(rng, TOPICS[i], "", "from_answerable", f"ar{i}", reserved)
        d = ar.build(random.Random(i), p, [])
        assert d.answer == "Insufficient information"
        # the context is discussed in one session, without any image; it is not forbidden any more
        # (a question that names an entity only an image would show, not its context, needs none)
        named = [c for c in d.contexts if c in d.question]
        assert len(d.facts) == (1 if named else 0)
        for f in d.facts:
            assert f.image_idx == [] and "<image>" not in f.mention and named[0] in f.mention
            discussed += 1
        assert not any(c in f or f in c for f in d.forbidden for c in d.contexts)
        assert d.details["source_type"] == IE
    assert discussed >= 12


def test_contexts_never_inside_other_phrases():
    """A question's context is not a token-bounded part of any other phrase of the shared mention
    space (else an answer-refusal history, which forbids it, could not hold those mentions)."""
    space = (
        [o + s for o in contexts.OCCASIONS for s in ("", " last month", " in spring", " on Friday")]
        + [f"{o} {p}" for o in contexts.OWNERS for p in contexts.PLACES]
        + [f"my chat with {p} about {pl}" for p in contexts.PEOPLE for pl in contexts.PLANS]
        + [f"{a} page for {pl}" for a in contexts.APPS for pl in contexts.PLANS]
    )
    for sub, v in CASES:
        for seed in range(40):
            _, _, d = _make(sub, v, seed)
            for c in d.contexts:
                assert not any(p != c and contains_token_bounded(p, c) for p in space), (v, c)
