"""Benchmark of the batched bootstrap in memlens.eval.report.stats.

Workload (paper scale): 34 systems x 4 context lengths x 789 questions,
1000 question-level resamples, CIs for overall + 5 types + 10 subtypes
(16 columns -> 2,176 intervals).  Compares against a naive Python-loop
implementation (one ``np.mean(x[idx])`` per row x group x resample) timed on a
small slice and extrapolated linearly.

Run:  .venv/bin/python benchmarks/bench_stats.py [--repeat 3]
Target: < 5 s for the full workload on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from memlens.eval.report.stats import bootstrap_ci_matrix, bootstrap_indices

N_SYSTEMS, N_LENGTHS, N_Q, N_RESAMPLES = 34, 4, 789, 1000
# per-type sizes implied by the paper's percentages (sum = 789)
TYPE_SIZES = {"IE": 246, "MSR": 143, "TR": 194, "KU": 116, "AR": 90}
SUBTYPES = {
    "IE": ["IE-Entity", "IE-PrevInfo"],
    "MSR": ["MSR-Counting", "MSR-Arithmetic", "MSR-YesNo", "MSR-EntityRes"],
    "TR": ["TR-Duration", "TR-Grounding"],
    "KU": ["KU-Update"],
    "AR": ["AR-Refusal"],
}


def make_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    types = np.concatenate([[t] * n for t, n in TYPE_SIZES.items()])
    subtypes = np.array([rng.choice(SUBTYPES[t]) for t in types])
    perm = rng.permutation(N_Q)
    types, subtypes = types[perm], subtypes[perm]
    skill = rng.uniform(0.15, 0.6, size=(N_SYSTEMS, 1, 1))
    decay = rng.uniform(0.0, 0.04, size=(N_SYSTEMS, 1, 1)) * np.arange(N_LENGTHS)[None, :, None]
    difficulty = rng.normal(0, 0.15, size=(1, 1, N_Q))
    p = np.clip(skill - decay + difficulty, 0.01, 0.99)
    outcomes = (rng.random((N_SYSTEMS, N_LENGTHS, N_Q)) < p).astype(float)
    return outcomes, types, subtypes


def naive_bootstrap(
    rows: np.ndarray, columns: list[np.ndarray], n_resamples: int, seed: int, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Reference: Python loops over rows, groups and resamples."""
    idx = bootstrap_indices(rows.shape[1], n_resamples, seed)
    alpha = 1 - confidence
    low = np.empty((rows.shape[0], len(columns)))
    high = np.empty_like(low)
    for r, x in enumerate(rows):
        for g, member in enumerate(columns):
            reps = np.empty(n_resamples)
            for b in range(n_resamples):
                sel = idx[b][member[idx[b]]]
                reps[b] = np.mean(x[sel])
            low[r, g], high[r, g] = np.quantile(reps, [alpha / 2, 1 - alpha / 2])
    return low, high


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive-rows", type=int, default=4)
    ap.add_argument("--naive-resamples", type=int, default=250)
    args = ap.parse_args()

    outcomes, types, subtypes = make_data()
    groups = {"type": types, "subtype": subtypes}
    n_rows = N_SYSTEMS * N_LENGTHS

    bootstrap_ci_matrix(outcomes[:1, :1], groups, n_resamples=10)  # warm-up
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        res = bootstrap_ci_matrix(outcomes, groups, n_resamples=N_RESAMPLES, seed=0)
        times.append(time.perf_counter() - t0)
    n_cols = len(res.columns)
    best = min(times)

    # same workload with 1% missing items (second matrix product for denominators)
    rng = np.random.default_rng(1)
    with_nan = outcomes.copy()
    with_nan[rng.random(with_nan.shape) < 0.01] = np.nan
    t0 = time.perf_counter()
    bootstrap_ci_matrix(with_nan, groups, n_resamples=N_RESAMPLES, seed=0)
    t_nan = time.perf_counter() - t0

    # naive loop on a slice, then extrapolate linearly in rows and resamples
    rows = outcomes.reshape(n_rows, N_Q)[: args.naive_rows]
    member_cols = [np.ones(N_Q, dtype=bool)]
    for name in res.columns[1:]:
        key, label = name.split(":", 1)
        member_cols.append(groups[key] == label)
    t0 = time.perf_counter()
    lo_naive, hi_naive = naive_bootstrap(rows, member_cols, args.naive_resamples, seed=0)
    t_naive_slice = time.perf_counter() - t0
    t_naive_full = t_naive_slice * (n_rows / args.naive_rows) * (N_RESAMPLES / args.naive_resamples)

    # correctness of the vectorized path on the same slice / resample count
    small = bootstrap_ci_matrix(rows, groups, n_resamples=args.naive_resamples, seed=0)
    max_err = max(np.abs(small.low - lo_naive).max(), np.abs(small.high - hi_naive).max())

    print(
        f"workload: {N_SYSTEMS} systems x {N_LENGTHS} lengths x {N_Q} questions, "
        f"{N_RESAMPLES} resamples, {n_cols} columns (overall + {len(TYPE_SIZES)} types + "
        f"{n_cols - 1 - len(TYPE_SIZES)} subtypes) = {n_rows * n_cols} intervals"
    )
    print(f"cpus visible: {os.cpu_count()}  (affinity: {len(os.sched_getaffinity(0))})")
    print(
        f"vectorized bootstrap_ci_matrix: best {best:.3f} s over {args.repeat} runs "
        f"(all: {', '.join(f'{t:.3f}' for t in times)})"
    )
    print(f"vectorized, 1% missing items:   {t_nan:.3f} s")
    print(
        f"naive loop: {t_naive_slice:.2f} s for {args.naive_rows} rows x {n_cols} columns x "
        f"{args.naive_resamples} resamples -> extrapolated full workload {t_naive_full:.0f} s"
    )
    print(f"speed-up: {t_naive_full / best:.0f}x ; max |vectorized - naive| on slice = {max_err:.2e}")
    print(f"target < 5 s: {'PASS' if best < 5 else 'FAIL'}")


if __name__ == "__main__":
    main()
