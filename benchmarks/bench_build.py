"""Build the benchmark from scratch and report, per stage, wall time, CPU time and peak memory.

    python benchmarks/bench_build.py --scale paper                       # 789 questions x 4 lengths
    python benchmarks/bench_build.py --scale small --keep /tmp/b
    python benchmarks/bench_build.py --scale paper --src /work/wt/old-main/src --src src --compare

Each stage runs as its own ``python -m memlens.cli <stage>`` process, as DVC runs them, in a fresh
project folder per source tree (``--src``, default this checkout's ``src/``; the tree's ``conf/``
beside it is used). With several trees the stages alternate between them (ontology of the first,
ontology of the second, crawl of the first ...), so that a change of the machine's load hits both
alike and the ratios stay meaningful on a shared machine; the load average is printed at the start
and after every stage. Per stage:

- ``wall``: seconds from start to exit;
- ``cpu``: user + system seconds of the stage process and every process it waited for (its
  rendering pool), from ``wait4``;
- ``peak``: the largest sum of the resident memory of the stage's process tree, sampled every
  50 ms (``psutil``), and ``maxrss``, the largest single process (``wait4``; exact);
- ``pss``: the largest sum of the tree's proportional set sizes (``/proc/<pid>/smaps_rollup``,
  sampled every 250 ms): the memory the tree takes from the machine, a page shared by forked
  workers counted once (the RSS sum counts it in every process that maps it).

``--compare`` checks that every file under ``data/`` except the manifests is byte-identical between
the trees' builds (the benchmark must not change with a speed-up); with ``--from`` it also compares
each tree's outputs with the finished build's (``reports/validity.json`` included). ``--json FILE``
writes the table.

``--from BUILD`` starts every tree from a finished build's ``data/`` (its ``release/`` left out), so
that one expensive stage can be timed at paper scale without rebuilding what comes before it::

    python benchmarks/bench_build.py --scale paper --from /work/paper --stages validate \
        --src /work/wt/old-main/src --src src --compare

The build is copied, not changed: image objects (written once, content-addressed) are hard links,
every other file a copy, since a stage may rewrite its outputs in place; the folders the timed
stages write are removed first, so they are written again, not found.
The last tree's build also prints the length/session/image table, the gates and the storage of the
content-addressed store against the official JSON layout of the same data.
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
STAGES = ["ontology", "crawl", "filter", "generate", "assemble", "validate", "export"]
#: the data/ folder a stage writes (where it is not the stage's name)
DATA_OF = {
    "crawl": "images",
    "filter": "filtered",
    "generate": "generated",
    "assemble": "instances",
    "export": "release",
}


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


class TreePeak:
    """The largest sums of RSS (every ``interval``) and of PSS (every ``pss_every`` samples) over a
    process and its descendants, sampled in a thread."""

    def __init__(self, pid: int, interval: float = 0.05, pss_every: int = 5):
        self.pid, self.interval, self.pss_every = pid, interval, pss_every
        self.peak = self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _pss(p: psutil.Process) -> int:
        try:
            with open(f"/proc/{p.pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def _run(self) -> None:
        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        n = 0
        while not self._stop.is_set():
            total = pss = 0
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
                if n % self.pss_every == 0:
                    pss += self._pss(p)
            self.peak = max(self.peak, total)
            self.peak_pss = max(self.peak_pss, pss)
            n += 1
            self._stop.wait(self.interval)

    def stop(self) -> tuple[int, int]:
        self._stop.set()
        self._thread.join()
        return self.peak, self.peak_pss


def run_stage(src: Path, root: Path, stage: str, scale: str, overrides: list[str]) -> dict:
    """One stage in a child process: wall, CPU (the child and what it waited for), peak memory."""
    env = {**os.environ, "PYTHONPATH": str(src), "MEMLENS_ROOT": str(root), "MEMLENS_CACHE": str(root / ".cache")}
    cmd = [sys.executable, "-m", "memlens.cli", stage, "--root", str(root), f"data.scale={scale}", *overrides]
    err = root / f".{stage}.stderr"
    t0 = time.perf_counter()
    with open(err, "wb") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=fh)
        sampler = TreePeak(proc.pid)
        _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak, peak_pss = sampler.stop()
    if proc.returncode != 0:
        raise SystemExit(f"{src}: stage {stage} failed ({proc.returncode}):\n{err.read_text()[-3000:]}")
    return {
        "stage": stage,
        "wall_s": round(wall, 2),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
        "peak_mb": round(max(peak, ru.ru_maxrss * 1024) / 2**20),
        "maxrss_mb": round(ru.ru_maxrss / 1024),
        "pss_mb": round(peak_pss / 2**20),
        "load": load(),
    }


def seed_from(build: Path, root: Path) -> None:
    """``root/data`` from a finished build's ``data/`` (``release/`` left out); image objects are
    hard links (never rewritten), everything else a copy. Falls back to copies across devices."""

    def link_or_copy(src: str, dst: str) -> None:
        if f"{os.sep}objects{os.sep}" in src:
            with contextlib.suppress(OSError):
                os.link(src, dst)
                return
        shutil.copy2(src, dst)

    shutil.copytree(build / "data", root / "data", ignore=shutil.ignore_patterns("release"), copy_function=link_or_copy)


def compare_outputs(build: Path, root: Path, stages: list[str]) -> list[str]:
    """Files a stage of ``stages`` wrote under ``root`` that differ from the finished ``build``'s."""
    outs = {"validate": ["reports/validity.json"]}
    diff = []
    for st in stages:
        for rel in outs.get(st, [f"data/{DATA_OF.get(st, st)}"]):
            a, b = build / rel, root / rel
            if not a.exists() or not b.exists():
                diff.append(f"{rel} (missing in {'both' if a.exists() == b.exists() else 'one'})")
                continue
            if a.is_file() or b.is_file():
                if not (a.is_file() and b.is_file() and filecmp.cmp(a, b, shallow=False)):
                    diff.append(rel)
                continue
            fa = {str(p.relative_to(a)) for p in a.rglob("*") if p.is_file() and p.name != "manifest.json"}
            fb = {str(p.relative_to(b)) for p in b.rglob("*") if p.is_file() and p.name != "manifest.json"}
            diff += [f"{rel}/{x}" for x in sorted(fa ^ fb)]
            diff += [f"{rel}/{x}" for x in sorted(fa & fb) if not filecmp.cmp(a / x, b / x, shallow=False)]
    return diff


