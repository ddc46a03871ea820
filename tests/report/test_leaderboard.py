"""The leaderboard from hand-made rows (one benchmark only, complete runs ranked, incomplete apart,
failure flags) and the report stage's completeness, summary metrics and stdout table."""

from __future__ import annotations

import csv
import io

import pytest

from memlens.eval.report.leaderboard import (
    FAILURE_FLAG,
    annotate_resolution,
    leaderboard_rows,
    render_csv,
    render_markdown,
)
from memlens.eval.report.stage import Completeness, child_metrics, results_table, summary_metrics

DS, OTHER = "aa" * 32, "bb" * 32


def row(system, length, acc, *, complete=True, ds=DS, failure_rate=0.0, coverage=1.0, reason="", judge="deterministic"):
    m = {
        "acc": acc,
        "acc_ci_low": acc - 0.1,
        "acc_ci_high": acc + 0.1,
        "acc__IE": acc,
        "acc__IE_ci_low": acc - 0.2,
        "acc__IE_ci_high": acc + 0.2,
        "n": round(25 * coverage),
        "n_items": 25,
        "n_failed": round(25 * coverage * failure_rate),
        "failure_rate": failure_rate,
        "coverage": coverage,
    }
    tags = {"memlens.incomplete_reason": reason} if reason else {}
    return {
        "system": system,
        "mode": "standard",
        "judge": judge,
        "length": length,
        "dataset_hash": ds,
        "complete": complete,
        "metrics": m,
        "tags": tags,
    }


ROWS = [
    row("low", "32k", 0.2),
    row("high", "32k", 0.6),
    row("high", "64k", 0.5, failure_rate=0.08),
    row("partial", "32k", 0.9, complete=False, coverage=0.12, reason="eval.max_items=3; 3 of 25 items judged"),
    row("old-build", "32k", 0.99, ds=OTHER),
    row("old-build-partial", "32k", 0.99, ds=OTHER, complete=False, coverage=0.5),
]


def test_only_this_benchmark_and_complete_runs_are_ranked():
    board = leaderboard_rows(ROWS, DS)
    assert [(r["system"], r["length"]) for r in board["complete"]] == [("high", "32k"), ("low", "32k"), ("high", "64k")]
    assert [r["system"] for r in board["incomplete"]] == ["partial"]
    md = render_markdown(board, note="Benchmark `aaaa`.")
    ranked, partial = md.split("## Incomplete runs")
    assert "old-build" not in md and "| partial |" not in ranked
    assert "| high | standard | deterministic | all | 32k | 25 | 60.0 [50.0, 70.0] | 60.0 [40.0, 80.0] |" in ranked
    assert (
        "| partial | standard | deterministic | 32k | 12.0% | 3 / 25 | eval.max_items=3; 3 of 25 items judged |"
        in partial
    )
    # a failure rate above 5% is flagged and explained
    assert FAILURE_FLAG == 0.05
    flagged = [x for x in ranked.splitlines() if "⚠" in x]
    assert len(flagged) == 2 and "| high | standard | deterministic | all | 64k |" in flagged[0]
    assert "more than 5% of the items failed" in flagged[1]
    table = list(csv.DictReader(io.StringIO(render_csv(board["complete"]))))
    assert [(r["system"], r["length"], r["flagged"]) for r in table] == [
        ("high", "32k", "false"),
        ("low", "32k", "false"),
        ("high", "64k", "true"),
    ]


def test_no_incomplete_table_without_incomplete_runs():
    md = render_markdown(leaderboard_rows(ROWS[:2], DS))
    assert "Incomplete runs" not in md and "⚠" not in md
    empty = render_markdown(leaderboard_rows([ROWS[3]], DS))
    assert "(no complete run yet)" in empty and "## Incomplete runs" in empty


@pytest.mark.parametrize(
    ("c", "complete", "reason"),
    [
        (Completeness("32k", 25, 25, 25, 0), True, ""),
        (Completeness("32k", 25, 25, 25, 0, max_items=30), False, "eval.max_items=30"),
        (Completeness("32k", 25, 3, 3, 0, max_items=3), False, "eval.max_items=3; 3 of 25 items judged"),
        (Completeness("32k", 25, 25, 20, 0), False, "20 of 25 items judged; 5 predictions without a verdict"),
        (Completeness("32k", 0, 0, 0, 0), False, ""),
    ],
)
def test_completeness(c, complete, reason):
    assert c.complete is complete and c.reason == reason


def test_failure_rate_and_flag():
    c = Completeness("32k", 25, 25, 25, 2)
    assert c.failure_rate == pytest.approx(0.08) and c.flagged and c.coverage == 1.0
    assert not Completeness("32k", 100, 100, 100, 5).flagged  # 5% is not above 5%


