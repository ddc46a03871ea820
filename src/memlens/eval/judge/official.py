"""Judge outputs in the layout of the official MEMLENS judge (facts §4.8), for comparison with
published numbers.

* ``judge_details.json``: a JSON array (no indentation), one object per judged row with exactly the
  keys of :data:`DETAIL_KEYS`; no prediction or reference text.
* ``judge_metrics.json`` (indent 2): ``overall``, ``by_question_type``, ``by_question_subtype``
  (``"<type>/<subtype>"``, empty subtype -> ``unknown``) and ``by_task_key``, group keys sorted, with
  the official per-group keys in the official order. Accuracies are 0-1 micro averages;
  percentages are 0-100 rounded to 1 decimal.

Difference from the official files, deliberately: rows whose verdict is a failure (``correct`` is
None: the prediction request or the judge call failed) are left out of both files instead of being
written as 0 (the official judge persists a failed call as 0; the official evaluation drops failed
predictions). :func:`write_official` returns how many rows were left out.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memlens.core.io import atomic_write_bytes
from memlens.core.schema import Prediction, Verdict
from memlens.eval.judge.parsing import prepare_prediction

__all__ = [
    "DETAIL_KEYS",
    "DIAGNOSTIC_KEYS",
    "official_diagnostics",
    "detail_rows",
    "official_metrics",
    "write_official",
]

DIAGNOSTIC_KEYS = (
    "original_len",
    "was_truncated",
    "is_degenerate",
    "hedging_count",
    "unique_5gram_ratio",
    "auto_zero",
    "parsed_words",
    "output_len",
)
DETAIL_KEYS = ("question_id", "question_type", "question_subtype", "task_key", "judge_score", *DIAGNOSTIC_KEYS)


def official_diagnostics(p: Prediction | None, *, max_words: int = 500) -> dict[str, Any]:
    """The per-item diagnostics of ``judge_details.json`` for one prediction (None: an empty one)."""
    text = p.prediction if (p is not None and p.ok) else None
    prep = prepare_prediction(text, max_words=max_words)
    return {
        "original_len": prep.original_len,
        "was_truncated": prep.was_truncated,
        "is_degenerate": bool(prep.is_degenerate),
        "hedging_count": int(prep.hedging_count or 0),
        "unique_5gram_ratio": float(prep.unique_5gram_ratio if prep.unique_5gram_ratio is not None else 1.0),
        "auto_zero": prep.auto_zero,
        "parsed_words": prep.parsed_words,
        "output_len": int((p.completion_tokens if p is not None else None) or 0),
    }


_DEFAULTS = {
    "original_len": 0,
    "was_truncated": False,
    "is_degenerate": False,
    "hedging_count": 0,
    "unique_5gram_ratio": 1.0,
    "auto_zero": False,
    "parsed_words": 0,
    "output_len": 0,
}


def detail_rows(
    verdicts: Iterable[Verdict], predictions: Mapping[str, Prediction] | None = None
) -> tuple[list[dict], int]:
    """``(rows, n_excluded)``: official detail rows of the scored verdicts, in the given order.

    Diagnostics come from the verdict's ``details`` (written by the judge stage); for older
    verdict files without them, from ``predictions`` (question id -> prediction) when given, else
    from the verdict's own ``auto_zero``/``truncated`` flags and defaults.
    """
    rows: list[dict] = []
    excluded = 0
    for v in verdicts:
        if v.correct is None:
            excluded += 1
            continue
        d = v.details or {}
        if "original_len" in d:
            diag = {k: d.get(k, _DEFAULTS[k]) for k in DIAGNOSTIC_KEYS}
        elif predictions is not None and v.question_id in predictions:
            diag = official_diagnostics(predictions[v.question_id])
        else:
            diag = {**_DEFAULTS, "auto_zero": bool(v.auto_zero), "was_truncated": bool(v.truncated)}
        if not v.task_key:
            from memlens.eval.judge.deterministic import task_key

            key = task_key(v.question_type, v.question_subtype, "", strict=False)
        else:
            key = v.task_key
        row = {
            "question_id": v.question_id,
            "question_type": v.question_type,
            "question_subtype": v.question_subtype or "",
            "task_key": key,
            "judge_score": int(bool(v.correct)),
        }
        row.update(diag)
        rows.append({k: row[k] for k in DETAIL_KEYS})
    return rows, excluded


def _pct(n: int, total: int) -> float:
    return round(n / total * 100, 1) if total else 0


def _summary(scores: list[int]) -> dict[str, Any]:
    yes = sum(scores)
    n = len(scores)
    return {"accuracy": yes / n if n else 0, "yes": yes, "no": n - yes, "count": n}


def official_metrics(rows: list[dict]) -> dict[str, Any]:
    """``judge_metrics.json`` content computed from detail rows (official keys and order)."""
    by_type: dict[str, list[int]] = defaultdict(list)
    by_sub: dict[str, list[int]] = defaultdict(list)
    by_key: dict[str, list[int]] = defaultdict(list)
    flags: dict[str, dict[str, int]] = defaultdict(lambda: {"degenerate": 0, "truncated": 0, "auto_zero": 0})
    for r in rows:
        s = int(r["judge_score"])
        qt = r["question_type"]
        by_type[qt].append(s)
        by_sub[f"{qt}/{r['question_subtype'] or 'unknown'}"].append(s)
        by_key[r["task_key"]].append(s)
        f = flags[qt]
        f["degenerate"] += bool(r["is_degenerate"])
        f["truncated"] += bool(r["was_truncated"])
        f["auto_zero"] += bool(r["auto_zero"])
    total = len(rows)
    yes = sum(int(r["judge_score"]) for r in rows)
    n_deg = sum(f["degenerate"] for f in flags.values())
    n_tr = sum(f["truncated"] for f in flags.values())
    n_az = sum(f["auto_zero"] for f in flags.values())
    types = {}
    for qt in sorted(by_type):
        sc = by_type[qt]
        f = flags[qt]
        types[qt] = {
            **_summary(sc),
            "degenerate_count": f["degenerate"],
            "truncated_count": f["truncated"],
            "auto_zero_count": f["auto_zero"],
            "degenerate_pct": _pct(f["degenerate"], len(sc)),
        }
    return {
        "overall": {
            "accuracy": yes / total if total else 0,
            "yes": yes,
            "no": total - yes,
            "total": total,
            "degenerate_count": n_deg,
            "degenerate_pct": _pct(n_deg, total),
            "truncated_count": n_tr,
            "truncated_pct": _pct(n_tr, total),
            "auto_zero_count": n_az,
            "auto_zero_pct": _pct(n_az, total),
        },
        "by_question_type": types,
        "by_question_subtype": {k: _summary(by_sub[k]) for k in sorted(by_sub)},
        "by_task_key": {k: _summary(by_key[k]) for k in sorted(by_key)},
    }


def write_official(
    out_dir: str | Path, verdicts: Iterable[Verdict], predictions: Mapping[str, Prediction] | None = None
) -> dict[str, Any]:
    """Write ``judge_details.json`` and ``judge_metrics.json`` into ``out_dir``.

    Returns ``{"rows", "excluded", "accuracy", "details", "metrics"}`` (paths as strings).
    """
    out = Path(out_dir)
    rows, excluded = detail_rows(verdicts, predictions)
    metrics = official_metrics(rows)
    details_path, metrics_path = out / "judge_details.json", out / "judge_metrics.json"
    atomic_write_bytes(details_path, (json.dumps(rows, ensure_ascii=False) + "\n").encode("utf-8"))
    atomic_write_bytes(metrics_path, (json.dumps(metrics, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return {
        "rows": len(rows),
        "excluded": excluded,
        "accuracy": metrics["overall"]["accuracy"],
        "details": str(details_path),
        "metrics": str(metrics_path),
    }
