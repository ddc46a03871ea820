"""Append-only, crash-safe prediction store.

One JSONL file per (system, mode, length): ``data/predictions/<system>/<mode>/<length>.jsonl``.
Each finished item is appended as one line and flushed to disk before the next is recorded, so a
``kill -9`` loses at most the requests in flight. On open, a partial last line (a crash in the
middle of a write) is cut off. Reading keeps the last record per question id, so retried failures
never duplicate an item; :meth:`PredictionStore.compact` rewrites the file sorted by question id
with one line per item (deterministic content). Volatile call statistics (latency, attempts) go to
a sidecar ``data/calls/<system>/<mode>/<length>.jsonl`` so the predictions file itself is reproducible.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from memlens.core.schema import Prediction
from memlens.core.io import atomic_write_bytes, canonical_json, iter_jsonl


def _repair_tail(path: Path) -> int:
    """Truncate a partial last line; returns the number of bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return 0
        # find the last newline
        pos = size - 1
        chunk = 65536
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            buf = fh.read(pos - start)
            idx = buf.rfind(b"\n")
            if idx >= 0:
                cut = start + idx + 1
                fh.truncate(cut)
                return size - cut
            pos = start
        fh.truncate(0)
        return size


class JsonlAppender:
    def __init__(self, path: Path, fsync: bool = True):
        self.path = path
        self.fsync = fsync
        path.parent.mkdir(parents=True, exist_ok=True)
        _repair_tail(path)
        self._fh = open(path, "ab")

    def append(self, obj: dict) -> None:
        self._fh.write((canonical_json(obj) + "\n").encode("utf-8"))
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def read_lines(path: Path) -> list[dict]:
    """Every record of an append-only JSONL file; a partial last line (a crash while appending) is
    skipped with a warning, every other malformed line is an error naming ``file:line``."""
    if not path.exists():
        return []
    return list(iter_jsonl(path, partial_tail="skip"))


class PredictionStore:
    def __init__(self, root: str | Path, system: str, mode: str, length: str, *, fsync: bool = True,
                 calls_root: str | Path | None = None):
        self.dir = Path(root) / system / mode
        self.path = self.dir / f"{length}.jsonl"
        # volatile per-call statistics live outside the (DVC-tracked, reproducible) predictions folder
        croot = Path(calls_root) if calls_root else Path(root).parent / "calls"
        self.calls_path = croot / system / mode / f"{length}.jsonl"
        self.system, self.mode, self.length = system, mode, length
        self.fsync = fsync
        self._appender: JsonlAppender | None = None
        self._calls: JsonlAppender | None = None

    def load(self) -> dict[str, Prediction]:
        out: dict[str, Prediction] = {}
        for i, row in enumerate(read_lines(self.path)):
            p = Prediction.from_dict(row, where=f"{self.path}:{i + 1}")
            prev = out.get(p.question_id)
            if prev is None or p.ok or not prev.ok:
                out[p.question_id] = p
        return out

    def done_ids(self) -> set[str]:
        return {q for q, p in self.load().items() if p.ok}

    def append(self, pred: Prediction, call_stats: dict | None = None) -> None:
        if self._appender is None:
            self._appender = JsonlAppender(self.path, self.fsync)
        self._appender.append(pred.to_dict())
        if call_stats is not None:
            if self._calls is None:
                self._calls = JsonlAppender(self.calls_path, fsync=False)
            self._calls.append({"question_id": pred.question_id, **call_stats})

    def close(self) -> None:
        for a in (self._appender, self._calls):
            if a is not None:
                a.close()
        self._appender = self._calls = None

    def compact(self) -> int:
        """Rewrite sorted by question id, one line per item (last ok record wins)."""
        self.close()
        preds = self.load()
        lines = [canonical_json(preds[q].to_dict()) for q in sorted(preds)]
        atomic_write_bytes(self.path, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
        return len(lines)
