"""The diagnostics' question sample and the precision of what it measures.

``memlens diagnose`` scores retrieval per question type; its cost is the input adapters' (OCR) over
every image of the sampled histories. The default sample (``memory.sample: auto``) is stratified by
question type and sized per type for a target precision: the smallest ``n`` whose ``confidence``
interval on the type's mean recall@10, as :func:`half_width` computes it from the sample (Student t,
sample variance, finite-population correction), is at most ``margin`` (5 points) wide on each side
whenever the per-question recall@10 of the ``N`` questions of the type has a standard deviation of
at most ``planning_sd``::

    half_width(n) <= t(n - 1) * planning_sd * sqrt(n / (n - 1)) / sqrt(n) * sqrt((N - n) / (N - 1))

(the sample variance, divided by ``n - 1``, is at most ``n / (n - 1)`` times the population's).
The default ``planning_sd`` is 0.5, the largest standard deviation a score in [0, 1] can have, so the
planned interval is a bound, not a hope: every (retriever, adapter, length, type) cell reaches it
however its recall is spread. (A planning value of 0.2 was the default before: the dense retriever's
cells, recall@10 near 30% with most questions at 0 or 1, reached ±7 to ±13 points at paper scale.)
Since histories share their haystack sessions, the OCR a sample costs grows slowly with its size: at
paper scale the 112 questions of the 0.2 plan need 5,395 distinct history images, the 170 of the 0.5
plan 5,811, all 184 with evidence 5,853.

Questions without evidence sessions (answer refusal) have no recall and are not sampled. Each type's
questions are drawn in an order seeded by the build's ``data.seed``, so the same build and seed give the
same sample. The interval actually reached in every (retriever, adapter, length, type) cell is
computed from the sample (:func:`half_width`: Student t, finite-population corrected; 0 for a
census) and reported next to the figure. The overall ("all") figure of a sample is the stratified
estimate (each type's mean weighted by its share of the population; :func:`stratified`), which for
the whole set is the plain mean.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

__all__ = ["half_width", "plan_sizes", "planned_half_width", "sample_by_type", "stratified"]


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def planned_half_width(n: int, population: int, *, confidence: float, planning_sd: float) -> float:
    """The largest half-width :func:`half_width` can give for a sample of ``n`` of ``population``
    values whose population standard deviation is at most ``planning_sd`` (0 for a census)."""
    if n >= population:
        return 0.0
    if n < 2:
        return math.inf
    from scipy.stats import t as student

    sd = planning_sd * math.sqrt(n / (n - 1))
    fpc = (population - n) / (population - 1)
    return float(student.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n) * math.sqrt(fpc))


def plan_sizes(
    population: Mapping[str, int], *, margin: float, confidence: float, planning_sd: float
) -> dict[str, int]:
    """Questions to sample per type: the smallest ``n`` whose :func:`planned_half_width` is at most
    ``margin`` (see the module docstring); never more than the type has, one when nothing varies."""
    if not 0 < margin < 1 or not 0 < confidence < 1 or planning_sd < 0:
        raise ValueError("margin and confidence must be in (0, 1), planning_sd >= 0")
    out = {}
    for t, big_n in population.items():
        if big_n <= 0:
            out[t] = 0
        elif planning_sd == 0:
            out[t] = 1
        else:  # the half-width falls as n grows: bisect for the first n within the margin
            lo, hi = 1, big_n  # planned_half_width(big_n) == 0 <= margin
            while lo < hi:
                mid = (lo + hi) // 2
                if planned_half_width(mid, big_n, confidence=confidence, planning_sd=planning_sd) <= margin:
                    hi = mid
                else:
                    lo = mid + 1
            out[t] = lo
    return out


def sample_by_type(ids_by_type: Mapping[str, Sequence[str]], sizes: Mapping[str, int], seed: object) -> list[str]:
    """The first ``sizes[t]`` questions of each type in a seeded shuffle of its sorted ids."""
    out: list[str] = []
    for t in sorted(ids_by_type):
        order = sorted(ids_by_type[t])
        random.Random(f"diagnose-sample:{seed}:{t}").shuffle(order)
        out += order[: sizes.get(t, 0)]
    return sorted(out)


def half_width(values: Sequence[float], population: int, confidence: float) -> float | None:
    """Half-width of the ``confidence`` interval of the mean of ``values``, a sample without
    replacement of ``population`` units: 0 for a census, None for fewer than two values."""
    n = len(values)
    if n >= population:
        return 0.0
    if n < 2:
        return None
    from scipy.stats import t as student

    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    fpc = (population - n) / (population - 1) if population > 1 else 0.0
    return float(student.ppf(0.5 + confidence / 2, n - 1) * math.sqrt(var / n * fpc))


def stratified(
    by_type: Mapping[str, Sequence[float]], population: Mapping[str, int], confidence: float
) -> tuple[float, float | None]:
    """(mean, half-width) of the stratified estimate over types: each type's sample mean weighted by
    its share of the population, variance the weighted sum of the types' (normal approximation)."""
    types = [t for t, v in by_type.items() if v]
    total = sum(population[t] for t in types)
    mean, var, known = 0.0, 0.0, True
    for t in types:
        vals, big_n = by_type[t], population[t]
        w = big_n / total
        m = sum(vals) / len(vals)
        mean += w * m
        if len(vals) >= big_n:
            continue  # a census: no sampling error
        if len(vals) < 2:
            known = False
            continue
        s2 = sum((v - m) ** 2 for v in vals) / (len(vals) - 1)
        var += w * w * s2 / len(vals) * (big_n - len(vals)) / (big_n - 1)
    return mean, (_z(confidence) * math.sqrt(var) if known else None)
