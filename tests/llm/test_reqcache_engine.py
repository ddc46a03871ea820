"""The request cache and the LLM engine against the stand-in server: structured output, JSON
validation, repair, failures, caching, token accounting, keys from the environment."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from memlens.construction.text.llm.engine import Endpoint, LLMEngine, LLMRequestError
from memlens.construction.text.llm.schemas import LEAK_CHECK, QA, parse_json, validate
from memlens.core.errors import ConfigError
from memlens.core.reqcache import CachedCompletion, RequestCache, request_key
from tests.support.fake_openai import FakeOpenAIServer

MSGS = [{"role": "system", "content": "[memlens:leak_check llmgen-v1]"}, {"role": "user", "content": "hello"}]
GOOD = json.dumps({"reveals": False, "reason": "nothing"})


def engine(server, cache=None, **kw) -> LLMEngine:
    ep = Endpoint(
        base_url=server.base_url,
        model="m",
        api_key_env=kw.pop("api_key_env", None),
        price_prompt_per_mtok=1.0,
        price_completion_per_mtok=10.0,
        structured_output=kw.pop("structured_output", True),
    )
    return LLMEngine({"checker": ep}, cache=cache, max_retries=kw.pop("max_retries", 0), **kw)


# ------------------------------------------------------------------------------ cache
def test_request_key_depends_on_model_params_and_messages():
    k = request_key("m", {"temperature": 0.7}, MSGS)
    assert k == request_key("m", {"temperature": 0.7}, [dict(m) for m in MSGS])
    assert k != request_key("m2", {"temperature": 0.7}, MSGS)
    assert k != request_key("m", {"temperature": 0.0}, MSGS)
    assert k != request_key("m", {"temperature": 0.7}, [*MSGS[:1], {"role": "user", "content": "hello!"}])


def test_cache_survives_reopen_and_rejects_a_foreign_file(tmp_path):
    c = RequestCache(tmp_path / "c.sqlite")
    c.put("k", "m", "t", CachedCompletion("text", 3, 4, "stop", "m"))
    c.close()
    again = RequestCache(tmp_path / "c.sqlite")
    assert again.get("k") == CachedCompletion("text", 3, 4, "stop", "m") and again.get("x") is None
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ConfigError, match=r"bad\.sqlite"):
        RequestCache(bad)
    assert bad.read_bytes() == b"this is not a database" * 100  # nothing overwritten


# ------------------------------------------------------------------------------ engine
def test_structured_output_validation_caching_and_accounting(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_GEN_KEY", "sk-secret-123")
    with FakeOpenAIServer(responder=lambda b: GOOD) as srv:
        cache = RequestCache(tmp_path / "c.sqlite")
        e = engine(srv, cache, api_key_env="MY_GEN_KEY")
        v = asyncio.run(e.json("checker", "leak_check:x", MSGS, LEAK_CHECK))
        assert v == {"reveals": False, "reason": "nothing"}
        body = srv.requests[0]
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == LEAK_CHECK
        assert srv.request_headers[0]["authorization"] == "Bearer sk-secret-123"
        first = e.summary()
        assert first["run"]["checker"]["requests"] == 1 and first["run"]["checker"]["prompt_tokens"] > 0
        b = first["build"]["checker"]
        assert b["cost_usd"] == pytest.approx((b["prompt_tokens"] * 1 + b["completion_tokens"] * 10) / 1e6)
        # a second engine on the same cache sends nothing and reports the same build usage
        e2 = engine(srv, cache)
        assert asyncio.run(e2.json("checker", "leak_check:x", MSGS, LEAK_CHECK)) == v
        assert srv.request_count == 1
        s2 = e2.summary()
        assert s2["run"]["checker"]["requests"] == 0 and s2["run"]["checker"]["cache_hits"] == 1
        assert s2["build"] == first["build"]
        cache.close()
    assert b"sk-secret-123" not in (tmp_path / "c.sqlite").read_bytes()


def test_invalid_answer_is_repaired_with_the_errors():
    answers = iter(["Sure, here you go!", json.dumps({"reveals": "no"}), GOOD])
    with FakeOpenAIServer(responder=lambda b: next(answers)) as srv:
        e = engine(srv, structured_output=False)
        v = asyncio.run(e.json("checker", "leak_check:y", MSGS, LEAK_CHECK))
        assert v["reveals"] is False
        assert srv.request_count == 3 and e.usage["checker"].repairs == 2
        assert "response_format" not in srv.requests[0]
        repair = srv.requests[2]["messages"]
        assert repair[-2] == {"role": "assistant", "content": json.dumps({"reveals": "no"})}
        assert "$.reveals: expected boolean" in repair[-1]["content"] and "missing 'reason'" in repair[-1]["content"]


def test_answer_still_invalid_after_repairs_fails_naming_the_request(tmp_path):
    with FakeOpenAIServer(responder=lambda b: "not json") as srv:
        cache = RequestCache(tmp_path / "c.sqlite")
        e = engine(srv, cache, max_repairs=1)
        with pytest.raises(LLMRequestError, match=r"leak_check:z \(checker, request [0-9a-f]{16}\).*not JSON"):
            asyncio.run(e.json("checker", "leak_check:z", MSGS, LEAK_CHECK))
        assert srv.request_count == 2
        f = e.summary()["failures"]
        assert len(f) == 1 and f[0]["task"] == "leak_check:z" and "not JSON" in f[0]["error"]


def test_semantic_check_errors_are_repaired_too():
    answers = iter([json.dumps({"reveals": True, "reason": "r"}), GOOD])
    with FakeOpenAIServer(responder=lambda b: next(answers)) as srv:
        e = engine(srv)
        check = lambda v: ["reveals must be false here"] if v["reveals"] else []  # noqa: E731
        assert asyncio.run(e.json("checker", "t", MSGS, LEAK_CHECK, check=check))["reveals"] is False
        assert "reveals must be false here" in srv.requests[1]["messages"][-1]["content"]


def test_http_failures_are_recorded_and_never_cached(tmp_path):
    with FakeOpenAIServer(responder=lambda b: "fine", faults=["500", "ok"]) as srv:
        cache = RequestCache(tmp_path / "c.sqlite")
        e = engine(srv, cache)
        with pytest.raises(LLMRequestError, match=r"InternalServerError|500"):
            asyncio.run(e.text("checker", "user_turn:s:0", MSGS))
        assert len(cache) == 0 and e.usage["checker"].failures == 1
        assert asyncio.run(engine(srv, cache).text("checker", "user_turn:s:0", MSGS)) == "fine"
        assert srv.request_count == 2 and len(cache) == 1


def test_truncated_completion_is_a_failure():
    srv = FakeOpenAIServer(responder=lambda b: {"content": "cut", "finish_reason": "length"})
    with srv, pytest.raises(LLMRequestError, match="token limit"):
        asyncio.run(engine(srv).text("checker", "t", MSGS))


def test_concurrency_is_bounded_and_used():
    with FakeOpenAIServer(responder=lambda b: "ok", latency_s=0.05) as srv:
        e = engine(srv, concurrency=4)

        async def many():
            r = await asyncio.gather(
                *(e.text("checker", f"t{i}", [{"role": "user", "content": str(i)}]) for i in range(16))
            )
            await e.aclose()
            return r

        assert asyncio.run(many()) == ["ok"] * 16
        assert srv.max_in_flight == 4


# ------------------------------------------------------------------------------ schemas
def test_schema_validator_and_json_parsing():
    ok = {"background": "b", "entities": [], "question": "q", "answer": "a", "evidence_facts": ["f"]}
    assert validate(ok, QA) == []
    bad = {**ok, "entities": [{"name": "x"}], "extra": 1, "answer": ""}
    errs = validate(bad, QA)
    assert "$: unexpected key 'extra'" in errs and "$.answer: empty string" in errs
    assert "$.entities[0]: missing 'anaphor'" in errs
    assert validate({"reveals": 1, "reason": "r"}, LEAK_CHECK) == ["$.reveals: expected boolean, got int"]
    assert parse_json('Here:\n```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json('noise {"a": [1, 2]} trailing') == {"a": [1, 2]}
    with pytest.raises(ValueError, match="empty"):
        parse_json("  ")
    with pytest.raises(ValueError, match="not JSON"):
        parse_json("{oops")


def test_cache_rows_hold_no_request_secrets(tmp_path):
    c = RequestCache(tmp_path / "c.sqlite")
    c.put(request_key("m", {}, MSGS), "m", "t", CachedCompletion("x", 1, 1, "stop", None))
    cols = [r[1] for r in sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA table_info(completions)")]
    assert cols == [
        "key",
        "model",
        "tag",
        "text",
        "prompt_tokens",
        "completion_tokens",
        "finish_reason",
        "served_model",
        "created_at",
    ]


def test_priority_gate_grants_freed_slots_lowest_priority_first():
    from memlens.construction.text.llm.engine import PriorityGate

    async def main():
        gate = PriorityGate(1)
        order = []
        await gate.acquire()  # the only slot is held

        async def wait(p, name):
            await gate.acquire(p)
            order.append(name)
            gate.release()

        tasks = [asyncio.create_task(wait(p, n)) for p, n in ((0, "short"), (-5, "long"), (-1, "mid"))]
        await asyncio.sleep(0)
        cancelled = asyncio.create_task(wait(-9, "cancelled"))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.sleep(0)
        gate.release()
        await asyncio.gather(*tasks)
        return order, gate.free

    order, free = asyncio.run(main())
    assert order == ["long", "mid", "short"] and free == 1


def test_reasoning_api_settings_reach_the_request_body():
    """GPT-5-style endpoints: no temperature, max_completion_tokens instead of max_tokens."""
    with FakeOpenAIServer(responder=lambda b: "ok") as srv:
        ep = Endpoint(
            base_url=srv.base_url,
            model="gpt-x",
            temperature=None,
            token_param="max_completion_tokens",
            max_new_tokens=77,
            extra_body={"reasoning_effort": "low"},
        )
        e = LLMEngine({"user": ep}, max_retries=0)
        assert asyncio.run(e.text("user", "t", MSGS, seed=5)) == "ok"
        body = srv.requests[0]
        assert "temperature" not in body and "max_tokens" not in body and body["max_completion_tokens"] == 77
        assert body["reasoning_effort"] == "low" and body["seed"] == 5 and body["model"] == "gpt-x"
