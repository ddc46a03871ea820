"""Helpers shared by the evaluation-engine tests (not a test module)."""

from __future__ import annotations

import json
from pathlib import Path

from memlens.core.io import iter_jsonl

TINY = ("data.scale=tiny", "images.workers=1")


def openai_overrides(server, *extra: str, model: str = "fake-vl") -> list[str]:
    """Hydra overrides that point the generic openai_compatible config at ``server``."""
    return [
        "model=openai_compatible",
        f"model.base_url={server.base_url}",
        f"model.model={model}",
        "model.backoff_base_s=0.01",
        "model.backoff_max_s=0.05",
        "model.timeout_s=20",
        *extra,
    ]


def predictions(root: Path, system: str, mode: str = "standard") -> dict[str, dict[str, dict]]:
    """``{length: {question_id: row}}`` of a system's prediction files."""
    out: dict[str, dict[str, dict]] = {}
    for p in sorted((root / "data" / "predictions" / system / mode).glob("*.jsonl")):
        out[p.stem] = {r["question_id"]: r for r in iter_jsonl(p)}
    return out


def call_stats(root: Path, system: str, mode: str = "standard") -> dict[str, list[dict]]:
    """``{length: [results-store records]}`` of the system's requests (attempts, latency, ...), in the
    order they finished; ``system`` is matched against the view's request keys."""
    view = root / "data" / "predictions" / system / mode
    keys = {r["request_key"] for p in view.glob("*.jsonl") for r in iter_jsonl(p)}
    out: dict[str, list[dict]] = {}
    for p in sorted((root / ".memlens_cache" / "results").glob("*/answers.jsonl")):
        for line in p.read_text().splitlines():
            rec = json.loads(line)
            if rec["key"] in keys and rec["mode"] == mode:
                out.setdefault(rec["length"], []).append(rec)
    return out


def store_records(root: Path, mode: str = "standard") -> dict[str, dict[str, dict]]:
    """``{length: {question_id: record}}`` of every results-store record (an answer wins over a failure,
    else the last record): what was asked, whether or not a view was written."""
    out: dict[str, dict[str, dict]] = {}
    for p in sorted((root / ".memlens_cache" / "results").glob("*/answers.jsonl")):
        for line in p.read_text().splitlines():
            rec = json.loads(line)
            if rec["mode"] != mode:
                continue
            prev = out.setdefault(rec["length"], {}).get(rec["question_id"])
            if prev is None or rec["ok"] or not prev["ok"]:
                out[rec["length"]][rec["question_id"]] = rec
    return out


def request_key(body: dict) -> str:
    """The question text of a recorded chat request (its last user message)."""
    last = body["messages"][-1]["content"]
    text = last if isinstance(last, str) else "".join(b.get("text", "") for b in last)
    return text.split("\nQuestion: ", 1)[1].rstrip("\n")
