"""Balanced closed answers (construction/abilities/balance.py): the wanted class per plan slot, the
crawl stage's plans and the generate stage's per-class quotas."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from memlens.construction.abilities import ability_for, balance
from memlens.construction.abilities.base import Plan
from memlens.construction.crawl.stage import make_plans
from memlens.construction.ontology.stage import build_topics, load_ontology_file
from memlens.core.compose import load_settings
from memlens.core.schema import TR

MSR = "multi_session_reasoning"
BALANCED = ("multi_session_reasoning/counting", "multi_session_reasoning/entity_resolution")


def _within_one(counts: Counter, classes) -> bool:
    vals = [counts.get(c, 0) for c in classes]
    return max(vals) - min(vals) <= 1


@pytest.mark.parametrize("n", [0, 1, 2, 7, 46, 91])
def test_balanced_sequence(n):
    for classes in (("A", "B"), ("1", "2", "3", "4")):
        seq = balance.balanced(random.Random(n), classes, n)
        assert len(seq) == n and set(seq) <= set(classes)
        assert _within_one(Counter(seq), classes)


def test_wants_balance_each_class_set_and_the_spares():
    ab = ability_for(MSR)
    variants = ab.variants["entity_resolution"]
    slots = [ab.answer_classes("entity_resolution", variants[i % len(variants)]) for i in range(47 + 16)]
    want = balance.wants(7, MSR, "entity_resolution", slots, 47)
    assert want == balance.wants(7, MSR, "entity_resolution", slots, 47)  # seeded
    assert want != balance.wants(8, MSR, "entity_resolution", slots, 47)
    for part in (range(47), range(47, 63)):
        for classes in {tuple(slots[i]) for i in part}:
            got = Counter(want[i] for i in part if tuple(slots[i]) == classes)
            assert set(got) <= set(classes) and _within_one(got, classes), (classes, got)
    for i, w in enumerate(want):
        assert w in slots[i]


@pytest.fixture(scope="module")
def paper_plans():
    """The crawl stage's plans of the balanced subtypes at paper scale (other subtypes left out)."""
    cfg = load_settings(["data.scale=paper"])
    counts = cfg.data.scales["paper"].counts
    for k in list(counts):
        if k not in (*BALANCED, "temporal_reasoning/duration_comparison"):
            del counts[k]
    return make_plans(cfg, build_topics(load_ontology_file(), 42))


def test_paper_plans_balance_exactly(paper_plans):
    by: dict[tuple[str, str, tuple], Counter] = {}
    for p in paper_plans:
        ab = ability_for(p.question_type)
        classes = ab.answer_classes(p.question_subtype, p.variant)
        assert classes, (p.question_subtype, p.variant)
        assert p.latent["_want"] in classes
        if p.latent["_index"] < p.latent["_target"]:
            by.setdefault((p.question_type, p.question_subtype, classes), Counter())[p.latent["_want"]] += 1
    for (_t, sub, classes), got in by.items():
        assert _within_one(got, classes), (sub, got)
    dc = by[(TR, "duration_comparison", ("A", "B"))]
    assert sorted(dc.values()) == [45, 46]
    assert sum(by[(MSR, "counting", ("1", "2", "3", "4"))].values()) == 46
    # every class of every variant has spares to replace a dropped plan
    spares = Counter(
        (p.question_subtype, p.latent["_want"]) for p in paper_plans if p.latent["_index"] >= p.latent["_target"]
    )
    for _t, sub, classes in by:
        assert all(spares[(sub, c)] >= 1 for c in classes), (sub, spares)


def test_quotas_count_the_first_target_slots():
    def plan(i, want, target=3):
        return Plan(
            f"p{i}", TR, "duration_comparison", "mode_B", "t", "", [], {"_index": i, "_target": target, "_want": want}
        )

    q = balance.quotas([plan(0, "A"), plan(1, "B"), plan(2, "A"), plan(3, "B"), plan(4, "A")])
    assert q == {(TR, "duration_comparison"): Counter({"A": 2, "B": 1})}
