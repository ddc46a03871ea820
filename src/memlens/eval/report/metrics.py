"""Per-system metrics from verdicts: accuracy overall / per type / per subtype with bootstrap CIs.

Metric names are flat and never path-prefixes of each other: ``acc``, ``acc_ci_low``,
``acc_ci_high``, ``acc__IE``, ``acc__IE_ci_low``, ``acc__MSR__counting``, ... plus ``n``,
``n_failed`` (requests or judge calls that failed: scored as not correct, counted separately),
``refusal_rate`` and ``per_answer_acc`` (coverage vs per-answer accuracy).
"""

from __future__ import annotations

import numpy as np

from memlens.core.constants import TYPE_ORDER
from memlens.core.schema import AR, TYPE_ABBREV, Question, Verdict
from memlens.eval.report import stats


def subtype_labels(types: list[str], raw_subtypes: list[str]) -> list[str]:
    """Subtype column label per question (``"MSR/counting"``), only for types with more than one
    subtype ("" otherwise): the one rule for every per-subtype table, metric and figure."""
    multi = {t for t in set(types) if len({s for s, tt in zip(raw_subtypes, types) if tt == t and s}) > 1}
    return [f"{t}/{s}" if (t in multi and s) else "" for t, s in zip(types, raw_subtypes)]


def metric_name(column: str) -> str:
    """Flat metric name of an accuracy column: ``overall`` -> ``acc``, ``IE`` -> ``acc__IE``,
    ``MSR/counting`` -> ``acc__MSR__counting`` (no name is a path-prefix of another)."""
    if column == "overall":
        return "acc"
    return "acc__" + column.replace("/", "__")


def system_metrics(
    questions: dict[str, Question], verdicts: list[Verdict], *, n_resamples: int = 1000, seed: int = 0
) -> dict[str, float]:
    """Metrics for one (system, mode, length) over the questions that have a verdict."""
    vs = sorted(verdicts, key=lambda v: v.question_id)
    qs = [questions[v.question_id] for v in vs]
    if not vs:
        return {"n": 0}
    outcome = np.array([1.0 if v.correct else 0.0 for v in vs])
    types = [TYPE_ABBREV.get(q.question_type, q.question_type) for q in qs]
    subs = subtype_labels(types, [q.question_subtype or "" for q in qs])
    res = stats.bootstrap_ci_matrix(
        outcome[None, :], {"type": types, "subtype": subs}, n_resamples=n_resamples, seed=seed
    )
    out: dict[str, float] = {"n": float(len(vs)), "n_failed": float(sum(v.correct is None for v in vs))}
    for j, col in enumerate(res.columns):
        k = metric_name(col if col == "overall" else col.split(":", 1)[1])
        out[k] = float(res.mean[0, j])
        out[f"{k}_ci_low"] = float(res.low[0, j])
        out[f"{k}_ci_high"] = float(res.high[0, j])
        out[f"{k}_n"] = float(res.n[0, j])
    answerable = np.array([q.question_type != AR for q in qs])
    abstained = np.array([bool(v.abstained) for v in vs])
    if answerable.any():
        cov = stats.coverage_accuracy(outcome.astype(bool), abstained, answerable)
        out["refusal_rate"] = float(cov["refusal_rate"])
        pa = cov["per_answer_accuracy"]
        out["per_answer_acc"] = float(pa) if pa == pa else 0.0
    return {k: round(v, 6) for k, v in out.items()}


def type_columns(metrics: dict[str, float]) -> list[str]:
    return [f"acc__{t}" for t in TYPE_ORDER if f"acc__{t}" in metrics]
