"""The diagnostics' default question sample (memory.sample=auto): sizes for the target interval,
seeded and stratified draws, the intervals reported, and the stratified overall estimate."""

from __future__ import annotations

import math
import random

import pytest

from memlens.eval.memory.sampling import half_width, plan_sizes, planned_half_width, sample_by_type, stratified


def test_plan_sizes_give_the_target_interval_with_finite_population_correction():
    sizes = plan_sizes({"IE": 1000, "TR": 61, "KU": 5, "AR": 0}, margin=0.05, confidence=0.95, planning_sd=0.2)
    assert sizes["AR"] == 0 and sizes["KU"] <= 5
    # the smallest size within the margin: one question fewer is not (Student t, sample variance, fpc)
    for t, big_n in (("IE", 1000), ("TR", 61)):
        n = sizes[t]

        def hw(k, big_n=big_n):
            from scipy.stats import t as student

            sd = 0.2 * math.sqrt(k / (k - 1))
            return student.ppf(0.975, k - 1) * sd / math.sqrt(k) * math.sqrt((big_n - k) / (big_n - 1))

        assert hw(n) <= 0.05 < hw(n - 1)
        assert planned_half_width(n, big_n, confidence=0.95, planning_sd=0.2) == pytest.approx(hw(n))
    assert 58 < sizes["IE"] < 70 and 28 < sizes["TR"] < 40  # ~ (1.96 * 0.2 / 0.05)^2 = 61.5, fpc-corrected
    # a tighter margin or a noisier recall needs more; no recall spread needs one question
    assert plan_sizes({"IE": 1000}, margin=0.02, confidence=0.95, planning_sd=0.2)["IE"] > sizes["IE"]
    assert plan_sizes({"IE": 1000}, margin=0.05, confidence=0.95, planning_sd=0.4)["IE"] > sizes["IE"]
    assert plan_sizes({"IE": 1000}, margin=0.05, confidence=0.95, planning_sd=0.0)["IE"] == 1
    with pytest.raises(ValueError):
        plan_sizes({"IE": 10}, margin=0.0, confidence=0.95, planning_sd=0.2)


