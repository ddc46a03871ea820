"""The ``eval`` section's schema: the evaluation protocol (every key has its value in
``conf/eval/default.yaml``). The modes, layouts and subsets are those of the code that implements
them (:data:`memlens.eval.systems.base.MODES`, :data:`memlens.eval.prompt.LAYOUTS`,
:data:`memlens.eval.agents.subset.SUBSETS`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from memlens.core.registry import named
from memlens.core.settings import Fraction, PositiveInt, Section
from memlens.eval.agents.subset import SUBSETS
from memlens.eval.prompt import LAYOUTS
from memlens.eval.systems.base import MODES

__all__ = ["EvalSettings"]


class EvalSettings(Section):
    """``eval``: the evaluation protocol."""

    mode: Literal[MODES]  # type: ignore[valid-type]
    layout: Literal[LAYOUTS]  # type: ignore[valid-type]
    lengths: list[str]  # empty: every built length
    max_items: PositiveInt | None
    wait_for_lock: bool  # a second evaluation of the same system waits (true) or stops at once
    max_failure_rate: Fraction  # more failed requests (after retries) than this share: exit status 1
    subset: Literal[SUBSETS]  # type: ignore[valid-type]
    caption_adapter: Annotated[str, named("adapter")]  # mode caption: the input adapter whose text replaces each image
    caption_adapter_options: dict[str, Any]
