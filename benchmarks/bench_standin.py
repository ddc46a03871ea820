"""CPU of the stand-in OpenAI-compatible server per large request body, for several source trees.

    python benchmarks/bench_standin.py --tree /work/main --tree .

Each tree's ``tests/support/fake_openai.py`` is loaded from its path and run in a child process as
``bench_evaluate.py`` runs it (200 ms latency, bodies not parsed, nothing recorded). A minimal
keep-alive client (raw asyncio streams, ``--concurrency`` connections) sends ``--requests`` bodies
of ``--mb`` MB each; printed per tree: the server's CPU per request (``/proc/<pid>/stat``), the
client's, and the rate. Trees alternate over ``--repeat`` rounds (the load average is printed).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path


def _load_server(tree: str):
    path = Path(tree) / "tests" / "support" / "fake_openai.py"
    spec = importlib.util.spec_from_file_location(f"fake_openai_{abs(hash(tree))}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.FakeOpenAIServer


def _server_main(conn, tree: str, latency: float) -> None:  # the child process
    server = _load_server(tree)(latency_s=latency, record_requests=False, parse_bodies=False).start()
    conn.send(server.port)
    conn.recv()
    server.stop()


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _send_all(port: int, body_chunks: list[bytes], n: int, connections: int) -> None:
    length = sum(len(c) for c in body_chunks)
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n" % length
    )
    todo = iter(range(n))

    async def conn() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in todo:
            writer.write(head)
            for chunk in body_chunks:
                writer.write(chunk)
                await writer.drain()
            answer_head = await reader.readuntil(b"\r\n\r\n")
            size = next(
                int(line.split(b":")[1])
                for line in answer_head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(size)
        writer.close()

    await asyncio.gather(*(conn() for _ in range(connections)))


def run(tree: str, args, chunks: list[bytes]) -> dict:
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=_server_main, args=(child, tree, args.latency), daemon=True)
    proc.start()
    port = parent.recv()
    try:
        s0, c0, t0 = _cpu_of(proc.pid), time.process_time(), time.perf_counter()
        asyncio.run(_send_all(port, chunks, args.requests, args.concurrency))
        wall = time.perf_counter() - t0
        server, client = _cpu_of(proc.pid) - s0, time.process_time() - c0
    finally:
        parent.send("stop")
        proc.join(10)
    n = args.requests
    return {"server_ms": server / n * 1e3, "client_ms": client / n * 1e3, "rate": n / wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="a source tree (repeatable)")
    ap.add_argument("--requests", type=int, default=96)
    ap.add_argument("--mb", type=float, default=10.0, help="body size (MB), in chunks of 0.5 MB")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    piece = b"A" * (512 * 1024)
    chunks = [b'{"model":"m","x":"'] + [piece] * max(1, round(args.mb * 2)) + [b'"}']
    size = sum(len(c) for c in chunks) / 1e6
    print(
        f"{os.cpu_count()} cores; {args.requests} bodies of {size:.1f} MB, {args.concurrency} connections, "
        f"latency {args.latency * 1e3:.0f} ms (ideal {args.concurrency / args.latency:.0f}/s)"
    )
    results: dict[str, list[dict]] = {}
    for _ in range(args.repeat):
        for tree in args.tree:
            r = run(tree, args, chunks)
            results.setdefault(tree, []).append(r)
            load = "/".join(f"{x:.1f}" for x in os.getloadavg())
            print(
                f"  {tree}: server {r['server_ms']:5.1f} ms CPU/request, client {r['client_ms']:5.1f} ms, "
                f"{r['rate']:5.1f} requests/s; load {load}",
                flush=True,
            )
    print("median server CPU per request:")
    for tree, rs in results.items():
        print(f"  {tree}: {sorted(r['server_ms'] for r in rs)[len(rs) // 2]:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
