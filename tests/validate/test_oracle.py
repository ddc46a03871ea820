"""The oracle-evidence solvers and their gate: far over chance (and the gate fails) on a benchmark
whose evidence text carries the answer, near chance (and the gate passes) on one where it does not;
the probe set is deterministic and never written."""

from __future__ import annotations

import hashlib
import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from memlens.construction.ontology.stage import build_topics, load_ontology_file
from memlens.construction.text.sessions import WriterConfig
from memlens.construction.validate import stage as V
from memlens.construction.validate.adversaries import oracle, probe, single_threaded
from memlens.construction.validate.adversaries.oracle import Item
from memlens.construction.validate.settings import ValidateSettings
from memlens.core.io import read_json
from tests.conftest import REPO, TINY, run_stage
from tests.support.validity_bench import _vocab, make_bench

SETTINGS = ValidateSettings.model_validate(
    yaml.safe_load((REPO / "conf" / "validate" / "default.yaml").read_text())
).model_dump()
START = datetime(2024, 3, 1, 10, 0)
ORDER = "temporal_reasoning/order_ranking"
AB = "temporal_reasoning/duration_comparison"


def chat(rng: random.Random, words: list[str]) -> str:
    return " ".join(" ".join(rng.sample(words, 8)).capitalize() + "." for _ in range(4))


def make_items(n: int, *, leaky: bool, seed: int = 0) -> list[Item]:
    """``n`` order questions and ``n`` A/B questions. Leaky: each event's evidence session names it
    and the sessions' dates give the order; 80% of the A/B answers are "A" and the longer option's
    sessions say so in their dates. Clean: every mention is the same words, the answers are drawn
    at random, half the letters each."""
    rng = random.Random(seed)
    words = _vocab(rng, 800)
    out = []
    for i in range(n):
        names = [" ".join(rng.sample(words, 2)) for _ in range(3)]
        days = sorted(rng.sample(range(1, 200), 3))
        order = list(range(3))
        rng.shuffle(order)  # event order[k] happened on days[k]
        ev = []
        for k, e in enumerate(order):
            said = names[e] if leaky else "the thing"
            ev.append(
                (START + timedelta(days=days[k]), f"{chat(rng, words)} Here is {said} <image>. {chat(rng, words)}")
            )
        answer = "".join(f"({e + 1})" for e in order)
        if not leaky:
            perm = list(range(3))
            rng.shuffle(perm)
            answer = "".join(f"({e + 1})" for e in perm)
        q = "Put these events in the order they happened: " + "; ".join(
            f"({k + 1}) the visit to {nm}" for k, nm in enumerate(names)
        )
        out.append(
            Item(
                f"o{i:04d}",
                ORDER,
                q + ". Answer earliest first.",
                answer,
                START + timedelta(days=300),
                tuple(sorted(ev)),
                f"o{i:04d}",
            )
        )
        a, b = (" ".join(rng.sample(words, 2)) for _ in range(2))
        letter = ("A" if rng.random() < 0.8 else "B") if leaky else rng.choice("AB")
        long_, short = (a, b) if letter == "A" else (b, a)
        ev = []
        for who, span in ((long_, 60), (short, 5)):
            d0 = rng.randrange(1, 100)
            for d, end in ((d0, "start"), (d0 + span, "end")):
                said = f"{who} {end}" if leaky else "the thing"
                ev.append((START + timedelta(days=d), f"{chat(rng, words)} Here is {said} <image>."))
        q = f"Which lasted longer: (A) the time from {a} start to {a} end, or (B) the time from {b} start to {b} end? Answer A or B."
        out.append(Item(f"a{i:04d}", AB, q, letter, START + timedelta(days=300), tuple(sorted(ev)), f"a{i:04d}"))
    return out


def gates_for(res: dict) -> dict:
    return V.adversary_gates({"oracle": {"lengths": {"32k": res}}}, SETTINGS)


@pytest.fixture(scope="module")
def leaky():
    with single_threaded():
        return oracle.solve(make_items(150, leaky=True), k_folds=5, seed=0)


@pytest.fixture(scope="module")
def clean():
    with single_threaded():
        return oracle.solve(make_items(150, leaky=False), k_folds=5, seed=0)


def test_oracle_beats_chance_on_a_leaky_benchmark_and_its_gate_fails(leaky):
    order, ab = leaky[ORDER], leaky[AB]
    assert order["chance"] == pytest.approx(1 / 6, abs=1e-4) and ab["chance"] == 0.5
    assert order["best_accuracy"] > 0.9  # the events' own words name their sessions, whose dates order them
    assert ab["best_accuracy"] > 0.75  # the skewed letter at least
    gates = gates_for({"subtypes": leaky})
    for sub in (ORDER, AB):
        g = gates[f"oracle/32k/{sub}"]
        assert g["status"] == "fail" and g["lower_bound"] > SETTINGS["max_oracle_excess"]
        assert g["interval"][0] <= leaky[sub]["best_accuracy"] <= g["interval"][1]
        assert g["decided_on"] == "real"


def test_oracle_sits_near_chance_without_the_leaks_and_its_gate_passes(clean):
    gates = gates_for({"subtypes": clean})
    for sub in (ORDER, AB):
        r = clean[sub]
        assert abs(r["best_accuracy"] - r["chance"]) < 0.1, r
        assert gates[f"oracle/32k/{sub}"]["status"] == "pass"


