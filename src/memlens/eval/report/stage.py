"""report stage: metrics with intervals, MLflow runs, the leaderboard, analyses, figures and a page.

For the configured system and mode (DVC-tracked, deterministic: they depend only on this system's
verdicts):

* ``reports/metrics.json`` (``dvc metrics show`` / ``dvc exp show``): accuracy overall / per type
  with 95% bootstrap intervals, refusal rate, coverage and per-answer accuracy per length, and the
  length transitions of this system (exact McNemar p, churn, Jaccard vs random);
* ``reports/plots/accuracy_by_length.{csv,png}`` (``dvc plots show``);
* ``reports/judge/<system>/<mode>/<length>/judge_{details,metrics}.json``: the configured judge's
  verdicts in the official MEMLENS layout.

Across every system (not DVC outputs: they depend on other systems' verdicts or on MLflow state):

* ``reports/analysis/``: every cross-system analysis (:mod:`memlens.eval.report.crossreport`);
* ``reports/leaderboard.{md,csv}`` and ``reports/leaderboard_by_length.png`` from MLflow;
* ``reports/index.html``: one static page gathering all of the above.

MLflow: one run per (system, mode, length) with every metric and its interval bounds; the figures,
tables, official judge files and the page are logged as artifacts of this system's runs.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from memlens.core.config import Paths, length_tokens, section
from memlens.core.errors import DataError
from memlens.core.io import read_records, write_json
from memlens.core.schema import Verdict
from memlens.eval.benchmark import dataset_hash, open_benchmark
from memlens.eval.report.leaderboard import write_leaderboard
from memlens.eval.report.metrics import system_metrics, type_columns
from memlens.eval.report.plots import plot_length_curves

#: Report outputs that depend on other systems' verdicts or on MLflow state (not DVC outputs).
CROSS_SYSTEM_OUTPUTS = (
    "reports/analysis/",
    "reports/index.html",
    "reports/leaderboard.md",
    "reports/leaderboard.csv",
    "reports/leaderboard_by_length.png",
)

log = logging.getLogger(__name__)


def load_verdicts(paths: Paths, system: str, mode: str, judge: str) -> dict[str, list[Verdict]]:
    d = paths.verdicts / system / mode
    out = {}
    for p in sorted(d.glob(f"*.{judge}.jsonl")):
        out[p.name[: -len(f".{judge}.jsonl")]] = read_records(p, Verdict)
    if not out:
        raise DataError(f"{d}: no verdicts of judge {judge!r}; run `memlens judge` first")
    return dict(sorted(out.items(), key=lambda kv: length_tokens(kv[0])))


def _report_option(cfg, key: str, default):
    from omegaconf import OmegaConf

    v = OmegaConf.select(cfg, f"report.{key}", default=None)
    return default if v is None else v


def system_transitions(by_length: dict[str, list[Verdict]]) -> dict[str, dict]:
    """Adjacent length transitions of one system (overall): McNemar exact p, churn, Jaccard vs random."""
    import numpy as np

    from memlens.eval.report import stats

    if len(by_length) < 2:
        return {}
    qids = sorted({v.question_id for vs in by_length.values() for v in vs})
    pos = {q: i for i, q in enumerate(qids)}
    outcomes = {}
    for ln, vs in by_length.items():
        x = np.full(len(qids), np.nan)
        for v in vs:
            x[pos[v.question_id]] = 1.0 if v.correct else 0.0
        outcomes[ln] = x
    deg = stats.length_degradation(outcomes)
    jac = {(r["from"], r["to"]): r for r in stats.jaccard_stability(outcomes, method="exact")}
    out = {}
    for r in deg:
        j = jac[(r["from"], r["to"])]
        flips = r["b01"] + r["b10"]
        rec = {
            "n": r["n"],
            "delta": r["delta"],
            "b01": r["b01"],
            "b10": r["b10"],
            "p_mcnemar": r["p"],
            "churn": flips / r["n"] if r["n"] else 0.0,
            "jaccard": j["jaccard"],
            "jaccard_ratio": j["ratio"],
        }
        out[f"{r['from']}_to_{r['to']}"] = {k: round(float(v), 6) for k, v in rec.items() if v is not None and v == v}
    return out


def write_official_files(paths: Paths, system: str, mode: str, by_length: dict[str, list[Verdict]]) -> dict[str, dict]:
    """The configured judge's verdicts in the official layout, per length (facts §4.8)."""
    from memlens.eval.judge.official import write_official
    from memlens.eval.results import PredictionStore

    out = {}
    for ln, vs in by_length.items():
        preds = None
        if any("original_len" not in (v.details or {}) for v in vs):
            pf = paths.predictions / system / mode / f"{ln}.jsonl"
            if pf.is_file():
                preds = PredictionStore(paths.predictions, system, mode, ln).load()
        out[ln] = write_official(paths.reports / "judge" / system / mode / ln, vs, preds)
    return out


