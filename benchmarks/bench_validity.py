"""Time the validity adversaries on a built data folder and print their figures and gates.

    .venv/bin/python benchmarks/bench_validity.py --data /path/to/project/data [--lengths 32k 256k]

Prints the seconds of each adversary (text-only solvers, evidence detectors, repetition), the
peak RSS, every figure (the tables of ``validity.md``) and the adversary gates with the default
``validate`` settings (conf/validate/default.yaml).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    from memlens.construction.validate.adversaries import load, run_all
    from memlens.construction.validate.adversaries.render import figures_md
    from memlens.construction.validate.settings import ValidateSettings
    from memlens.construction.validate.stage import adversary_gates

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--lengths", nargs="*", default=None)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    v = ValidateSettings.model_validate(yaml.safe_load((REPO / "conf" / "validate" / "default.yaml").read_text()))
    v = v.model_dump()
    t0 = time.perf_counter()
    bench = load(args.data, args.lengths)
    t_load = time.perf_counter() - t0
    figs = run_all(bench, v, seed=args.seed, progress=True)
    timing = figs.pop("timing")
    gates = adversary_gates(figs, v)
    print("\n".join(figures_md(figs)))
    print("\n| gate | value | lower bound | threshold | n | status |\n|---|---:|---:|---:|---:|---|")
    for k, g in gates.items():
        print(f"| {k} | {g['value']} | {g['lower_bound']} | {g['threshold']} | {g['n']} | {g['status']} |")
    n_q = len(bench.questions)
    print(
        f"\n{n_q} questions, {len(bench.sessions)} sessions, lengths {', '.join(bench.lengths)}: load {t_load:.1f} s, "
        + ", ".join(f"{k} {s:.1f} s" for k, s in timing.items())
        + f", total {t_load + sum(timing.values()):.1f} s; peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
