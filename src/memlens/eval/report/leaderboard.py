"""The leaderboard: every tracked system x mode x judge x length, overall and per type, with 95% intervals.

Rows come from the MLflow store (the child runs of :mod:`memlens.eval.tracking`, one per system,
mode, judge and length), so the table covers every system tracked so far, not only the one the
current pipeline run evaluated. Only runs of the current benchmark (dataset hash) are listed, and
only *complete* runs are ranked (every item of the length predicted and judged, no
``eval.max_items``). A run covers either every question or a subset (``eval.subset``: memory agents
run on ``agent_subset_195``); a subset run that covers its whole subset is complete and ranked among
the runs of that subset (the ``questions`` column says which). Incomplete runs are listed apart with
their coverage and never replace a complete run (their MLflow runs have keys of their own); runs whose
judge failed on most items are listed apart as failed. A run whose failure rate (failed requests or
judge calls, scored as wrong) is above :data:`FAILURE_FLAG` is flagged. Each ranked row shows its gap
to the next row of the same questions and the minimum detectable effect of that gap
(:func:`annotate_resolution`); a gap below it is marked.
``memlens leaderboard`` rebuilds the files from MLflow at any time.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from memlens.core.config import length_tokens

TYPES = ["IE", "MSR", "TR", "KU", "AR"]
#: a run with more failed items than this fraction is flagged
FAILURE_FLAG = 0.05
FLAG = "⚠"


def _fmt(m: dict, key: str) -> str:
    if key not in m:
        return "-"
    lo, hi = m.get(f"{key}_ci_low"), m.get(f"{key}_ci_high")
    s = f"{100 * m[key]:.1f}"
    if lo is not None and hi is not None:
        s += f" [{100 * lo:.1f}, {100 * hi:.1f}]"
    return s


def flagged(row: dict) -> bool:
    return float(row["metrics"].get("failure_rate", 0.0)) > FAILURE_FLAG


def sort_rows(rows: list[dict]) -> list[dict]:
    def key(r):
        try:
            lt = length_tokens(r["length"])
        except Exception:
            lt = 0
        scope = _subset(r)
        return (
            r["mode"] != "standard",
            r["mode"],
            r.get("judge", ""),
            scope != "all",
            scope,
            lt,
            -r["metrics"].get("acc", 0.0),
            r["system"],
        )

    return sorted(rows, key=key)


def _subset(r: dict) -> str:
    """The questions a run covers: ``all`` or the name of its subset."""
    return str(r.get("tags", {}).get("memlens.subset") or r.get("subset") or "all")


def _questions(r: dict) -> str:
    sub = _subset(r)
    return "all" if sub == "all" else f"{sub} ({int(r['metrics'].get('n_items', 0))})"


def leaderboard_rows(rows: list[dict], dataset_hash: str) -> dict[str, list[dict]]:
    """Rows of the current benchmark, split into ``complete`` (ranked), ``incomplete`` and ``failed``
    (the judge failed on most items)."""
    mine = [r for r in rows if r.get("dataset_hash") == dataset_hash]
    failed = [r for r in mine if r.get("failed")]
    return {
        "complete": sort_rows([r for r in mine if r.get("complete") and not r.get("failed")]),
        "incomplete": sort_rows([r for r in mine if not r.get("complete") and not r.get("failed")]),
        "failed": sort_rows(failed),
    }


# ------------------------------------------------------------------------------------ resolution
def paired_outcomes(verdicts_dir: Path):
    """``lookup(mode, judge, length, a, b) -> (n, discordance) | None``: how often systems ``a`` and
    ``b`` disagree on the questions both were judged on (from the verdict files; None when either
    has no verdicts there). Outcome matrices are loaded once per (judge, mode)."""
    import numpy as np

    from memlens.core.errors import DataError
    from memlens.eval.report.analyses import load_cube

    cubes: dict[tuple[str, str], object] = {}

    def lookup(mode: str, judge: str, length: str, a: str, b: str) -> tuple[int, float] | None:
        if (judge, mode) not in cubes:
            try:
                cubes[(judge, mode)] = load_cube(verdicts_dir, judge, mode)
            except DataError:
                cubes[(judge, mode)] = None
        cube = cubes[(judge, mode)]
        if cube is None or a not in cube.systems or b not in cube.systems or length not in cube.lengths:
            return None
        j = cube.lengths.index(length)
        x, y = cube.correct[cube.system_index(a), j], cube.correct[cube.system_index(b), j]
        both = ~(np.isnan(x) | np.isnan(y))
        n = int(both.sum())
        return (n, float((x[both] != y[both]).sum()) / n) if n else None

    return lookup


def annotate_resolution(rows: list[dict], lookup=None, alpha: float = 0.05) -> list[dict]:
    """Give each ranked row the gap to the next row of its (mode, judge, questions, length) and the minimum
    detectable effect of that gap (80% power): paired (:func:`memlens.eval.report.power.mde_paired`,
    from the two systems' disagreement on the same questions) when ``lookup`` knows both, else
    unpaired from the two n and the pooled accuracy. Sets ``row["resolution"]`` (rows in order)."""
    from memlens.eval.report.power import mde_paired, mde_unpaired, resolved

    for r, nxt in zip(rows, [*rows[1:], None]):
        r.pop("resolution", None)
        if nxt is None or _peer_key(r) != _peer_key(nxt):
            continue
        a, b = r["metrics"], nxt["metrics"]
        if "acc" not in a or "acc" not in b:
            continue
        gap = float(a["acc"]) - float(b["acc"])
        got = lookup(r["mode"], r.get("judge", ""), r["length"], r["system"], nxt["system"]) if lookup else None
        if got is not None:
            mde, kind = mde_paired(got[0], got[1], alpha=alpha), "paired"
        else:
            n1, n2 = int(a.get("n", 0)), int(b.get("n", 0))
            pooled = (a["acc"] * n1 + b["acc"] * n2) / (n1 + n2) if n1 + n2 else 0.0
            mde, kind = mde_unpaired(n1, n2, pooled, alpha=alpha), "unpaired"
        r["resolution"] = {"next": nxt["system"], "gap": gap, "mde": mde, "kind": kind, "resolved": resolved(gap, mde)}
    return rows


def _peer_key(r: dict) -> tuple:
    """Rows compared with each other: the same mode, judge, questions and length."""
    return (r["mode"], r.get("judge"), _subset(r), r["length"])


def _gap_cells(r: dict) -> list[str]:
    res = r.get("resolution")
    if not res:
        return ["-", "-"]
    mark = "" if res["resolved"] else " ~"
    mde = "n/a" if res["mde"] is None else f"{100 * res['mde']:.1f}" + (" (u)" if res["kind"] == "unpaired" else "")
    return [f"{100 * res['gap']:.1f}{mark}", mde]


def render_markdown(board: dict[str, list[dict]], title: str = "MemLens leaderboard", note: str = "") -> str:
    rows, partial, failed_runs = board["complete"], board["incomplete"], board.get("failed", [])
    types = [t for t in TYPES if any(f"acc__{t}" in r["metrics"] for r in rows)]
    gaps = any(r.get("resolution") for r in rows)
    head = ["system", "mode", "judge", "questions", "length", "n", "overall", *types, "refusal rate", "failed"]
    head += ["gap to next (pp)", "MDE (pp)"] if gaps else []
    lines = [f"# {title}", ""]
    if note:
        lines += [note, ""]
    lines += [
        "Complete runs only (every item of the length predicted and judged). "
        "Accuracy in % with 95% bootstrap intervals (question resamples, percentile). "
        "`questions`: `all`, or the subset a run covers whole (memory agents: `agent_subset_195`); "
        "runs are ranked among the runs of the same questions.",
        "",
    ]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] * 5 + ["---:"] * (len(head) - 5)) + "|")
    for r in rows:
        m = r["metrics"]
        failed = f"{int(m.get('n_failed', 0))} ({100 * m.get('failure_rate', 0.0):.1f}%)"
        cells = [
            r["system"],
            r["mode"],
            r.get("judge", "-"),
            _questions(r),
            r["length"],
            str(int(m.get("n", 0))),
            _fmt(m, "acc"),
            *[_fmt(m, f"acc__{t}") for t in types],
            f"{100 * m['refusal_rate']:.1f}" if "refusal_rate" in m else "-",
            failed + (f" {FLAG}" if flagged(r) else ""),
            *(_gap_cells(r) if gaps else []),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if not rows:
        lines.append("| " + " | ".join(["(no complete run yet)"] + [""] * (len(head) - 1)) + " |")
    if gaps:
        lines += [
            "",
            "Gap to next: accuracy minus that of the next row of the same mode, judge, questions and length. MDE: the smallest gap "
            "the benchmark resolves there with 80% power (two-sided alpha 0.05): paired (McNemar, from how often the two "
            "systems disagree on the same questions), or unpaired from n and the pooled accuracy where the verdicts "
            "are not at hand (u). ~ marks a gap below its MDE: not resolved at this n.",
        ]
    if any(flagged(r) for r in rows):
        lines += [
            "",
            f"{FLAG} more than {100 * FAILURE_FLAG:.0f}% of the items failed (requests or judge calls that "
            "failed are scored as wrong): the accuracy understates the system.",
        ]
    if partial:
        lines += [
            "",
            "## Incomplete runs",
            "",
            "Not ranked: not every item of the length has a prediction and a verdict, or the evaluation "
            "was cut short (`eval.max_items`). Accuracy is over the judged items only.",
            "",
            "| system | mode | judge | length | coverage | judged / items | why | accuracy (judged items) |",
            "|---|---|---|---|---:|---:|---|---:|",
        ]
        for r in partial:
            m = r["metrics"]
            n_items = int(m.get("n_items", 0))
            judged = round(m.get("coverage", 0.0) * n_items)
            lines.append(
                "| "
                + " | ".join(
                    [
                        r["system"],
                        r["mode"],
                        r.get("judge", "-"),
                        r["length"],
                        f"{100 * m.get('coverage', 0.0):.1f}%",
                        f"{judged} / {n_items}",
                        r.get("tags", {}).get("memlens.incomplete_reason", "-") or "-",
                        _fmt(m, "acc"),
                    ]
                )
                + " |"
            )
    if failed_runs:
        lines += [
            "",
            "## Failed runs",
            "",
            "Not ranked: the judge failed on most answered items (its verdicts say nothing of the system).",
            "",
            "| system | mode | judge | length | why |",
            "|---|---|---|---|---|",
        ]
        for r in failed_runs:
            why = r.get("tags", {}).get("memlens.incomplete_reason", "-") or "-"
            lines.append(f"| {r['system']} | {r['mode']} | {r.get('judge', '-')} | {r['length']} | {why} |")
    return "\n".join(lines) + "\n"


def render_csv(rows: list[dict]) -> str:
    """The ranked (complete) runs, every metric as a column."""
    rows = sort_rows(rows)
    keys = sorted({k for r in rows for k in r["metrics"]})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "system",
            "mode",
            "judge",
            "questions",
            "length",
            "flagged",
            "gap_next",
            "mde_next",
            "mde_kind",
            "gap_resolved",
            *keys,
        ]
    )
    for r in rows:
        res = r.get("resolution") or {}
        w.writerow(
            [
                r["system"],
                r["mode"],
                r.get("judge", ""),
                _subset(r),
                r["length"],
                str(flagged(r)).lower(),
                "" if not res else round(res["gap"], 6),
                "" if res.get("mde") is None else round(res["mde"], 6),
                res.get("kind", ""),
                "" if res.get("resolved") is None else str(res["resolved"]).lower(),
                *[r["metrics"].get(k, "") for k in keys],
            ]
        )
    return buf.getvalue()


def write_leaderboard(board: dict[str, list[dict]], reports: Path, note: str = "") -> None:
    reports.mkdir(parents=True, exist_ok=True)
    (reports / "leaderboard.md").write_text(render_markdown(board, note=note))
    (reports / "leaderboard.csv").write_text(render_csv(board["complete"]))


def rebuild(cfg, paths) -> int:
    """``memlens leaderboard``: rebuild reports/leaderboard.{md,csv} and the length plot from MLflow."""
    from memlens.eval.benchmark import dataset_hash
    from memlens.eval.report.plots import plot_length_curves
    from memlens.eval.tracking import Tracker

    ds_hash = dataset_hash(cfg, paths)
    tracker = Tracker(paths.root, cfg.tracking, ds_hash)
    board = leaderboard_rows(tracker.runs(dataset_hash=ds_hash), ds_hash)
    from memlens.eval.results import verdict_archive

    archive = verdict_archive(paths, ds_hash)
    annotate_resolution(board["complete"], paired_outcomes(archive if archive.is_dir() else paths.verdicts))
    note = f"Benchmark `{ds_hash[:12]}`. MLflow experiment `{tracker.experiment_name}`."
    write_leaderboard(board, paths.reports, note=note)
    judge = str(cfg.judge.name)
    plot_length_curves(
        [r for r in board["complete"] if r["judge"] == judge], paths.reports / "leaderboard_by_length.png"
    )
    print(
        f"leaderboard: {len(board['complete'])} complete runs, {len(board['incomplete'])} incomplete "
        f"-> {paths.reports / 'leaderboard.md'}"
    )
    return 0
