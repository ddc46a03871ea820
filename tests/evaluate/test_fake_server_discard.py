"""The stand-in server's no-parse mode: request bodies are counted and dropped without copies,
and the connection stays in step (keep-alive requests after a dropped body are read correctly)."""

from __future__ import annotations

import json
import socket

import pytest

from tests.support.fake_openai import FakeOpenAIServer


def _post(sock: socket.socket, body: bytes, *, chunked: bool = False) -> dict:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
    if chunked:
        half = len(body) // 2
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:half], body[half:]) if p) + b"0\r\n\r\n"
        sock.sendall(head + b"transfer-encoding: chunked\r\n\r\n" + payload)
    else:
        sock.sendall(head + b"content-length: %d\r\n\r\n" % len(body) + body)
    reader = sock.makefile("rb")
    status = reader.readline()
    assert status.startswith(b"HTTP/1.1 200"), status
    length = 0
    while (line := reader.readline()) != b"\r\n":
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(reader.read(length))


@pytest.mark.parametrize("sizes", [[10, 3 << 20, 1 << 20, (1 << 20) + 1, 7, 5 << 20 | 3]])
def test_dropped_bodies_are_counted_and_the_connection_stays_in_step(sizes):
    with FakeOpenAIServer(parse_bodies=False, record_requests=False) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            for i, n in enumerate(sizes):
                body = json.dumps({"model": "m", "pad": "x" * n}).encode()
                answer = _post(sock, body, chunked=i % 2 == 1)
                assert answer["choices"][0]["message"]["content"]
        assert server.request_count == len(sizes)
        expected = sum(len(json.dumps({"model": "m", "pad": "x" * n}).encode()) for n in sizes)
        assert server.bytes_received == expected


def test_a_client_gone_mid_body_does_not_stop_the_server():
    with FakeOpenAIServer(parse_bodies=False, record_requests=False) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ncontent-length: 9999999\r\n\r\nabc")
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            assert _post(sock, b'{"model": "m"}')["choices"]
        assert server.request_count == 1
