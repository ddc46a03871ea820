"""Runs are keyed by what they cover: a smoke run (eval.max_items) never replaces the complete run of
the same system in MLflow or on the leaderboard; a subset run complete for its subset is ranked and
says so; a run whose judge failed on most items is failed, not ranked."""

from __future__ import annotations

import json

from memlens.core.config import Paths, load_config
from memlens.eval.tracking import Tracker
from tests.conftest import TINY, run_stage
from tests.support.fake_openai import FakeOpenAIServer

CHANCE = (*TINY, "model=chance", "eval.lengths=[32k]")


def pipeline(root, *extra) -> None:
    for stage in ("evaluate", "judge", "report"):
        assert run_stage(root, stage, *CHANCE, *extra) == 0, stage


def runs(root):
    cfg = load_config(list(CHANCE), root=root)
    paths = Paths(root)
    from memlens.eval.benchmark import dataset_hash

    ds = dataset_hash(cfg, paths)
    return Tracker(paths.root, cfg.tracking, ds).runs(dataset_hash=ds)


def test_a_smoke_run_keeps_the_complete_run_ranked(tiny_copy):
    root = tiny_copy
    pipeline(root)
    complete = [r for r in runs(root) if r["system"] == "chance"]
    assert len(complete) == 1 and complete[0]["complete"] and complete[0]["scope"] == "all"
    acc = complete[0]["metrics"]["acc"]
    pipeline(root, "eval.max_items=2")  # the smoke run
    rows = [r for r in runs(root) if r["system"] == "chance"]
    full = [r for r in rows if r["scope"] == "all"]
    partial = [r for r in rows if r["scope"].startswith("partial-")]
    assert len(full) == 1 and full[0]["run_id"] == complete[0]["run_id"] and full[0]["complete"]
    assert full[0]["metrics"]["acc"] == acc and full[0]["metrics"]["n"] == 25
    assert len(partial) == 1 and not partial[0]["complete"] and partial[0]["metrics"]["n"] == 2
    md = (root / "reports" / "leaderboard.md").read_text()
    ranked, _, apart = md.partition("## Incomplete runs")
    assert "| chance | standard | deterministic | all | 32k | 25 |" in ranked
    assert "| chance | standard | deterministic | 32k |" in apart and "eval.max_items=2" in apart
    # the cross-system verdict archive keeps the complete run's 25 verdicts too
    archived = next((root / ".memlens_cache" / "verdicts").glob("*/chance/standard/32k.deterministic.jsonl"))
    assert len(archived.read_text().splitlines()) == 25


def test_a_subset_run_is_complete_for_its_subset_and_says_so(tiny_copy):
    root = tiny_copy
    pipeline(root, "eval.subset=agent_subset_195")
    rows = [r for r in runs(root) if r["system"] == "chance"]
    assert len(rows) == 1 and rows[0]["complete"] and rows[0]["scope"] == "agent_subset_195"
    n = int(rows[0]["metrics"]["n_items"])
    assert 0 < n < 25
    md = (root / "reports" / "leaderboard.md").read_text()
    assert f"| chance | standard | deterministic | agent_subset_195 ({n}) | 32k | {n} |" in md.split("## ")[0]
    metrics = json.loads((root / "reports" / "metrics.json").read_text())
    assert metrics["32k"]["complete"] is True


def test_a_judge_that_fails_on_most_items_fails_the_run(tiny_copy):
    root = tiny_copy
    pipeline(root)
    before = (root / "data" / "verdicts" / "chance" / "standard" / "32k.deterministic.jsonl").read_bytes()
    with FakeOpenAIServer(faults=lambda i, body: "500") as server:
        judge = [
            "judge=llm",
            f"judge.base_url={server.base_url}",
            "judge.max_retries=0",
            "judge.backoff_base_s=0.01",
            "judge.cache_path=null",
        ]
        assert run_stage(root, "judge", *CHANCE, *judge) == 1  # failed, said at once
    assert not (root / "data" / "verdicts" / "chance" / "standard" / "32k.llm.jsonl").exists()
    assert (root / "data" / "verdicts" / "chance" / "standard" / "32k.deterministic.jsonl").read_bytes() == before
    # verdicts of a judge that failed (written by any means) are reported as a failed run, not ranked
    vf = root / "data" / "verdicts" / "chance" / "standard" / "32k.deterministic.jsonl"
    rows = [json.loads(x) for x in vf.read_text().splitlines()]
    for r in rows[:20]:
        r.update(correct=None, reason="judge failed: 500")
    vf.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run_stage(root, "report", *CHANCE) == 0
    md = (root / "reports" / "leaderboard.md").read_text()
    ranked, _, failed = md.partition("## Failed runs")
    assert "| chance | standard | deterministic | all | 32k | 25 |" in ranked  # the good run stays
    assert "| chance | standard | deterministic | 32k | " in failed and "the judge failed on 20 of" in failed
