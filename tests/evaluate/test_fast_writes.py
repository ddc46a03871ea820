"""The client's request-body writes (``memlens.core.netstream``): straight into the transport while
the server keeps up, through anyio (flow control, write timeout) when it does not."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import threading
import time

from memlens.core import netstream
from memlens.core.http import OpenAICompatibleClient, OpenAICompatibleConfig
from tests.support.fake_openai import FakeOpenAIServer


def _client(base_url: str, **cfg) -> OpenAICompatibleClient:
    settings = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0, "max_retries": 0, **cfg}
    return OpenAICompatibleClient(
        OpenAICompatibleConfig(base_url=base_url, model="m", **settings), rng=random.Random(0)
    )


def _chunked_messages(i: int, parts: int = 40) -> list[dict]:
    """A user message of many text blocks (about 200 KB of JSON)."""
    return [
        {"role": "user", "content": [{"type": "text", "text": f"q{i} part {k} " + "y" * 5000} for k in range(parts)]}
    ]


def _run(client: OpenAICompatibleClient, items):
    done = {}
    client.run_many(items, lambda k, r: done.__setitem__(k, r), progress=False)
    return done


def test_bodies_of_many_chunks_arrive_intact_through_the_fast_path(monkeypatch):
    # bodies made of many chunks, as image bodies are: every chunk goes straight to the transport
    from memlens.core import http as http_module

    real_build = OpenAICompatibleClient._build

    def many_chunks(self, messages, s, *, cached_only=False):
        raw = real_build(self, messages, s, cached_only=cached_only).to_bytes()
        return http_module.RequestBody(tuple(raw[k : k + 7000] for k in range(0, len(raw), 7000)))

    monkeypatch.setattr(OpenAICompatibleClient, "_build", many_chunks)
    before = netstream._FastWriteStream.fast_writes
    with FakeOpenAIServer(latency_s=0.01) as srv:
        client = _client(srv.base_url, concurrency=4)
        done = _run(client, ((i, _chunked_messages(i)) for i in range(8)))
        received = {b["messages"][0]["content"][0]["text"].split()[0]: b for b in srv.requests}
    assert len(done) == 8 and all(r.ok for r in done.values())
    for i in range(8):  # what the server parsed is exactly the messages sent
        assert received[f"q{i}"]["messages"] == _chunked_messages(i)
    chunks_per_body = -(-len(json.dumps({"model": "m", "messages": _chunked_messages(0)})) // 7000)
    assert netstream._FastWriteStream.fast_writes - before >= 8 * (chunks_per_body - 1)


class _SilentServer:
    """Accepts connections and never reads a byte (a server that stopped reading)."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self._t = threading.Thread(target=self._accept, daemon=True)
        self._t.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
            self.conns.append(conn)

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def test_a_server_that_stops_reading_fails_the_request_at_the_timeout_and_never_hangs():
    silent = _SilentServer()
    try:
        client = _client(f"http://127.0.0.1:{silent.port}/v1", timeout_s=1.0, deadline_s=20.0)
        # 64 MB in 8 MB text blocks: far more than the socket buffers hold, so writing pauses
        big = [{"role": "user", "content": [{"type": "text", "text": "z" * (8 << 20)} for _ in range(8)]}]
        t0 = time.perf_counter()

        async def go():
            async with client:
                return await client.complete(big)

        result = asyncio.run(go())
        elapsed = time.perf_counter() - t0
    finally:
        silent.close()
    assert not result.ok and result.attempts == 1
    assert "Timeout" in result.error or "timed out" in result.error
    assert elapsed < 15.0  # the write timeout (1 s) ended it, not the 20 s deadline


def test_only_plain_connection_pools_get_the_fast_backend():
    from memlens.core.http import _httpx

    plain = _httpx.AsyncHTTPTransport()
    assert netstream.use_fast_writes(plain) is True
    assert isinstance(plain._pool._network_backend, netstream.FastWriteBackend)
    proxied = _httpx.AsyncHTTPTransport(proxy="http://127.0.0.1:9")
    assert netstream.use_fast_writes(proxied) is False
    assert netstream.use_fast_writes(object()) is False
