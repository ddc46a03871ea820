"""A fake OpenAI-compatible chat-completions server for tests and benchmarks.

The server is a small hand-written HTTP/1.1 implementation on top of
:mod:`asyncio` streams.  It runs its own event loop in a daemon thread, so it can
be used from synchronous tests, from ``asyncio`` tests and from benchmarks alike::

    with FakeOpenAIServer(latency_s=0.2, faults=["429", "ok"]) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="x")
        ...
        assert server.requests[0]["model"] == "my-model"

A custom HTTP implementation (instead of an ASGI app under uvicorn) is used because
several injected faults need byte-level control of the connection: ``truncated``
declares a ``Content-Length`` larger than what is sent and then closes the socket,
``disconnect`` closes the socket without answering.  It also keeps the per-request
cost low: on 2 cores it answers several thousand requests/s at zero latency, and with
200 ms latency and 64 keep-alive connections it sustains ~300 requests/s (96-97 % of
the ideal 320), in-process or in a child process (``benchmarks/bench_client.py`` (e)).
With ``parse_bodies=False`` (and no recording) a chat body is received into one reused
buffer and only counted (:class:`_DiscardingProtocol`): about 4 ms of server CPU per 10 MB
request (the kernel's copy), where reading it through the stream reader cost ~9 ms.

Endpoints:

* ``POST /v1/chat/completions`` (non-streaming): answers with
  ``choices[0].message.content`` (optionally ``reasoning_content``), ``usage`` and
  ``finish_reason``.  The answer comes from ``responder(body)``.
* ``POST /v1/embeddings``: deterministic vectors (:func:`hashed_embedding`: a hashed bag of
  words, L2-normalised, ``embedding_dims`` long; texts sharing words get a positive cosine),
  ``usage.prompt_tokens`` (words); recorded in :attr:`FakeOpenAIServer.embedding_requests`, not
  counted as chat requests. ``embedding_faults`` (a sequence of status codes or ``"ok"``, by
  embedding request number) injects errors.
* ``GET /v1/models`` and ``GET /health``.

Faults (see :class:`Fault`) are chosen per chat request, deterministically, by

* a sequence: request number ``i`` (0-based, counting chat requests in arrival order)
  gets ``faults[i]``; requests past the end get ``"ok"``;
* a mapping ``{key: sequence}`` (see :func:`faults_by_key`): the n-th request whose
  message text contains ``key`` gets ``sequence[n]``.  This stays deterministic under
  concurrency, because it does not depend on arrival order across keys;
* a callable ``(index, body) -> str | Fault | None``.

Fault kinds: ``ok``, ``429`` (with ``Retry-After``), ``500``, ``503`` and any other
3-digit status code (``400``, ``401``, ``404`` ...), ``timeout`` (sleep for
``timeout_sleep_s`` before answering), ``malformed`` (200 with an invalid JSON body),
``truncated`` (``Content-Length`` larger than the body, then the connection is closed),
``empty_choices`` (valid JSON, ``"choices": []``), ``disconnect`` (close without
any answer) and ``trickle`` (the headers at once, then the body one byte every ``sleep_s``
(default 0.2 s): each read is quick, the whole answer is not).

``refuse_connections=True`` makes the server reset every TCP connection as soon as it is
accepted, before reading a byte (what a client sees from a server that is going down);
:attr:`FakeOpenAIServer.connection_count` counts accepted connections either way, so
tests can count a client's connection attempts on the server side.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

try:  # orjson is much faster on the multi-megabyte request bodies of image-heavy prompts.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only where orjson is absent
    _orjson = None

__all__ = [
    "FAULT_KINDS",
    "Fault",
    "FaultSpec",
    "FakeOpenAIServer",
    "default_responder",
    "faults_by_key",
    "hashed_embedding",
    "message_text",
]

#: Named fault kinds; any 3-digit HTTP status code given as a string is accepted as well.
FAULT_KINDS = frozenset(
    {"ok", "429", "500", "503", "timeout", "malformed", "truncated", "empty_choices", "disconnect", "trickle"}
)

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class _DiscardingProtocol(asyncio.StreamReaderProtocol, asyncio.BufferedProtocol):
    """The stream protocol of one connection, able to drop a request body without copying it.

    The transport receives into one preallocated buffer (``recv_into``, no bytes object per read).
    Normally every read is handed to the :class:`asyncio.StreamReader`; while :meth:`discard` is
    counting down, the bytes are only counted, so a body the server does not need costs the kernel's
    copy into the buffer and nothing else (the stand-in's own CPU stays out of client benchmarks).
    """

    _BUFFER = 1 << 20

    def __init__(self, reader: asyncio.StreamReader, callback: Any) -> None:
        super().__init__(reader, callback)
        self._reader_ref = reader
        self._buf = memoryview(bytearray(self._BUFFER))
        self._skip = 0
        self._skipped: asyncio.Future[None] | None = None
        reader._memlens_protocol = self  # type: ignore[attr-defined]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buf

    def buffer_updated(self, nbytes: int) -> None:
        start = 0
        if self._skip:
            start = min(self._skip, nbytes)
            self._skip -= start
            if not self._skip and self._skipped is not None and not self._skipped.done():
                self._skipped.set_result(None)
        if start < nbytes:
            self.data_received(bytes(self._buf[start:nbytes]))

    def connection_lost(self, exc: Exception | None) -> None:
        if self._skipped is not None and not self._skipped.done():
            self._skipped.set_exception(asyncio.IncompleteReadError(b"", self._skip))
        super().connection_lost(exc)

    async def discard(self, n: int) -> None:
        """Drop the next ``n`` bytes of the stream (those already buffered by the reader first)."""
        reader = self._reader_ref
        buffered = min(n, len(reader._buffer))  # the reader's own buffer (private)
        if buffered:
            await reader.readexactly(buffered)  # buffered: returns without waiting
        if n > buffered:
            self._skip = n - buffered
            self._skipped = asyncio.get_running_loop().create_future()
            await self._skipped


@dataclass(frozen=True)
class Fault:
    """One injected behaviour for one chat request.

    Attributes:
        kind: ``ok``, ``timeout``, ``malformed``, ``truncated``, ``empty_choices``,
            ``disconnect`` or a 3-digit HTTP status code such as ``"429"``.
        retry_after: value of the ``Retry-After`` header (seconds) sent with a ``429``;
            ``None`` sends no header.  A plain ``"429"`` string uses the server's
            ``retry_after_s``.
        sleep_s: for ``timeout``, how long to stall before answering (defaults to
            the server's ``timeout_sleep_s``).
    """

    kind: str
    retry_after: float | None = None
    sleep_s: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS and not (len(self.kind) == 3 and self.kind.isdigit()):
            raise ValueError(
                f"unknown fault kind {self.kind!r}; expected one of {sorted(FAULT_KINDS)} or a status code"
            )


FaultLike = Union[str, Fault, None]  # noqa: UP007 - a runtime alias (X | Y of a string needs Union)
FaultSpec = Union[  # noqa: UP007 - see above
    Sequence[FaultLike], Mapping[str, Sequence[FaultLike]], Callable[[int, "dict[str, Any] | None"], FaultLike], None
]


def message_text(body: Mapping[str, Any] | None) -> str:
    """Concatenate the text of all messages of a chat request body (images skipped)."""
    if not body:
        return ""
    parts: list[str] = []
    for message in body.get("messages") or ():
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and isinstance(block.get("text"), str):
                    parts.append(block["text"])
    return "\n".join(parts)


def _last_user_text(body: Mapping[str, Any] | None) -> str:
    if not body:
        return ""
    for message in reversed(body.get("messages") or ()):
        if isinstance(message, Mapping) and message.get("role") == "user":
            return message_text({"messages": [message]})
    return ""


def _words(text: str) -> list[str]:
    return "".join(c.lower() if c.isalnum() else " " for c in text).split()


def hashed_embedding(text: str, dims: int = 64) -> list[float]:
    """A deterministic embedding: each word adds 1 at ``sha256(word) mod dims``, then L2-normalised
    (a text without words gets the unit vector of component 0)."""
    vec = [0.0] * dims
    for w in _words(text):
        vec[int.from_bytes(hashlib.sha256(w.encode("utf-8")).digest()[:4], "big") % dims] += 1.0
    norm = sum(x * x for x in vec) ** 0.5
    if norm == 0:
        vec[0] = 1.0
        return vec
    return [x / norm for x in vec]


def default_responder(body: dict[str, Any] | None) -> str:
    """Deterministic answer: ``ANSWER:`` plus a short hash of the last user message's text."""
    digest = hashlib.sha256(_last_user_text(body).encode("utf-8")).hexdigest()[:12]
    return f"ANSWER:{digest}"


def faults_by_key(
    mapping: Mapping[str, Sequence[FaultLike]], default: FaultLike = "ok"
) -> Callable[[int, dict | None], FaultLike]:
    """Fault script keyed by a marker string found in the request's message text.

    The n-th request (n = 0, 1, ...) whose text contains ``key`` gets ``mapping[key][n]``;
    later requests, and requests matching no key, get ``default``.  When several keys
    match, the first in the mapping's order wins.
    """
    keys = list(mapping)
    counters: dict[str, int] = {}
    lock = threading.Lock()

    def decide(index: int, body: dict | None) -> FaultLike:
        text = message_text(body)
        for key in keys:
            if key in text:
                with lock:
                    n = counters.get(key, 0)
                    counters[key] = n + 1
                script = mapping[key]
                return script[n] if n < len(script) else default
        return default

    return decide


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _loads(data: bytes) -> Any:
    if _orjson is not None:
        return _orjson.loads(data)
    return json.loads(data)


def _estimate_prompt_tokens(body: Mapping[str, Any] | None) -> int:
    """Rough token count: 4 characters per token plus 256 tokens per image."""
    if not body:
        return 0
    chars = 0
    images = 0
    for message in body.get("messages") or ():
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            for block in content:
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "image_url":
                    images += 1
                elif isinstance(block.get("text"), str):
                    chars += len(block["text"])
    return chars // 4 + 256 * images + 1


class _HTTPError(Exception):
    """Malformed HTTP request from the client side."""


class FakeOpenAIServer:
    """In-process fake of an OpenAI-compatible (vLLM-like) chat-completions server.

    Args:
        latency_s: artificial delay before every chat answer (also before error answers).
        faults: fault script, see the module docstring.
        responder: ``responder(body) -> str`` giving the answer text, or a dict with any of
            ``content``, ``reasoning_content``, ``finish_reason``, ``completion_tokens``.
            ``body`` is ``None`` when ``parse_bodies`` is false.
        host: interface to bind; only ``127.0.0.1`` makes sense in tests.
        port: 0 picks a free port.
        model_name: served model name; ``None`` echoes the request's ``model``.
        retry_after_s: ``Retry-After`` value sent with ``429`` faults given as strings.
        timeout_sleep_s: how long a ``timeout`` fault stalls (the client should time out first).
        record_requests: keep parsed request bodies in :attr:`requests` (turn off for big
            benchmark payloads).
        parse_bodies: parse request JSON.  When false the server only counts bytes, which
            keeps server CPU out of client benchmarks; key-based faults then never match.
        reasoning: optional fixed ``reasoning_content`` to add to every answer.
        refuse_connections: reset every connection at once (no request is read or counted
            as a chat request; :attr:`connection_count` still counts them).
    """

    def __init__(
        self,
        latency_s: float = 0.0,
        faults: FaultSpec = None,
        responder: Callable[[dict[str, Any] | None], str | Mapping[str, Any]] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model_name: str | None = None,
        retry_after_s: float | None = 1.0,
        timeout_sleep_s: float = 3600.0,
        record_requests: bool = True,
        parse_bodies: bool = True,
        reasoning: str | None = None,
        refuse_connections: bool = False,
        embedding_dims: int = 64,
        embedding_faults: Sequence[str] | None = None,
    ) -> None:
        self.latency_s = latency_s
        self.embedding_dims = embedding_dims
        self.embedding_faults = list(embedding_faults or ())
        self._embedding_requests: list[dict[str, Any] | None] = []
        self._embedding_count = 0
        self.responder = responder or default_responder
        self.host = host
        self.model_name = model_name
        self.retry_after_s = retry_after_s
        self.timeout_sleep_s = timeout_sleep_s
        self.record_requests = record_requests
        self.parse_bodies = parse_bodies
        self.reasoning = reasoning
        self.refuse_connections = refuse_connections
        self._fault_fn = self._compile_faults(faults)
        self._requested_port = port

        self._lock = threading.Lock()
        self._requests: list[dict[str, Any] | None] = []
        self._headers: list[dict[str, str]] = []
        self._fault_log: list[tuple[int, str]] = []
        self._chat_count = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._bytes_received = 0
        self._connections = 0

        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.port: int | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeOpenAIServer:
        """Start the server thread and wait until the socket is listening."""
        if self._thread is not None:
            return self
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:

                def protocol() -> _DiscardingProtocol:
                    return _DiscardingProtocol(asyncio.StreamReader(limit=1 << 20), self._handle_connection)

                self._server = loop.run_until_complete(
                    loop.create_server(protocol, self.host, self._requested_port, backlog=1024)
                )
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # pragma: no cover - bind failures
                errors.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai-server", daemon=True)
        self._thread.start()
        ready.wait()
        if errors:
            self._thread = None
            raise errors[0]
        return self

    def stop(self) -> None:
        """Stop listening, abort open connections and pending (stalled) handlers, join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for writer in list(self._writers):
                with contextlib.suppress(Exception):
                    writer.transport.abort()
            tasks = [t for t in self._tasks if not t.done()]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            if self._server is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._server.wait_closed(), 2.0)

        if loop.is_running():
            fut = asyncio.run_coroutine_threadsafe(shutdown(), loop)
            with contextlib.suppress(Exception):
                fut.result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._thread = None
        self._loop = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ inspection
    @property
    def base_url(self) -> str:
        """Base URL for OpenAI clients, ending in ``/v1``."""
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any] | None]:
        """Parsed JSON bodies of the chat requests received so far (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def embedding_requests(self) -> list[dict[str, Any] | None]:
        """Parsed bodies of the ``/v1/embeddings`` requests, in arrival order (with
        ``record_requests``; :attr:`embedding_count` counts them either way)."""
        with self._lock:
            return list(self._embedding_requests)

    @property
    def embedding_count(self) -> int:
        with self._lock:
            return self._embedding_count

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """Lower-cased headers of the chat requests received so far (a copy)."""
        with self._lock:
            return [dict(h) for h in self._headers]

    @property
    def fault_log(self) -> list[tuple[int, str]]:
        """``(request index, fault kind)`` for every chat request, in arrival order."""
        with self._lock:
            return list(self._fault_log)

    @property
    def request_count(self) -> int:
        """Number of chat requests received."""
        with self._lock:
            return self._chat_count

    @property
    def connection_count(self) -> int:
        """Number of TCP connections accepted (including refused ones)."""
        with self._lock:
            return self._connections

    @property
    def in_flight(self) -> int:
        """Chat requests currently being handled."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """Highest number of chat requests handled at the same time."""
        with self._lock:
            return self._max_in_flight

    @property
    def bytes_received(self) -> int:
        """Total size of chat request bodies received."""
        with self._lock:
            return self._bytes_received

    def reset(self) -> None:
        """Forget recorded requests and counters (the fault script position is kept)."""
        with self._lock:
            self._requests.clear()
            self._embedding_requests.clear()
            self._headers.clear()
            self._fault_log.clear()
            self._max_in_flight = self._in_flight
            self._bytes_received = 0
            self._connections = 0

    # ------------------------------------------------------------------ faults
    @staticmethod
    def _compile_faults(faults: FaultSpec) -> Callable[[int, dict | None], FaultLike]:
        if faults is None:
            return lambda index, body: "ok"
        if callable(faults):
            return faults
        if isinstance(faults, Mapping):
            return faults_by_key(faults)
        if isinstance(faults, (str, bytes)):
            raise TypeError("faults must be a sequence of kinds, not a single string")
        script = list(faults)
        for item in script:
            if isinstance(item, str):
                Fault(item)  # validate early
        return lambda index, body: script[index] if index < len(script) else "ok"

    def _decide(self, index: int, body: dict | None) -> Fault:
        raw = self._fault_fn(index, body)
        if raw is None:
            return Fault("ok")
        if isinstance(raw, Fault):
            return raw
        fault = Fault(str(raw))
        if fault.kind == "429":
            return Fault("429", retry_after=self.retry_after_s)
        return fault

    # ------------------------------------------------------------------ HTTP
    async def _handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._writers.add(writer)
        with self._lock:
            self._connections += 1
        try:
            if self.refuse_connections:
                sock = writer.get_extra_info("socket")
                if sock is not None:  # linger 0: close() sends a RST, not a FIN
                    with contextlib.suppress(OSError):
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:
                    await self._write(writer, 431, {"error": {"message": "headers too large"}}, keep_alive=False)
                    return
                try:
                    method, target, version, headers = self._parse_head(head)
                    keep = self.parse_bodies or self.record_requests or not target.startswith("/v1/chat/completions")
                    body = await self._read_body(reader, headers, keep=keep)
                except _HTTPError as exc:
                    await self._write(writer, 400, {"error": {"message": str(exc)}}, keep_alive=False)
                    return
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                keep_alive = await self._route(method, target, headers, body, writer, keep_alive)
                if not keep_alive:
                    return
        except asyncio.CancelledError:
            # Only stop() cancels handlers.  Swallow it: asyncio's stream callback would
            # otherwise log a spurious traceback for a cancelled connection task.
            return
        except Exception:  # pragma: no cover - defensive: a broken connection must not kill the server
            return
        finally:
            self._writers.discard(writer)
            if task is not None:
                self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    @staticmethod
    def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
        try:
            text = head.decode("latin-1")
            request_line, *header_lines = text.split("\r\n")
            method, target, version = request_line.split(" ", 2)
        except ValueError as exc:
            raise _HTTPError("bad request line") from exc
        headers: dict[str, str] = {}
        for line in header_lines:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep:
                raise _HTTPError("bad header line")
            headers[name.strip().lower()] = value.strip()
        return method.upper(), target, version.strip(), headers

    @staticmethod
    async def _read_exactly(reader: asyncio.StreamReader, n: int, keep: bool) -> bytes | int:
        if keep:
            return await reader.readexactly(n)
        await reader._memlens_protocol.discard(n)  # type: ignore[attr-defined]  # counted, not copied
        return n

    async def _read_body(
        self, reader: asyncio.StreamReader, headers: Mapping[str, str], *, keep: bool = True
    ) -> bytes | int:
        """Read the request body; with ``keep=False`` it is discarded and its size returned."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks = bytearray()
            total = 0
            while True:
                size_line = await reader.readuntil(b"\r\n")
                try:
                    size = int(size_line.split(b";", 1)[0].strip(), 16)
                except ValueError as exc:
                    raise _HTTPError("bad chunk size") from exc
                if size == 0:
                    # trailers until an empty line
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass
                    return bytes(chunks) if keep else total
                data = await self._read_exactly(reader, size, keep)
                if keep:
                    chunks += data  # type: ignore[operator]
                total += size
                await reader.readexactly(2)
        length = headers.get("content-length")
        if not length:
            return b"" if keep else 0
        try:
            n = int(length)
        except ValueError as exc:
            raise _HTTPError("bad content-length") from exc
        if n <= 0:
            return b"" if keep else 0
        return await self._read_exactly(reader, n, keep)

    async def _write(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: Any,
        *,
        keep_alive: bool,
        extra_headers: Mapping[str, str] | None = None,
        raw_body: bytes | None = None,
        declared_length: int | None = None,
    ) -> None:
        body = raw_body if raw_body is not None else _dumps(payload)
        length = declared_length if declared_length is not None else len(body)
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            "content-type: application/json",
            f"content-length: {length}",
            f"connection: {'keep-alive' if keep_alive else 'close'}",
        ]
        for name, value in (extra_headers or {}).items():
            lines.append(f"{name}: {value}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            writer.write(head + body)
            await writer.drain()
        except (ConnectionError, RuntimeError):
            pass

    async def _route(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes | int,
        writer: asyncio.StreamWriter,
        keep_alive: bool,
    ) -> bool:
        path = target.split("?", 1)[0].rstrip("/")
        if path == "/v1/chat/completions":
            if method != "POST":
                await self._write(writer, 405, {"error": {"message": "method not allowed"}}, keep_alive=keep_alive)
                return keep_alive
            return await self._chat(headers, body, writer, keep_alive)
        if method == "POST" and path == "/v1/embeddings":
            return await self._embeddings(body, writer, keep_alive)
        if method == "GET" and path in ("/v1/models", "/models"):
            models = [
                {"id": self.model_name or "fake-model", "object": "model", "created": 0, "owned_by": "memlens-fake"}
            ]
            await self._write(writer, 200, {"object": "list", "data": models}, keep_alive=keep_alive)
            return keep_alive
        if method == "GET" and path == "/health":
            await self._write(writer, 200, {"status": "ok"}, keep_alive=keep_alive)
            return keep_alive
        await self._write(
            writer, 404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}}, keep_alive=keep_alive
        )
        return keep_alive

    async def _embeddings(self, raw: bytes | int, writer: asyncio.StreamWriter, keep_alive: bool) -> bool:
        try:
            body = _loads(raw) if isinstance(raw, bytes) else None
            inputs = body.get("input") if isinstance(body, dict) else None
            if isinstance(inputs, str):
                inputs = [inputs]
            if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
                raise ValueError("input must be a string or a list of strings")
        except ValueError as exc:
            await self._write(
                writer, 400, {"error": {"message": str(exc), "type": "invalid_request_error"}}, keep_alive=keep_alive
            )
            return keep_alive
        with self._lock:
            index = self._embedding_count
            self._embedding_count += 1
            if self.record_requests:
                self._embedding_requests.append(body)
        fault = self.embedding_faults[index] if index < len(self.embedding_faults) else "ok"
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        if fault != "ok":
            payload = {"error": {"message": f"injected {fault}", "type": "server_error", "code": int(fault)}}
            await self._write(writer, int(fault), payload, keep_alive=keep_alive)
            return keep_alive
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(t, self.embedding_dims)}
            for i, t in enumerate(inputs)
        ]
        tokens = sum(max(1, len(_words(t))) for t in inputs)
        payload = {
            "object": "list",
            "data": data,
            "model": body.get("model") or "fake-embedder",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        await self._write(writer, 200, payload, keep_alive=keep_alive)
        return keep_alive

    async def _chat(
        self, headers: dict[str, str], raw: bytes | int, writer: asyncio.StreamWriter, keep_alive: bool
    ) -> bool:
        parsed: dict[str, Any] | None = None
        parse_error: str | None = None
        size = raw if isinstance(raw, int) else len(raw)
        if self.parse_bodies and isinstance(raw, bytes):
            try:
                value = _loads(raw)
                if isinstance(value, dict):
                    parsed = value
                else:
                    parse_error = "request body must be a JSON object"
            except ValueError as exc:
                parse_error = f"invalid JSON body: {exc}"
        with self._lock:
            index = self._chat_count
            self._chat_count += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            self._bytes_received += size
            if self.record_requests:
                self._requests.append(parsed)
                self._headers.append(dict(headers))
        try:
            if parse_error is not None:
                with self._lock:
                    self._fault_log.append((index, "400"))
                await self._write(
                    writer,
                    400,
                    {"error": {"message": parse_error, "type": "invalid_request_error"}},
                    keep_alive=keep_alive,
                )
                return keep_alive
            fault = self._decide(index, parsed)
            with self._lock:
                self._fault_log.append((index, fault.kind))
            if fault.kind == "timeout":
                await asyncio.sleep(fault.sleep_s if fault.sleep_s is not None else self.timeout_sleep_s)
                fault = Fault("ok")
            elif self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            return await self._answer(fault, parsed, writer, keep_alive)
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _answer(
        self, fault: Fault, body: dict[str, Any] | None, writer: asyncio.StreamWriter, keep_alive: bool
    ) -> bool:
        kind = fault.kind
        if kind == "disconnect":
            writer.transport.abort()
            return False
        if kind.isdigit():
            status = int(kind)
            extra: dict[str, str] = {}
            if status == 429 and fault.retry_after is not None:
                extra["retry-after"] = f"{fault.retry_after:g}"
            err_type = {429: "rate_limit_error", 400: "invalid_request_error", 401: "authentication_error"}.get(
                status, "server_error"
            )
            payload = {"error": {"message": f"injected {status}", "type": err_type, "code": status}}
            await self._write(writer, status, payload, keep_alive=keep_alive, extra_headers=extra)
            return keep_alive
        if kind == "malformed":
            await self._write(
                writer, 200, None, keep_alive=keep_alive, raw_body=b'{"id": "chatcmpl-broken", "choices": [{"mess'
            )
            return keep_alive
        try:
            completion = self._completion(body)
        except Exception as exc:  # a broken responder is reported, not a dropped connection
            payload = {"error": {"message": f"responder raised {type(exc).__name__}: {exc}", "type": "server_error"}}
            await self._write(writer, 500, payload, keep_alive=keep_alive)
            return keep_alive
        if kind == "empty_choices":
            completion["choices"] = []
            await self._write(writer, 200, completion, keep_alive=keep_alive)
            return keep_alive
        if kind == "trickle":
            return await self._trickle(writer, _dumps(completion), fault.sleep_s or 0.2)
        if kind == "truncated":
            data = _dumps(completion)
            await self._write(
                writer, 200, None, keep_alive=False, raw_body=data[: len(data) // 2], declared_length=len(data) + 64
            )
            writer.transport.abort()
            return False
        await self._write(writer, 200, completion, keep_alive=keep_alive)
        return keep_alive

    async def _trickle(self, writer: asyncio.StreamWriter, data: bytes, every_s: float) -> bool:
        head = (
            f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"
            "connection: close\r\n\r\n"
        ).encode("latin-1")
        try:
            writer.write(head)
            await writer.drain()
            for i in range(len(data)):
                writer.write(data[i : i + 1])
                await writer.drain()
                await asyncio.sleep(every_s)
        except (ConnectionError, RuntimeError):
            pass
        return False

    def _completion(self, body: dict[str, Any] | None) -> dict[str, Any]:
        answer = self.responder(body)
        if isinstance(answer, Mapping):
            content = answer.get("content")
            reasoning = answer.get("reasoning_content", self.reasoning)
            finish_reason = answer.get("finish_reason", "stop")
            completion_tokens = answer.get("completion_tokens")
        else:
            content, reasoning, finish_reason, completion_tokens = str(answer), self.reasoning, "stop", None
        if completion_tokens is None:
            completion_tokens = max(1, len(content or "") // 4)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        prompt_tokens = _estimate_prompt_tokens(body)
        model = self.model_name or (body or {}).get("model") or "fake-model"
        return {
            "id": f"chatcmpl-fake-{self._chat_count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
