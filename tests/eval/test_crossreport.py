"""Cross-system analyses (memlens.eval.report.crossreport) on hand-made verdicts of one and three systems."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from memlens.core.io import write_jsonl
from memlens.core.schema import AR, IE, KU, MSR, TR, Verdict
from memlens.eval.report.crossreport import ANALYSIS_DIR, build_analyses, write_index

TYPES = [
    (IE, "entity", "IE_Entity", "IE"),
    (MSR, "counting", "MSR_Counting", "MSR"),
    (TR, "order_ranking", "TR_OrderRanking", "TR"),
    (KU, "", "KU_KnowledgeUpdate", "KU"),
    (AR, "", "AR_AnswerRefusal", "AR"),
]
PER_TYPE = 3
#: questions answered correctly per type (IE, MSR, TR, KU, AR) at 32k: no type is constant across systems
CORRECT_32K = {"alpha": [3, 2, 1, 0, 2], "beta": [2, 3, 0, 1, 3], "gamma": [1, 1, 2, 3, 0]}


def outcomes(counts: list[int], lose_first_ie: bool = False) -> dict[str, bool]:
    """q<type>_<k> is correct when k < the type's count; at 64k a system loses its first IE question."""
    out = {}
    for (_, _, _, ab), c in zip(TYPES, counts):
        for k in range(PER_TYPE):
            out[f"q{ab}_{k}"] = k < c
    if lose_first_ie and counts[0] > 0:
        out["qIE_0"] = False
    return out


def write_system(root, system, length, outs: dict[str, bool], judge="deterministic", mode="standard"):
    meta = {ab: (qt, st, key) for qt, st, key, ab in TYPES}
    vs = []
    for qid, ok in sorted(outs.items()):
        qt, st, key = meta[qid[1:].split("_")[0]]
        vs.append(
            Verdict(
                system=system,
                mode=mode,
                length=length,
                question_id=qid,
                question_type=qt,
                question_subtype=st,
                judge=judge,
                correct=ok,
                task_key=key,
                abstained=(qt == AR and ok),
            )
        )
    write_jsonl(root / system / mode / f"{length}.{judge}.jsonl", vs)


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    base = tmp_path_factory.mktemp("three")
    vroot, reports = base / "verdicts", base / "reports"
    for system, counts in CORRECT_32K.items():
        write_system(vroot, system, "32k", outcomes(counts))
        write_system(vroot, system, "64k", outcomes(counts, lose_first_ie=True))
    bundle = build_analyses(vroot, reports, judge="deterministic", n_resamples=200, seed=3)
    return bundle, reports


def type_accuracy(length: str) -> np.ndarray:
    rows = []
    for counts in CORRECT_32K.values():
        acc = [c / PER_TYPE for c in counts]
        if length == "64k" and counts[0] > 0:
            acc[0] -= 1 / PER_TYPE
        rows.append(acc)
    return np.array(rows)


def test_spearman_across_three_systems_matches_scipy(three):
    bundle, reports = three
    sp = bundle.summary["spearman"]
    assert set(sp) == {"32k", "64k"}
    for ln, d in sp.items():
        assert d["types"] == [ab for *_, ab in TYPES] and d["n_systems"] == 3
        acc = type_accuracy(ln)
        rho, p = sps.spearmanr(acc)
        assert np.array(d["rho"], dtype=float) == pytest.approx(rho, nan_ok=True)
        assert np.array(d["p"], dtype=float) == pytest.approx(p, nan_ok=True)
    out = reports / ANALYSIS_DIR
    assert (out / "spearman.csv").is_file() and (out / "correlation_heatmap.png").is_file()
    saved = json.loads((out / "summary.json").read_text())
    assert saved["spearman"]["32k"]["types"] == sp["32k"]["types"] and saved["systems"] == sorted(CORRECT_32K)


def test_hard_questions_degradation_and_stability(three):
    bundle, _ = three
    s = bundle.summary
    # solved by fewer than 20% of three systems at 32k: by none of them
    solved = {q: sum(outcomes(c)[q] for c in CORRECT_32K.values()) for q in outcomes([0] * 5)}
    hard = sorted(q for q, n in solved.items() if n == 0)
    hq = s["hard_questions"]
    assert hq["n_systems"] == 3 and hq["reference_length"] == "32k"
    assert sorted(hq["question_ids"]) == hard and hq["n_hard"] == len(hard)
    overall = {r["system"]: r for r in s["degradation"] if r["group"] == "overall"}
    assert set(overall) == set(CORRECT_32K)
    for system, counts in CORRECT_32K.items():
        r = overall[system]
        flips = int(counts[0] > 0)
        assert (r["from"], r["to"], r["b10"], r["b01"]) == ("32k", "64k", flips, 0)
        assert r["delta"] == pytest.approx(-flips / (PER_TYPE * len(TYPES)))
    jac = {r["system"]: r for r in s["jaccard"]}
    for system, counts in CORRECT_32K.items():
        k = sum(counts)
        assert (jac[system]["k_from"], jac[system]["intersection"]) == (k, k - int(counts[0] > 0))


def test_per_run_metrics_for_mlflow(three):
    bundle, _ = three
    for system in CORRECT_32K:
        m = bundle.per_run_metrics(system, "32k")
        assert set(m) >= {"coverage", "hard_acc", "hard_n"}
        assert m["hard_acc"] == 0.0  # nobody solves a hard question at the reference length
    assert bundle.per_run_metrics("nobody", "32k") == {}


def test_single_system_says_why_each_analysis_is_skipped(tmp_path):
    vroot, reports = tmp_path / "verdicts", tmp_path / "reports"
    write_system(vroot, "solo", "32k", outcomes([3, 2, 1, 0, 2]))
    bundle = build_analyses(vroot, reports, judge="deterministic", n_resamples=100)
    joined = "\n".join(b.note for sec in bundle.sections for b in sec.blocks)
    assert "Needs at least 3 systems judged on every type at some length (1 system(s) found)" in joined
    assert "Needs at least 3 systems at 32k (1 found)" in joined
    assert "Needs verdicts at two or more lengths" in joined
    assert "Needs verdicts of a second judge" in joined
    assert "No text_only or oracle_evidence verdicts" in joined
    s = bundle.summary
    assert s["spearman"] == {} and s["hard_questions"]["n_hard"] is None and s["degradation"] == []
    out = reports / ANALYSIS_DIR
    assert not (out / "spearman.csv").exists() and not (out / "correlation_heatmap.png").exists()
    assert (out / "accuracy.csv").is_file() and (out / "summary.json").is_file()  # what one system allows
    page = write_index(reports, bundle, system="solo", mode="standard", judge="deterministic").read_text()
    assert "1 system(s) found" in page


def test_other_judge_or_mode_only_skips_everything(tmp_path):
    vroot = tmp_path / "verdicts"
    write_system(vroot, "solo", "32k", outcomes([1] * 5), judge="llm")
    write_system(vroot, "solo", "32k", outcomes([1] * 5), mode="text_only")
    bundle = build_analyses(vroot, tmp_path / "reports", judge="deterministic")
    assert bundle.sections == [] and bundle.summary == {} and bundle.files == []
