"""End to end at tiny scale: five sized stand-ins and an agent stand-in evaluated and judged, then one
report run: the taxonomy, modality, retention vs size, backbone-matched and LLM-labelled tables in
reports/analysis/, gaps with their MDE in the leaderboard, the taxonomy's shares in MLflow."""

from __future__ import annotations

import csv
import json

import pytest

from tests.conftest import TINY, run_stage
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.slow

STANDINS = ["standin-2b", "standin-8b", "standin-30b-a3b", "standin-72b", "standin-235b-a22b", "standin-agent-8b"]


def labeller(body):
    """A stand-in LLM labeller: a refusal is a false refusal, anything else unsupported."""
    text = body["messages"][-1]["content"]
    answer = text.rsplit("System answer:", 1)[1].lower()
    return json.dumps({"label": "false_refusal" if "insufficient" in answer else "unsupported_answer"})


def rows(path):
    return list(csv.DictReader(path.open()))


def test_report_carries_the_diagnostics(tiny_copy):
    root = tiny_copy
    for m in STANDINS:
        assert run_stage(root, "evaluate", *TINY, f"model={m}") == 0
        assert run_stage(root, "judge", *TINY, f"model={m}") == 0
    with FakeOpenAIServer(responder=labeller) as server:
        llm = f"+report={{llm_labels: {{base_url: '{server.base_url}', model: labeller, api_key_env: null}}}}"
        assert run_stage(root, "report", *TINY, "model=standin-8b", llm) == 0
        sent = server.request_count
        assert sent > 0
        assert run_stage(root, "report", *TINY, "model=standin-8b", llm) == 0
        assert server.request_count == sent  # every label came from the cache
    out = root / "reports" / "analysis"
    tax = rows(out / "taxonomy.csv")
    assert {r["system"] for r in tax} == {*STANDINS, "all systems"}
    assert {r["level"] for r in tax} == {"overall", "type", "subtype"} and {r["length"] for r in tax} == {"32k", "64k"}
    pooled = [r for r in tax if r["system"] == "all systems" and r["level"] == "overall"]
    assert all(abs(float(r["near_miss"]) + float(r["total_miss"]) - 1) < 1e-6 for r in pooled)
    items = rows(out / "taxonomy_items.csv")
    assert {r["source"] for r in items} >= {"refusal_on_answerable", "not_in_history", "answer_on_refusal_item"}
    mods = rows(out / "modality.csv")
    assert {r["group"] for r in mods} >= {"overall", "IE", "KU"} and "AR" not in {r["group"] for r in mods}
    # retention vs size: the five sized stand-ins (the agent is shown, not correlated)
    ret = (out / "retention.md").read_text()
    assert "Spearman rho (retention vs total parameters)" in ret and "(5 sized systems other than agents)" in ret
    bb = rows(out / "backbone.csv")
    assert {(r["agent"], r["backbone"]) for r in bb} == {("standin-agent-8b", "standin-8b")}
    assert {r["group"] for r in bb} >= {"overall"} and all(r["n"] for r in bb)
    agree = (out / "taxonomy_llm_agreement.md").read_text()
    assert "labeller@prompt-1" in agree and "Cohen's kappa" in agree
    summary = json.loads((out / "summary.json").read_text())
    assert summary["taxonomy_llm_agreement"]["n"] > 0 and summary["cards"]["standin-agent-8b"]["backbone_config"]
    assert summary["retention_summary"]["n_systems"] == 5
    deg = rows(out / "degradation.csv")
    assert all("mde" in r and "resolved" in r for r in deg)
    page = (root / "reports" / "index.html").read_text()
    for section in ("Error taxonomy", "Modality of the errors", "Retention vs model size", "Backbone-matched"):
        assert section in page
    # MLflow: the reported system's runs carry its taxonomy shares
    from memlens.core.config import Paths, load_config
    from memlens.eval.benchmark import dataset_hash
    from memlens.eval.tracking import Tracker

    cfg = load_config([*TINY, "model=standin-8b"], root=root)
    ds = dataset_hash(cfg, Paths(root))
    runs = [r for r in Tracker(root, cfg.tracking, ds).runs(dataset_hash=ds) if r["system"] == "standin-8b"]
    assert runs and all("err_near_miss" in r["metrics"] and "err__false_refusal" in r["metrics"] for r in runs)
    assert all("err_modality__Visual" in r["metrics"] for r in runs)
    # and nothing that overwrites a run metric (a run's coverage is its completeness) or is a count column
    assert all(r["metrics"]["err_count"] > 0 and r["metrics"]["coverage"] == 1.0 for r in runs)
    assert not any(k.endswith("_n") for r in runs for k in r["metrics"])
