"""Throughput of the synthetic image families: sample + render + encode, per family and on all cores.

    .venv/bin/python benchmarks/bench_render.py [-n 40] [--workers 2] [--total 600]

Prints images/s per family in one process, then the mixed-workload rate with --workers processes and
the projected wall time for 5,000 images. Half of the images get photo effects.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import time

from memlens.construction.images.synthetic import FAMILIES, get_family, render_bytes


def one(name: str, seed: int) -> int:
    spec = get_family(name).sample(random.Random(f"bench:{name}:{seed}"), photo=seed % 2 == 1)
    data, _ = render_bytes(spec)
    return len(data)


def _chunk(jobs):
    c = time.process_time()
    n = sum(1 for name, seed in jobs if one(name, seed))
    return n, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=40, help="images per family (single process)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--total", type=int, default=600, help="images in the multi-process run")
    args = ap.parse_args()
    names = sorted(FAMILIES)
    for name in names:  # warm up fonts and imports
        one(name, 0)
        one(name, 1)
    # wall-clock rates suffer when other processes share the cores; CPU time per image does not
    print(f"{'family':16s} {'img/s':>7s} {'ms/img':>7s} {'cpu ms':>7s} {'KB/img':>7s}")
    total_t = total_c = total_n = 0.0
    for name in names:
        t, c = time.perf_counter(), time.process_time()
        size = sum(one(name, s) for s in range(args.n))
        dt, dc = time.perf_counter() - t, time.process_time() - c
        total_t += dt
        total_c += dc
        total_n += args.n
        print(
            f"{name:16s} {args.n / dt:7.1f} {1000 * dt / args.n:7.1f} {1000 * dc / args.n:7.1f} "
            f"{size / args.n / 1024:7.0f}"
        )
    print(
        f"{'all (1 process)':16s} {total_n / total_t:7.1f} {1000 * total_t / total_n:7.1f} "
        f"{1000 * total_c / total_n:7.1f}"
    )

    jobs = [(names[i % len(names)], 1000 + i) for i in range(args.total)]
    chunks = [jobs[i :: args.workers * 4] for i in range(args.workers * 4)]
    t = time.perf_counter()
    with mp.get_context("fork").Pool(args.workers) as pool:
        res = pool.map(_chunk, chunks)
    dt = time.perf_counter() - t
    done, cpu = sum(r[0] for r in res), sum(r[1] for r in res)
    rate = done / dt
    ideal = args.workers * done / cpu
    print(
        f"mixed, {args.workers} processes: {done} images in {dt:.1f} s wall = {rate:.1f} images/s "
        f"(5,000 images ~ {5000 / rate:.0f} s); CPU {1000 * cpu / done:.1f} ms/image = {ideal:.1f} images/s "
        f"on {args.workers} otherwise idle cores (5,000 images ~ {5000 / ideal:.0f} s)"
    )


if __name__ == "__main__":
    main()
