"""The diagnose stage on the tiny benchmark (markers vs oracle captions, BM25): outputs, figures
that follow from the answer key, determinism, the report sections, and attribution of a run."""

from __future__ import annotations

import json

from memlens.core.config import Paths
from memlens.core.io import canonical_json
from memlens.core.schema import Prediction, Verdict
from memlens.eval.report.retrieval import sections, write_attribution
from tests.conftest import TINY, run_stage

ARGS = (*TINY, "tracking.enabled=false", "memory.adapters=[markers,oracle_caption]", "memory.retrievers=[bm25]")
FILES = (
    "retrieval.json",
    "fidelity.json",
    "per_question.jsonl",
    "summary.md",
    "recall_by_length.csv",
    "recall_at_10_by_length.png",
    "metrics.json",
)


def test_diagnose_writes_recall_and_fidelity_that_follow_from_the_answer_key(tiny_copy):
    assert run_stage(tiny_copy, "diagnose", *ARGS) == 0
    out = tiny_copy / "reports" / "retrieval"
    first = {f: (out / f).read_bytes() for f in FILES}
    fid = json.loads(first["fidelity.json"])["fidelity"]
    assert fid["markers"]["per_type"]["all"]["fidelity"] == 0.0  # "[image]" keeps no fact
    assert fid["oracle_caption"]["upper_bound"] and fid["oracle_caption"]["per_type"]["all"]["fidelity"] >= 0.9
    agg = json.loads(first["retrieval.json"])["aggregates"]
    overall = {(a["adapter"], a["length"]): a for a in agg if a["type"] == "all"}
    assert {ln for _, ln in overall} == {"32k", "64k"}
    for ln in ("32k", "64k"):
        m, o = overall[("markers", ln)], overall[("oracle_caption", ln)]
        assert 0 <= m["recall@1"] <= m["recall@10"] <= 1 and m["n"] == o["n"] > 0
        assert o["recall@10"] >= m["recall@10"]  # the image's content can only help find it
    rows = [json.loads(line) for line in first["per_question.jsonl"].decode().splitlines()]
    assert all(r["n_evidence"] >= 1 and len(r["top10"]) <= 10 for r in rows)
    assert "UPPER BOUND" in first["summary.md"].decode()
    # same config and data: byte-identical outputs
    assert run_stage(tiny_copy, "diagnose", *ARGS) == 0
    assert {f: (out / f).read_bytes() for f in FILES} == first
    # the report's sections read them
    (sec,) = sections(tiny_copy / "reports")
    assert sec.id == "retrieval" and "oracle_caption" in sec.blocks[0].table_html
    assert "retrieval/recall_at_10_by_length.png" in sec.blocks[0].figures[0][0]


def test_attribution_of_a_run_that_reports_its_retrieval(tiny_copy):
    from memlens.core.items import BuiltBenchmark

    paths = Paths(tiny_copy)
    bench = BuiltBenchmark(paths)
    q = next(q for q in bench.questions.values() if q.evidence)
    key = dict(
        system="agentx",
        mode="standard",
        length="32k",
        question_id=q.question_id,
        question_type=q.question_type,
        question_subtype=q.question_subtype,
    )
    pred = Prediction(**key, ok=True, prediction="x", meta={"retrieved": [{"session_id": "nope", "score": 1.0}]})
    pdir = paths.predictions / "agentx" / "standard"
    pdir.mkdir(parents=True)
    (pdir / "32k.jsonl").write_text(canonical_json(pred.to_dict()) + "\n")
    verdict = Verdict(**key, judge="deterministic", correct=False)
    path = write_attribution(paths, "agentx", "standard", {"32k": [verdict]}, bench.questions)
    got = json.loads(path.read_text())["lengths"]["32k"]
    assert got["errors"] == 1 and got["retrieval_errors"] == 1 and got["mean_evidence_recall"] == 0.0
    att = [s for s in sections(paths.reports) if s.id == "attribution"]
    assert att and "agentx" in att[0].blocks[0].table_html
    # a run that reports no retrieval gets no file (and a stale one is removed)
    (pdir / "32k.jsonl").write_text(canonical_json({**pred.to_dict(), "meta": {}}) + "\n")
    assert write_attribution(paths, "agentx", "standard", {"32k": [verdict]}, bench.questions) is None
    assert not path.exists()
