"""OCR throughput of the ``ocr`` input adapter on a built benchmark's images, old and new code side by side.

    python benchmarks/bench_ocr.py --root /tmp/paper --n 240
    python benchmarks/bench_ocr.py --root /tmp/paper --n 240 --src /work/wt/old-main/src --src src

A seeded draw of ``--n`` images of the build (``data/images/objects``) is OCR'd by the adapter of
each source tree (``--src``, repeatable) in a fresh process with an empty adapter cache, as
``memlens diagnose`` does: ``describe_images`` over all of them (the tree's own batching, engine,
threads and worker processes; engine loading included). Trees alternate ``--repeat`` times, so a
change of the machine's load hits each. Prints per run: images/s (wall), CPU seconds per image (the
process and its workers, from ``wait4``), the load average; and whether the trees' texts are
identical image by image (the OCR text must not change with a speed-up).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
from pathlib import Path
from memlens.eval.memory.adapters import ImageInput, build_adapter
files = [Path(p) for p in json.loads(sys.argv[1])]
out = Path(sys.argv[2])
a = build_adapter("ocr", cache_dir=out.parent / "cache", progress=False)
t = time.perf_counter()
texts = a.describe_images([ImageInput(p.stem, p) for p in files])
wall = time.perf_counter() - t
getattr(a, "close", lambda: None)()
out.write_text(json.dumps({"wall_s": wall, "texts": texts, "calls": a.stats["calls"]}))
"""


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def run(src: Path, files: list[str], work: Path) -> dict:
    work.mkdir(parents=True)
    out = work / "out.json"
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(files), str(out)], env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{src}: OCR run failed")
    res = json.loads(out.read_text())
    return {**res, "process_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "load": load()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True, help="a project with a built benchmark")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--src", action="append", type=Path)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    srcs = [s.resolve() for s in (args.src or [Path(__file__).resolve().parents[1] / "src"])]
    objs = sorted(str(p) for p in (args.root / "data" / "images" / "objects").iterdir() if p.is_file())
    random.Random(0).shuffle(objs)
    files = sorted(objs[: args.n])
    tmp = Path(tempfile.mkdtemp(prefix="bench_ocr_"))
    print(f"{len(files)} images of {args.root}, {os.cpu_count()} cores, load {load()}")
    texts: dict[str, list[str]] = {}
    for r in range(args.repeat):
        for i, src in enumerate(srcs):
            res = run(src, files, tmp / f"{i}-{r}")
            texts.setdefault(str(src), res["texts"])
            n = len(files)
            print(
                f"{n / res['wall_s']:6.2f} images/s ({res['wall_s']:.1f} s for {res['calls']} OCR calls, engine load "
                f"included; process {res['process_s']:.1f} s), {res['cpu_s'] / n:.3f} CPU-s/image, load {res['load']}  "
                f"[{src}]",
                flush=True,
            )
    if len(texts) > 1:
        base = texts[str(srcs[0])]
        for src in srcs[1:]:
            same = sum(a == b for a, b in zip(base, texts[str(src)]))
            print(f"texts identical to {srcs[0]}: {same}/{len(base)}  [{src}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
