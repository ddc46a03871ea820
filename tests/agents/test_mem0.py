"""The Mem0 agent: the real mem0ai 2.0.4 in ``.venv-mem0`` (``make install-mem0``), driven through
``memlens evaluate`` on the tiny benchmark against the stand-in server (chat + ``/v1/embeddings``).

The end-to-end tests need ``.venv-mem0`` (``make test`` installs it; they are skipped, saying so,
when it is absent). Checked: each question's store holds memories of its own sessions only, the
retrieved session ids come back, the answer is the server's, a killed worker is a recorded failure
that a re-run retries, the key travels only through the environment, the worker's sockets reach
only the configured endpoints, a missing environment is a clear error.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memlens.core.config import Paths
from memlens.core.errors import ConfigError
from memlens.core.items import BuiltBenchmark
from memlens.eval.agents import mem0_worker
from memlens.eval.agents.mem0 import PROMPTS, Mem0Agent
from memlens.eval.agents.view import render_turn
from tests.agents.agent_support import mem0_responder, predictions, run_evaluate
from tests.support.fake_openai import FakeOpenAIServer, default_responder, message_text
from tests.support.results import stored_records

REPO = Path(__file__).resolve().parents[2]
MEM0_PY = REPO / ".venv-mem0" / "bin" / "python"
needs_mem0 = pytest.mark.skipif(
    not MEM0_PY.is_file(), reason=f"{MEM0_PY} missing: `make install-mem0` creates the Mem0 environment"
)


def _args(server, *extra: str) -> tuple[str, ...]:
    return (
        "eval.lengths=[32k]",
        f"model.worker_python={MEM0_PY}",
        f"model.embedder_base_url={server.base_url}",
        "model.embedder_model=fake-embedder",
        "model.embedding_dims=64",
        *extra,
    )


def _user_texts(item) -> dict[str, str]:
    """``user message as mem0 is sent it -> benchmark session id`` of one question's history."""
    out = {}
    for s in item.sessions:
        for t in s.turns:
            if t.role == "user":
                text = render_turn(t)
                if text:
                    out[PROMPTS["message"].format(date=s.date, text=text)] = s.session_id
    return out


def _answer_request(bodies, question: str) -> dict:
    hits = [
        b
        for b in bodies
        if b["messages"][0]["content"] == PROMPTS["system"] and f"\nQuestion: {question}\n" in message_text(b)
    ]
    assert len(hits) == 1, f"{len(hits)} answer calls for {question!r}"
    return hits[0]


@needs_mem0
def test_mem0_end_to_end(tiny_copy, monkeypatch):
    """Two questions on one worker process (concurrency 1, reused): each in its own fresh store."""
    root = tiny_copy
    monkeypatch.setenv("MEMLENS_TEST_MEM0_KEY", "sk-test-0123456789")
    processes = set()
    acquire = Mem0Agent.acquire_worker

    async def counting(self):
        w = await acquire(self)
        processes.add(w.proc.pid)
        return w

    monkeypatch.setattr(Mem0Agent, "acquire_worker", counting)
    with FakeOpenAIServer(responder=mem0_responder) as server:
        args = ("eval.max_items=2", "model.concurrency=1", "model.api_key_env=MEMLENS_TEST_MEM0_KEY")
        assert run_evaluate(root, server, "mem0", *_args(server, *args)) == 0
        bodies, headers, embeds = server.requests, server.request_headers, server.embedding_requests
    assert len(processes) == 1  # the second question reused the first one's worker
    preds = predictions(root, "mem0")
    assert len(preds) == 2 and all(p["ok"] for p in preds.values()), preds
    items = {it.question_id: it for it in BuiltBenchmark(Paths(root)).items("32k")}
    extraction = [b for b in bodies if b["messages"][-1]["content"].rstrip().endswith("# Output:")]
    assert extraction and all(b.get("response_format") == {"type": "json_object"} for b in extraction)
    calls = 0
    for qid, p in preds.items():
        item, meta = items[qid], p["meta"]
        own = _user_texts(item)
        # what mem0 stored = one memory per user message of this question's own sessions, no more
        assert meta["memory"]["items"] == meta["agent"]["memories_added"] == len(own), (qid, meta)
        assert meta["memory"]["bytes"] == sum(len(f"User said {t}".encode()) for t in own)
        assert meta["sessions_ingested"] == len(item.sessions)
        history = {s.session_id for s in item.sessions}
        got = [r["session_id"] for r in meta["retrieved"]]
        assert got and set(got) <= history and len(got) == len(set(got))
        assert [r["rank"] for r in meta["retrieved"]] == list(range(1, len(got) + 1))
        # the answer is the server's answer to the answer call, whose memory lines carry session dates
        body = _answer_request(bodies, item.question.question)
        assert p["raw_prediction"] == default_responder(body)
        assert body["temperature"] == 0.0 and body["max_tokens"] == 2048
        dates = {s.date for s in item.sessions}
        stamps = re.findall(r"\(timestamp: ([^;]+); score: [0-9.]+\)", message_text(body))
        assert stamps and set(stamps) <= dates
        assert item.question.question_date in message_text(body)
        calls += meta["usage"]["model_calls"]
        assert meta["agent"]["embedding_calls"] > 0
        assert meta["agent"]["refused_connections"] == 0  # mem0 tried no other address
    # every chat request was counted once (extraction + answer), the memories came from mem0's calls
    assert calls == len(bodies) == len(extraction) + 2
    for b in extraction:  # each extraction call sees only dated messages of one history
        new = b["messages"][-1]["content"].split("## New Messages", 1)[1].split("## Observation Date", 1)[0]
        lines = [ln.split(": ", 1)[1] for ln in new.strip().splitlines() if ln.startswith(("user: ", "assistant: "))]
        assert lines and all(ln.startswith("[") for ln in lines)
        assert any(set(ln for ln in lines if ln in _user_texts(it)) for it in items.values())
    assert embeds and all(e["model"] == "fake-embedder" for e in embeds)
    # the key went only through the environment: sent as the bearer token, written nowhere
    assert all(h.get("authorization") == "Bearer sk-test-0123456789" for h in headers)
    for f in root.rglob("*"):
        if f.is_file() and f.stat().st_size < 50_000_000:
            assert b"sk-test-0123456789" not in f.read_bytes(), f
    # no benchmark session id reaches the endpoints
    sent = "\n".join(json.dumps(b) for b in [*bodies, *embeds])
    for sid in BuiltBenchmark(Paths(root)).sessions:
        assert sid not in sent


