"""Retention vs model size (paper section 4.3, Figure 18): does a bigger model hold up better?

Retention of a system = accuracy at the long length / accuracy at the short length, on the
questions it was judged on at both (failed verdicts count as wrong, as in the leaderboard). The
short length is the benchmark's shortest (or ``lengths[0]``), the long one ``lengths[1]`` or else the
longest length at which at least ``min_systems`` sized systems were judged at both. Size is the
total parameter count of the system's card (:mod:`memlens.eval.report.cards`); the active count is
reported beside it and correlated too (MoE models differ). The Spearman rank correlation and its
two-sided p-value (t approximation, as scipy; for up to :data:`EXACT_MAX` systems also the exact
permutation p-value) are given when at least ``min_systems`` systems (kind other than ``agent``: the
paper correlates LVLMs) have a size and a defined retention.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memlens.core.config import length_tokens
from memlens.eval.report import stats
from memlens.eval.report.cards import SystemCard

__all__ = ["retention_records", "retention_summary", "MIN_SYSTEMS"]

MIN_SYSTEMS = 5


def _pair(cube, sized: list[int], lengths: Sequence[str] | None, min_systems: int) -> tuple[str, str] | None:
    order = sorted(cube.lengths, key=length_tokens)
    if lengths:
        a, b = (str(x) for x in lengths)
        return (a, b) if a in cube.lengths and b in cube.lengths and a != b else None
    if len(order) < 2:
        return None
    short = order[0]
    j0 = cube.lengths.index(short)
    for long in reversed(order[1:]):
        j1 = cube.lengths.index(long)
        both = sum(1 for s in sized if cube.observed[s, j0].any() and cube.observed[s, j1].any())
        if both >= min_systems:
            return short, long
    return short, order[-1]


def retention_records(
    cube, cards: Mapping[str, SystemCard], *, lengths: Sequence[str] | None = None, min_systems: int = MIN_SYSTEMS
) -> tuple[list[dict], tuple[str, str] | None]:
    """One record per system judged at both lengths: accuracies, retention, sizes, kind."""
    sized = [i for i, s in enumerate(cube.systems) if cards.get(s) and cards[s].size_b]
    pair = _pair(cube, sized, lengths, min_systems)
    if pair is None:
        return [], None
    j0, j1 = cube.lengths.index(pair[0]), cube.lengths.index(pair[1])
    out = []
    for s, system in enumerate(cube.systems):
        a, b = cube.correct[s, j0], cube.correct[s, j1]
        both = ~(np.isnan(a) | np.isnan(b))
        if not both.any():
            continue
        acc0, acc1 = float(a[both].mean()), float(b[both].mean())
        card = cards.get(system) or SystemCard(system=system)
        out.append(
            {
                "system": system,
                "kind": card.kind,
                "short": pair[0],
                "long": pair[1],
                "n": int(both.sum()),
                "acc_short": acc0,
                "acc_long": acc1,
                "retention": acc1 / acc0 if acc0 > 0 else None,
                "params_total_b": card.params_total_b,
                "params_active_b": card.params_active_b,
            }
        )
    out.sort(key=lambda r: (-(r["params_total_b"] or 0), r["system"]))
    return out, pair


def _spearman(xs: list[float], ys: list[float]) -> tuple[float | None, float | None]:
    rho, p = stats.leaderboard_spearman(xs, ys)
    return (None if math.isnan(rho) else rho), (None if math.isnan(p) else p)


#: up to this many systems the permutation p-value is exact (8! = 40,320 orders)
EXACT_MAX = 8


def exact_p(xs: list[float], ys: list[float]) -> float | None:
    """Two-sided permutation p-value of Spearman's rho: the share of the orders of ``ys`` whose rho
    is at least as far from 0 as the observed one (the t approximation is poor for a handful of
    systems: at n = 5 and rho = 1 it gives 1e-24, the exact value is 2/120)."""
    import itertools

    n = len(xs)
    if n < 3 or n > EXACT_MAX:
        return None
    rx = stats.rankdata_average(np.asarray(xs, dtype=float))
    ry = stats.rankdata_average(np.asarray(ys, dtype=float))
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return None

    def rho(r) -> float:
        return float(np.corrcoef(rx, r)[0, 1])

    obs = abs(rho(ry)) - 1e-12
    hits = sum(abs(rho(np.asarray(perm))) >= obs for perm in itertools.permutations(ry))
    return hits / math.factorial(n)


def retention_summary(records: list[dict], *, min_systems: int = MIN_SYSTEMS) -> dict[str, Any]:
    """Spearman of retention against total and active size over the sized non-agent systems."""
    use = [r for r in records if r["kind"] != "agent" and r["retention"] is not None and r["params_total_b"]]
    out: dict[str, Any] = {"n_systems": len(use), "min_systems": min_systems, "systems": [r["system"] for r in use]}
    if len(use) < min_systems:
        return {**out, "rho_total": None, "p_total": None, "rho_active": None, "p_active": None}
    ret = [r["retention"] for r in use]
    out["rho_total"], out["p_total"] = _spearman([r["params_total_b"] for r in use], ret)
    out["p_total_exact"] = exact_p([r["params_total_b"] for r in use], ret)
    act = [r for r in use if r["params_active_b"]]
    if len(act) >= min_systems:
        out["rho_active"], out["p_active"] = _spearman(
            [r["params_active_b"] for r in act], [r["retention"] for r in act]
        )
    else:
        out["rho_active"], out["p_active"] = None, None
    out["n_active"] = len(act)
    return out
