"""The schema of the optional section ``report``; a configuration without the section gets
these defaults (they are declared here only)."""

from __future__ import annotations

from typing import Literal

from memlens.core.settings import Fraction, Section

__all__ = ["ReportSettings"]


class ReportSettings(Section):
    """``report`` (optional): options of the cross-system analyses."""

    alpha: Fraction = 0.05
    hard_threshold: Fraction = 0.2
    hard_reference_length: str | None = None
    degradation_test_direction: Literal["any", "increase", "decrease"] = "any"
