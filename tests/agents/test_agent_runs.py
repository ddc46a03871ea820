"""Memory-agent runs: isolation between questions, caches, failures and resume, the agent subset."""

from __future__ import annotations

import json
import re
import shutil

from memlens.construction.export.stage import agent_subset
from memlens.core.config import Paths
from memlens.core.items import BuiltBenchmark
from tests.agents.agent_support import TINY, agent_responder, predictions, run_evaluate
from tests.support.fake_openai import FakeOpenAIServer, message_text
from tests.support.results import stored_records


def _bench(root):
    return BuiltBenchmark(Paths(root))


def test_a_question_memory_holds_only_its_own_sessions(tiny_copy):
    """Memory-T1 sends its whole packed memory in one request: no session of another history may be in it."""
    root = tiny_copy
    with FakeOpenAIServer(responder=agent_responder) as server:
        assert run_evaluate(root, server, "memory-t1", "eval.lengths=[32k]", "model.top_k=50") == 0
        bodies = server.requests
    bench = _bench(root)
    items = {it.question.question: it for it in bench.items("32k")}
    everything = "\n".join(t.content for s in bench.sessions.values() for t in s.turns)
    first_turn = {  # sessions recognisable by their first turn (template sentences can repeat)
        sid: s.turns[0].content
        for sid, s in bench.sessions.items()
        if len(s.turns[0].content) >= 40 and everything.count(s.turns[0].content) == 1
    }
    assert len(bodies) == len(predictions(root, "memory-t1"))
    for body in bodies:
        text = message_text(body)
        question = text.split("\nQuestion: ", 1)[1].split("\n", 1)[0]
        item = items[question]
        own = {s.session_id for s in item.sessions}
        shown = {sid for sid, t in first_turn.items() if t in text}
        assert shown, "the memory block shows sessions"
        assert shown <= own, f"{item.question_id}: sessions of other histories in its memory: {sorted(shown - own)[:3]}"


def test_agents_default_to_the_agent_subset_and_eval_subset_all_overrides(tiny_copy):
    root = tiny_copy
    bench = _bench(root)
    want = set(agent_subset(list(bench.questions.values()))["question_ids"])
    assert 0 < len(want) < len(bench.questions)
    with FakeOpenAIServer(responder=agent_responder) as server:
        assert run_evaluate(root, server, "memory-t1", "eval.lengths=[32k]") == 0
        assert set(predictions(root, "memory-t1")) == want & {it.question_id for it in bench.items("32k")}
        assert run_evaluate(root, server, "memory-t1", "eval.lengths=[32k]", "eval.subset=all") == 0
        assert set(predictions(root, "memory-t1")) == {it.question_id for it in bench.items("32k")}


def test_a_rerun_costs_zero_calls_even_without_the_results_store(tiny_copy):
    root = tiny_copy
    args = ("eval.lengths=[32k]", "eval.max_items=3", "model.chunk_tokens=800")
    with FakeOpenAIServer(responder=agent_responder) as server:
        assert run_evaluate(root, server, "memagent-7b", *args) == 0
        first = server.request_count
        view = (root / "data/predictions/memagent-7b/standard/32k.jsonl").read_bytes()
        assert first > 3 * 2  # several memory rewrites per question
        assert run_evaluate(root, server, "memagent-7b", *args) == 0  # answers reused from the results store
        assert server.request_count == first
        shutil.rmtree(root / ".memlens_cache" / "results")  # answers gone: the call cache replays every call
        assert run_evaluate(root, server, "memagent-7b", *args) == 0
        assert server.request_count == first
    assert (root / "data/predictions/memagent-7b/standard/32k.jsonl").read_bytes() == view
    rec = stored_records(root)
    assert rec and all(r["meta"]["timing"]["cache_hits"] == r["meta"]["usage"]["model_calls"] for r in rec)


