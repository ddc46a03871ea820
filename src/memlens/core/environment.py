"""The environment every MemLens process runs with (one home): no telemetry, no analytics, no model
downloads, quiet tokenizers. :func:`apply` sets each variable unless the caller set it already (a
GPU job that may download sets ``HF_HUB_OFFLINE=0`` itself). The CLI, the sweep, the MLflow
tracker and the test suite call it; the Makefile exports the same values for the processes it
starts itself (pip, DVC, the MLflow UI)."""

from __future__ import annotations

import os
from types import MappingProxyType

__all__ = ["ENVIRONMENT", "apply"]

ENVIRONMENT = MappingProxyType(
    {
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "true",
        "DVC_NO_ANALYTICS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
)


def apply() -> None:
    """Set every variable of :data:`ENVIRONMENT` that is not set."""
    for key, value in ENVIRONMENT.items():
        os.environ.setdefault(key, value)
