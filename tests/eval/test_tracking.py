"""MLflow tracking into a temporary SQLite store: a parent run per evaluation and a child run per
length, found again by their run key and updated in place; datasets, params, tags; no secrets."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from urllib.parse import unquote

import pytest
from mlflow.entities import ViewType
from omegaconf import OmegaConf

from memlens.eval import tracking as T
from memlens.eval.tracking import (
    DatasetSpec,
    Evaluation,
    RunSpec,
    Tracker,
    compare_url,
    dvc_tags,
    flatten_params,
    is_secret_key,
    run_key,
    tracking_uri,
)

SECRET = "sk-live-0123456789abcdef"
DS = "0123456789abcdef" * 4
PARAMS = {
    "model": {
        "name": "m1",
        "base_url": "http://127.0.0.1:8000/v1",
        "api_key": SECRET,
        "API_KEY": SECRET,
        "openai-key": SECRET,
        "hf_token": SECRET,
        "client_secret": SECRET,
        "db_password": SECRET,
        "env": {"HF_TOKEN": SECRET, "CUDA_VISIBLE_DEVICES": "0"},
        "extra_args": ["--api-key", SECRET],
        "api_key_env": "OPENAI_API_KEY",
        "max_new_tokens": 2048,
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}, "keys": [SECRET]},
    },
    "eval": {"mode": "standard", "lengths": ["32k", "64k"], "max_items": None},
    "data": {"tokens": {"tokenizer": "minilm"}},
    "dataset_hash": DS,
    "seed": 42,
}


def child(acc: float, **extra) -> RunSpec:
    return RunSpec(
        metrics={
            "acc": acc,
            "acc_ci_low": acc - 0.2,
            "acc_ci_high": acc + 0.2,
            "acc__IE": 0.25,
            "acc__IE_ci_low": 0.1,
            "acc__IE_ci_high": 0.4,
            "acc__MSR__counting": 0.5,
            "n": 20,
            "coverage": 1.0,
            "refusal_rate": None,  # None is not logged
            **extra,
        },
        tags={"memlens.complete": "true"},
    )


def evaluation(acc: float = 0.5, *, params=PARAMS, system="m1", judge="deterministic", ds=DS, tags=None) -> Evaluation:
    return Evaluation(
        system=system,
        mode="standard",
        judge=judge,
        dataset_hash=ds,
        params=params,
        tags={"memlens.system_key": "k" * 64, **(tags or {})},
        dataset=DatasetSpec(
            name="memlens-tiny",
            digest=ds,
            source="/tmp/memlens-data",
            rows=[{"length": "32k", "question_type": "IE", "question_subtype": "entity", "items": 3}],
        ),
        summary=RunSpec(
            metrics={"acc_at_32k": acc, "acc_at_64k": acc - 0.1, "acc_avg": acc - 0.05, "coverage": 1.0},
            tags={"memlens.complete": "true"},
            description="summary",
        ),
        lengths={"32k": child(acc), "64k": child(acc - 0.1)},
    )


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory):
    """A store with its tables made once (about a second); each test works on a copy."""
    d = tmp_path_factory.mktemp("template")
    uri = f"sqlite:///{d / 'runs.db'}"
    Tracker(d, OmegaConf.create({"uri": uri, "experiment": "template"}), DS)
    return d / "runs.db"


@pytest.fixture()
def tracker(tmp_path, empty_store):
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "store").mkdir()
    shutil.copy(empty_store, tmp_path / "store" / "runs.db")
    tcfg = OmegaConf.create({"uri": f"sqlite:///{tmp_path / 'store' / 'runs.db'}", "experiment": None})
    return Tracker(root, tcfg, dataset_hash=DS)


def all_runs(tracker, deleted=False):
    view = ViewType.ALL if deleted else ViewType.ACTIVE_ONLY
    return tracker.client.search_runs([tracker.experiment_id], run_view_type=view)


def test_store_lives_where_tracking_uri_points(tracker, tmp_path):
    assert (tmp_path / "store" / "runs.db").is_file()
    assert not (tmp_path / "proj" / "mlflow.db").exists()
    assert tracker.experiment_name == "memlens-0123456789"  # one experiment per benchmark build
    assert tracker.client.get_experiment(tracker.experiment_id).tags[T.DATASET] == DS
    root = tmp_path / "proj"
    assert tracking_uri(root, OmegaConf.create({"uri": None})) == f"sqlite:///{(root / 'mlflow.db').resolve()}"


def test_parent_and_children_are_updated_in_place(tracker):
    first = tracker.log_evaluation(evaluation(0.5))
    time.sleep(0.01)
    second = tracker.log_evaluation(evaluation(0.7))
    assert second.parent == first.parent and second.children == first.children and not second.replaced
    runs = all_runs(tracker, deleted=True)  # nothing deleted either
    assert len(runs) == 3
    by_id = {r.info.run_id: r for r in runs}
    parent = by_id[first.parent]
    assert parent.info.run_name == "m1" and parent.data.tags[T.ROLE] == T.ROLE_PARENT
    assert parent.data.metrics["acc_at_32k"] == 0.7 and parent.data.tags["mlflow.note.content"] == "summary"
    for ln, rid in first.children.items():
        r = by_id[rid]
        assert r.info.run_name == f"m1@{ln}" and r.info.status == "FINISHED"
        assert r.data.tags[T.PARENT] == first.parent and r.data.tags[T.LENGTH] == ln
        assert r.data.tags[T.RUN_KEY] == run_key("m1", "standard", DS, "deterministic", ln)
        assert r.data.params["length"] == ln
    c32 = by_id[first.children["32k"]]
    assert c32.data.metrics["acc"] == 0.7  # the latest value ...
    assert [m.value for m in tracker.client.get_metric_history(c32.info.run_id, "acc")] == [0.5, 0.7]  # ... and history
    assert "refusal_rate" not in c32.data.metrics


def test_dataset_is_logged_as_input_with_the_dataset_hash(tracker):
    logged = tracker.log_evaluation(evaluation())
    tracker.log_evaluation(evaluation())
    for rid in [logged.parent, *logged.children.values()]:
        (inp,) = tracker.client.get_run(rid).inputs.dataset_inputs  # logged twice, stored once
        assert inp.dataset.digest == DS[: T.DIGEST_CHARS]  # MLflow keeps at most 36 characters ...
        tags = {t.key: t.value for t in inp.tags}
        assert tags[T.DATASET] == DS  # ... the whole hash is the input's tag
        assert tags["mlflow.data.context"] == "evaluation"
        assert inp.dataset.name == "memlens-tiny" and json.loads(inp.dataset.source) == {"uri": "/tmp/memlens-data"}
        assert json.loads(inp.dataset.profile)["num_rows"] == 1


def test_changed_params_make_the_runs_anew(tracker):
    first = tracker.log_evaluation(evaluation())
    changed = json.loads(json.dumps(PARAMS))
    changed["model"]["max_new_tokens"] = 16
    second = tracker.log_evaluation(evaluation(params=changed))
    assert second.parent != first.parent and set(second.replaced) == {first.parent, *first.children.values()}
    active = all_runs(tracker)
    assert len(active) == 3 and {r.info.run_id for r in active} == {second.parent, *second.children.values()}
    assert tracker.client.get_run(second.children["32k"]).data.params["model.max_new_tokens"] == "16"
    assert tracker.client.get_run(first.parent).info.lifecycle_stage == "deleted"  # restorable, not purged


def test_metrics_no_longer_produced_make_the_run_anew(tracker):
    first = tracker.log_evaluation(evaluation())
    ev = evaluation()
    del ev.lengths["64k"].metrics["acc__MSR__counting"]
    second = tracker.log_evaluation(ev)
    assert second.replaced == [first.children["64k"]] and second.children["32k"] == first.children["32k"]
    assert "acc__MSR__counting" not in tracker.client.get_run(second.children["64k"]).data.metrics


def test_stale_tags_are_removed_and_duplicates_resolved(tracker):
    ev = evaluation()
    ev.summary.tags = {"memlens.complete": "false", "memlens.incomplete_reason": "64k: eval.max_items=3"}
    first = tracker.log_evaluation(ev)
    # a second run with the same key, e.g. from two reports at once
    dup = tracker.client.create_run(
        tracker.experiment_id, tags={T.RUN_KEY: run_key("m1", "standard", DS, "deterministic")}
    )
    tracker.client.set_terminated(dup.info.run_id)
    assert len(tracker.runs(role=T.ROLE_PARENT)) == 1  # readers see one run per key
    second = tracker.log_evaluation(evaluation())
    assert second.parent == first.parent  # the oldest is kept
    assert tracker.client.get_run(dup.info.run_id).info.lifecycle_stage == "deleted"
    tags = tracker.client.get_run(first.parent).data.tags
    assert tags["memlens.complete"] == "true" and "memlens.incomplete_reason" not in tags


def test_no_secret_is_logged(tracker):
    logged = tracker.log_evaluation(evaluation())
    for rid in [logged.parent, *logged.children.values()]:
        run = tracker.client.get_run(rid)
        blob = json.dumps([dict(run.data.params), dict(run.data.tags)])
        assert SECRET not in blob
        assert not any(is_secret_key(k.rsplit(".", 1)[-1]) for k in run.data.params)
        p = run.data.params
        assert p["model.api_key_env"] == "OPENAI_API_KEY" and p["model.env.CUDA_VISIBLE_DEVICES"] == "0"
        assert p["model.max_new_tokens"] == "2048" and p["data.tokens.tokenizer"] == "minilm"
        assert p["model.extra_body.chat_template_kwargs.enable_thinking"] == "False"
        assert p["eval.lengths"] == str(["32k", "64k"]) and p["seed"] == "42"
    assert SECRET not in json.dumps(flatten_params(PARAMS))


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("OPENAI_API_KEY", True),
        ("openai-key", True),
        ("keys", True),
        ("hf_token", True),
        ("token", True),
        ("AccessToken", True),
        ("client_secret", True),
        ("password", True),
        ("db_passwd", True),
        ("aws_credentials", True),
        ("api_key_env", False),
        ("token_env", False),
        ("max_new_tokens", False),
        ("max_tokens", False),
        ("tokenizer", False),
        ("tokens", False),
        ("name", False),
    ],
)
def test_secret_keys(name, secret):
    assert is_secret_key(name) is secret


def test_metric_names_are_never_path_prefixes(tracker):
    logged = tracker.log_evaluation(evaluation())
    keys = set()
    for rid in [logged.parent, *logged.children.values()]:
        keys |= set(tracker.client.get_run(rid).data.metrics)
    assert {"acc", "acc_at_32k", "acc__MSR__counting"} <= keys
    assert not any(b.startswith(a + "/") for a in keys for b in keys)


def test_runs_are_read_back_per_dataset_and_judge(tmp_path, empty_store):
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(empty_store, tmp_path / "runs.db")
    uri = f"sqlite:///{tmp_path / 'runs.db'}"
    named = Tracker(root, OmegaConf.create({"uri": uri, "experiment": "my-exp"}), DS)  # one experiment, many datasets
    named.log_evaluation(evaluation())
    named.log_evaluation(evaluation(judge="llm"))
    other = "ff" * 32
    named.log_evaluation(evaluation(ds=other, system="m2"))
    rows = named.runs(dataset_hash=DS)
    assert sorted((r["system"], r["judge"], r["length"]) for r in rows) == [
        ("m1", "deterministic", "32k"),
        ("m1", "deterministic", "64k"),
        ("m1", "llm", "32k"),
        ("m1", "llm", "64k"),
    ]
    assert all(r["complete"] and r["dataset_hash"] == DS for r in rows)
    assert {r["system"] for r in named.runs(dataset_hash=other)} == {"m2"}
    assert len(named.runs(role=T.ROLE_PARENT)) == 3
    llm = next(r for r in named.runs(role=T.ROLE_PARENT) if r["judge"] == "llm")
    assert named.client.get_run(llm["run_id"]).info.run_name == "m1 (llm judge)"
    again = Tracker(root, OmegaConf.create({"uri": uri, "experiment": None}), DS)
    assert again.experiment_id != named.experiment_id and again.runs() == []


def test_dvc_experiment_tags(tracker, monkeypatch):
    monkeypatch.delenv("DVC_EXP_NAME", raising=False)
    monkeypatch.delenv("DVC_EXP_BASELINE_REV", raising=False)
    assert dvc_tags() == {}
    logged = tracker.log_evaluation(evaluation(tags=dvc_tags()))
    assert "memlens.dvc_exp_name" not in tracker.client.get_run(logged.parent).data.tags
    monkeypatch.setenv("DVC_EXP_NAME", "curly-dace")
    monkeypatch.setenv("DVC_EXP_BASELINE_REV", "abc123")
    assert dvc_tags() == {"memlens.dvc_exp_name": "curly-dace", "memlens.dvc_baseline_rev": "abc123"}
    tracker.log_evaluation(evaluation(tags=dvc_tags()))
    assert tracker.client.get_run(logged.children["32k"]).data.tags["memlens.dvc_exp_name"] == "curly-dace"


def test_artifacts_are_overwritten(tracker, tmp_path):
    logged = tracker.log_evaluation(evaluation())
    art = tmp_path / "pred.jsonl"
    for text in ("one\n", "two\n"):
        art.write_text(text)
        tracker.log_artifacts(logged.children["32k"], [(art, None), (art, "judge"), (tmp_path / "missing.json", None)])
    names = sorted(a.path for a in tracker.client.list_artifacts(logged.children["32k"]))
    assert names == ["judge", "pred.jsonl"]  # the missing file is skipped
    local = tracker.client.download_artifacts(logged.children["32k"], "pred.jsonl", str(tmp_path / "dl"))
    assert Path(local).read_text() == "two\n"


def test_many_params_and_long_values(tracker):
    many = {f"p{i:03d}": "x" * (600 if i == 0 else 3) for i in range(200)}
    flat = flatten_params({"grid": many})
    assert len(flat) == 200 and len(flat["grid.p000"]) == 500  # MLflow's value limit
    logged = tracker.log_evaluation(evaluation(params={"grid": many}))  # more than one log batch
    assert len(tracker.client.get_run(logged.parent).data.params) == 200


def test_compare_url():
    url = compare_url(["r1", "r2"], ["7"], base="http://127.0.0.1:5000/")
    assert url.startswith("http://127.0.0.1:5000/#/compare-runs?runs=")
    assert " " not in url and '"' not in url  # a terminal links all of it
    query = unquote(url.split("?", 1)[1])
    runs, exps = (part.split("=", 1)[1] for part in query.split("&"))
    assert json.loads(runs) == ["r1", "r2"] and json.loads(exps) == ["7"]


def test_a_tracking_server_that_does_not_answer_is_one_clear_error(tmp_path):
    """With tracking.uri=http://... MLflow's client would retry for minutes; MemLens says at once
    what to start (and a file store is never mistaken for a server)."""
    import socket

    from memlens.core.errors import MemLensError

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(MemLensError, match=r"tracking server does not answer GET /health(.|\n)*mlflow server"):
        Tracker(tmp_path, OmegaConf.create({"uri": f"http://127.0.0.1:{port}"}), DS)
    assert time.monotonic() - t0 < 15
    assert T.is_server("https://mlflow.example.org") and not T.is_server(f"sqlite:///{tmp_path}/m.db")