def _kill_mem0_workers() -> int:
    """SIGKILL this process's mem0 worker children; how many."""
    killed = 0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (d / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"mem0_worker.py" in cmd:
            os.kill(int(d.name), signal.SIGKILL)
            killed += 1
    return killed


@needs_mem0
def test_a_rerun_costs_zero_calls_and_the_extraction_prompt_is_dated_by_the_session(tiny_copy):
    """mem0's own extraction and embedding calls go through the worker's call cache: with the
    answers gone from the results store (a crash before they were recorded), a re-run replays every
    call from the caches and sends nothing; the prompts carry the session's date, not today's."""
    import shutil

    root = tiny_copy
    with FakeOpenAIServer(responder=mem0_responder) as server:
        run = ("eval.max_items=2", "model.concurrency=2")
        assert run_evaluate(root, server, "mem0", *_args(server, *run)) == 0
        first = (server.request_count, len(server.embedding_requests))
        bodies = server.requests
        view = (root / "data/predictions/mem0/standard/32k.jsonl").read_bytes()
        shutil.rmtree(root / ".memlens_cache" / "results")
        assert run_evaluate(root, server, "mem0", *_args(server, *run)) == 0
        assert (server.request_count, len(server.embedding_requests)) == first
    assert first[0] > 2 and first[1] > 0
    assert (root / "data/predictions/mem0/standard/32k.jsonl").read_bytes() == view
    items = {it.question_id: it for it in BuiltBenchmark(Paths(root)).items("32k")}
    iso = {s.date: s.date[:10].replace("/", "-") for it in items.values() for s in it.sessions}
    extraction = [c for b in bodies if (c := b["messages"][-1]["content"]).rstrip().endswith("# Output:")]
    assert extraction
    for text in extraction:  # the observation date is the date its messages are prefixed with
        observed = text.rsplit("## Observation Date\n", 1)[1].split("\n", 1)[0]
        current = text.rsplit("## Current Date\n", 1)[1].split("\n", 1)[0]
        assert observed == current and observed in iso.values(), (observed, current)
        stamps = set(re.findall(r"\[(\d{4}/\d\d/\d\d \(\w{3}\) \d\d:\d\d)\]", text.rsplit("## New Messages", 1)[1]))
        assert stamps and {iso[d] for d in stamps} == {observed}
    rec = stored_records(root)
    assert len(rec) == 2
    for r in rec:
        assert r["meta"]["timing"]["cache_hits"] == r["meta"]["usage"]["model_calls"] > 1
        assert r["meta"]["timing"]["embedding_cache_hits"] == r["meta"]["agent"]["embedding_calls"] > 0


@needs_mem0
def test_observation_date_clock_keeps_mem0s_own_date(tiny_copy):
    from datetime import UTC, datetime

    days = {datetime.now(UTC).date().isoformat()}
    with FakeOpenAIServer(responder=mem0_responder) as server:
        run = ("eval.max_items=1", "model.observation_date=clock", "model.cache_calls=false")
        assert run_evaluate(tiny_copy, server, "mem0", *_args(server, *run)) == 0
        bodies = server.requests
    days.add(datetime.now(UTC).date().isoformat())  # a run across midnight
    dated = [
        b["messages"][-1]["content"] for b in bodies if b["messages"][-1]["content"].rstrip().endswith("# Output:")
    ]
    assert dated and all(t.rsplit("## Observation Date\n", 1)[1][:10] in days for t in dated)


@needs_mem0
@pytest.mark.slow
def test_a_killed_worker_is_a_recorded_failure_and_a_rerun_retries_it(tiny_copy):
    root = tiny_copy
    kills: list[int] = []

    def responder(body):
        if not kills and b"## New Messages" in json.dumps(body).encode():
            kills.append(_kill_mem0_workers())  # one worker alive (concurrency 1): that question dies
        return mem0_responder(body)

    args = ("eval.max_items=2", "eval.max_failure_rate=0.5", "model.concurrency=1")
    with FakeOpenAIServer(responder=responder) as server:
        assert run_evaluate(root, server, "mem0", *_args(server, *args)) == 0
    assert kills == [1]
    preds = predictions(root, "mem0")
    failed = [p for p in preds.values() if not p["ok"]]
    assert len(preds) == 2 and len(failed) == 1, preds
    assert "mem0 worker exited (status -9)" in failed[0]["error"] and failed[0]["prediction"] is None
    with FakeOpenAIServer(responder=mem0_responder) as healthy:
        assert run_evaluate(root, healthy, "mem0", *_args(healthy, *args)) == 0
        assert len([b for b in healthy.requests if b["messages"][0]["content"] == PROMPTS["system"]]) == 1
    assert all(p["ok"] for p in predictions(root, "mem0").values())


@needs_mem0
def test_wrong_embedding_dims_fail_the_question_with_a_clear_message(tiny_copy):
    root = tiny_copy
    with FakeOpenAIServer(responder=mem0_responder, embedding_dims=48) as server:
        run_evaluate(root, server, "mem0", *_args(server, "eval.max_items=1", "eval.max_failure_rate=1"))
    (p,) = predictions(root, "mem0").values()
    assert not p["ok"] and "48-dimensional vectors, model.embedding_dims is 64" in p["error"]


@needs_mem0
@pytest.mark.slow
def test_a_hung_worker_request_times_out_as_a_failure(tiny_copy):
    """The first extraction call stalls (the server sleeps 30 s): the add never returns, the
    question fails after worker_timeout_s and its worker is killed (no process is left)."""
    root = tiny_copy

    def faults(index, body):
        return "timeout" if index == 0 else "ok"

    with FakeOpenAIServer(responder=mem0_responder, faults=faults, timeout_sleep_s=30) as server:
        args = ("eval.max_items=1", "eval.max_failure_rate=1", "model.worker_timeout_s=1.5")
        run_evaluate(root, server, "mem0", *_args(server, *args))
    (p,) = predictions(root, "mem0").values()
    assert not p["ok"] and "no reply to 'add' within 1.5 s (worker_timeout_s)" in p["error"]
    assert _kill_mem0_workers() == 0


def test_a_missing_mem0_environment_stops_the_run_with_the_install_hint(tiny_copy, capsys):
    root = tiny_copy
    with FakeOpenAIServer(responder=mem0_responder) as server:
        rc = run_evaluate(
            root, server, "mem0", "eval.lengths=[32k]", "eval.max_items=1", "model.worker_python=.venv-none/bin/python"
        )
        assert server.request_count == 0 and server.embedding_requests == []
    assert rc != 0
    err = capsys.readouterr().err
    assert "make install-mem0" in err and ".venv-none/bin/python" in err


def test_an_environment_without_mem0_is_refused_before_any_request(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    agent = Mem0Agent(worker_python=str(venv / "bin" / "python"))
    with pytest.raises(ConfigError, match=r"mem0ai is not installed, 2\.0\.4 required: run `make install-mem0`"):
        agent.check()
    meta = venv / "lib" / "python3.11" / "site-packages" / "mem0ai-1.0.0.dist-info" / "METADATA"
    meta.parent.mkdir(parents=True)
    meta.write_text("Metadata-Version: 2.1\nName: mem0ai\nVersion: 1.0.0\n")
    with pytest.raises(ConfigError, match=r"mem0ai 1\.0\.0 installed, 2\.0\.4 required"):
        agent.check()


def test_the_worker_reaches_only_the_configured_endpoints():
    """The worker's socket guard (installed before mem0 is imported): the endpoints' address
    connects, any other is refused. Run in a child of the main interpreter (the module is stdlib)."""
    with FakeOpenAIServer() as server, FakeOpenAIServer() as other:
        code = f"""
import runpy, socket, sys
w = runpy.run_path({str(Path(mem0_worker.__file__))!r})
w["guard_network"](w["endpoint_addresses"]([{server.base_url!r}]))
socket.create_connection(("127.0.0.1", {server.port}), timeout=5).close()
try:
    socket.create_connection(("127.0.0.1", {other.port}), timeout=5)
except PermissionError as exc:
    print("refused:", exc)
"""
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
        assert other.connection_count == 0
    assert out.returncode == 0, out.stderr
    assert f"refused: mem0 worker: connection to 127.0.0.1:{other.port} refused" in out.stdout


@needs_mem0
def test_the_version_check_imports_mem0_offline_without_touching_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "MEM0_TELEMETRY": "False"}
    out = subprocess.run(
        [str(MEM0_PY), "-I", mem0_worker.__file__, "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["mem0"] == mem0_worker.MEM0_VERSION == "2.0.4"
    assert list(home.iterdir()) == []  # no ~/.mem0 (mem0 writes its config under MEM0_DIR, a temp dir)
