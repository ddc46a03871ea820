"""End to end at tiny scale: build, validate, export, evaluate, judge, report; determinism; resume."""

import json

import pytest

from memlens.core.io import sha256_file
from memlens.core.store import hash_tree
from tests.conftest import BUILD_STAGES, TINY, make_project, run_stage

pytestmark = pytest.mark.slow


def test_build_outputs_and_manifests(tiny_project):
    for d in ("ontology", "images", "filtered", "generated", "instances"):
        m = json.loads((tiny_project / "data" / d / "manifest.json").read_text())
        assert m["artifacts"], d
        for rel, sha in m["artifacts"].items():
            assert sha256_file(tiny_project / "data" / d / rel) == sha
    inst = (tiny_project / "data" / "instances" / "32k.jsonl").read_text().splitlines()
    assert inst
    for line in inst:
        r = json.loads(line)
        assert abs(r["total_tokens"] - 32768) <= 0.01 * 32768


def test_determinism_two_builds_identical(tiny_project, tmp_path):
    other = make_project(tmp_path / "again")
    for st in BUILD_STAGES:
        assert run_stage(other, st, *TINY) == 0
    for d in ("ontology", "images", "filtered", "generated", "instances"):
        assert hash_tree(other / "data" / d) == hash_tree(tiny_project / "data" / d), d
        assert (other / "data" / d / "manifest.json").read_bytes() == (
            tiny_project / "data" / d / "manifest.json"
        ).read_bytes()


def test_validate_export_evaluate_judge_report(tiny_copy):
    root = tiny_copy
    assert run_stage(root, "validate", *TINY) == 0
    validity = json.loads((root / "reports" / "validity.json").read_text())
    assert validity["gates"]["text_leakage"]["value"] == 0
    assert run_stage(root, "export", *TINY) == 0
    rel = root / "data" / "release"
    assert (rel / "dataset_32k.json").is_file() and (rel / "agent_subset_195.json").is_file()
    for model in ("refuse", "chance"):
        for st in ("evaluate", "judge", "report"):
            assert run_stage(root, st, *TINY, f"model={model}") == 0, (model, st)
    metrics = json.loads((root / "reports" / "metrics.json").read_text())
    assert metrics["system"] == "chance" and "32k" in metrics
    board = (root / "reports" / "leaderboard.md").read_text()
    assert "refuse" in board and "chance" in board
    # refuse: 100% on answer refusal, 0% on answerable types
    import csv

    with open(root / "reports" / "leaderboard.csv") as fh:
        rows = list(csv.DictReader(fh))
    ref = next(r for r in rows if r["system"] == "refuse" and r["length"] == "32k")
    assert float(ref["acc__AR"]) == 1.0 and float(ref["acc__IE"]) == 0.0
    # rerun of evaluate skips everything (resumable)
    before = (root / "data" / "predictions" / "chance" / "standard" / "32k.jsonl").read_bytes()
    assert run_stage(root, "evaluate", *TINY, "model=chance") == 0
    assert (root / "data" / "predictions" / "chance" / "standard" / "32k.jsonl").read_bytes() == before


def test_mlflow_runs_params_metrics_artifacts(tiny_copy, capsys):
    root = tiny_copy
    secret = "sk-should-never-appear"
    for st in ("validate", "evaluate", "judge"):
        assert run_stage(root, st, *TINY, "model=chance") == 0
    # a key in the config is refused before anything is written, and the message does not echo it
    capsys.readouterr()
    assert (
        run_stage(
            root, "report", *TINY, "model=chance", f"+model.api_key={secret}", f"+model.client.openai_api_key={secret}"
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "model.api_key" in err and secret not in err
    assert not (root / "mlflow.db").exists()
    assert run_stage(root, "report", *TINY, "model=chance") == 0
    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    client = MlflowClient()
    exps = [e for e in client.search_experiments() if e.name.startswith("memlens-")]
    assert len(exps) == 1
    assert run_stage(root, "report", *TINY, "model=chance") == 0  # the same evaluation again: updated in place
    from mlflow.entities import ViewType

    runs = client.search_runs([exps[0].experiment_id], run_view_type=ViewType.ALL)
    names = sorted(r.info.run_name for r in runs)
    assert names == ["chance", "chance@32k", "chance@64k"]  # one parent, one child per length
    parent = next(r for r in runs if r.info.run_name == "chance")
    children = [r for r in runs if r is not parent]
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in children)
    assert {"acc_at_32k", "acc_at_64k", "acc_avg", "coverage"} <= set(parent.data.metrics)
    r = children[0]
    for p in ("dataset_hash", "eval.lengths", "data.seed", "model.name", "model.seed", "length"):
        assert p in r.data.params, p
    for t in ("memlens.dataset_hash", "memlens.system_key", "memlens.judge", "memlens.prompt_protocol"):
        assert t in r.data.tags, t
    assert r.data.tags["memlens.complete"] == "true" and r.data.metrics["coverage"] == 1.0
    keys = {k for x in runs for k in x.data.metrics}
    assert {"acc", "acc_ci_low", "acc_ci_high", "acc__IE", "acc__IE_ci_low", "acc__AR"} <= keys
    # no metric name is a path-prefix of another
    assert not any(k2.startswith(k1 + "/") for k1 in keys for k2 in keys)
    arts = [a.path for a in client.list_artifacts(r.info.run_id)]
    assert any(a.endswith(".jsonl") for a in arts)
    blob = json.dumps([[dict(x.data.params), dict(x.data.tags)] for x in runs])
    assert secret not in blob
    assert not any("api_key" in k and not k.endswith("_env") for x in runs for k in x.data.params)
