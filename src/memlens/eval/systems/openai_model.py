"""``OpenAICompatibleModel``: any OpenAI-compatible chat-completions endpoint as a :class:`Model`.

One YAML file in ``conf/model/`` makes a system (``_target_:
memlens.eval.systems.openai_model.OpenAICompatibleModel``); the keys are those of
:class:`~memlens.core.http.OpenAICompatibleConfig` (``base_url``,
``model``, ``api_key_env``, ``concurrency``, ``max_new_tokens``, ``temperature``, ``timeout_s``,
``max_retries``, ``image_transport``, ``max_image_side``, ``extra_body``, ``top_p``, ``seed``,
``backoff_base_s``, ``backoff_max_s``) plus the prompt options (``layout``, ``label_images``,
``system_prefix``), ``token_param``, ``image_cache_mb`` and ``image_disk_cache_mb``. Descriptive keys (``hf_id``,
``context_window``, ``thinking``, ``resources``, ``notes``) are kept for the logs only. The schema is
:class:`OpenAICompatibleSettings` (``OpenAICompatibleModel.Config``, below); any other key is an
error.

How :meth:`OpenAICompatibleModel.run` drives the client:

* **Lazy, bounded.** Items are pulled from the stage's iterator a window at a time
  (``reorder_window``); each request's messages are built only when a client worker is free to
  send it, so at most ``concurrency`` payloads exist at once and a 256K split is never held whole.
* **Prefix-friendly order.** Within a window, items are sorted by the session ids of the history
  they show (:func:`~memlens.eval.prompt.history_key`), so items sharing a history prefix are
  sent together and a server prefix cache (vLLM ``--enable-prefix-caching``) can reuse it. The
  order of results does not matter: the prediction store is keyed by question id.
* **Images encoded once.** One :class:`~memlens.core.images.ImageEncoder` (LRU cache of
  ``image_cache_mb``) lives as long as the model, so a history reused by many questions, or by
  the next length, is not re-encoded; below it the project's persistent, content-addressed
  :class:`~memlens.core.images.EncodedImageCache` (``<Paths.cache>/encoded_images``, at most
  ``image_disk_cache_mb``; 0 turns it off) keeps every encoding across processes, so the next
  system, mode or run that sends the same image at the same size reads it instead of encoding it.
* **Failures are records.** An item whose prompt cannot be built (a missing image) or whose
  request fails after the client's retries is reported with ``ok=False`` and the error; usage
  (prompt/completion tokens), latency and attempts are reported for every item.

Thinking output: when the server returns ``reasoning_content`` (vLLM reasoning parsers), the raw
prediction is ``<think>\\n{reasoning}\\n</think>\\n{content}`` (what the official Qwen3 vLLM
wrapper stores), so ``prediction`` (text after ``</think>``) is the answer; with no content at all
it is the bare reasoning, as officially.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from pydantic import model_validator

from memlens.core.errors import MemLensError
from memlens.core.http import BackoffSettings
from memlens.core.items import EvalItem
from memlens.core.registry import component
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
from memlens.eval.prompt import LAYOUTS, build_messages, history_key
from memlens.eval.systems.base import DescriptiveSettings, Model, ModelOutput, ResultCallback

log = logging.getLogger(__name__)

__all__ = [
    "ClientSettings",
    "OpenAICompatibleModel",
    "OpenAICompatibleSettings",
    "completion_to_output",
    "prefix_ordered",
    "run_items",
]

TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")
#: the persistent encoded-image cache's folder under ``Paths.cache``
ENCODED_IMAGES_DIR = "encoded_images"
#: :meth:`OpenAICompatibleModel.prefetch` reads the images of this many waves of ``concurrency`` items
PREFETCH_WAVES = 4


class ClientSettings(DescriptiveSettings, BackoffSettings):
    """Client, decoding and prompt keys shared by the OpenAI-compatible backends (see
    :class:`memlens.core.http.OpenAICompatibleConfig`)."""

    api_key_env: str | None = operational(None)  # NAME of the environment variable holding the key
    concurrency: PositiveInt = operational(8)
    max_new_tokens: PositiveInt = 2048
    temperature: NonNegFloat | None = 0.0  # null: no temperature is sent (reasoning APIs)
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
    layout: Literal[LAYOUTS] = "messages"  # type: ignore[valid-type]
    label_images: bool = False
    system_prefix: str | None = None
    reorder_window: PositiveInt = operational(16)
    image_cache_mb: NonNegInt = operational(384)
    # persistent encoded-image cache (<cache>/encoded_images); 0: none
    image_disk_cache_mb: NonNegInt = operational(4096)
    progress: bool = operational(False)

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return reject_api_key("model", data)


class OpenAICompatibleSettings(ClientSettings):
    """``model`` with ``_target_: memlens.eval.systems.openai_model.OpenAICompatibleModel``."""

    base_url: str = operational()
    model: str


def prefix_ordered(items: Iterable[EvalItem], mode: str, window: int) -> Iterator[EvalItem]:
    """``items`` reordered within consecutive windows of ``window`` items so that items whose
    shown histories share a prefix are adjacent (stable; ``window <= 1`` keeps the order)."""
    if window <= 1:
        yield from items
        return
    buf: list[EvalItem] = []
    for item in items:
        buf.append(item)
        if len(buf) >= window:
            buf.sort(key=lambda it: history_key(it, mode))
            yield from buf
            buf = []
    buf.sort(key=lambda it: history_key(it, mode))
    yield from buf


def completion_to_output(result) -> ModelOutput:
    """:class:`CompletionResult` -> :class:`ModelOutput` (deterministic ``meta`` only)."""
    if not result.ok:
        return ModelOutput(
            text=None,
            ok=False,
            error=result.error or "request failed",
            attempts=result.attempts,
            latency_s=result.latency_s,
        )
    text = result.text or ""
    if result.reasoning:
        text = f"<think>\n{result.reasoning}\n</think>\n{text}" if text else result.reasoning
    meta: dict[str, Any] = {}
    if result.finish_reason is not None:
        meta["finish_reason"] = result.finish_reason
    return ModelOutput(
        text=text,
        ok=True,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        latency_s=result.latency_s,
        attempts=result.attempts,
        meta=meta,
    )


@configured
@component("model", "openai_compatible")
class OpenAICompatibleModel(Model):
    """A system served behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        name: system name (prediction folder, reports).
        base_url, model, api_key_env, concurrency, max_new_tokens, temperature, timeout_s,
            max_retries, image_transport, max_image_side, extra_body, top_p, seed, backoff_base_s,
            backoff_max_s: client settings (:class:`OpenAICompatibleConfig`). ``temperature: null``
            sends no temperature (reasoning APIs that reject it).
        token_param: request field carrying ``max_new_tokens``: ``max_tokens`` (vLLM, most
            gateways) or ``max_completion_tokens`` (OpenAI reasoning models).
        layout, label_images, system_prefix: prompt options (:func:`build_messages`).
        reorder_window: items sorted together for prefix sharing (1 keeps the source order).
        image_cache_mb: size cap of the in-memory encoded-image cache.
        image_disk_cache_mb: size cap of the persistent encoded-image cache (0: none); it lives in
            the project cache given by :meth:`attach` (a model never attached has none).
        progress: show the client's own progress bar (the evaluate stage already shows one).
        kind: overrides the class's ``kind`` (``lvlm``).
        hf_id, context_window, thinking, resources, notes, params_total_b, params_active_b: descriptive
            keys (logs, sweep planner, the report's system cards).
    """

    kind = "lvlm"
    Config = OpenAICompatibleSettings
    pools_lengths = True  # one request stream for every length: no idle slots between lengths

    def __init__(
        self,
        name: str,
        base_url: str,
        model: str,
        api_key_env: str | None,
        concurrency: int,
        max_new_tokens: int,
        temperature: float | None,
        timeout_s: float,
        max_retries: int,
        image_transport: str,
        max_image_side: int | None,
        *,
        extra_body: dict | None,
        top_p: float | None,
        seed: int | None,
        deadline_s: float | None,
        max_response_mb: float | None,
        backoff_base_s: float,
        backoff_max_s: float,
        token_param: str,
        layout: str,
        label_images: bool,
        system_prefix: str | None,
        reorder_window: int,
        image_cache_mb: int,
        image_disk_cache_mb: int,
        progress: bool,
        kind: str | None,
        hf_id: str | None,
        context_window: int | None,
        thinking: bool,
        resources: dict | None,
        notes: str | None,
        params_total_b: float | None,
        params_active_b: float | None,
    ):
        from memlens.core.http import OpenAICompatibleConfig

        client_settings = OpenAICompatibleConfig.settings_of(locals())
        info = dict(
            hf_id=hf_id,
            context_window=context_window,
            thinking=thinking,
            resources=resources,
            notes=notes,
            params_total_b=params_total_b,
            params_active_b=params_active_b,
        )
        super().__init__(
            name,
            kind,
            options=dict(
                **client_settings,
                token_param=token_param,
                layout=layout,
                label_images=label_images,
                system_prefix=system_prefix,
                reorder_window=reorder_window,
                image_cache_mb=image_cache_mb,
                image_disk_cache_mb=image_disk_cache_mb,
                **info,
            ),
        )
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
        if token_param not in TOKEN_PARAMS:
            raise ValueError(f"token_param must be one of {TOKEN_PARAMS}, not {token_param!r}")
        # validates the settings now (bad YAML fails at instantiation, not mid-run); no network
        self.config = OpenAICompatibleConfig(**client_settings)
        self.token_param = token_param
        self.layout = layout
        self.label_images = bool(label_images)
        self.system_prefix = system_prefix
        self.reorder_window = int(reorder_window)
        self.image_cache_mb = int(image_cache_mb)
        self.image_disk_cache_mb = int(image_disk_cache_mb)
        self._disk_cache_dir = None
        self.progress = bool(progress)
        self.info = info
        self._client = None
        self._encoder = None
        self._prefetching = None

    # ------------------------------------------------------------------ plumbing
    @property
    def client(self):
        """The :class:`OpenAICompatibleClient` (built on first use; it makes no request until run)."""
        if self._client is None:
            from memlens.core.http import OpenAICompatibleClient
            from memlens.core.images import EncodedImageCache, ImageEncoder

            if self._encoder is None:
                disk = None
                if self._disk_cache_dir is not None and self.image_disk_cache_mb > 0:
                    disk = EncodedImageCache(self._disk_cache_dir, max_bytes=self.image_disk_cache_mb << 20)
                self._encoder = ImageEncoder(
                    max_side=self.config.max_image_side,
                    transport="url" if self.config.image_transport == "url" else "base64",
                    cache_max_bytes=self.image_cache_mb << 20,
                    disk_cache=disk,
                )
            self._client = OpenAICompatibleClient(self.config, image_encoder=self._encoder)
        return self._client

    def attach(self, paths: Any, benchmark: Any) -> None:
        """The persistent encoded-image cache goes into the project cache (``<Paths.cache>/encoded_images``)."""
        cache = getattr(paths, "cache", None)
        if cache is not None:
            from pathlib import Path

            self._disk_cache_dir = Path(cache) / ENCODED_IMAGES_DIR

    def check(self) -> None:
        """One tiny request to the endpoint (server up, key accepted) before any item is sent; then
        the client's request path is run once offline (:func:`memlens.core.http.warm_up`)."""
        from memlens.core.http import check_endpoint, warm_up

        check_endpoint(self.config)
        warm_up()

    def request_overrides(self) -> dict[str, Any]:
        """Per-request overrides passed to the client (the token-limit field)."""
        if self.token_param == "max_completion_tokens":
            return {"max_new_tokens": None, "max_completion_tokens": self.config.max_new_tokens}
        return {}

    def messages(self, item: EvalItem, mode: str) -> list[dict]:
        """The request messages of ``item`` (image blocks hold local paths; the client encodes them)."""
        return build_messages(
            item, mode, layout=self.layout, label_images=self.label_images, system_prefix=self.system_prefix
        )

    def prefetch(self, items: Iterable[EvalItem], mode: str) -> None:
        """Read the encoded images of the first :data:`PREFETCH_WAVES` x ``concurrency`` items, in
        order, in a background thread (at most half the in-memory cache), so the first requests do
        not wait for them: this overlaps the reading with the health check, the SDK's import and
        the first requests' wait for their answers. The images are resolved here
        (the benchmark's image index is not shared with threads); only the reading is in the
        thread. Best effort: an image that fails here fails its request later, with its message."""
        if self.config.image_transport != "base64" or self.image_cache_mb == 0:
            return
        import itertools

        from memlens.eval.prompt import sessions_for

        if mode in ("text_only", "no_context", "caption"):
            return
        refs: dict[str, None] = {}
        for item in itertools.islice(items, PREFETCH_WAVES * self.config.concurrency):
            try:
                for session in sessions_for(item, mode):
                    for turn in session.turns:
                        refs.update((str(item.resolve_image(i)), None) for i in turn.images)
            except Exception:  # reported by the item's own request
                continue
        encoder = self.client.image_encoder
        budget = (self.image_cache_mb << 20) // 2

        def load() -> None:
            loaded = 0
            for ref in refs:
                try:
                    loaded += len(encoder.encode_bytes(ref))
                except Exception:  # idem
                    continue
                if loaded >= budget:
                    return

        import threading

        self._prefetching = threading.Thread(target=load, name="memlens-prefetch", daemon=True)
        self._prefetching.start()

    # ------------------------------------------------------------------ Model API
    def generate(self, item: EvalItem, mode: str = "standard") -> ModelOutput:
        """One item, synchronously (tests, debugging); :meth:`run` is the batch path."""
        out: list[ModelOutput] = []
        self.run([item], mode, lambda _it, o: out.append(o))
        return out[0]

    def run(self, items: Iterable[EvalItem], mode: str, on_result: ResultCallback) -> None:
        """Every item through the client; ``on_result`` runs in one writer thread, in completion order,
        one call at a time (a results store fsyncs each answer: off the event loop, and no worker
        waits for it before its next request), and an exception from it stops the run (raised with
        the next answer, or when the last is written)."""
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        in_flight: dict[int, EvalItem] = {}
        writer = ThreadPoolExecutor(1, thread_name_prefix="results-writer")
        unawaited = []

        def requests() -> Iterator[tuple[int, list[dict]]]:
            for key, item in enumerate(prefix_ordered(items, mode, self.reorder_window)):
                try:
                    msgs = self.messages(item, mode)
                except (MemLensError, OSError, ValueError) as exc:
                    error = f"prompt: {type(exc).__name__}: {exc}"
                    unawaited.append(
                        writer.submit(on_result, item, ModelOutput(text=None, ok=False, attempts=0, error=error))
                    )
                    continue
                in_flight[key] = item
                yield key, msgs

        written: deque = deque()

        async def done(key: int, result) -> None:
            # the worker goes on to its next request at once; a failed write stops the run at the next
            # answer (or at the end, below)
            written.append(writer.submit(on_result, in_flight.pop(key), completion_to_output(result)))
            while written and written[0].done():
                written.popleft().result()

        client = self.client
        cpu0 = time.process_time()
        try:
            summary = client.run_many(
                requests(), done, progress=self.progress, desc=self.name, **self.request_overrides()
            )
        finally:
            writer.shutdown(wait=True)
            if self._prefetching is not None:
                self._prefetching.join()
                self._prefetching = None
        for f in (*unawaited, *written):
            f.result()  # an exception recording a result is raised here
        cpu = time.process_time() - cpu0
        cache = self._encoder.cache_info() if self._encoder is not None else None
        log.info(
            "%s: %d requests (%d failed, %d attempts) in %.2f s, %.3f CPU-s; build %.2f s, http %.1f s%s",
            self.name,
            summary.total,
            summary.failed,
            summary.attempts,
            summary.elapsed_s,
            cpu,
            client.stats.build_s,
            client.stats.http_s,
            f"; image cache {cache.hits} hits / {cache.misses} misses ({cache.disk_hits} from disk, "
            f"{cache.encoded} encoded), {cache.size_bytes >> 20} MB"
            if cache
            else "",
        )

    def close(self) -> None:
        self._client = None
        if self._encoder is not None:
            self._encoder.clear()

    def describe(self) -> dict:
        d = super().describe()
        d.pop("extra_body", None)
        if self.config.extra_body:
            d["extra_body"] = repr(self.config.extra_body)
        return d


def run_items(model: OpenAICompatibleModel, items: Iterable[EvalItem], mode: str) -> list[tuple[EvalItem, ModelOutput]]:
    """Convenience: run ``items`` and collect ``(item, output)`` pairs (tests, notebooks)."""
    out: list[tuple[EvalItem, ModelOutput]] = []
    model.run(items, mode, lambda it, o: out.append((it, o)))
    return out
