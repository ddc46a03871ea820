"""Diagnostics on hand-built inputs with known answers: recall@k / NDCG / MRR, answer-critical
facts from derivations, fact matching, storage fidelity and retrieval attribution."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from memlens.eval.memory.diagnostics import (
    answer_critical_facts,
    attribution,
    fact_present,
    fidelity,
    retrieval_metrics,
)


def test_retrieval_metrics_known_values():
    m = retrieval_metrics(["s4", "s2", "s9", "s1", "s2"], ["s1", "s2"])
    assert m["recall@1"] == 0.0 and m["recall@3"] == 0.5 and m["recall@5"] == 1.0 and m["recall@10"] == 1.0
    assert m["mrr"] == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(5)  # evidence at ranks 2 and 4 (the repeated s2 counts once)
    idcg = 1 + 1 / math.log2(3)
    assert m["ndcg@10"] == pytest.approx(dcg / idcg)
    none = retrieval_metrics([], ["s1"])
    assert none["recall@10"] == 0.0 and none["mrr"] == 0.0 and none["ndcg@10"] == 0.0
    assert retrieval_metrics(["s1"], ["s1"]) == {
        "recall@1": 1.0,
        "recall@3": 1.0,
        "recall@5": 1.0,
        "recall@10": 1.0,
        "ndcg@10": 1.0,
        "mrr": 1.0,
    }
    with pytest.raises(ValueError, match="evidence"):
        retrieval_metrics(["s1"], [])


TRUTHS = {
    "r" * 64: {"family": "receipt", "total": "7.75", "date": "2022/12/04", "date_printed": "2022-12-04"},
    "o" * 64: {
        "family": "object_scene",
        "objects": [{"color": "red", "kind": "cup"}, {"color": "green", "kind": "ball"}],
    },
}


def test_answer_critical_facts_follow_the_derivation():
    prog = {
        "op": "sum",
        "args": [
            {"op": "get", "img": 0, "path": ["total"]},
            {"op": "const", "value": "3"},
            {"op": "str", "arg": {"op": "get", "img": 0, "path": ["date"]}},
            {"op": "format", "img": 1, "path": ["objects", 1], "template": "{color} {kind}"},
            {"op": "get", "img": 1, "path": ["missing"]},  # a read of absent truth is skipped
        ],
    }
    facts = answer_critical_facts(prog, ["r" * 64, "o" * 64], TRUTHS.get)
    assert facts == {"r" * 64: [("7.75",), ("2022/12/04", "2022-12-04")], "o" * 64: [("green ball",)]}
    assert answer_critical_facts(None, [], TRUTHS.get) == {}


def test_fact_matching_normalises_but_keeps_short_values_whole():
    assert fact_present(("2022/12/04", "2022-12-04"), "[image; text read: CAFE | 2022-12-04 08:12]")
    assert fact_present(("Foxglove Optician",), "FOXGLOVEOPTICIAN")  # OCR drops spaces
    assert fact_present(("£1,234.95",), "Total price £1,234.95")
    assert fact_present(("10F",), "seat 10F gate A35") and not fact_present(("10F",), "seat 110F")
    assert fact_present(("3",), "counts.red cup: 3; ") and not fact_present(("3",), "A35 gate")
    assert not fact_present(("7.75",), "[image]")


def test_fidelity_counts_each_fact_against_its_own_image():
    facts = answer_critical_facts(
        {
            "op": "eq",
            "a": {"op": "get", "img": 0, "path": ["total"]},
            "b": {"op": "format", "img": 1, "path": ["objects", 1], "template": "{color} {kind}"},
        },
        ["r" * 64, "o" * 64],
        TRUTHS.get,
    )
    stored = {"r" * 64: "[image; text read: TOTAL 7.75]", "o" * 64: "[image; text read: green ball]"}
    assert fidelity(facts, stored)[:2] == (2, 2)
    swapped = {"r" * 64: stored["o" * 64], "o" * 64: stored["r" * 64]}  # right text, wrong image: no credit
    assert fidelity(facts, swapped)[:2] == (0, 2)
    assert fidelity(facts, {"r" * 64: "[image]", "o" * 64: "[image]"})[:2] == (0, 2)


def test_attribution_splits_errors_by_evidence_recall():
    ev = {"q1": ["a", "b"], "q2": ["c"], "q3": ["d"], "q4": [], "q5": ["e"]}
    P = lambda q, meta: SimpleNamespace(question_id=q, meta=meta)  # noqa: E731
    V = lambda q, ok, t="IE": SimpleNamespace(question_id=q, correct=ok, question_type=t)  # noqa: E731
    preds = [
        P("q1", {"retrieved": [{"session_id": "a", "score": 1.0}, {"session_id": "x", "score": 0.5}]}),  # recall .5
        P("q2", {"retrieved": [{"session_id": "z", "score": 2.0}]}),  # recall 0
        P("q3", {"retrieved": [{"session_id": "d", "score": 1.0}]}),  # recall 1, correct
        P("q4", {"retrieved": []}),  # no evidence (refusal): unscored
        P("q5", {}),  # reports no retrieval: unscored
    ]
    verdicts = [V("q1", False), V("q2", False, "MSR"), V("q3", True), V("q4", False), V("q5", False)]
    out = attribution(preds, verdicts, ev.get)
    assert out["n"] == 3 and out["errors"] == 2 and out["n_unscored"] == 2
    assert out["retrieval_errors"] == 1 and out["post_retrieval_errors"] == 1  # 0.5 is not < 0.5
    assert out["retrieval_error_share"] == 0.5
    assert out["mean_evidence_recall"] == pytest.approx(0.5)
    assert out["per_type"]["MSR"]["retrieval_errors"] == 1 and out["per_type"]["IE"]["post_retrieval_errors"] == 1


def test_a_diagnostics_sample_keeps_each_types_share_and_is_seeded():
    from types import SimpleNamespace

    from memlens.eval.memory.stage import sample_ids

    types = ["information_extraction"] * 40 + ["temporal_reasoning"] * 20 + ["knowledge_update"] * 10
    qs = {f"q{i:03d}": SimpleNamespace(question_type=t) for i, t in enumerate(types)}
    bench = SimpleNamespace(questions=qs)
    ids = sorted(qs)
    assert sample_ids(bench, ids, 0) == ids and sample_ids(bench, ids, 99) == ids
    s = sample_ids(bench, ids, 12)
    assert len(s) == len(set(s)) == 12 and s == sample_ids(bench, ids, 12)
    got = {t: sum(qs[q].question_type == t for q in s) for t in set(types)}
    assert got == {"information_extraction": 4, "temporal_reasoning": 4, "knowledge_update": 4}
