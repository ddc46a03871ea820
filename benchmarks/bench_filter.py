"""Filter channel throughput on CPU: CLIP (a random-weight ViT-B/32 saved as a local checkpoint and
loaded through the channel, as real weights would be) and the offline watermark heuristic.

    .venv/bin/python benchmarks/bench_filter.py [-n 64] [--batch 16] [--threads 2]

Prints images/s of each channel (after one warm-up batch) on -n distinct 320x240 images.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memlens.construction.filter.channels import build_channels
from memlens.core.io import sha256_bytes
from memlens.core.schema import ImageRecord
from tests.web.image_server import encode, pattern_image


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import open_clip
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as d:
        items = []
        for i in range(args.n):
            p = Path(d) / f"{i}.png"
            data = encode(pattern_image(f"bench{i}", (320, 240)))
            p.write_bytes(data)
            rec = ImageRecord(
                sha256_bytes(data), "photo", "haystack", 320, 240, "png", "b", truth={"query": f"q{i % 8}"}
            )
            items.append((p, rec, {}))
        t0 = time.perf_counter()
        torch.manual_seed(0)
        model = open_clip.create_model("ViT-B-32", pretrained=None)
        ckpt = Path(d) / "vit-b-32-random.pt"
        torch.save(model.state_dict(), ckpt)
        del model
        spec = {"name": "clip", "model": "ViT-B-32", "pretrained": str(ckpt), "batch_size": args.batch}
        clip = build_channels([spec])[0]
        print(
            f"CLIP ViT-B/32 (random weights, {ckpt.stat().st_size / 1e6:.0f} MB checkpoint): loaded in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        clip.score_many(items[: args.batch])  # warm-up
        clip._text.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        scores = clip.score_many(items)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"  clip: {len(scores)} images in {dt:.2f} s = {len(scores) / dt:.1f} images/s "
            f"(batch {args.batch}, {args.threads} threads, 8 distinct queries); CPU {cpu / len(scores):.3f} s/image, "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        wm = build_channels([{"name": "watermark", "backend": "heuristic"}])[0]
        wm.score_many(items[:4])
        t0 = time.perf_counter()
        wm.score_many(items)
        dt = time.perf_counter() - t0
        print(f"  watermark heuristic: {args.n / dt:.1f} images/s")


if __name__ == "__main__":
    main()
