"""The leaderboard: every tracked system x mode x length, overall and per type, with 95% intervals.

Rows come from the MLflow store (the latest run per system, mode and length of the current
benchmark's experiment), so the table covers every system tracked so far, not only the one the
current pipeline run evaluated. ``memlens leaderboard`` rebuilds it from MLflow at any time.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from memlens.core.config import length_tokens

TYPES = ["IE", "MSR", "TR", "KU", "AR"]


def _fmt(m: dict, key: str) -> str:
    if key not in m:
        return "-"
    lo, hi = m.get(f"{key}_ci_low"), m.get(f"{key}_ci_high")
    s = f"{100 * m[key]:.1f}"
    if lo is not None and hi is not None:
        s += f" [{100 * lo:.1f}, {100 * hi:.1f}]"
    return s


def sort_rows(rows: list[dict]) -> list[dict]:
    def key(r):
        try:
            lt = length_tokens(r["length"])
        except Exception:
            lt = 0
        return (r["mode"] != "standard", lt, -r["metrics"].get("acc", 0.0), r["system"], r["mode"])

    return sorted(rows, key=key)


def render_markdown(rows: list[dict], title: str = "MemLens leaderboard", note: str = "") -> str:
    rows = sort_rows(rows)
    types = [t for t in TYPES if any(f"acc__{t}" in r["metrics"] for r in rows)]
    head = ["system", "mode", "length", "n", "overall", *types, "refusal rate", "failed"]
    lines = [f"# {title}", ""]
    if note:
        lines += [note, ""]
    lines += ["Accuracy in % with 95% bootstrap intervals (1000 question resamples, percentile).", ""]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] * 3 + ["---:"] * (len(head) - 3)) + "|")
    for r in rows:
        m = r["metrics"]
        cells = [
            r["system"],
            r["mode"],
            r["length"],
            str(int(m.get("n", 0))),
            _fmt(m, "acc"),
            *[_fmt(m, f"acc__{t}") for t in types],
            f"{100 * m['refusal_rate']:.1f}" if "refusal_rate" in m else "-",
            str(int(m.get("n_failed", 0))),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render_csv(rows: list[dict]) -> str:
    rows = sort_rows(rows)
    keys = sorted({k for r in rows for k in r["metrics"]})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["system", "mode", "length", *keys])
    for r in rows:
        w.writerow([r["system"], r["mode"], r["length"], *[r["metrics"].get(k, "") for k in keys]])
    return buf.getvalue()


def write_leaderboard(rows: list[dict], reports: Path, note: str = "") -> None:
    reports.mkdir(parents=True, exist_ok=True)
    (reports / "leaderboard.md").write_text(render_markdown(rows, note=note))
    (reports / "leaderboard.csv").write_text(render_csv(rows))


def run_cli(args) -> int:
    """``memlens leaderboard``: rebuild reports/leaderboard.{md,csv} and the length plot from MLflow."""
    from memlens.core.config import Paths, load_config
    from memlens.eval.benchmark import dataset_hash
    from memlens.eval.report.plots import plot_length_curves
    from memlens.eval.tracking import Tracker

    cfg = load_config(args.overrides, params=args.params, root=args.root)
    paths = Paths.from_cfg(cfg, root=args.root)
    tracker = Tracker(paths.root, cfg.tracking, dataset_hash(cfg, paths))
    rows = tracker.latest_runs()
    write_leaderboard(rows, paths.reports, note=f"MLflow experiment `{tracker.experiment_name}`.")
    plot_length_curves(rows, paths.reports / "leaderboard_by_length.png")
    print(f"leaderboard: {len(rows)} runs -> {paths.reports / 'leaderboard.md'}")
    return 0
