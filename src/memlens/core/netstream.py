"""Request bodies written without per-chunk event-loop overhead (the evaluation client's connections).

httpcore sends a request body chunk by chunk through anyio, and the client's bodies have many
chunks: the text between two images, then one image's cached data URL, and so on (a 64K-token
request of the small release has about 90). Each anyio write opens a timeout scope, passes a
cancellation checkpoint and goes once round the event loop: about 45 µs of CPU per chunk, some 4 ms of
the client's 11 ms per request, on top of the kernel's copy.

:class:`FastWriteBackend` connects TCP like httpcore's anyio backend; its streams hand a chunk
straight to the asyncio transport when the transport holds nothing unsent. The transport then sends
it at once, or keeps what the socket did not take and pauses writing (anyio sets the transport's
high-water mark to 0). Once writing is paused (the server is not reading fast enough), and for a
closed or failed connection, a write goes through anyio as before: it waits, with the write
timeout, and raises httpcore's ``WriteError``/``WriteTimeout``. So flow control, timeouts and errors
are httpcore's; only the cost of an unhindered write changes. TLS streams (``start_tls``), Unix
sockets and other event loops keep httpcore's own streams.
"""

from __future__ import annotations

from typing import Any

try:  # the pinned openai SDK ships on httpcore2 (httpx2); older releases on httpcore
    from httpcore2._backends.anyio import AnyIOBackend, AnyIOStream
except ImportError:  # pragma: no cover - depends on the installed SDK
    from httpcore._backends.anyio import AnyIOBackend, AnyIOStream  # type: ignore[no-redef]

__all__ = ["FastWriteBackend", "use_fast_writes"]


class _FastWriteStream(AnyIOStream):
    """httpcore's anyio stream whose unhindered writes go straight into the asyncio transport."""

    #: writes handed straight to the transport (tests and benchmarks read it)
    fast_writes = 0

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        stream = self._stream
        transport = getattr(stream, "_transport", None)
        protocol = getattr(stream, "_protocol", None)
        if (
            buffer
            and transport is not None
            and protocol is not None
            and getattr(stream, "_closed", True) is False
            and getattr(protocol, "exception", True) is None
            and protocol.write_event.is_set()
            and not transport.is_closing()
        ):
            transport.write(buffer)
            _FastWriteStream.fast_writes += 1
            return
        await super().write(buffer, timeout)


class FastWriteBackend(AnyIOBackend):
    """httpcore's anyio network backend with :class:`_FastWriteStream` TCP streams."""

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        stream = await super().connect_tcp(*args, **kwargs)
        inner = getattr(stream, "_stream", None)
        return stream if inner is None else _FastWriteStream(inner)


def use_fast_writes(transport: Any) -> bool:
    """Give an ``httpx`` ``AsyncHTTPTransport`` (before its first request) the fast-write backend;
    False (nothing changed) for a transport without a plain connection pool (a proxy's, a mock)."""
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend") or type(pool).__name__ != "AsyncConnectionPool":
        return False
    pool._network_backend = FastWriteBackend()
    return True
