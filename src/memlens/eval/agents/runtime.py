"""The memory-agent system type: a :class:`~memlens.eval.systems.base.Model` that, per question,
builds a fresh memory, ingests every session in date order and then answers.

An agent is a :class:`MemoryAgent` subclass (its configuration keys, its prompts in ``PROMPTS``)
whose :meth:`MemoryAgent.new_memory` returns a :class:`Memory`: ``ingest(session)`` for each
session of the role-stripped view (:mod:`memlens.eval.agents.view`), then
``answer(question, question_date)``. The runtime does the rest, the same for every agent:

* **Isolation.** One memory object per question, created after the previous question's memory
  is no longer reachable from it; nothing is shared between memories except the call cache
  (keyed by the full request) and the adapter cache (keyed by image hash and adapter id; the
  project's one adapter cache, shared with ``memlens diagnose``).
* **Concurrency across questions.** Questions run as coroutines on one event loop (``2 x
  concurrency`` at once, so that the CPU work of some overlaps the calls of others), their
  backbone calls through one client (:class:`~memlens.eval.agents.llm.Backbone`) whose semaphore
  caps requests in flight at ``concurrency``. Input-adapter work (OCR, captions) and the agents'
  CPU work (indexing, search, chunking) run in worker threads, so the loop keeps sending and
  receiving other questions' calls meanwhile (shared encoders and adapters one call at a time).
* **Results.** Each finished question goes to the evaluate stage's callback at once (results
  store, resume, failure records are the stage's). ``ModelOutput.meta`` carries ``retrieved``
  (benchmark session ids with score, rank and turn ids, in retrieval order; translated back from
  the neutral ids the agent saw), ``memory`` (items stored, bytes), ``usage`` (model calls,
  prompt/completion tokens), ``adapter`` and, under ``timing``, ingest/answer seconds and call-cache
  hits (kept in the results store, left out of the deterministic prediction view).
* **Identity.** :meth:`MemoryAgent.identity_extra` adds a hash of the agent's prompts and of the
  runtime version plus the adapter id to the system identity, so answers are never reused across
  agents, prompt versions or adapters.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import model_validator
from tqdm import tqdm

from memlens.core.errors import ConfigError, MemLensError
from memlens.core.http import BackoffSettings
from memlens.core.io import canonical_bytes
from memlens.core.items import EvalItem
from memlens.core.registry import named
from memlens.core.settings import (
    Fraction,
    NonNegFloat,
    NonNegInt,
    PositiveFloat,
    PositiveInt,
    configured,
    operational,
    reject_api_key,
)
from memlens.eval.agents.llm import Backbone, CallCache, CallCounter
from memlens.eval.agents.view import AgentImage, AgentSession, AgentView, ImageStore, build_view
from memlens.eval.systems.base import DescriptiveSettings, Model, ModelOutput, ResultCallback

log = logging.getLogger(__name__)

__all__ = ["AGENT_RUNTIME_VERSION", "AgentAnswer", "Memory", "MemoryAgent", "QuestionContext", "Retrieved"]

#: bump when the runtime changes what an agent is given (the view, the adapter texts)
AGENT_RUNTIME_VERSION = "agents-1"


@dataclass(frozen=True)
class Retrieved:
    """One retrieved unit (neutral session id as the agent saw it)."""

    session_id: str
    score: float
    rank: int
    turn_ids: tuple[int, ...] = ()


@dataclass
class AgentAnswer:
    text: str
    retrieved: list[Retrieved] = field(default_factory=list)
    #: agent-specific deterministic facts (rounds used, chunks read ...)
    notes: dict = field(default_factory=dict)
    #: agent-specific run statistics that differ between runs (cache hits ...): ``meta.timing``
    timing: dict = field(default_factory=dict)


def family_lookup(benchmark: Any):
    """``image id -> image family`` of a built benchmark (a hint for adapters), or None."""
    from memlens.eval.memory.adapters import image_lookup

    return image_lookup(benchmark, "family")


def make_adapter(name: str, options: dict, cache_root: Path, benchmark: Any):
    """An input adapter on the project's one adapter cache (:func:`memlens.eval.memory.adapters.open_adapter`,
    shared with ``memlens diagnose``; ``cache_root`` is ``Paths.cache``), OCR without a progress bar
    (questions describe a few images at a time)."""
    from memlens.eval.memory.adapters import open_adapter

    opts = dict(options)
    if name == "ocr":
        opts.setdefault("progress", False)
    return open_adapter(name, opts, cache_root=cache_root, benchmark=benchmark)


class QuestionContext:
    """What one question's memory may use: the backbone, its call counter, the input adapter, the
    token counter. Created per question by the runtime."""

    def __init__(self, agent: MemoryAgent, counter: CallCounter):
        self.agent = agent
        self.counter = counter

    async def chat(
        self, messages: list[dict], *, model: str | None = None, max_new_tokens: int | None = None, what: str = "call"
    ) -> str:
        return await self.agent.backbone.chat(
            messages, self.counter, model=model, max_new_tokens=max_new_tokens, what=what
        )

    async def image_texts(self, images: Sequence[AgentImage]) -> dict[str, str]:
        """``sha256 -> text`` of the adapter for ``images`` (cached by the adapter)."""
        return await self.agent.describe(images)

    def tokens(self, text: str) -> int:
        return self.agent.count_tokens(text)


class Memory(ABC):
    """One question's memory."""

    def __init__(self, ctx: QuestionContext):
        self.ctx = ctx
        #: what is stored, for the default :meth:`stats`: units (sessions, memories) and UTF-8 bytes
        self.items = 0
        self.bytes = 0

    @abstractmethod
    async def ingest(self, session: AgentSession) -> None:
        """Store one session (called once per session, in date order)."""

    async def finish_ingest(self) -> None:  # noqa: B027 - optional: agents that batch sessions
        """Called after the last session (flush a partial batch)."""

    @abstractmethod
    async def answer(self, question: str, question_date: str) -> AgentAnswer:
        """Answer from memory (the question and its date are given only now)."""

    def ranking(self, question: str, question_date: str, k: int) -> list[Retrieved] | None:
        """The memory's own retrieval for ``question``, best first, at most ``k`` (CPU work, no model
        call; what :meth:`answer` retrieves when ``k`` is the agent's ``top_k``), or ``None`` when
        retrieving needs a model (offline retrieval diagnostics skip those agents)."""
        return None

    def stats(self) -> dict:
        """``{"items": n, "bytes": b}`` of what is stored (by default the ``items``/``bytes`` counters)."""
        return {"items": self.items, "bytes": self.bytes}


