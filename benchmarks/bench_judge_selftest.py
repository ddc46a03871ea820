"""The judge self-test of a build, for the current deterministic judge and another revision's.

Builds the self-test cases of the benchmark in ``--root`` (``memlens.eval.judge.selftest``), judges
them with the deterministic judge of ``--against`` (default ``main``, loaded by
``benchmarks/judge_baseline.py``) and with the current one, and prints accuracy, false-accept and
false-reject per task key and the error rate per (task key, pattern), before and after, side by
side (``--out FILE`` also writes them as markdown).

Usage: python benchmarks/bench_judge_selftest.py --root /path/to/project [--against REV] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_baseline import load
from memlens.core.config import Paths, load_config
from memlens.eval.benchmark import open_benchmark
from memlens.eval.judge import deterministic
from memlens.eval.judge.selftest import build_cases, summarise


class _V:
    __slots__ = ("correct",)

    def __init__(self, correct: bool):
        self.correct = correct


def judge_with(score, questions, cases) -> list[_V]:
    out = []
    for c in cases:
        q = questions[c.question_id]
        g = score(
            q.question_type, q.question_subtype, q.answer, c.prediction, old_answer=q.old_answer, question=q.question
        )
        out.append(_V(bool(g.correct)))
    return out


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def table(before: dict, after: dict) -> str:
    lines = [
        "| task key | cases | accuracy before | accuracy after | false-accept before | false-accept after "
        "| false-reject before | false-reject after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k, a in after["task_keys"].items():
        b = before["task_keys"][k]
        lines.append(
            f"| {k} | {a['n']} | {_pct(b['accuracy'])} | {_pct(a['accuracy'])} | {_pct(b['false_accept'])} "
            f"| {_pct(a['false_accept'])} | {_pct(b['false_reject'])} | {_pct(a['false_reject'])} |"
        )
    o, p = before["overall"], after["overall"]
    lines.append(
        f"| **all** | {p['n']} | {_pct(o['accuracy'])} | {_pct(p['accuracy'])} | {_pct(o['false_accept'])} "
        f"| {_pct(p['false_accept'])} | {_pct(o['false_reject'])} | {_pct(p['false_reject'])} |"
    )
    lines += [
        "",
        "Per pattern: the error rate (false-accept for `wrong:`, false-reject for `right:`).",
        "",
        "| task key | pattern | cases | before | after |",
        "|---|---|---|---|---|",
    ]
    for k, pats in after["patterns"].items():
        for pat, a in pats.items():
            b = before["patterns"][k][pat]
            fig = "false_accept" if pat.startswith("wrong:") else "false_reject"
            lines.append(f"| {k} | {pat} | {a['n']} | {_pct(b[fig])} | {_pct(a[fig])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="project folder holding a built benchmark (data/)")
    ap.add_argument("--against", default="main", help="git revision of the judge to compare with")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="also write the tables to this markdown file")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    cfg = load_config([], root=root)
    bench = open_benchmark(cfg, Paths.from_cfg(cfg, root=root))
    t0 = time.perf_counter()
    cases = build_cases(bench, args.seed)
    t1 = time.perf_counter()
    old = load(args.against)
    questions = bench.questions
    before = summarise(cases, judge_with(old.score, questions, cases))
    t2 = time.perf_counter()
    after = summarise(cases, judge_with(deterministic.score, questions, cases))
    t3 = time.perf_counter()
    head = (
        f"{len(cases)} cases of {len(questions)} questions (built in {t1 - t0:.1f} s); judge of {args.against} "
        f"(rules {old.RULES_VERSION}) {t2 - t1:.2f} s, current judge (rules {deterministic.RULES_VERSION}) "
        f"{t3 - t2:.2f} s; gate {'PASSED' if after['passed'] else 'FAILED'} after, "
        f"{'PASSED' if before['passed'] else 'FAILED'} before"
    )
    text = head + "\n\n" + table(before, after)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
