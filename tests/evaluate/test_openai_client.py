"""Tests of the OpenAI-compatible client against the in-process FakeOpenAIServer."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import random
import re
import time
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from memlens.core import http as http_module
from memlens.core.http import CompletionResult, OpenAICompatibleClient, OpenAICompatibleConfig, run_many
from memlens.core.images import ImageEncoder
from tests.support.fake_openai import FakeOpenAIServer, Fault, default_responder, faults_by_key

SECRET = "sk-test-Secret-123456"


def msgs(text: str = "hello") -> list[dict]:
    return [
        {"role": "system", "content": [{"type": "text", "text": "Answer briefly."}]},
        {"role": "user", "content": [{"type": "text", "text": text}]},
    ]


def make_client(server: FakeOpenAIServer, **cfg) -> OpenAICompatibleClient:
    settings = {"backoff_base_s": 0.01, "backoff_max_s": 0.5, "timeout_s": 5.0, "max_retries": 3, **cfg}
    config = OpenAICompatibleConfig(base_url=server.base_url, model="test-model", **settings)
    return OpenAICompatibleClient(config, rng=random.Random(0))


def retry_counts(server: FakeOpenAIServer) -> list[str | None]:
    """The SDK's ``x-stainless-retry-count`` header of each request: ``"0"`` on the first
    attempt of every ``create()`` call, ``"n"`` on the SDK's own n-th retry."""
    return [h.get("x-stainless-retry-count") for h in server.request_headers]


def complete(client: OpenAICompatibleClient, messages: list[dict], **overrides) -> CompletionResult:
    async def go() -> CompletionResult:
        async with client:
            return await client.complete(messages, **overrides)

    return asyncio.run(go())


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


# ---------------------------------------------------------------------------- success path
def test_success_records_answer_and_usage(server):
    result = complete(make_client(server), msgs("what is up?"))
    assert result.ok and result.error is None and result.attempts == 1
    body = server.requests[0]
    assert result.text == default_responder(body) and result.text.startswith("ANSWER:")
    assert result.finish_reason == "stop"
    assert result.prompt_tokens and result.prompt_tokens > 0
    assert result.completion_tokens and result.completion_tokens > 0
    assert result.served_model == "test-model"
    assert result.latency_s is not None and result.latency_s > 0
    assert result.reasoning is None


def test_reasoning_and_custom_responder():
    def responder(body):
        return {"content": "Paris", "reasoning_content": "capital of France", "finish_reason": "length"}

    with FakeOpenAIServer(responder=responder, model_name="served-name") as srv:
        result = complete(make_client(srv), msgs())
    assert (result.text, result.reasoning, result.finish_reason) == ("Paris", "capital of France", "length")
    assert result.served_model == "served-name"


