"""Canonical JSON and JSONL reading/writing.

Artifacts are written with sorted keys, fixed separators and a trailing newline so the same content
gives the same bytes. Readers report the file, line and field of any problem.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from memlens.core.errors import DataError, SchemaError

T = TypeVar("T")


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_bytes(obj: Any) -> bytes:
    return canonical_json(obj).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write via a temporary file and rename, so a crash never leaves a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_json(path: str | Path, obj: Any, *, indent: int | None = 2) -> None:
    text = json.dumps(obj, sort_keys=True, indent=indent, ensure_ascii=False,
                      separators=(",", ": ") if indent else (",", ":"))
    atomic_write_bytes(path, (text + "\n").encode("utf-8"))


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    lines = [canonical_json(r.to_dict() if hasattr(r, "to_dict") else r) for r in rows]
    atomic_write_bytes(path, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    return len(lines)


def read_json(path: str | Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason})") from None


def iter_jsonl(path: str | Path, *, skip_bad_tail: bool = False) -> Iterator[Any]:
    """Yield one object per line. With ``skip_bad_tail`` a truncated last line (a crash while
    appending) is ignored; any other malformed line raises :class:`DataError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    last = len(lines) - 1
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            yield json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if skip_bad_tail and i >= last - 1 and not raw.endswith(b"}\n"):
                return
            raise DataError(f"{path}:{i + 1}: not valid JSON ({exc})") from None


def read_records(path: str | Path, cls: type[T]) -> list[T]:
    out = []
    for i, row in enumerate(iter_jsonl(path)):
        try:
            out.append(cls.from_dict(row, where=f"{path}:{i + 1}"))  # type: ignore[attr-defined]
        except SchemaError:
            raise
    return out
