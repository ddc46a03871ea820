"""Judge self-test: how often does a judge accept a wrong answer or reject a right one, on this build?

``memlens judge --selftest [overrides]`` builds, from the benchmark itself, an adversarial suite of
answers labelled by construction (:mod:`memlens.eval.judge.decoys` finds each question's decoys,
:mod:`memlens.eval.judge.selfcases` writes right answers in every format and wrong answers in every
pattern), runs the configured judge on it (``judge=deterministic`` by default; ``judge=llm
judge.base_url=...`` for an LLM judge, through its ordinary ``judge_many``, cache included) and
reports, per task key and per pattern:

* ``false_accept``: wrong answers judged correct / wrong answers;
* ``false_reject``: right answers judged wrong / right answers;
* ``accuracy``: verdicts equal to the label / cases judged (a judge failure, ``correct=None``, is
  counted apart in ``failed``, never as right or wrong).

The gate (:data:`GATE_ACCURACY`, :data:`GATE_FALSE_ACCEPT`) must hold on every task key. Outputs:
``reports/judge_selftest/<judge>.json`` (the figures), ``<judge>.md`` (the tables),
``<judge>.cases.jsonl`` (every case with its verdict) and, with tracking enabled, one MLflow run
``judge self-test: <judge>`` in the benchmark's experiment (tag ``memlens.role=judge_selftest``,
so leaderboards never read it) with the figures as metrics and the files as artifacts.

Optional config ``+selftest.seed=N`` (which texts the patterns use) and ``+selftest.max_cases=N``
(a stratified sample: the same share of every task key and pattern, for a judge that costs money).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from pydantic import Field

from memlens.core.config import Paths, section
from memlens.core.errors import DataError
from memlens.core.io import write_json, write_jsonl
from memlens.core.schema import Prediction, Question
from memlens.core.settings import PositiveInt, Section, Settings, as_settings
from memlens.core.tasks import TASK_KEYS
from memlens.eval.judge.decoys import benchmark_facts
from memlens.eval.judge.selfcases import PATTERNS, Case, generate

log = logging.getLogger(__name__)

#: version of the case generator: part of every self-test's identity (report, MLflow run key)
SELFTEST_VERSION = "1"
GATE_ACCURACY = 0.98


class SelfTestSettings(Section):
    """``selftest`` (optional, ``memlens judge --selftest +selftest.max_cases=2000``): the judge
    self-test's seed (which texts its patterns use) and an optional stratified sample size."""

    seed: int = 0
    max_cases: PositiveInt | None = Field(default=None)


GATE_FALSE_ACCEPT = 0.01
ROLE = "judge_selftest"


def build_cases(bench, seed: int = 0, max_cases: int | None = None) -> list[Case]:
    """Every case of a benchmark, or a stratified sample of ``max_cases`` (same share per key/pattern)."""
    cases = list(generate(benchmark_facts(bench), seed))
    if max_cases is None or max_cases >= len(cases):
        return cases
    share = max_cases / len(cases)
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for c in cases:
        groups[(c.task_key, c.pattern)].append(c)
    keep: list[Case] = []
    for _, group in sorted(groups.items()):
        group.sort(key=lambda c: hashlib.sha256(f"{seed}\x1f{c.case_id}".encode()).hexdigest())
        keep += group[: max(1, round(share * len(group)))]
    return sorted(keep, key=lambda c: c.case_id)


def judge_cases(judge, questions: dict[str, Question], cases: Sequence[Case]) -> list:
    """The judge's verdict on every case, through its ordinary ``judge_many``."""
    pairs = []
    for c in cases:
        q = questions[c.question_id]
        p = Prediction(
            system="judge-selftest",
            mode="standard",
            length="selftest",
            question_id=q.question_id,
            question_type=q.question_type,
            question_subtype=q.question_subtype,
            ok=True,
            raw_prediction=c.prediction,
            prediction=c.prediction,
            request_key=c.case_id,
        )
        pairs.append((q, p))
    verdicts = judge.judge_many(pairs)
    if len(verdicts) != len(pairs):
        raise DataError(f"judge {judge.name!r} returned {len(verdicts)} verdicts for {len(pairs)} self-test cases")
    return verdicts


