"""``memlens diagnose``: retrieval and storage-fidelity diagnostics of memory stores, offline.

For each (retriever, adapter) of the ``memory`` config, at each length and question type, over the
diagnostics question set (``memory.subset``: the 195-question agent subset, or all questions) or, by
default (``memory.sample: auto``), a seeded sample of it stratified by question type and sized for a
``memory.margin`` (5-point) interval on each type's recall@10 (:mod:`memlens.eval.memory.sampling`;
``memory.sample=all`` diagnoses the whole set):
evidence-session recall@k, NDCG@10 and MRR of the question's own history, retrieved with the
question text (and, with ``memory.temporal_filter``, only sessions at or before its date); and per
adapter the storage fidelity of the answer-critical facts (see
:mod:`memlens.eval.memory.diagnostics`). No LLM is involved; adapter outputs are cached under
the project's one adapter cache, ``Paths.cache/memory/adapters``, shared with the memory agents
(a second run, or a run after an agent run with the same adapter, costs zero OCR calls).

Writes ``reports/retrieval/``: ``metrics.json`` (DVC metrics), ``retrieval.json`` (every aggregate),
``fidelity.json``, ``per_question.jsonl``, ``summary.md``, ``recall_by_length.csv`` and
``recall_at_10_by_length.png`` (one line per adapter, one panel per retriever), and logs them to
MLflow (one run per benchmark: ``retrieval diagnostics``). ``oracle_caption`` rows are upper
bounds (ground truth written as text) and are labelled so.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memlens.construction.export.stage import agent_subset
from memlens.core.config import Paths, length_tokens, section
from memlens.core.constants import QUESTION_TYPES, TYPE_ABBREV
from memlens.core.errors import ConfigError, DataError
from memlens.core.io import canonical_json, sha256_file, write_json
from memlens.core.registry import find_component
from memlens.core.settings import Settings, as_settings
from memlens.eval.benchmark import open_benchmark
from memlens.eval.memory.adapters import ImageInput, open_adapter, truth_lookup
from memlens.eval.memory.diagnostics import KS, answer_critical_facts, fidelity, mean_rows, retrieval_metrics
from memlens.eval.memory.retrieval import RetrievalContext, session_docs, session_ranking
from memlens.eval.memory.sampling import half_width, plan_sizes, sample_by_type, stratified
from memlens.eval.memory.settings import MemorySettings

log = logging.getLogger(__name__)

OUT = "retrieval"
_SHA256 = re.compile(r"[0-9a-f]{64}")
METRIC_KEYS = (*(f"recall@{k}" for k in KS), "ndcg@10", "mrr")


def _abbrev(t: str) -> str:
    return TYPE_ABBREV.get(t, t)


def question_ids(bench, subset: str) -> list[str]:
    """The diagnostics question set: the agent subset (the release's file, or the same stratified
    draw the export stage writes) or every question."""
    if subset == "all":
        return sorted(bench.questions)
    if bench.kind == "official":
        return sorted(bench.source.agent_subset())
    return list(agent_subset(list(bench.questions.values()))["question_ids"])


def sample_ids(bench, ids: list[str], n: int) -> list[str]:
    """``n`` of ``ids`` (all when ``n`` is 0 or more): a seeded draw, round-robin over question
    types (as many of each as it has, up to an equal share); for a figure whose full cost (OCR of every history image)
    is too high, with the sample size stated next to it."""
    if not n or n >= len(ids):
        return sorted(ids)
    by_type: dict[str, list[str]] = {}
    for qid in sorted(ids):
        by_type.setdefault(bench.questions[qid].question_type, []).append(qid)
    rng = random.Random("diagnose-sample")
    for lst in by_type.values():
        rng.shuffle(lst)
    out: list[str] = []
    while len(out) < n:
        for t in sorted(by_type):
            if by_type[t] and len(out) < n:
                out.append(by_type[t].pop())
    return sorted(out)


def choose_questions(bench, ids: list[str], mcfg: MemorySettings, seed: int) -> tuple[list[str], dict]:
    """The questions diagnosed and how they were chosen (``sampling`` of the outputs' header):
    ``memory.sample`` = ``auto`` (stratified, sized per type for the target interval), ``all`` or 0
    (the whole set) or N (a seeded draw of N, types in turn). ``population``: the questions with
    evidence sessions per type (what recall is measured on)."""
    mode = mcfg.sample
    population: dict[str, list[str]] = {}
    for qid in ids:
        q = bench.questions[qid]
        if q.evidence:
            population.setdefault(_abbrev(q.question_type), []).append(qid)
    info: dict[str, Any] = {
        "mode": str(mode),
        "population": {t: len(v) for t, v in sorted(population.items())},
        "confidence": float(mcfg.confidence),
    }
    if str(mode) == "auto":
        try:
            sizes = plan_sizes(
                info["population"],
                margin=float(mcfg.margin),
                confidence=info["confidence"],
                planning_sd=float(mcfg.planning_sd),
            )
        except ValueError as exc:
            raise ConfigError(f"memory.margin / memory.confidence / memory.planning_sd: {exc}") from None
        chosen = sample_by_type(population, sizes, seed)
        info |= {"margin": float(mcfg.margin), "planning_sd": float(mcfg.planning_sd)}
    elif str(mode) == "all" or not int(mode):
        chosen = sorted(ids)
    else:
        chosen = sample_ids(bench, ids, int(mode))
    picked = set(chosen)
    info["sample"] = {t: sum(q in picked for q in v) for t, v in sorted(population.items())}
    return chosen, info


def make_retriever(name: str, ctx: RetrievalContext):
    """The retriever ``memory.retrievers`` names (a component of kind ``retriever``), as diagnose
    runs it (:meth:`for_diagnostics`: the shared encoder, the image options)."""
    return find_component("retriever", name).for_diagnostics(ctx)


def _adapter_options(name: str, mcfg: MemorySettings) -> dict[str, Any]:
    if name == "caption":
        if not mcfg.caption:
            raise ConfigError("memory.adapters has 'caption' but memory.caption (backend options) is not set")
        return dict(mcfg.caption)
    if name == "ocr":
        return {"progress": True, **mcfg.ocr.model_dump()}
    return {}


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    mcfg: MemorySettings = cfg.memory
    bench = open_benchmark(cfg, paths)
    ds_hash = bench.dataset_hash()
    built = bench.lengths()
    lengths = [str(x) for x in mcfg.lengths] or built
    missing = [ln for ln in lengths if ln not in built]
    if missing:
        raise ConfigError(f"memory.lengths {missing} are not in the benchmark (built: {built})")
    lengths = sorted(lengths, key=length_tokens)
    chosen, sampling = choose_questions(bench, question_ids(bench, str(mcfg.subset)), mcfg, int(cfg.data.seed))
    ids = set(chosen)
    questions = bench.questions
    truth_of = truth_lookup(bench) if bench.kind == "built" else None
    items = {ln: [it for it in bench.items(ln) if it.question_id in ids] for ln in lengths}
    if not any(items.values()):
        raise DataError(f"diagnose: no items of the {mcfg.subset} question set at {', '.join(lengths)}")

    # 1. adapters: every image of the histories, once per adapter (cached on disk)
    paths_of: dict[str, Path] = {}
    for its in items.values():
        for it in its:
            for sha in it.image_ids:
                if sha not in paths_of:
                    paths_of[sha] = it.resolve_image(sha)
    shas = sorted(paths_of)
    # adapters see an image by its content hash, as the agents do (one cache entry per image): a
    # built benchmark's image ids are that hash already, an official release's are file paths
    inputs = [ImageInput(i if _SHA256.fullmatch(i) else sha256_file(paths_of[i]), paths_of[i]) for i in shas]
    texts: dict[str, dict[str, str]] = {}
    adapter_info: dict[str, dict] = {}
    run_stats: dict[str, dict] = {}
    for name in [str(a) for a in mcfg.adapters]:
        if name == "oracle_caption" and truth_of is None:
            log.warning("diagnose: oracle_caption skipped (an official release has no image ground truth)")
            continue
        if getattr(find_component("adapter", name), "gives_paths", False):
            raise ConfigError(f"memory.adapters: {name!r} stores images, not text; diagnose text adapters")
        adapter = open_adapter(name, _adapter_options(name, mcfg), cache_root=paths.cache, benchmark=bench)
        try:
            texts[name] = dict(zip(shas, adapter.describe_images(inputs)))
        finally:
            getattr(adapter, "close", lambda: None)()  # OCR worker processes
        info = {"id": adapter.id, "upper_bound": bool(getattr(adapter, "upper_bound", False)), "images": len(shas)}
        # run statistics (cache hits, throughput) differ between runs: logged and sent to MLflow,
        # never written into the (deterministic) outputs
        run_stats[name] = dict(getattr(adapter, "stats", {}))
        ips = getattr(adapter, "images_per_s", None)
        if ips:
            run_stats[name]["images_per_s"] = round(ips, 3)
        adapter_info[name] = info
        log.info("diagnose: adapter %s: %d images (%s)", adapter.id, len(shas), run_stats[name])

    # 2. retrieval over each question's history
    ctx = RetrievalContext(
        paths_of.__getitem__,
        mcfg.image_checkpoint,
        mcfg.image_model,
        cache_dir=paths.cache / "memory" / "embeddings",
        dense_precision=str(mcfg.dense_precision),
    )
    per_q: list[dict] = []
    retriever_ids: dict[str, str] = {}
    before = bool(mcfg.temporal_filter)
    depth = int(mcfg.depth)
    ks = [int(k) for k in mcfg.ks]
    work = [(k, a) for k in [str(x) for x in mcfg.retrievers] for a in texts]
    total = sum(len([it for it in items[ln] if it.evidence_sessions]) for ln in lengths) * len(work)
    # shown in logs too (as the adapters' bars are): the dense encoder's first pass takes minutes at paper scale
    bar = tqdm(total=total, desc="diagnose: retrieval", unit="q", disable=total < 2, dynamic_ncols=True, mininterval=5)
    try:
        for kind, adapter in work:
            r = make_retriever(kind, ctx)
            retriever_ids[kind] = r.id
            for ln in lengths:
                for it in items[ln]:
                    ev = [s.session_id for s in it.evidence_sessions]
                    if not ev:
                        continue
                    q = it.question
                    docs = session_docs(it.sessions, texts[adapter], granularity=str(mcfg.granularity))
                    r.index(docs)
                    hits = r.search(q.question, depth, before=q.question_date if before else None)
                    ranked = session_ranking(hits)
                    m = retrieval_metrics(ranked, ev, ks)
                    per_q.append(
                        {
                            "retriever": kind,
                            "adapter": adapter,
                            "length": ln,
                            "question_id": q.question_id,
                            "type": _abbrev(q.question_type),
                            "n_sessions": len(it.sessions),
                            "n_evidence": len(set(ev)),
                            **{k: round(v, 6) for k, v in m.items()},
                            "top10": ranked[:10],
                        }
                    )
                    bar.update()
    finally:
        bar.close()
    encoder = ctx.made_encoder
    if encoder is not None:
        run_stats["dense_encoder"] = {"encoded": encoder.encoded, "cache_hits": encoder.cache_hits}
        log.info("diagnose: dense encoder %s: %s", encoder.id, run_stats["dense_encoder"])
    per_q.sort(key=lambda r: (r["retriever"], r["adapter"], length_tokens(r["length"]), r["question_id"]))
    agg = aggregate(per_q, ks, sampling["population"], sampling["confidence"])

    # 3. storage fidelity (length-independent: the stored text of each evidence image)
    fid = storage_fidelity(
        [questions[i] for i in sorted(ids) if i in questions],
        texts,
        truth_of,
        {a: i["id"] for a, i in adapter_info.items()},
    )

    out = paths.reports / OUT
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*"):
        if stale.is_file():
            stale.unlink()
    config = section(cfg, "memory")["memory"]
    header = {
        "dataset_hash": ds_hash,
        "config": config,
        "questions": len(ids),
        "sampling": sampling,
        "lengths": lengths,
        "adapters": adapter_info,
        "retrievers": retriever_ids,
    }
    write_json(out / "retrieval.json", {**header, "aggregates": agg})
    write_json(out / "fidelity.json", {**header, **fid})
    (out / "per_question.jsonl").write_text("".join(canonical_json(r) + "\n" for r in per_q))
    metrics = dvc_metrics(agg, fid)
    write_json(out / "metrics.json", metrics)
    csv = ["retriever,adapter,length,recall_at_10,upper_bound"]
    for row in agg:
        if row["type"] == "all":
            ub = adapter_info[row["adapter"]]["upper_bound"]
            csv.append(f"{row['retriever']},{row['adapter']},{row['length']},{row['recall@10']:.6f},{str(ub).lower()}")
    (out / "recall_by_length.csv").write_text("\n".join(csv) + "\n")
    plot_recall(agg, lengths, adapter_info, out / "recall_at_10_by_length.png")
    (out / "summary.md").write_text(summary_md(header, agg, fid))
    log.info("diagnose: %d question-retrievals, reports in %s", len(per_q), out)
    print(summary_md(header, agg, fid, brief=True))
    if cfg.tracking.enabled:
        ips = {a: st["images_per_s"] for a, st in run_stats.items() if "images_per_s" in st}
        log_mlflow(paths, cfg, ds_hash, config, {**metrics, "images_per_s": ips}, out)


def aggregate(per_q: list[dict], ks, population: dict[str, int] | None = None, confidence: float = 0.95) -> list[dict]:
    """Mean metrics per (retriever, adapter, length, type) and over all types, each with
    ``recall@10_ci``: the half-width of the ``confidence`` interval of recall@10 (0 for a type
    diagnosed whole; :mod:`memlens.eval.memory.sampling`). ``population``: questions with evidence
    per type in the diagnostics set (default: the rows' own, i.e. a census). Over all types a sample
    is the stratified estimate; the whole set, the plain mean."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in per_q:
        groups[(r["retriever"], r["adapter"], r["length"], r["type"])].append(r)
    keys = (*(f"recall@{k}" for k in ks), "ndcg@10", "mrr")
    order = {TYPE_ABBREV[t]: i for i, t in enumerate(QUESTION_TYPES)} | {"all": -1}
    cells: dict[tuple, dict] = {}
    by_all: dict[tuple, dict[str, list[dict]]] = defaultdict(dict)
    for (kind, adapter, ln, t), rows in groups.items():
        pop = (population or {}).get(t, len(rows))
        m = mean_rows([{k: r[k] for k in keys} for r in rows])
        hw = half_width([r["recall@10"] for r in rows], pop, confidence) if "recall@10" in keys else None
        cells[(kind, adapter, ln, t)] = _row(kind, adapter, ln, t, len(rows), m, hw)
        by_all[(kind, adapter, ln)][t] = rows
    for (kind, adapter, ln), per_type in by_all.items():
        rows = [r for rs in per_type.values() for r in rs]
        pops = {t: (population or {}).get(t, len(rs)) for t, rs in per_type.items()}
        if all(len(rs) >= pops[t] for t, rs in per_type.items()):  # every type whole: the plain mean
            m, hw = mean_rows([{k: r[k] for k in keys} for r in rows]), 0.0
        else:
            m = {
                k: stratified({t: [r[k] for r in rs] for t, rs in per_type.items()}, pops, confidence)[0] for k in keys
            }
            hw = stratified({t: [r["recall@10"] for r in rs] for t, rs in per_type.items()}, pops, confidence)[1]
        cells[(kind, adapter, ln, "all")] = _row(kind, adapter, ln, "all", len(rows), m, hw)
    return [cells[k] for k in sorted(cells, key=lambda c: (c[0], c[1], length_tokens(c[2]), order.get(c[3], 99)))]


def _row(kind: str, adapter: str, ln: str, t: str, n: int, m: dict, hw: float | None) -> dict:
    return (
        {"retriever": kind, "adapter": adapter, "length": ln, "type": t, "n": n}
        | {k: round(v, 6) for k, v in m.items()}
        | {"recall@10_ci": None if hw is None else round(hw, 6)}
    )


def storage_fidelity(questions, texts: dict[str, dict[str, str]], truth_of, ids: dict[str, str]) -> dict:
    """Per adapter: share of answer-critical facts present in the stored text, overall, per type
    and per image family; and the per-question detail."""
    if truth_of is None:
        return {"fidelity": {}, "per_question": [], "note": "no image ground truth (official release)"}
    facts_of = {}
    for q in questions:
        f = answer_critical_facts(q.details.get("derivation"), q.details.get("image_ids", []), truth_of)
        if f:
            facts_of[q.question_id] = (q, f)
    res: dict[str, dict] = {}
    detail = []
    for adapter, stored in texts.items():
        tot: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        fam: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for qid in sorted(facts_of):
            q, f = facts_of[qid]
            present, n, det = fidelity(f, stored)
            for key in ("all", _abbrev(q.question_type)):
                tot[key][0] += present
                tot[key][1] += n
            for d in det:
                family = str((truth_of(d["image"]) or {}).get("family", "unknown"))
                fam[family][0] += d["present"]
                fam[family][1] += 1
            detail.append(
                {
                    "adapter": adapter,
                    "question_id": qid,
                    "type": _abbrev(q.question_type),
                    "present": present,
                    "facts": n,
                }
            )
        res[adapter] = {
            "id": ids.get(adapter, adapter),
            "upper_bound": adapter == "oracle_caption",
            "per_type": {
                k: {"present": p, "facts": n, "fidelity": round(p / n, 6) if n else None} for k, (p, n) in tot.items()
            },
            "per_family": {
                k: {"present": p, "facts": n, "fidelity": round(p / n, 6) if n else None}
                for k, (p, n) in sorted(fam.items())
            },
        }
    return {"fidelity": res, "questions_with_facts": len(facts_of), "per_question": detail}


def dvc_metrics(agg: list[dict], fid: dict) -> dict:
    out: dict[str, Any] = {}
    for row in agg:
        if row["type"] != "all":
            continue
        cell = out.setdefault(row["retriever"], {}).setdefault(row["adapter"], {})
        cell[row["length"]] = {k: row[k] for k in ("recall@1", "recall@10", "mrr") if k in row}
    out["fidelity"] = {a: v["per_type"].get("all", {}).get("fidelity") for a, v in fid.get("fidelity", {}).items()}
    return out


def _mlflow_name(*parts: str) -> str:
    import re

    return "__".join(re.sub(r"[^A-Za-z0-9_.-]", "_", p.replace("@", "_at_")) for p in parts)


def log_mlflow(paths: Paths, cfg, ds_hash: str, config: dict, metrics: dict, out: Path) -> None:
    import json

    from memlens.eval.tracking import RUN_KEY, Tracker, flatten_params

    tracker = Tracker(paths.root, cfg.tracking, ds_hash)
    flat: dict[str, float] = {}
    for kind, by_adapter in metrics.items():
        if kind in ("fidelity", "images_per_s"):
            for a, v in by_adapter.items():
                if v is not None:
                    flat[_mlflow_name(kind, a)] = float(v)
            continue
        for a, by_len in by_adapter.items():
            for ln, m in by_len.items():
                for k, v in m.items():
                    flat[_mlflow_name(k, kind, a, ln)] = float(v)
    params = flatten_params({"memory": config})
    key = hashlib.sha256(json.dumps({"diagnostics": "retrieval", "dataset_hash": ds_hash}).encode()).hexdigest()
    mlflow = tracker.mlflow
    run = tracker.find(key)
    if run is not None and (run.data.params != params or set(run.data.metrics) - set(flat)):
        tracker.client.delete_run(run.info.run_id)  # params are immutable: a changed config makes a new run
        run = None
    tags = {RUN_KEY: key, "memlens.role": "retrieval_diagnostics", "memlens.dataset_hash": ds_hash}
    with mlflow.start_run(
        run_id=run.info.run_id if run else None,
        experiment_id=tracker.experiment_id,
        run_name="retrieval diagnostics",
        tags=tags,
    ) as r:
        if run is None:
            mlflow.log_params(params)
        mlflow.log_metrics(flat)
        run_id = r.info.run_id
    tracker.log_artifacts(run_id, [(p, "retrieval") for p in sorted(out.iterdir()) if p.is_file()])


# ----------------------------------------------------------------------------------- figures, md
def plot_recall(agg: list[dict], lengths: list[str], adapter_info: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted({r["retriever"] for r in agg})
    fig, axes = plt.subplots(1, max(1, len(kinds)), figsize=(4.6 * max(1, len(kinds)), 3.4), squeeze=False)
    x = list(range(len(lengths)))
    for ax, kind in zip(axes.flat, kinds):
        for adapter in sorted({r["adapter"] for r in agg if r["retriever"] == kind}):
            pts = {
                r["length"]: r["recall@10"]
                for r in agg
                if r["retriever"] == kind and r["adapter"] == adapter and r["type"] == "all"
            }
            label = adapter + (" (upper bound)" if adapter_info.get(adapter, {}).get("upper_bound") else "")
            ax.plot(x, [100 * pts.get(ln, float("nan")) for ln in lengths], marker="o", label=label)
        ax.set_title(f"{kind}: evidence recall@10")
        ax.set_xticks(x, [ln.upper() for ln in lengths])
        ax.set_ylim(-2, 102)
        ax.set_ylabel("recall@10 (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def _pm(row: dict) -> str:
    """recall@10 with its interval half-width when it is sampled (``93.1 ± 4.2``)."""
    hw = row.get("recall@10_ci")
    return _pct(row["recall@10"]) + ("" if not hw else f" ± {100 * hw:.1f}")


def is_sample(header: dict) -> bool:
    """Whether the diagnosed questions are a sample of the set (``memory.sample=all`` or 0, or a plan
    that takes every question, is the whole set)."""
    sampling = header.get("sampling")
    if sampling:
        return sampling["sample"] != sampling["population"]
    return str(header["config"].get("sample") or 0) not in ("0", "all")


def sampling_md(sampling: dict | None) -> list[str]:
    """How the questions were chosen: the sample per type against the set, the target interval."""
    if not sampling:
        return []
    per_type = ", ".join(f"{t} {sampling['sample'].get(t, 0)}/{n}" for t, n in sampling["population"].items())
    conf = f"{sampling['confidence']:.0%}"
    if sampling["mode"] == "auto":
        text = (
            f"Questions with evidence diagnosed per type: {per_type}: a seeded sample stratified by type, each "
            f"type sized for a {conf} interval of ±{100 * sampling['margin']:.0f} points on its recall@10 at a "
            f"per-question standard deviation of at most {sampling['planning_sd']:g}"
            f"{', the most a score in [0, 1] can have, so every cell reaches it' if sampling['planning_sd'] >= 0.5 else ''}"
            " (Student t, finite-population corrected). "
            "The interval reached is shown as ±; `memory.sample=all` diagnoses every question."
        )
    else:
        text = f"Questions with evidence diagnosed per type: {per_type}; ± = {conf} interval of recall@10."
    return [text, ""]


def summary_md(header: dict, agg: list[dict], fid: dict, brief: bool = False) -> str:
    lines = [
        "# Retrieval and storage-fidelity diagnostics",
        "",
        f"Benchmark `{header['dataset_hash'][:12]}`, {header['questions']} questions "
        f"({header['config']['subset']} set{', a seeded sample' if is_sample(header) else ''}), "
        f"lengths {', '.join(header['lengths'])}; "
        f"temporal filter {'on' if header['config']['temporal_filter'] else 'off'}, "
        f"granularity {header['config']['granularity']}. `oracle_caption` is an UPPER BOUND (ground truth as text).",
        "",
        *sampling_md(header.get("sampling")),
        "## Evidence recall (all types, %)",
        "",
        "| retriever | adapter | length | n | R@1 | R@3 | R@5 | R@10 | ± R@10 | NDCG@10 | MRR |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in agg:
        if r["type"] == "all":
            lines.append(
                f"| {r['retriever']} | {r['adapter']} | {r['length']} | {r['n']} | "
                + " | ".join(_pct(r.get(k)) for k in METRIC_KEYS[:4])
                + f" | {_pct(r.get('recall@10_ci'))} | "
                + " | ".join(_pct(r.get(k)) for k in METRIC_KEYS[4:])
                + " |"
            )
    types = [TYPE_ABBREV[t] for t in QUESTION_TYPES if any(r["type"] == TYPE_ABBREV[t] for r in agg)]
    if not brief:
        lines += [
            "",
            "## Recall@10 per question type (%)",
            "",
            "| retriever | adapter | length | " + " | ".join(types) + " |",
        ]
        lines.append("|---|---|---|" + "---|" * len(types))
        cell = {(r["retriever"], r["adapter"], r["length"], r["type"]): r for r in agg}
        for r in agg:
            if r["type"] == "all":
                k = (r["retriever"], r["adapter"], r["length"])
                lines.append(
                    f"| {k[0]} | {k[1]} | {k[2]} | "
                    + " | ".join(_pm(cell[(*k, t)]) if (*k, t) in cell else "-" for t in types)
                    + " |"
                )
    f = fid.get("fidelity", {})
    if f:
        ftypes = [TYPE_ABBREV[t] for t in QUESTION_TYPES if any(TYPE_ABBREV[t] in v["per_type"] for v in f.values())]
        lines += [
            "",
            f"## Storage fidelity: answer-critical facts present in the stored text (%, {fid['questions_with_facts']} questions)",
            "",
            "| adapter | all | " + " | ".join(ftypes) + " |",
            "|---|---|" + "---|" * len(ftypes),
        ]
        for a, v in f.items():
            pt = v["per_type"]
            label = a + (" (upper bound)" if v["upper_bound"] else "")
            lines.append(
                f"| {label} | {_pct(pt.get('all', {}).get('fidelity'))} | "
                + " | ".join(_pct(pt.get(t, {}).get("fidelity")) for t in ftypes)
                + " |"
            )
        if not brief:
            fams = sorted({k for v in f.values() for k in v["per_family"]})
            lines += ["", "### Per image family (%)", "", "| adapter | " + " | ".join(fams) + " |"]
            lines.append("|---|" + "---|" * len(fams))
            for a, v in f.items():
                lines.append(
                    f"| {a} | " + " | ".join(_pct(v["per_family"].get(k, {}).get("fidelity")) for k in fams) + " |"
                )
    return "\n".join(lines) + "\n"
