"""Retrieval and OCR throughput of the memory layer, and retrieval/fidelity figures, on a built benchmark.

    .venv/bin/python benchmarks/bench_retrieval.py --root /tmp/memlens-paper   # a paper-scale build
    .venv/bin/python benchmarks/bench_retrieval.py --root . --lengths 32k     # the workspace build

Build a paper-scale benchmark first (about 4 minutes on 2 idle cores):
``.venv/bin/python benchmarks/bench_build.py --scale paper --keep /tmp/memlens-paper``.

Prints, for the agent subset (195 questions at paper scale) at every length:
1. OCR (rapidocr, bundled models) over every image of those histories: images/s on the first run
   (images not yet cached; ``--ocr-limit N`` OCRs only the first N uncached ones and times those),
   then a second pass over the same images with its OCR call count (0 expected).
2. BM25 and dense (MiniLM + faiss) retrieval per length: ingest (documents + index) and query time
   for all questions of the subset, with the OCR texts (after OCR). Dense vectors are kept in the
   project's embedding cache (``<cache>/memory/embeddings``): the first run encodes, a second one
   reads them (``--cold``: no cache, every text encoded).
3. Evidence recall@10 per adapter (markers, ocr, oracle_caption), retriever, type and length, and
   the storage fidelity of the answer-critical facts per adapter and type.
The OCR cache lives in ``<root>/.memlens_cache/memory/adapters`` (or ``$MEMLENS_CACHE``).
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

from memlens.construction.export.stage import agent_subset  # noqa: E402
from memlens.core.config import Paths, length_tokens  # noqa: E402
from memlens.core.constants import QUESTION_TYPES, TYPE_ABBREV  # noqa: E402
from memlens.core.items import BuiltBenchmark  # noqa: E402
from memlens.eval.memory.adapters import ImageInput, build_adapter  # noqa: E402
from memlens.eval.memory.diagnostics import retrieval_metrics  # noqa: E402
from memlens.eval.memory.retrieval import TextEncoder, build_retriever, session_docs, session_ranking  # noqa: E402
from memlens.eval.memory.stage import storage_fidelity  # noqa: E402

TYPES = [TYPE_ABBREV[t] for t in QUESTION_TYPES]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, help="project folder with a built benchmark (data/)")
    ap.add_argument("--lengths", default="", help="comma-separated; default: every built length")
    ap.add_argument("--ocr-limit", type=int, default=0, help="OCR at most this many uncached images (0: all)")
    ap.add_argument(
        "--ocr-lengths",
        default="",
        help="OCR only the images of the histories at these lengths (comma-separated; default: all); "
        "ocr recall is then reported at those lengths only (fidelity needs only evidence images)",
    )
    ap.add_argument("--retrievers", default="bm25,dense")
    ap.add_argument("--adapters", default="markers,ocr,oracle_caption")
    ap.add_argument("--cold", action="store_true", help="no embedding cache: every dense text is encoded")
    args = ap.parse_args()
    paths = Paths(Path(args.root).resolve())
    os.environ.setdefault("MEMLENS_CACHE", str(paths.root / ".memlens_cache"))
    bench = BuiltBenchmark(paths)
    lengths = [x for x in args.lengths.split(",") if x] or bench.lengths()
    lengths.sort(key=length_tokens)
    ids = set(agent_subset(list(bench.questions.values()))["question_ids"])
    t0 = time.perf_counter()
    items = {ln: [it for it in bench.items(ln) if it.question_id in ids] for ln in lengths}
    paths_of = {sha: it.resolve_image(sha) for its in items.values() for it in its for sha in it.image_ids}
    shas = sorted(paths_of)
    print(
        f"benchmark {paths.root}: {len(ids)} agent-subset questions, lengths {', '.join(lengths)}, "
        f"{len(shas)} distinct history images (loaded in {time.perf_counter() - t0:.1f} s)"
    )
    for ln in lengths:
        n_s = sum(len(it.sessions) for it in items[ln]) / max(1, len(items[ln]))
        print(f"  {ln}: {len(items[ln])} items, {n_s:.1f} sessions per history")
    inputs = [ImageInput(s, paths_of[s]) for s in shas]
    cache = paths.cache / "memory" / "adapters"
    images = bench.images
    truth_of = lambda sha: images[sha].truth if sha in images else None  # noqa: E731
    adapters = [a for a in args.adapters.split(",") if a]
    texts: dict[str, dict[str, str]] = {}

    # 1. OCR throughput and the cached second pass
    ocr_lengths = [x for x in args.ocr_lengths.split(",") if x] or lengths
    ocr_inputs = sorted({sha for ln in ocr_lengths for it in items[ln] for sha in it.image_ids})
    ocr_inputs = [ImageInput(s, paths_of[s]) for s in ocr_inputs]
    if "ocr" in adapters:
        print(f"OCR scope: the {len(ocr_inputs)} images of the histories at {', '.join(ocr_lengths)}")
        ocr = build_adapter("ocr", cache_dir=cache)
        cached = [im for im in ocr_inputs if ocr.cache.get(im.sha256) is not None]
        todo = [im for im in ocr_inputs if ocr.cache.get(im.sha256) is None]
        if args.ocr_limit:
            todo = todo[: args.ocr_limit]
        t = time.perf_counter()
        ocr.describe_images(todo)
        dt = time.perf_counter() - t
        if todo:
            print(
                f"\nOCR first run: {ocr.stats['calls']} images in {dt:.1f} s = {ocr.stats['calls'] / dt:.2f} images/s "
                f"wall ({ocr.images_per_s:.2f} images/s in the engine, model load included); {len(cached)} were cached"
            )
        else:
            print(f"\nOCR: all {len(ocr_inputs)} images were already cached")
        again = build_adapter("ocr", cache_dir=cache)
        t = time.perf_counter()
        done = [im for im in ocr_inputs if again.cache.get(im.sha256) is not None]
        got = again.describe_images(done)
        print(
            f"OCR second run over {len(done)} images: {again.stats['calls']} OCR calls, "
            f"{again.stats['hits']} cache hits, {time.perf_counter() - t:.2f} s"
        )
        if len(done) < len(ocr_inputs):
            print(
                f"  ({len(ocr_inputs) - len(done)} images not OCR'd (--ocr-limit): the ocr adapter is left out below)"
            )
            adapters = [a for a in adapters if a != "ocr"]
        else:
            texts["ocr"] = dict(zip([im.sha256 for im in done], got))
            # images outside the OCR scope (other lengths) are not OCR'd: ocr recall skips those lengths
    if "markers" in adapters:
        texts["markers"] = dict(zip(shas, build_adapter("markers").describe_images(inputs)))
    if "oracle_caption" in adapters:
        texts["oracle_caption"] = dict(
            zip(shas, build_adapter("oracle_caption", cache_dir=cache, truth_of=truth_of).describe_images(inputs))
        )

    # 2. retrieval time (ingest + query) and 3. recall
    # the project's embedding cache (a second run reads every vector); --cold: encode everything
    encoder = TextEncoder(cache_dir=None if args.cold else paths.cache / "memory" / "embeddings")
    kinds = [k for k in args.retrievers.split(",") if k]
    if "dense" in kinds:
        t = time.perf_counter()
        encoder.encode(["warm-up"])
        print(f"\ndense encoder loaded in {time.perf_counter() - t:.1f} s (not counted below)")
    recall: dict[tuple, list[float]] = defaultdict(list)
    timing_adapter = "ocr" if "ocr" in texts and set(ocr_lengths) == set(lengths) else next(iter(texts))
    print(
        f"\nretrieval time over the agent subset, adapter {timing_adapter} (ingest = docs + index; query = 1 search):"
    )
    print("| retriever | length | questions | ingest s | query s | total s | ms/question |")
    print("|---|---|---|---|---|---|---|")
    grand = 0.0
    for kind in kinds:
        for adapter in [timing_adapter] + [a for a in texts if a != timing_adapter]:
            r = build_retriever(kind, **({"encoder": encoder} if kind == "dense" else {}))
            for ln in lengths:
                if adapter == "ocr" and ln not in ocr_lengths:
                    continue
                ingest = query = 0.0
                n = 0
                for it in items[ln]:
                    ev = [s.session_id for s in it.evidence_sessions]
                    t = time.perf_counter()
                    r.index(session_docs(it.sessions, texts[adapter]))
                    t1 = time.perf_counter()
                    hits = r.search(it.question.question, 50, before=it.question.question_date)
                    t2 = time.perf_counter()
                    ingest += t1 - t
                    query += t2 - t1
                    n += 1
                    if ev:
                        m = retrieval_metrics(session_ranking(hits), ev)
                        for ty in (TYPE_ABBREV[it.question.question_type], "all"):
                            recall[(kind, adapter, ln, ty)].append(m["recall@10"])
                if adapter == timing_adapter:
                    grand += ingest + query
                    print(
                        f"| {kind} | {ln} | {n} | {ingest:.2f} | {query:.2f} | {ingest + query:.2f} | "
                        f"{1000 * (ingest + query) / max(1, n):.1f} |"
                    )
    print(
        f"{' + '.join(kinds)}, all lengths, ingest + query: {grand:.1f} s (dense texts encoded: {encoder.encoded}, "
        f"read from the embedding cache: {encoder.cache_hits}{', cache off' if args.cold else ''})"
    )

    print("\nevidence recall@10 (%), agent subset; oracle_caption is an upper bound:")
    print("| retriever | adapter | length | all | " + " | ".join(TYPES) + " |")
    print("|---|---|---|---|" + "---|" * len(TYPES))
    for kind in kinds:
        for adapter in texts:
            for ln in lengths:
                cells = []
                for ty in ["all", *TYPES]:
                    v = recall.get((kind, adapter, ln, ty))
                    cells.append(f"{100 * sum(v) / len(v):.1f}" if v else "-")
                print(f"| {kind} | {adapter} | {ln} | " + " | ".join(cells) + " |")

    fid = storage_fidelity([bench.questions[i] for i in sorted(ids)], texts, truth_of, {})
    print(f"\nstorage fidelity (%), {fid['questions_with_facts']} questions with answer-critical facts:")
    print("| adapter | all | " + " | ".join(TYPES) + " |")
    print("|---|---|" + "---|" * len(TYPES))
    for a, v in fid["fidelity"].items():
        pt = v["per_type"]
        cells = [pt.get(t, {}).get("fidelity") for t in ["all", *TYPES]]
        print(f"| {a} | " + " | ".join("-" if c is None else f"{100 * c:.1f}" for c in cells) + " |")
    fams = sorted({k for v in fid["fidelity"].values() for k in v["per_family"]})
    print("\nper image family (%): | adapter | " + " | ".join(fams) + " |")
    for a, v in fid["fidelity"].items():
        pf = v["per_family"]
        print(f"| {a} | " + " | ".join(f"{100 * pf[k]['fidelity']:.1f}" if k in pf else "-" for k in fams) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
