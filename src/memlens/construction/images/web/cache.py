"""The candidate cache of the web source: every fetch outcome, keyed by URL.

Layout under its root (``<Paths.cache>/web``, outside DVC so it survives checkouts and re-runs)::

    fetches/<aa>/<sha256(kind + url)>.json   outcome: ok, reason, status, content type, sizes, fetch time,
                                             content hash, pHash
    objects/<sha256>.<ext>                   image bytes and page bodies, by the hash of their content

Failures are cached too (a refused or timed-out URL is not asked again unless ``retry_failed``), so
a re-run with the same configuration sends no request at all. Every path is built from hashes and
checked to stay under the root (no name from the web ever becomes a path).
"""

from __future__ import annotations

import json
from pathlib import Path

from memlens.core.io import atomic_write_bytes, canonical_bytes, sha256_bytes
from memlens.core.store import safe_join


class CandidateCache:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    @staticmethod
    def key(kind: str, url: str) -> str:
        return sha256_bytes(f"{kind}\n{url}".encode())

    def _rec_path(self, kind: str, url: str) -> Path:
        k = self.key(kind, url)
        return safe_join(self.root, f"fetches/{k[:2]}/{k}.json")

    def get(self, kind: str, url: str) -> dict | None:
        p = self._rec_path(kind, url)
        if not p.is_file():
            return None
        try:
            rec = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # a torn or foreign file is fetched again
        if rec.get("ok") and not self.object_path(rec["sha256"], rec["ext"]).is_file():
            return None
        return rec

    def put(self, kind: str, url: str, rec: dict, data: bytes | None = None) -> dict:
        if data is not None:
            sha = sha256_bytes(data)
            rec = {**rec, "sha256": sha}
            path = self.object_path(sha, rec["ext"])
            if not path.is_file():
                atomic_write_bytes(path, data)
        atomic_write_bytes(self._rec_path(kind, url), canonical_bytes(rec))
        return rec

    def object_path(self, sha: str, ext: str) -> Path:
        if not (len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)) or not ext.isalnum():
            raise ValueError(f"not a content hash/extension: {sha!r}.{ext!r}")
        return safe_join(self.root, f"objects/{sha}.{ext}")

    def read(self, rec: dict) -> bytes:
        return self.object_path(rec["sha256"], rec["ext"]).read_bytes()


__all__ = ["CandidateCache"]
