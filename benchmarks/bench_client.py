"""Benchmark of the OpenAI-compatible evaluation client against ``FakeOpenAIServer``.

Scenarios:

(a) URL images: 789 requests of a realistic 128K-token history (~300 KB of text in
    ~960 messages, 90 ``file://`` image URLs) at concurrency 32 against a server with
    200 ms latency.  Ideal throughput = concurrency / latency = 160 req/s; target >= 95 %.
(b) base64 images: the same history with the 90 images (1024x768 JPEGs, resized to
    800x600 and PNG-encoded by a real :class:`ImageEncoder`) inlined as data URLs, i.e.
    ~100 MB per request (160 requests by default: each one moves ~100 MB through
    loopback).  Prints the rate and where the time goes: first-time image encoding,
    per-request body building (cache look-ups + JSON), and the HTTP part.
(c) "official harness approach": a ``ThreadPoolExecutor`` of 4 workers with the sync
    ``openai.OpenAI`` client, re-encoding every image for every request (open, RGB,
    LANCZOS resize, PNG at Pillow's default level, base64) and letting the SDK serialise
    the body.  Prints its throughput and the ratio ours/official; also the same pool with
    URL images, for comparison with (a).
(d) client-side cost of building one 128K request with 90 cached images: what
    ``chat.completions.create`` does (TypedDict transform of the params, then stdlib
    ``json`` of the data-URL strings), the same with ``orjson``, and ours
    (:meth:`OpenAICompatibleClient.build_body`: placeholders + cached bytes spliced in).
    Target <= 20 ms.  This is why the client calls the SDK's ``create()`` with an empty
    ``messages`` list and sends its prebuilt body instead (the SDK still builds the request,
    authenticates and retries it).
(e) capacity of the fake server itself: a minimal keep-alive client with 64 connections
    at 200 ms latency (requirement: >= 200 req/s), in-thread and in a child process.

In (a) the fake server does not parse request bodies (``--server-parse`` turns it on),
so that the measured latency beyond 200 ms is the client's.
By default the fake server runs in a child process (like a real vLLM server, so its CPU
does not compete with the client for the GIL); ``--server thread`` runs it in-process.
The machine may be shared (the load average is printed): (a) is the median of ``--repeat`` runs.

Run: ``.venv/bin/python benchmarks/bench_client.py`` (``--quick`` for a short smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import io
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import openai
from PIL import Image

from memlens.core.http import CompletionResult, OpenAICompatibleClient, OpenAICompatibleConfig
from memlens.core.images import ImageEncoder
from tests.support.fake_openai import FakeOpenAIServer

try:
    import orjson
except ImportError:  # pragma: no cover
    orjson = None


# ---------------------------------------------------------------------------- fixtures
def make_images(directory: Path, n: int, size: tuple[int, int] = (1024, 768), seed: int = 0) -> list[str]:
    """Write ``n`` photo-like JPEGs (smooth colour fields plus sensor-like noise).

    At 800x600 they PNG-encode to ~0.8 MB, like real photos (pure noise would be larger,
    flat colours much smaller).
    """
    rng = np.random.default_rng(seed)
    w, h = size
    paths = []
    for i in range(n):
        low = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
        base = np.asarray(Image.fromarray(low).resize((w, h), Image.Resampling.BICUBIC), dtype=np.int16)
        noise = rng.normal(0.0, 6.0, (h, w, 3))
        arr = np.clip(base + noise, 0, 255).astype(np.uint8)
        path = directory / f"img_{i:03d}.jpg"
        Image.fromarray(arr).save(path, quality=90)
        paths.append(str(path))
    return paths


def make_history(image_refs: list[str], sessions: int = 60, turns: int = 16, text_chars: int = 310) -> list[dict]:
    """A 128K-token-like conversation: ~300 KB of text in sessions*turns messages, images spread out."""
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "a",
        "lazy",
        "dog",
        "while",
        "we",
        "talk",
        "about",
        "memory",
        "and",
        "images",
    ]
    messages: list[dict] = [
        {"role": "system", "content": [{"type": "text", "text": "Answer from the conversation history."}]}
    ]
    n_turns = sessions * turns
    image_slots = {round(k * n_turns / max(1, len(image_refs))) for k in range(len(image_refs))}
    images = iter(image_refs)
    k = 0
    for s in range(sessions):
        for t in range(turns):
            text = " ".join(words[(k + j) % len(words)] for j in range(text_chars // 5))[:text_chars]
            if t == 0:
                text = f"=== Session {s + 1} (Date: 2024/05/{1 + s % 28:02d} (Fri) 10:00) ===\n{text}"
            blocks: list[dict] = []
            if k in image_slots:
                ref = next(images, None)
                if ref is not None:
                    blocks.append({"type": "image_url", "image_url": {"url": ref}})
            blocks.append({"type": "text", "text": text})
            messages.append({"role": "user" if t % 2 == 0 else "assistant", "content": blocks})
            k += 1
    return messages


def question(i: int) -> dict:
    return {
        "role": "user",
        "content": [{"type": "text", "text": f"Question Date: 2024/06/01\nQuestion: what happened in item {i}?\n"}],
    }


def items(history: list[dict], n: int):
    """Lazily yield ``(key, messages)``; each item shares the history list (no payload built)."""
    for i in range(n):
        yield i, [*history, question(i)]


# ---------------------------------------------------------------------------- server placement
def _server_main(conn, kwargs: dict) -> None:  # runs in the child process
    server = FakeOpenAIServer(**kwargs).start()
    conn.send(server.port)
    conn.recv()  # wait for "stop"
    conn.send({"requests": server.request_count, "max_in_flight": server.max_in_flight, "bytes": server.bytes_received})
    server.stop()


class ServerHandle:
    """FakeOpenAIServer either in this process (thread) or in a child process."""

    def __init__(self, placement: str, **kwargs) -> None:
        self.placement = placement
        self.kwargs = {"record_requests": False, **kwargs}
        self._server: FakeOpenAIServer | None = None
        self._proc = None
        self._conn = None
        self.port: int | None = None

    def __enter__(self) -> ServerHandle:
        if self.placement == "thread":
            self._server = FakeOpenAIServer(**self.kwargs).start()
            self.port = self._server.port
        else:
            ctx = mp.get_context("spawn")
            parent, child = ctx.Pipe()
            self._proc = ctx.Process(target=_server_main, args=(child, self.kwargs), daemon=True)
            self._proc.start()
            self._conn = parent
            self.port = parent.recv()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict:
        if self._server is not None:
            s = self._server
            return {"requests": s.request_count, "max_in_flight": s.max_in_flight, "bytes": s.bytes_received}
        return self._final_stats

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.stop()
        else:
            self._conn.send("stop")
            self._final_stats = self._conn.recv()
            self._proc.join(timeout=10)


# ---------------------------------------------------------------------------- scenarios
@dataclass
class RunResult:
    rate: float
    elapsed: float
    ok: int
    failed: int
    build_s: float
    http_s: float
    bytes_sent: int
    server: dict
    cpu_s: float


def run_ours(
    placement: str,
    history: list[dict],
    n: int,
    *,
    concurrency: int,
    latency: float,
    transport: str,
    encoder: ImageEncoder | None = None,
    parse_bodies: bool = True,
    ramp_up_s: float = 0.0,
) -> RunResult:
    with ServerHandle(placement, latency_s=latency, parse_bodies=parse_bodies) as server:
        cfg = OpenAICompatibleConfig(
            base_url=server.base_url,
            model="bench-model",
            concurrency=concurrency,
            image_transport=transport,
            max_new_tokens=128,
        )
        client = OpenAICompatibleClient(cfg, image_encoder=encoder)
        failures: list[CompletionResult] = []

        def on_result(key: int, result: CompletionResult) -> None:
            if not result.ok:
                failures.append(result)

        gc.collect()
        cpu0 = time.process_time()
        summary = client.run_many(items(history, n), on_result, progress=False, total=n, ramp_up_s=ramp_up_s)
        cpu = time.process_time() - cpu0
    if failures:
        print(f"    ! {len(failures)} failures, first: {failures[0].error}")
    st = client.stats
    return RunResult(
        summary.requests_per_s,
        summary.elapsed_s,
        summary.ok,
        summary.failed,
        st.build_s,
        st.http_s,
        st.bytes_sent,
        server.stats(),
        cpu,
    )


def official_encode(path: str, max_side: int = 800) -> str:
    """What the official harness does for every image of every request."""
    image = Image.open(path).convert("RGB")
    w, h = image.size
    if w > max_side or h > max_side:
        if w > h:
            new = (max_side, min(int(max_side / w * h), max_side))
        else:
            new = (min(int(max_side / h * w), max_side), max_side)
        image = image.resize(new, Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("utf-8")


def run_official(
    placement: str, history: list[dict], n: int, *, latency: float, encode_images: bool, workers: int = 4
) -> tuple[float, int]:

    with ServerHandle(placement, latency_s=latency, parse_bodies=False) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0, timeout=600)

        def one(i: int) -> bool:
            messages = []
            for m in [*history, question(i)]:
                blocks = []
                for b in m["content"]:
                    if b["type"] == "image_url":
                        url = b["image_url"]["url"]
                        if encode_images:
                            url = official_encode(url)
                        blocks.append({"type": "image_url", "image_url": {"url": url}})
                    else:
                        blocks.append(b)
                messages.append({"role": m["role"], "content": blocks})
            for _attempt in range(5):
                try:
                    r = client.chat.completions.create(
                        model="bench-model", messages=messages, max_tokens=128, temperature=0.0
                    )
                    return bool(r.choices)
                except Exception:
                    time.sleep(10)
            return False

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            ok = sum(pool.map(one, range(n)))
        elapsed = time.perf_counter() - t0
        client.close()
    return n / elapsed, ok


def measure_build(history_b64: list[dict], encoder: ImageEncoder, repeat: int = 15) -> dict[str, float]:
    """Scenario (d): ms to build + serialise one request whose images are already encoded."""
    cfg = OpenAICompatibleConfig(base_url="http://127.0.0.1:9/v1", model="bench-model", max_new_tokens=128)
    client = OpenAICompatibleClient(cfg, image_encoder=encoder)
    messages = [*history_b64, question(0)]
    # Pre-encoded strings, as a caller holding data URLs would have them.
    with_strings = client.prepare_messages(messages)
    body = {"model": "bench-model", "messages": with_strings, "max_tokens": 128, "temperature": 0.0}

    def best(fn) -> float:
        times = []
        for _ in range(repeat):
            gc.collect()
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1e3

    out: dict[str, float] = {}
    try:  # what chat.completions.create() does to the params before serialising them
        from openai._utils._transform import maybe_transform
        from openai.types.chat import completion_create_params

        out["SDK create(): TypedDict transform of the params"] = best(
            lambda: maybe_transform(body, completion_create_params.CompletionCreateParamsNonStreaming)
        )
    except ImportError:  # pragma: no cover - private SDK module moved
        pass
    out["SDK create(): json.dumps of data-URL strings"] = best(
        lambda: json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    )
    if orjson is not None:
        out["orjson.dumps of data-URL strings"] = best(lambda: orjson.dumps(body))
    out["ours: build_body (cache look-ups + JSON + splice)"] = best(lambda: client.build_body(messages))
    out["_size_mb"] = len(client.build_body(messages)) / 1e6
    return out


async def _raw_load(port: int, connections: int, n: int) -> float:
    """Minimal keep-alive HTTP/1.1 client (a few microseconds per request) to load the server."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )
    todo = iter(range(n))

    async def conn() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in todo:
            writer.write(request)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
        writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(conn() for _ in range(connections)))
    return n / (time.perf_counter() - t0)


