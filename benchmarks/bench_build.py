"""Build the benchmark from scratch in a temporary project and report time, memory and storage.

    .venv/bin/python benchmarks/bench_build.py --scale paper        # 789 questions x 4 lengths
    .venv/bin/python benchmarks/bench_build.py --scale small --keep /tmp/b

Prints per-stage wall time and peak RSS (each stage runs as its own `memlens` process, as DVC runs
them), the length/session/image table, and the storage of the content-addressed store against the
official JSON layout of the same data (which repeats every session per question and length).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGES = ["ontology", "crawl", "filter", "generate", "assemble", "validate", "export"]


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="small")
    ap.add_argument("--keep", default=None, help="build in this folder and keep it")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="memlens-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "conf", root / "conf", dirs_exist_ok=True)
    exe = Path(sys.executable).with_name("memlens")
    env = {**os.environ, "MEMLENS_ROOT": str(root)}
    total = 0.0
    peak = 0
    rows = []
    for st in STAGES:
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        r = subprocess.run(
            [str(exe), st, "--root", str(root), f"data.scale={args.scale}", *args.overrides],
            env=env,
            capture_output=True,
            text=True,
        )
        dt = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if r.returncode != 0:
            print(r.stderr[-3000:])
            print(f"stage {st} failed")
            return 1
        total += dt
        peak = max(peak, rss)
        rows.append((st, dt, rss if rss > before else None))
        print(f"{st:10s} {dt:8.1f} s   peak RSS so far {rss / 1024:8.0f} MB", flush=True)
    print(f"{'total':10s} {total:8.1f} s   peak RSS {peak / 1024:.0f} MB (max over stage processes)")
    man = json.loads((root / "data" / "instances" / "manifest.json").read_text())
    print("\nlength  instances  mean tokens  max rel err  sessions  images  image tokens")
    for ln, t in man["table"].items():
        print(
            f"{ln:6s} {t['instances']:10d} {t['mean_tokens']:12.0f} {t['max_rel_error']:12.4f} {t['mean_sessions']:9.1f} "
            f"{t['mean_images']:7.1f} {t['mean_image_tokens']:13.0f}"
        )
    validity = json.loads((root / "reports" / "validity.json").read_text())
    print("\ngates:", {k: (v["value"], "ok" if v["pass"] else "FAIL") for k, v in validity["gates"].items()})
    print("composition:", validity["composition"]["by_subtype"])
    d = root / "data"
    images = du(d / "images" / "objects")
    store_text = du(d / "generated") + du(d / "instances")
    rel = d / "release"
    release_json = sum(p.stat().st_size for p in rel.glob("dataset_*.json"))
    release_imgs = du(rel / "release_images")
    print(
        f"\nstorage: content-addressed text (sessions once + instances) {store_text / 1e6:.1f} MB vs "
        f"official JSON {release_json / 1e6:.1f} MB: ratio {store_text / max(1, release_json):.3f}"
    )
    print(
        f"         with images: store {(store_text + images) / 1e6:.1f} MB vs release {(release_json + release_imgs) / 1e6:.1f} MB: "
        f"ratio {(store_text + images) / max(1, release_json + release_imgs):.3f}"
    )
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
