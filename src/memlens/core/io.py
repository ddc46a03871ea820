"""Canonical JSON and JSONL reading/writing.

Artifacts are written with sorted keys, fixed separators and a trailing newline so the same content
gives the same bytes. Readers report the file, line and field of any problem.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from memlens.core.errors import DataError
from memlens.core.hashmemo import active_memo

try:  # orjson parses 3-5x faster; the written bytes never depend on it (writers use json)
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    from json import loads as _loads

log = logging.getLogger(__name__)

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


class _FileVersion:
    """A file's identity and version (device, inode, size, mtime, ctime) with one of its names: equal
    and hashed by the version alone, so the names of one file (hard links) share a memo entry."""

    __slots__ = ("path", "version")

    def __init__(self, path: str, version: tuple[int, int, int, int, int]):
        self.path, self.version = path, version

    def __hash__(self) -> int:
        return hash(self.version)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FileVersion) and other.version == self.version


@lru_cache(maxsize=1 << 16)
def _sha256_of_version(key: _FileVersion) -> str:
    """The hash of the file at ``key`` (the memo's store): from the project's persistent memo
    (:mod:`memlens.core.hashmemo`) when it has this version, else read; a version still the file's
    after the read is remembered there."""
    memo = active_memo()
    if memo is not None and (known := memo.get(key.version)) is not None:
        return known
    started = time.time_ns()
    digest = sha256_file(key.path)
    if memo is not None:
        try:
            st = os.stat(key.path)
        except OSError:
            return digest
        if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) == key.version:
            memo.put(key.version, digest, hashed_at_ns=started)
    return digest


def sha256_file_memo(path: str | Path) -> str:
    """:func:`sha256_file`, memoised per process by the file's identity and version (device, inode,
    size, mtime and ctime in ns, from a ``stat`` on every call): a file read by several parts of one
    run (the release's image check, its content-addressed copy, the encoder's cache key) is hashed
    once, an edited one again. The key is the file, not its name: the names of one file (hard
    links, such as a content-addressed copy of an image) share one entry."""
    st = os.stat(path)
    return _sha256_of_version(
        _FileVersion(str(path), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    )


def remember_linked(path: str | Path, digest: str, before: os.stat_result) -> None:
    """Tell the persistent memo that ``path`` still holds the bytes hashed to ``digest`` when it
    had the version ``before``: a new hard link to a file moves its ctime, so its version changes
    though its bytes do not (the content-addressed image copies are such links). Only done if the
    file is the same one with the same size and mtime, and ``before`` had settled
    (:data:`memlens.core.hashmemo.SETTLE_S`): any write since would have moved the mtime."""
    memo = active_memo()
    if memo is None:
        return
    try:
        st = os.stat(path)
    except OSError:
        return
    same = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == (
        before.st_dev,
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    if same:
        settled_ns = max(before.st_mtime_ns, before.st_ctime_ns)
        memo.put((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns), digest, settled_ns=settled_ns)


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
    text = json.dumps(
        obj, sort_keys=True, indent=indent, ensure_ascii=False, separators=(",", ": ") if indent else (",", ":")
    )
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


def enumerate_jsonl(path: str | Path, *, partial_tail: str = "error") -> Iterator[tuple[int, Any]]:
    """Stream ``(line number, object)`` for each line of a JSONL file (blank lines are skipped).

    A malformed line raises :class:`DataError` naming ``file:line``. The one exception is a *partial
    tail*: a last line without its newline that does not parse, which is what a crash while appending
    leaves. ``partial_tail="error"`` (default) treats it like any malformed line; ``"skip"`` logs a
    warning naming the file and line and stops there (append-only stores resume after it).
    """
    if partial_tail not in ("error", "skip"):
        raise ValueError(f"partial_tail must be 'error' or 'skip', not {partial_tail!r}")
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    with open(path, "rb") as fh:
        for i, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = _loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                if partial_tail == "skip" and not raw.endswith(b"\n"):
                    log.warning(
                        "%s:%d: ignoring a partial last line (%d bytes; an interrupted write)", path, i, len(raw)
                    )
                    return
                raise DataError(f"{path}:{i}: not valid JSON ({exc})") from None
            yield i, obj


def iter_jsonl(path: str | Path, *, partial_tail: str = "error") -> Iterator[Any]:
    """Stream one object per line of a JSONL file; see :func:`enumerate_jsonl`."""
    for _, obj in enumerate_jsonl(path, partial_tail=partial_tail):
        yield obj


def read_records(path: str | Path, cls: type[T], *, partial_tail: str = "error", nonempty: bool = False) -> list[T]:
    """Every line of a JSONL file as a record of ``cls`` (validated; errors name ``file:line``).
    ``nonempty``: a file without any record is a :class:`DataError` (a stage's input, e.g. questions)."""
    out = [
        cls.from_dict(row, where=f"{path}:{i}")  # type: ignore[attr-defined]
        for i, row in enumerate_jsonl(path, partial_tail=partial_tail)
    ]
    if nonempty and not out:
        raise DataError(f"{path}: holds no {cls.__name__} records (an empty file): run the stage that writes it again")
    return out
