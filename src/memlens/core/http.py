"""Asynchronous client for OpenAI-compatible chat-completions servers (vLLM, SGLang, APIs).

Used by the evaluation engine (one request per benchmark question) and by the LLM judge.

Who does what:

* **HTTP faults are the openai SDK's business.**  Every request is one public
  ``AsyncOpenAI.chat.completions.with_raw_response.create(...)`` call on a client built with
  ``max_retries`` and ``timeout``: the SDK retries connection errors, timeouts, 408, 409,
  429 and 5xx with its own exponential backoff (0.5 s doubling up to 8 s, 0-25 % jitter)
  and honours ``Retry-After``/``retry-after-ms`` up to two minutes (a server asking for
  more is not retried: the request fails at once).  Other 4xx fail at once.
* **This module adds what the SDK does not do.**  A 200 answer that is not a usable
  completion (unparsable JSON, no ``choices``, an empty ``choices`` list, or no content
  when the call asked for ``require_content=True``) is retried here with full-jitter
  backoff (``uniform(0, min(backoff_max_s, backoff_base_s * 2**n))``).  ``max_retries`` is
  one budget for both layers: a request never makes more than ``max_retries + 1`` HTTP
  attempts.  A completion cut by the token limit is kept and recorded
  (``finish_reason="length"``, counted in :attr:`BatchSummary.truncated`).
  :meth:`~OpenAICompatibleClient.complete` never raises for request problems: a request
  that still fails after all attempts becomes a :class:`CompletionResult` with
  ``ok=False`` and ``error`` set, never an answer.
* **One event loop, one connection pool, bounded memory.**  An ``asyncio.Semaphore`` caps
  the requests in flight at ``concurrency`` (for :meth:`~OpenAICompatibleClient.complete_many`
  and direct :meth:`~OpenAICompatibleClient.complete` calls alike), and the HTTP pool holds
  as many connections.  :meth:`~OpenAICompatibleClient.complete_many` is a pool of
  ``concurrency`` workers pulling ``(key, messages)`` pairs from the caller's iterator, so
  at most ``concurrency`` payloads exist at once; each result goes to ``on_result`` as
  soon as it is known (so it can reach a crash-safe store at once).
* **Images encoded once, bodies built without copies.**  Local image files are converted
  by a shared :class:`~memlens.core.images.ImageEncoder` (LRU cache).  The messages are
  serialised once (``orjson`` when installed) with a placeholder per inline image and the
  encoder's cached data-URL bytes are spliced in as chunks of a :class:`RequestBody`.  A
  128K-token request with 90 inline images (~100 MB) is built in about a millisecond,
  where ``create(messages=...)`` would spend ~0.5 s of event-loop time (type transform
  plus stdlib ``json``) and copy the 100 MB.  So ``create()`` is called with an empty
  ``messages`` list and the HTTP client swaps the SDK's placeholder JSON for the call's
  prebuilt body (:class:`_PrebuiltBodyClient`, an ``httpx`` client whose public ``send``
  is overridden; the body is found through a :class:`contextvars.ContextVar`).  URL, auth,
  SDK headers, timeouts and the retry loop stay the SDK's; every retry resends the same
  chunks.  The same hook counts the HTTP attempts of each call.
* **No secret leaks.**  The config stores only the *name* of the environment variable
  holding the key (``OPENAI_API_KEY`` is never read); the key lives in a private
  attribute, is excluded from every ``repr`` and is masked in error strings.  The
  per-request log lines of the SDK and of ``httpx`` (URL, status, "Retrying request in
  ...") are demoted from INFO to DEBUG.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import logging
import os
import random
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Hashable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

from tqdm.auto import tqdm

from memlens.core.errors import MemLensError
from memlens.core.images import ImageEncoder, ImageError
from memlens.core.netstream import use_fast_writes
from memlens.core.settings import NonNegFloat, Section, operational

if TYPE_CHECKING:  # imported where a client is made (importing the SDK costs ~1 s)
    import openai

try:  # the openai SDK >= 3 ships on httpx2; older releases on httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _httpx  # type: ignore[no-redef]

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - optional speed-up
    _orjson = None

__all__ = [
    "BACKOFF_BASE_S",
    "BACKOFF_MAX_S",
    "BackoffSettings",
    "BatchSummary",
    "ClientStats",
    "CompletionResult",
    "EmptyChoicesError",
    "EmptyContentError",
    "MalformedResponseError",
    "OpenAICompatibleClient",
    "OpenAICompatibleConfig",
    "RequestBody",
    "ResponseTooLargeError",
    "run_many",
]

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

_ERROR_MAX_CHARS = 500
#: one attempt's total time: a thinking model's 16,384 new tokens at ~10 tokens/s, with room
DEFAULT_DEADLINE_S = 1800.0
#: the largest answer read: a 16,384-token completion plus its reasoning is well under 1 MB
DEFAULT_MAX_RESPONSE_MB = 8.0


# ---------------------------------------------------------------------------- config and results
#: the retry backoff of every OpenAI-compatible client (models, agents, the LLM judge, channels)
BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 30.0


class BackoffSettings(Section):
    """The retry backoff keys of a section that configures an OpenAI-compatible client (one home of
    their defaults)."""

    backoff_base_s: NonNegFloat = operational(
        BACKOFF_BASE_S
    )  # first backoff ceiling (doubles per attempt, full jitter)
    backoff_max_s: NonNegFloat = operational(BACKOFF_MAX_S)  # cap of every backoff and of honoured Retry-After


@dataclass
class OpenAICompatibleConfig:
    """Connection and decoding settings of an OpenAI-compatible backend.

    The key names are part of the public configuration (``conf/model/*.yaml``).

    Attributes:
        base_url: server URL ending in ``/v1``, e.g. ``http://localhost:8000/v1``.
        model: model name sent in each request (vLLM's ``--served-model-name``).
        api_key_env: *name* of the environment variable holding the API key; when ``None``
            or unset the literal ``"EMPTY"`` is sent (what vLLM expects).
        concurrency: maximum requests in flight (and HTTP connections).
        max_new_tokens: ``max_tokens`` of each request.
        temperature: sampling temperature (0 = greedy).
        timeout_s: per-attempt HTTP timeout of each network operation (connect, each read, write, pool).
        deadline_s: total time one attempt may take, from sending to the last byte of the answer
            (a server trickling bytes is cut here, whatever ``timeout_s`` says); ``None``: no deadline.
            Recorded as ``DeadlineExceeded``; retried like a timeout.
        max_response_mb: largest answer body read (MB); a larger one is cut and recorded as
            ``ResponseTooLarge`` (not retried); ``None``: no cap.
        max_retries: extra HTTP attempts after the first, shared by the SDK's retries of
            HTTP faults and this client's retries of unusable completions.
        image_transport: ``"base64"`` (inline PNG data URLs) or ``"url"`` (``file://``).
        max_image_side: longest image side after resizing; ``None`` keeps full resolution.
        extra_body: extra top-level request fields, e.g.
            ``{"chat_template_kwargs": {"enable_thinking": False}}``.
        backoff_base_s: first backoff ceiling of the retries of unusable completions;
            doubles per retry (HTTP faults use the SDK's backoff, see the module docstring).
        backoff_max_s: cap of those backoffs.
        top_p: nucleus sampling; ``None`` leaves the server default.
        seed: sampling seed; ``None`` sends none.
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    concurrency: int = 8
    max_new_tokens: int = 2048
    temperature: float = 0.0
    timeout_s: float = 600
    max_retries: int = 5
    image_transport: str = "base64"
    max_image_side: int | None = 800
    extra_body: dict | None = None
    backoff_base_s: float = BACKOFF_BASE_S
    backoff_max_s: float = BACKOFF_MAX_S
    top_p: float | None = None
    seed: int | None = None
    deadline_s: float | None = DEFAULT_DEADLINE_S
    max_response_mb: float | None = DEFAULT_MAX_RESPONSE_MB

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.image_transport not in ("base64", "url"):
            raise ValueError(f"image_transport must be 'base64' or 'url', not {self.image_transport!r}")
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        if self.deadline_s is not None and self.deadline_s <= 0:
            raise ValueError("deadline_s must be > 0 (or null: no deadline)")
        if self.max_response_mb is not None and self.max_response_mb <= 0:
            raise ValueError("max_response_mb must be > 0 (or null: no cap)")

    @property
    def max_response_bytes(self) -> int | None:
        return None if self.max_response_mb is None else int(self.max_response_mb * 1024 * 1024)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the settings (safe to log: it holds no secret)."""
        return asdict(self)

    @classmethod
    def settings_of(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """The client settings among ``values`` (e.g. a backend constructor's ``locals()``): every
        field of this class that ``values`` has, in field order (not validated: build the config)."""
        return {f.name: values[f.name] for f in fields(cls) if f.name in values}


@dataclass
class CompletionResult:
    """Outcome of one chat request (after retries).

    Attributes:
        ok: the server returned a usable completion.
        text: ``choices[0].message.content`` (``""`` when the model produced no content);
            ``None`` when not ok.
        reasoning: ``reasoning_content`` (or ``reasoning``) of the message, if any.
        finish_reason: ``choices[0].finish_reason`` (``"length"``: cut by the token limit).
        prompt_tokens: ``usage.prompt_tokens``.
        completion_tokens: ``usage.completion_tokens``.
        latency_s: wall time of the successful HTTP attempt; ``None`` when not ok.
        attempts: HTTP attempts made (0 when the request could not even be built).
        error: ``"<ExceptionClass>: <message>"`` of the last error when not ok.
        served_model: the ``model`` field of the response.
    """

    ok: bool
    text: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    attempts: int = 0
    error: str | None = None
    served_model: str | None = None

    @property
    def truncated(self) -> bool:
        """The completion was cut by the token limit (``finish_reason == "length"``)."""
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict, e.g. for a JSONL store."""
        return asdict(self)


@dataclass
class BatchSummary:
    """Totals of one :meth:`OpenAICompatibleClient.complete_many` run.

    ``truncated`` counts the successful completions cut by the token limit.
    """

    total: int = 0
    ok: int = 0
    failed: int = 0
    attempts: int = 0
    elapsed_s: float = 0.0
    truncated: int = 0

    @property
    def requests_per_s(self) -> float:
        """Completed items per second of wall time."""
        return self.total / self.elapsed_s if self.elapsed_s > 0 else 0.0


@dataclass
class ClientStats:
    """Cumulative client-side timings (seconds) and sizes, for benchmarks and logs.

    ``build_s`` is the time spent building request bodies (image cache look-ups, first-time
    image encodes, JSON serialisation); ``http_s`` the time inside SDK calls (sending,
    server time, receiving the response, and the SDK's own retry pauses, if any).
    """

    requests: int = 0
    attempts: int = 0
    build_s: float = 0.0
    http_s: float = 0.0
    bytes_sent: int = 0

    def reset(self) -> None:
        """Zero every counter."""
        for f in fields(self):
            setattr(self, f.name, f.default)


class _CacheMiss(Exception):
    """Internal: an image needs encoding, so the body is built in a worker thread."""


class MalformedResponseError(ValueError):
    """The server answered 200 with something that is not a chat completion."""


class EmptyChoicesError(ValueError):
    """The server answered a chat completion without any choice."""


class ResponseTooLargeError(ValueError):
    """The answer body is larger than ``max_response_mb`` (not retried: the server would send it again)."""


class EmptyContentError(ValueError):
    """The completion has no content although the call required some (``require_content``)."""


class RequestBody(_httpx.AsyncByteStream):
    """A serialised JSON request body held as a sequence of byte chunks.

    Iterating it asynchronously yields the chunks; it can be iterated any number of times
    (each retry re-sends it).  ``len()`` is the total size, sent as ``Content-Length``.
    It is an ``httpx`` ``AsyncByteStream``, so it is streamed as is, without a copy.
    """

    __slots__ = ("chunks", "length")

    def __init__(self, chunks: tuple[bytes, ...]) -> None:
        self.chunks = chunks
        self.length = sum(len(c) for c in chunks)

    def __len__(self) -> int:
        return self.length

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    def to_bytes(self) -> bytes:
        """The whole body as one ``bytes`` object (a copy)."""
        return self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)


# ---------------------------------------------------------------------------- HTTP plumbing
@dataclass
class _Call:
    """One SDK call in progress: the body to send and what its HTTP attempts did."""

    body: RequestBody
    attempts: int = 0
    attempt_t0: float = 0.0
    deadline_s: float | None = None
    max_bytes: int | None = None
    #: bytes seen of an answer over ``max_bytes`` (0: none was)
    too_large: int = 0


#: The SDK call running in the current task (set around each ``create()``).
_CURRENT_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("memlens_http_call", default=None)


#: bodies at least this large are uploaded one at a time (:class:`_UploadTurn`)
_TURN_MIN_BYTES = 1 << 20
#: the longest a large body waits for the upload before it (then it is sent alongside)
_TURN_WAIT_S = 1.0


class _UploadTurn:
    """Large request bodies of one client are uploaded one after the other, not interleaved.

    Interleaved, ``concurrency`` multi-megabyte uploads share the event loop chunk by chunk, so all
    of them finish together, late, and every request's server time starts then; the requests stay
    synchronised in waves and the loop idles during each wave's wait. One at a time, the first body
    is complete after one upload's time, the server starts on it at once, and the answers (so the
    next uploads) arrive staggered, overlapping one request's upload with the others' waits.

    A body waits at most ``wait_s`` for the turn (a stalled upload, e.g. a server that stopped
    reading, never holds the others back longer); after that it is sent alongside, as before.
    """

    __slots__ = ("_lock", "owner", "wait_s")

    def __init__(self, wait_s: float | None = None) -> None:
        self._lock = asyncio.Lock()
        self.owner: object | None = None
        self.wait_s = _TURN_WAIT_S if wait_s is None else wait_s

    async def acquire(self, owner: object) -> None:
        try:
            async with asyncio.timeout(self.wait_s):
                await self._lock.acquire()
        except TimeoutError:
            return  # sent without the turn
        self.owner = owner

    def release(self, owner: object) -> None:
        """Give the turn back if ``owner`` holds it (idempotent)."""
        if self.owner is owner:
            self.owner = None
            self._lock.release()


class _TurnBody(_httpx.AsyncByteStream):
    """The chunks of a :class:`RequestBody`, sent while holding the client's :class:`_UploadTurn`
    (taken before the first chunk, given back after the last; the caller also gives it back when
    the attempt ends, should the upload be abandoned half-way)."""

    __slots__ = ("body", "turn")

    def __init__(self, body: RequestBody, turn: _UploadTurn) -> None:
        self.body = body
        self.turn = turn

    def __len__(self) -> int:
        return self.body.length

    async def __aiter__(self) -> AsyncIterator[bytes]:
        await self.turn.acquire(self)
        try:
            for chunk in self.body.chunks:
                yield chunk
        finally:
            self.turn.release(self)


class _PrebuiltBodyClient(_httpx.AsyncClient):
    """``httpx`` client that sends the current call's :class:`RequestBody`.

    The SDK builds every attempt's request (URL, auth, its headers) and calls ``send``; here
    the SDK's placeholder JSON is replaced by the prebuilt body of the :class:`_Call` of the
    running task, and the attempt is counted.  Requests made outside a call pass unchanged.
    Bodies of at least :data:`_TURN_MIN_BYTES` are uploaded one at a time (:class:`_UploadTurn`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._upload_turn = _UploadTurn()

    async def send(self, request: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        call = _CURRENT_CALL.get()
        if call is None:
            return await super().send(request, **kwargs)
        call.attempts += 1
        call.attempt_t0 = time.perf_counter()
        headers = request.headers.copy()
        headers["Content-Length"] = str(call.body.length)
        stream: Any = call.body
        if call.body.length >= _TURN_MIN_BYTES:
            stream = _TurnBody(call.body, self._upload_turn)
        request = _httpx.Request(
            request.method, request.url, headers=headers, stream=stream, extensions=request.extensions
        )
        if kwargs.get("stream"):  # pragma: no cover - memlens never streams
            return await super().send(request, **kwargs)
        timed_out = False
        try:
            async with asyncio.timeout(call.deadline_s):
                return await self._read_capped(request, call, **kwargs)
        except TimeoutError:
            timed_out = True
        finally:
            if stream is not call.body:
                self._upload_turn.release(stream)
        if timed_out:  # raised outside the handler: the error names the deadline, not a bare TimeoutError
            raise _httpx.ReadTimeout(
                f"DeadlineExceeded: no complete answer within deadline_s={call.deadline_s:g} s", request=request
            )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _read_capped(self, request: Any, call: _Call, **kwargs: Any) -> Any:
        """Send, then read the body up to ``call.max_bytes`` (a larger answer is cut: ``call.too_large``)."""
        response = await super().send(request, **{**kwargs, "stream": True})
        cap = call.max_bytes
        chunks: list[bytes] = []
        try:
            declared = response.headers.get("content-length", "")
            size = int(declared) if declared.isdigit() else 0
            if cap is not None and size > cap:
                call.too_large = size
            else:
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if cap is not None and size > cap:
                        call.too_large = size
                        break
                    chunks.append(chunk)
        finally:
            await response.aclose()
        keep = {k: v for k, v in response.headers.items() if k.lower() not in _BODY_HEADERS}
        return _httpx.Response(
            response.status_code,
            headers=keep,
            content=b"" if call.too_large else b"".join(chunks),
            request=request,
            extensions={k: v for k, v in response.extensions.items() if k != "network_stream"},
        )


#: headers that describe the wire body (the body handed on is decoded and whole)
_BODY_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})


class _DemoteToDebug(logging.Filter):
    """Turns INFO records (one per HTTP request or retry) into DEBUG records."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


_DEMOTE = _DemoteToDebug()
_QUIET_PACKAGES = ("openai", "httpx", "httpx2")


def _demote_http_logs() -> None:
    """Attach :class:`_DemoteToDebug` to the existing loggers of the SDK and of httpx.

    A logger's filters only see the records logged on that very logger, so the filter goes
    on each of them (they are created when the packages are imported).
    """
    names = [n for n in list(logging.Logger.manager.loggerDict) if n.split(".", 1)[0] in _QUIET_PACKAGES]
    for name in {*names, *_QUIET_PACKAGES}:
        logger = logging.getLogger(name)
        if _DEMOTE not in logger.filters:
            logger.addFilter(_DEMOTE)


# ---------------------------------------------------------------------------- helpers
_PASS_THROUGH = ("data:", "http://", "https://")
# A per-process random marker standing for one inline image while the JSON is serialised.
_IMAGE_PLACEHOLDER = f"\x00memlens-image-{uuid.uuid4().hex}\x00"
_IMAGE_PLACEHOLDER_JSON = json.dumps(_IMAGE_PLACEHOLDER)[1:-1].encode("ascii")  # without quotes

#: ``complete()`` keywords that change the client's behaviour (everything else is a body field).
_CONFIG_OVERRIDES = frozenset(
    {
        "model",
        "max_new_tokens",
        "temperature",
        "top_p",
        "seed",
        "extra_body",
        "timeout_s",
        "max_retries",
        "require_content",
    }
)


@dataclass
class _Settings:
    model: str
    max_new_tokens: int | None
    temperature: float | None
    top_p: float | None
    seed: int | None
    extra_body: dict | None
    timeout_s: float
    max_retries: int
    require_content: bool = False
    body_extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Parsed:
    text: str
    reasoning: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    served_model: str | None


@dataclass
class _LoopState:
    loop: asyncio.AbstractEventLoop
    client: openai.AsyncOpenAI
    semaphore: asyncio.Semaphore
    creators: dict[int, Callable[..., Awaitable[Any]]] = field(default_factory=dict)


@functools.lru_cache(maxsize=1)
def _default_ssl_context() -> Any:
    """httpx's default TLS context (``verify=True``: the system or certifi CA bundle, honouring
    ``SSL_CERT_FILE``/``SSL_CERT_DIR``), built once per process: loading the CA bundle costs
    20-40 ms of CPU, which every event loop's client (each :meth:`run_many`) paid again, before
    its first request."""
    return _httpx.create_ssl_context()


def _dumps(obj: Any) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(obj)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _loads(data: bytes) -> Any:
    if _orjson is not None:
        return _orjson.loads(data)
    return json.loads(data)


#: threads building request bodies whose images are not in memory yet (reading the disk cache and
#: checking entries release the GIL; encoding mostly does)
_BUILD_THREADS = 2

#: Unusable 200 answers: retried by this client, not by the SDK.
_UNUSABLE = (MalformedResponseError, EmptyChoicesError, EmptyContentError)


# ---------------------------------------------------------------------------- the client
class OpenAICompatibleClient:
    """Concurrent chat-completions client on top of ``openai.AsyncOpenAI``.

    Args:
        config: connection and decoding settings.
        rng: random generator for the backoff jitter of this client's own retries (inject
            a seeded one in tests).
        image_encoder: encoder for local image files; by default one is built from
            ``config.max_image_side`` and ``config.image_transport`` (a given encoder's
            own settings win).  Share one encoder between clients to share its cache.

    The client binds its HTTP connections to the running event loop and rebuilds them
    when used from another loop (e.g. successive :meth:`run_many` calls).  In your own
    loop, use ``async with client:`` or ``await client.aclose()`` to release them.
    ``stats`` accumulates client-side timings (:class:`ClientStats`).
    """

    def __init__(
        self,
        config: OpenAICompatibleConfig,
        *,
        rng: random.Random | None = None,
        image_encoder: ImageEncoder | None = None,
    ) -> None:
        self.config = config
        self._rng = rng if rng is not None else random.Random()
        self.image_encoder = image_encoder or ImageEncoder(
            max_side=config.max_image_side, transport="url" if config.image_transport == "url" else "base64"
        )
        self._api_key = self._read_api_key(config.api_key_env)
        self._state: _LoopState | None = None
        self._builders: Any = None
        self.stats = ClientStats()
        _demote_http_logs()

    # ------------------------------------------------------------------ plumbing
    @staticmethod
    def _read_api_key(env_name: str | None) -> str:
        if not env_name:
            return "EMPTY"
        value = os.environ.get(env_name)
        if not value:
            log.warning("environment variable %s is not set; sending the placeholder key 'EMPTY'", env_name)
            return "EMPTY"
        return value

    def __repr__(self) -> str:
        c = self.config
        return (
            f"{type(self).__name__}(base_url={c.base_url!r}, model={c.model!r}, "
            f"concurrency={c.concurrency}, api_key_env={c.api_key_env!r})"
        )

    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._state
        if state is not None and state.loop is loop:
            return state
        import openai  # imported when a client is made: importing it costs ~1 s (config checks need none)

        n = self.config.concurrency
        limits = _httpx.Limits(max_connections=n, max_keepalive_connections=n)
        transport = _httpx.AsyncHTTPTransport(verify=_default_ssl_context(), limits=limits)
        use_fast_writes(transport)  # request-body chunks written without anyio's per-write overhead
        http_client = _PrebuiltBodyClient(
            verify=_default_ssl_context(),
            limits=limits,
            timeout=_httpx.Timeout(self.config.timeout_s),
            follow_redirects=True,
            transport=transport,
        )
        client = openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.config.base_url,
            timeout=self.config.timeout_s,
            max_retries=self.config.max_retries,
            http_client=http_client,
        )
        self._state = _LoopState(loop=loop, client=client, semaphore=asyncio.Semaphore(n))
        return self._state

    @staticmethod
    def _creator(state: _LoopState, max_retries: int) -> Callable[..., Awaitable[Any]]:
        """``chat.completions.with_raw_response.create`` of a client with ``max_retries``
        (``with_options`` copies share the connection pool; one copy per budget is kept)."""
        create = state.creators.get(max_retries)
        if create is None:
            sdk = (
                state.client
                if max_retries == state.client.max_retries
                else state.client.with_options(max_retries=max_retries)
            )
            create = state.creators[max_retries] = sdk.chat.completions.with_raw_response.create
        return create

    async def aclose(self) -> None:
        """Close the HTTP connections of the current event loop's client."""
        state, self._state = self._state, None
        if state is None:
            return
        if state.loop is asyncio.get_running_loop():
            with contextlib.suppress(Exception):
                await state.client.close()

    async def __aenter__(self) -> OpenAICompatibleClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _mask(self, text: str) -> str:
        key = self._api_key
        if key and key != "EMPTY" and len(key) >= 4 and key in text:
            text = text.replace(key, "***")
        return text if len(text) <= _ERROR_MAX_CHARS else text[: _ERROR_MAX_CHARS - 3] + "..."

    def _describe(self, exc: BaseException) -> str:
        """``"Class: message"``; for connection errors also the transport's root cause
        (the SDK reports every transport failure as "Connection error."/"Request timed out.")."""
        import openai

        text = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, openai.APIConnectionError):
            root: BaseException = exc
            seen = {id(exc)}
            while (nxt := root.__cause__ or root.__context__) is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                root = nxt
            if root is not exc and not isinstance(root, asyncio.CancelledError):
                text = f"{text} (caused by {type(root).__name__}: {root})"
        return self._mask(" ".join(text.split()))

    # ------------------------------------------------------------------ request building
    def _settings(self, overrides: Mapping[str, Any]) -> _Settings:
        c = self.config
        s = _Settings(
            model=c.model,
            max_new_tokens=c.max_new_tokens,
            temperature=c.temperature,
            top_p=c.top_p,
            seed=c.seed,
            extra_body=c.extra_body,
            timeout_s=c.timeout_s,
            max_retries=c.max_retries,
        )
        for name, value in overrides.items():
            if name == "extra_body":
                s.extra_body = {**(c.extra_body or {}), **(value or {})}
            elif name in _CONFIG_OVERRIDES:
                setattr(s, name, value)
            else:
                s.body_extra[name] = value
        return s

    def _body(self, messages: list[dict], s: _Settings) -> dict[str, Any]:
        body: dict[str, Any] = {"model": s.model, "messages": messages}
        if s.max_new_tokens is not None:
            body["max_tokens"] = s.max_new_tokens
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if s.top_p is not None:
            body["top_p"] = s.top_p
        if s.seed is not None:
            body["seed"] = s.seed
        if s.extra_body:
            body.update(s.extra_body)
        for name, value in s.body_extra.items():
            if value is None:
                body.pop(name, None)
            else:
                body[name] = value
        return body

    def prepare_messages(self, messages: list[dict]) -> list[dict]:
        """Return ``messages`` with local image references replaced by request URLs.

        Image blocks are ``{"type": "image_url", "image_url": {"url": <path or URL>}}``
        (``image_url`` may also be a bare string) or ``{"type": "image", "image": <path>}``.
        ``http(s)``/``data:`` URLs pass through; local paths and ``file://`` URLs go through
        the :class:`ImageEncoder`.  The input is never modified; unchanged messages are
        reused as is.  Raises :class:`ImageError` for unusable images.

        This is the readable form of what :meth:`complete` sends; :meth:`complete` itself
        never materialises it (see :meth:`build_body`).
        """
        encode = self.image_encoder.encode
        return self._map_images(messages, lambda ref: encode(ref))

    @staticmethod
    def _map_images(messages: list[dict], convert: Callable[[str], str]) -> list[dict]:
        out: list[dict] = []
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            if type(content) is not list:
                out.append(message)
                continue
            new_content: list[Any] | None = None
            for i, block in enumerate(content):
                new_block = block
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "image_url":
                    ref = block.get("image_url")
                    url = ref.get("url") if isinstance(ref, dict) else ref
                    if isinstance(url, (str, os.PathLike)):
                        url = os.fspath(url)
                        if not url.startswith(_PASS_THROUGH):
                            image_url = {**ref, "url": convert(url)} if isinstance(ref, dict) else {"url": convert(url)}
                            new_block = {**block, "image_url": image_url}
                elif kind == "image" and isinstance(block.get("image"), (str, os.PathLike)):
                    url = os.fspath(block["image"])
                    new_block = {
                        "type": "image_url",
                        "image_url": {"url": url if url.startswith(_PASS_THROUGH) else convert(url)},
                    }
                if new_block is not block and new_content is None:
                    new_content = list(content[:i])
                if new_content is not None:
                    new_content.append(new_block)
            out.append(message if new_content is None else {**message, "content": new_content})
        return out

    def build_body(self, messages: list[dict], **overrides: Any) -> RequestBody:
        """Build the request body of ``messages`` as a :class:`RequestBody`.

        Inline (base64) images are not copied into the JSON: the messages are serialised
        with a placeholder per image and the cached data-URL bytes of the
        :class:`ImageEncoder` are spliced in as separate chunks.  Building a 128K-token
        request with ~90 cached images therefore costs about as much as serialising its
        text, and no per-request copy of the ~100 MB of image data is ever made.
        Raises :class:`ImageError` for unusable images.
        """
        return self._build(messages, self._settings(overrides))

    def _build(self, messages: list[dict], s: _Settings, *, cached_only: bool = False) -> RequestBody:
        images: list[bytes] = []
        inline = self.image_encoder.transport == "base64"
        get = self.image_encoder.lookup_bytes if cached_only else self.image_encoder.encode_bytes

        def convert(ref: str) -> str:
            data = get(ref)
            if data is None:
                raise _CacheMiss
            if not inline:
                return data.decode("ascii")
            images.append(data)
            return _IMAGE_PLACEHOLDER

        prepared = self._map_images(messages, convert)
        raw = _dumps(self._body(prepared, s))
        if not images:
            return RequestBody((raw,))
        parts = raw.split(_IMAGE_PLACEHOLDER_JSON)
        if len(parts) != len(images) + 1:  # pragma: no cover - the placeholder is a random nonce
            raise ValueError("image placeholder collision while building the request body")
        chunks: list[bytes] = [parts[0]]
        for data, part in zip(images, parts[1:]):
            chunks.append(data)
            chunks.append(part)
        return RequestBody(tuple(chunks))

    def _timed_build(self, messages: list[dict], s: _Settings) -> tuple[RequestBody, float]:
        t0 = time.perf_counter()
        body = self._build(messages, s)
        return body, time.perf_counter() - t0

    async def _build_async(self, messages: list[dict], s: _Settings) -> tuple[RequestBody, float]:
        """Build on the event loop when every image is cached; otherwise in a worker thread."""
        t0 = time.perf_counter()
        try:
            return self._build(messages, s, cached_only=True), time.perf_counter() - t0
        except _CacheMiss:
            pass
        loop = asyncio.get_running_loop()
        body, build_s = await loop.run_in_executor(self._build_pool(), self._timed_build, messages, s)
        return body, build_s

    def _build_pool(self) -> Any:
        """The threads that build bodies whose images must be read or encoded: first come, first
        served (:data:`_BUILD_THREADS` at once), so the first requests of a run are sent as soon as
        their own images are ready, not when every worker's are."""
        pool = self._builders
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = self._builders = ThreadPoolExecutor(_BUILD_THREADS, thread_name_prefix="memlens-build")
        return pool

    # ------------------------------------------------------------------ response parsing
    @staticmethod
    def _parse(raw: bytes, *, require_content: bool = False) -> _Parsed:
        """The fields of a chat-completion body; raises one of the ``_UNUSABLE`` errors."""
        try:
            data = _loads(raw)
        except ValueError as exc:
            raise MalformedResponseError(f"response is not valid JSON ({exc})") from None
        if not isinstance(data, Mapping):
            raise MalformedResponseError(f"expected a JSON object, got {type(data).__name__}")
        choices = data.get("choices")
        if choices is None:
            raise MalformedResponseError("response has no 'choices' field")
        if not isinstance(choices, list):
            raise MalformedResponseError("'choices' is not a list")
        if not choices:
            raise EmptyChoicesError("response has an empty 'choices' list")
        choice = choices[0]
        if not isinstance(choice, Mapping) or not isinstance(choice.get("message"), Mapping):
            raise MalformedResponseError("choices[0] has no message")
        message = choice["message"]
        content = message.get("content")
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
        text = "" if content is None else str(content)
        finish = choice.get("finish_reason")
        if require_content and not text.strip() and finish != "length":
            raise EmptyContentError(f"the completion has no content (finish_reason={finish!r})")
        reasoning = message.get("reasoning_content")
        if reasoning is None:
            reasoning = message.get("reasoning")
        usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
        model = data.get("model")
        return _Parsed(
            text=text,
            reasoning=None if reasoning is None else str(reasoning),
            finish_reason=finish,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            served_model=None if model is None else str(model),
        )

    # ------------------------------------------------------------------ public API
    def backoff_delay(self, retry: int) -> float:
        """Seconds to wait before this client's own retry number ``retry`` (0-based) of an
        unusable completion: full jitter, ``uniform(0, min(backoff_max_s, backoff_base_s * 2**retry))``.
        """
        ceiling = min(self.config.backoff_max_s, self.config.backoff_base_s * (2 ** min(retry, 62)))
        return self._rng.uniform(0.0, ceiling)

    async def complete(self, messages: list[dict], **overrides: Any) -> CompletionResult:
        """Send one chat request with retries; never raises for request problems.

        ``overrides`` may replace ``model``, ``max_new_tokens``, ``temperature``, ``top_p``,
        ``seed``, ``timeout_s``, ``max_retries`` or ``extra_body`` (merged over the config's)
        for this call; ``require_content=True`` treats a completion without content (other
        than one cut by the token limit) as unusable, i.e. retries it.  Any other keyword
        becomes a top-level request field (``None`` removes a field, e.g.
        ``max_new_tokens=None, max_completion_tokens=256``).
        """
        state = self._loop_state()
        s = self._settings(overrides)
        self.stats.requests += 1
        try:
            body, build_s = await self._build_async(messages, s)
        except ImageError as exc:
            return CompletionResult(ok=False, attempts=0, error=self._describe(exc))
        except (TypeError, ValueError) as exc:  # unserialisable message content
            return CompletionResult(ok=False, attempts=0, error=self._describe(exc))
        self.stats.build_s += build_s

        budget = s.max_retries + 1  # HTTP attempts, shared with the SDK's retries
        attempts = 0
        retry = 0
        error = "no attempt made"
        while True:
            create = self._creator(state, budget - attempts - 1)
            call = _Call(body, deadline_s=self.config.deadline_s, max_bytes=self.config.max_response_bytes)
            retryable = False
            async with state.semaphore:
                token = _CURRENT_CALL.set(call)
                t0 = time.perf_counter()
                try:
                    raw = await create(model=s.model, messages=[], timeout=s.timeout_s)
                    latency = time.perf_counter() - call.attempt_t0
                    if call.too_large:
                        raise ResponseTooLargeError(
                            f"the answer exceeds max_response_mb={self.config.max_response_mb:g} "
                            f"({call.too_large} bytes or more); not retried"
                        )
                    parsed = self._parse(raw.http_response.content, require_content=s.require_content)
                except _UNUSABLE as exc:
                    error, retryable = self._describe(exc), True
                except Exception as exc:
                    error = self._describe(exc)
                else:
                    attempts += call.attempts
                    self.stats.attempts += attempts
                    self.stats.bytes_sent += body.length * attempts
                    return CompletionResult(
                        ok=True,
                        text=parsed.text,
                        reasoning=parsed.reasoning,
                        finish_reason=parsed.finish_reason,
                        prompt_tokens=parsed.prompt_tokens,
                        completion_tokens=parsed.completion_tokens,
                        latency_s=latency,
                        attempts=attempts,
                        served_model=parsed.served_model,
                    )
                finally:
                    self.stats.http_s += time.perf_counter() - t0
                    _CURRENT_CALL.reset(token)
            attempts += call.attempts
            if not retryable or call.attempts == 0 or attempts >= budget:
                break
            delay = self.backoff_delay(retry)
            retry += 1
            log.debug("attempt %d gave an unusable completion (%s); retrying in %.2fs", attempts, error, delay)
            if delay > 0:
                await asyncio.sleep(delay)
        self.stats.attempts += attempts
        self.stats.bytes_sent += body.length * attempts
        log.warning("request failed after %d attempt(s): %s", attempts, error)
        return CompletionResult(ok=False, attempts=attempts, error=error)

    async def complete_many(
        self,
        items: Iterable[tuple[K, list[dict]]] | AsyncIterable[tuple[K, list[dict]]],
        on_result: Callable[[K, CompletionResult], Awaitable[None] | None],
        *,
        progress: bool = True,
        total: int | None = None,
        desc: str | None = None,
        ramp_up_s: float = 0.0,
        **overrides: Any,
    ) -> BatchSummary:
        """Run many requests with at most ``concurrency`` in flight.

        ``items`` is consumed lazily by ``concurrency`` workers, so only that many payloads
        exist at once.  ``on_result(key, result)`` (sync or async) is called as each request
        finishes, in completion order; an exception from it stops the run and propagates
        (results already delivered stay delivered).  ``ramp_up_s`` spreads the start of the
        first requests over that many seconds (useful against a cold server, and it keeps
        requests desynchronised).  ``overrides`` are passed to :meth:`complete`.
        """
        n_workers = self.config.concurrency
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        summary = BatchSummary()
        bar = tqdm(
            total=total,
            disable=not progress,
            desc=desc or self.config.model,
            unit="req",
            dynamic_ncols=True,
            mininterval=0.5,
            smoothing=0.05,
        )
        if hasattr(items, "__aiter__"):
            aiterator = items.__aiter__()  # type: ignore[union-attr]
            alock = asyncio.Lock()

            async def next_item() -> tuple[Any, list[dict]] | None:
                async with alock:
                    try:
                        return await aiterator.__anext__()
                    except StopAsyncIteration:
                        return None
        else:
            iterator = iter(items)  # type: ignore[arg-type]

            async def next_item() -> tuple[Any, list[dict]] | None:
                return next(iterator, None)

        async def worker(index: int) -> None:
            if ramp_up_s > 0 and index:
                await asyncio.sleep(ramp_up_s * index / n_workers)
            while True:
                item = await next_item()
                if item is None:
                    return
                key, messages = item
                del item
                result = await self.complete(messages, **overrides)
                del messages
                summary.total += 1
                summary.attempts += result.attempts
                if result.ok:
                    summary.ok += 1
                    summary.truncated += result.truncated
                else:
                    summary.failed += 1
                    bar.set_postfix(failed=summary.failed, refresh=False)
                maybe = on_result(key, result)
                if inspect.isawaitable(maybe):
                    await maybe
                bar.update(1)

        bar.set_postfix(failed=0, refresh=False)
        t0 = time.perf_counter()
        tasks = [asyncio.create_task(worker(i)) for i in range(n_workers)]
        try:
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            summary.elapsed_s = time.perf_counter() - t0
            bar.set_postfix(failed=summary.failed, refresh=False)
            bar.close()
        if summary.truncated:
            log.info(
                "%d of %d completions were cut by the token limit (finish_reason=length)", summary.truncated, summary.ok
            )
        return summary

    def run_many(
        self,
        items: Iterable[tuple[K, list[dict]]],
        on_result: Callable[[K, CompletionResult], Awaitable[None] | None],
        *,
        progress: bool = True,
        total: int | None = None,
        desc: str | None = None,
        ramp_up_s: float = 0.0,
        **overrides: Any,
    ) -> BatchSummary:
        """Synchronous :meth:`complete_many`: runs its own event loop, then closes connections.

        Must not be called from a running event loop (use ``await complete_many`` there).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("run_many() cannot run inside an event loop; await complete_many() instead")

        async def main() -> BatchSummary:
            try:
                return await self.complete_many(
                    items, on_result, progress=progress, total=total, desc=desc, ramp_up_s=ramp_up_s, **overrides
                )
            finally:
                await self.aclose()

        return asyncio.run(main())


def run_many(
    config: OpenAICompatibleConfig,
    items: Iterable[tuple[K, list[dict]]],
    on_result: Callable[[K, CompletionResult], Awaitable[None] | None],
    *,
    progress: bool = True,
    **kwargs: Any,
) -> BatchSummary:
    """Build a client for ``config`` and run :meth:`OpenAICompatibleClient.run_many`."""
    return OpenAICompatibleClient(config).run_many(items, on_result, progress=progress, **kwargs)


def warm_up() -> None:
    """Run the SDK's request path once against a canned in-process answer (no network), so that
    what the first request of a process does once (the SDK's lazy imports of its chat resources
    and types, the building of their schemas, the asyncio network backend's import: 50-100 ms on
    one core) is done here, before a run, and not while the run's first requests wait behind it."""
    import anyio._backends._asyncio  # noqa: F401 - the async network backend the pool connects with
    import openai

    answer = {
        "id": "warm-up",
        "object": "chat.completion",
        "created": 0,
        "model": "warm-up",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}],
    }

    async def go() -> None:
        transport = _httpx.MockTransport(lambda request: _httpx.Response(200, json=answer))
        async with _httpx.AsyncClient(transport=transport) as http_client:
            sdk = openai.AsyncOpenAI(
                api_key="warm-up", base_url="http://warm-up.invalid/v1", http_client=http_client, max_retries=0
            )
            raw = await sdk.chat.completions.with_raw_response.create(model="warm-up", messages=[])
            OpenAICompatibleClient._parse(raw.http_response.content)

    asyncio.run(go())


class EndpointError(MemLensError):
    """The endpoint cannot serve requests: unreachable, or it rejects the API key."""


def check_endpoint(config: OpenAICompatibleConfig, *, timeout_s: float = 15.0) -> None:
    """One tiny request (``GET /models``) before a run, so a server that is down or a rejected key
    ends the run with one clear message before any item is sent. An endpoint without ``/models``
    (404/405) is accepted: the run itself will tell."""
    import openai

    key = OpenAICompatibleClient._read_api_key(config.api_key_env)
    http_client = openai.DefaultHttpxClient(verify=_default_ssl_context())  # the SDK's defaults, our TLS context
    client = openai.OpenAI(
        base_url=config.base_url, api_key=key, max_retries=1, timeout=timeout_s, http_client=http_client
    )
    try:
        client.models.list()
    except openai.AuthenticationError:
        raise EndpointError(
            f"{config.base_url}: the server rejected the API key"
            + (f" from ${config.api_key_env}" if config.api_key_env else " (no api_key_env is set)")
        ) from None
    except openai.PermissionDeniedError:
        raise EndpointError(f"{config.base_url}: the API key has no access (403)") from None
    except (openai.NotFoundError, openai.UnprocessableEntityError):
        return
    except openai.APIStatusError as exc:
        if exc.status_code in (404, 405):
            return
        raise EndpointError(f"{config.base_url}: health check failed with HTTP {exc.status_code}") from None
    except (openai.APIConnectionError, openai.APITimeoutError) as exc:
        raise EndpointError(
            f"{config.base_url}: cannot reach the server ({type(exc).__name__}); is it running?"
        ) from None
    finally:
        client.close()
