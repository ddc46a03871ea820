"""Benchmark: the Mem0 agent's throughput across questions (one mem0ai worker process per question).

Inside a question Mem0 is sequential: per session one extraction call and two embedding calls
(mem0 2.0.4's ``add``), then one embedding call for the search and the answer call. Throughput
therefore comes from running questions at once (``concurrency`` worker processes). This runs the
real :class:`~memlens.eval.agents.mem0.Mem0Agent` (``.venv-mem0``) on synthetic questions (each
``--sessions`` sessions of realistic chat length) against ``FakeOpenAIServer`` in a child
process, with ``--latency`` on every chat and embedding request and the call cache off, and
prints questions/s against the ideal ``concurrency / (requests per question * latency)``. What
separates the two: the start of the ``concurrency`` worker processes (importing mem0, faiss and
qdrant-client: about 1.5 s of CPU each; a worker then serves ``worker_reuse`` questions) and mem0's
own CPU per ``add``, on a shared 2-core machine. The default 168 questions (160 timed) weigh the
start as a run of the agent subset at one length does; with 48 it is ~15% of the wall time.

Run: ``.venv/bin/python benchmarks/bench_mem0.py`` (``--quick`` for a short run); prints a skip
line when ``.venv-mem0`` is missing (``make install-mem0``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_agents import synthetic_items
from benchmarks.bench_client import ServerHandle

from tests.agents.agent_support import mem0_responder

ROOT = Path(__file__).resolve().parents[1]
MEM0_PY = ROOT / ".venv-mem0" / "bin" / "python"


@dataclass
class Paths:
    cache: Path
    root: Path


def run(items, concurrency: int, latency: float) -> dict:
    from memlens.eval.agents.mem0 import Mem0Agent

    warm, timed = items[:concurrency], items[concurrency:]
    with (
        tempfile.TemporaryDirectory() as tmp,
        ServerHandle("process", latency_s=latency, responder=mem0_responder, embedding_dims=64) as srv,
    ):
        agent = Mem0Agent(
            name="bench-mem0",
            base_url=srv.base_url,
            embedder_base_url=srv.base_url,
            embedding_dims=64,
            concurrency=concurrency,
            cache_calls=False,
            worker_python=str(MEM0_PY),
        )
        agent.attach(Paths(Path(tmp), ROOT), None)
        agent.check()
        agent.run(iter(warm), "standard", lambda it, out: None)
        done = []
        t0 = time.perf_counter()
        agent.run(iter(timed), "standard", lambda it, out: done.append(out))
        elapsed = time.perf_counter() - t0
    ok = [o for o in done if o.ok]
    requests = sum(o.meta["usage"]["model_calls"] + o.meta["agent"]["embedding_calls"] for o in ok) / max(1, len(ok))
    ideal = concurrency / (requests * latency)
    return {
        "rate": len(done) / elapsed,
        "ideal": ideal,
        "ok": len(ok),
        "n": len(done),
        "requests": requests,
        "elapsed": elapsed,
        "errors": sorted({o.error for o in done if not o.ok})[:3],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # 168: 160 timed questions, like the agent subset at one length (195), so the start of the
    # `concurrency` worker processes (imports: ~1.5 s of CPU each) weighs as much as in a real run
    ap.add_argument("--questions", type=int, default=168)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not MEM0_PY.is_file():
        print(f"mem0 throughput: skipped, {MEM0_PY} missing (make install-mem0)")
        return 0
    if args.quick:
        args.questions, args.concurrency = 16, [4]
    print(
        f"mem0 throughput: {args.questions} questions x {args.sessions} sessions, latency "
        f"{args.latency * 1000:.0f} ms on every chat/embedding request (server in a child process); "
        f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs"
    )
    items = synthetic_items(args.questions, args.sessions, 40)
    for conc in args.concurrency:
        r = run(items, conc, args.latency)
        print(
            f"  concurrency {conc:>2}: {r['rate']:.2f} questions/s of ideal {r['ideal']:.2f} = "
            f"{r['rate'] / r['ideal']:.1%}  ({r['ok']}/{r['n']} ok, {r['requests']:.1f} requests/question, "
            f"{r['elapsed']:.1f} s wall){'  errors: ' + '; '.join(r['errors']) if r['errors'] else ''}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
