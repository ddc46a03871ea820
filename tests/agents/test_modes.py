"""LVLM modes for the agent comparison: ``caption`` (images replaced by an adapter's text) and
``oracle_evidence`` for every question type."""

from __future__ import annotations

import json

from memlens.core.config import Paths
from memlens.core.items import BuiltBenchmark
from memlens.eval.prompt import build_messages
from tests.conftest import run_stage
from tests.evaluate.eval_support import TINY, openai_overrides
from tests.support.fake_openai import FakeOpenAIServer, message_text


def test_caption_mode_sends_the_adapter_text_instead_of_the_pixels(tiny_copy):
    root = tiny_copy
    base = ["eval.mode=caption", "eval.lengths=[32k]", "eval.max_items=4", *TINY]
    with FakeOpenAIServer() as server:
        rc = run_stage(root, "evaluate", *openai_overrides(server), *base, "eval.caption_adapter=oracle_caption")
        assert rc == 0
        bodies = server.requests
        assert len(bodies) == 4
        for body in bodies:
            assert not any(
                b.get("type") == "image_url"
                for m in body["messages"]
                if isinstance(m["content"], list)
                for b in m["content"]
            )
        text = "\n".join(message_text(b) for b in bodies)
        assert "[image (ground truth): " in text and "<image>" not in text.split("Question:")[0]
        # another adapter: other texts, so other answers (nothing reused across adapters)
        rc = run_stage(root, "evaluate", *openai_overrides(server), *base, "eval.caption_adapter=markers")
        assert rc == 0 and server.request_count == 8
        assert "[image]" in message_text(server.requests[-1])
    preds = [json.loads(x) for x in (root / "data/predictions/fake-vl/caption/32k.jsonl").read_text().splitlines()]
    assert len(preds) == 4 and all(p["ok"] for p in preds)
    systems = [json.loads(p.read_text())["identity"] for p in (root / ".memlens_cache/results").glob("*/system.json")]
    assert sorted(s["+caption_adapter"] for s in systems) == ["markers/v1", "oracle_caption/truth-text/v1"]


def test_oracle_evidence_shows_exactly_the_evidence_for_every_question_type(tiny_project):
    bench = BuiltBenchmark(Paths(tiny_project))
    seen = set()
    for item in bench.items("32k"):
        msgs = build_messages(item, "oracle_evidence")
        text = "\n".join(b["text"] for m in msgs for b in m["content"] if b["type"] == "text")
        n = text.count("=== Session ")
        q = item.question
        assert n == len(q.evidence), q.question_id
        if q.question_type == "answer_refusal":
            # nothing answers it: the oracle shows at most the session that talks about its context,
            # with no evidence image (a distractor image may sit in it, as in every session)
            assert not any(e.image_ids for e in q.evidence), q.question_id
            assert not any(t.has_answer for s in item.evidence_sessions for t in s.turns), q.question_id
            if n == 0:
                assert msgs == build_messages(item, "no_context")
        else:
            assert n > 0
        dates = [s.date for s in item.sessions if s.is_evidence]
        assert [f"(Date: {d})" in text for d in dates] == [True] * n
        seen.add(q.question_type)
    assert len(seen) == 5
