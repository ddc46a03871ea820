"""The environment every MemLens process runs with (one home): no telemetry, no analytics, no model
downloads, quiet tokenizers. :func:`apply` sets each variable unless the caller set it already (a
GPU job that may download sets ``HF_HUB_OFFLINE=0`` itself). The CLI, the sweep, the MLflow
tracker and the test suite call it; the Makefile exports the same values for the processes it
starts itself (pip, DVC, the MLflow UI)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import MappingProxyType

__all__ = ["ENVIRONMENT", "apply", "tokenizer_threads"]

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


_TOKENIZERS_LOCK = threading.Lock()


@contextmanager
def tokenizer_threads() -> Iterator[None]:
    """Let the Rust tokenizers encode a batch on every core inside this block (``encode_batch``
    reads ``TOKENIZERS_PARALLELISM`` at each call; the process default stays ``false``, so a process
    forked later never inherits a thread pool it would use: what the default guards against). The
    encodings do not depend on it."""
    key = "TOKENIZERS_PARALLELISM"
    with _TOKENIZERS_LOCK:
        before = os.environ.get(key)
        os.environ[key] = "true"
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = before
