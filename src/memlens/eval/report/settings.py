"""The schema of the optional section ``report``; a configuration without the section gets
these defaults (they are declared here only)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from memlens.core.settings import Fraction, NonNegFloat, NonNegInt, PositiveFloat, PositiveInt, Section, reject_api_key

__all__ = ["LLMLabelSettings", "ReportSettings"]


class LLMLabelSettings(Section):
    """``report.llm_labels``: the OpenAI-compatible endpoint that labels wrong answers with the
    paper's taxonomy (:mod:`memlens.eval.report.llm_labels`); absent: no LLM labels."""

    base_url: str
    model: str
    model_id: str | None = None
    api_key_env: str | None = "MEMLENS_JUDGE_API_KEY"
    concurrency: PositiveInt = 8
    max_new_tokens: PositiveInt = 256
    temperature: NonNegFloat = 0.0
    timeout_s: PositiveFloat = 300.0
    max_retries: NonNegInt = 4

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return reject_api_key("report.llm_labels", data)


class ReportSettings(Section):
    """``report`` (optional): options of the cross-system analyses."""

    alpha: Fraction = 0.05
    hard_threshold: Fraction = 0.2
    hard_reference_length: str | None = None
    degradation_test_direction: Literal["any", "increase", "decrease"] = "any"
    retention_lengths: Annotated[list[str], Field(min_length=2, max_length=2)] | None = None  # [short, long]
    llm_labels: LLMLabelSettings | None = None
