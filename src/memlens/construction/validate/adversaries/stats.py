"""Small-sample honesty: one-sided confidence bounds and the verdict of a gate.

A gate compares a figure with a threshold. On a small benchmark the figure is noisy, so a gate
is decided on the one-sided lower confidence bound of the figure (a leak must be *shown*) and only
when there is enough data to decide at all:

- ``not evaluated`` when ``n < min_n`` (the figure is still reported);
- ``fail`` when the lower ``confidence`` bound exceeds the threshold;
- ``pass`` otherwise; ``point_over`` marks a point estimate above the threshold that the bound does
  not confirm (reported in ``validity.md`` as a warning).

Bounds: Wilson score for an accuracy (minus a constant chance level), Hanley & McNeil's standard
error for a ROC-AUC.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def z_of(confidence: float) -> float:
    return NormalDist().inv_cdf(confidence)


def wilson_lower(k: float, n: int, confidence: float) -> float:
    """One-sided lower Wilson bound of a proportion k/n (k may be fractional, e.g. a balanced accuracy x n)."""
    if n <= 0:
        return 0.0
    z = z_of(confidence)
    p = k / n
    den = 1 + z * z / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0))
    return max(0.0, (centre - half) / den)


def wilson_upper(k: float, n: int, confidence: float) -> float:
    """One-sided upper Wilson bound of a proportion k/n (the other end of :func:`wilson_lower`)."""
    return 1.0 - wilson_lower(n - k, n, confidence) if n > 0 else 1.0


def auc_lower(auc: float, n_pos: int, n_neg: int, confidence: float) -> float:
    """One-sided lower bound of a ROC-AUC from Hanley & McNeil's (1982) standard error."""
    if n_pos <= 0 or n_neg <= 0:
        return 0.0
    a = min(max(auc, 1e-9), 1 - 1e-9)
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    var = (a * (1 - a) + (n_pos - 1) * (q1 - a * a) + (n_neg - 1) * (q2 - a * a)) / (n_pos * n_neg)
    return max(0.0, auc - z_of(confidence) * math.sqrt(max(var, 0.0)))


def verdict(value: float, lower: float | None, threshold: float, n: int, min_n: int) -> dict:
    """The gate record: ``status`` is ``pass``, ``fail`` or ``not evaluated``; ``pass`` is False only on ``fail``."""
    rec = {
        "value": round(float(value), 4),
        "lower_bound": None if lower is None else round(float(lower), 4),
        "threshold": threshold,
        "n": int(n),
        "min_n": int(min_n),
    }
    if n < min_n:
        status = "not evaluated"
    else:
        decisive = value if lower is None else lower
        status = "fail" if decisive > threshold else "pass"
    rec["status"] = status
    rec["pass"] = status != "fail"
    rec["point_over"] = bool(value > threshold and status != "fail")
    return rec
