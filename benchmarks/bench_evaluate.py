"""End-to-end ``memlens evaluate`` against the stand-in server: rate, share of the ideal, CPU per request.

    python benchmarks/bench_evaluate.py --root /tmp/small            # a built project (default: build small)
    python benchmarks/bench_evaluate.py --root /tmp/small --src /work/wt/old-main/src --src src

The stand-in OpenAI-compatible server (``tests/support/fake_openai.py``) runs in a child process (so
its CPU does not compete with the client for the GIL, like a real server) with a fixed latency
(default 200 ms) and does not parse bodies. ``memlens evaluate`` runs as a fresh process with the
``openai_compatible`` backend (base64 images, the default) at ``--concurrency`` (16), every answer
asked (the results store and the prediction view are removed before each run), three times per
source tree (``--src``, repeatable: trees alternate, so a change of the machine's load hits each):

- ``cold``: an empty project cache: every distinct image is encoded (decode, resize, PNG, base64);
- ``warm``: the same cache again: the encoded images come from the persistent encoded-image cache
  (``<cache>/encoded_images``; a tree without one encodes them again);
- ``noop``: everything answered already: no request, what the process costs besides requests.

Per run: requests, the request phase (the model's own log lines, summed: the time from the first
request to the last answer; one line for every length since the lengths share one request stream,
one per length for older trees) as a rate and a share of the ideal ``concurrency / latency``, and
CPU per request = (the run's CPU - the no-op run's CPU) / requests, the process CPU from ``wait4``
(the same rule for every tree). The no-op run makes no health check, so the CPU per request also
carries the one-time cost of importing the SDK and checking the endpoint (~0.4 CPU-s, ~4 ms per
request of the small release). The load average is printed with every run.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LINE = re.compile(r"(\d+) requests \((\d+) failed, \d+ attempts\) in ([0-9.]+) s")


def _server_main(conn, latency: float) -> None:  # the child process
    from tests.support.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer(latency_s=latency, record_requests=False, parse_bodies=False).start()
    conn.send(server.port)
    conn.recv()
    server.stop()


def build(root: Path, scale: str) -> None:
    shutil.copytree(REPO / "conf", root / "conf", dirs_exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for st in ("ontology", "crawl", "filter", "generate", "assemble", "validate"):
        subprocess.run(
            [sys.executable, "-m", "memlens.cli", st, "--root", str(root), f"data.scale={scale}"],
            env=env,
            check=True,
            capture_output=True,
        )


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def evaluate(src: Path, root: Path, cache: Path, base_url: str, args, phase: str) -> dict:
    """One ``memlens evaluate`` process: its log's request phases and its CPU (``wait4``)."""
    if (src.parent / "conf").is_dir():  # each tree runs with its own config (its keys may differ)
        shutil.rmtree(root / "conf", ignore_errors=True)
        shutil.copytree(src.parent / "conf", root / "conf")
    for d in (root / "data" / "predictions", root / "data" / "calls", cache / "results"):
        if phase != "noop":
            shutil.rmtree(d, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO}", "MEMLENS_CACHE": str(cache)}
    cmd = [
        sys.executable,
        "-m",
        "memlens.cli",
        "evaluate",
        "--root",
        str(root),
        f"data.scale={args.scale}",
        "tracking.enabled=false",
        "model=openai_compatible",
        f"model.base_url={base_url}",
        "model.model=fake-vl",
        f"model.concurrency={args.concurrency}",
    ]
    t0 = time.perf_counter()
    with open(cache.parent / f"{cache.name}.stderr", "wb") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    text = (cache.parent / f"{cache.name}.stderr").read_text(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{src}: evaluate failed:\n{text[-3000:]}")
    phases = [(int(n), int(f), float(s)) for n, f, s in LINE.findall(text)]
    return {
        "requests": sum(n for n, _, _ in phases),
        "failed": sum(f for _, f, _ in phases),
        "phase_s": sum(s for _, _, s in phases),
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "wall_s": wall,
        "load": load(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--root", type=Path, default=None, help="a built project (default: build one)")
    ap.add_argument("--scale", default="small")
    ap.add_argument("--src", action="append", type=Path, help="a source tree to run (repeatable)")
    ap.add_argument("--repeat", type=int, default=1, help="cold/warm/noop rounds per tree")
    args = ap.parse_args()
    srcs = [s.resolve() for s in (args.src or [REPO / "src"])]
    tmp = Path(tempfile.mkdtemp(prefix="bench_eval_"))
    root = args.root or tmp / "proj"
    if args.root is None:
        build(root, args.scale)
    ideal = args.concurrency / args.latency
    print(
        f"{os.cpu_count()} cores, load {load()}; latency {args.latency * 1000:.0f} ms, concurrency "
        f"{args.concurrency}: ideal {ideal:.0f} requests/s; project {root}"
    )
    parent, child = mp.Pipe()
    server = mp.get_context("spawn").Process(target=_server_main, args=(child, args.latency), daemon=True)
    server.start()
    base_url = f"http://127.0.0.1:{parent.recv()}/v1"
    results: dict[str, list[dict]] = {}
    try:
        for rnd in range(args.repeat):
            for i, src in enumerate(srcs):
                cache = tmp / f"cache-{i}-{rnd}"
                rows = {}
                for phase in ("cold", "warm", "noop"):
                    rows[phase] = evaluate(src, root, cache, base_url, args, phase)
                noop_cpu = rows["noop"]["cpu_s"]
                for phase in ("cold", "warm"):
                    r = rows[phase]
                    n = max(1, r["requests"])
                    r["rate"] = r["requests"] / r["phase_s"] if r["phase_s"] else 0.0
                    r["share"] = r["rate"] / ideal
                    r["cpu_per_request_s"] = (r["cpu_s"] - noop_cpu) / n
                    results.setdefault(f"{src} {phase}", []).append(r)
                    print(
                        f"{phase:4s} {r['requests']:4d} requests ({r['failed']} failed): {r['rate']:6.1f}/s = "
                        f"{100 * r['share']:5.1f}% of ideal, {1000 * r['cpu_per_request_s']:7.1f} ms CPU/request "
                        f"(process {r['wall_s']:.1f} s, {r['cpu_s']:.1f} CPU-s; no-op run {noop_cpu:.1f} CPU-s) "
                        f"load {r['load']}  [{src}]",
                        flush=True,
                    )
    finally:
        parent.send("stop")
        server.join(10)
    print("\nmedian per tree and phase: share of ideal, ms CPU/request")
    for key, rs in results.items():
        share = sorted(r["share"] for r in rs)[len(rs) // 2]
        cpu = sorted(r["cpu_per_request_s"] for r in rs)[len(rs) // 2]
        print(f"  {key}: {100 * share:.1f}%  {1000 * cpu:.1f} ms")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