def test_a_failed_question_is_recorded_and_a_rerun_resumes_from_its_cached_calls(tiny_copy):
    """MemAgent's final answer call of one question fails (after retries): the item is recorded as
    failed, the others answered; the re-run asks only what is missing: the failed final call."""
    root = tiny_copy
    bench = _bench(root)
    want = sorted(set(agent_subset(list(bench.questions.values()))["question_ids"]))
    items = [it for it in bench.items("32k") if it.question_id in want][:3]
    victim = items[1].question.question
    marker = "Using your memory of a conversation history"
    args = (
        "eval.lengths=[32k]",
        "eval.max_items=3",
        "model.chunk_tokens=800",
        "model.max_retries=0",
        "eval.max_failure_rate=0.5",
    )

    def faults(index, body):
        text = message_text(body)
        return "500" if marker in text and f"Question: {victim}\n" in text else "ok"

    with FakeOpenAIServer(responder=agent_responder, faults=faults) as server:
        assert run_evaluate(root, server, "memagent-7b", *args) == 0
        first = server.request_count
    preds = predictions(root, "memagent-7b")
    failed = [p for p in preds.values() if not p["ok"]]
    assert len(preds) == 3 and len(failed) == 1 and failed[0]["question_id"] == items[1].question_id
    assert "500" in failed[0]["error"] and failed[0]["prediction"] is None
    with FakeOpenAIServer(responder=agent_responder) as healthy:
        assert run_evaluate(root, healthy, "memagent-7b", *args) == 0
        assert healthy.request_count == 1  # the chunk rewrites of the failed question came from the cache
        assert marker in message_text(healthy.requests[0])
    assert all(p["ok"] for p in predictions(root, "memagent-7b").values())
    assert first > 1


def test_different_settings_never_share_answers(tiny_copy):
    root = tiny_copy
    with FakeOpenAIServer(responder=agent_responder) as server:
        assert run_evaluate(root, server, "memory-t1", "eval.lengths=[32k]", "eval.max_items=2") == 0
        n = server.request_count
        assert run_evaluate(root, server, "memory-t1", "eval.lengths=[32k]", "eval.max_items=2", "model.top_k=3") == 0
        assert server.request_count == 2 * n  # a new setting: asked again (new prompts)
        systems = [json.loads(p.read_text()) for p in (root / ".memlens_cache/results").glob("*/system.json")]
    assert len(systems) == 2
    for s in systems:
        ident = s["identity"]
        assert ident["+adapter_id"] == "markers/v1" and len(ident["+agent_protocol"]) == 64
        assert "base_url" not in ident and "concurrency" not in ident


def test_the_dry_run_of_an_agent_shows_its_identity_and_the_key_its_answer_is_stored_under(tiny_copy, capsys):
    from memlens.cli import main

    root = tiny_copy
    base = ["evaluate", "--root", str(root), *TINY, "model=memory-t1", "eval.lengths=[32k]"]

    def dry(*extra: str) -> str:
        assert main([*base, *extra, "--dry-run"]) == 0
        return capsys.readouterr().out

    before = sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*"))
    out = dry()
    # nothing written, nothing sent (no server runs)
    assert sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*")) == before
    assert "memory agent MemoryT1Agent" in out and "retriever bm25 over sessions, top 10" in out
    assert "adapter markers (markers/v1)" in out and "model qwen2.5-3b-instruct" in out
    assert '    +adapter_id = "markers/v1"' in out and "    top_k = 10" in out and "    +agent_protocol = " in out
    assert "[1] system" not in out  # no LVLM prompt: the agent writes its own
    system = re.search(r"^identity     system key ([0-9a-f]{64}) ", out, flags=re.M).group(1)
    key = re.search(r"^request key  ([0-9a-f]{64}) ", out, flags=re.M).group(1)
    qid = re.search(r" question (q_\w+), ", out).group(1)
    assert qid in set(agent_subset(list(_bench(root).questions.values()))["question_ids"])

    # the evaluate stage stores the first answer under exactly that system and request key
    with FakeOpenAIServer(responder=agent_responder) as server:
        assert run_evaluate(root, server, "memory-t1", "eval.lengths=[32k]", "eval.max_items=1") == 0
    row = predictions(root, "memory-t1")[qid]
    assert row["request_key"] == key
    assert (root / ".memlens_cache" / "results" / system[:32] / "system.json").is_file()
    assert f"request key  {key} (answered in the results store)" in dry()

    # another adapter or top-k: another identity (the LVLM-style key would not change with the adapter)
    other = dry("model.adapter=oracle_caption", "model.top_k=3")
    assert "oracle_caption/truth-text/v1, an UPPER BOUND" in other and "top 3" in other
    assert re.search(r"^request key  ([0-9a-f]{64}) ", other, flags=re.M).group(1) != key
