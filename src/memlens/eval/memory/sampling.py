"""The diagnostics' question sample and the precision of what it measures.

``memlens diagnose`` scores retrieval per question type; its cost is the input adapters' (OCR) over
every image of the sampled histories. The default sample (``memory.sample: auto``) is stratified by
question type and sized per type for a target precision: the smallest ``n`` whose 95% interval on
the type's mean recall@10 has half-width at most ``margin`` (5 points) when the per-question recall
has standard deviation ``planning_sd``, sampling without replacement from the ``N`` questions of the
type in the diagnostics set (finite-population correction)::

    n0 = (z * planning_sd / margin) ** 2        n = ceil(n0 / (1 + (n0 - 1) / N))

Questions without evidence sessions (answer refusal) have no recall and are not sampled. Each type's
questions are drawn in a seeded order (``memory.sample_seed``), so the same build and seed give the
same sample. The interval actually reached in every (retriever, adapter, length, type) cell is
computed from the sample (:func:`half_width`: Student t, finite-population corrected; 0 for a
census) and reported next to the figure, so a cell noisier than planned shows it. The overall
("all") figure of a sample is the stratified estimate (each type's mean weighted by its share of
the population; :func:`stratified`), which for the whole set is the plain mean.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

__all__ = ["half_width", "plan_sizes", "sample_by_type", "stratified"]


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def plan_sizes(
    population: Mapping[str, int], *, margin: float, confidence: float, planning_sd: float
) -> dict[str, int]:
    """Questions to sample per type (see the module docstring); never more than the type has."""
    if not 0 < margin < 1 or not 0 < confidence < 1 or planning_sd < 0:
        raise ValueError("margin and confidence must be in (0, 1), planning_sd >= 0")
    n0 = (_z(confidence) * planning_sd / margin) ** 2
    out = {}
    for t, big_n in population.items():
        if big_n <= 0:
            out[t] = 0
            continue
        n = math.ceil(n0 / (1 + (n0 - 1) / big_n)) if n0 > 1 else 1
        out[t] = max(1, min(big_n, n))
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