def _rates(rows: list[tuple[bool, bool | None]]) -> dict:
    """Figures of (expected, verdict) pairs; verdict None = the judge failed."""
    judged = [(e, v) for e, v in rows if v is not None]
    wrong = [v for e, v in judged if not e]
    right = [v for e, v in judged if e]
    return {
        "n": len(rows),
        "failed": len(rows) - len(judged),
        "n_wrong": len(wrong),
        "n_right": len(right),
        "false_accept": round(sum(wrong) / len(wrong), 6) if wrong else None,
        "false_reject": round(sum(not v for v in right) / len(right), 6) if right else None,
        "accuracy": round(sum(e == v for e, v in judged) / len(judged), 6) if judged else None,
        "errors": sum(e != v for e, v in judged),
    }


def summarise(cases: Sequence[Case], verdicts: Sequence) -> dict:
    """Overall, per task key and per (task key, pattern) figures, and the gate on every task key."""
    rows = [(c.expected, None if v.correct is None else bool(v.correct)) for c, v in zip(cases, verdicts)]
    by_key: dict[str, list] = defaultdict(list)
    by_pattern: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for c, r in zip(cases, rows):
        by_key[c.task_key].append(r)
        by_pattern[c.task_key][c.pattern].append(r)
    keys = {k: _rates(by_key[k]) for k in TASK_KEYS if k in by_key}
    for fig in keys.values():
        fig["passed"] = (
            fig["accuracy"] is not None
            and fig["accuracy"] >= GATE_ACCURACY
            and (fig["false_accept"] or 0.0) <= GATE_FALSE_ACCEPT
            and fig["failed"] == 0
        )
    missing = [k for k in TASK_KEYS if k not in keys]
    return {
        "overall": _rates(rows),
        "task_keys": keys,
        "patterns": {k: {p: _rates(v) for p, v in sorted(by_pattern[k].items())} for k in keys},
        "missing_task_keys": missing,
        "passed": not missing and all(f["passed"] for f in keys.values()),
        "gate": {"accuracy": GATE_ACCURACY, "false_accept": GATE_FALSE_ACCEPT},
    }


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def markdown(summary: dict, meta: dict) -> str:
    lines = [
        f"# Judge self-test: `{meta['judge']}`",
        "",
        f"Benchmark `{meta['dataset_sha256'][:12]}`, {summary['overall']['n']} cases labelled by construction "
        f"(generator v{SELFTEST_VERSION}, seed {meta['seed']}); judge key `{meta['judge_key'][:12]}`. "
        f"Gate per task key: accuracy >= {GATE_ACCURACY:.0%}, false-accept <= {GATE_FALSE_ACCEPT:.0%}: "
        f"**{'PASSED' if summary['passed'] else 'FAILED'}**.",
        "",
        "| task key | cases | accuracy | false-accept | false-reject | failed | gate |",
        "|---|---|---|---|---|---|---|",
    ]
    for k, f in summary["task_keys"].items():
        lines.append(
            f"| {k} | {f['n']} | {_pct(f['accuracy'])} | {_pct(f['false_accept'])} | {_pct(f['false_reject'])} "
            f"| {f['failed']} | {'pass' if f['passed'] else 'FAIL'} |"
        )
    o = summary["overall"]
    lines += [
        f"| **all** | {o['n']} | {_pct(o['accuracy'])} | {_pct(o['false_accept'])} | {_pct(o['false_reject'])} "
        f"| {o['failed']} | |",
        "",
        "## Per pattern",
        "",
        "A `wrong:` pattern's error rate is its false-accept rate, a `right:` pattern's its false-reject rate.",
        "",
        "| task key | pattern | cases | errors | rate |",
        "|---|---|---|---|---|",
    ]
    for k, pats in summary["patterns"].items():
        for p, f in pats.items():
            rate = f["false_accept"] if p.startswith("wrong:") else f["false_reject"]
            lines.append(f"| {k} | {p} | {f['n']} | {f['errors']} | {_pct(rate)} |")
    lines += ["", "## Patterns", ""] + [f"- `{p}`: {d}" for p, d in PATTERNS.items()]
    return "\n".join(lines) + "\n"


