"""report stage: metrics with intervals, MLflow runs, the leaderboard and figures.

For the configured system and mode: accuracy overall / per type / per subtype with 95% bootstrap
intervals for every length, written to ``reports/metrics.json`` (DVC metrics: ``dvc metrics show``,
``dvc exp show``) and ``reports/plots/accuracy_by_length.csv`` (DVC plots), and logged to MLflow as
one run per length. The leaderboard (``reports/leaderboard.{md,csv}``) and the length figure cover
every system tracked in the benchmark's MLflow experiment.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from memlens.config import Paths, length_tokens, section
from memlens.errors import DataError
from memlens.evaluate.sources import open_source
from memlens.report.leaderboard import write_leaderboard
from memlens.report.metrics import system_metrics, type_columns
from memlens.report.plots import plot_length_curves
from memlens.schema import Verdict
from memlens.schema.io import read_records, write_json

log = logging.getLogger(__name__)


def dataset_hash(cfg, paths: Paths) -> str:
    src = str(cfg.data.get("source", "built"))
    if src == "official":
        return open_source(cfg, paths).dataset_hash()
    h = hashlib.sha256()
    for p in (paths.generated / "manifest.json", paths.instances / "manifest.json"):
        if not p.is_file():
            raise DataError(f"{p}: missing; build the benchmark first (dvc repro assemble)")
        h.update(p.read_bytes())
    return h.hexdigest()


def load_verdicts(paths: Paths, system: str, mode: str, judge: str) -> dict[str, list[Verdict]]:
    d = paths.verdicts / system / mode
    out = {}
    for p in sorted(d.glob(f"*.{judge}.jsonl")):
        out[p.name[: -len(f".{judge}.jsonl")]] = read_records(p, Verdict)
    if not out:
        raise DataError(f"{d}: no verdicts of judge {judge!r}; run `memlens judge` first")
    return dict(sorted(out.items(), key=lambda kv: length_tokens(kv[0])))


def run(cfg, paths: Paths) -> None:
    system, mode, judge = str(cfg.model.name), str(cfg.eval.mode), str(cfg.judge.name)
    source = open_source(cfg, paths)
    questions = source.questions
    tcfg = cfg.tracking
    by_length = load_verdicts(paths, system, mode, judge)
    per_length = {ln: system_metrics(questions, vs, n_resamples=int(tcfg.bootstrap_resamples),
                                     seed=int(tcfg.bootstrap_seed)) for ln, vs in by_length.items()}
    reports = paths.reports
    (reports / "plots").mkdir(parents=True, exist_ok=True)
    # DVC metrics: the current system, per length
    dvc_metrics = {"system": system, "mode": mode, "judge": judge}
    for ln, m in per_length.items():
        keep = ["acc", "acc_ci_low", "acc_ci_high", *type_columns(m), "n", "n_failed"]
        dvc_metrics[ln] = {k: m[k] for k in keep if k in m}
    write_json(reports / "metrics.json", dvc_metrics)
    lines = ["length,type,accuracy,ci_low,ci_high"]
    for ln, m in per_length.items():
        for key in ["acc", *type_columns(m)]:
            t = "overall" if key == "acc" else key.split("__", 1)[1]
            lines.append(f"{ln},{t},{m[key]:.6f},{m[key + '_ci_low']:.6f},{m[key + '_ci_high']:.6f}")
    (reports / "plots" / "accuracy_by_length.csv").write_text("\n".join(lines) + "\n")

    ds_hash = dataset_hash(cfg, paths)
    rows = [{"system": system, "mode": mode, "length": ln, "metrics": m} for ln, m in per_length.items()]
    note = f"Benchmark `{ds_hash[:12]}`."
    if tcfg.enabled:
        from memlens.tracking import Tracker, git_commit

        tracker = Tracker(paths.root, tcfg, ds_hash)
        tags = {"dataset_hash": ds_hash, "git_commit": git_commit(paths.root),
                "dvc_exp_name": os.environ.get("DVC_EXP_NAME", ""), "judge": judge,
                "dvc_baseline_rev": os.environ.get("DVC_EXP_BASELINE_REV", "")}
        params = {"model": section(cfg, "model")["model"], "eval": section(cfg, "eval")["eval"],
                  "judge": section(cfg, "judge")["judge"], "dataset_hash": ds_hash,
                  "lengths": ",".join(per_length), "seed": int(cfg.data.seed), "scale": str(cfg.data.scale),
                  "data_source": str(cfg.data.get("source", "built")), **tags}
        for ln, m in per_length.items():
            arts = [paths.predictions / system / mode / f"{ln}.jsonl",
                    paths.verdicts / system / mode / f"{ln}.{judge}.jsonl"]
            tracker.log_run(system=system, mode=mode, length=ln, params=params, metrics=m, tags=tags,
                            artifacts=arts)
        rows = tracker.latest_runs()
        note += f" MLflow experiment `{tracker.experiment_name}` ({len({r['system'] for r in rows})} systems)."
    # DVC-tracked figure: this system only (reproducible); leaderboard files: every tracked system
    plot_length_curves([{"system": system, "mode": mode, "length": ln, "metrics": m} for ln, m in per_length.items()],
                       reports / "plots" / "accuracy_by_length.png", mode=mode)
    write_leaderboard(rows, reports, note=note)
    plot_length_curves(rows, reports / "leaderboard_by_length.png")
    for ln, m in per_length.items():
        log.info("report %s/%s@%s: acc %.1f%% [%.1f, %.1f] (n=%d)", system, mode, ln, 100 * m["acc"],
                 100 * m["acc_ci_low"], 100 * m["acc_ci_high"], m["n"])