def test_request_body_fields(server):
    client = make_client(
        server,
        max_new_tokens=77,
        temperature=0.3,
        top_p=0.9,
        seed=42,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    messages = msgs("body check")
    assert complete(client, messages).ok
    body = server.requests[0]
    assert body["model"] == "test-model"
    assert body["messages"] == messages
    assert body["temperature"] == 0.3 and body["max_tokens"] == 77
    assert body["top_p"] == 0.9 and body["seed"] == 42
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_optional_fields_omitted_and_overrides(server):
    client = make_client(server)
    assert complete(client, msgs()).ok
    body = server.requests[0]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 2048
    assert "top_p" not in body and "seed" not in body
    # judge API mode: max_completion_tokens instead of max_tokens, no temperature
    assert complete(
        client,
        msgs(),
        max_new_tokens=None,
        temperature=None,
        max_completion_tokens=256,
        model="other",
        extra_body={"x": 1},
    ).ok
    body = server.requests[1]
    assert "max_tokens" not in body and "temperature" not in body
    assert body["max_completion_tokens"] == 256 and body["model"] == "other" and body["x"] == 1


# ---------------------------------------------------------------------------- faults and retries
# HTTP faults are retried inside the SDK call (its retry-count header goes 0, 1); unusable
# 200 answers by this client, with a new SDK call (the header stays 0).
SDK_FAULTS = ["429", "500", "503", "timeout", "truncated", "disconnect"]
OUR_FAULTS = ["malformed", "empty_choices"]


@pytest.mark.parametrize("kind", SDK_FAULTS + OUR_FAULTS)
def test_each_fault_is_retried_then_succeeds(kind):
    fault = Fault("timeout", sleep_s=30) if kind == "timeout" else kind
    timeout = 1.0 if kind == "timeout" else 10.0  # generous: the machine may be busy
    with FakeOpenAIServer(faults=[fault, "ok"], retry_after_s=0.01) as srv:
        result = complete(make_client(srv, timeout_s=timeout), msgs())
        assert srv.fault_log == [(0, kind), (1, "ok")]
        assert retry_counts(srv) == (["0", "1"] if kind in SDK_FAULTS else ["0", "0"])
        assert srv.requests[0] == srv.requests[1]  # the retry resends the same body
    assert result.ok, result.error
    assert result.attempts == 2 and result.text.startswith("ANSWER:")


@pytest.mark.parametrize("kind", ["500", "malformed", "empty_choices", "truncated"])
def test_retries_exhausted_gives_failure_never_an_answer(kind):
    with FakeOpenAIServer(faults=[kind] * 10) as srv:
        result = complete(make_client(srv, max_retries=2), msgs())
        assert srv.request_count == 3
    assert not result.ok and result.text is None and result.reasoning is None
    assert result.attempts == 3 and result.latency_s is None
    assert result.error and ":" in result.error


@pytest.mark.parametrize("status", ["400", "401", "403", "404"])
def test_client_errors_are_not_retried(status):
    with FakeOpenAIServer(faults=[status, "ok"]) as srv:
        result = complete(make_client(srv), msgs())
        assert srv.request_count == 1
    assert not result.ok and result.attempts == 1 and result.text is None
    assert status in result.error


def test_429_with_retry_after_is_retried_by_the_sdk_and_succeeds():
    with FakeOpenAIServer(faults=[Fault("429", retry_after=0.4), "ok"]) as srv:
        client = make_client(srv, backoff_base_s=0.001, backoff_max_s=0.001)  # ours would not wait
        t0 = time.perf_counter()
        result = complete(client, msgs())
        elapsed = time.perf_counter() - t0
        assert retry_counts(srv) == ["0", "1"]  # one create() call, retried by the SDK
    assert result.ok and result.attempts == 2 and result.text.startswith("ANSWER:")
    assert elapsed >= 0.4  # the server's Retry-After, not the SDK's 0.5 s * jitter minimum (0.375)


def test_retry_after_beyond_two_minutes_fails_at_once():
    """The SDK does not wait more than 2 minutes for a server: the request is a recorded failure."""
    with FakeOpenAIServer(faults=[Fault("429", retry_after=600), "ok"]) as srv:
        t0 = time.perf_counter()
        result = complete(make_client(srv), msgs())
        assert time.perf_counter() - t0 < 3 and srv.request_count == 1
    assert not result.ok and result.attempts == 1 and "429" in result.error and result.text is None


def test_unusable_completions_are_retried_by_this_client():
    calls = 0

    def responder(body):
        nonlocal calls
        calls += 1
        return {"content": "" if calls <= 2 else "fine"}  # call 1: the empty_choices answer; 2: empty content

    faults = ["malformed", "empty_choices", "ok", "ok"]
    with FakeOpenAIServer(faults=faults, responder=responder) as srv:
        result = complete(make_client(srv, max_retries=5), msgs(), require_content=True)
        assert srv.fault_log == [(0, "malformed"), (1, "empty_choices"), (2, "ok"), (3, "ok")]
        assert retry_counts(srv) == ["0", "0", "0", "0"]  # each retry is a new SDK call
        assert "require_content" not in srv.requests[0]  # a client option, not a request field
    assert result.ok and result.attempts == 4 and result.text == "fine"
    # without require_content an empty answer is a valid (empty) answer
    with FakeOpenAIServer(responder=lambda body: {"content": None}) as srv:
        result = complete(make_client(srv), msgs())
        assert srv.request_count == 1
    assert result.ok and result.text == "" and result.attempts == 1


def test_empty_content_required_fails_after_the_budget_but_length_cut_is_kept():
    with FakeOpenAIServer(responder=lambda body: {"content": "  "}) as srv:
        result = complete(make_client(srv, max_retries=2), msgs(), require_content=True)
        assert srv.request_count == 3
    assert not result.ok and result.attempts == 3 and result.error.startswith("EmptyContentError")
    with FakeOpenAIServer(responder=lambda body: {"content": None, "finish_reason": "length"}) as srv:
        result = complete(make_client(srv, max_retries=2), msgs(), require_content=True)
        assert srv.request_count == 1
    assert result.ok and result.truncated and result.text == ""


def test_one_retry_budget_for_both_layers():
    """max_retries=3 allows 4 HTTP attempts in all, whoever retries."""
    with FakeOpenAIServer(faults=["malformed", "500", "empty_choices", "503", "ok"], retry_after_s=0.01) as srv:
        result = complete(make_client(srv, max_retries=3), msgs())
        assert srv.request_count == 4
        assert retry_counts(srv) == ["0", "0", "1", "0"]  # ours, SDK call with a 500 then an empty answer, ours
    assert not result.ok and result.attempts == 4 and "503" in result.error


def test_backoff_is_full_jitter_and_seeded(server):
    a, b = (
        make_client(server, backoff_base_s=1.0, backoff_max_s=5.0),
        make_client(server, backoff_base_s=1.0, backoff_max_s=5.0),
    )
    delays_a = [a.backoff_delay(n) for n in range(8)]
    assert delays_a == [b.backoff_delay(n) for n in range(8)]  # same seed, same delays
    for n, d in enumerate(delays_a):
        assert 0.0 <= d <= min(5.0, 1.0 * 2**n)
    assert len(set(delays_a)) == 8


def test_timeout_handling():
    with FakeOpenAIServer(faults=[Fault("timeout", sleep_s=10)] * 5) as srv:
        t0 = time.perf_counter()
        result = complete(make_client(srv, timeout_s=0.2, max_retries=1), msgs())
        elapsed = time.perf_counter() - t0
    assert not result.ok and result.attempts == 2
    assert "Timeout" in result.error
    assert elapsed < 3


def test_connection_refused_is_a_failure_not_an_exception():
    with FakeOpenAIServer() as srv:
        url = srv.base_url
    config = OpenAICompatibleConfig(base_url=url, model="m", max_retries=1, backoff_base_s=0.01, timeout_s=1)
    result = complete(OpenAICompatibleClient(config), msgs())
    assert not result.ok and result.attempts == 2 and result.error.startswith("APIConnectionError")


def test_reset_connections_fail_after_max_retries_counted_by_the_server():
    with FakeOpenAIServer(refuse_connections=True) as srv:
        result = complete(make_client(srv, max_retries=2), msgs())
        assert srv.connection_count == 3 and srv.request_count == 0
    assert not result.ok and result.attempts == 3 and result.text is None and result.latency_s is None
    assert result.error.startswith("APIConnectionError") and "caused by" in result.error


# ---------------------------------------------------------------------------- concurrency
def big_msgs(i: int, mb: float = 1.5) -> list[dict]:
    return msgs(f"question {i} " + "x" * int(mb * (1 << 20)))


def test_large_bodies_are_uploaded_one_at_a_time_and_arrive_intact(monkeypatch):
    events: list[tuple[str, int]] = []

    class Logged(http_module._TurnBody):
        async def __aiter__(self):
            first = True
            async for chunk in super().__aiter__():
                if first:
                    events.append(("start", id(self)))
                    first = False
                yield chunk
            events.append(("end", id(self)))

    monkeypatch.setattr(http_module, "_TurnBody", Logged)
    n = 6
    with FakeOpenAIServer(latency_s=0.05) as srv:
        client = make_client(srv, concurrency=n)
        bodies = {i: client.build_body(big_msgs(i)).to_bytes() for i in range(n)}
        assert all(len(b) >= http_module._TURN_MIN_BYTES for b in bodies.values())
        done: dict[int, CompletionResult] = {}
        client.run_many(((i, big_msgs(i)) for i in range(n)), lambda k, r: done.__setitem__(k, r), progress=False)
        assert srv.bytes_received == sum(len(b) for b in bodies.values())
        received = sorted(srv.requests, key=lambda b: b["messages"][1]["content"][0]["text"][:12])
    assert all(r.ok for r in done.values()) and len(done) == n
    assert received == [json.loads(bodies[i]) for i in range(n)]
    # one upload at a time: every body's first chunk comes after the previous body's last
    assert len(events) == 2 * n
    assert all(events[k][0] == "start" and events[k + 1] == ("end", events[k][1]) for k in range(0, 2 * n, 2))


def test_an_abandoned_upload_gives_the_turn_back(monkeypatch):
    monkeypatch.setattr(http_module, "_TURN_WAIT_S", 30.0)  # a turn kept by a failed upload would stall the rest
    with FakeOpenAIServer(refuse_connections=True) as srv:
        client = make_client(srv, concurrency=4, max_retries=0)
        done: dict[int, CompletionResult] = {}
        t0 = time.perf_counter()
        client.run_many(((i, big_msgs(i)) for i in range(8)), lambda k, r: done.__setitem__(k, r), progress=False)
        elapsed = time.perf_counter() - t0
    assert len(done) == 8 and not any(r.ok for r in done.values())
    assert elapsed < 10.0


def test_complete_many_respects_concurrency_and_is_lazy():
    n, cap = 40, 4
    produced = 0
    done: dict[int, CompletionResult] = {}
    max_ahead = 0

    def gen():
        nonlocal produced, max_ahead
        for i in range(n):
            produced += 1
            max_ahead = max(max_ahead, produced - len(done))
            yield i, msgs(f"question {i}")

    with FakeOpenAIServer(latency_s=0.05) as srv:
        client = make_client(srv, concurrency=cap)
        summary = client.run_many(gen(), lambda k, r: done.__setitem__(k, r), progress=False)
        assert 1 < srv.max_in_flight <= cap
    assert sorted(done) == list(range(n)) and all(r.ok for r in done.values())
    assert summary.total == n and summary.ok == n and summary.failed == 0
    assert max_ahead <= cap  # never more than `concurrency` payloads alive


def test_direct_complete_calls_share_the_cap(server):
    with FakeOpenAIServer(latency_s=0.05) as srv:
        client = make_client(srv, concurrency=3)

        async def go():
            async with client:
                return await asyncio.gather(*(client.complete(msgs(str(i))) for i in range(15)))

        results = asyncio.run(go())
        assert srv.max_in_flight <= 3
    assert all(r.ok for r in results)


def test_complete_many_async_callback_failures_and_progress(capsys):
    faults = faults_by_key({"Q-fail": ["500"] * 10, "Q-flaky": ["503", "429"]})
    seen: list[tuple[str, CompletionResult]] = []

    async def on_result(key, result):
        await asyncio.sleep(0)
        seen.append((key, result))

    async def items():
        for key in ("Q-ok", "Q-fail", "Q-flaky"):
            yield key, msgs(key)

    with FakeOpenAIServer(faults=faults, retry_after_s=0.01) as srv:
        client = make_client(srv, concurrency=2, max_retries=2)

        async def go():
            async with client:
                return await client.complete_many(items(), on_result, progress=True, total=3)

        summary = asyncio.run(go())
    by_key = dict(seen)
    assert by_key["Q-ok"].ok and by_key["Q-ok"].attempts == 1
    assert by_key["Q-flaky"].ok and by_key["Q-flaky"].attempts == 3
    assert not by_key["Q-fail"].ok and by_key["Q-fail"].attempts == 3 and by_key["Q-fail"].text is None
    assert (summary.ok, summary.failed, summary.attempts, summary.truncated) == (2, 1, 7, 0)
    assert "failed=1" in capsys.readouterr().err


def test_truncated_completions_are_kept_and_counted():
    def responder(body):
        return {"content": "partial", "finish_reason": "length"} if "long" in json.dumps(body) else "short"

    out: dict[str, CompletionResult] = {}
    with FakeOpenAIServer(responder=responder) as srv:
        summary = make_client(srv).run_many(
            [("a", msgs("long one")), ("b", msgs("b"))], out.__setitem__, progress=False
        )
    assert out["a"].ok and out["a"].truncated and out["a"].text == "partial" and out["a"].finish_reason == "length"
    assert out["b"].ok and not out["b"].truncated
    assert (summary.ok, summary.truncated) == (2, 1)


def test_on_result_exception_propagates(server):
    def boom(key, result):
        raise OSError("disk full")

    client = make_client(server, concurrency=2)
    with pytest.raises(OSError, match="disk full"):
        client.run_many(((i, msgs()) for i in range(10)), boom, progress=False)


def test_run_many_twice_and_module_helper(server):
    client = make_client(server, concurrency=2)
    out: list[int] = []
    for _ in range(2):  # a new event loop each time
        summary = client.run_many([(i, msgs(str(i))) for i in range(3)], lambda k, r: out.append(k), progress=False)
        assert summary.ok == 3
    cfg = OpenAICompatibleConfig(base_url=server.base_url, model="m")
    assert run_many(cfg, [("a", msgs())], lambda k, r: out.append(k), progress=False).ok == 1
    assert sorted(out[:3]) == [0, 1, 2] and out[-1] == "a"


def test_run_many_refuses_a_running_loop(server):
    client = make_client(server)

    async def go():
        client.run_many([], lambda k, r: None, progress=False)

    with pytest.raises(RuntimeError, match="complete_many"):
        asyncio.run(go())


# ---------------------------------------------------------------------------- secrets
def test_api_key_from_env_sent_but_never_exposed(server, monkeypatch):
    monkeypatch.setenv("MEMLENS_TEST_API_KEY", SECRET)
    client = make_client(server, api_key_env="MEMLENS_TEST_API_KEY")
    result = complete(client, msgs())
    assert server.request_headers[0]["authorization"] == f"Bearer {SECRET}"
    for text in (
        repr(client.config),
        str(client.config),
        repr(client),
        repr(result),
        json.dumps(result.to_dict()),
        json.dumps(client.config.to_dict()),
    ):
        assert SECRET not in text
    assert "MEMLENS_TEST_API_KEY" in repr(client.config)
    assert SECRET not in client._describe(RuntimeError(f"auth failed for {SECRET}"))


def test_missing_key_env_sends_empty(server, monkeypatch):
    monkeypatch.delenv("MEMLENS_UNSET_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-sdk-default-variable")  # never used
    assert complete(make_client(server, api_key_env="MEMLENS_UNSET_KEY"), msgs()).ok
    assert complete(make_client(server), msgs()).ok
    assert [h["authorization"] for h in server.request_headers] == ["Bearer EMPTY", "Bearer EMPTY"]


def test_http_logs_are_debug_and_never_show_the_key(server, monkeypatch, caplog):
    monkeypatch.setenv("MEMLENS_TEST_API_KEY", SECRET)
    with FakeOpenAIServer(faults=["500", "ok"]) as srv:
        with caplog.at_level(logging.INFO):
            assert complete(make_client(srv, api_key_env="MEMLENS_TEST_API_KEY"), msgs()).ok
        info = [r for r in caplog.records if r.name.split(".")[0] in ("openai", "httpx", "httpx2")]
        assert info == []  # "HTTP Request: POST ..." and "Retrying request in ..." are not INFO
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            assert complete(make_client(srv, api_key_env="MEMLENS_TEST_API_KEY"), msgs()).ok
    http_records = [r for r in caplog.records if r.name.split(".")[0] in ("openai", "httpx2")]
    assert any("HTTP Request" in r.getMessage() for r in http_records)
    assert all(r.levelno == logging.DEBUG for r in http_records)
    assert not any(SECRET in r.getMessage() for r in caplog.records)


def test_http_module_uses_no_private_sdk_names():
    source = Path(http_module.__file__).read_text(encoding="utf-8")
    for pattern in (
        r"openai\._",
        r"_base_client",
        r"cast_to",
        r"DefaultAsync\w*Client",
        r"DefaultAioHttpClient",
        r"\.post\(",
        r"_client\._",
    ):
        assert not re.search(pattern, source), f"http.py uses {pattern!r}"
    assert "chat.completions.with_raw_response.create" in source  # the public SDK call


# ---------------------------------------------------------------------------- images
def _image(path, size=(1000, 500)):
    Image.new("RGB", size, (200, 30, 30)).save(path)
    return str(path)


def test_local_images_inlined_as_base64(server, tmp_path):
    path = _image(tmp_path / "a.jpg")
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": path}},
                {"type": "image_url", "image_url": {"url": "https://example.org/x.png"}},
            ],
        }
    ]
    client = make_client(server, max_image_side=100)
    assert complete(client, messages).ok
    blocks = server.requests[0]["messages"][0]["content"]
    url = blocks[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size == (100, 50)
    assert blocks[2]["image_url"]["url"] == "https://example.org/x.png"
    assert messages[0]["content"][1]["image_url"]["url"] == path  # caller's messages untouched
    assert server.requests[0]["messages"] == client.prepare_messages(messages)
    body = client.build_body(messages)
    assert json.loads(body.to_bytes())["messages"] == server.requests[0]["messages"]


def test_body_without_orjson_is_identical(server, tmp_path, monkeypatch):
    from memlens.core import http as oc

    path = _image(tmp_path / "d.png", (40, 20))
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": 'caf\u00e9 "quoted" \x00'},
                {"type": "image_url", "image_url": {"url": path}},
            ],
        }
    ]
    client = make_client(server)
    fast = json.loads(client.build_body(messages).to_bytes())
    monkeypatch.setattr(oc, "_orjson", None)
    slow = client.build_body(messages)
    assert json.loads(slow.to_bytes()) == fast
    assert len(slow.chunks) == 3 and len(slow) == len(slow.to_bytes())
    assert fast["messages"][0]["content"][0]["text"] == 'caf\u00e9 "quoted" \x00'


