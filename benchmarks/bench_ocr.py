"""OCR throughput of the ``ocr`` input adapter on a built benchmark's images, old and new code side by side.

    python benchmarks/bench_ocr.py --root /tmp/paper --n 240
    python benchmarks/bench_ocr.py --root /tmp/paper --n 240 --src /work/wt/old-main/src --src src
    python benchmarks/bench_ocr.py --root /tmp/paper --n 240 --src src::precision=f32 --src src::precision=bf16

A seeded draw of ``--n`` images of the build (``data/images/objects``) is OCR'd by the adapter of
each source tree (``--src``, repeatable) in a fresh process with an empty adapter cache, as
``memlens diagnose`` does: ``describe_images`` over all of them (the tree's own batching, engine,
threads and worker processes; engine loading included); ``PATH::key=value,...`` gives that run
adapter options (``memory.ocr`` keys: ``precision=bf16``, ``engine=onnxruntime``). Trees alternate ``--repeat`` times, so a
change of the machine's load hits each. Prints per run: images/s (wall), CPU seconds per image (the
process and its workers, from ``wait4``), the load average; and whether the trees' texts are
identical image by image (the OCR text must not change with a speed-up).

``--fidelity``: the images are instead the evidence images of the build's questions that have
answer-critical facts (every question, not diagnose's sample; ``--n`` of them at most, seeded), and
each tree's texts are scored as ``memlens diagnose`` scores storage fidelity (the share of those
facts present in the text stored for their image, :func:`memlens.eval.memory.diagnostics.fidelity`),
so a change of the text is weighed by what the diagnostics report.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

CHILD = r"""
import json, sys, time
from pathlib import Path
from memlens.eval.memory.adapters import ImageInput, build_adapter
files = [Path(p) for p in json.loads(sys.argv[1])]
out = Path(sys.argv[2])
a = build_adapter("ocr", cache_dir=out.parent / "cache", progress=False, **json.loads(sys.argv[3]))
t = time.perf_counter()
texts = a.describe_images([ImageInput(p.stem, p) for p in files])
wall = time.perf_counter() - t
getattr(a, "close", lambda: None)()
out.write_text(json.dumps({"wall_s": wall, "texts": texts, "calls": a.stats["calls"]}))
"""


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def tree(spec: str) -> tuple[Path, dict]:
    """``PATH`` or ``PATH::key=value,...``: a source tree and the adapter options of its runs."""
    path, _, opts = spec.partition("::")
    options = {}
    for kv in filter(None, opts.split(",")):
        k, _, v = kv.partition("=")
        options[k] = int(v) if v.isdigit() else {"true": True, "false": False}.get(v, v)
    return Path(path).resolve(), options


def run(spec: str, files: list[str], work: Path) -> dict:
    src, options = tree(spec)
    work.mkdir(parents=True)
    out = work / "out.json"
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(files), str(out), json.dumps(options)], env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{src}: OCR run failed")
    res = json.loads(out.read_text())
    return {**res, "process_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "load": load()}


def evidence_facts(root: Path) -> dict[str, tuple[dict, list[str]]]:
    """question id -> (image sha -> its answer-critical facts) of a built benchmark (this checkout's code)."""
    from memlens.core.config import Paths
    from memlens.eval.benchmark import Benchmark
    from memlens.eval.memory.adapters import truth_lookup
    from memlens.eval.memory.diagnostics import answer_critical_facts

    bench = Benchmark.from_config(SimpleNamespace(data=SimpleNamespace(items="built")), Paths(root))
    truth_of = truth_lookup(bench)
    out = {}
    for qid, q in sorted(bench.questions.items()):
        f = answer_critical_facts(q.details.get("derivation"), q.details.get("image_ids", []), truth_of)
        if f:
            out[qid] = f
    return out


def fidelity_of(facts: dict, texts: dict[str, str]) -> tuple[int, int]:
    from memlens.eval.memory.diagnostics import fidelity

    got = [fidelity(f, texts)[:2] for f in facts.values()]
    return sum(p for p, _ in got), sum(n for _, n in got)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True, help="a project with a built benchmark")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--src", action="append", help="a source tree, PATH or PATH::key=value,... (repeatable)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--fidelity", action="store_true", help="evidence images, scored by storage fidelity")
    args = ap.parse_args()
    srcs = args.src or [str(Path(__file__).resolve().parents[1] / "src")]
    objs = sorted(str(p) for p in (args.root / "data" / "images" / "objects").iterdir() if p.is_file())
    facts = None
    if args.fidelity:
        facts = evidence_facts(args.root)
        wanted = {sha for f in facts.values() for sha in f}
        objs = [p for p in objs if Path(p).stem in wanted]
    random.Random(0).shuffle(objs)
    files = sorted(objs[: args.n])
    if facts is not None:
        chosen = {Path(p).stem for p in files}
        facts = {q: {s: v for s, v in f.items() if s in chosen} for q, f in facts.items()}
        facts = {q: f for q, f in facts.items() if f}
    tmp = Path(tempfile.mkdtemp(prefix="bench_ocr_"))
    print(f"{len(files)} images of {args.root}, {os.cpu_count()} cores, load {load()}")
    texts: dict[str, list[str]] = {}
    for r in range(args.repeat):
        for i, src in enumerate(srcs):
            res = run(src, files, tmp / f"{i}-{r}")
            texts.setdefault(str(src), res["texts"])
            n = len(files)
            print(
                f"{n / res['wall_s']:6.2f} images/s ({res['wall_s']:.1f} s for {res['calls']} OCR calls, engine load "
                f"included; process {res['process_s']:.1f} s), {res['cpu_s'] / n:.3f} CPU-s/image, load {res['load']}  "
                f"[{src}]",
                flush=True,
            )
    if len(texts) > 1:
        base = texts[str(srcs[0])]
        for src in srcs[1:]:
            same = sum(a == b for a, b in zip(base, texts[str(src)]))
            print(f"texts identical to {srcs[0]}: {same}/{len(base)}  [{src}]")
    if facts is not None:
        for src in srcs:
            present, n = fidelity_of(facts, dict(zip((Path(p).stem for p in files), texts[str(src)])))
            print(f"storage fidelity: {present}/{n} = {present / n:.4f} of {len(facts)} questions' facts  [{src}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
