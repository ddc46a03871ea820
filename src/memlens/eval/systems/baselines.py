"""Two honest calibration baselines that need no weights.

- ``refuse`` always answers "Insufficient information": 100% on answer refusal, 0% elsewhere.
- ``chance`` gives a uniform random valid answer for closed-form questions (A/B, Yes/No, an order
  of the listed indices, a small count), seeded per question; open-form questions get a random pick
  from the format's answer space defined by the question type (see :mod:`memlens.construction.abilities`).
"""

from __future__ import annotations

from memlens.core.items import EvalItem
from memlens.core.registry import component
from memlens.core.schema import REFUSAL_REFERENCE
from memlens.core.settings import configured
from memlens.core.store import derive_rng
from memlens.eval.systems.base import Model, ModelOutput, SystemSettings


class RefuseSettings(SystemSettings):
    """``model`` with ``_target_: memlens.eval.systems.baselines.RefuseBaseline``."""


class ChanceSettings(SystemSettings):
    """``model`` with ``_target_: memlens.eval.systems.baselines.ChanceBaseline``."""

    seed: int = 0


@configured
@component("model", "refuse")
class RefuseBaseline(Model):
    kind = "baseline"
    answers_are_free = True
    Config = RefuseSettings

    def __init__(self, name: str = "refuse", *, kind: str | None):
        super().__init__(name, kind)

    def generate(self, item: EvalItem, mode: str = "standard") -> ModelOutput:
        return ModelOutput(text=REFUSAL_REFERENCE)


@configured
@component("model", "chance")
class ChanceBaseline(Model):
    kind = "baseline"
    answers_are_free = True
    Config = ChanceSettings
    answer_space = True  # draws from the question's answer space: sees its type and format hints

    def __init__(self, name: str = "chance", *, seed: int, kind: str | None):
        super().__init__(name, kind, options={"seed": seed})
        self.seed = int(seed)

    def generate(self, item: EvalItem, mode: str = "standard") -> ModelOutput:
        from memlens.construction.abilities import chance_answer

        rng = derive_rng(self.seed, "chance", item.question_id)
        return ModelOutput(text=chance_answer(item.question, rng))
