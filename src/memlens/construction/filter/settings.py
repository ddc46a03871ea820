"""The ``filter`` section's schema: image validation limits and the relevance channels.

The limits and the rule have their values in ``conf/filter/*.yaml``; each channel of ``channels`` is
validated against the schema of the channel class its ``name`` selects
(:mod:`memlens.construction.filter.channels`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator

from memlens.core.registry import validate_component
from memlens.core.settings import NonNegInt, PositiveInt, Section

__all__ = ["FilterSettings"]


def _channel(spec: Any) -> Any:
    return validate_component("filter_channel", spec, where="filter.channels[]")


class FilterSettings(Section):
    """``filter``: image validation and relevance scoring. ``rule``: ``all`` (every channel passes)
    or ``paper`` (every primary and negative channel passes and at least one secondary does)."""

    max_side: PositiveInt
    min_side: PositiveInt
    max_pixels: PositiveInt
    max_bytes: PositiveInt
    phash_max_distance: NonNegInt  # images within this distance (256-bit pHash) are near-duplicates
    channels: list[Annotated[Any, AfterValidator(_channel)]]
    rule: Literal["all", "paper"]
