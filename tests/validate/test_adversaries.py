"""The adversaries and their gates: each gate fails on the benchmark with its leak planted, passes on
the clean one, and reads "not evaluated" (still reporting the figure) when the sample is too small."""

from __future__ import annotations

import json

import pytest
import yaml

from memlens.construction.validate import stage as V
from memlens.construction.validate.adversaries import detectors, repetition, run_all, textonly
from memlens.construction.validate.adversaries.__main__ import main as cli_main
from memlens.construction.validate.adversaries.data import load
from memlens.construction.validate.adversaries.stats import auc_lower, verdict, wilson_lower
from memlens.construction.validate.settings import ValidateSettings
from memlens.core.io import write_jsonl
from memlens.core.schema import Instance, Session, Turn
from tests.conftest import REPO
from tests.support.validity_bench import make_bench

SETTINGS = ValidateSettings.model_validate(
    yaml.safe_load((REPO / "conf" / "validate" / "default.yaml").read_text())
).model_dump()


def gates_of(bench, only=(), **over):
    v = {**SETTINGS, "text_max_features": 3000, **over}
    figs = run_all(bench, v, seed=0, only=only)
    return V.adversary_gates(figs, v), figs


def failing(gates) -> set[str]:
    return {k for k, g in gates.items() if g["status"] == "fail"}


@pytest.fixture(scope="module")
def clean():
    return gates_of(make_bench(80))


def test_clean_benchmark_passes_every_adversary_gate_and_they_are_evaluated(clean):
    gates, _figs = clean
    assert failing(gates) == set()
    for det in ("metadata", "text", "images", "recurrence"):
        g = gates[f"evidence_auc/32k/{det}"]
        assert g["status"] == "pass" and g["n"] >= SETTINGS["min_evidence"]
        assert 0.3 < g["value"] < 0.7
    assert gates["text_only/32k/answerable"]["status"] == "pass"
    assert gates["refusal_detection/32k"]["status"] == "pass"
    assert gates["repetition/32k"]["status"] == "pass" and gates["repetition/32k"]["value"] < 0.01


@pytest.mark.parametrize(
    ("leak", "gate", "feature"),
    [
        ("phrase", "evidence_auc/32k/text", "august"),
        ("timing", "evidence_auc/32k/metadata", "hour"),
        ("image_size", "evidence_auc/32k/images", ""),
        ("recurrence", "evidence_auc/32k/recurrence", "histories"),
    ],
)
def test_a_planted_evidence_leak_fails_its_detector_gate_and_names_the_feature(leak, gate, feature):
    gates, figs = gates_of(make_bench(60, leak=leak, pool=80), only=("detectors",))
    assert gate in failing(gates)
    assert gates[gate]["lower_bound"] > SETTINGS["max_auc"] and gates[gate]["value"] > 0.85
    det = gate.rsplit("/", 1)[1]
    top = [f["feature"] for f in figs["detectors"]["32k"][det]["top_features"]]
    if leak == "image_size":
        assert {"width", "height", "aspect"} & set(top[:2])
    else:
        assert any(feature in t for t in top[:3]), top


def test_answer_prior_leak_fails_the_text_only_gate():
    gates, figs = gates_of(make_bench(160, leak="answer_prior"), only=("text_only",))
    sub = "text_only/32k/temporal_reasoning/duration_comparison"
    assert sub in failing(gates)
    row = figs["text_only"]["lengths"]["32k"]["subtypes"]["temporal_reasoning/duration_comparison"]
    assert row["chance"] == 0.5 and row["accuracy"]["prior"] == 1.0


def test_unmentioned_refusal_contexts_fail_the_refusal_detection_gate():
    gates, figs = gates_of(make_bench(160, leak="context"), only=("text_only",))
    assert "refusal_detection/32k" in failing(gates)
    assert figs["text_only"]["lengths"]["32k"]["refusal_detection"]["balanced_accuracy"] > 0.9


