"""What a project's results store holds, read the way a test needs it (not a test module).

The store keeps one segment per writer (``results/<system>/segments/*.jsonl``, plus the
``answers.jsonl`` of a store written by an earlier MemLens); these helpers read every complete
record line of every file, without merging, so tests can count what was written.
"""

from __future__ import annotations

import json
from pathlib import Path


def store_files(root: Path) -> list[Path]:
    """Every file of the results store of the project at ``root`` (``.memlens_cache/results``)."""
    base = Path(root) / ".memlens_cache" / "results"
    return sorted([*base.glob("*/answers.jsonl"), *base.glob("*/segments/*.jsonl")])


def stored_records(root: Path) -> list[dict]:
    """Every complete record (a line with a request key) of the store, unmerged, file by file."""
    out = []
    for p in store_files(root):
        data = p.read_bytes()
        for line in data[: data.rfind(b"\n") + 1].splitlines():
            if line.strip():
                rec = json.loads(line)
                if "key" in rec:
                    out.append(rec)
    return out


def stored(root: Path) -> int:
    """How many records the store holds (answers and failures, duplicates included); cheap enough to
    poll (no JSON parsing: a record line is the only kind with a ``"key":"`` field)."""
    n = 0
    for p in store_files(root):
        data = p.read_bytes()
        n += data[: data.rfind(b"\n") + 1].count(b'"key":"')
    return n