class AgentSettings(DescriptiveSettings, BackoffSettings):
    """Keys of every memory agent (:class:`memlens.eval.agents.runtime.MemoryAgent`): the backbone
    endpoint (flat, like :class:`OpenAICompatibleSettings`, so endpoint and concurrency stay out of
    the system identity), the input adapter and the token counter of the budgets."""

    base_url: str = operational("http://127.0.0.1:8000/v1")
    model: str = "qwen3-8b"
    api_key_env: str | None = operational(None)
    concurrency: PositiveInt = operational(8)  # questions (and requests) in flight
    max_new_tokens: PositiveInt = 2048
    temperature: NonNegFloat | None = 0.0
    timeout_s: PositiveFloat = operational(600)
    deadline_s: PositiveFloat | None = operational(1800)  # total per attempt (null: none)
    max_response_mb: PositiveFloat | None = operational(8)  # largest answer read (null: no cap); not retried
    max_retries: NonNegInt = operational(5)
    image_transport: Literal["base64", "url"] = "base64"
    max_image_side: PositiveInt | None = 800
    extra_body: dict[str, Any] | None = None
    top_p: Fraction | None = None
    seed: int | None = None
    token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    adapter: Annotated[str, named("adapter")] = "markers"  # an input adapter (memlens list adapters)
    adapter_options: dict[str, Any] | None = None
    tokenizer: str = "minilm"  # token counter of the budgets: minilm or a tokenizer.json path
    cache_calls: bool = True  # backbone answers cached by request (a resumed run repeats no call)
    backbone_config: str | None = operational(None)  # the backbone's model config (backbone-matched comparison)

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return reject_api_key("model", data)