def test_images_by_url_and_missing_image(server, tmp_path):
    path = _image(tmp_path / "b.png")
    client = make_client(server, image_transport="url")
    assert complete(client, [{"role": "user", "content": [{"type": "image", "image": path}]}]).ok
    assert server.requests[0]["messages"][0]["content"][0]["image_url"]["url"].startswith("file:///")
    missing = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": str(tmp_path / "gone.jpg")}}]}]
    result = complete(make_client(server), missing)
    assert not result.ok and result.attempts == 0 and result.error.startswith("ImageError")
    assert server.request_count == 1  # nothing was sent for the broken request


def test_shared_encoder_cache_across_requests(server, tmp_path):
    path = _image(tmp_path / "c.jpg")
    encoder = ImageEncoder(max_side=64)
    config = OpenAICompatibleConfig(base_url=server.base_url, model="m", concurrency=4)
    client = OpenAICompatibleClient(config, image_encoder=encoder)
    items = [
        (
            i,
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": path}}, {"type": "text", "text": f"q{i}"}],
                }
            ],
        )
        for i in range(8)
    ]
    assert client.run_many(items, lambda k, r: None, progress=False).ok == 8
    info = encoder.cache_info()
    assert info.misses == 1 and info.hits >= 7


# ---------------------------------------------------------------------------- fake server
def test_fake_server_endpoints_and_key_faults():
    with FakeOpenAIServer(model_name="served") as srv:
        root = srv.base_url[: -len("/v1")]
        with urllib.request.urlopen(root + "/health", timeout=5) as r:
            assert r.status == 200
        with urllib.request.urlopen(srv.base_url + "/models", timeout=5) as r:
            assert json.load(r)["data"][0]["id"] == "served"
    decide = faults_by_key({"K1": ["500", "429"], "K2": ["timeout"]})
    assert [decide(0, {"messages": msgs("about K1")}) for _ in range(3)] == ["500", "429", "ok"]
    assert decide(0, {"messages": msgs("K2")}) == "timeout"
    assert decide(0, {"messages": msgs("none")}) == "ok"
    with pytest.raises(ValueError):
        Fault("explode")


