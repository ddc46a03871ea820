"""Resolution of a comparison: the minimum detectable effect (MDE) at a given power.

A leaderboard gap or a length transition is only informative when it is larger than what the
benchmark can resolve with its number of questions. Two designs:

* **paired** (the same questions under two conditions: two systems, two lengths): the exact McNemar
  test's normal approximation (Connor 1987). With ``n`` paired questions, discordance rate
  ``psi = (b01 + b10) / n`` and a true difference ``delta = p01 - p10``, the test at two-sided level
  ``alpha`` has power ``1 - beta`` when ::

      sqrt(n) * delta = z_{1-alpha/2} * sqrt(psi) + z_{1-beta} * sqrt(psi - delta**2)

  :func:`mde_paired` solves this for ``delta`` (the smallest difference detected with that power).
  A difference can never exceed the discordance (``|p01 - p10| <= psi``): when even ``delta = psi``
  has less power, no difference is detectable and the MDE is ``None``; with no discordant pair at
  all it is ``None`` too (nothing can be resolved from identical outcomes).
* **unpaired** (two independent samples, e.g. rows of a leaderboard without per-question
  outcomes): ``delta = (z_{1-alpha/2} + z_{1-beta}) * sqrt(p (1 - p) (1/n1 + 1/n2))`` with the
  pooled accuracy ``p`` (:func:`mde_unpaired`): at n = 195 and p = 0.30 about 13 points, at
  n = 789 about 6.5.

Everything is in fractions (0.13 = 13 points).
"""

from __future__ import annotations

import math

from scipy import optimize
from scipy import stats as _sps

__all__ = ["mde_paired", "mde_unpaired", "paired_power", "resolved"]


def _z(alpha: float, power: float) -> tuple[float, float]:
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError("alpha and power must be in (0, 1)")
    return float(_sps.norm.ppf(1.0 - alpha / 2.0)), float(_sps.norm.ppf(power))


def paired_power(n: int, psi: float, delta: float, *, alpha: float = 0.05) -> float:
    """Power of the two-sided McNemar test (normal approximation) for a true difference ``delta``."""
    za, _ = _z(alpha, 0.5)
    if n <= 0 or psi <= 0 or abs(delta) > psi:
        return math.nan
    rest = math.sqrt(max(psi - delta * delta, 0.0))
    if rest == 0.0:
        return 1.0
    return float(_sps.norm.cdf((math.sqrt(n) * abs(delta) - za * math.sqrt(psi)) / rest))


def mde_paired(n: int, psi: float, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest paired difference detected with ``power`` (see the module docstring), or None."""
    za, zb = _z(alpha, power)
    if n <= 0 or not psi > 0 or psi > 1:
        return None
    root_n = math.sqrt(n)

    def gap(delta: float) -> float:
        return root_n * delta - za * math.sqrt(psi) - zb * math.sqrt(max(psi - delta * delta, 0.0))

    if gap(psi) <= 0:  # even the largest possible difference is not detected with that power
        return None
    return float(optimize.brentq(gap, 0.0, psi, xtol=1e-12, rtol=1e-12))


def mde_unpaired(n1: int, n2: int, p: float, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest difference of two independent accuracies detected with ``power`` (pooled ``p``)."""
    za, zb = _z(alpha, power)
    if n1 <= 0 or n2 <= 0 or not 0.0 <= p <= 1.0:
        return None
    return float((za + zb) * math.sqrt(p * (1.0 - p) * (1.0 / n1 + 1.0 / n2)))


def resolved(gap: float | None, mde: float | None) -> bool | None:
    """True when ``|gap|`` reaches the MDE, False when it is below, None when either is unknown."""
    if gap is None or mde is None or (isinstance(gap, float) and math.isnan(gap)):
        return None
    return abs(gap) >= mde - 1e-12
