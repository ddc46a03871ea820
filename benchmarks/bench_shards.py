"""Shard scaling: one system's items split over 1, 2, 4 and 8 worker processes (``eval.shard=I/N``).

Against a stand-in server with a fixed latency per request (``--latency``, default 2 s: a model
server that is the bottleneck, as a GPU is) and ``--concurrency`` requests in flight per worker, the
ideal throughput of N workers is ``N x concurrency / latency`` items/s. For each N this runs N
``memlens evaluate eval.shard=i/N`` processes at once on the tiny benchmark (both lengths, mode
``text_only`` so that the 2-core client machine does not become the bottleneck instead of the
server), each into its own segment of a fresh results store, then ``eval.collect=true`` (the views
from the store, nothing sent). It reports items/s from the start to the last stored answer, as a
share of the ideal, the same share while answering (each writer's answers over its own first-to-last
answer span: the cost of sharding itself, without process start-up), the time to the first answer
(start-up), the requests sent (= items: no duplicates) and whether the views (and their manifest)
are byte-identical to those of N = 1.

``--slurm`` runs the same sweep through a one-node SLURM cluster on localhost (tests/cluster/slurm.sh:
root, slurm-wlm and munge installed): ``python -m memlens.sweep -m hydra/launcher=slurm_cpu --shards N``,
one array task per shard; answers are timed from the submission to the last stored answer, and the
sweep's wall time includes the final step (views, judge, report).

Usage: python benchmarks/bench_shards.py [--workers 1,2,4,8] [--latency 3] [--concurrency 1]
                                         [--root DIR] [--slurm [--no-local]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402
from tests.support.results import stored_records  # noqa: E402

SLURM = REPO / "tests" / "cluster" / "slurm.sh"


def build(root: Path) -> None:
    from memlens.cli import main

    shutil.copytree(REPO / "conf", root / "conf", dirs_exist_ok=True)
    for st in ("ontology", "crawl", "filter", "generate", "assemble"):
        assert main([st, "--root", str(root), "data.scale=tiny", "images.workers=1"]) == 0, st


def system(server, concurrency: int) -> list[str]:
    return [
        "data.scale=tiny",
        "model=openai_compatible",
        f"model.base_url={server.base_url}",
        "model.model=fake-vl",
        f"model.concurrency={concurrency}",
        "eval.mode=text_only",
        "eval.lengths=[32k,64k]",
        "tracking.enabled=false",
    ]


def reset(root: Path) -> None:
    for d in ("data/predictions", "data/verdicts", "data/sweeps", ".memlens_cache/results", "reports"):
        shutil.rmtree(root / d, ignore_errors=True)


def answer_times(root: Path) -> dict[str, list[float]]:
    """Per worker process (``<host>-<pid>``; it writes one segment per length): when each of its
    answers was stored."""
    out: dict[str, list[float]] = {}
    for r in stored_records(root):
        if r.get("ok"):
            segment = r["origin"].rsplit(":", 1)[0]
            out.setdefault(segment.rsplit("-", 1)[0], []).append(r["created"])
    return {k: sorted(v) for k, v in out.items()}


def views(root: Path) -> dict[str, bytes]:
    base = root / "data" / "predictions" / "fake-vl"
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def local_run(root: Path, env: dict, server, n: int, concurrency: int) -> dict:
    reset(root)
    cmd = [sys.executable, "-m", "memlens.cli", "evaluate", "--root", str(root), *system(server, concurrency)]
    sent = server.request_count
    t0 = time.time()
    procs = [
        subprocess.Popen([*cmd, f"eval.shard={i}/{n}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for i in range(n)
    ]
    errs = [p.communicate()[1] for p in procs]
    for p, err in zip(procs, errs):
        assert p.returncode == 0, err.decode()[-2000:]
    collect = subprocess.run([*cmd, "eval.collect=true"], env=env, capture_output=True, text=True)
    assert collect.returncode == 0, collect.stderr[-2000:]
    times = answer_times(root)
    return {"t0": t0, "times": times, "sent": server.request_count - sent, "wall": time.time() - t0}


def slurm_run(root: Path, env: dict, server, n: int, concurrency: int) -> dict:
    reset(root)
    cmd = [
        sys.executable, "-m", "memlens.sweep", "-m", "hydra/launcher=slurm_cpu", "hydra.launcher.partition=debug",
        *system(server, concurrency), "--shards", str(n),
        f"hydra.sweep.dir={root / 'data' / 'sweeps' / str(n)}",
    ]  # fmt: skip
    sent = server.request_count
    t0 = time.time()
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"t0": t0, "times": answer_times(root), "sent": server.request_count - sent, "wall": time.time() - t0}


def row(label: str, n: int, res: dict, ideal: float, latency: float, same: bool) -> str:
    """Throughput from the start to the last stored answer (start-up included), and while answering:
    each writer's answers over its own span (first to last answer, plus one request's latency)."""
    per = res["times"]
    times = sorted(t for ts in per.values() for t in ts)
    items = len(times)
    span = times[-1] - res["t0"]
    rate = items / span
    steady = sum(len(ts) / (ts[-1] - ts[0] + latency) for ts in per.values())
    return (
        f"| {label} | {n} | {len(per)} | {items} | {res['sent']} | {times[0] - res['t0']:.1f} | {span:.1f} | "
        f"{rate:.2f} | {ideal:.2f} | {100 * rate / ideal:.0f}% | {100 * steady / ideal:.0f}% | {res['wall']:.1f} | "
        f"{'yes' if same else 'NO'} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--latency", type=float, default=3.0)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--root", type=Path, default=None, help="a built tiny project (default: build one)")
    ap.add_argument("--slurm", action="store_true", help="also through a local one-node SLURM cluster")
    ap.add_argument("--no-local", action="store_true", help="only the SLURM runs (views compared with its N=1)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_shards_"))
    root = args.root or tmp / "proj"
    if args.root is None:
        build(root)
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}",
        "MEMLENS_CACHE": str(root / ".memlens_cache"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    for k in ("MEMLENS_ROOT", "DVC_ROOT"):
        env.pop(k, None)
    workers = [int(x) for x in args.workers.split(",")]
    load = os.getloadavg()
    head = (
        "| run | shards | workers | items | requests | first answer (s) | last answer (s) | items/s | ideal | "
        "share | share while answering | wall incl. views (s) | views = 1 worker |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    lines = [head]
    cluster = None
    with FakeOpenAIServer(latency_s=args.latency, record_requests=False) as server:
        ref = None
        for n in [] if args.no_local else workers:
            res = local_run(root, env, server, n, args.concurrency)
            got = views(root)
            ref = got if ref is None else ref
            lines.append(row("local", n, res, n * args.concurrency / args.latency, args.latency, got == ref))
            print(lines[-1], flush=True)
        if args.slurm:
            cluster = tmp / "slurm"
            start = subprocess.run(["bash", str(SLURM), "start", str(cluster)], capture_output=True, text=True)
            try:
                assert start.returncode == 0, start.stderr[-2000:]
                env["SLURM_CONF"] = str(cluster / "slurm.conf")
                for n in workers:
                    res = slurm_run(root, env, server, n, args.concurrency)
                    got = views(root)
                    ref = got if ref is None else ref
                    same = got == ref
                    lines.append(row("SLURM", n, res, n * args.concurrency / args.latency, args.latency, same))
                    print(lines[-1], flush=True)
            finally:
                subprocess.run(["bash", str(SLURM), "stop", str(cluster)], capture_output=True)
    print(
        f"\nlatency {args.latency:g} s, {args.concurrency} request(s) in flight per worker, "
        f"load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}, {os.cpu_count()} cores\n"
    )
    print("\n".join(lines))
    (tmp / "result.json").write_text(json.dumps({"table": lines, "load": load}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
