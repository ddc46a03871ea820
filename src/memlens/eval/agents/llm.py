"""The backbone of a memory agent: chat calls through :class:`memlens.core.http.OpenAICompatibleClient`
with a persistent call cache and per-question accounting.

* **One client for the run.** Every question's calls go through one client, whose semaphore caps
  the requests in flight at ``concurrency``; questions run as concurrent coroutines, so while one
  waits for the server the others compute or send.
* **Call cache.** Each answered call is stored in SQLite (``<cache>/agents/calls.sqlite``) under the
  SHA-256 of the request (model, decoding settings, messages; images are content-addressed paths).
  A crashed or repeated run re-sends nothing it already got an answer for: an agent that made 40
  memory-rewrite calls before the crash replays them from the cache and goes on. Failed calls are
  never cached.
* **Accounting.** A :class:`CallCounter` per question counts calls (cached or not), cache hits and
  usage tokens, for the prediction's memory statistics.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlens.core.errors import MemLensError
from memlens.core.io import canonical_bytes, canonical_json, sha256_bytes
from memlens.core.reqcache import open_sqlite

__all__ = ["AgentCallError", "Backbone", "CallCache", "CallCounter"]


class AgentCallError(MemLensError):
    """A backbone call failed after the client's retries (the question is recorded as failed)."""


@dataclass
class CallCounter:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: CallCounter) -> None:
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens


class CallCache:
    """``request hash -> {text, prompt_tokens, completion_tokens}`` in SQLite (WAL; one connection
    per thread; safe for several processes)."""

    _SCHEMA = "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, value TEXT NOT NULL)"

    def __init__(self, path: Path):
        self.path = Path(path)
        self._local = threading.local()
        self._conn()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:  # the project's SQLite set-up (core.reqcache), one connection per thread
            conn = open_sqlite(self.path, self._SCHEMA, what="agent call cache", hint="move it away")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> dict | None:
        row = self._conn().execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        import json

        return json.loads(row[0])

    def put(self, key: str, value: dict) -> None:
        conn = self._conn()
        conn.execute("INSERT OR REPLACE INTO calls (key, value) VALUES (?, ?)", (key, canonical_json(value)))
        conn.commit()

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM calls").fetchone()[0])


def _plain(messages: list[dict]) -> list[dict]:
    """Messages as plain JSON (image references are ``str`` subclasses)."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            blocks = []
            for b in content:
                if b.get("type") == "image_url":
                    ref = b["image_url"]["url"] if isinstance(b.get("image_url"), dict) else b.get("image_url")
                    blocks.append({"type": "image_url", "image_url": {"url": str(ref)}})
                else:
                    blocks.append(dict(b))
            content = blocks
        out.append({"role": m["role"], "content": content})
    return out


class Backbone:
    """Chat calls of one agent run (``settings``: the client keys of the agent's configuration)."""

    def __init__(self, settings: dict[str, Any], *, token_param: str = "max_tokens", cache: CallCache | None = None):
        from memlens.core.http import OpenAICompatibleConfig

        self.config = OpenAICompatibleConfig(**settings)
        self.token_param = token_param
        self.cache = cache
        self._client = None

    @property
    def client(self):
        if self._client is None:
            from memlens.core.http import OpenAICompatibleClient
            from memlens.core.images import ImageEncoder

            encoder = ImageEncoder(
                max_side=self.config.max_image_side,
                transport="url" if self.config.image_transport == "url" else "base64",
                cache_max_bytes=128 << 20,
            )
            self._client = OpenAICompatibleClient(self.config, image_encoder=encoder)
        return self._client

    def request_key(self, messages: list[dict], model: str, max_new_tokens: int) -> str:
        c = self.config
        return sha256_bytes(
            canonical_bytes(
                {
                    "model": model,
                    "max_new_tokens": max_new_tokens,
                    "temperature": c.temperature,
                    "top_p": c.top_p,
                    "seed": c.seed,
                    "extra_body": c.extra_body,
                    "messages": _plain(messages),
                }
            )
        )

    async def chat(
        self,
        messages: list[dict],
        counter: CallCounter,
        *,
        model: str | None = None,
        max_new_tokens: int | None = None,
        what: str = "call",
    ) -> str:
        """The answer text of one call (from the cache when this exact request was answered)."""
        model = model or self.config.model
        max_new = int(max_new_tokens or self.config.max_new_tokens)
        key = self.request_key(messages, model, max_new)
        counter.calls += 1
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                counter.cache_hits += 1
                counter.prompt_tokens += int(hit.get("prompt_tokens") or 0)
                counter.completion_tokens += int(hit.get("completion_tokens") or 0)
                return str(hit["text"])
        overrides: dict[str, Any] = {"model": model}
        if self.token_param == "max_completion_tokens":
            overrides.update(max_new_tokens=None, max_completion_tokens=max_new)
        else:
            overrides["max_new_tokens"] = max_new
        result = await self.client.complete(messages, **overrides)
        if not result.ok:
            raise AgentCallError(f"{what}: backbone {model!r} failed: {result.error}")
        text = result.text or ""
        counter.prompt_tokens += int(result.prompt_tokens or 0)
        counter.completion_tokens += int(result.completion_tokens or 0)
        if self.cache is not None:
            self.cache.put(
                key,
                {"text": text, "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens},
            )
        return text

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
