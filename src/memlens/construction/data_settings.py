"""The ``data`` section's schema: which benchmark is built (scale, seed, lengths, cross-modal token
counting, history shape) and where evaluation items come from.

Every key has its value in ``conf/data/default.yaml`` (the one home of these defaults): the schema
only checks types and values.
"""

from __future__ import annotations

from typing import Literal

from memlens.core.settings import NonNegFloat, NonNegInt, PositiveInt, Section

__all__ = ["ITEM_SOURCES", "CrossEvidenceSettings", "DataSettings", "ScaleSettings", "TokensSettings"]

#: where evaluation items come from (``data.items``): this pipeline's benchmark or an official release
ITEM_SOURCES = ("built", "official")


class TokensSettings(Section):
    """``data.tokens``: cross-modal token counting (:class:`memlens.construction.assemble.tokens.TokenCounter`)."""

    tokenizer: str  # minilm (bundled WordPiece) or a tokenizer.json path
    image_rule: Literal["mmlongbench", "fixed"]
    patch: PositiveInt
    max_side: PositiveInt
    fixed_per_image: NonNegInt


class CrossEvidenceSettings(Section):
    """``data.cross_evidence``: other questions' evidence sessions as haystack (see the assemble stage).
    ``window_days``: only questions asked at most this many days apart lend each other evidence
    sessions (which keep their own dates), or the ``min_lenders`` nearest in time when fewer are
    that close; ``window_days_by_length``: a wider window from those lengths on (the shorter
    histories are unchanged); ``balance``: how strongly each pick prefers sessions used
    in fewer histories of the length (0 = not at all)."""

    enabled: bool
    window_days: PositiveInt
    window_days_by_length: dict[str, PositiveInt] | None  # wider windows from these lengths on
    min_lenders: NonNegInt
    balance: NonNegFloat


class ScaleSettings(Section):
    """``data.scales.<name>``: the composition of one scale."""

    lengths: list[str]
    counts: dict[str, NonNegInt]  # "<question_type>/<subtype>" -> questions ("<type>/" for types without subtypes)
    haystack_sessions: NonNegInt
    filler_sessions: NonNegInt


class DataSettings(Section):
    """``data``: benchmark construction. ``scale`` must name one of ``scales``; ``lengths`` empty = the
    scale's lengths."""

    scale: str
    seed: int
    lengths: list[str]
    length_tolerance: NonNegFloat
    spare_fraction: NonNegFloat
    tokens: TokensSettings
    scales: dict[str, ScaleSettings]
    # sessions and images per history the assembly aims at, per length: [sessions, images]
    shape: dict[str, list[PositiveInt]]
    cross_evidence: CrossEvidenceSettings
    items: Literal[ITEM_SOURCES]  # where evaluation items come from  # type: ignore[valid-type]
    official_dir: str | None

    def built_lengths(self) -> list[str]:
        """The lengths a build has: ``lengths``, or the scale's when it is empty."""
        return [str(x) for x in (self.lengths or self.scales[self.scale].lengths)]
