"""Benchmarks of the evaluation engine's client side (prompt protocol + request building) and of the
memory needed to evaluate a 256K split of an official-format release.

(a) One 128K-like request with ~90 images, images already cached: the time of
    ``build_messages`` (EvalItem -> protocol messages, image ids resolved to paths) plus
    ``OpenAICompatibleClient.build_body`` (cached data URLs spliced into the JSON body), i.e. what
    ``OpenAICompatibleModel`` does per item before sending. Target <= 20 ms (median).
(b) Peak memory (max RSS) of ``memlens evaluate data.items=official`` over a synthetic
    ``dataset_256k.json`` (789 items of ~1 MB, ~180 images each; 778 MB on disk, like the real file)
    in a child process, against a FakeOpenAIServer in this process that discards request bodies.
    Target <= 1.5 GB. The child's max RSS comes from ``resource.getrusage(RUSAGE_CHILDREN)``.

Run: ``.venv/bin/python benchmarks/bench_prompt.py`` (``--items 100`` for a shorter (b)).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from memlens.core.http import OpenAICompatibleClient, OpenAICompatibleConfig  # noqa: E402
from memlens.core.images import ImageEncoder  # noqa: E402
from memlens.core.items import EvalItem, HistorySession  # noqa: E402
from memlens.core.schema import Question, Turn  # noqa: E402
from memlens.eval.prompt import build_messages  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402

WORDS = [
    "the",
    "receipt",
    "shows",
    "a",
    "total",
    "of",
    "forty",
    "two",
    "dollars",
    "and",
    "the",
    "clock",
    "on",
    "the",
    "wall",
    "reads",
    "half",
    "past",
    "seven",
    "while",
    "my",
    "cousin",
    "asked",
    "about",
    "the",
    "train",
    "ticket",
    "to",
    "the",
    "museum",
    "next",
    "weekend",
    "because",
    "the",
    "weather",
    "looked",
    "fine",
]


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def make_images(folder: Path, n: int, size: tuple[int, int], seed: int = 0) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rs = np.random.default_rng(seed)
    paths = []
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(n):
        base = (np.stack([xx * 255 // w, yy * 255 // h, (xx + yy + i * 7) % 256], -1)).astype(np.int16)
        noise = rs.integers(-12, 12, size=base.shape)
        arr = np.clip(base + noise, 0, 255).astype(np.uint8)
        p = folder / f"{i:04x}{rs.integers(0, 1 << 32):08x}.jpg"
        Image.fromarray(arr).save(p, quality=85)
        paths.append(p)
    return paths


def synthetic_sessions(rng: random.Random, text_chars: int, n_images: int, image_ids: list[str]):
    """Sessions of 10 turns whose text totals ~``text_chars``; ``n_images`` images (placeholders in
    the text) spread evenly over the user turns."""
    sessions, chars = [], 0
    while chars < text_chars:
        turns = []
        for t in range(10):
            role = "user" if t % 2 == 0 else "assistant"
            text = sentence(rng, rng.randint(12, 30) if role == "user" else rng.randint(60, 110))
            turns.append([role, text, []])
            chars += len(text)
        sessions.append((f"sess_{len(sessions):06x}", turns))
    user_turns = [t for _, turns in sessions for t in turns if t[0] == "user"]
    step = len(user_turns) / max(1, n_images)
    for k in range(min(n_images, len(user_turns))):
        t = user_turns[int(k * step)]
        t[1] = t[1][: len(t[1]) // 2] + " <image> " + t[1][len(t[1]) // 2 :]
        t[2] = [image_ids[k % len(image_ids)]]
    return sessions


# ----------------------------------------------------------------------------------------- (a)
def bench_request(tmp: Path, runs: int) -> dict:
    rng = random.Random(0)
    imgs = make_images(tmp / "img128", 90, (1024, 768))
    ids = [p.name for p in imgs]
    by_id = {p.name: p for p in imgs}
    sessions = synthetic_sessions(rng, 300_000, 90, ids)  # ~128K tokens with 90 images (cross-modal count)
    q = Question(
        question_id="q_bench",
        question_type="information_extraction",
        question_subtype="entity",
        question="What was the total on the receipt?",
        answer="$42.00",
        question_date="2024/05/31 (Fri) 07:58",
    )
    hist = [
        HistorySession(sid, "2024/05/01 (Wed) 10:00", [Turn(r, c, im) for r, c, im in turns]) for sid, turns in sessions
    ]
    item = EvalItem(q, "128k", hist, lambda i: by_id[i])
    n_turns = sum(len(s.turns) for s in hist)
    n_chars = sum(len(t.content) for s in hist for t in s.turns)
    client = OpenAICompatibleClient(
        OpenAICompatibleConfig(base_url="http://127.0.0.1:9/v1", model="m"), image_encoder=ImageEncoder(max_side=800)
    )
    t0 = time.perf_counter()
    body = client.build_body(build_messages(item, "standard"))  # first time: encodes the 90 images
    first = time.perf_counter() - t0
    t_msgs, t_body, t_total = [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        msgs = build_messages(item, "standard")
        t1 = time.perf_counter()
        body = client.build_body(msgs)
        t2 = time.perf_counter()
        t_msgs.append(t1 - t0)
        t_body.append(t2 - t1)
        t_total.append(t2 - t0)
    n_img = sum(1 for m in msgs for b in m["content"] if b["type"] == "image_url")
    return {
        "sessions": len(hist),
        "turns": n_turns,
        "text_chars": n_chars,
        "images": n_img,
        "body_mb": len(body) / 1e6,
        "first_build_s": first,
        "build_messages_ms": statistics.median(t_msgs) * 1e3,
        "build_body_ms": statistics.median(t_body) * 1e3,
        "total_ms_median": statistics.median(t_total) * 1e3,
        "total_ms_p90": sorted(t_total)[int(0.9 * runs)] * 1e3,
    }


# ----------------------------------------------------------------------------------------- (b)
def write_release(
    folder: Path, n_items: int, item_chars: int, images_per_item: int, distinct: int, image_size: tuple[int, int]
) -> tuple[Path, int]:
    rel_images = folder / "release_images" / "haystack_images"
    imgs = make_images(rel_images, distinct, image_size, seed=1)
    refs = [f"haystack_images/{p.name}" for p in imgs]
    path = folder / "dataset_256k.json"
    rng = random.Random(1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[")
        for i in range(n_items):
            start = rng.randrange(len(refs))
            pool = [refs[(start + k) % len(refs)] for k in range(images_per_item)]
            sessions = synthetic_sessions(rng, item_chars, images_per_item, pool)
            item = {
                "question_id": f"q_{i:08x}",
                "question_type": "information_extraction",
                "question_subtype": "entity",
                "question": f"What was shown in question {i}?",
                "answer": "x",
                "question_date": "2024/05/31 (Fri) 07:58",
                "haystack_dates": ["2024/05/01 (Wed) 10:00"] * len(sessions),
                "haystack_session_ids": [sid for sid, _ in sessions],
                "haystack_sessions": [
                    [
                        {
                            "role": r,
                            "content": c,
                            "has_answer": False,
                            "images": [
                                {"file": f, "image_url": "https://example.invalid/x.jpg", "blip_caption": "a picture"}
                                for f in im
                            ],
                        }
                        for r, c, im in turns
                    ]
                    for _, turns in sessions
                ],
                "answer_session_ids": [sessions[0][0]],
            }
            if i:
                fh.write(", ")
            json.dump(item, fh, ensure_ascii=False)
        fh.write("]")
    return path, path.stat().st_size


def bench_memory(tmp: Path, n_items: int, concurrency: int) -> dict:
    rel = tmp / "release"
    t0 = time.perf_counter()
    _path, size = write_release(
        rel, n_items, item_chars=760_000, images_per_item=180, distinct=600, image_size=(640, 480)
    )
    gen_s = time.perf_counter() - t0
    proj = tmp / "proj"
    proj.mkdir()
    import shutil

    shutil.copytree(REPO / "conf", proj / "conf")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with FakeOpenAIServer(latency_s=0.05, parse_bodies=False, record_requests=False) as server:
        cmd = [
            sys.executable,
            "-m",
            "memlens.cli",
            "evaluate",
            "--root",
            str(proj),
            "model=openai_compatible",
            f"model.base_url={server.base_url}",
            "model.model=bench",
            f"model.concurrency={concurrency}",
            "data.items=official",
            f"data.official_dir={rel}",
            "eval.lengths=[256k]",
        ]
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        received = server.bytes_received
    if done.returncode != 0:
        raise SystemExit(f"evaluate failed:\n{done.stderr[-3000:]}")
    lines = (proj / "data" / "predictions" / "bench" / "standard" / "256k.jsonl").read_text().splitlines()
    ok = sum(1 for ln in lines if '"ok":true' in ln)
    return {
        "items": n_items,
        "file_mb": size / 1e6,
        "generate_s": gen_s,
        "evaluate_s": wall,
        "peak_rss_mb": peak_kb / 1024,
        "peak_rss_note": "" if peak_kb > before else "(ru_maxrss of an earlier child)",
        "ok": ok,
        "sent_gb": received / 1e9,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--items", type=int, default=789)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-prompt-") as d:
        tmp = Path(d)
        a = bench_request(tmp, args.runs)
        print(
            f"(a) 128K-like request: {a['sessions']} sessions, {a['turns']} turns, {a['text_chars']:,} chars, "
            f"{a['images']} images, body {a['body_mb']:.1f} MB"
        )
        print(f"    first build (encodes the images): {a['first_build_s']:.2f} s")
        print(
            f"    cached: build_messages {a['build_messages_ms']:.2f} ms + build_body {a['build_body_ms']:.2f} ms "
            f"= {a['total_ms_median']:.2f} ms median (p90 {a['total_ms_p90']:.2f} ms); target <= 20 ms: "
            f"{'OK' if a['total_ms_median'] <= 20 else 'MISSED'}"
        )
        if not args.skip_memory:
            b = bench_memory(tmp, args.items, args.concurrency)
            print(
                f"(b) synthetic 256K split: {b['items']} items, {b['file_mb']:.0f} MB on disk (written in "
                f"{b['generate_s']:.0f} s); evaluate (official source, concurrency {args.concurrency}) "
                f"{b['evaluate_s']:.0f} s, {b['ok']} ok, {b['sent_gb']:.1f} GB sent"
            )
            print(
                f"    peak RSS of `memlens evaluate`: {b['peak_rss_mb']:.0f} MB {b['peak_rss_note']}; "
                f"target <= 1536 MB: {'OK' if b['peak_rss_mb'] <= 1536 else 'MISSED'}"
            )


if __name__ == "__main__":
    main()
