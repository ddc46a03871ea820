"""Report analyses on small synthetic verdict sets written to a temporary folder."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from memlens.core.io import write_jsonl
from memlens.core.schema import Verdict
from memlens.eval.judge.official import DETAIL_KEYS, write_official
from memlens.eval.report import analyses as an
from memlens.eval.report import stats
from memlens.eval.report.crossreport import build_analyses, write_index

# 20 questions: (type, subtype, task key)
QTYPES = (
    [("information_extraction", "entity", "IE_Entity")] * 4
    + [("information_extraction", "previnfo", "IE_PreviousInfo")] * 2
    + [("multi_session_reasoning", "counting", "MSR_Counting")] * 3
    + [("multi_session_reasoning", "arithmetic", "MSR_Arithmetic")] * 2
    + [("temporal_reasoning", "duration_comparison", "TR_DurationComparison")] * 3
    + [("knowledge_update", "", "KU_KnowledgeUpdate")] * 3
    + [("answer_refusal", "", "AR_AnswerRefusal")] * 3
)
QIDS = [f"q{i:02d}" for i in range(len(QTYPES))]
LENGTHS = ["32k", "64k", "128k"]


def verdict(system, mode, length, judge, i, correct, *, abstained=False, details=None):
    qt, st, key = QTYPES[i]
    return Verdict(
        system=system,
        mode=mode,
        length=length,
        question_id=QIDS[i],
        question_type=qt,
        question_subtype=st,
        judge=judge,
        correct=correct,
        task_key=key,
        abstained=abstained,
        details=details or {},
    )


def write(root: Path, system, mode, length, judge, outcomes, abstained=None, skip=(), details=None):
    vs = []
    for i, c in enumerate(outcomes):
        if i in skip:
            continue
        c = None if c is None else bool(c)
        vs.append(
            verdict(
                system,
                mode,
                length,
                judge,
                i,
                c,
                abstained=bool(abstained[i]) if abstained else False,
                details=details(i) if details else None,
            )
        )
    write_jsonl(root / system / mode / f"{length}.{judge}.jsonl", vs)
    return vs


def outcome(seed: int, p: float) -> list[int]:
    rng = np.random.default_rng(seed)
    return (rng.random(len(QIDS)) < p).astype(int).tolist()


@pytest.fixture()
def vroot(tmp_path) -> Path:
    root = tmp_path / "data" / "verdicts"
    for k, (system, p) in enumerate([("alpha", 0.8), ("beta", 0.6), ("gamma", 0.4), ("delta", 0.2)]):
        for j, ln in enumerate(LENGTHS):
            out = outcome(10 * k + j, p - 0.1 * j)
            write(root, system, "standard", ln, "deterministic", out)
    return root


# ----------------------------------------------------------------------------------- loading glue
def test_scan_and_cube_shapes(vroot, tmp_path):
    (vroot / "alpha" / "standard" / "notes.jsonl").write_text("")  # ignored: no judge suffix
    (vroot / "alpha" / "manifest.json").write_text("{}")
    files = an.scan_verdicts(vroot)
    assert len(files) == 12 and {f.judge for f in files} == {"deterministic"}
    cube = an.load_cube(vroot, "deterministic")
    assert cube.systems == ["alpha", "beta", "delta", "gamma"]
    assert cube.lengths == LENGTHS and cube.question_ids == QIDS
    assert cube.correct.shape == (4, 3, 20)
    assert cube.types[:6] == ["IE"] * 6 and cube.types[-3:] == ["AR"] * 3
    assert cube.subtypes[0] == "IE/entity" and cube.subtypes[4] == "IE/previnfo"
    assert cube.subtypes[-1] == "" and cube.task_keys[6] == "MSR_Counting"
    s = cube.system_index("beta")
    assert cube.correct[s, 1].tolist() == outcome(11, 0.5)


def test_missing_and_failed_items(tmp_path):
    root = tmp_path / "v"
    out = [1] * 20
    out[3] = None  # judge failure
    write(root, "sys", "standard", "32k", "deterministic", out, skip={5})
    write(root, "full", "standard", "32k", "deterministic", [1] * 20)
    cube = an.load_cube(root, "deterministic")
    assert cube.systems == ["full", "sys"] and len(cube.question_ids) == 20
    assert np.isnan(cube.correct[1, 0, 5]) and cube.correct[1, 0, 3] == 0.0 and cube.failed[1, 0, 3]
    miss = an.load_cube(root, "deterministic", failed_as="missing")
    assert np.isnan(miss.correct[1, 0, 3])
    acc = {r["column"]: r for r in an.accuracy_records(cube, n_resamples=200) if r["system"] == "sys"}
    assert acc["overall"]["n"] == 19 and acc["overall"]["n_failed"] == 1
    assert acc["overall"]["acc"] == pytest.approx(18 / 19)
    with pytest.raises(Exception, match="no verdict files"):
        an.load_cube(root, "llm")


def test_accuracy_records_and_rows(vroot):
    cube = an.load_cube(vroot, "deterministic")
    recs = an.accuracy_records(cube, n_resamples=300, seed=1)
    cols = [r["column"] for r in recs if r["system"] == "alpha" and r["length"] == "32k"]
    assert cols[:6] == ["overall", "IE", "MSR", "TR", "KU", "AR"]
    assert {"IE/entity", "IE/previnfo", "MSR/counting", "MSR/arithmetic"} <= set(cols)
    assert "TR/duration_comparison" not in cols  # single-subtype types get no subtype column
    s = cube.system_index("gamma")
    for r in recs:
        if r["system"] == "gamma" and r["length"] == "64k" and r["column"] == "MSR":
            want = cube.correct[s, 1][[t == "MSR" for t in cube.types]].mean()
            assert r["acc"] == pytest.approx(want) and r["ci_low"] <= r["acc"] <= r["ci_high"] and r["n"] == 5
    rows = an.accuracy_rows(recs)
    m = next(r for r in rows if r["system"] == "alpha" and r["length"] == "32k")["metrics"]
    assert {"acc", "acc_ci_low", "acc_ci_high", "acc__IE", "acc__MSR__counting", "n"} <= set(m)


def test_coverage_records(tmp_path):
    root = tmp_path / "v"
    # answerable: 17 questions; refuse on 5 of them (all wrong), 8 of the remaining 12 right; AR: 3 abstain
    out = [0] * 20
    ab = [0] * 20
    for i in range(5):
        ab[i] = 1
    for i in range(5, 13):
        out[i] = 1
    for i in range(17, 20):
        out[i], ab[i] = 1, 1
    write(root, "sys", "standard", "32k", "deterministic", out, abstained=ab)
    (rec,) = an.coverage_records(an.load_cube(root, "deterministic"))
    assert rec["n_answerable"] == 17 and rec["refusal_rate"] == pytest.approx(5 / 17)
    assert rec["coverage"] == pytest.approx(12 / 17) and rec["per_answer_accuracy"] == pytest.approx(8 / 12)
    assert rec["abstention_rate_unanswerable"] == 1.0 and rec["accuracy"] == pytest.approx(11 / 20)


# ----------------------------------------------------------------------------------- lengths
def test_degradation_table(tmp_path):
    root = tmp_path / "v"
    a = [1] * 20
    b = [1] * 20
    c = [1] * 20
    for i in range(10):  # 10 flips to wrong at 64k, 4 of them revert at 128k
        b[i] = 0
    for i in range(6):
        c[i] = 0
    b[15] = 0  # one more flip (KU) that stays
    c[15] = 0
    for ln, o in zip(LENGTHS, (a, b, c)):
        write(root, "sys", "standard", ln, "deterministic", o)
    write(root, "other", "standard", "32k", "deterministic", a)  # a single length: no transitions
    cube = an.load_cube(root, "deterministic")
    recs = an.degradation_records(cube)
    assert {r["system"] for r in recs} == {"sys"}
    ov = [r for r in recs if r["group"] == "overall"]
    assert [(r["from"], r["to"]) for r in ov] == [("32k", "64k"), ("64k", "128k")]
    first = ov[0]
    assert (first["b01"], first["b10"], first["n"]) == (0, 11, 20)
    assert first["churn"] == pytest.approx(11 / 20) and first["reverts"] == 4
    assert first["delta"] == pytest.approx(-11 / 20)
    assert first["p"] == pytest.approx(stats.mcnemar_exact_from_counts(0, 11).item())
    n_tests = len(recs)  # test_direction="any": every transition of every group is in the family
    assert all(r["n_tests"] == n_tests for r in recs)
    assert first["p_bonferroni"] == pytest.approx(min(1.0, first["p"] * n_tests))
    assert ov[1]["b01"] == 4 and ov[1]["reverts"] is None
    # resolution: 11 of 20 flip (psi = 0.55); 55 points is more than the paired MDE there, 4 of 20
    # back (psi = 0.2, delta = 0.2 = psi: the largest possible difference) is not detectable at n = 20
    from memlens.eval.report.power import mde_paired

    assert first["mde"] == pytest.approx(mde_paired(20, 11 / 20)) and first["resolved"] is True
    assert mde_paired(20, 0.55) == pytest.approx(0.4377, abs=1e-3)  # sqrt(20) d = 1.96 sqrt(.55) + .84 sqrt(.55 - d^2)
    assert ov[1]["mde"] is None and ov[1]["resolved"] is None


def test_jaccard_records(vroot):
    cube = an.load_cube(vroot, "deterministic")
    recs = an.jaccard_records(cube)
    assert len(recs) == 4 * 2
    r = next(x for x in recs if x["system"] == "alpha" and x["from"] == "32k")
    a, b = np.array(outcome(0, 0.8)), np.array(outcome(1, 0.7))
    assert r["intersection"] == int((a & b).sum()) and r["union"] == int((a | b).sum())
    assert r["method"] == "exact" and r["ratio"] == pytest.approx(r["jaccard"] / r["expected_jaccard"])


# ----------------------------------------------------------------------------------- systems
def test_spearman_and_hard_questions(vroot):
    cube = an.load_cube(vroot, "deterministic")
    sp = an.spearman_by_length(cube)
    assert set(sp) == set(LENGTHS)
    d = sp["32k"]
    assert d["types"] == ["IE", "MSR", "TR", "KU", "AR"] and d["n_systems"] == 4
    rho = np.array(d["rho"], dtype=float)
    assert rho.shape == (5, 5)
    assert np.allclose(np.diag(rho)[~np.isnan(np.diag(rho))], 1.0)
    hq = an.hard_questions(cube, threshold=0.3)  # solved by < 30% of 4 systems: by at most 1
    solved = np.nansum(cube.correct[:, 0], axis=0)
    assert hq["reference_length"] == "32k" and hq["n_systems"] == 4
    assert hq["n_hard"] == int((solved / 4 < 0.3).sum())
    assert set(hq["question_ids"]) == {q for q, s in zip(QIDS, solved) if s / 4 < 0.3}
    assert set(hq["mean_by_length"]) <= set(LENGTHS)
    few = an.hard_questions(an.load_cube(vroot, "deterministic", systems=["alpha", "beta"]))
    assert few["n_hard"] is None
    assert an.hard_questions(cube, reference_length="512k")["n_hard"] is None


# ----------------------------------------------------------------------------------- judges
def test_agreement_table_llm_vs_rules(tmp_path):
    root = tmp_path / "v"
    rng = np.random.default_rng(3)
    ref_all, llm_all = [], []
    for system in ("s1", "s2", "s3"):
        for ln in ("32k", "64k"):
            det = rng.integers(0, 2, 20).tolist()
            llm = list(det)
            for i in (0, 1, 7, 12):  # flips: 0, 1 are IE (open-form, excluded), 7 MSR, 12 TR
                llm[i] = 1 - llm[i]
            llm[19] = None  # a failed LLM call: dropped from the comparison
            write(root, system, "standard", ln, "deterministic", det)
            write(root, system, "standard", ln, "llm", llm)
            closed = [i for i in range(20) if QTYPES[i][2] in an.CLOSED_FORM_TASK_KEYS and i != 19]
            ref_all += [det[i] for i in closed]
            llm_all += [llm[i] for i in closed]
    res = an.agreement_records(root, "llm", "deterministic", task_keys=an.CLOSED_FORM_TASK_KEYS)
    overall = res["rows"][0]
    assert overall["group"] == "overall" and overall["n"] == len(ref_all) == 6 * 10
    ref_all, llm_all = np.array(ref_all), np.array(llm_all)
    assert overall["n_fp"] == int(((llm_all == 1) & (ref_all == 0)).sum())
    assert overall["n_fn"] == int(((llm_all == 0) & (ref_all == 1)).sum())
    assert overall["n_fp"] + overall["n_fn"] == 12
    assert overall["kappa"] == pytest.approx(cohen_kappa_score(llm_all, ref_all))
    keys = [r["group"] for r in res["rows"][1:]]
    assert "IE_Entity" not in keys and "KU_KnowledgeUpdate" not in keys and "MSR_Counting" in keys
    tr = next(r for r in res["rows"] if r["group"] == "TR_DurationComparison")
    assert tr["n"] == 6 * 3 and tr["n"] - tr["n_agree"] == 6
    assert [r["group"] for r in res["by_length"]] == ["length 32k", "length 64k"]
    assert sum(r["n"] for r in res["by_length"]) == overall["n"]
    assert [r["n_systems"] for r in res["leaderboard_spearman"]] == [3, 3]
    full = an.agreement_records(root, "llm", "deterministic")
    assert full["rows"][0]["n"] == 6 * 19 and full["rows"][0]["n_fp"] + full["rows"][0]["n_fn"] == 24


def test_ablation_records(tmp_path):
    root = tmp_path / "v"
    base = [1] * 16 + [0] * 4
    text_only = [0] * 12 + [1] * 8
    write(root, "sys", "standard", "32k", "deterministic", base)
    write(root, "sys", "text_only", "32k", "deterministic", text_only)
    write(root, "sys", "standard", "64k", "deterministic", base)  # no variant at 64k
    write(root, "solo", "oracle_evidence", "32k", "deterministic", base)  # no standard run
    recs = an.ablation_records(root, "deterministic", subsets={"first_ten": set(QIDS[:10])})
    assert {(r["system"], r["variant"], r["length"]) for r in recs} == {("sys", "text_only", "32k")}
    ov = next(r for r in recs if r["group"] == "overall" and r["subset"] == "all")
    assert ov["n"] == 20 and ov["acc_base"] == 0.8 and ov["acc_variant"] == 0.4
    assert (ov["b01"], ov["b10"]) == (4, 12) and ov["delta"] == pytest.approx(-0.4)
    sub = next(r for r in recs if r["group"] == "overall" and r["subset"] == "first_ten")
    assert sub["n"] == 10 and sub["acc_variant"] == 0.0


# ----------------------------------------------------------------------------------- official files
def test_official_files_have_exact_keys(tmp_path):
    vs = [
        verdict(
            "s",
            "standard",
            "32k",
            "llm",
            i,
            bool(i % 2),
            details={
                "original_len": 10 * i,
                "was_truncated": i == 2,
                "is_degenerate": False,
                "hedging_count": 0,
                "unique_5gram_ratio": 1.0,
                "auto_zero": i == 4,
                "parsed_words": i,
                "output_len": 5,
                "judge_text": "secret-free",
                "cache_key": "x",
            },
        )
        for i in range(20)
    ]
    vs[7] = verdict("s", "standard", "32k", "llm", 7, None)  # a failure is left out
    vs[8] = verdict("s", "standard", "32k", "llm", 8, True)  # no diagnostics: defaults
    res = write_official(tmp_path / "judge" / "s" / "standard" / "32k", vs)
    assert res["rows"] == 19 and res["excluded"] == 1
    details = json.loads(Path(res["details"]).read_text())
    raw = Path(res["details"]).read_text()
    assert raw.startswith("[{") and "\n  " not in raw  # no indentation
    assert all(list(d) == list(DETAIL_KEYS) for d in details)
    assert list(DETAIL_KEYS) == [
        "question_id",
        "question_type",
        "question_subtype",
        "task_key",
        "judge_score",
        "original_len",
        "was_truncated",
        "is_degenerate",
        "hedging_count",
        "unique_5gram_ratio",
        "auto_zero",
        "parsed_words",
        "output_len",
    ]
    assert all(isinstance(d["judge_score"], int) for d in details)
    assert "q07" not in {d["question_id"] for d in details}
    m = json.loads(Path(res["metrics"]).read_text())
    assert list(m) == ["overall", "by_question_type", "by_question_subtype", "by_task_key"]
    assert list(m["overall"]) == [
        "accuracy",
        "yes",
        "no",
        "total",
        "degenerate_count",
        "degenerate_pct",
        "truncated_count",
        "truncated_pct",
        "auto_zero_count",
        "auto_zero_pct",
    ]
    assert m["overall"]["total"] == 19 and m["overall"]["yes"] == sum(d["judge_score"] for d in details)
    assert m["overall"]["auto_zero_count"] == 1 and m["overall"]["auto_zero_pct"] == round(100 / 19, 1)
    t = m["by_question_type"]["information_extraction"]
    assert list(t) == [
        "accuracy",
        "yes",
        "no",
        "count",
        "degenerate_count",
        "truncated_count",
        "auto_zero_count",
        "degenerate_pct",
    ]
    assert list(m["by_question_type"]) == sorted(m["by_question_type"])
    assert "knowledge_update/unknown" in m["by_question_subtype"]
    assert list(m["by_question_subtype"]["information_extraction/entity"]) == ["accuracy", "yes", "no", "count"]
    assert list(m["by_task_key"]) == sorted(m["by_task_key"]) and "TR_DurationComparison" in m["by_task_key"]
    assert Path(res["metrics"]).read_text().startswith('{\n  "overall"')


# ----------------------------------------------------------------------------------- page
class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs = []
        self.tags = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                self.refs.append(v)


def test_build_analyses_and_index_page(vroot, tmp_path):
    # a second judge and an ablation run so that every section has content
    for system in ("alpha", "beta", "gamma"):
        for ln in LENGTHS:
            det = json.loads(
                "["
                + ",".join((vroot / system / "standard" / f"{ln}.deterministic.jsonl").read_text().split("\n")[:-1])
                + "]"
            )
            llm = [int(r["correct"]) for r in det]
            llm[6] = 1 - llm[6]
            write(vroot, system, "standard", ln, "llm", llm)
    write(vroot, "alpha", "text_only", "32k", "deterministic", [0] * 20)
    reports = tmp_path / "reports"
    (reports / "plots").mkdir(parents=True)
    (reports / "plots" / "accuracy_by_length.png").write_bytes(b"png")
    (reports / "metrics.json").write_text("{}")
    write_official(
        reports / "judge" / "alpha" / "standard" / "32k",
        [verdict("alpha", "standard", "32k", "deterministic", i, True) for i in range(20)],
    )
    bundle = build_analyses(vroot, reports, judge="deterministic", n_resamples=200)
    out = reports / "analysis"
    for name in (
        "accuracy.csv",
        "accuracy.md",
        "accuracy_by_length.png",
        "coverage.csv",
        "coverage_vs_pa.png",
        "degradation.csv",
        "jaccard.csv",
        "spearman.csv",
        "correlation_heatmap.png",
        "hard_questions.csv",
        "judge_agreement.csv",
        "judge_agreement.md",
        "judge_leaderboard_spearman.csv",
        "ablation.csv",
        "summary.json",
    ):
        assert (out / name).is_file(), name
    assert all(p.is_file() for p in bundle.files)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["systems"] == ["alpha", "beta", "delta", "gamma"]
    ag = [r for r in summary["judge_agreement"] if r["group"] == "overall"]
    assert ag and ag[0]["judge"] == "llm" and ag[0]["reference"] == "deterministic"
    assert ag[0]["scope"] == "closed-form task keys" and ag[0]["n_fp"] + ag[0]["n_fn"] == 9  # q06 is MSR
    assert bundle.per_run_metrics("alpha", "32k")["coverage"] == 1.0
    page_path = write_index(reports, bundle, system="alpha", mode="standard", judge="deterministic", note="test")
    page = page_path.read_text()
    parser = _Links()
    parser.feed(page)
    assert "script" not in parser.tags and "<script" not in page.lower()
    assert parser.refs
    for ref in parser.refs:
        assert not re.match(r"^[a-z]+:", ref) and not ref.startswith("/"), ref  # relative only
        assert (reports / ref).is_file(), ref
    for needle in (
        "analysis/correlation_heatmap.png",
        "analysis/coverage_vs_pa.png",
        "analysis/accuracy_by_length.png",
        "analysis/judge_agreement.csv",
        "judge/alpha/standard/32k/judge_metrics.json",
        "plots/accuracy_by_length.png",
    ):
        assert needle in parser.refs, needle
    for section in ("Length degradation", "Judge agreement", "Hard questions", "Image ablation", "Coverage vs"):
        assert section in page


def test_build_analyses_single_system_degrades_gracefully(tmp_path):
    root = tmp_path / "v"
    write(root, "only", "standard", "32k", "deterministic", outcome(0, 0.5))
    reports = tmp_path / "reports"
    bundle = build_analyses(root, reports, judge="deterministic", n_resamples=100)
    page = write_index(reports, bundle, system="only", mode="standard", judge="deterministic").read_text()
    assert "Needs at least 3 systems" in page and "Needs verdicts of a second judge" in page
    assert not (reports / "analysis" / "correlation_heatmap.png").exists()
    empty = build_analyses(tmp_path / "none", tmp_path / "r2", judge="deterministic")
    assert empty.sections == []


def test_summary_json_has_no_nan():
    import json
    import math

    import numpy as np

    from memlens.eval.report.crossreport import _finite

    out = _finite({"rho": float("nan"), "m": [np.float64("inf"), 0.5, np.int64(3)], "ok": "x"})
    assert out == {"rho": None, "m": [None, 0.5, 3], "ok": "x"}
    json.dumps(out, allow_nan=False)
    assert not any(isinstance(v, float) and math.isnan(v) for v in out["m"] if v is not None)