def test_config_validation():
    with pytest.raises(ValueError):
        OpenAICompatibleConfig(base_url="http://x/v1", model="m", image_transport="ftp")
    with pytest.raises(ValueError):
        OpenAICompatibleConfig(base_url="http://x/v1", model="m", concurrency=0)


# ---------------------------------------------------------------------------- deadline and size cap
def test_a_trickling_server_is_cut_at_the_total_deadline_not_the_read_timeout():
    """Each byte arrives well within ``timeout_s``, the whole answer would take minutes: the attempt
    ends at ``deadline_s`` and the failure names the deadline."""
    with FakeOpenAIServer(faults=[Fault("trickle", sleep_s=0.05)] * 4) as srv:
        t0 = time.perf_counter()
        result = complete(make_client(srv, timeout_s=3.0, deadline_s=0.6, max_retries=1), msgs())
        elapsed = time.perf_counter() - t0
    assert not result.ok and result.attempts == 2
    assert "DeadlineExceeded" in result.error and "deadline_s=0.6" in result.error
    assert elapsed < 3.5


def test_an_oversized_answer_is_cut_recorded_and_not_retried():
    big = "x" * (3 * 1024 * 1024)
    with FakeOpenAIServer(responder=lambda body: big) as srv:
        result = complete(make_client(srv, max_response_mb=1, max_retries=3), msgs())
        assert srv.request_count == 1  # not asked again: the server would send it again
    assert not result.ok and result.text is None
    assert "ResponseTooLargeError" in result.error and "max_response_mb=1" in result.error
    with FakeOpenAIServer(responder=lambda body: big) as srv:  # under a larger cap the answer is kept whole
        kept = complete(make_client(srv, max_response_mb=8), msgs())
    assert kept.ok and kept.text == big


def test_deadline_and_cap_defaults_fit_thinking_models():
    c = OpenAICompatibleConfig(base_url="http://127.0.0.1:1/v1", model="m")
    assert c.deadline_s >= 1200 and c.max_response_mb >= 4  # 16,384 tokens of thinking at ~10 tokens/s
    for bad in ({"deadline_s": 0}, {"max_response_mb": -1}):
        with pytest.raises(ValueError):
            OpenAICompatibleConfig(base_url="http://127.0.0.1:1/v1", model="m", **bad)