def server_capacity(placement: str, latency: float, connections: int = 64, n: int = 1280) -> tuple[float, int]:
    with ServerHandle(placement, latency_s=latency) as server:
        rate = asyncio.run(_raw_load(server.port, connections, n))
    return rate, server.stats()["max_in_flight"]


# ---------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=789)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--images", type=int, default=90)
    ap.add_argument(
        "--b-requests", type=int, default=160, help="requests in (b); each moves ~100 MB, so fewer than in (a)"
    )
    ap.add_argument("--c-requests", type=int, default=4, help="requests for the official approach with base64 images")
    ap.add_argument("--c-url-requests", type=int, default=80)
    ap.add_argument("--server", choices=("process", "thread"), default="process")
    ap.add_argument("--repeat", type=int, default=3, help="runs of (a) (median reported)")
    ap.add_argument("--b-repeat", type=int, default=1, help="runs of (b) (median reported)")
    ap.add_argument("--ramp-up", type=float, default=None, help="ramp-up seconds for (a) (default: latency)")
    ap.add_argument(
        "--server-parse",
        action="store_true",
        help="let the fake server JSON-parse bodies in (a) (adds server CPU to the measured latency)",
    )
    ap.add_argument("--quick", action="store_true", help="small smoke run")
    ap.add_argument("--only", default="abcde", help="subset of scenarios to run, e.g. 'ad'")
    args = ap.parse_args(argv)
    if args.quick:
        args.requests, args.b_requests, args.c_requests, args.c_url_requests, args.repeat = 96, 32, 2, 20, 1
        args.b_repeat = 1
    ramp = args.latency if args.ramp_up is None else args.ramp_up
    ideal = args.concurrency / args.latency
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
        f"server placement: {args.server}, openai {openai.__version__} on httpx2 (SDK retries), "
        f"orjson: {orjson is not None}"
    )

    with tempfile.TemporaryDirectory(prefix="memlens-bench-") as tmp:
        t0 = time.perf_counter()
        paths = make_images(Path(tmp), args.images)
        print(f"generated {len(paths)} images of 1024x768 JPEG in {time.perf_counter() - t0:.1f}s")
        history = make_history(paths)
        n_msgs = len(history) + 1
        text_kb = sum(len(b.get("text", "")) for m in history for b in m["content"]) / 1e3
        print(f"history: {n_msgs} messages, {text_kb:.0f} KB of text, {len(paths)} images")
        encoder = ImageEncoder(max_side=800, transport="base64")
        results_b: list[RunResult] = []
        rates_a: list[float] = []

        if "a" in args.only:
            print(
                f"\n(a) {args.requests} requests, concurrency {args.concurrency}, latency {args.latency * 1e3:.0f} ms, "
                f"file:// image URLs; ideal {ideal:.0f} req/s"
            )
            for label, r_up in (("no ramp-up", 0.0), (f"ramp-up {ramp:g}s", ramp)):
                runs = [
                    run_ours(
                        args.server,
                        history,
                        args.requests,
                        concurrency=args.concurrency,
                        latency=args.latency,
                        transport="url",
                        ramp_up_s=r_up,
                        parse_bodies=args.server_parse,
                    )
                    for _ in range(args.repeat)
                ]
                rates = sorted(r.rate for r in runs)
                rates_a.extend(rates)
                med = statistics.median(rates)
                r0 = runs[0]
                print(
                    f"    {label:>14}: {med:6.1f} req/s = {med / ideal:6.1%} of ideal "
                    f"(runs: {', '.join(f'{x:.1f}' for x in rates)}); body {r0.bytes_sent / max(1, r0.ok) / 1e3:.0f} KB, "
                    f"build {r0.build_s / max(1, r0.ok) * 1e3:.2f} ms/req, client CPU {r0.cpu_s / max(1, r0.ok) * 1e3:.2f} ms/req, "
                    f"server max in flight {r0.server['max_in_flight']}"
                )

        if "b" in args.only or "c" in args.only or "d" in args.only:
            t0 = time.perf_counter()
            for p in paths:
                encoder.encode_bytes(p)
            cold = time.perf_counter() - t0
            info = encoder.cache_info()
            print(
                f"\nimage encoding (cold cache, serial): {cold:.2f}s for {len(paths)} images = "
                f"{cold / len(paths) * 1e3:.1f} ms/image; cached {info.size_bytes / 1e6:.1f} MB "
                f"({info.size_bytes / len(paths) / 1e6:.2f} MB/image as base64 PNG)"
            )

        if "b" in args.only:
            print(
                f"\n(b) {args.b_requests} requests, concurrency {args.concurrency}, latency {args.latency * 1e3:.0f} ms, "
                f"{len(paths)} base64 images per request (warm encoder cache)"
            )
            for _ in range(args.b_repeat):
                results_b.append(
                    run_ours(
                        args.server,
                        history,
                        args.b_requests,
                        concurrency=args.concurrency,
                        latency=args.latency,
                        transport="base64",
                        encoder=encoder,
                        parse_bodies=False,
                        ramp_up_s=ramp,
                    )
                )
            rb = sorted(results_b, key=lambda r: r.rate)[len(results_b) // 2]
            per = max(1, rb.ok)
            http_ms = rb.http_s / per * 1e3
            print(
                f"    {rb.rate:.1f} req/s = {rb.rate / ideal:.1%} of ideal (runs: {', '.join(f'{r.rate:.1f}' for r in results_b)}); "
                f"payload {rb.bytes_sent / per / 1e6:.1f} MB/request, {rb.bytes_sent / rb.elapsed / 1e9:.2f} GB/s sent"
            )
            print(
                f"    client CPU {rb.cpu_s / per * 1e3:.1f} ms/request (of which building the body "
                f"{rb.build_s / per * 1e3:.1f} ms: cache look-ups + JSON + splice; the rest is pushing the bytes)"
            )
            print(
                f"    time per request: build {rb.build_s / per * 1e3:.1f} ms, "
                f"HTTP {http_ms:.1f} ms = server latency {args.latency * 1e3:.0f} ms + transfer/queueing "
                f"{http_ms - args.latency * 1e3:.1f} ms; first-time encoding {cold / len(paths) * 1e3:.1f} ms/image, "
                f"paid once per image"
            )

        if "c" in args.only:
            print("\n(c) official approach: ThreadPoolExecutor(4) + sync openai client, re-encoding every image")
            rate_c, ok_c = run_official(args.server, history, args.c_requests, latency=args.latency, encode_images=True)
            print(
                f"    base64 images: {rate_c:.3f} req/s ({ok_c}/{args.c_requests} ok; "
                f"789 requests would take {789 / rate_c / 60:.0f} min)"
            )
            if results_b:
                rb_rate = statistics.median(r.rate for r in results_b)
                print(f"    ours (b) / official = {rb_rate / rate_c:.0f}x")
            rate_cu, ok_cu = run_official(
                args.server, history, args.c_url_requests, latency=args.latency, encode_images=False
            )
            print(
                f"    URL images:    {rate_cu:.1f} req/s ({ok_cu}/{args.c_url_requests} ok; "
                f"ceiling 4/{args.latency:g}s = {4 / args.latency:.0f} req/s)"
            )
            if rates_a:
                print(f"    ours (a) / official with URL images = {statistics.median(rates_a) / rate_cu:.0f}x")

        if "d" in args.only:
            print("\n(d) building one 128K request with cached images (median of 15)")
            d = measure_build(history, encoder)
            size = d.pop("_size_mb")
            for label, ms in d.items():
                flag = "  <= 20 ms target" if label.startswith("ours") else ""
                print(f"    {label:<52} {ms:7.1f} ms{flag}")
            print(f"    request size {size:.1f} MB")

    if "e" in args.only:
        print(
            f"\n(e) fake server capacity: 64 keep-alive connections, latency {args.latency * 1e3:.0f} ms, "
            f"minimal client; ideal {64 / args.latency:.0f} req/s (requirement >= 200 req/s)"
        )
        for placement in ("thread", "process"):
            rate, peak = server_capacity(placement, args.latency, n=320 if args.quick else 1280)
            print(
                f"    {placement:>7}: {rate:6.1f} req/s = {rate / (64 / args.latency):.1%} of ideal, {peak} in flight"
            )
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
