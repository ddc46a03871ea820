"""Tests for memlens.eval.report.stats (statistical protocol)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from memlens.eval.report import stats as S

# --------------------------------------------------------------------------- #
# bootstrap
# --------------------------------------------------------------------------- #


def test_bootstrap_counts_match_indices() -> None:
    idx = S.bootstrap_indices(37, 50, seed=3)
    counts = S.bootstrap_counts(37, 50, seed=3)
    assert idx.shape == (50, 37) and counts.shape == (50, 37)
    assert np.all(counts.sum(axis=1) == 37)
    for b in range(50):
        assert np.array_equal(np.bincount(idx[b], minlength=37), counts[b])


def test_bootstrap_ci_deterministic_and_seed_dependent() -> None:
    rng = np.random.default_rng(0)
    x = (rng.random(195) < 0.3).astype(int)
    r1 = S.bootstrap_ci(x, seed=7)
    r2 = S.bootstrap_ci(list(x), seed=7)
    r3 = S.bootstrap_ci(x, seed=8)
    assert r1 == r2
    assert r1[0] == pytest.approx(x.mean())
    assert r1[1] < r1[0] < r1[2]
    assert (r1[1], r1[2]) != (r3[1], r3[2])
    assert r1[0] == r3[0]  # the point estimate does not depend on the seed


def test_bootstrap_matches_naive_loop() -> None:
    rng = np.random.default_rng(1)
    Q, B = 60, 200
    X = (rng.random((3, Q)) < 0.5).astype(float)
    labels = rng.choice(["a", "b", "c"], Q)
    res = S.bootstrap_ci_matrix(X, labels, n_resamples=B, seed=5, return_replicates=True)
    assert res.columns == ("overall", *dict.fromkeys(labels))
    idx = S.bootstrap_indices(Q, B, seed=5)
    for r in range(3):
        for j, col in enumerate(res.columns):
            reps = []
            for b in range(B):
                sel = idx[b] if col == "overall" else idx[b][labels[idx[b]] == col]
                reps.append(X[r, sel].mean())
            reps = np.array(reps)
            np.testing.assert_allclose(res.replicates[:, r, j], reps, atol=1e-12)
            lo, hi = np.quantile(reps, [0.025, 0.975])
            assert res.low[r, j] == pytest.approx(lo)
            assert res.high[r, j] == pytest.approx(hi)
            m = X[r] if col == "overall" else X[r, labels == col]
            assert res.mean[r, j] == pytest.approx(m.mean())
            assert res.n[r, j] == m.size


def test_bootstrap_paired_resampling_across_rows() -> None:
    rng = np.random.default_rng(2)
    x = (rng.random(100) < 0.4).astype(float)
    y = (rng.random(100) < 0.6).astype(float)
    res = S.bootstrap_ci_matrix(np.stack([x, 1 - x, y]), n_resamples=300, seed=1, return_replicates=True)
    reps = res.replicates[:, :, 0]
    # complementary rows resampled with the same indices sum to exactly 1
    np.testing.assert_allclose(reps[:, 0] + reps[:, 1], 1.0)
    # each row's result does not depend on the other rows in the batch
    for r, row in enumerate([x, 1 - x, y]):
        alone = S.bootstrap_ci(row, n_resamples=300, seed=1)
        assert alone == (res.mean[r, 0], res.low[r, 0], res.high[r, 0])
    # the paired difference is the difference of the replicates
    counts = S.bootstrap_counts(100, 300, seed=1)
    np.testing.assert_allclose(reps[:, 2] - reps[:, 0], counts @ (y - x) / 100)


def test_bootstrap_missing_items_excluded_per_row() -> None:
    rng = np.random.default_rng(3)
    X = (rng.random((2, 80)) < 0.5).astype(float)
    X[0, :10] = np.nan
    res = S.bootstrap_ci_matrix(X, n_resamples=100, seed=0, return_replicates=True)
    assert res.n[:, 0].tolist() == [70, 80]
    assert res.mean[0, 0] == pytest.approx(np.nanmean(X[0]))
    idx = S.bootstrap_indices(80, 100, seed=0)
    naive = np.array([np.nanmean(X[0, i]) for i in idx])
    np.testing.assert_allclose(res.replicates[:, 0, 0], naive)
    # row 1 (complete) is unaffected by row 0's missing items
    assert S.bootstrap_ci(X[1], n_resamples=100, seed=0)[1] == res.low[1, 0]
    assert S.bootstrap_ci([np.nan, np.nan]) == pytest.approx((math.nan,) * 3, nan_ok=True)


def test_bootstrap_shapes_and_grouping_mapping() -> None:
    rng = np.random.default_rng(4)
    X = (rng.random((5, 3, 40)) < 0.5).astype(float)
    types = np.array(["IE", "MSR"] * 20)
    sub = np.array(["IE-a", "IE-b", "MSR-a", None] * 10, dtype=object)
    res = S.bootstrap_ci_matrix(X, {"type": types, "subtype": sub}, n_resamples=50)
    assert res.columns == ("overall", "type:IE", "type:MSR", "subtype:IE-a", "subtype:IE-b", "subtype:MSR-a")
    assert res.mean.shape == res.low.shape == res.high.shape == (5, 3, 6)
    m, lo, hi = res.column("type:MSR")
    assert m.shape == (5, 3)
    np.testing.assert_allclose(m, X[..., types == "MSR"].mean(-1))
    assert np.all(lo <= m + 1e-12) and np.all(m <= hi + 1e-12)
    assert np.all(res.n[..., 3] == 10)  # subtype IE-a; None labels belong to no subtype
    one = S.bootstrap_ci_matrix(X[0, 0], types, n_resamples=50, include_overall=False)
    assert one.mean.shape == (2,) and one.columns == ("IE", "MSR")


def test_bootstrap_ci_coverage_on_known_bernoulli() -> None:
    # 1000 independent repetitions, each a row: one vectorized call.
    rng = np.random.default_rng(123)
    p, n = 0.3, 200
    X = (rng.random((1000, n)) < p).astype(float)
    res = S.bootstrap_ci_matrix(X, n_resamples=1000, seed=9)
    covered = (res.low[:, 0] <= p) & (p <= res.high[:, 0])
    assert 0.92 <= covered.mean() <= 0.975
    # mean half-width close to the normal-theory value 1.96 * sqrt(p(1-p)/n)
    assert res.half_width[:, 0].mean() == pytest.approx(1.96 * math.sqrt(p * (1 - p) / n), rel=0.05)


def test_bootstrap_validation() -> None:
    with pytest.raises(ValueError):
        S.bootstrap_ci([1, 0], confidence=1.0)
    with pytest.raises(ValueError):
        S.bootstrap_ci_matrix(np.ones((2, 3)), ["a", "b"])


# --------------------------------------------------------------------------- #
# coverage vs per-answer accuracy
# --------------------------------------------------------------------------- #


def test_coverage_accuracy_hand_example() -> None:
    answerable = [1, 1, 1, 1, 1, 1, 0, 0]
    abstained = [0, 0, 0, 1, 1, 0, 1, 0]
    correct = [1, 1, 0, 0, 0, 1, 1, 0]
    d = S.coverage_accuracy(correct, abstained, answerable)
    assert d["n_answerable"] == 6 and d["n_refused"] == 2 and d["n_attempted"] == 4
    assert d["refusal_rate"] == pytest.approx(2 / 6)
    assert d["coverage"] == pytest.approx(4 / 6)
    assert d["n_correct_attempted"] == 3
    assert d["per_answer_accuracy"] == pytest.approx(3 / 4)
    assert d["accuracy_answerable"] == pytest.approx(3 / 6)
    assert d["accuracy_answerable"] == pytest.approx(d["coverage"] * d["per_answer_accuracy"])
    assert d["n_unanswerable"] == 2 and d["abstention_rate_unanswerable"] == pytest.approx(0.5)
    # batched rows
    db = S.coverage_accuracy(np.stack([correct, correct]), np.stack([abstained, np.zeros(8)]), answerable)
    assert db["refusal_rate"].tolist() == pytest.approx([2 / 6, 0.0])
    # nothing attempted -> PA undefined
    d0 = S.coverage_accuracy([0, 0], [1, 1], [1, 1])
    assert d0["coverage"] == 0.0 and math.isnan(d0["per_answer_accuracy"])


# --------------------------------------------------------------------------- #
# McNemar
# --------------------------------------------------------------------------- #


def _sm_p(b01: int, b10: int) -> float:
    return float(sm_mcnemar([[5, b10], [b01, 7]], exact=True).pvalue)


def test_mcnemar_matches_statsmodels_on_tables() -> None:
    rng = np.random.default_rng(0)
    tables = [(0, 0), (0, 1), (1, 0), (0, 7), (9, 1), (5, 5), (40, 12), (300, 260)]
    tables += [tuple(int(v) for v in rng.integers(0, 60, 2)) for _ in range(200)]
    b01 = np.array([t[0] for t in tables])
    b10 = np.array([t[1] for t in tables])
    ours = S.mcnemar_exact_from_counts(b01, b10)
    ref = np.array([_sm_p(*t) for t in tables])
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-15)
    assert S.mcnemar_exact_from_counts(0, 0) == 1.0


def test_mcnemar_exact_on_paired_vectors() -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(1, 120))
        a = (rng.random(n) < rng.random()).astype(int)
        b = (rng.random(n) < rng.random()).astype(int)
        b01, b10, p = S.mcnemar_exact(a, b)
        assert b01 == int(((a == 0) & (b == 1)).sum()) and b10 == int(((a == 1) & (b == 0)).sum())
        table = np.array([[((a == 0) & (b == 0)).sum(), b01], [b10, ((a == 1) & (b == 1)).sum()]])
        assert p == pytest.approx(sm_mcnemar(table, exact=True).pvalue, rel=1e-12)
    # vectorized over rows, NaN pairs dropped
    A = np.array([[0, 1, 1, np.nan], [1, 1, 0, 0]])
    B = np.array([[1, 0, 0, 1], [1, 1, 0, 0]])
    b01, b10, p = S.mcnemar_exact(A, B)
    assert b01.tolist() == [1, 0] and b10.tolist() == [2, 0]
    assert p.tolist() == pytest.approx([1.0, 1.0])
    assert S.mcnemar_exact([1, 1], [1, 1]) == (0, 0, 1.0)
    # paper example: 9 flip-to-correct vs 1 flip-to-wrong -> p ~ 0.021
    assert S.mcnemar_exact_from_counts(9, 1) == pytest.approx(0.02148, abs=1e-4)


# --------------------------------------------------------------------------- #
# length degradation
# --------------------------------------------------------------------------- #


def _hand_lengths() -> dict[str, list[int]]:
    #            q0 q1 q2 q3 q4 q5
    return {
        "128K": [1, 0, 1, 1, 0, 0],
        "32K": [1, 1, 0, 0, 1, 0],
        "64K": [0, 1, 1, 0, 1, 0],
        "256K": [1, 0, 1, 1, 0, 1],
    }


def test_length_degradation_reverts_and_counts() -> None:
    recs = S.length_degradation(_hand_lengths())  # keys are ordered numerically
    assert [(r["from"], r["to"]) for r in recs] == [("32K", "64K"), ("64K", "128K"), ("128K", "256K")]
    r0, r1, r2 = recs
    # 32K->64K: q0 1->0 (b10), q2 0->1 (b01)
    assert (r0["b01"], r0["b10"]) == (1, 1)
    # 64K->128K: q0 0->1, q3 0->1 (b01); q1 1->0, q4 1->0 (b10)
    assert (r1["b01"], r1["b10"]) == (2, 2)
    # flips at 32K->64K: q0 (1,0,1) reverts; q2 (0,1,1) does not -> 1 revert
    assert r0["reverts"] == 1 and r0["revert_rate"] == pytest.approx(0.5)
    # flips at 64K->128K: q0 (0,1,1) no; q1 (1,0,0) no; q3 (0,1,1) no; q4 (1,0,0) no
    assert r1["reverts"] == 0
    assert r2["reverts"] is None and r2["revert_rate"] is None
    assert r0["acc_before"] == pytest.approx(3 / 6) and r0["acc_after"] == pytest.approx(3 / 6)
    assert r2["delta"] == pytest.approx(4 / 6 - 3 / 6)
    assert all(r["n"] == 6 and r["n_tests"] == 3 for r in recs)


def test_length_degradation_bonferroni_and_groups() -> None:
    rng = np.random.default_rng(5)
    Q = 300
    labels = rng.choice(["IE", "MSR", "TR", "KU", "AR"], Q)
    base = rng.random(Q)
    data = {
        L: (base + rng.normal(0, 0.3, Q) > 0.5 + 0.1 * i).astype(float) for i, L in enumerate(["32K", "64K", "128K"])
    }
    recs = S.length_degradation(data, labels, alpha=0.05)
    assert len(recs) == 5 * 2
    assert [r["group"] for r in recs[::2]] == list(dict.fromkeys(labels))
    for r in recs:
        assert r["n_tests"] == 10
        assert r["p_bonferroni"] == pytest.approx(min(1.0, 10 * r["p"]))
        assert r["significant"] == (r["p_bonferroni"] < 0.05)
        m = labels == r["group"]
        b01, b10, p = S.mcnemar_exact(data[r["from"]][m], data[r["to"]][m])
        assert (r["b01"], r["b10"], r["p"]) == (b01, b10, pytest.approx(p))
    with_overall = S.length_degradation(data, labels, include_overall=True)
    assert len(with_overall) == 12 and with_overall[0]["group"] == "overall"
    assert with_overall[0]["n_tests"] == 12
    # only nominal increases are tested (Appendix G.5 design)
    inc = S.length_degradation(data, labels, test_direction="increase")
    tested = [r for r in inc if r["tested"]]
    assert all(r["delta"] > 0 for r in tested)
    assert all(r["p_bonferroni"] is None for r in inc if not r["tested"])
    assert all(r["n_tests"] == len(tested) for r in inc)
    # family size override (correct across systems analysed separately)
    ov = S.length_degradation(data, labels, n_tests=72)
    assert all(r["p_bonferroni"] == pytest.approx(min(1.0, 72 * r["p"])) for r in ov)


def test_length_degradation_missing_and_order() -> None:
    data = {"a": [1, 0, np.nan, 1], "b": [0, 0, 1, 1]}
    recs = S.length_degradation(data, lengths_order=["a", "b"])
    assert len(recs) == 1 and recs[0]["n"] == 3 and recs[0]["b10"] == 1
    assert recs[0]["acc_before"] == pytest.approx(2 / 3)
    assert S.order_lengths(["256K", "32k", "1M", "64K"]) == ["32k", "64K", "256K", "1M"]
    assert S.order_lengths(["long", "short"]) == ["long", "short"]
    assert S.length_degradation({"32K": [1, 0]}) == []


# --------------------------------------------------------------------------- #
# Jaccard
# --------------------------------------------------------------------------- #


def test_jaccard_observed_hand_example() -> None:
    data = {"32K": [1, 1, 0, 0, 1, 0], "64K": [1, 0, 1, 0, 1, 0]}
    (r,) = S.jaccard_stability(data)
    assert (r["k_from"], r["k_to"], r["intersection"], r["union"]) == (3, 3, 2, 4)
    assert r["jaccard"] == pytest.approx(0.5)
    assert r["expected_intersection"] == pytest.approx(1.5)
    assert r["expected_jaccard"] == pytest.approx(1.5 / (6 - 1.5))
    assert r["ratio"] == pytest.approx(0.5 / (1.5 / 4.5))


def test_jaccard_expected_vs_monte_carlo() -> None:
    rng = np.random.default_rng(11)
    n = 195
    a = (rng.random(n) < 0.3).astype(int)
    b = (rng.random(n) < 0.28).astype(int)
    data = {"32K": a, "64K": b}
    approx = S.jaccard_stability(data)[0]
    exact = S.jaccard_stability(data, method="exact")[0]
    mc = S.jaccard_stability(data, method="monte_carlo", n_sims=4000, seed=1)[0]
    k1, k2 = approx["k_from"], approx["k_to"]
    # independent simulation of the null in the test itself
    sims = 20000
    inter = rng.hypergeometric(k1, n - k1, k2, size=sims)
    brute = float(np.mean(inter / (k1 + k2 - inter)))
    assert exact["expected_jaccard"] == pytest.approx(brute, rel=0.01)
    assert mc["expected_jaccard"] == pytest.approx(exact["expected_jaccard"], rel=0.02)
    assert approx["expected_jaccard"] == pytest.approx(exact["expected_jaccard"], rel=0.02)
    assert approx["expected_jaccard"] <= exact["expected_jaccard"]  # Jensen
    # Monte Carlo is seeded
    assert S.jaccard_stability(data, method="monte_carlo", n_sims=500, seed=3) == S.jaccard_stability(
        data, method="monte_carlo", n_sims=500, seed=3
    )
    # a perfectly stable system is far above the chance baseline
    stable = S.jaccard_stability({"32K": a, "64K": a})[0]
    assert stable["jaccard"] == 1.0 and stable["ratio"] > 3


def test_jaccard_degenerate() -> None:
    (r,) = S.jaccard_stability({"32K": [0, 0, 0], "64K": [0, 0, 0]}, method="exact")
    assert math.isnan(r["jaccard"]) and math.isnan(r["expected_jaccard"]) and math.isnan(r["ratio"])


# --------------------------------------------------------------------------- #
# Spearman, hard questions
# --------------------------------------------------------------------------- #


def test_rankdata_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, size=(30, 4)).astype(float)
    np.testing.assert_allclose(S.rankdata_average(X, axis=0), sps.rankdata(X, axis=0))
    np.testing.assert_allclose(S.rankdata_average(X, axis=1), sps.rankdata(X, axis=1))


def test_spearman_matrix_matches_scipy() -> None:
    rng = np.random.default_rng(2)
    for ties in (False, True):
        A = rng.random((34, 5))
        if ties:
            A = np.round(A * 6) / 6
        rho, p = S.spearman_matrix(A, ["IE", "MSR", "TR", "KU", "AR"])
        ref = sps.spearmanr(A)
        np.testing.assert_allclose(rho, ref.statistic, atol=1e-12)
        np.testing.assert_allclose(p, ref.pvalue, rtol=1e-9, atol=1e-300)
    # T == 2 returns a matrix whose off-diagonal equals scipy's scalar
    rho2, p2 = S.spearman_matrix(A[:, :2])
    ref2 = sps.spearmanr(A[:, 0], A[:, 1])
    assert rho2.shape == (2, 2)
    assert rho2[0, 1] == pytest.approx(ref2.statistic) and p2[0, 1] == pytest.approx(ref2.pvalue)
    # NaN propagation for the affected type only
    C = rng.random((34, 4))
    C[5, 2] = np.nan
    rho_n, _ = S.spearman_matrix(C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref_n = sps.spearmanr(C)
    np.testing.assert_allclose(rho_n, ref_n.statistic, atol=1e-12)
    assert np.isnan(rho_n[2]).all() and not np.isnan(rho_n[0, 1])
    with pytest.raises(ValueError):
        S.spearman_matrix(A, ["a"])


def test_leaderboard_spearman_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    a = rng.random(34)
    b = a + rng.normal(0, 0.1, 34)
    rho, p = S.leaderboard_spearman(a, b)
    ref = sps.spearmanr(a, b)
    assert rho == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    assert S.leaderboard_spearman([1, 2, 3], [3, 2, 1])[0] == pytest.approx(-1.0)
    assert math.isnan(S.leaderboard_spearman([1, 1, 1], [1, 2, 3])[0])


def test_hard_questions_hand_example() -> None:
    # 5 systems x 6 questions
    C = np.array(
        [[1, 0, 0, 1, 0, 1], [1, 0, 0, 0, 0, 1], [1, 1, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0], [1, 0, 0, 0, np.nan, 0]]
    )
    # solve rates: 1.0, 0.2, 0.0, 0.2, 0.0 (of 4 observed), 0.6
    mask = S.hard_questions(C, threshold=0.2)
    assert mask.tolist() == [False, False, True, False, True, False]
    assert S.hard_questions(C, threshold=0.25).tolist() == [False, True, True, True, True, False]
    acc = S.accuracy_on_subset(C, S.hard_questions(C, threshold=0.25))
    np.testing.assert_allclose(acc, [1 / 4, 0, 1 / 4, 0, 0])
    assert S.accuracy_on_subset([1, 0, 1], [True, True, False]) == pytest.approx(0.5)
    assert math.isnan(S.accuracy_on_subset([1, 0], [False, False]))


# --------------------------------------------------------------------------- #
# judge agreement
# --------------------------------------------------------------------------- #


def test_agreement_kappa_matches_sklearn() -> None:
    rng = np.random.default_rng(4)
    for _ in range(100):
        n = int(rng.integers(2, 300))
        j2 = (rng.random(n) < rng.random()).astype(int)
        flip = rng.random(n) < rng.random() * 0.5
        j1 = np.where(flip, 1 - j2, j2)
        d = S.agreement(j1, j2)
        if len(set(j1) | set(j2)) < 2:
            continue
        assert d["kappa"] == pytest.approx(cohen_kappa_score(j1, j2), abs=1e-12)
        assert d["agreement"] == pytest.approx((j1 == j2).mean())


def test_agreement_rates_and_degenerate() -> None:
    j1 = [1, 1, 1, 0, 0, 1, 0, 1]
    j2 = [1, 0, 1, 0, 1, 1, 0, 0]
    d = S.agreement(j1, j2)
    assert (d["n"], d["n_agree"], d["n_fp"], d["n_fn"]) == (8, 5, 2, 1)
    assert (d["n_ref_pos"], d["n_ref_neg"]) == (4, 4)
    assert d["fp_rate"] == pytest.approx(2 / 4) and d["fn_rate"] == pytest.approx(1 / 4)
    assert d["fp_share"] == pytest.approx(2 / 8) and d["fn_share"] == pytest.approx(1 / 8)
    assert d["agreement"] + d["fp_share"] + d["fn_share"] == pytest.approx(1.0)
    assert S.agreement([1, 1, 1], [1, 1, 1])["kappa"] == 1.0
    assert S.agreement([0, 0], [0, 0])["kappa"] == 1.0
    assert S.agreement([1, 1], [0, 0])["kappa"] == 0.0
    assert math.isnan(S.agreement([1, 1], [1, 1])["fp_rate"])
    # NaN items dropped
    assert S.agreement([1, np.nan, 0], [1, 0, 0])["n"] == 2


def test_agreement_by_group() -> None:
    j1 = [1, 0, 1, 1, 0, 0]
    j2 = [1, 0, 0, 1, 1, 0]
    g = ["TR-Order", "TR-Order", "TR-Date", "TR-Date", "MSR", None]
    out = S.agreement_by_group(j1, j2, g)
    assert list(out) == ["TR-Order", "TR-Date", "MSR"]
    assert out["TR-Order"]["agreement"] == 1.0
    assert out["TR-Date"]["n_fp"] == 1 and out["MSR"]["n_fn"] == 1


# --------------------------------------------------------------------------- #
# paired comparison
# --------------------------------------------------------------------------- #


def test_paired_comparison() -> None:
    base = [1, 1, 1, 0, 1, 0, 1, np.nan]
    text_only = [0, 0, 0, 0, 1, 0, 0, 1]
    d = S.paired_comparison(base, text_only)
    assert d["n"] == 7 and d["b10"] == 4 and d["b01"] == 0
    assert d["acc_base"] == pytest.approx(5 / 7) and d["acc_variant"] == pytest.approx(1 / 7)
    assert d["delta"] == pytest.approx(-4 / 7)
    assert d["p_value"] == pytest.approx(_sm_p(0, 4))
