"""Retention vs size (memlens.eval.report.scaling), the backbone-matched comparison
(memlens.eval.report.backbone) and system cards (memlens.eval.report.cards), against hand computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from memlens.eval.report.analyses import OutcomeCube
from memlens.eval.report.backbone import backbone_records
from memlens.eval.report.cards import SystemCard, card_from_config, load_cards, write_card
from memlens.eval.report.scaling import retention_records, retention_summary

Q = 10


def cube(outcomes: dict[str, dict[str, list[float]]], types=None) -> OutcomeCube:
    systems = sorted(outcomes)
    lengths = ["32k", "64k", "128k"]
    correct = np.full((len(systems), len(lengths), Q), np.nan)
    for s, system in enumerate(systems):
        for ln, xs in outcomes[system].items():
            correct[s, lengths.index(ln), : len(xs)] = xs
    types = types or ["IE"] * 5 + ["KU"] * 5
    return OutcomeCube(
        judge="deterministic",
        mode="standard",
        systems=systems,
        lengths=lengths,
        question_ids=[f"q{i}" for i in range(Q)],
        types=types,
        subtypes=[""] * Q,
        task_keys=[""] * Q,
        correct=correct,
        abstained=np.zeros_like(correct),
        failed=np.zeros(correct.shape, dtype=bool),
    )


def ones(k: int) -> list[float]:
    return [1.0] * k + [0.0] * (Q - k)


# (size, correct at 32k, correct at 128k): retention 0.5, 0.6, 0.8, 0.7, 0.9 (by hand)
SIZED = {"s2": (2, 10, 5), "s8": (8, 10, 6), "s30": (30, 10, 8), "s72": (72, 10, 7), "s235": (235, 10, 9)}


def sized_cube():
    outs = {s: {"32k": ones(a), "128k": ones(b)} for s, (_, a, b) in SIZED.items()}
    outs["agent"] = {"32k": ones(5), "128k": ones(5)}
    outs["nosize"] = {"32k": ones(4), "64k": ones(2)}
    cards = {s: SystemCard(s, "lvlm", float(n), float(n)) for s, (n, _, _) in SIZED.items()}
    cards["agent"] = SystemCard("agent", "agent", 8.0, 8.0)
    return cube(outs), cards


def test_retention_by_hand():
    c, cards = sized_cube()
    recs, pair = retention_records(c, cards)
    assert pair == ("32k", "128k")  # the longest length with 5 sized systems at both
    ret = {r["system"]: r["retention"] for r in recs}
    assert ret == pytest.approx({"s2": 0.5, "s8": 0.6, "s30": 0.8, "s72": 0.7, "s235": 0.9, "agent": 1.0})
    summ = retention_summary(recs)
    # ranks of size 1..5, of retention 1, 2, 4, 3, 5: d^2 = 2, rho = 1 - 6 * 2 / (5 * 24) = 0.9
    assert summ["n_systems"] == 5 and "agent" not in summ["systems"]
    assert summ["rho_total"] == pytest.approx(0.9)
    ref = sps.spearmanr([2, 8, 30, 72, 235], [0.5, 0.6, 0.8, 0.7, 0.9])
    assert summ["p_total"] == pytest.approx(ref.pvalue)
    # exact: of the 120 orders of 5 ranks, those with |rho| >= 0.9 (sum d^2 <= 2): 1 + 4 each way
    assert summ["p_total_exact"] == pytest.approx(10 / 120)
    exact = sps.permutation_test(
        ([2, 8, 30, 72, 235],),
        lambda y: sps.spearmanr([0.5, 0.6, 0.8, 0.7, 0.9], y).statistic,
        permutation_type="pairings",
    )
    assert summ["p_total_exact"] == pytest.approx(exact.pvalue)


def test_retention_needs_five_sized_systems():
    c, cards = sized_cube()
    cards.pop("s235")
    summ = retention_summary(retention_records(c, cards)[0])
    assert summ["n_systems"] == 4 and summ["rho_total"] is None and summ["p_total"] is None


def test_backbone_matched_by_hand():
    agent = [1, 1, 0, 0, 0, 0, 0, 0] + [np.nan] * 2  # the agent answered 8 questions (its subset)
    base = [1, 0, 1, 1, 1, 0, 0, 0, 1, 1]
    c = cube({"agent": {"32k": agent}, "base": {"32k": base}})
    cards = {"agent": SystemCard("agent", "agent", backbone_config="base"), "base": SystemCard("base", "lvlm")}
    recs = backbone_records(c, cards, n_resamples=500, seed=1)
    overall = next(r for r in recs if r["group"] == "overall")
    assert (overall["agent"], overall["backbone"], overall["n"]) == ("agent", "base", 8)
    assert overall["acc_agent"] == 0.25 and overall["acc_backbone"] == 0.5 and overall["diff"] == -0.25
    assert (overall["agent_only"], overall["backbone_only"]) == (1, 3)
    assert overall["p_value"] == pytest.approx(2 * sps.binom.cdf(1, 4, 0.5))
    assert overall["diff_low"] <= -0.25 <= overall["diff_high"]
    assert {r["group"] for r in recs} == {"overall", "IE", "KU"}
    assert backbone_records(c, {"agent": SystemCard("agent", "agent", backbone_config="missing")}) == []


def test_cards_from_archive_then_conf(tmp_path):
    archive, conf = tmp_path / "archive", tmp_path / "conf"
    write_card(archive, card_from_config({"name": "a", "kind": "agent", "params_total_b": 8, "backbone_config": "b"}))
    conf.mkdir()
    (conf / "b.yaml").write_text("name: b\nkind: lvlm\nparams_total_b: 235\nparams_active_b: 22\n")
    (conf / "c.yaml").write_text("name: not-c\nparams_total_b: 1\n")  # a file of another system
    cards = load_cards(archive, ["a", "b", "c"], conf)
    assert cards["a"] == SystemCard("a", "agent", 8.0, None, "b", "archive")
    assert cards["b"] == SystemCard("b", "lvlm", 235.0, 22.0, None, "conf")
    assert cards["c"] == SystemCard("c")
    assert card_from_config({"name": "x", "params_total_b": "lots"}).params_total_b is None