def test_the_gate_decides_on_real_questions_plus_probes():
    bench = make_bench(40)
    probes = make_items(40, leaky=True, seed=3)
    with single_threaded():
        figs = oracle.run(bench, k_folds=5, seed=0, probes=probes)
    res = figs["lengths"]["32k"]
    assert ORDER not in res["subtypes"] and res["with_probes"][ORDER]["n"] == 40
    g = V.adversary_gates({"oracle": figs}, SETTINGS)[f"oracle/32k/{ORDER}"]
    assert g["decided_on"] == "real+probes" and g["status"] == "fail"
    assert figs["probe"][ORDER]["n"] == 40


def test_folds_never_split_a_source_item():
    items = make_items(30, leaky=True)
    grouped = [
        Item(it.question_id, it.subtype, it.question, it.answer, it.question_date, it.evidence, it.question_id[1:])
        for it in items
    ]  # o0001 and a0001 share a source
    parts = oracle.grouped_folds(grouped, 5, seed=0)
    for part in parts:
        assert {q[1:] for q in part if q.startswith("o")} == {q[1:] for q in part if q.startswith("a")}


def _topics():
    return build_topics(load_ontology_file("1"), 42)


def test_probe_set_is_deterministic_and_its_own_seed_stream():
    one = probe.probe_items(42, _topics(), 2, WriterConfig())
    two = probe.probe_items(42, _topics(), 2, WriterConfig())
    other = probe.probe_items(43, _topics(), 2, WriterConfig())
    assert one == two and one != other
    subs = {it.subtype for it in one}
    assert ORDER in subs and AB in subs and not any(s.startswith("answer_refusal") for s in subs)
    assert all(it.question_id.startswith("probe_") and it.evidence for it in one)


def test_probe_size_sees_a_three_point_excess():
    assert probe.size_to_see(0.5, 0.03, 0.95) == 749
    assert probe.size_to_see(0.1, 0.03, 0.95) < 400


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "reports" not in p.parts and ".memlens-prev" not in p.parts  # (the stage's run locks)
    }


def test_validate_builds_probes_and_writes_none_of_them(tiny_copy):
    before = _digest(tiny_copy)
    run_stage(tiny_copy, "validate", *TINY, "+validate.probe_per_subtype.tiny=2", "validate.warn_only=true")
    rep = read_json(tiny_copy / "reports" / "validity.json")
    assert rep["probe"]["questions"] >= 2 * 8 and rep["probe"]["sha256"]
    oracle_gates = {k: g for k, g in rep["gates"].items() if k.startswith("oracle/")}
    assert oracle_gates and all(g["decided_on"] == "real+probes" for g in oracle_gates.values())
    assert _digest(tiny_copy) == before  # nothing but the reports written: no probe under data/
    assert not (tiny_copy / "data" / "release").exists() or not any(
        "probe_" in p.read_text(errors="ignore") for p in (tiny_copy / "data" / "release").rglob("*.json*")
    )
    assert "Oracle-evidence solvers" in (tiny_copy / "reports" / "validity.md").read_text()


def test_probes_per_subtype_are_sized_by_its_chance_and_capped():
    n = probe.sizes_to_see(
        {"TR/order_ranking": 0.09, "TR/duration_comparison": 0.5, "MSR/counting": 0.25}, 0.03, 0.95, 10_000
    )
    assert n["TR/order_ranking"] < n["MSR/counting"] < n["TR/duration_comparison"] == probe.size_to_see(0.5, 0.03, 0.95)
    capped = probe.sizes_to_see({"TR/order_ranking": 0.09, "TR/duration_comparison": 0.5}, 0.03, 0.95, 400)
    assert capped == {"TR/order_ranking": min(400, n["TR/order_ranking"]), "TR/duration_comparison": 400}


def test_probe_answers_are_balanced_per_variant_so_the_wording_names_no_answer():
    """Entity resolution's yes/no variants (shop signs, receipts) share their classes: each variant
    takes both, in turn, so "places" or "receipts" in the question says nothing about the answer."""
    from collections import Counter

    er = "multi_session_reasoning/entity_resolution"
    items = probe.probe_items(42, _topics(), {er: 16}, WriterConfig())
    by = Counter(("receipt" if "receipt" in it.question else "place", it.answer) for it in items)
    assert sum(by.values()) == 16
    for kind in ("place", "receipt"):
        assert by[(kind, "Yes")] == by[(kind, "No")] >= 1, by
        counts = [by[(kind, c)] for c in "1234"]
        assert max(counts) - min(counts) <= 1 and sum(counts) >= 2, by


def test_repeated_folds_average_the_single_draws():
    """``repeats`` draws of folds: each question's verdict is the share of the single draws (same
    seeds) it was right in, and chance is their mean, so the figure no longer rests on one draw."""
    items = make_items(40, leaky=False, seed=5)
    with single_threaded():
        many = oracle.held_out(items, k_folds=5, seed=2, repeats=3)
        single = [oracle.held_out(items, k_folds=5, seed=2 + 7919 * r) for r in range(3)]
    right, hits, draws = many
    assert len(draws) == 3 and [d[2][0] for d in single] == draws
    assert len({frozenset(map(frozenset, d)) for d in draws}) == 3  # three different draws
    for s in oracle.SOLVERS:
        for qid, share in right[s].items():
            assert share == pytest.approx(sum(d[0][s][qid] for d in single) / 3)
    assert any(0 < v < 1 for s in oracle.SOLVERS for v in right[s].values())  # the draws disagree somewhere
    fig = oracle.figures(items, *many)
    chances = [oracle.figures(items, *d)[ORDER]["chance"] for d in single]
    assert fig[ORDER]["chance"] == pytest.approx(sum(chances) / 3, abs=1e-4)
    assert fig[ORDER]["fold_draws"] == 3
    assert hits == single[0][1]
