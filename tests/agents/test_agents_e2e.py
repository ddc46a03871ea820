"""Every memory agent end to end on the tiny benchmark against the stand-in server.

Each agent runs through ``memlens evaluate`` (the real stage: results store, views) with a
backbone that plays its protocol (:func:`agent_responder`); the dense retriever uses a tiny
random-weight encoder, the image channel a random-weight open_clip checkpoint, both built here.
Checked: every item answered, what was retrieved belongs to that question's history, no
benchmark session id reaches the backbone, the memory statistics add up to the server's count.
"""

from __future__ import annotations

import json

import pytest

from memlens.core.config import Paths
from memlens.core.items import BuiltBenchmark
from tests.agents.agent_support import agent_responder, predictions, run_evaluate, tiny_clip, tiny_text_encoder
from tests.support.fake_openai import FakeOpenAIServer, message_text


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    root = tmp_path_factory.mktemp("encoders")
    ckpt, conf = tiny_clip(root / "clip")
    return {"text": tiny_text_encoder(root / "text"), "clip": ckpt, "clip_conf": conf}


def _agent_args(agent: str, enc: dict) -> list[str]:
    if agent in ("m3c", "m3-agent"):
        extra = [f"model.retriever_options={{model_path:{enc['text']}}}"]
        return extra + (["model.adapter=interleaved"] if agent == "m3-agent" else [])
    if agent == "hybrid-pixel":
        opts = f"{{checkpoint:{enc['clip']},model_name:memlens-tiny-clip,model_config:{enc['clip_conf']}}}"
        return [
            "model.channels=[bm25,ocr,bm25_ocr,image]",
            f"model.retriever_options={opts}",
            "model.adapter=oracle_caption",
        ]
    return []


@pytest.mark.parametrize("agent", ["memory-t1", "memagent-7b", "m3c", "m3-agent", "hybrid-pixel"])
def test_agent_end_to_end(agent, tiny_copy, encoders):
    root = tiny_copy
    with FakeOpenAIServer(responder=agent_responder) as server:
        rc = run_evaluate(root, server, agent, "eval.lengths=[32k]", "eval.max_items=3", *_agent_args(agent, encoders))
        assert rc == 0
        bodies = server.requests
    preds = predictions(root, agent)
    assert len(preds) == 3 and all(p["ok"] for p in preds.values()), preds
    bench = BuiltBenchmark(Paths(root))
    items = {it.question_id: it for it in bench.items("32k")}
    calls = 0
    for qid, p in preds.items():
        meta = p["meta"]
        history = {s.session_id for s in items[qid].sessions}
        got = [r["session_id"] for r in meta["retrieved"]]
        assert set(got) <= history, f"{agent} retrieved sessions outside {qid}'s history"
        if agent != "memagent-7b":  # the recurrent agent retrieves nothing
            assert got, f"{agent}: nothing retrieved"
        assert [r["rank"] for r in meta["retrieved"]] == list(range(1, len(got) + 1))
        assert meta["sessions_ingested"] == len(history)
        assert meta["memory"]["items"] > 0 and meta["memory"]["bytes"] > 0
        assert "timing" not in meta  # run-dependent: in the results store only
        calls += meta["usage"]["model_calls"]
        assert "ANSWER:" in p["prediction"], p["prediction"]
    assert calls == len(bodies)  # fresh call cache: every counted call reached the server
    # no benchmark session id (official ids encode roles) and no evidence flag reaches the backbone
    sent = "\n".join(json.dumps(b) for b in bodies)
    for s in bench.sessions:
        assert s not in sent
    assert "has_answer" not in sent and "is_evidence" not in sent
    if agent == "hybrid-pixel":  # the pixels themselves reach the LVLM
        assert (
            sum(
                b["type"] == "image_url"
                for body in bodies
                for m in body["messages"]
                if isinstance(m["content"], list)
                for b in m["content"]
            )
            > 0
        )
    if agent == "m3-agent":
        assert any('"video_descriptions"' in message_text(b) for b in bodies)
        assert any("Search results for" in message_text(b) for b in bodies)
