"""MLflow tracking into a temporary SQLite store: runs, params, metrics and tags read back; no secrets."""

from __future__ import annotations

import json
import time

import pytest
from omegaconf import OmegaConf

from memlens.eval.tracking import Tracker, flatten_params, tracking_uri

SECRET = "sk-live-0123456789abcdef"
PARAMS = {
    "model": {
        "name": "m1",
        "base_url": "http://127.0.0.1:8000/v1",
        "api_key": SECRET,
        "API_KEY": SECRET,
        "openai-key": SECRET,
        "api_key_env": "OPENAI_API_KEY",
        "max_new_tokens": 2048,
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}, "keys": [SECRET]},
    },
    "eval": {"mode": "standard", "lengths": ["32k", "64k"]},
    "dataset_hash": "ab" * 32,
    "seed": 42,
}
METRICS = {
    "acc": 0.5,
    "acc_ci_low": 0.3,
    "acc_ci_high": 0.7,
    "acc__IE": 0.25,
    "acc__IE_ci_low": 0.1,
    "acc__IE_ci_high": 0.4,
    "n": 20,
    "refusal_rate": None,
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    base = tmp_path_factory.mktemp("mlflow")
    root = base / "proj"
    root.mkdir()
    tcfg = OmegaConf.create({"uri": f"sqlite:///{base / 'store' / 'runs.db'}", "experiment": None})
    (base / "store").mkdir()
    tracker = Tracker(root, tcfg, dataset_hash="0123456789abcdef" * 4)
    art = root / "pred.jsonl"
    art.write_text('{"question_id": "q1"}\n')
    ids = {
        "first": tracker.log_run(
            system="m1",
            mode="standard",
            length="32k",
            params=PARAMS,
            metrics=METRICS,
            tags={"dataset_hash": "ab" * 32, "judge": "deterministic"},
            artifacts=[art, root / "missing.jsonl"],
            texts={"notes/readme.txt": "hello"},
        ),
        "cot": tracker.log_run(
            system="m1", mode="cot", length="32k", params=PARAMS, metrics={"acc": 0.6}, tags={}, artifacts=[]
        ),
    }
    time.sleep(0.05)  # start times are in milliseconds: keep "latest" strictly later
    ids |= {
        "latest": tracker.log_run(
            system="m1",
            mode="standard",
            length="32k",
            params=PARAMS,
            metrics={**METRICS, "acc": 0.55},
            tags={},
            artifacts=[],
        )
    }
    return base, root, tracker, ids


def test_store_lives_where_tracking_uri_points(store):
    base, root, tracker, _ = store
    assert (base / "store" / "runs.db").is_file()
    assert not (root / "mlflow.db").exists()
    assert tracker.experiment_name == "memlens-0123456789"  # named after the dataset hash prefix
    assert tracking_uri(root, OmegaConf.create({"uri": None})) == f"sqlite:///{(root / 'mlflow.db').resolve()}"


def test_run_reads_back_with_params_metrics_tags_and_artifacts(store):
    _, _, tracker, ids = store
    run = tracker.client.get_run(ids["first"])
    assert run.info.run_name == "m1@32k"
    p = run.data.params
    assert p["model.name"] == "m1" and p["model.api_key_env"] == "OPENAI_API_KEY" and p["seed"] == "42"
    assert p["model.max_new_tokens"] == "2048" and p["eval.lengths"] == str(["32k", "64k"])
    assert p["model.extra_body.chat_template_kwargs.enable_thinking"] == "False"
    assert run.data.metrics == {k: float(v) for k, v in METRICS.items() if v is not None}  # None is not logged
    keys = set(run.data.metrics)
    assert not any(b.startswith(a + "/") for a in keys for b in keys)  # no name is a path-prefix of another
    t = run.data.tags
    assert (t["system"], t["mode"], t["length"], t["judge"]) == ("m1", "standard", "32k", "deterministic")
    arts = sorted(a.path for a in tracker.client.list_artifacts(ids["first"]))
    assert arts == ["notes", "pred.jsonl"]  # the missing file is skipped
    assert [a.path for a in tracker.client.list_artifacts(ids["first"], "notes")] == ["notes/readme.txt"]


def test_no_secret_is_logged(store):
    _, _, tracker, ids = store
    for rid in ids.values():
        run = tracker.client.get_run(rid)
        blob = json.dumps([dict(run.data.params), dict(run.data.tags)])
        assert SECRET not in blob
        assert not any("key" in k.lower() and not k.endswith("_env") for k in run.data.params)
    assert SECRET not in json.dumps(flatten_params(PARAMS))


def test_modes_get_their_own_run_name_and_latest_run_wins(store):
    _, _, tracker, ids = store
    assert tracker.client.get_run(ids["cot"]).info.run_name == "m1[cot]@32k"
    latest = {(r["system"], r["mode"], r["length"]): r for r in tracker.latest_runs()}
    assert set(latest) == {("m1", "standard", "32k"), ("m1", "cot", "32k")}
    assert latest[("m1", "standard", "32k")]["run_id"] == ids["latest"]
    assert latest[("m1", "standard", "32k")]["metrics"]["acc"] == 0.55


def test_reopening_the_store_reuses_the_experiment(store):
    _base, root, tracker, _ = store
    again = Tracker(root, OmegaConf.create({"uri": tracker.uri, "experiment": None}), "0123456789abcdef" * 4)
    assert again.experiment_id == tracker.experiment_id
    named = Tracker(root, OmegaConf.create({"uri": tracker.uri, "experiment": "my-exp"}), "ff" * 32)
    assert named.experiment_name == "my-exp" and named.experiment_id != tracker.experiment_id
    assert named.latest_runs() == []


def test_many_params_and_long_values():
    many = {f"p{i:03d}": "x" * (600 if i == 0 else 3) for i in range(200)}
    flat = flatten_params({"grid": many})
    assert len(flat) == 200 and len(flat["grid.p000"]) == 500  # MLflow's value limit


def test_many_params_are_all_logged(store):
    _, _root, tracker, _ = store
    many = {f"p{i:03d}": i for i in range(200)}  # more than one log_params batch
    rid = tracker.log_run(
        system="wide", mode="standard", length="64k", params={"grid": many}, metrics={}, tags={}, artifacts=[]
    )
    assert len(tracker.client.get_run(rid).data.params) == 200
