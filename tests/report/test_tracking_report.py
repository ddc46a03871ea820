"""The report stage and MLflow at tiny scale: runs updated in place, the dataset as an input,
completeness (eval.max_items), the leaderboard's two tables, failure flags, the stdout table."""

from __future__ import annotations

import csv
import json

import pytest
from mlflow.entities import ViewType

from memlens.core.compose import load_settings
from memlens.core.config import Paths
from memlens.eval.benchmark import dataset_hash
from memlens.eval.tracking import DIGEST_CHARS, ROLE_PARENT, Tracker
from tests.conftest import TINY, run_stage

pytestmark = pytest.mark.slow
SECRET = "sk-report-secret-4242"


def tracker_of(root, *overrides):
    cfg = load_settings([*TINY, *overrides], root=root)
    ds = dataset_hash(cfg, Paths(root))
    return Tracker(root, cfg.tracking, ds), ds


def all_runs(tracker):
    return tracker.client.search_runs([tracker.experiment_id], run_view_type=ViewType.ALL)


def evaluate_and_judge(root, *overrides):
    for st in ("evaluate", "judge"):
        assert run_stage(root, st, *TINY, *overrides) == 0, st


def edit_verdicts(path, change):
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for i, r in enumerate(rows):
        change(i, r)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_two_reports_update_one_parent_and_its_children(tiny_copy, capsys, monkeypatch):
    root = tiny_copy
    monkeypatch.setenv("DVC_EXP_NAME", "curly-dace")
    monkeypatch.setenv("MEMLENS_JUDGE_API_KEY", SECRET)
    evaluate_and_judge(root, "model=refuse")
    assert run_stage(root, "report", *TINY, "model=refuse") == 0
    out = capsys.readouterr().out
    # the per-type table on stdout: one line per length with intervals, and the compare view
    assert "Results: refuse (mode standard, judge deterministic)" in out
    line = next(x for x in out.splitlines() if x.startswith("refuse  32k"))
    assert "100.0 [100.0-100.0]" in line and line.rstrip().endswith("complete")
    assert "http://127.0.0.1:5000/#/compare-runs?runs=" in out

    tracker, ds = tracker_of(root, "model=refuse")
    first = {r.info.run_id: r for r in all_runs(tracker)}
    # a verdict changes (e.g. a re-judge): the same runs get the new values
    vfile = root / "data" / "verdicts" / "refuse" / "standard" / "32k.deterministic.jsonl"
    ar = [i for i, r in enumerate(json.loads(x) for x in vfile.read_text().splitlines()) if r["correct"]]

    def flip(i, r):
        if i == ar[0]:
            r["correct"] = False

    edit_verdicts(vfile, flip)
    assert run_stage(root, "report", *TINY, "model=refuse") == 0
    runs = all_runs(tracker)  # deleted ones included: nothing was made anew
    assert {r.info.run_id for r in runs} == set(first)
    parents = [r for r in runs if r.data.tags["memlens.role"] == ROLE_PARENT]
    assert len(parents) == 1 and len(runs) == 3
    (parent,) = parents
    children = {r.data.tags["memlens.length"]: r for r in runs if r is not parent}
    assert set(children) == {"32k", "64k"}
    assert all(c.data.tags["mlflow.parentRunId"] == parent.info.run_id for c in children.values())
    c32 = children["32k"]
    before = first[c32.info.run_id].data.metrics
    assert c32.data.metrics["acc"] == pytest.approx(before["acc"] - 1 / 25)
    assert [m.value for m in tracker.client.get_metric_history(c32.info.run_id, "acc")] == [
        before["acc"],
        c32.data.metrics["acc"],
    ]
    assert parent.data.metrics["acc_at_32k"] == c32.data.metrics["acc"]
    assert parent.data.metrics["acc_at_64k"] == children["64k"].data.metrics["acc"]
    assert parent.data.tags["memlens.complete"] == "true" and parent.data.metrics["coverage"] == 1.0
    # the dataset: an MLflow input whose digest is the dataset hash
    for r in runs:
        (inp,) = r.inputs.dataset_inputs
        assert inp.dataset.digest == ds[:DIGEST_CHARS]
        assert {t.key: t.value for t in inp.tags}["memlens.dataset_hash"] == ds
        assert json.loads(inp.dataset.source)["uri"] == str((root / "data").resolve())
        assert inp.dataset.name == "memlens-tiny"
    # tags: dataset, system key, judge, protocol, DVC experiment; no secret anywhere; metric names
    manifest = json.loads((root / "data" / "predictions" / "refuse" / "manifest.json").read_text())
    for r in runs:
        t = r.data.tags
        assert t["memlens.dataset_hash"] == ds and t["memlens.system_key"] == manifest["system_key"]
        assert t["memlens.judge"] == "deterministic" and t["memlens.prompt_protocol"] == manifest["prompt_protocol"]
        assert t["memlens.dvc_exp_name"] == "curly-dace"
        assert SECRET not in json.dumps([dict(r.data.params), dict(t)])
        assert r.data.params["model.name"] == "refuse" and r.data.params["dataset_hash"] == ds
    keys = {k for r in runs for k in r.data.metrics}
    assert not any(b.startswith(a + "/") for a in keys for b in keys)
    assert not any(k.endswith("_n") for k in keys)  # per-column counts stay in the tables