def test_this_morning_dates_are_found_by_the_dates_solver():
    gates, figs = gates_of(make_bench(160, leak="this_morning"), only=("text_only",))
    row = figs["text_only"]["lengths"]["32k"]["subtypes"]["temporal_reasoning/temporal_info_extraction"]
    assert row["accuracy"]["dates"] == 1.0 and row["best"] == "dates" and row["chance"] < 0.1
    assert "text_only/32k/temporal_reasoning/temporal_info_extraction" in failing(gates)
    assert "text_only/32k/answerable" in failing(gates)


def test_small_samples_are_not_evaluated_but_reported():
    gates, figs = gates_of(make_bench(12, leak="phrase", pool=40), only=("detectors",), min_evidence=20)
    g = gates["evidence_auc/32k/text"]
    assert g["status"] == "not evaluated" and g["pass"] and g["n"] < 20
    assert figs["detectors"]["32k"]["text"]["roc_auc"] > 0.85  # the figure is there
    assert g["point_over"]
    # the same sample is decided once the minimum allows it
    gates, _ = gates_of(make_bench(12, leak="phrase", pool=40), only=("detectors",), min_evidence=5)
    assert gates["evidence_auc/32k/text"]["status"] in {"fail", "pass"}


def test_stats_bounds_and_verdicts():
    assert wilson_lower(50, 100, 0.95) == pytest.approx(0.4190, abs=1e-3)
    assert wilson_lower(0, 10, 0.95) == 0.0 and wilson_lower(10, 10, 0.95) < 1.0
    assert auc_lower(0.9, 50, 500, 0.95) == pytest.approx(0.8515, abs=1e-3)  # SE 0.0295
    assert verdict(0.7, 0.55, 0.6, 100, 20)["status"] == "pass"  # point over, not shown
    assert verdict(0.7, 0.55, 0.6, 100, 20)["point_over"]
    assert verdict(0.7, 0.65, 0.6, 100, 20)["status"] == "fail"
    assert verdict(0.9, 0.8, 0.6, 5, 20)["status"] == "not evaluated"
    assert verdict(0.1, None, 0.05, 1, 1)["status"] == "fail"  # exact figures: the value decides


def test_chance_follows_the_answer_format():
    b = make_bench(40)
    ch = textonly.chance_by_subtype(b.answerable())
    assert ch["temporal_reasoning/duration_comparison"] == 0.5
    assert 0.0 <= ch["multi_session_reasoning/counting"] <= 0.5  # held-out best constant over 1..6


def test_repetition_counts_verbatim_repeats_within_a_history():
    long1 = "We walked along the old river path today."
    long2 = "The bakery on the corner sells great bread."
    s1 = Session("s1", "haystack", "t", [Turn("user", f"Hi there! {long1} {long2}")])
    s2 = Session("s2", "haystack", "t", [Turn("user", f"Hi there! {long1} Something else entirely happened then.")])
    b = make_bench(4)
    b.sessions = {"s1": s1, "s2": s2}
    inst = Instance("q000", "32k", 1, ["s1", "s2"], ["2024/01/01 (Mon) 10:00"] * 2, [], 1, 1, 0, 0)
    b.instances = {"32k": [inst]}
    r = repetition.run(b, min_words=5, frequent_uses=2)
    # "Hi there!" is too short; of 4 counted sentences one repeats an earlier one
    assert r["lengths"]["32k"]["repeat_share_mean"] == 0.25
    assert r["top_count"] == 2 and r["frequent_share"] == 0.5


def test_detector_units_count_each_session_once_from_its_own_history():
    b = make_bench(20)
    us = detectors.units(b, "32k")
    assert len({u.session_id for u in us}) == len(us)
    ev = [u for u in us if u.label]
    assert len(ev) == sum(1 for q in b.questions.values() if q.evidence)
    assert all(b.questions[u.group].evidence[0].session_id == u.session_id for u in ev)


