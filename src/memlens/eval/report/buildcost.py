"""The construction cost of the benchmark under evaluation, for MLflow: the ``llm`` section of the
generate manifest (``generator=llm``: models, prompt version, answers, tokens and cost per build).
Template builds have none, and their MLflow params stay as they were."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["build_accounting"]


def build_accounting(generated: Path) -> dict[str, Any] | None:
    """``{"generator": "llm", "prompt_version", "models": {role: model}, "usage": {metric: value}}``
    from ``<generated>/manifest.json``, or None (no manifest, or a build without LLM requests)."""
    p = Path(generated) / "manifest.json"
    try:
        m = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    llm = m.get("llm") if isinstance(m, dict) else None
    if not isinstance(llm, dict):
        return None
    total = (llm.get("usage") or {}).get("total") or {}
    return {
        "generator": "llm",
        "prompt_version": llm.get("prompt_version"),
        "models": {r: v.get("model") for r, v in sorted((llm.get("models") or {}).items()) if isinstance(v, dict)},
        "usage": {k: total[k] for k in sorted(total)},
    }