def test_incomplete_runs_are_tagged_and_kept_off_the_ranking(tiny_copy, capsys):
    root = tiny_copy
    evaluate_and_judge(root, "model=refuse")
    # refuse: 2 of its 25 verdicts at 32k failed (8% > 5%): complete, but flagged
    vfile = root / "data" / "verdicts" / "refuse" / "standard" / "32k.deterministic.jsonl"

    def fail(i, r):
        if i < 2:
            r["correct"] = None

    edit_verdicts(vfile, fail)
    assert run_stage(root, "report", *TINY, "model=refuse") == 0
    evaluate_and_judge(root, "model=chance", "eval.max_items=3")
    capsys.readouterr()
    assert run_stage(root, "report", *TINY, "model=chance", "eval.max_items=3") == 0
    out = capsys.readouterr().out
    assert "INCOMPLETE (12% covered)" in out

    tracker, ds = tracker_of(root)
    rows = {(r["system"], r["length"]): r for r in tracker.runs(dataset_hash=ds)}
    chance = rows[("chance", "32k")]
    assert not chance["complete"] and chance["tags"]["memlens.complete"] == "false"
    assert chance["metrics"]["coverage"] == pytest.approx(3 / 25) and chance["metrics"]["n"] == 3
    assert "eval.max_items=3" in chance["tags"]["memlens.incomplete_reason"]
    (cparent,) = [r for r in tracker.runs(dataset_hash=ds, role=ROLE_PARENT) if r["system"] == "chance"]
    assert cparent["tags"]["memlens.complete"] == "false"
    refuse = rows[("refuse", "32k")]
    assert refuse["complete"] and refuse["metrics"]["failure_rate"] == pytest.approx(2 / 25)
    assert refuse["tags"]["memlens.high_failure_rate"] == "true"
    assert rows[("refuse", "64k")]["tags"]["memlens.high_failure_rate"] == "false"

    board = (root / "reports" / "leaderboard.md").read_text()
    ranked, partial = board.split("## Incomplete runs")
    assert "| refuse | standard | deterministic | all | 32k |" in ranked and "| chance |" not in ranked
    assert "2 (8.0%) ⚠" in ranked and "more than 5% of the items failed" in ranked
    assert (
        "| chance | standard | deterministic | 32k | 12.0% | 3 / 25 | eval.max_items=3; 3 of 25 items judged |"
        in partial
    )
    with open(root / "reports" / "leaderboard.csv") as fh:
        table = list(csv.DictReader(fh))
    assert {r["system"] for r in table} == {"refuse"}
    assert {(r["length"], r["flagged"]) for r in table} == {("32k", "true"), ("64k", "false")}

    # the full evaluation is a run of its own (runs are keyed by what they cover): the complete parent
    # is ranked, the partial one stays as it was, listed apart, never replacing or replaced
    evaluate_and_judge(root, "model=chance")
    assert run_stage(root, "report", *TINY, "model=chance") == 0
    parents = [r for r in tracker.runs(dataset_hash=ds, role=ROLE_PARENT) if r["system"] == "chance"]
    complete = [r for r in parents if r["complete"]]
    assert len(parents) == 2 and len(complete) == 1 and complete[0]["run_id"] != cparent["run_id"]
    assert tracker.client.get_run(cparent["run_id"]).info.lifecycle_stage == "active"
    board = (root / "reports" / "leaderboard.md").read_text()
    ranked, partial = board.split("## Incomplete runs")
    assert "| chance | standard | deterministic | all | 32k |" in ranked
    assert "| chance | standard | deterministic | 32k | 12.0% | 3 / 25 |" in partial


def test_predictions_of_another_benchmark_are_refused(tiny_copy, capsys):
    root = tiny_copy
    evaluate_and_judge(root, "model=refuse")
    mpath = root / "data" / "predictions" / "refuse" / "manifest.json"
    m = json.loads(mpath.read_text())
    m["dataset_sha256"] = "ab" * 32
    mpath.write_text(json.dumps(m))
    capsys.readouterr()
    assert run_stage(root, "report", *TINY, "model=refuse") == 2
    err = capsys.readouterr().err
    assert "made on benchmark abababababab" in err and "memlens evaluate" in err and "Traceback" not in err
    assert not (root / "mlflow.db").exists()


def test_without_tracking_the_leaderboard_shows_this_system(tiny_copy, capsys):
    root = tiny_copy
    evaluate_and_judge(root, "model=chance", "eval.max_items=3")
    assert run_stage(root, "report", *TINY, "model=chance", "eval.max_items=3", "tracking.enabled=false") == 0
    assert "MLflow" not in capsys.readouterr().out
    assert not (root / "mlflow.db").exists()
    board = (root / "reports" / "leaderboard.md").read_text()
    assert "(no complete run yet)" in board and "| chance | standard | deterministic | 64k | 12.0% |" in board
    metrics = json.loads((root / "reports" / "metrics.json").read_text())
    assert metrics["complete"] is False and metrics["32k"]["coverage"] == 0.12 and metrics["32k"]["complete"] is False