def test_cli_prints_every_adversary_for_a_data_folder(tmp_path, capsys):
    b = make_bench(16, pool=40)
    d = tmp_path / "data"
    write_jsonl(d / "generated" / "questions.jsonl", [q.to_dict() for q in b.questions.values()])
    write_jsonl(d / "generated" / "sessions.jsonl", [s.to_dict() for s in b.sessions.values()])
    write_jsonl(d / "images" / "index.jsonl", [{"image": r.to_dict()} for r in b.images.values()])
    write_jsonl(d / "instances" / "32k.jsonl", [i.to_dict() for i in b.instances["32k"]])
    assert cli_main(["--data", str(d), "--json", str(tmp_path / "f.json")]) == 0
    out = capsys.readouterr().out
    assert "Text-only solvers, 32k" in out and "Evidence detectors" in out and "Sentence repetition" in out
    assert "Oracle-evidence solvers, 32k, real questions" in out
    figs = json.loads((tmp_path / "f.json").read_text())
    assert set(figs) == {"text_only", "oracle", "detectors", "repetition", "timing"}
    assert load(d).lengths == ["32k"]
    # a data folder without the generated records: one clear message naming the file
    (d / "generated" / "sessions.jsonl").unlink()
    assert cli_main(["--data", str(d)]) == 2
    assert "sessions.jsonl: missing" in capsys.readouterr().err


def test_same_benchmark_and_seed_give_identical_figures():
    from memlens.core.io import canonical_json

    runs = []
    for _ in range(2):
        figs = run_all(make_bench(40, leak="timing", pool=60), {**SETTINGS, "text_max_features": 2000}, seed=3)
        figs.pop("timing")
        runs.append(canonical_json(figs))
    assert runs[0] == runs[1]


def _count_questions(n: int, answers: list[str]):
    from memlens.core.schema import Question

    return [
        Question(
            question_id=f"q{i:02d}",
            question_type="information_extraction",
            question_subtype="entity",
            question=f"How many cups are on shelf {i}?",
            answer=answers[i % len(answers)],
            question_date="2025/01/01 (Wed) 10:00",
        )
        for i in range(n)
    ]


def test_held_out_chance_does_not_punish_a_balanced_design():
    """Two answers, 20 questions each: leave-one-out gives every question the *other* answer (its
    own lost a vote), a constant's chance 0; a guess drawn like the other answers is right 19/39 of
    the time; held out on folds, the constant of the other folds is right about half the time."""
    qs = _count_questions(40, ["3", "4"])
    assert textonly.chance_by_subtype(qs)["information_extraction/entity"] == pytest.approx(19 / 39)
    parts = textonly.folds([q.question_id for q in qs], 5, 0)
    ch = textonly.chance_by_subtype(qs, parts)["information_extraction/entity"]
    assert 0.3 <= ch <= 0.7


def test_chance_of_a_count_balanced_over_four_answers_is_about_a_quarter():
    """A count balanced over 1-4 (issue 19's closed answers): every held-out constant is
    anti-correlated with the answer, the drawn guess is right (n/4 - 1)/(n - 1) of the time."""
    qs = _count_questions(48, ["1", "2", "3", "4"])
    parts = textonly.folds([q.question_id for q in qs], 5, 0)
    for p in (None, parts):
        assert textonly.chance_by_subtype(qs, p)["information_extraction/entity"] == pytest.approx(11 / 47)


def test_chance_of_a_skewed_count_is_its_held_out_majority():
    """Nine answers in ten are 2: the constant 2 (right 0.9 of the time held out) beats a drawn guess (0.81)."""
    qs = _count_questions(40, ["2"] * 9 + ["3"])
    ch = textonly.chance_by_subtype(qs)["information_extraction/entity"]
    assert ch == pytest.approx(0.9)


def test_chance_of_open_answers_stays_near_zero():
    qs = _count_questions(30, [f"Shop {i}" for i in range(30)])
    assert textonly.chance_by_subtype(qs)["information_extraction/entity"] == 0.0