@pytest.mark.parametrize("big_n", [11, 29, 35, 48, 61, 200, 1000])
def test_the_default_plan_bounds_the_interval_of_any_recall_spread(big_n):
    # planning_sd 0.5 (the default) is the most a score in [0, 1] can spread: the interval half_width
    # reports from the sample is within the margin whatever the recalls, the worst case included
    n = plan_sizes({"T": big_n}, margin=0.05, confidence=0.95, planning_sd=0.5)["T"]
    worst = [1.0] * (n // 2) + [0.0] * (n - n // 2)  # the largest sample variance n values in [0, 1] have
    assert half_width(worst, big_n, 0.95) <= 0.05 + 1e-12
    rng = random.Random(big_n)
    for _ in range(50):
        vals = [rng.choice([0.0, 1.0, rng.random()]) for _ in range(n)]
        assert half_width(vals, big_n, 0.95) <= 0.05 + 1e-12
    if n < big_n:  # and one question fewer could miss it
        assert half_width(worst[:-1], big_n, 0.95) > 0.05


def test_sample_by_type_is_seeded_and_stratified():
    ids = {"IE": [f"ie{i:02d}" for i in range(30)], "TR": [f"tr{i:02d}" for i in range(10)]}
    a = sample_by_type(ids, {"IE": 5, "TR": 10}, seed=42)
    assert a == sample_by_type({k: list(reversed(v)) for k, v in ids.items()}, {"IE": 5, "TR": 10}, seed=42)
    assert sum(x.startswith("ie") for x in a) == 5 and sum(x.startswith("tr") for x in a) == 10
    assert a != sample_by_type(ids, {"IE": 5, "TR": 10}, seed=43)
    # a larger sample of a type keeps the smaller one's questions (one seeded order per type)
    assert set(a) <= set(sample_by_type(ids, {"IE": 8, "TR": 10}, seed=42))


def test_half_width_is_zero_for_a_census_and_covers_the_mean_as_planned():
    assert half_width([1.0, 0.0, 1.0], 3, 0.95) == 0.0
    assert half_width([1.0], 10, 0.95) is None
    # coverage: 95% intervals from samples of a known finite population hold its mean ~95% of the time
    rng = random.Random(0)
    pop = [1.0] * 40 + [0.5] * 10 + [0.0] * 10
    mean = sum(pop) / len(pop)
    hits = 0
    for _ in range(400):
        s = rng.sample(pop, 20)
        hits += abs(sum(s) / 20 - mean) <= half_width(s, len(pop), 0.95)
    assert 0.9 <= hits / 400 <= 0.99


def test_stratified_estimate_weights_types_by_population():
    # a type sampled at half its size does not get half the weight
    m, hw = stratified({"A": [1.0, 1.0], "B": [0.0, 0.0, 0.0, 0.0]}, {"A": 8, "B": 4}, 0.95)
    assert m == pytest.approx(8 / 12) and hw == 0.0  # no spread within the sampled types
    m, hw = stratified({"A": [1.0, 0.0], "B": [0.0] * 4}, {"A": 2, "B": 4}, 0.95)
    assert m == pytest.approx(1 / 6) and hw == 0.0  # both types whole: no sampling error
    _, hw = stratified({"A": [1.0, 0.0, 1.0], "B": [0.0] * 4}, {"A": 30, "B": 4}, 0.95)
    assert hw > 0


def _bench():
    from types import SimpleNamespace

    types = ["information_extraction"] * 60 + ["temporal_reasoning"] * 30 + ["answer_refusal"] * 20
    qs = {
        f"q{i:03d}": SimpleNamespace(question_type=t, evidence=[] if t == "answer_refusal" else ["e"])
        for i, t in enumerate(types)
    }
    return SimpleNamespace(questions=qs)


def test_the_default_sample_is_sized_per_type_and_the_whole_set_is_one_override_away():
    from types import SimpleNamespace

    from memlens.eval.memory.stage import choose_questions

    def keys(**over):  # the memory section's sampling keys (MemorySettings), as conf/memory/default.yaml sets them
        return SimpleNamespace(**{"sample": "auto", "margin": 0.05, "confidence": 0.95, "planning_sd": 0.5, **over})

    bench = _bench()
    ids = sorted(bench.questions)
    auto = keys()
    chosen, info = choose_questions(bench, ids, auto, seed=42)
    assert info["population"] == {"IE": 60, "TR": 30} and info["sample"] == plan_sizes(
        {"IE": 60, "TR": 30}, margin=0.05, confidence=0.95, planning_sd=0.5
    )
    assert 0 < info["sample"]["TR"] < 30 and 0 < info["sample"]["IE"] < 60
    assert all(bench.questions[q].question_type != "answer_refusal" for q in chosen)  # no recall to measure
    assert choose_questions(bench, ids, auto, seed=42)[0] == chosen  # seeded
    for whole in ("all", 0):
        every, info = choose_questions(bench, ids, keys(sample=whole), seed=42)
        assert every == ids and info["sample"] == info["population"]
    with pytest.raises(Exception, match=r"memory\.margin"):
        choose_questions(bench, ids, keys(margin=0.0), seed=42)


def test_aggregates_report_the_interval_and_a_stratified_overall_figure():
    from memlens.eval.memory.stage import aggregate

    def row(t, qid, r):
        return {
            "retriever": "bm25",
            "adapter": "ocr",
            "length": "32k",
            "question_id": qid,
            "type": t,
            "recall@1": r,
            "recall@10": r,
            "ndcg@10": r,
            "mrr": r,
        }

    rows = [row("IE", f"i{i}", v) for i, v in enumerate([1.0, 1.0, 0.0, 1.0])] + [
        row("TR", "t0", 0.0),
        row("TR", "t1", 0.0),
    ]
    census = {c["type"]: c for c in aggregate(rows, [1, 10])}
    assert census["IE"]["recall@10_ci"] == 0.0 and census["all"]["recall@10"] == pytest.approx(0.5)
    sampled = {c["type"]: c for c in aggregate(rows, [1, 10], {"IE": 40, "TR": 2}, 0.95)}
    assert sampled["IE"]["recall@10"] == 0.75 and sampled["IE"]["recall@10_ci"] > 0
    assert sampled["TR"]["recall@10_ci"] == 0.0
    assert sampled["all"]["recall@10"] == pytest.approx(0.75 * 40 / 42)  # weighted by population, not by sample
    assert sampled["all"]["recall@10_ci"] > 0


def test_the_shipped_config_plans_for_the_widest_spread_a_recall_can_have():
    # conf/ and the committed params.yaml both size the default sample for sd 0.5, so the report's
    # ±margin holds in every cell (a smaller planning value left dense cells at ±7 to ±13 points)
    from pathlib import Path

    from memlens.core.compose import load_config

    root = Path(__file__).resolve().parents[2]
    for cfg in (load_config(root=root), load_config(params="params.yaml", root=root)):
        assert cfg.memory.sample == "auto" and float(cfg.memory.planning_sd) >= 0.5


def test_the_summary_calls_only_a_true_sample_a_sample():
    from memlens.eval.memory.stage import is_sample

    whole = {"population": {"IE": 3, "TR": 2}, "sample": {"IE": 3, "TR": 2}}
    part = {"population": {"IE": 3, "TR": 2}, "sample": {"IE": 2, "TR": 2}}
    assert not is_sample({"config": {"sample": "all"}, "sampling": whole})
    assert not is_sample({"config": {"sample": "auto"}, "sampling": whole})  # a plan that took every question
    assert is_sample({"config": {"sample": "auto"}, "sampling": part})
    assert not is_sample({"config": {"sample": "all"}}) and not is_sample({"config": {"sample": 0}})
    assert is_sample({"config": {"sample": 30}})  # an older header without the sampling record
