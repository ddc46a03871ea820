"""End to end at tiny scale: both judges for one system, then the report stage's outputs."""

from __future__ import annotations

import json
import re

import pytest

from memlens.eval.judge.official import DETAIL_KEYS
from tests.conftest import TINY, run_stage
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.slow


def responder(body):
    student = body["messages"][-1]["content"].split("<Student Answer>:", 1)[1]
    s = 1 if "insufficient" in student.lower() else 0
    return f'The answer deserves {s} points.\n[Score]: {s} points\n[JSON]: {{"answer_score": {s}}}'


def test_both_judges_and_report(tiny_copy, monkeypatch):
    root = tiny_copy
    monkeypatch.setenv("MEMLENS_JUDGE_API_KEY", "sk-stage-secret-123")
    for model in ("chance", "refuse"):
        assert run_stage(root, "evaluate", *TINY, f"model={model}") == 0
        assert run_stage(root, "judge", *TINY, f"model={model}") == 0
    with FakeOpenAIServer(responder=responder) as server:
        llm = ("judge=llm", f"judge.base_url={server.base_url}")
        assert run_stage(root, "judge", *TINY, "model=refuse", *llm) == 0
        first = server.request_count
        assert first > 0
        assert run_stage(root, "judge", *TINY, "model=refuse", *llm) == 0  # cached: no new request
        assert server.request_count == first
    vdir = root / "data" / "verdicts" / "refuse" / "standard"
    assert (vdir / "32k.llm.jsonl").is_file() and (vdir / "32k.deterministic.jsonl").is_file()
    rows = [json.loads(x) for x in (vdir / "32k.llm.jsonl").read_text().splitlines()]
    assert all(r["judge"] == "llm" and r["correct"] is not None for r in rows)
    assert all("original_len" in r["details"] for r in rows)
    assert "sk-stage-secret-123" not in (vdir / "32k.llm.jsonl").read_text()
    assert (root / ".memlens_cache" / "judge.sqlite").is_file()

    assert run_stage(root, "report", *TINY, "model=refuse") == 0
    reports = root / "reports"
    dvc_outputs = [
        reports / "metrics.json",
        reports / "plots" / "accuracy_by_length.csv",
        reports / "plots" / "accuracy_by_length.png",
        *sorted((reports / "judge").rglob("*.json")),
    ]
    before = {p: p.read_bytes() for p in dvc_outputs}
    assert run_stage(root, "report", *TINY, "model=refuse") == 0  # deterministic per-system outputs
    assert {p: p.read_bytes() for p in dvc_outputs} == before
    metrics = json.loads((reports / "metrics.json").read_text())
    assert metrics["system"] == "refuse" and "coverage" in metrics["32k"] and "32k_to_64k" in metrics["transitions"]
    for ln in ("32k", "64k"):
        d = reports / "judge" / "refuse" / "standard" / ln
        details = json.loads((d / "judge_details.json").read_text())
        assert details and all(list(x) == list(DETAIL_KEYS) for x in details)
        assert set(json.loads((d / "judge_metrics.json").read_text())) == {
            "overall",
            "by_question_type",
            "by_question_subtype",
            "by_task_key",
        }
    agree = (reports / "analysis" / "judge_agreement.csv").read_text()
    assert "llm,deterministic,closed-form task keys,overall" in agree
    page = (reports / "index.html").read_text()
    for ref in re.findall(r'(?:src|href)="([^"#][^"]*)"', page):
        assert (reports / ref).is_file(), ref
    # MLflow: figures, tables and official files are artifacts of the system's runs
    from memlens.core.compose import load_settings
    from memlens.core.config import Paths
    from memlens.eval.benchmark import dataset_hash
    from memlens.eval.tracking import Tracker

    cfg = load_settings([*TINY, "model=refuse"], root=root)
    ds = dataset_hash(cfg, Paths(root))
    tracker = Tracker(root, cfg.tracking, ds)
    runs = [r for r in tracker.runs(dataset_hash=ds) if r["system"] == "refuse"]
    assert {r["length"] for r in runs} == {"32k", "64k"}
    for r in runs:
        names = {a.path for a in tracker.client.list_artifacts(r["run_id"])}
        ln = r["length"]
        assert {"analysis", "judge", "plots", "index.html", f"{ln}.jsonl", f"{ln}.deterministic.jsonl"} <= names
        judge_files = {a.path for a in tracker.client.list_artifacts(r["run_id"], "judge")}
        assert judge_files == {"judge/judge_details.json", "judge/judge_metrics.json"}
        assert "acc_ci_low" in r["metrics"] and r["metrics"]["coverage"] == 1.0 and r["complete"]
