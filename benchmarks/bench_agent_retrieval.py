"""Offline retrieval of the retrieval-based memory agents on a built benchmark: no backbone, no call.

    .venv/bin/python benchmarks/bench_agent_retrieval.py --root /tmp/memlens-paper
    .venv/bin/python benchmarks/bench_agent_retrieval.py --root . --agents memory-t1 memory-t1:adapter=ocr

Each agent (a ``conf/model`` name, optionally ``:key=value`` overrides of its config) is driven as in
an evaluation, per question of the agent subset (``--sample N``: a seeded draw, types in turn; the
same draw as ``memlens diagnose memory.sample=N``) at every length: a fresh memory, the
role-stripped view, every session ingested through the agent's input adapter (OCR from the
project's one adapter cache, ``$MEMLENS_CACHE``), then its ranking instead of an answer
(:func:`memlens.eval.agents.offline.agent_retrieval`). Prints evidence recall@1/3/5/10, MRR and the
recall of the ``top_k`` sessions the agent shows its backbone, per agent and length, then recall@10
per type, and the wall time per agent. The hybrid's figures sit next to the text-only agents'.

Default agents: memory-t1 (BM25 over session text, images as markers), memory-t1 with OCR texts,
m3c (dense over the first 4 turns), hybrid-pixel (RRF of BM25 on text and BM25 on OCR).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from memlens.core.compose import load_settings  # noqa: E402
from memlens.core.config import Paths, length_tokens  # noqa: E402
from memlens.core.constants import TYPE_ORDER  # noqa: E402
from memlens.eval.agents.offline import agent_retrieval  # noqa: E402
from memlens.eval.benchmark import open_benchmark  # noqa: E402
from memlens.eval.evaluate.stage import build_model  # noqa: E402
from memlens.eval.memory.stage import question_ids, sample_ids  # noqa: E402

DEFAULT_AGENTS = ["memory-t1", "memory-t1:adapter=ocr", "m3c", "hybrid-pixel"]


def spec_overrides(spec: str) -> list[str]:
    """``name:key=value:...`` -> the config overrides of that agent."""
    name, *sets = spec.split(":")
    return [f"model={name}", *(f"model.{kv}" for kv in sets)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="project folder with a built benchmark (data/, conf/)")
    ap.add_argument("--agents", nargs="+", default=DEFAULT_AGENTS)
    ap.add_argument("--lengths", default="", help="comma-separated; default: every built length")
    ap.add_argument("--sample", type=int, default=0, help="N questions of the agent subset (0: all)")
    ap.add_argument("--set", nargs="*", default=[], help="config overrides for every agent (e.g. data.scale=paper)")
    args = ap.parse_args()
    root = Path(args.root).resolve()
    paths = Paths(root)
    os.environ.setdefault("MEMLENS_CACHE", str(paths.root / ".memlens_cache"))
    base = load_settings(list(args.set), root=root)
    bench = open_benchmark(base, paths)
    lengths = [x for x in args.lengths.split(",") if x] or bench.lengths()
    lengths = sorted(lengths, key=length_tokens)
    ids = set(sample_ids(bench, question_ids(bench, "agent"), args.sample))
    items = {ln: [it for it in bench.items(ln) if it.question_id in ids] for ln in lengths}
    print(
        f"offline agent retrieval: {len(ids)} agent-subset questions, lengths {', '.join(lengths)}; "
        f"benchmark {bench.dataset_hash()[:12]}; load average {os.getloadavg()[0]:.1f}"
    )
    rows: list[dict] = []
    for spec in args.agents:
        agent = build_model(load_settings([*args.set, *spec_overrides(spec)], root=root))
        agent.attach(paths, bench)
        t0 = time.perf_counter()
        got = []
        for ln in lengths:
            got += agent_retrieval(agent, items[ln])
        for r in got:
            r["agent"] = spec
        rows += got
        print(f"  {spec}: {len(got)} question-retrievals in {time.perf_counter() - t0:.1f} s ({agent.adapter_id()})")
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        for t in (r["type"], "all"):
            groups[(r["agent"], r["length"], t)].append(r)

    def mean(key, rs):
        return 100 * sum(r[key] for r in rs) / len(rs)

    print("\n| agent | length | n | top_k | R@1 | R@3 | R@5 | R@10 | MRR | shown recall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for spec in args.agents:
        for ln in lengths:
            rs = groups.get((spec, ln, "all"))
            if not rs:
                continue
            cells = [f"{mean(k, rs):.1f}" for k in ("recall@1", "recall@3", "recall@5", "recall@10", "mrr")]
            print(
                f"| {spec} | {ln} | {len(rs)} | {rs[0]['top_k']} | {' | '.join(cells)} | {mean('shown_recall', rs):.1f} |"
            )
    print("\nrecall@10 per type (%)\n\n| agent | length | " + " | ".join(TYPE_ORDER) + " |")
    print("|---|---|" + "---|" * len(TYPE_ORDER))
    for spec in args.agents:
        for ln in lengths:
            cells = []
            for t in TYPE_ORDER:
                rs = groups.get((spec, ln, t))
                cells.append(f"{mean('recall@10', rs):.1f}" if rs else "-")
            print(f"| {spec} | {ln} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
