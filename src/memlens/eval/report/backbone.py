"""The backbone-matched comparison (paper Appendix G.6, Table 16): a memory agent against its own
backbone answering directly, on the same questions.

An agent's card names the LVLM config of its backbone (``backbone_config``,
:mod:`memlens.eval.report.cards`). Wherever both were judged at a length, the comparison takes the
questions both answered (the agent subset: agents are evaluated on ``agent_subset_195``) and gives,
overall and per type: both accuracies, the paired difference agent - backbone with its 95%
percentile-bootstrap interval (question resamples shared by all groups), the exact McNemar p-value,
and the paired minimum detectable effect (:func:`memlens.eval.report.power.mde_paired`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from memlens.core.config import length_tokens
from memlens.core.constants import TYPE_ORDER
from memlens.eval.report import stats
from memlens.eval.report.cards import SystemCard
from memlens.eval.report.power import mde_paired, resolved

__all__ = ["backbone_records"]


def _pairs(cube, cards: Mapping[str, SystemCard]) -> list[tuple[str, str]]:
    out = []
    for s in cube.systems:
        card = cards.get(s)
        if card and card.backbone_config and card.backbone_config in cube.systems and card.backbone_config != s:
            out.append((s, card.backbone_config))
    return sorted(out)


def backbone_records(
    cube, cards: Mapping[str, SystemCard], *, n_resamples: int = 1000, seed: int = 0, alpha: float = 0.05
) -> list[dict]:
    """One record per (agent, length, group) where the agent and its backbone were both judged."""
    out = []
    types = np.array(cube.types)
    for agent, base in _pairs(cube, cards):
        sa, sb = cube.system_index(agent), cube.system_index(base)
        for j, length in sorted(enumerate(cube.lengths), key=lambda t: length_tokens(t[1])):
            a, b = cube.correct[sa, j], cube.correct[sb, j]
            both = ~(np.isnan(a) | np.isnan(b))
            if not both.any():
                continue
            diff = np.where(both, a - b, np.nan)
            groups = [t if m else "" for t, m in zip(types, both)]
            res = stats.bootstrap_ci_matrix(diff, groups, n_resamples=n_resamples, seed=seed)
            present = [g for g in ["overall", *TYPE_ORDER] if g in res.columns]
            for g in present:
                k = res.columns.index(g)
                m = both if g == "overall" else (both & (types == g))
                if not m.any():
                    continue
                cmp = stats.paired_comparison(b[m], a[m])  # base -> variant = backbone -> agent
                n = int(m.sum())
                psi = (cmp["b01"] + cmp["b10"]) / n
                mde = mde_paired(n, psi, alpha=alpha)
                out.append(
                    {
                        "agent": agent,
                        "backbone": base,
                        "length": length,
                        "group": g,
                        "n": n,
                        "acc_agent": float(a[m].mean()),
                        "acc_backbone": float(b[m].mean()),
                        "diff": float(res.mean[k]),
                        "diff_low": float(res.low[k]),
                        "diff_high": float(res.high[k]),
                        "agent_only": int(cmp["b01"]),
                        "backbone_only": int(cmp["b10"]),
                        "p_value": float(cmp["p_value"]),
                        "mde": mde,
                        "resolved": resolved(float(res.mean[k]), mde),
                    }
                )
    return out
