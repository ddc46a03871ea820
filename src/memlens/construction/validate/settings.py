"""The ``validate`` section's schema: the validity gates and the adversaries behind them (every key
has its value in ``conf/validate/default.yaml``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from memlens.core.settings import Fraction, NonNegInt, PositiveInt, Section

__all__ = ["ValidateSettings"]


class ValidateSettings(Section):
    """``validate``: validity gates of the built benchmark and the adversaries behind them.

    A gate on a noisy figure (accuracy, ROC-AUC) fails when the one-sided lower ``confidence``
    bound of the figure exceeds its threshold, and is not evaluated below its minimum sample."""

    max_auc: Fraction
    max_text_only_rate: Fraction
    max_text_only_excess: Fraction
    max_refusal_detection_excess: Fraction
    max_oracle_excess: Fraction
    probe_per_subtype: dict[str, NonNegInt]
    max_repeat_share: Fraction
    max_frequent_share: Fraction
    confidence: Annotated[float, Field(ge=0.5, lt=1)]
    min_questions: PositiveInt
    min_evidence: PositiveInt
    folds: Annotated[int, Field(ge=2)]
    oracle_repeats: PositiveInt
    vocab_min: PositiveInt
    min_support: PositiveInt
    top_features: PositiveInt
    text_max_features: PositiveInt
    min_sentence_words: PositiveInt
    frequent_uses: PositiveInt
    advisory: list[Literal["text_only", "refusal_detection", "oracle", "evidence_auc", "repetition"]]
    warn_only: bool
    workers: NonNegInt

    def processes(self) -> int:
        """Processes the adversaries run in: ``workers``, or with 0 one per CPU core (at most as many
        as there are adversaries). The figures do not depend on it."""
        import os

        return int(self.workers) or min(os.cpu_count() or 1, 4)
