"""Histories at 512K and 1M on the tiny benchmark: assembled nested on the shorter ones, validated at
every length, exported in the official layout and read back, and evaluated by a long-context model,
a memory agent and a stand-in.

The tiny session pool holds far fewer than the ~370 sessions a 1M history has at the paper's shape,
so images are counted as a fixed 6,000 tokens each here (``data.tokens.image_rule=fixed``), and the
lengths are 128K to 1M: the same machinery at a fraction of the work. (The paper-scale build at 512K and 1M, with the real token
count: docs/figures.md.)
"""

from __future__ import annotations

import json

import pytest

from memlens.core.config import Paths
from memlens.core.items import BuiltBenchmark
from memlens.core.official import OfficialRelease
from tests.conftest import TINY, run_stage
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.slow

LONG = ("data.tokens.image_rule=fixed", "data.tokens.fixed_per_image=6000")
ALL = "data.lengths=[128k,256k,512k,1m]"


def instances(root, length):
    return {
        r["question_id"]: r
        for r in map(json.loads, (root / "data" / "instances" / f"{length}.jsonl").read_text().splitlines())
    }


def _images(body: dict) -> int:
    return sum(
        1
        for m in body["messages"]
        for c in (m["content"] if isinstance(m["content"], list) else [])
        if c.get("type") == "image_url"
    )


def test_512k_and_1m_are_built_validated_exported_and_evaluated(tiny_copy):
    root = tiny_copy
    assert run_stage(root, "assemble", *TINY, *LONG, "data.lengths=[128k,256k]") == 0
    short = {n: (root / "data" / "instances" / f"{n}.jsonl").read_bytes() for n in ("128k", "256k")}
    assert run_stage(root, "assemble", *TINY, *LONG, ALL) == 0
    # the shorter histories are the same whether or not longer ones are built, and nested
    for n, raw in short.items():
        assert (root / "data" / "instances" / f"{n}.jsonl").read_bytes() == raw
    by = {n: instances(root, n) for n in ("128k", "256k", "512k", "1m")}
    for qid, inst in by["1m"].items():
        assert set(by["512k"][qid]["session_ids"]) <= set(inst["session_ids"])
        assert set(by["256k"][qid]["session_ids"]) <= set(by["512k"][qid]["session_ids"])
        assert abs(inst["total_tokens"] - 1048576) <= 0.01 * 1048576
        assert abs(by["512k"][qid]["total_tokens"] - 524288) <= 0.01 * 524288
    table = json.loads((root / "data" / "instances" / "manifest.json").read_text())["table"]
    assert table["1m"]["mean_sessions"] > table["512k"]["mean_sessions"] > table["256k"]["mean_sessions"]
    # every validity gate runs at the new lengths (tiny is no test of their thresholds: warn only)
    assert run_stage(root, "validate", *TINY, *LONG, ALL, "validate.warn_only=true") == 0
    gates = json.loads((root / "reports" / "validity.json").read_text())["gates"]
    for ln in ("512k", "1m"):
        assert f"evidence_auc/{ln}/metadata" in gates and f"repetition/{ln}" in gates
        assert f"text_only/{ln}/answerable" in gates and f"refusal_detection/{ln}" in gates
    shape = json.loads((root / "reports" / "validity.json").read_text())["composition"]["lengths"]
    assert shape["1m"]["sessions_mean"] > shape["512k"]["sessions_mean"] and shape["1m"]["images_mean"] > 0
    assert run_stage(root, "export", *TINY, *LONG, ALL, "export.huggingface=false") == 0
    rel = OfficialRelease(root / "data" / "release")
    assert rel.lengths() == ["128k", "256k", "512k", "1m"]
    assert BuiltBenchmark(Paths(root)).lengths() == rel.lengths()
    first = next(rel.items("1m"))
    assert len(first.sessions) == len(by["1m"][first.question_id]["session_ids"])

    def lvlm(body):
        return "Insufficient information"

    with FakeOpenAIServer(responder=lvlm) as server:
        args = (*TINY, *LONG, "eval.lengths=[512k,1m]", "eval.max_items=2")
        model = ("model=openai_compatible", f"model.base_url={server.base_url}", "model.model=long-vlm")
        assert run_stage(root, "evaluate", *args, *model, "model.max_image_side=64") == 0
        sent = server.requests
        assert len(sent) == 4
        assert max(_images(b) for b in sent) >= 40  # a 1M history's images all reach the model
        agent = ("model=memory-t1", f"model.base_url={server.base_url}", "eval.subset=all")
        assert run_stage(root, "evaluate", *args, *agent) == 0
    assert run_stage(root, "evaluate", *TINY, *LONG, "eval.lengths=[512k,1m]", "model=standin-8b") == 0
    assert run_stage(root, "judge", *TINY, *LONG, "eval.lengths=[512k,1m]", "model=standin-8b") == 0
    for system in ("long-vlm", "memory-t1", "standin-8b"):
        for ln in ("512k", "1m"):
            rows = (root / "data" / "predictions" / system / "standard" / f"{ln}.jsonl").read_text().splitlines()
            assert rows and all(json.loads(r)["ok"] for r in rows), (system, ln)
