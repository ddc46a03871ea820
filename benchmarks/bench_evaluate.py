"""End-to-end throughput of ``memlens evaluate`` against the local stand-in server.

Builds the tiny benchmark once (or reuses ``--root``), then times ``memlens evaluate`` (a fresh
process, OpenAI-compatible backend, every answer asked: the results store and the prediction view
are removed before each run) against a FakeOpenAIServer with a fixed latency. Prints items/s per run
and the best. ``--src`` runs another source tree's code on the same data (to compare versions:
give that tree's ``conf/`` with ``--conf``).

Usage: python benchmarks/bench_evaluate.py [--latency 0.05] [--concurrency 8] [--runs 3]
                                           [--root DIR] [--src DIR --conf DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402


def build(root: Path) -> None:
    from memlens.cli import main

    shutil.copytree(REPO / "conf", root / "conf", dirs_exist_ok=True)
    for st in ("ontology", "crawl", "filter", "generate", "assemble"):
        assert main([st, "--root", str(root), "data.scale=tiny", "images.workers=2"]) == 0, st


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--root", type=Path, default=None, help="a built tiny project (default: build one)")
    ap.add_argument("--src", type=Path, default=REPO / "src", help="the source tree to run")
    ap.add_argument("--conf", type=Path, default=None, help="that tree's conf/ (default: the project's)")
    ap.add_argument("--scale-key", default="images.workers=1", help="override that the tree's config accepts")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_eval_"))
    root = args.root or tmp / "proj"
    if args.root is None:
        build(root)
    if args.conf is not None:
        shutil.rmtree(root / "conf")
        shutil.copytree(args.conf, root / "conf")
    env = {**os.environ, "PYTHONPATH": f"{args.src}{os.pathsep}{REPO}"}
    env.pop("MEMLENS_CACHE", None)
    rates = []
    with FakeOpenAIServer(latency_s=args.latency, record_requests=False) as server:
        for r in range(args.runs):
            for d in (root / "data" / "predictions", root / "data" / "calls", root / ".memlens_cache"):
                shutil.rmtree(d, ignore_errors=True)
            cmd = [
                sys.executable,
                "-m",
                "memlens.cli",
                "evaluate",
                "--root",
                str(root),
                "data.scale=tiny",
                args.scale_key,
                "model=openai_compatible",
                f"model.base_url={server.base_url}",
                "model.model=fake-vl",
                f"model.concurrency={args.concurrency}",
            ]
            before = server.request_count
            t = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t
            if done.returncode != 0:
                print(done.stderr[-2000:])
                return 1
            n = server.request_count - before
            m = re.search(r"evaluate done in ([0-9.]+) s", done.stderr)
            stage = float(m.group(1)) if m else wall
            rates.append(n / stage)
            print(f"run {r + 1}: {n} items, stage {stage:.1f} s = {n / stage:.1f} items/s (process {wall:.1f} s)")
    print(
        f"best {max(rates):.1f} items/s, median {sorted(rates)[len(rates) // 2]:.1f} "
        f"(latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}, ideal {args.concurrency / args.latency:.0f}/s)"
    )
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
