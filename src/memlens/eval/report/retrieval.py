"""The memory layer in the report: retrieval attribution of a run and the HTML sections of the
``diagnose`` stage's figures (``reports/retrieval/``) and of every run's attribution.

Attribution (:func:`write_attribution`) is written for a run whose predictions report what they
retrieved (``meta["retrieved"]``, memory agents): ``reports/judge/<system>/<mode>/retrieval_attribution.json``
with, per length, wrong answers split by the evidence recall of the retrieved sessions (< 0.5:
retrieval errors; see :func:`memlens.eval.memory.diagnostics.attribution`).
"""

from __future__ import annotations

import json
from pathlib import Path

from memlens.core.config import Paths, length_tokens
from memlens.core.io import write_json
from memlens.eval.memory.diagnostics import attribution, retrieved_sessions
from memlens.eval.report.html import Block, Section
from memlens.eval.report.tables import render_html
from memlens.eval.results import PredictionStore

ATTRIBUTION_FILE = "retrieval_attribution.json"


def write_attribution(paths: Paths, system: str, mode: str, by_length: dict, questions: dict) -> Path | None:
    """Attribution per length of a run that reports its retrieval; None (and no file) otherwise."""
    out: dict[str, dict] = {}
    for ln in sorted(by_length, key=length_tokens):
        preds = PredictionStore(paths.predictions, system, mode, ln).load()
        if not any(retrieved_sessions(p.meta) is not None for p in preds.values()):
            continue
        out[ln] = attribution(
            preds.values(), by_length[ln], lambda qid: questions[qid].evidence_session_ids if qid in questions else []
        )
    path = paths.reports / "judge" / system / mode / ATTRIBUTION_FILE
    if not out:
        if path.is_file():
            path.unlink()
        return None
    write_json(path, {"system": system, "mode": mode, "lengths": out})
    return path


def sections(reports: Path) -> list[Section]:
    """HTML sections: retrieval diagnostics (when ``reports/retrieval/`` exists) and attribution."""
    out: list[Section] = []
    rdir = reports / "retrieval"
    rfile, ffile = rdir / "retrieval.json", rdir / "fidelity.json"
    if rfile.is_file():
        r = json.loads(rfile.read_text())
        rows = [
            {**a, **{k.replace("@", "_at_"): a.get(k) for k in ("recall@1", "recall@5", "recall@10", "ndcg@10", "mrr")}}
            for a in r["aggregates"]
            if a["type"] == "all"
        ]
        spec = [
            ("retriever", "retriever", "str"),
            ("adapter", "adapter", "str"),
            ("length", "length", "str"),
            ("n", "questions", "int"),
            ("recall_at_1", "R@1 %", "pct"),
            ("recall_at_5", "R@5 %", "pct"),
            ("recall_at_10", "R@10 %", "pct"),
            ("ndcg_at_10", "NDCG@10 %", "pct"),
            ("mrr", "MRR %", "pct"),
        ]
        blocks = [
            Block(
                title="Evidence-session retrieval",
                note=(
                    f"{r['questions']} questions ({r['config']['subset']} set), each retrieved over its own history with "
                    "its question text; oracle_caption is an upper bound (ground truth written as text)."
                ),
                figures=[("retrieval/recall_at_10_by_length.png", "evidence recall@10 vs context length, per adapter")]
                if (rdir / "recall_at_10_by_length.png").is_file()
                else [],
                table_html=render_html(rows, spec),
                files=[f"retrieval/{p.name}" for p in sorted(rdir.iterdir()) if p.is_file()],
            )
        ]
        if ffile.is_file():
            f = json.loads(ffile.read_text())
            frows = []
            for a, v in f.get("fidelity", {}).items():
                row = {"adapter": a + (" (upper bound)" if v["upper_bound"] else "")}
                row |= {t: c.get("fidelity") for t, c in v["per_type"].items()}
                frows.append(row)
            types = sorted({t for v in f.get("fidelity", {}).values() for t in v["per_type"]} - {"all"})
            fspec = [("adapter", "adapter", "str"), ("all", "all %", "pct"), *[(t, f"{t} %", "pct") for t in types]]
            blocks.append(
                Block(
                    title="Storage fidelity",
                    note=(
                        "Share of the answer-critical facts (the values each question's derivation reads from its "
                        "evidence images) present in the text each adapter stored for that image."
                    ),
                    table_html=render_html(frows, fspec),
                )
            )
        out.append(Section("retrieval", "Memory: retrieval and storage fidelity (offline)", blocks=blocks))
    files = sorted((reports / "judge").glob(f"*/*/{ATTRIBUTION_FILE}")) if (reports / "judge").is_dir() else []
    arows = []
    for p in files:
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        for ln, a in data.get("lengths", {}).items():
            arows.append(
                {
                    "system": data["system"],
                    "mode": data["mode"],
                    "length": ln,
                    "n": a["n"],
                    "errors": a["errors"],
                    "retrieval_errors": a["retrieval_errors"],
                    "share": a["retrieval_error_share"],
                    "recall": a["mean_evidence_recall"],
                }
            )
    if arows:
        spec = [
            ("system", "system", "str"),
            ("mode", "mode", "str"),
            ("length", "length", "str"),
            ("n", "questions", "int"),
            ("errors", "errors", "int"),
            ("retrieval_errors", "recall < 0.5", "int"),
            ("share", "retrieval share of errors %", "pct"),
            ("recall", "mean evidence recall %", "pct"),
        ]
        out.append(
            Section(
                "attribution",
                "Memory agents: retrieval attribution of errors",
                intro="Wrong answers whose reported retrieval recalled under half of the evidence sessions.",
                blocks=[Block(table_html=render_html(arows, spec), files=[str(p.relative_to(reports)) for p in files])],
            )
        )
    return out
