"""A crash-safe SQLite cache of chat-completion requests (construction-time LLM calls).

One row per request key: the SHA-256 of the canonical JSON of (endpoint model id, the decoding
parameters that change the answer, the messages). A re-run of the same requests sends none.

* Every successful completion is committed at once (WAL journal, ``synchronous=NORMAL``), so a
  run killed half way re-sends only what it had not received.
* Failures are never cached (a re-run retries them).
* The API key, base URL and timeouts are not part of the key (they do not change the answer) and
  are never stored.
* A file that is not a cache (or a corrupt one) is a :class:`~memlens.core.errors.ConfigError`
  naming it; nothing is overwritten.

:func:`open_sqlite` is that set-up (WAL, ``synchronous=NORMAL``, the schema, the error naming the
file) for every SQLite cache of the project (this one, the LLM judge's).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlens.core.errors import ConfigError

__all__ = ["CachedCompletion", "RequestCache", "open_sqlite", "request_key"]


def open_sqlite(path: Path, schema: str, *, what: str, hint: str) -> sqlite3.Connection:
    """A crash-safe SQLite connection shared by threads: the folder made, WAL journal with
    ``synchronous=NORMAL`` (a committed row survives a killed process), ``schema`` applied. A file
    that is not a database is a :class:`ConfigError` naming it, ``what`` it should be and ``hint``
    (what to do); nothing is overwritten."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(schema)
        conn.commit()
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{path}: cannot open the {what} ({exc}); {hint}") from None
    return conn


def request_key(model: str, params: dict[str, Any], messages: list[dict]) -> str:
    """SHA-256 of the canonical JSON of ``[model, params, messages]`` (sorted keys, no spaces)."""
    payload = json.dumps([str(model), params, messages], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedCompletion:
    """A stored completion: the text and what it cost when it was first made."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    served_model: str | None


class RequestCache:
    """SQLite store of completions keyed by :func:`request_key` (thread-safe, one connection)."""

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS completions (
        key TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        tag TEXT NOT NULL,
        text TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        finish_reason TEXT,
        served_model TEXT,
        created_at REAL NOT NULL
    )"""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self.conn = open_sqlite(
            self.path, self._SCHEMA, what="request cache", hint="move it away or set generator.llm.cache_path"
        )

    def get(self, key: str) -> CachedCompletion | None:
        with self._lock:
            row = self.conn.execute(
                "SELECT text, prompt_tokens, completion_tokens, finish_reason, served_model FROM completions "
                "WHERE key = ?",
                (key,),
            ).fetchone()
        return None if row is None else CachedCompletion(row[0], int(row[1]), int(row[2]), row[3], row[4])

    def put(self, key: str, model: str, tag: str, c: CachedCompletion) -> None:
        """Store one completion and commit (a killed run keeps it)."""
        row = (key, model, tag, c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason, c.served_model)
        with self._lock, self.conn:
            self.conn.execute("INSERT OR REPLACE INTO completions VALUES (?,?,?,?,?,?,?,?,?)", (*row, time.time()))

    def __len__(self) -> int:
        with self._lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self.conn.close()
