"""The ``llm`` generator: an LLM question writer over the abilities' drafts and the two-model simulator.

For every plan whose images passed the filter, the plan's question-type module builds its draft
from the images' exact ground truth (answer, derivation, evidence facts and the strings no text
may contain), as for the template generator. The ``question_writer`` role then writes, in one
JSON-schema request per question (paper steps 1, 3 and 4): the background paragraph with named
entities, the entity abstraction (category and image-dependent anaphor per abstracted entity) and
the (question, answer, evidence facts) triple. The answer is checked against the draft's (the
official answer format), each fact must keep its ``<image>`` tags and name no forbidden string or
image-only value, the question must keep its labels and format instruction; a failing answer is
repaired (:meth:`memlens.construction.text.llm.engine.LLMEngine.json`). With ``text_only_check`` the
``leakage_checker`` role then tries to answer the question from its text alone; a question it
answers confidently and correctly is dropped (its spare plan takes its place). Sessions come from
the :class:`~memlens.construction.text.llm.simulator.Simulator` (``user`` and ``assistant`` roles).

Requests of all plans go out concurrently in :meth:`LLMGenerator.prepare`; every answer is cached
(:class:`memlens.core.reqcache.RequestCache`), so a re-run sends no request. The manifest gets the
build's tokens and cost per role (``llm``); what a run actually sent is appended to
``<cache>/llm_runs.jsonl`` and logged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from pathlib import Path
from typing import Annotated

from pydantic import Field
from tqdm.auto import tqdm

from memlens.construction.abilities import ability_for
from memlens.construction.abilities.base import Draft, Plan
from memlens.construction.images.truth import drawn_values
from memlens.construction.ontology.stage import load_topics
from memlens.construction.text.corpora import filler_for
from memlens.construction.text.leakage import PhraseIndex
from memlens.construction.text.llm import prompts
from memlens.construction.text.llm.engine import Endpoint, LLMEngine, LLMRequestError
from memlens.construction.text.llm.schemas import QA, TEXT_ONLY_ANSWER
from memlens.construction.text.llm.simulator import SimulatedWriter, Simulator
from memlens.construction.text.sessions import WriterConfig
from memlens.construction.text.validators import RejectionLog
from memlens.core.config import Paths
from memlens.core.constants import REFUSAL_REFERENCE as AR_ANSWER
from memlens.core.errors import ConfigError
from memlens.core.io import canonical_bytes
from memlens.core.registry import component
from memlens.core.reqcache import RequestCache
from memlens.core.schema import IMAGE_PLACEHOLDER, ImageRecord, Session
from memlens.core.settings import NonNegInt, PositiveFloat, PositiveInt, Section
from memlens.core.store import derive_rng

__all__ = ["LLMGenerator", "LLMGeneratorSettings", "cache_file", "check_triple", "format_instruction"]

log = logging.getLogger(__name__)
ROLES = ("question_writer", "user", "assistant", "leakage_checker")
_LABEL = re.compile(r"\((?:\d{1,2}|[A-H])\)")
_NORM = re.compile(r"[^a-z0-9]+")


def cache_file(paths: Paths, name: str | None) -> Path | None:
    """A cache file path: relative names live under the cache folder (outside DVC)."""
    if not name:
        return None
    p = Path(str(name)).expanduser()
    return p if p.is_absolute() else paths.cache / p


def format_instruction(question: str) -> str:
    """The answer-format sentence that ends a draft question ("Answer as YYYY/MM/DD."), or ""."""
    q = question.strip()
    if "?" not in q or q.endswith("?"):
        return ""
    return q[q.rindex("?") + 1 :].strip()


def _norm(s: str) -> str:
    return _NORM.sub(" ", s.lower()).strip()


def check_triple(value: dict, d: Draft, image_values: list[str]) -> list[str]:
    """Semantic errors of a question writer's answer against the plan's draft (empty: accepted)."""
    errs: list[str] = []
    if value["answer"].strip() != d.answer:
        errs.append(f"answer must be exactly {d.answer!r}, not {value['answer']!r}")
    facts = value["evidence_facts"]
    if len(facts) != len(d.facts):
        errs.append(f"evidence_facts needs {len(d.facts)} sentences, got {len(facts)}")
    forb = PhraseIndex([f for f in d.forbidden if f])
    vals = PhraseIndex([v for v in image_values if v and len(v) > 1])
    for i, (new, old) in enumerate(zip(facts, d.facts)):
        n = old.mention.count(IMAGE_PLACEHOLDER)
        if new.count(IMAGE_PLACEHOLDER) != n:
            errs.append(f"evidence_facts[{i}] must hold {n} {IMAGE_PLACEHOLDER} tag(s)")
        if forb.find(new):
            errs.append(f"evidence_facts[{i}] names a forbidden string")
        if vals.find(new):
            errs.append(f"evidence_facts[{i}] states what only the image shows")
        if len(new.split()) > 60:
            errs.append(f"evidence_facts[{i}] is longer than 60 words")
    q = value["question"].strip()
    fmt = format_instruction(d.question)
    if fmt and not q.endswith(fmt):
        errs.append(f"question must end with {fmt!r}")
    if _LABEL.findall(q) != _LABEL.findall(d.question):
        errs.append(f"question must keep the labels {_LABEL.findall(d.question)} in order")
    if IMAGE_PLACEHOLDER in q:
        errs.append(f"question must not hold {IMAGE_PLACEHOLDER}")
    new_in_q = PhraseIndex([f for f in d.forbidden if f and not PhraseIndex([f]).find(d.question)])
    if new_in_q.find(q):
        errs.append("question names a forbidden string the draft question does not")
    if forb.find(value["background"]) or vals.find(value["background"]):
        errs.append("background names a forbidden string or what only the image shows")
    for i, e in enumerate(value["entities"]):
        if forb.find(e["anaphor"]):
            errs.append(f"entities[{i}].anaphor names a forbidden string")
    return errs


class LLMGeneratorSettings(Section):
    """``generator.llm``: the LLM question writer and the two-model session simulator (every key in
    ``conf/generator/llm.yaml``). ``prompt_version`` must equal
    :data:`memlens.construction.text.llm.prompts.PROMPT_VERSION` (checked when the generator is built)."""

    prompt_version: Annotated[str, Field(min_length=1)]
    question_writer: Endpoint
    user: Endpoint
    assistant: Endpoint
    leakage_checker: Endpoint
    concurrency: PositiveInt  # requests in flight per endpoint
    timeout_s: PositiveFloat
    max_retries: NonNegInt
    max_repairs: NonNegInt  # repair requests per invalid JSON answer
    leakage_check: bool  # the LLM semantic-leakage check of turns with hidden facts
    text_only_check: bool  # reject questions the checker answers from their text alone
    cache_path: str | None  # relative: under the cache folder; null: no cache
    progress: bool


@component("generator", "llm")
class LLMGenerator:
    """The ``llm`` generator (see the module docstring; the protocol is in ``backends``)."""

    def __init__(self, cfg, paths: Paths):
        g = cfg.generator
        lc = g.llm
        if lc is None:
            raise ConfigError("generator.name 'llm' needs the generator.llm section (use generator=llm)")
        if str(lc.prompt_version) != prompts.PROMPT_VERSION:
            raise ConfigError(
                f"generator.llm.prompt_version is {lc.prompt_version!r} but the prompts in "
                f"memlens.construction.text.llm.prompts are {prompts.PROMPT_VERSION!r}; update the config"
            )
        self.seed = int(cfg.data.seed)
        self.paths = paths
        self.topics = {t.topic_id: t for t in load_topics(paths)}
        cpath = cache_file(paths, lc.cache_path)
        self.cache = RequestCache(cpath) if cpath else None
        self.engine = LLMEngine(
            endpoints={r: getattr(lc, r) for r in ROLES},
            cache=self.cache,
            concurrency=int(lc.concurrency),
            timeout_s=float(lc.timeout_s),
            max_retries=int(lc.max_retries),
            max_repairs=int(lc.max_repairs),
            prompt_version=prompts.PROMPT_VERSION,
        )
        self.text_only_check = bool(lc.text_only_check)
        self.progress = bool(lc.progress)
        self.simulator = Simulator(
            self.engine, WriterConfig.from_cfg(g), leakage_check=bool(lc.leakage_check), progress=self.progress
        )
        self.filler = filler_for(g.filler, self.seed)
        self.drafts: dict[str, Draft] = {}
        self.details: dict[str, dict] = {}
        self.dropped: dict[str, str] = {}
        self.writers: list[SimulatedWriter] = []
        self.t0 = time.perf_counter()

    # ------------------------------------------------------------------ questions
    async def _question(self, p: Plan, truths: list[dict], values: list[str]) -> None:
        rng = derive_rng(self.seed, "build", p.plan_id)
        try:
            d = ability_for(p.question_type).build(rng, p, truths)
        except (ValueError, KeyError) as exc:
            self.dropped[p.plan_id] = f"build_failed: {exc}"
            return
        inputs = {
            "topic": self.topics[p.topic_id].title if p.topic_id in self.topics else p.topic_id,
            "subtopic": p.subtopic,
            "question_type": p.question_type,
            "question_subtype": p.question_subtype,
            "draft_question": d.question,
            "answer": d.answer,
            "format_instruction": format_instruction(d.question),
            "facts": [f.mention for f in d.facts],
            "forbidden": sorted({f for f in d.forbidden if f}),
        }
        tag = f"qa:{p.plan_id}"
        try:
            v = await self.engine.json(
                "question_writer", tag, prompts.qa_messages(inputs, QA), QA, check=lambda v: check_triple(v, d, values)
            )
            if self.text_only_check and d.answer != AR_ANSWER:
                t = await self.engine.json(
                    "leakage_checker",
                    f"text_only:{p.plan_id}",
                    prompts.text_only_answer(v["question"], TEXT_ONLY_ANSWER),
                    TEXT_ONLY_ANSWER,
                )
                if t["confident"] and _norm(t["answer"]) == _norm(d.answer):
                    self.dropped[p.plan_id] = "text_only_solvable"
                    return
        except LLMRequestError as exc:
            self.dropped[p.plan_id] = f"llm_failed: {exc}"
            return
        facts = [dataclasses.replace(f, mention=m.strip()) for f, m in zip(d.facts, v["evidence_facts"])]
        self.drafts[p.plan_id] = dataclasses.replace(d, question=v["question"].strip(), facts=facts)
        self.details[p.plan_id] = {
            "background": v["background"].strip(),
            "abstraction": {e["name"]: e["category"] for e in sorted(v["entities"], key=lambda e: e["name"])},
            "anaphora": {e["name"]: e["anaphor"] for e in sorted(v["entities"], key=lambda e: e["name"])},
            "draft_question": d.question,
        }

    def prepare(
        self,
        plans: list[Plan],
        images: dict[tuple[str, int], ImageRecord],
        accepted: set[str],
        boilerplate: frozenset[str],
    ) -> None:
        todo = []
        for p in plans:
            recs = [images.get((p.plan_id, k)) for k in range(len(p.images))]
            if any(r is None or r.sha256 not in accepted for r in recs):
                continue
            values = [v for r in recs for v in drawn_values(r.truth, boilerplate)]
            todo.append((p, [r.truth for r in recs], values))

        async def main() -> None:
            bar = tqdm(total=len(todo), desc="write questions", unit="q", disable=not self.progress)

            async def one(item) -> None:
                await self._question(*item)
                bar.update(1)

            try:
                await asyncio.gather(*(one(t) for t in todo))
            finally:
                bar.close()
                await self.engine.aclose()

        asyncio.run(main())
        if self.dropped:
            log.info("llm generator: %d of %d plans dropped (spares replace them)", len(self.dropped), len(todo))

    def build(self, rng, plan: Plan, truths: list[dict]) -> Draft:
        if plan.plan_id in self.drafts:
            return self.drafts[plan.plan_id]
        raise ValueError(self.dropped.get(plan.plan_id, "plan not prepared"))

    def question_details(self, plan_id: str) -> dict:
        return dict(self.details.get(plan_id, {}))

    # ------------------------------------------------------------------ sessions
    def writer(self, wcfg: WriterConfig, rejections: RejectionLog, forbidden: list[str]) -> SimulatedWriter:
        w = self.simulator.writer(rejections, forbidden, filler=self.filler)
        self.writers.append(w)
        return w

    def finish(self, sessions: dict[str, Session]) -> dict[str, Session]:
        logs = {sid: lg for w in self.writers for sid, lg in w.pending_logs.items()}
        try:
            return self.simulator.finish(sessions, logs)
        finally:  # a failed run is recorded too (its failures name each request)
            self._record_run()

    def _summary(self) -> dict:
        s = self.engine.summary()
        dropped: dict[str, int] = {}
        for reason in self.dropped.values():
            k = reason.split(":", 1)[0]
            dropped[k] = dropped.get(k, 0) + 1
        s["questions"] = {"written": len(self.drafts), "dropped": dict(sorted(dropped.items()))}
        s["simulator"] = dict(sorted(self.simulator.stats.items()))
        return s

    def _record_run(self) -> None:
        s = self._summary()
        run = {"time": round(time.time(), 3), "elapsed_s": round(time.perf_counter() - self.t0, 3), **s["run"]["total"]}
        log.info(
            "llm generator: %d requests sent, %d answers from the cache, %d prompt + %d completion tokens now, "
            "build total %d tokens, $%.4f",
            run.get("requests", 0),
            run.get("cache_hits", 0),
            run.get("prompt_tokens", 0),
            run.get("completion_tokens", 0),
            s["build"]["total"]["prompt_tokens"] + s["build"]["total"]["completion_tokens"],
            s["build"]["total"]["cost_usd"],
        )
        self.paths.cache.mkdir(parents=True, exist_ok=True)
        with open(self.paths.cache / "llm_runs.jsonl", "ab") as fh:
            fh.write(canonical_bytes({"stage": "generate", "run": s["run"], "failures": s["failures"]}) + b"\n")
        self.last_run = s["run"]

    def manifest(self) -> dict:
        """The build's LLM accounting (the same whatever the cache held), for the manifest."""
        s = self._summary()
        out = {
            "llm": {
                "prompt_version": s["prompt_version"],
                "models": s["models"],
                "usage": s["build"],
                "questions": s["questions"],
                "simulator": s["simulator"],
                "failures": s["failures"],
            }
        }
        if self.filler is not None:
            out["filler_corpus"] = self.filler.corpus.stats
        return out

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