def test_figures_are_the_same_in_one_process_and_in_several():
    """``workers`` splits the adversaries over forked processes (:func:`plan`): every figure is the
    one a single process computes, and a probe-set function runs in the oracle's process."""
    from memlens.core.io import canonical_json

    bench = make_bench(40, leak="timing", pool=60)
    v = {**SETTINGS, "text_max_features": 2000}
    made = []

    def probes():
        made.append(1)
        return []

    one = run_all(bench, v, seed=3, workers=1)
    two = run_all(bench, v, seed=3, workers=2, probes=probes)
    assert made == [1] and two["timing"]["probe"] >= 0 and set(two["timing"]) >= set(one["timing"])
    one.pop("timing"), two.pop("timing")
    assert canonical_json(one) == canonical_json(two)


def test_plan_balances_the_steps_and_keeps_the_costliest_in_the_parent():
    from memlens.construction.validate.adversaries import plan

    names = ["text_only", "detectors", "oracle", "repetition"]
    assert plan(names, 1) == [names]
    assert plan(names, 2) == [["oracle"], ["text_only", "detectors", "repetition"]]
    assert plan(names, 8)[0] == ["oracle"] and sorted(n for g in plan(names, 8) for n in g) == sorted(names)
    assert plan(["repetition"], 2) == [["repetition"]]


def test_an_error_in_a_worker_process_reaches_the_caller(monkeypatch):
    from memlens.core.errors import MemLensError

    def broken(*a, **k):
        raise MemLensError("detectors: planted failure")

    monkeypatch.setattr(detectors, "run", broken)
    with pytest.raises(MemLensError, match="planted failure"):
        run_all(make_bench(40), {**SETTINGS, "text_max_features": 2000}, seed=0, workers=2)


def test_a_worker_process_that_dies_is_a_clear_error(monkeypatch):
    import os

    from memlens.core.errors import MemLensError

    monkeypatch.setattr(detectors, "run", lambda *a, **k: os._exit(3))
    with pytest.raises(
        MemLensError, match=r"running text_only, detectors, repetition died \(exit code 3\).*validate.workers=1"
    ):
        run_all(make_bench(40), {**SETTINGS, "text_max_features": 2000}, seed=0, workers=2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hstack_rows_is_scipys_hstack_without_its_copies(seed):
    """The text detector's matrices are joined row by row into the result's arrays: the same data,
    column indices and row pointers as scipy's hstack, empty rows and float32 included."""
    import numpy as np
    import scipy.sparse as sp

    from memlens.construction.validate.adversaries.detectors import hstack_rows

    rng = np.random.default_rng(seed)
    a = sp.random(40, 17, density=0.2, format="csr", random_state=rng, dtype=np.float64)
    b = sp.random(40, 29, density=0.1, format="csr", random_state=rng, dtype=[np.float64, np.float32][seed % 2])
    a[3] = 0
    b[5] = 0
    a.eliminate_zeros()
    b.eliminate_zeros()
    got, want = hstack_rows(a, b), sp.hstack([a, b]).tocsr()
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got.indptr, want.indptr)
    assert np.array_equal(got.indices, want.indices) and np.array_equal(got.data, want.data)
    with pytest.raises(ValueError, match="rows"):
        hstack_rows(a, b[:10])


def test_text_detector_on_row_indices_matches_the_copied_matrix():
    """The text detector fits each fold on rows taken from the full TF-IDF matrix at once (no copy
    of a length's matrix beside the fold's): the same AUC and features as on that length's copy."""
    import numpy as np
    import scipy.sparse as sp

    from memlens.construction.validate.adversaries.detectors import text_model

    rng = np.random.default_rng(3)
    x = sp.random(120, 60, density=0.15, format="csr", random_state=rng)
    rows = rng.permutation(120)[:90]
    y = rng.integers(0, 2, 90)
    x = x.tolil()
    for i, r in enumerate(rows):  # a learnable signal in column 0
        x[r, 0] = 1.0 + y[i]
    x = x.tocsr()
    groups = np.asarray([f"q{i % 15}" for i in range(90)])
    names = [f"f{i}" for i in range(60)]
    on_rows = text_model(x, rows, names, y, groups, k=3, seed=0, top=3)
    copied = x[rows]
    on_copy = text_model(copied, np.arange(90), names, y, groups, k=3, seed=0, top=3)
    assert on_rows == on_copy and on_rows["roc_auc"] > 0.9
