"""Stand-in systems with planted error patterns (memlens.eval.systems.standin) on the tiny benchmark:
the exact taxonomy must recover what was planted, answer by answer.

Stated tolerance: every planted pattern is found as its expected source for at least 90% of its
answers (each pattern planted at least 8 times), 95% of all planted errors overall, and the share
of each label among the errors is within 5 points of the planted share.
"""

from __future__ import annotations

from collections import Counter

import pytest

from memlens.core.config import Paths, load_config
from memlens.core.io import write_jsonl
from memlens.eval.benchmark import open_benchmark
from memlens.eval.judge.judges import DeterministicJudge
from memlens.eval.report.errors import taxonomy_records, trace_errors
from memlens.eval.report.taxonomy import SOURCES
from memlens.eval.systems.standin import EXPECTED_SOURCE, PATTERNS, PlantedErrors
from tests.conftest import TINY

SEEDS = range(12)  # enough stand-ins that every pattern is planted MIN_PLANTED+ times on the tiny build
MIN_PLANTED, PER_PATTERN, OVERALL, SHARE = 8, 0.90, 0.95, 0.05


def _predictions(model, bench, length):
    from memlens.core.schema import Prediction

    out = []
    for item in bench.items(length):
        o = model.generate(item.for_system("standard"), "standard")
        q = item.question
        out.append(
            (
                q,
                Prediction(
                    system=model.name,
                    mode="standard",
                    length=length,
                    question_id=q.question_id,
                    question_type=q.question_type,
                    question_subtype=q.question_subtype,
                    ok=o.ok,
                    raw_prediction=o.text,
                    prediction=o.text,
                    meta=o.meta,
                    request_key=f"{model.name}:{length}:{q.question_id}",
                ),
            )
        )
    return out


@pytest.fixture(scope="module")
def planted(tiny_project, tmp_path_factory):
    """Every tiny item answered wrong by 10 stand-ins (accuracy 0), judged, then traced."""
    cfg = load_config(list(TINY), root=tiny_project)
    paths = Paths.from_cfg(cfg, root=tiny_project)
    bench = open_benchmark(cfg, paths)
    vroot = tmp_path_factory.mktemp("planted") / "verdicts"
    judge = DeterministicJudge()
    truth = {}
    for seed in SEEDS:
        model = PlantedErrors(name=f"standin-{seed}", seed=seed, accuracy=0.0)
        model.attach(paths, bench)
        for length in bench.lengths():
            pairs = _predictions(model, bench, length)
            verdicts = judge.judge_many(pairs)
            for v, (_, p) in zip(verdicts, pairs):
                v.request_key = p.request_key
                truth[(model.name, length, p.question_id)] = p.meta["planted"]
            write_jsonl(vroot / model.name / "standard" / f"{length}.deterministic.jsonl", verdicts)
    errors, totals = trace_errors(vroot, "deterministic", bench.source)
    return errors, totals, truth, vroot, bench


def test_every_planted_pattern_is_recovered(planted):
    errors, _, truth, *_ = planted
    by_key = {(e["system"], e["length"], e["question_id"]): e for e in errors}
    assert len(by_key) == len(truth)  # accuracy 0: every answer is wrong, and every one is traced
    hits, n = Counter(), Counter()
    misses = []
    for key, pattern in truth.items():
        n[pattern] += 1
        got = by_key[key]["source"]
        if got == EXPECTED_SOURCE[pattern]:
            hits[pattern] += 1
        else:
            misses.append((pattern, got, key))
    assert set(n) == {*PATTERNS, "fabricate_refusal_item"}, n
    for pattern in n:
        assert n[pattern] >= MIN_PLANTED, (pattern, n[pattern])
        assert hits[pattern] / n[pattern] >= PER_PATTERN, (pattern, hits[pattern], n[pattern], misses)
    assert sum(hits.values()) / sum(n.values()) >= OVERALL, misses


def test_label_shares_match_the_planted_shares(planted):
    errors, _, truth, *_ = planted
    planted_labels = Counter(SOURCES[EXPECTED_SOURCE[p]] for p in truth.values())
    total = sum(planted_labels.values())
    pooled = {
        r["length"]: r for r in taxonomy_records(errors) if r["system"] == "all systems" and r["level"] == "overall"
    }
    n_errors = sum(r["n_errors"] for r in pooled.values())
    assert n_errors == total
    for label, k in planted_labels.items():
        found = sum(r[f"n_{label}"] for r in pooled.values())
        assert abs(found / n_errors - k / total) <= SHARE, (label, found, k)
    # the stale share of KU errors is what was planted there
    ku = [e for e in errors if e["type"] == "KU"]
    planted_stale = sum(1 for e in ku if truth[(e["system"], e["length"], e["question_id"])] == "stale")
    assert planted_stale > 0
    assert abs(sum(e["label"] == "stale_knowledge" for e in ku) - planted_stale) <= SHARE * len(ku)


def test_stand_in_answers_are_deterministic_and_follow_its_accuracy(tiny_project):
    cfg = load_config(list(TINY), root=tiny_project)
    paths = Paths.from_cfg(cfg, root=tiny_project)
    bench = open_benchmark(cfg, paths)
    a, b = (PlantedErrors(name="s", seed=3, accuracy=1.0) for _ in range(2))
    for m in (a, b):
        m.attach(paths, bench)
    items = [it.for_system("standard") for it in bench.items("32k")]
    out_a = [a.generate(it).text for it in items]
    assert out_a == [b.generate(it).text for it in items]
    assert all(a.generate(it).meta["planted"] == "correct" for it in items)
    assert PlantedErrors(accuracy=0.6, decay_per_doubling=0.1).p_correct("128k") == pytest.approx(0.4)


def test_traced_files_are_cached_and_follow_their_verdicts(planted, tmp_path, monkeypatch):
    import shutil

    from memlens.eval.report import errors as err

    *_, vroot, bench = planted
    src = tmp_path / "v"
    for s in ("standin-0", "standin-1"):  # two systems' verdicts
        shutil.copytree(vroot / s, src / s)
    cache = tmp_path / "cache"
    first = err.trace_errors(src, "deterministic", bench.source, cache_dir=cache)
    assert len(list(cache.glob("*.json"))) == 4  # 2 systems x 2 lengths
    calls = []
    real = err._Tracer.trace
    monkeypatch.setattr(err._Tracer, "trace", lambda self, f: calls.append(f.path) or real(self, f))
    assert err.trace_errors(src, "deterministic", bench.source, cache_dir=cache) == first
    assert calls == []  # every file read from the cache
    f = src / "standin-1" / "standard" / "32k.deterministic.jsonl"
    f.write_text("\n".join(f.read_text().splitlines()[:3]) + "\n")  # a changed verdict file is traced again
    again = err.trace_errors(src, "deterministic", bench.source, cache_dir=cache)
    assert calls == [f]
    assert sum(1 for e in again[1] if e["system"] == "standin-1" and e["length"] == "32k" and e["n"] == 3) == 1