def run(cfg, paths: Paths) -> None:
    system, mode, judge = str(cfg.model.name), str(cfg.eval.mode), str(cfg.judge.name)
    source = open_benchmark(cfg, paths)
    questions = source.questions
    tcfg = cfg.tracking
    n_res, seed = int(tcfg.bootstrap_resamples), int(tcfg.bootstrap_seed)
    by_length = load_verdicts(paths, system, mode, judge)
    per_length = {ln: system_metrics(questions, vs, n_resamples=n_res, seed=seed) for ln, vs in by_length.items()}
    reports = paths.reports
    (reports / "plots").mkdir(parents=True, exist_ok=True)
    # DVC metrics: the current system, per length
    dvc_metrics = {"system": system, "mode": mode, "judge": judge}
    for ln, m in per_length.items():
        keep = [
            "acc",
            "acc_ci_low",
            "acc_ci_high",
            *[f"{c}{suffix}" for c in type_columns(m) for suffix in ("", "_ci_low", "_ci_high")],
            "n",
            "n_failed",
            "refusal_rate",
            "per_answer_acc",
        ]
        dvc_metrics[ln] = {k: m[k] for k in keep if k in m}
        if "refusal_rate" in m:
            dvc_metrics[ln]["coverage"] = round(1.0 - m["refusal_rate"], 6)
    transitions = system_transitions(by_length)
    if transitions:
        dvc_metrics["transitions"] = transitions
    write_json(reports / "metrics.json", dvc_metrics)
    lines = ["length,type,accuracy,ci_low,ci_high"]
    for ln, m in per_length.items():
        for key in ["acc", *type_columns(m)]:
            t = "overall" if key == "acc" else key.split("__", 1)[1]
            lines.append(f"{ln},{t},{m[key]:.6f},{m[key + '_ci_low']:.6f},{m[key + '_ci_high']:.6f}")
    (reports / "plots" / "accuracy_by_length.csv").write_text("\n".join(lines) + "\n")
    # DVC-tracked figure: this system only (reproducible)
    sys_fig = plot_length_curves(
        [{"system": system, "mode": mode, "length": ln, "metrics": m} for ln, m in per_length.items()],
        reports / "plots" / "accuracy_by_length.png",
        mode=mode,
    )
    official = write_official_files(paths, system, mode, by_length)

    # cross-system analyses from every verdict file present (not DVC outputs)
    from memlens.eval.report.crossreport import build_analyses, write_index

    bundle = build_analyses(
        paths.verdicts,
        reports,
        judge=judge,
        mode="standard",
        questions=questions,
        n_resamples=n_res,
        seed=seed,
        alpha=float(_report_option(cfg, "alpha", 0.05)),
        hard_threshold=float(_report_option(cfg, "hard_threshold", 0.2)),
        reference_length=_report_option(cfg, "hard_reference_length", None),
        test_direction=str(_report_option(cfg, "degradation_test_direction", "any")),
    )

    ds_hash = dataset_hash(cfg, paths)
    rows = [{"system": system, "mode": mode, "length": ln, "metrics": m} for ln, m in per_length.items()]
    note = f"Benchmark `{ds_hash[:12]}`."
    tracker, run_ids = None, {}
    if tcfg.enabled:
        from memlens.eval.tracking import Tracker, git_commit

        tracker = Tracker(paths.root, tcfg, ds_hash)
        tags = {
            "dataset_hash": ds_hash,
            "git_commit": git_commit(paths.root),
            "dvc_exp_name": os.environ.get("DVC_EXP_NAME", ""),
            "judge": judge,
            "dvc_baseline_rev": os.environ.get("DVC_EXP_BASELINE_REV", ""),
        }
        params = {
            "model": section(cfg, "model")["model"],
            "eval": section(cfg, "eval")["eval"],
            "judge": section(cfg, "judge")["judge"],
            "dataset_hash": ds_hash,
            "lengths": ",".join(per_length),
            "seed": int(cfg.data.seed),
            "scale": str(cfg.data.scale),
            "data_source": str(cfg.data.get("items", "built")),
            **tags,
        }
        for ln, m in per_length.items():
            arts = [
                paths.predictions / system / mode / f"{ln}.jsonl",
                paths.verdicts / system / mode / f"{ln}.{judge}.jsonl",
            ]
            metrics = dict(m)
            if mode == bundle.mode:
                metrics.update(bundle.per_run_metrics(system, ln))
            run_ids[ln] = tracker.log_run(
                system=system, mode=mode, length=ln, params=params, metrics=metrics, tags=tags, artifacts=arts
            )
        rows = tracker.latest_runs()
        note += f" MLflow experiment `{tracker.experiment_name}` ({len({r['system'] for r in rows})} systems)."
    # leaderboard files: every tracked system
    write_leaderboard(rows, reports, note=note)
    plot_length_curves(rows, reports / "leaderboard_by_length.png")
    index = write_index(
        reports,
        bundle,
        system=system,
        mode=mode,
        judge=judge,
        note=f"{note} Analyses use the verdicts of judge `{judge}` found under data/verdicts/.",
    )
    if tracker is not None:
        shared = [(p, "analysis") for p in bundle.files] + [
            (index, ""),
            (sys_fig, "plots"),
            (reports / "metrics.json", ""),
        ]
        for ln, run_id in run_ids.items():
            own = [(Path(official[ln]["details"]), "judge"), (Path(official[ln]["metrics"]), "judge")]
            for p, sub in [*shared, *own]:
                if p.is_file():
                    tracker.client.log_artifact(run_id, str(p), sub or None)
    for ln, m in per_length.items():
        log.info(
            "report %s/%s@%s: acc %.1f%% [%.1f, %.1f] (n=%d)",
            system,
            mode,
            ln,
            100 * m["acc"],
            100 * m["acc_ci_low"],
            100 * m["acc_ci_high"],
            m["n"],
        )
    log.info("report: %s", index)