def test_summary_and_child_metric_names():
    per_length = {
        "32k": {"acc": 0.5, "acc_ci_low": 0.3, "acc_ci_high": 0.7, "acc__IE_n": 4.0, "refusal_rate": 0.25},
        "64k": {"acc": 0.3, "acc_ci_low": 0.1, "acc_ci_high": 0.5},
    }
    cover = {"32k": Completeness("32k", 25, 25, 25, 1), "64k": Completeness("64k", 25, 5, 5, 0)}
    s = summary_metrics(per_length, cover)
    assert s == {
        "acc_at_32k": 0.5,
        "acc_at_32k_ci_low": 0.3,
        "acc_at_32k_ci_high": 0.7,
        "acc_at_64k": 0.3,
        "acc_at_64k_ci_low": 0.1,
        "acc_at_64k_ci_high": 0.5,
        "acc_avg": 0.4,
        "coverage": 0.6,
        "failure_rate": round(1 / 30, 6),
    }
    c = child_metrics(per_length["32k"], cover["32k"])
    assert "acc__IE_n" not in c and c["answer_coverage"] == 0.75 and c["coverage"] == 1.0 and c["n_items"] == 25
    keys = set(s) | set(c)
    assert not any(b.startswith(a + "/") for a in keys for b in keys)


def test_results_table():
    m = {
        "acc": 0.08,
        "acc_ci_low": 0.0,
        "acc_ci_high": 0.2,
        "acc__AR": 2 / 3,
        "acc__AR_ci_low": 0.0,
        "acc__AR_ci_high": 1.0,
    }
    m |= {"acc__IE": 0.0, "acc__IE_ci_low": 0.0, "acc__IE_ci_high": 0.0, "n": 25}
    cover = {"32k": Completeness("32k", 25, 25, 25, 0), "64k": Completeness("64k", 25, 3, 3, 1, max_items=3)}
    text = results_table("chance", "standard", "deterministic", {"32k": m, "64k": {**m, "n": 3}}, cover)
    lines = text.splitlines()
    assert lines[0].startswith("Results: chance (mode standard, judge deterministic)")
    assert lines[1].split() == ["system", "length", "n", "overall", "IE", "AR", "status"]  # type order, not alphabetic
    assert lines[2].split()[:4] == ["chance", "32k", "25", "8.0"] and "66.7 [0.0-100.0]" in lines[2]
    assert lines[2].endswith("complete") and lines[3].endswith("INCOMPLETE (12% covered), 33% failed")
    assert len(lines) == 4 and max(len(x) for x in lines) < 120


def test_gaps_carry_their_minimum_detectable_effect():
    rows = [row("a", "32k", 0.60), row("b", "32k", 0.45), row("c", "32k", 0.40), row("a", "64k", 0.5)]
    for r in rows:
        r["metrics"]["n"] = 195
    board = leaderboard_rows(rows, DS)

    def lookup(mode, judge, length, x, y):  # a and b disagree on 30% of 195 questions; c is not at hand
        return (195, 0.30) if {x, y} == {"a", "b"} else None

    annotate_resolution(board["complete"], lookup)
    res = {(r["system"], r["length"]): r.get("resolution") for r in board["complete"]}
    from memlens.eval.report.power import mde_paired, mde_unpaired

    ab, bc = res[("a", "32k")], res[("b", "32k")]
    assert ab["kind"] == "paired" and ab["mde"] == pytest.approx(mde_paired(195, 0.30)) and ab["resolved"] is True
    assert bc["kind"] == "unpaired" and bc["mde"] == pytest.approx(mde_unpaired(195, 195, 0.425))
    # by hand: 2.8016 * sqrt(0.425 * 0.575 * 2 / 195) = 0.1403: 5 points at n = 195 are not resolved
    assert bc["mde"] == pytest.approx(0.1403, abs=1e-3) and bc["resolved"] is False
    assert res[("c", "32k")] is None and res[("a", "64k")] is None  # the last of a group, a group of one
    md = render_markdown(board)
    assert "gap to next (pp) | MDE (pp) |" in md
    assert "| 15.0 | " in md and "| 5.0 ~ | 14.0 (u) |" in md and "~ marks a gap below its MDE" in md
    table = list(csv.DictReader(io.StringIO(render_csv(board["complete"]))))
    assert [(r["system"], r["gap_resolved"], r["mde_kind"]) for r in table][:2] == [
        ("a", "true", "paired"),
        ("b", "false", "unpaired"),
    ]


def test_no_gap_between_runs_of_different_questions():
    """An agent's run on its subset is ranked among subset runs: no gap to a run on all questions."""
    rows = [row("lvlm", "32k", 0.60), row("agent", "32k", 0.50), row("agent2", "32k", 0.30)]
    for r in rows[1:]:
        r["tags"]["memlens.subset"] = "agent_subset_195"
    board = leaderboard_rows(rows, DS)
    annotate_resolution(board["complete"])
    res = {r["system"]: r.get("resolution") for r in board["complete"]}
    assert res["lvlm"] is None  # the only run on all questions
    assert res["agent"]["next"] == "agent2" and res["agent"]["gap"] == pytest.approx(0.20)
