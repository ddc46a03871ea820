"""OpenAICompatibleModel end to end against FakeOpenAIServer: through the evaluate stage on the tiny
benchmark, with injected faults, request contents checked against the protocol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlens.core.config import Paths
from memlens.core.http import OpenAICompatibleClient, OpenAICompatibleConfig
from memlens.core.items import BuiltBenchmark, EvalItem, HistorySession
from memlens.core.schema import Question, Turn
from memlens.eval.prompt import build_messages
from memlens.eval.systems.openai_model import OpenAICompatibleModel, prefix_ordered, run_items
from tests.conftest import run_stage
from tests.evaluate.eval_support import TINY, call_stats, openai_overrides, predictions, request_key, store_records
from tests.support.fake_openai import FakeOpenAIServer, default_responder


def _questions(root: Path, length: str = "32k") -> list[EvalItem]:
    return list(BuiltBenchmark(Paths(root)).items(length))


def test_stage_end_to_end_and_request_contents(tiny_copy):
    root = tiny_copy
    with FakeOpenAIServer(latency_s=0.01) as server:
        assert run_stage(root, "evaluate", *TINY, *openai_overrides(server, "model.concurrency=3")) == 0
        bodies = server.requests
        max_in_flight = server.max_in_flight
    preds = predictions(root, "fake-vl")
    bench = BuiltBenchmark(Paths(root))
    assert sorted(preds) == bench.lengths()
    assert max_in_flight <= 3
    n_items = sum(bench.count(n) for n in bench.lengths())
    assert len(bodies) == n_items  # one request per item, no retries needed
    encoder_client = OpenAICompatibleClient(OpenAICompatibleConfig(base_url=server.base_url, model="x"))
    for length in bench.lengths():
        items = {i.question.question: i for i in bench.items(length)}
        rows = preds[length]
        assert len(rows) == len(items)
        for body in bodies:
            item = items.get(request_key(body))
            if item is None:
                continue
            expected = encoder_client.prepare_messages(build_messages(item, "standard"))
            if body["messages"] != expected:  # the same question at the other length
                continue
            row = rows[item.question_id]
            assert row["ok"] is True and row["error"] is None
            assert row["raw_prediction"] == default_responder(body)
            assert row["prediction"] == row["raw_prediction"]
            assert row["prompt_tokens"] > 0 and row["completion_tokens"] > 0
            assert row["meta"] == {"finish_reason": "stop"}
            assert body["model"] == "fake-vl" and body["max_tokens"] == 2048 and body["temperature"] == 0.0
            urls = [b["image_url"]["url"] for m in body["messages"] for b in m["content"] if b["type"] == "image_url"]
            assert len(urls) == len(item.image_ids) and all(u.startswith("data:image/png;base64,") for u in urls)
            item.checked = True
        assert all(getattr(i, "checked", False) for i in items.values()), length
    stats = call_stats(root, "fake-vl")
    assert all(r["attempts"] == 1 and r["latency_s"] > 0 for rows in stats.values() for r in rows)


def test_faults_retries_failure_records_and_retry_on_rerun(tiny_copy):
    root = tiny_copy
    qs = [i.question.question for i in _questions(root)]
    assert len(set(qs)) == len(qs) >= 6
    script = {
        qs[0]: ["429", "500"],
        qs[1]: ["malformed", "truncated", "empty_choices"],
        qs[2]: ["timeout"],
        qs[3]: ["400"],
        qs[4]: ["503", "503", "503", "503"],
        qs[5]: ["disconnect"],
    }
    with FakeOpenAIServer(faults=script, retry_after_s=0.01, timeout_sleep_s=30) as server:
        ov = openai_overrides(
            server, "model.max_retries=3", "model.timeout_s=2", "model.concurrency=4", "eval.lengths=[32k]"
        )
        # 2 of 25 requests fail for good: 8% > eval.max_failure_rate (5%), so the stage exits 1 and
        # leaves the previous outputs (none: no view) as they were ...
        assert run_stage(root, "evaluate", *TINY, *ov) == 1
        assert not (root / "data" / "predictions" / "fake-vl").exists()
        by_q = {i.question.question: i.question_id for i in _questions(root)}
        rows = store_records(root)["32k"]
        attempts = {q: r["attempts"] for q, r in rows.items()}
        assert rows[by_q[qs[0]]]["ok"] and attempts[by_q[qs[0]]] == 3
        assert rows[by_q[qs[1]]]["ok"] and attempts[by_q[qs[1]]] == 4
        assert rows[by_q[qs[2]]]["ok"] and attempts[by_q[qs[2]]] == 2
        assert rows[by_q[qs[5]]]["ok"] and attempts[by_q[qs[5]]] == 2
        bad400, bad503 = rows[by_q[qs[3]]], rows[by_q[qs[4]]]
        assert not bad400["ok"] and "400" in bad400["error"] and attempts[by_q[qs[3]]] == 1
        assert bad400["text"] is None
        assert not bad503["ok"] and "503" in bad503["error"] and attempts[by_q[qs[4]]] == 4
        n_before = server.request_count
        # ... with every answer and failure record kept: a re-run skips finished items and retries
        # the failed ones (the fault script is used up)
        assert run_stage(root, "evaluate", *TINY, *ov) == 0
        assert server.request_count - n_before == 2
    rows = predictions(root, "fake-vl")["32k"]
    assert all(r["ok"] for r in rows.values()) and len(rows) == len(qs)
    lines = (root / "data" / "predictions" / "fake-vl" / "standard" / "32k.jsonl").read_text().splitlines()
    assert len(lines) == len(qs)  # compacted: one line per item, no duplicates


def test_missing_image_fails_only_that_item(tiny_copy):
    root = tiny_copy
    items = _questions(root)
    victim = next(i for i in items if i.image_ids)
    path = victim.resolve_image(victim.image_ids[0])
    users = [i.question_id for i in items if victim.image_ids[0] in i.image_ids]
    path.unlink()
    with FakeOpenAIServer() as server:
        assert (
            run_stage(
                root, "evaluate", *TINY, *openai_overrides(server, "eval.lengths=[32k]", "eval.max_failure_rate=0.5")
            )
            == 0
        )
        sent = server.request_count
    rows = predictions(root, "fake-vl")["32k"]
    for qid, row in rows.items():
        if qid in users:
            assert not row["ok"] and "missing" in row["error"] and row["error"].startswith("prompt: ")
        else:
            assert row["ok"]
    assert sent == len(items) - len(users)


def test_direct_run_is_lazy_and_encodes_each_image_once(tiny_project):
    bench = BuiltBenchmark(Paths(tiny_project))
    items = list(bench.items("32k")) + list(bench.items("32k"))  # every history twice
    distinct = {i for it in items for i in it.image_ids}
    consumed = delivered = 0
    worst = 0

    def source():
        nonlocal consumed
        for it in items:
            consumed += 1
            yield it

    with FakeOpenAIServer(latency_s=0.02) as server:
        model = OpenAICompatibleModel("m", base_url=server.base_url, model="m", concurrency=2, reorder_window=3)

        def on_result(item, out):
            nonlocal delivered, worst
            delivered += 1
            worst = max(worst, consumed - delivered)
            assert out.ok and out.attempts == 1 and out.latency_s > 0

        model.run(source(), "standard", on_result)
        info = model._encoder.cache_info()
        model.close()
    assert delivered == len(items)
    assert worst <= 2 + 3  # never more than concurrency + one reorder window ahead of the results
    assert info.misses == len(distinct)  # each image encoded once, although every history is sent twice
    assert info.hits >= sum(len(it.image_ids) for it in items) - len(distinct)


def _synthetic_item(qid: str, sids: list[str]) -> EvalItem:
    q = Question(
        question_id=qid,
        question_type="answer_refusal",
        question_subtype="",
        question=f"Q {qid}?",
        answer="Insufficient information",
        question_date="2024/05/31 (Fri) 07:58",
    )
    return EvalItem(
        q,
        "32k",
        [HistorySession(s, "2024/05/01 (Wed) 10:00", [Turn("user", f"hi {s}")]) for s in sids],
        lambda i: Path(i),
    )


def test_prefix_ordering_groups_shared_histories():
    items = [
        _synthetic_item("a", ["s9", "s1"]),
        _synthetic_item("b", ["s1", "s2", "s3"]),
        _synthetic_item("c", ["s9", "s1", "s4"]),
        _synthetic_item("d", ["s1", "s2"]),
        _synthetic_item("e", ["s0"]),
    ]
    assert [i.question_id for i in prefix_ordered(items, "standard", 4)] == ["d", "b", "a", "c", "e"]
    assert [i.question_id for i in prefix_ordered(items, "standard", 1)] == ["a", "b", "c", "d", "e"]
    # no_context: every history is empty, the order is kept (stable sort)
    assert [i.question_id for i in prefix_ordered(items, "no_context", 10)] == ["a", "b", "c", "d", "e"]


def test_reasoning_content_token_param_and_no_temperature(tiny_copy):
    def responder(body):
        return {"content": "[ANSWER] Insufficient information", "reasoning_content": "I looked everywhere."}

    root = tiny_copy
    with FakeOpenAIServer(responder=responder) as server:
        ov = openai_overrides(
            server,
            "model.token_param=max_completion_tokens",
            "model.temperature=null",
            "model.max_new_tokens=16384",
            "eval.mode=reasoning",
            "eval.lengths=[32k]",
            "model.layout=legacy",
        )
        assert run_stage(root, "evaluate", *TINY, *ov) == 0
        body = server.requests[0]
    assert body["max_completion_tokens"] == 16384 and "max_tokens" not in body and "temperature" not in body
    assert [m["role"] for m in body["messages"]] == ["user"]  # legacy layout: one message
    assert "[REASONING]" in body["messages"][0]["content"][-1]["text"]
    rows = predictions(root, "fake-vl", "reasoning")["32k"]
    row = next(iter(rows.values()))
    assert row["raw_prediction"] == "<think>\nI looked everywhere.\n</think>\n[ANSWER] Insufficient information"
    assert row["prediction"] == "Insufficient information"


def test_unreachable_server_records_failures(tiny_project):
    bench = BuiltBenchmark(Paths(tiny_project))
    items = list(bench.items("32k"))[:2]
    with FakeOpenAIServer() as server:
        url = server.base_url
    model = OpenAICompatibleModel("m", base_url=url, model="m", max_retries=1, backoff_base_s=0.01, timeout_s=2)
    outs = [o for _, o in run_items(model, items, "no_context")]
    assert len(outs) == 2 and all(not o.ok and o.attempts == 2 and o.error for o in outs)


def test_bad_settings_fail_at_instantiation():
    with pytest.raises(ValueError, match="image_transport"):
        OpenAICompatibleModel("m", base_url="http://127.0.0.1:1/v1", model="m", image_transport="ftp")
    with pytest.raises(ValueError, match="token_param"):
        OpenAICompatibleModel("m", base_url="http://127.0.0.1:1/v1", model="m", token_param="max_len")
    with pytest.raises(ValueError, match="layout"):
        OpenAICompatibleModel("m", base_url="http://127.0.0.1:1/v1", model="m", layout="flat")


def test_down_server_or_rejected_key_exits_2_before_any_item(tiny_copy, capsys):
    import socket

    root = tiny_copy
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ov = [
        "model=openai_compatible",
        f"model.base_url=http://127.0.0.1:{port}/v1",
        "model.model=fake-vl",
        "model.timeout_s=2",
        "eval.lengths=[32k]",
    ]
    assert run_stage(root, "evaluate", *TINY, *ov) == 2
    assert "cannot reach the server" in capsys.readouterr().err
    assert not (root / "data" / "predictions" / "fake-vl").exists()

    import http.server
    import threading

    class RejectsKey(http.server.BaseHTTPRequestHandler):
        requests = 0

        def do_GET(self):
            type(self).requests += 1
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "invalid api key"}}')

        do_POST = do_GET

        def log_message(self, *a):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), RejectsKey)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        bad = [*ov[:1], f"model.base_url=http://127.0.0.1:{httpd.server_port}/v1", *ov[2:]]
        assert run_stage(root, "evaluate", *TINY, *bad) == 2
        assert "rejected the API key" in capsys.readouterr().err
        assert RejectsKey.requests == 1  # the health check only: no item was sent
    finally:
        httpd.shutdown()


def test_a_changed_question_is_asked_again_and_nothing_else(tiny_copy):
    root = tiny_copy
    with FakeOpenAIServer(latency_s=0.01) as server:
        ov = openai_overrides(server, "eval.lengths=[32k]")
        assert run_stage(root, "evaluate", *TINY, *ov) == 0
        first = predictions(root, "fake-vl")["32k"]
        qfile = root / "data" / "generated" / "questions.jsonl"
        rows = [json.loads(line) for line in qfile.read_text().splitlines()]
        target = sorted(first)[3]
        for r in rows:
            if r["question_id"] == target:
                r["question"] = r["question"].rstrip("?") + " exactly?"
        qfile.write_text("".join(json.dumps(r) + "\n" for r in rows))
        before = server.request_count
        assert run_stage(root, "evaluate", *TINY, *ov) == 0
        assert server.request_count - before == 1  # the same id, a new question: asked again, alone
        asked = server.requests[-1]
        assert request_key(asked).endswith("exactly?")
        second = predictions(root, "fake-vl")["32k"]
        assert second[target]["request_key"] != first[target]["request_key"]
        assert {q: r["request_key"] for q, r in second.items() if q != target} == {
            q: r["request_key"] for q, r in first.items() if q != target
        }


def test_results_are_recorded_off_the_event_loop_one_at_a_time(tiny_project):
    """``on_result`` (the results store's fsync) runs in one writer thread: never on the thread that
    sends the requests, never two at once; an exception from it stops the run."""
    import threading
    import time

    items = list(BuiltBenchmark(Paths(tiny_project)).items("32k"))
    seen, active, overlap = [], [0], []

    def on_result(item, out):
        active[0] += 1
        overlap.append(active[0] > 1)
        seen.append(threading.current_thread() is threading.main_thread())
        time.sleep(0.01)  # a slow fsync
        active[0] -= 1

    with FakeOpenAIServer(latency_s=0.01) as server:
        model = OpenAICompatibleModel("m", base_url=server.base_url, model="m", concurrency=4)
        model.run(items, "standard", on_result)
        assert len(seen) == len(items) and not any(seen) and not any(overlap)

        def failing(item, out):
            raise RuntimeError("disk full")

        with pytest.raises(RuntimeError, match="disk full"):
            OpenAICompatibleModel("m", base_url=server.base_url, model="m", concurrency=2).run(
                items, "standard", failing
            )


def test_an_attached_model_reads_encoded_images_from_the_project_cache(tiny_project, tmp_path):
    """The persistent encoded-image cache: a second model (another process, system or mode) sends the
    same bytes and encodes nothing; ``image_disk_cache_mb=0`` turns it off."""
    bench = BuiltBenchmark(Paths(tiny_project))
    items = list(bench.items("32k"))[:3]
    paths = Paths(tmp_path)
    bodies = []
    with FakeOpenAIServer(latency_s=0.0) as server:
        for disk_mb in (4096, 4096, 0):
            model = OpenAICompatibleModel("m", base_url=server.base_url, model="m", image_disk_cache_mb=disk_mb)
            model.attach(paths, bench)
            run_items(model, items, "standard")
            bodies.append([json.dumps(b, sort_keys=True) for b in server.requests[-len(items) :]])
            info = model._encoder.cache_info()
            model.close()
            distinct = len({i for it in items for i in it.image_ids})
            if len(bodies) == 1:
                assert info.encoded == distinct and info.disk_hits == 0
            elif len(bodies) == 2:
                assert info.encoded == 0 and info.disk_hits == distinct
            else:
                assert info.encoded == distinct and info.disk_hits == 0
    assert sorted(bodies[0]) == sorted(bodies[1]) == sorted(bodies[2])  # the same requests, whatever the cache
    assert any(p.is_file() for p in (paths.cache / "encoded_images").rglob("*"))


def test_every_length_goes_through_one_request_stream(tiny_copy, monkeypatch):
    """pools_lengths: one model.run for all lengths, the next length's items read only after the
    previous length's were all handed over; each length's records and view are its own."""
    from memlens.eval.systems.base import Model

    root = tiny_copy
    runs: list[list[str]] = []
    real_run = OpenAICompatibleModel.run

    def counting_run(self, items, mode, on_result):
        seen: list[str] = []
        runs.append(seen)

        def tap():
            for it in items:
                seen.append(it.length)
                yield it

        return real_run(self, tap(), mode, on_result)

    monkeypatch.setattr(OpenAICompatibleModel, "run", counting_run)
    bench = BuiltBenchmark(Paths(root))
    lengths = bench.lengths()
    assert len(lengths) >= 2
    with FakeOpenAIServer(latency_s=0.01) as server:
        assert run_stage(root, "evaluate", *TINY, *openai_overrides(server, "model.concurrency=4")) == 0
    assert len(runs) == 1  # one stream ...
    assert runs[0] == sorted(runs[0], key=lengths.index)  # ... length after length
    assert [runs[0].count(n) for n in lengths] == [bench.count(n) for n in lengths]
    rows, recs = predictions(root, "fake-vl"), store_records(root)
    for n in lengths:
        assert len(rows[n]) == bench.count(n) and all(r["length"] == n and r["ok"] for r in rows[n].values())
        assert {q: r["length"] for q, r in recs[n].items()} == dict.fromkeys(rows[n], n)
    assert OpenAICompatibleModel.pools_lengths and not Model.pools_lengths


def test_a_model_without_pooled_lengths_gets_one_run_per_length(tiny_copy, monkeypatch):
    from memlens.eval.systems.base import Model

    runs: list[set[str]] = []
    real_run = Model.run

    def counting_run(self, items, mode, on_result):
        items = list(items)
        runs.append({it.length for it in items})
        return real_run(self, items, mode, on_result)

    monkeypatch.setattr(Model, "run", counting_run)
    root = tiny_copy
    assert run_stage(root, "evaluate", *TINY, "model=chance") == 0
    lengths = BuiltBenchmark(Paths(root)).lengths()
    assert runs == [{n} for n in lengths]


def test_prefetch_reads_the_first_items_images_and_an_unusable_item_costs_nothing(tiny_project, tmp_path):
    bench = BuiltBenchmark(Paths(tiny_project))
    items = [it for it in bench.items("32k") if it.image_ids][:3]
    broken = EvalItem(items[0].question, "32k", items[0].sessions, resolve_image=None)  # no resolver
    model = OpenAICompatibleModel("m", base_url="http://127.0.0.1:9/v1", model="m", concurrency=4)
    model.attach(Paths(tmp_path), bench)
    model.prefetch([broken, *items], "standard")
    model._prefetching.join(30)
    info = model.client.image_encoder.cache_info()
    distinct = {i for it in items[:3] for i in it.image_ids}
    assert info.entries == len(distinct) and info.encoded == len(distinct)  # read before any request
    with FakeOpenAIServer(latency_s=0.0) as server:
        model.config = OpenAICompatibleConfig(**{**model.config.to_dict(), "base_url": server.base_url})
        model._client = None  # a client for the server, sharing the encoder
        out = run_items(model, items, "standard")
    assert all(o.ok for _, o in out)
    assert model._encoder.cache_info().encoded == len(distinct)  # nothing encoded twice


def test_a_length_that_cannot_be_read_stops_the_stream_but_keeps_every_answer_in_flight(tiny_copy):
    root = tiny_copy
    bench = BuiltBenchmark(Paths(root))
    first, second = bench.lengths()[:2]
    n_first = bench.count(first)
    (Paths(root).instances / f"{second}.jsonl").write_text("")  # the second length has no items
    with FakeOpenAIServer(latency_s=0.05) as server:
        code = run_stage(root, "evaluate", *TINY, *openai_overrides(server, "model.concurrency=8"))
        sent = server.request_count
    assert code != 0
    recs = store_records(root)
    assert sent == n_first and len(recs[first]) == n_first  # every request sent was answered and stored
    assert all(r["ok"] for r in recs[first].values()) and second not in recs
