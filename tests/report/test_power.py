"""Minimum detectable effects (memlens.eval.report.power) against hand computations and a simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memlens.eval.report.power import mde_paired, mde_unpaired, paired_power, resolved

Z95, Z80 = 1.959964, 0.841621


def test_unpaired_mde_matches_the_issue_figures():
    # (z_.975 + z_.8) * sqrt(p (1 - p) (1/n + 1/n)), by hand: n = 195 -> 0.1300, n = 789 -> 0.0646
    assert mde_unpaired(195, 195, 0.3) == pytest.approx((Z95 + Z80) * math.sqrt(0.21 * 2 / 195), abs=1e-5)
    assert mde_unpaired(195, 195, 0.3) == pytest.approx(0.1300, abs=5e-4)
    assert mde_unpaired(789, 789, 0.3) == pytest.approx(0.0646, abs=5e-4)
    assert mde_unpaired(0, 10, 0.3) is None


def test_paired_mde_solves_connors_equation_by_hand():
    # n = 100, psi = 0.2: 10 d = 1.96 sqrt(0.2) + 0.8416 sqrt(0.2 - d^2) -> d = 0.1238 (solved by hand)
    d = mde_paired(100, 0.2)
    assert d == pytest.approx(0.1238, abs=5e-4)
    assert math.sqrt(100) * d == pytest.approx(Z95 * math.sqrt(0.2) + Z80 * math.sqrt(0.2 - d * d), abs=1e-6)
    assert paired_power(100, 0.2, d) == pytest.approx(0.8, abs=1e-6)
    # more discordance, larger MDE; more questions, smaller MDE
    assert mde_paired(100, 0.4) > d > mde_paired(400, 0.2)


def test_paired_mde_has_80_percent_power_in_a_simulation():
    n, psi = 400, 0.2
    d = mde_paired(n, psi)
    rng = np.random.default_rng(0)
    p01, p10 = (psi + d) / 2, (psi - d) / 2
    sims = rng.multinomial(n, [p01, p10, 1 - psi], size=40000)
    b01, b10 = sims[:, 0], sims[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(b01 + b10 > 0, (b01 - b10) / np.sqrt(b01 + b10), 0.0)
    power = float((np.abs(z) > Z95).mean())
    assert power == pytest.approx(0.80, abs=0.02)


def test_pairing_resolves_smaller_gaps_when_outcomes_agree():
    # two systems at ~30% that agree on most questions (psi = 0.2 < 2 p (1 - p) = 0.42)
    assert mde_paired(195, 0.2) < mde_unpaired(195, 195, 0.3)


def test_nothing_is_detectable_without_discordance_or_questions():
    assert mde_paired(195, 0.0) is None
    assert mde_paired(3, 0.5) is None  # even a difference equal to the discordance is not detected
    assert mde_paired(0, 0.2) is None
    with pytest.raises(ValueError):
        mde_paired(10, 0.2, power=1.0)


def test_resolved_marks():
    assert resolved(0.13, 0.12) is True and resolved(-0.13, 0.12) is True
    assert resolved(0.05, 0.12) is False
    assert resolved(0.05, None) is None and resolved(None, 0.1) is None