def metrics(summary: dict) -> dict[str, float]:
    """Flat MLflow metrics: ``<figure>``, ``<figure>__<task key>``, ``err__<task key>__<pattern>``."""
    out: dict[str, float] = {}
    for fig in ("accuracy", "false_accept", "false_reject"):
        if summary["overall"][fig] is not None:
            out[fig] = summary["overall"][fig]
        for k, f in summary["task_keys"].items():
            if f[fig] is not None:
                out[f"{fig}__{k}"] = f[fig]
    for k, pats in summary["patterns"].items():
        for p, f in pats.items():
            rate = f["false_accept"] if p.startswith("wrong:") else f["false_reject"]
            if rate is not None:
                out[f"err__{k}__{p.replace(':', '_')}"] = rate
    out["passed"] = float(summary["passed"])
    out["cases"] = float(summary["overall"]["n"])
    return out


def report_dir(paths: Paths) -> Path:
    return paths.reports / "judge_selftest"


def write_outputs(paths: Paths, judge_name: str, summary: dict, meta: dict, cases, verdicts) -> list[Path]:
    out = report_dir(paths)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / f"{judge_name}.json", out / f"{judge_name}.md", out / f"{judge_name}.cases.jsonl"]
    write_json(files[0], {**meta, **summary})
    files[1].write_text(markdown(summary, meta), encoding="utf-8")
    write_jsonl(
        files[2],
        [{**asdict(c), "correct": v.correct, "reason": v.reason, "parsed": v.parsed} for c, v in zip(cases, verdicts)],
    )
    return files


def log_to_mlflow(cfg, paths: Paths, meta: dict, summary: dict, files: list[Path]) -> str | None:
    if not cfg.tracking.enabled:
        return None
    from memlens.eval.tracking import Tracker

    tracker = Tracker(paths.root, cfg.tracking, meta["dataset_sha256"])
    key = hashlib.sha256(
        f"{ROLE}\x1f{meta['dataset_sha256']}\x1f{meta['judge_key']}\x1f{SELFTEST_VERSION}\x1f{meta['seed']}"
        f"\x1f{meta['max_cases']}".encode()
    ).hexdigest()
    params = {"judge": section(cfg, "judge"), "selftest": {k: meta[k] for k in ("seed", "max_cases", "version")}}
    return tracker.log_single_run(
        key,
        f"judge self-test: {meta['judge']}",
        params=params,
        metrics=metrics(summary),
        tags={"memlens.role": ROLE, "memlens.judge": meta["judge"], "memlens.dataset_hash": meta["dataset_sha256"]},
        files=files,
    )


def run(cfg: Settings, paths: Paths) -> None:
    """``memlens judge --selftest``: build the cases, judge them, report (see the module docstring)."""
    from memlens.eval.benchmark import open_benchmark
    from memlens.eval.judge.stage import build_judge, judge_key

    cfg = as_settings(cfg)
    opts: SelfTestSettings = cfg.selftest
    seed, max_cases = opts.seed, opts.max_cases
    judge = build_judge(cfg)
    if hasattr(judge, "set_root"):
        judge.set_root(paths.root)
    bench = open_benchmark(cfg, paths)
    t0 = time.perf_counter()
    cases = build_cases(bench, seed, max_cases)
    t1 = time.perf_counter()
    verdicts = judge_cases(judge, bench.questions, cases)
    t2 = time.perf_counter()
    summary = summarise(cases, verdicts)
    meta = {
        "judge": judge.name,
        "judge_key": judge_key(cfg),
        "dataset_sha256": bench.dataset_hash(),
        "version": SELFTEST_VERSION,
        "seed": seed,
        "max_cases": max_cases,
        "questions": len(bench.questions),
    }
    files = write_outputs(paths, judge.name, summary, meta, cases, verdicts)
    run_id = log_to_mlflow(cfg, paths, meta, summary, files)
    log.info("judge self-test %s: %d cases built in %.2f s, judged in %.2f s", judge.name, len(cases), t1 - t0, t2 - t1)
    print(markdown(summary, meta).split("\n## Per pattern")[0].rstrip())
    print(f"\nreport: {files[1]}" + (f"; MLflow run {run_id}" if run_id else ""))
