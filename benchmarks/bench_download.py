"""Throughput and peak memory of the web downloader against a local image server (a child process).

    .venv/bin/python benchmarks/bench_download.py [-n 400] [--workers 16] [--large 64]

(a) ``SafeDownloader.fetch_image`` in ``--workers`` threads (bounded window, as the icrawler source
    runs it) on ``-n`` distinct small PNGs: images/s;
(b) the icrawler source's download path (the same plus pHash and the candidate cache on disk):
    images/s, then the same URLs again from the cache (requests sent: 0);
(c) ``--large`` PNGs of ~1.2 MB with ``max_bytes`` 2 MB: the peak of Python allocations (tracemalloc)
    while downloading, against the bound ``workers * max_bytes + decode_slots * 4 * max_pixels``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memlens.construction.images.web.cache import CandidateCache
from memlens.construction.images.web.icrawler_source import IcrawlerSource


def serve(q) -> None:
    from tests.web.image_server import ImageServer

    with ImageServer() as s:
        q.put(s.base)
        while True:
            time.sleep(3600)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=400)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--large", type=int, default=64)
    args = ap.parse_args()
    q = mp.Queue()
    proc = mp.Process(target=serve, args=(q,), daemon=True)
    proc.start()
    base = q.get(timeout=60)
    try:
        opts = dict(engine_base_url=base, allow_private=True, rate_per_host=0, download_workers=args.workers)
        src = IcrawlerSource(**opts)
        src.dl.fetch_image(f"{base}/img/warmup.png")
        urls = [f"{base}/img/a{i}.png" for i in range(args.n)]
        t0 = time.perf_counter()
        ok = sum(f.ok for f in src.fetch_bounded(urls))
        dt = time.perf_counter() - t0
        print(f"(a) downloader: {ok}/{args.n} images in {dt:.2f} s = {ok / dt:.1f} images/s ({args.workers} threads)")
        with tempfile.TemporaryDirectory() as d:
            src = IcrawlerSource(**opts)
            cache = CandidateCache(Path(d))
            urls = [f"{base}/img/b{i}.png" for i in range(args.n)]
            t0 = time.perf_counter()
            got = src._images(cache, urls)
            dt = time.perf_counter() - t0
            n_ok = sum(r["ok"] for r in got.values())
            print(f"(b) source path (+pHash, cache): {n_ok}/{args.n} in {dt:.2f} s = {n_ok / dt:.1f} images/s")
            before = src.dl.requests_made
            t0 = time.perf_counter()
            src._images(cache, urls)
            print(
                f"    again from the cache: {time.perf_counter() - t0:.2f} s, requests sent "
                f"{src.dl.requests_made - before}"
            )
        big = IcrawlerSource(**opts, max_bytes=2_000_000, max_pixels=1_500_000)
        urls = [f"{base}/bad/oversized.png?i={i}" for i in range(args.large)]  # ~1.2 MB, 1200x1000
        tracemalloc.start()
        t0 = time.perf_counter()
        sizes = [len(f.data) for f in big.fetch_bounded(urls)]
        dt = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        bound = args.workers * 2_000_000 + 2 * 4 * 1_500_000
        print(
            f"(c) {sum(s > 0 for s in sizes)}/{args.large} images of {max(sizes) / 1e6:.2f} MB in {dt:.2f} s: "
            f"peak {peak / 1e6:.1f} MB (bound {bound / 1e6:.0f} MB = {args.workers} x 2 MB + 2 x 4 B x 1.5 Mpx; "
            f"all {args.large} at once would be {sum(sizes) / 1e6:.0f} MB)"
        )
    finally:
        proc.terminate()
        proc.join(5)


if __name__ == "__main__":
    main()
