"""The ``generator`` section's schema: the question and session generator of the generate stage.

``name`` selects the generator (a component of kind ``generator``: ``template``, offline, the
default, or ``llm``, whose options are the ``llm`` section); the writer keys have their values in
``conf/generator/*.yaml``. There is no ``_target_``: the stage builds the generator itself.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import model_validator

from memlens.construction.generate.llm import LLMGeneratorSettings
from memlens.construction.text.corpora import FillerSettings
from memlens.core.registry import named
from memlens.core.settings import Fraction, IntRange, NonNegInt, Section

__all__ = ["GeneratorSettings"]


class GeneratorSettings(Section):
    """``generator``: the question and session generator (with
    :class:`memlens.construction.text.sessions.WriterConfig`)."""

    name: Annotated[str, named("generator")]
    assistant_words: IntRange
    user_words: IntRange
    turns_per_session: IntRange
    # a share of long sessions (evidence and haystack alike): histories of every length then find
    # sessions of the sizes the paper's shape needs (the 128K->256K extension: ~4,400 tokens each)
    long_session_share: Fraction
    long_session_turns: IntRange
    max_regenerations: NonNegInt
    llm: LLMGeneratorSettings | None  # the llm generator's section
    filler: FillerSettings | None  # null: template filler sessions

    @model_validator(mode="after")
    def _llm_section(self) -> GeneratorSettings:
        if self.name == "llm" and self.llm is None:
            raise ValueError("generator.name 'llm' needs the generator.llm section (use generator=llm)")
        return self