@configured
class MemoryAgent(Model):
    """Base class of the memory agents (see the module docstring). Subclasses set ``PROMPTS`` (every
    prompt text they send), ``Config`` and implement :meth:`new_memory`."""

    kind = "agent"
    Config: ClassVar[type] = AgentSettings
    default_subset: ClassVar[str | None] = "agent_subset_195"
    PROMPTS: ClassVar[dict[str, str]] = {}
    #: adapters this agent accepts (None: any)
    ADAPTERS: ClassVar[tuple[str, ...] | None] = None
    #: how the agent finds what it answers from (shown by ``memlens evaluate --dry-run``)
    RETRIEVER: ClassVar[str] = "none"

    def __init__(
        self,
        name: str,
        kind: str | None,
        base_url: str,
        model: str,
        api_key_env: str | None,
        concurrency: int,
        max_new_tokens: int,
        temperature: float | None,
        timeout_s: float,
        max_retries: int,
        backoff_base_s: float,
        backoff_max_s: float,
        image_transport: str,
        max_image_side: int | None,
        extra_body: dict | None,
        top_p: float | None,
        seed: int | None,
        deadline_s: float | None,
        max_response_mb: float | None,
        token_param: str,
        adapter: str,
        adapter_options: dict | None,
        tokenizer: str,
        cache_calls: bool,
        hf_id: str | None,
        context_window: int | None,
        thinking: bool,
        resources: dict | None,
        notes: str | None,
        params_total_b: float | None,
        params_active_b: float | None,
        backbone_config: str | None,
    ):
        from memlens.core.http import OpenAICompatibleConfig

        client = OpenAICompatibleConfig.settings_of(locals())
        super().__init__(
            name,
            kind,
            options=dict(
                **client,
                token_param=token_param,
                adapter=adapter,
                adapter_options=dict(adapter_options or {}),
                tokenizer=tokenizer,
                cache_calls=cache_calls,
                hf_id=hf_id,
                params_total_b=params_total_b,
                params_active_b=params_active_b,
                backbone_config=backbone_config,
            ),
        )
        if self.ADAPTERS is not None and adapter not in self.ADAPTERS:
            raise ConfigError(
                f"model.adapter: {type(self).__name__} takes {' | '.join(self.ADAPTERS)}, not {adapter!r}"
            )
        if token_param not in ("max_tokens", "max_completion_tokens"):
            raise ConfigError(f"model.token_param must be max_tokens or max_completion_tokens, not {token_param!r}")
        OpenAICompatibleConfig(**client)  # validates now, no network
        self.client_settings = client
        self.concurrency = int(concurrency)
        self.token_param = token_param
        self.adapter_name = adapter
        self.adapter_options = dict(adapter_options or {})
        self.tokenizer_name = tokenizer
        self.cache_calls = bool(cache_calls)
        self.cache_dir: Path | None = None
        self.project_cache: Path | None = None
        self.benchmark: Any = None
        self._backbone: Backbone | None = None
        self._adapter = None
        self._tokenizer = None
        self._token_memo: dict[str, int] = {}
        self._text_encoder = None
        self._images: ImageStore | None = None
        self._adapter_lock = threading.Lock()
        #: held while a shared encoder (dense text, image) runs in a worker thread
        self.encoder_lock = threading.Lock()

    # ------------------------------------------------------------------ set-up
    def check(self) -> None:
        """The same endpoint preflight as a model's (:func:`memlens.core.http.check_endpoint`): a backbone
        server that is down or rejects the key ends the run before any question, with exit status 2."""
        from memlens.core.http import OpenAICompatibleConfig, check_endpoint

        check_endpoint(OpenAICompatibleConfig(**self.client_settings))

    def attach(self, paths: Any, benchmark: Any) -> None:
        self.project_cache = Path(paths.cache)
        self.cache_dir = self.project_cache / "agents"
        self.benchmark = benchmark

    def _cache_root(self) -> Path:
        if self.cache_dir is None:
            raise MemLensError(f"{self.name}: the agent was not attached to a project (Model.attach)")
        return self.cache_dir

    @property
    def backbone(self) -> Backbone:
        if self._backbone is None:
            cache = CallCache(self._cache_root() / "calls.sqlite") if self.cache_calls else None
            self._backbone = Backbone(self.client_settings, token_param=self.token_param, cache=cache)
        return self._backbone

    @property
    def images(self) -> ImageStore:
        if self._images is None:
            self._images = ImageStore(self._cache_root() / "images", family_lookup(self.benchmark))
        return self._images

    @property
    def adapter(self):
        if self._adapter is None:
            self._cache_root()  # attached
            self._adapter = make_adapter(self.adapter_name, self.adapter_options, self.project_cache, self.benchmark)
            if hasattr(self._adapter, "progress_hook"):
                self._adapter.progress_hook = self._described
        return self._adapter

    def text_encoder(self):
        """One dense text encoder for the run (its embeddings are memoised by text, and kept in the
        project's embedding cache, shared with ``memlens diagnose``)."""
        if self._text_encoder is None:
            from memlens.eval.memory.retrieval import TextEncoder

            cache = self.project_cache / "memory" / "embeddings" if self.project_cache is not None else None
            self._text_encoder = TextEncoder(self.retriever_model_path(), cache_dir=cache)
        return self._text_encoder

    def retriever_model_path(self) -> str | None:
        return (getattr(self, "retriever_options", None) or {}).get("model_path")

    def adapter_id(self) -> str:
        return str(self.adapter.id)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with the agent's tokenizer, memoised (haystack sessions recur across
        questions and lengths; the memo is cleared past 200,000 texts)."""
        n = self._token_memo.get(text)
        if n is not None:
            return n
        if self._tokenizer is None:
            from memlens.construction.assemble.tokens import load_tokenizer

            self._tokenizer = load_tokenizer(self.tokenizer_name)
        n = len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        if len(self._token_memo) >= 200_000:
            self._token_memo.clear()
        self._token_memo[text] = n
        return n

    async def describe(self, images: Sequence[AgentImage]) -> dict[str, str]:
        todo = list({im.sha256: im for im in images}.values())
        if not todo:
            return {}

        def call() -> list[str]:
            with self._adapter_lock:
                return list(self.adapter.describe_images(todo))

        texts = await asyncio.to_thread(call)
        if len(texts) != len(todo):
            raise MemLensError(f"adapter {self.adapter_name}: {len(texts)} texts for {len(todo)} images")
        return {im.sha256: t for im, t in zip(todo, texts)}

    def retrieval(self) -> str:
        """The retriever in words (``bm25 top 10``, ``dense top 3`` ...)."""
        k = getattr(self, "top_k", None) or getattr(self, "search_top_k", None)
        return f"{self.RETRIEVER}, top {k}" if k and self.RETRIEVER != "none" else self.RETRIEVER

    def identity_extra(self) -> dict:
        prompts = hashlib.sha256(canonical_bytes({"runtime": AGENT_RUNTIME_VERSION, **self.PROMPTS})).hexdigest()
        return {"agent_protocol": prompts, "adapter_id": self.adapter_id()}

    # ------------------------------------------------------------------ the agent's own part
    @abstractmethod
    def new_memory(self, ctx: QuestionContext) -> Memory:
        """A fresh, empty memory for one question."""

    # ------------------------------------------------------------------ Model API
    def generate(self, item: EvalItem, mode: str = "standard") -> ModelOutput:
        out: list[ModelOutput] = []
        self.run([item], mode, lambda _it, o: out.append(o))
        return out[0]

    def run(self, items: Iterable[EvalItem], mode: str, on_result: ResultCallback) -> None:
        if mode != "standard":
            raise ConfigError(f"{self.name}: memory agents answer in eval.mode=standard only, not {mode!r}")
        asyncio.run(self._run(iter(items), on_result))

    async def _run(self, items, on_result: ResultCallback) -> None:
        async def worker() -> None:
            for item in items:  # one shared iterator: items are pulled lazily, one at a time
                out = await self.answer_item(item)
                on_result(item, out)

        # twice as many questions as requests in flight: while some questions ingest and retrieve
        # (CPU, on this loop), others' requests keep the client's `concurrency` slots full
        self._progress = tqdm(desc=f"{self.name}: sessions ingested", unit="session", leave=False, mininterval=0.5)
        self._image_progress = None
        try:
            await asyncio.gather(*(worker() for _ in range(2 * max(1, self.concurrency))))
        finally:
            for bar in (self._progress, self._image_progress):
                if bar is not None:
                    bar.close()
            self._progress = self._image_progress = None
            if self._backbone is not None:
                await self._backbone.aclose()

    def _described(self, n: int) -> None:
        """Progress of the input adapter (OCR, captions): images described so far in this run."""
        if getattr(self, "_progress", None) is None:
            return
        if self._image_progress is None:
            self._image_progress = tqdm(
                desc=f"{self.name}: images described ({self.adapter_name})", unit="img", leave=False, mininterval=0.5
            )
        self._image_progress.update(n)

    async def answer_item(self, item: EvalItem) -> ModelOutput:
        """Fresh memory, ingest in date order, answer; any failure is a failed item with the reason."""
        counter = CallCounter()
        t0 = time.perf_counter()
        t_ingest = t_answer = 0.0
        try:
            view = build_view(item, self.images)
            memory = self.new_memory(QuestionContext(self, counter))
            for session in view.sessions:
                await memory.ingest(session)
                if getattr(self, "_progress", None) is not None:
                    self._progress.update(1)
            await memory.finish_ingest()
            t_ingest = time.perf_counter() - t0
            ans = await memory.answer(view.question, view.question_date)
            t_answer = time.perf_counter() - t0 - t_ingest
            stats = memory.stats()
        except (MemLensError, OSError, ValueError, KeyError, RuntimeError) as exc:
            return ModelOutput(
                text=None,
                ok=False,
                error=f"{type(exc).__name__}: {exc}",
                latency_s=time.perf_counter() - t0,
                meta={"usage": self._usage(counter), "timing": {"cache_hits": counter.cache_hits}},
            )
        return ModelOutput(
            text=ans.text,
            ok=True,
            prompt_tokens=counter.prompt_tokens,
            completion_tokens=counter.completion_tokens,
            latency_s=time.perf_counter() - t0,
            attempts=1,
            meta={
                "retrieved": [self._retrieved(view, r) for r in ans.retrieved],
                "memory": {k: stats[k] for k in sorted(stats)},
                "usage": self._usage(counter),
                "adapter": self.adapter_id(),
                "sessions_ingested": len(view.sessions),
                **({"agent": ans.notes} if ans.notes else {}),
                "timing": {
                    **ans.timing,
                    "ingest_s": round(t_ingest, 4),
                    "answer_s": round(t_answer, 4),
                    "cache_hits": counter.cache_hits,
                },
            },
        )

    @staticmethod
    def _usage(c: CallCounter) -> dict:
        return {"model_calls": c.calls, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens}

    @staticmethod
    def _retrieved(view: AgentView, r: Retrieved) -> dict:
        d: dict[str, Any] = {"session_id": view.real(r.session_id), "score": round(float(r.score), 6), "rank": r.rank}
        if r.turn_ids:
            d["turn_ids"] = list(r.turn_ids)
        return d

    def close(self) -> None:
        self._backbone = None