def compare(a: Path, b: Path) -> list[str]:
    """Files under ``data/`` (manifests left out) that differ between two builds or exist in one."""

    def files(root: Path) -> set[str]:
        d = root / "data"
        return {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file() and p.name != "manifest.json"}

    fa, fb = files(a), files(b)
    diff = sorted(fa ^ fb)
    for rel in sorted(fa & fb):
        if not filecmp.cmp(a / "data" / rel, b / "data" / rel, shallow=False):
            diff.append(rel)
    return diff


def summary(root: Path) -> None:
    man = json.loads((root / "data" / "instances" / "manifest.json").read_text())
    print("\nlength  instances  mean tokens  max rel err  sessions  images  image tokens")
    for ln, t in man["table"].items():
        print(
            f"{ln:6s} {t['instances']:10d} {t['mean_tokens']:12.0f} {t['max_rel_error']:12.4f} {t['mean_sessions']:9.1f} "
            f"{t['mean_images']:7.1f} {t['mean_image_tokens']:13.0f}"
        )
    validity = json.loads((root / "reports" / "validity.json").read_text())
    failed = [k for k, v in validity["gates"].items() if not v["pass"]]
    print(f"\ngates: {len(validity['gates'])}, failed: {failed or 'none'}")
    d = root / "data"
    images = du(d / "images" / "objects")
    store_text = du(d / "generated") + du(d / "instances")
    rel = d / "release"
    release_json = sum(p.stat().st_size for p in rel.glob("dataset_*.json"))
    release_imgs = du(rel / "release_images")
    print(
        f"storage: content-addressed text (sessions once + instances) {store_text / 1e6:.1f} MB vs "
        f"official JSON {release_json / 1e6:.1f} MB: ratio {store_text / max(1, release_json):.3f}"
    )
    print(
        f"         with images: store {(store_text + images) / 1e6:.1f} MB vs release "
        f"{(release_json + release_imgs) / 1e6:.1f} MB: ratio {(store_text + images) / max(1, release_json + release_imgs):.3f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="small")
    ap.add_argument("--src", action="append", type=Path, help="a source tree to build with (repeatable)")
    ap.add_argument("--keep", type=Path, default=None, help="build in this folder (one subfolder per tree) and keep it")
    ap.add_argument("--compare", action="store_true", help="check the trees' data/ byte-identical (manifests aside)")
    ap.add_argument("--json", type=Path, default=None, help="write the per-stage table here")
    ap.add_argument("--stages", default=",".join(STAGES), help="comma-separated stages (default: ontology..export)")
    ap.add_argument("--from", dest="build", type=Path, default=None, help="start from this finished build's data/")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    srcs = [s.resolve() for s in (args.src or [REPO / "src"])]
    base = args.keep or Path(tempfile.mkdtemp(prefix="memlens-bench-"))
    roots = [base / (f"{i}-{s.parent.name}" if len(srcs) > 1 else "") for i, s in enumerate(srcs)]
    for src, root in zip(srcs, roots):
        root.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src.parent / "conf", root / "conf", dirs_exist_ok=True)
        if args.build:
            seed_from(args.build.resolve(), root)
            for st in args.stages.split(","):  # what the stages write is theirs to write: none of it is kept
                shutil.rmtree(root / "data" / DATA_OF.get(st, st), ignore_errors=True)
    print(f"scale {args.scale}, {os.cpu_count()} cores, load {load()} (1/5/15 min); trees: {[str(s) for s in srcs]}")
    table: dict[str, list[dict]] = {str(s): [] for s in srcs}
    for st in args.stages.split(","):
        for src, root in zip(srcs, roots):
            row = run_stage(src, root, st, args.scale, args.overrides)
            table[str(src)].append(row)
            print(
                f"{st:10s} {row['wall_s']:8.1f} s wall {row['cpu_s']:8.1f} s cpu {row['peak_mb']:6d} MB peak "
                f"({row['maxrss_mb']} MB one process, {row['pss_mb']} MB PSS)  load {row['load']}  [{src}]",
                flush=True,
            )
    print(f"\n{'tree':50s} {'wall s':>8s} {'cpu s':>8s} {'peak MB':>8s} {'PSS MB':>8s}")
    for src, rows in table.items():
        print(
            f"{src[-50:]:50s} {sum(r['wall_s'] for r in rows):8.1f} {sum(r['cpu_s'] for r in rows):8.1f} "
            f"{max(r['peak_mb'] for r in rows):8d} {max(r['pss_mb'] for r in rows):8d}"
        )
    if len(srcs) > 1:
        first, last = table[str(srcs[0])], table[str(srcs[-1])]
        print("\nratio last/first tree per stage (wall, cpu, peak):")
        for a, b in zip(first, last):
            print(
                f"  {a['stage']:10s} {b['wall_s'] / max(a['wall_s'], 1e-9):6.2f} "
                f"{b['cpu_s'] / max(a['cpu_s'], 1e-9):6.2f} {b['peak_mb'] / max(a['peak_mb'], 1):6.2f}"
            )
    if args.json:
        args.json.write_text(json.dumps({"scale": args.scale, "stages": table}, indent=1))
    status = 0
    if args.compare and len(roots) > 1:
        for root in roots[1:]:
            diff = compare(roots[0], root)
            print(f"\ndata/ of {root.name} vs {roots[0].name}: {'byte-identical' if not diff else 'DIFFERENT'}")
            for rel in diff[:30]:
                print("  differs:", rel)
            status = status or int(bool(diff))
    if args.compare and args.build:
        for root in roots:
            diff = compare_outputs(args.build.resolve(), root, args.stages.split(","))
            print(f"\noutputs of {root.name} vs {args.build}: {'byte-identical' if not diff else 'DIFFERENT'}")
            for rel in diff[:30]:
                print("  differs:", rel)
            status = status or int(bool(diff))
    if all(st in args.stages for st in ("assemble", "validate", "export")):
        summary(roots[-1])
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
