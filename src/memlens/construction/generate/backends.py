"""The generator protocol of the generate stage: template (default) or LLM.

The stage drives a generator through five calls; the question-type modules
(:mod:`memlens.construction.abilities`) keep deciding what each question needs (its images, answer,
derivation and evidence facts) for both generators:

* ``prepare(plans, images, accepted, boilerplate)``: before the questions are built (the LLM
  generator sends every plan's requests here, concurrently);
* ``build(rng, plan, truths) -> Draft``: a plan's question draft (``ValueError`` drops the plan);
* ``question_details(plan_id) -> dict``: details that replace the template background/abstraction;
* ``writer(wcfg, rejections, forbidden) -> SessionWriter``: the session writer;
* ``finish(sessions) -> sessions`` and ``manifest() -> dict``: after all sessions are written.

:class:`TemplateGenerator` is the offline generator exactly as before (byte-identical outputs);
``generator.filler`` swaps its filler sessions for a real corpus.
"""

from __future__ import annotations

from typing import Protocol

from memlens.construction.abilities import ability_for
from memlens.construction.abilities.base import Draft, Plan
from memlens.construction.text.corpora import CorpusFiller, filler_for
from memlens.construction.text.sessions import SessionWriter, WriterConfig
from memlens.construction.text.validators import RejectionLog
from memlens.core.config import Paths
from memlens.core.registry import component, find_component
from memlens.core.schema import ImageRecord, Session

__all__ = ["Generator", "TemplateGenerator", "generator_for"]


class Generator(Protocol):
    def prepare(
        self,
        plans: list[Plan],
        images: dict[tuple[str, int], ImageRecord],
        accepted: set[str],
        boilerplate: frozenset[str],
    ) -> None: ...

    def build(self, rng, plan: Plan, truths: list[dict]) -> Draft: ...

    def question_details(self, plan_id: str) -> dict: ...

    def writer(self, wcfg: WriterConfig, rejections: RejectionLog, forbidden: list[str]) -> SessionWriter: ...

    def finish(self, sessions: dict[str, Session]) -> dict[str, Session]: ...

    def manifest(self) -> dict: ...


class _CorpusFillerWriter(SessionWriter):
    def __init__(self, wcfg, log, forbidden, filler: CorpusFiller):
        super().__init__(wcfg, log, forbidden)
        self.filler = filler

    def write_filler(self, rng, n_turns: int) -> Session:
        return self.filler.session(rng, n_turns, self._index, self.log)


@component("generator", "template")
class TemplateGenerator:
    """The offline generator: the abilities' drafts and the template session writer."""

    def __init__(self, cfg=None, paths: Paths | None = None):
        self.filler = filler_for(cfg.generator.filler, cfg.data.seed) if cfg is not None else None

    def prepare(self, plans, images, accepted, boilerplate) -> None:
        return None

    def build(self, rng, plan: Plan, truths: list[dict]) -> Draft:
        return ability_for(plan.question_type).build(rng, plan, truths)

    def question_details(self, plan_id: str) -> dict:
        return {}

    def writer(self, wcfg: WriterConfig, rejections: RejectionLog, forbidden: list[str]) -> SessionWriter:
        if self.filler is not None:
            return _CorpusFillerWriter(wcfg, rejections, forbidden, self.filler)
        return SessionWriter(wcfg, rejections, forbidden=forbidden)

    def finish(self, sessions: dict[str, Session]) -> dict[str, Session]:
        return sessions

    def manifest(self) -> dict:
        return {"filler_corpus": self.filler.corpus.stats} if self.filler is not None else {}


def generator_for(cfg, paths: Paths) -> Generator:
    """The generator named by ``generator.name`` (a component of kind ``generator``, built from the
    settings and the project paths)."""
    return find_component("generator", cfg.generator.name)(cfg, paths)
