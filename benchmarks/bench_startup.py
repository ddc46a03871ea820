"""What every stage process pays before its work, old and new code side by side.

    python benchmarks/bench_startup.py --src /work/wt/old-main/src --src src --repeat 5

Each DVC stage is its own ``python -m memlens.cli <stage>`` process. In a fresh interpreter per
measurement (trees alternating, ``--repeat`` rounds, so a change of the machine's load hits each),
this times the parts that every stage runs before and after its work:

- ``settings``: importing the config layer and ``load_settings`` of the small scale (the config
  check imports every component's schema);
- ``code hash``: the manifest's code identity of the evaluate stage
  (:func:`memlens.core.store.code_identity`), with the persistent module-scan cache of the tree (if
  it has one) warm: a first run fills it;
- ``process``: the whole interpreter, from start to exit, for both.

Per tree the median of each, and whether the code hash with the scan cache warm is the one
computed with it empty (the cache must not change a hash). ``--no-bytecode`` removes the trees' ``__pycache__`` folders
first and runs with ``PYTHONDONTWRITEBYTECODE=1`` (what a stage costs before ``make`` has written
the bytecode). The load average is printed with every round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from memlens.core.compose import load_settings
load_settings(["data.scale=small"], root=sys.argv[1])
t1 = time.perf_counter()
from memlens.core.store import code_identity
h = code_identity("memlens.eval.evaluate.stage")
t2 = time.perf_counter()
print(json.dumps({"settings": t1 - t0, "code_hash": t2 - t1, "hash": h, "openai": "openai" in sys.modules}))
"""


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def measure(src: Path, cache: Path, bytecode: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "MEMLENS_CACHE": str(cache)}
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(src.parent)], env=env, capture_output=True, text=True, check=True
    )
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process"] = time.perf_counter() - t0
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", action="append", type=Path, help="a source tree (repeatable; default this checkout's)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-bytecode", action="store_true", help="without the trees' bytecode")
    args = ap.parse_args()
    srcs = [s.resolve() for s in (args.src or [REPO / "src"])]
    tmp = Path(tempfile.mkdtemp(prefix="bench_startup_"))
    for src in srcs:
        if args.no_bytecode:
            for d in src.rglob("__pycache__"):
                shutil.rmtree(d, ignore_errors=True)
        else:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "memlens")], check=True)
    print(f"{os.cpu_count()} cores, load {load()}; bytecode {'removed' if args.no_bytecode else 'written'}")
    rows: dict[Path, list[dict]] = {s: [] for s in srcs}
    try:
        cold = {}
        for i, src in enumerate(srcs):  # fills each tree's scan cache (if it has one)
            cold[src] = measure(src, tmp / f"cache-{i}", not args.no_bytecode)["hash"]
        for rnd in range(args.repeat):
            for i, src in enumerate(srcs):
                r = measure(src, tmp / f"cache-{i}", not args.no_bytecode)
                rows[src].append(r)
                print(
                    f"round {rnd}: settings {r['settings']:.2f} s, code hash {r['code_hash']:.2f} s, process "
                    f"{r['process']:.2f} s, openai imported: {r['openai']}  load {load()}  [{src}]",
                    flush=True,
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\nmedian per tree: settings, code hash, process (s)")
    for src, rs in rows.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("settings", "code_hash", "process")}
        print(f"  {med['settings']:.2f}  {med['code_hash']:.2f}  {med['process']:.2f}  [{src}]")
    for src, rs in rows.items():
        warm = {r["hash"] for r in rs}
        same = "the same" if warm == {cold[src]} else "DIFFERENT"
        print(f"code hash {cold[src][:12]} with an empty scan cache, {same} with it warm  [{src}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
