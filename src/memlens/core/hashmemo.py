"""A persistent memo of file hashes: file version -> SHA-256, shared by the processes of a project.

Every run checks each image it sends against its id (the SHA-256 of its bytes), and the encoder keys
its disk cache by that hash. In one process the hash is memoised per file version
(:func:`memlens.core.io.sha256_file_memo`); this memo keeps it across processes, so a second
evaluation (another system, length, mode or run) does not read and hash every image of the benchmark
again (at small scale about 0.2 ms per image, 90 ms per length; at paper scale, seconds).

A file version is what ``stat`` says of the file: device, inode, size, mtime and ctime (in ns). Any
write to the file changes its mtime and ctime, and user space cannot set ctime back, so an edited,
replaced or truncated file is always a miss and is hashed again. One race remains (as for git's
index): a file hashed in the same clock tick as its last change could, in principle, be replaced by
another file of the same size in that tick, on the same inode. So a version is stored only once the
file has been unchanged for :data:`SETTLE_S` seconds when it is hashed; younger files are hashed by
every process.

The memo is an SQLite file (``<Paths.cache>/file_hashes.sqlite``, named by the environment variable
``MEMLENS_HASH_MEMO``, which the stage runner sets and worker processes inherit), written in batches. It is a
cache, never a source of truth: any error opening, reading or writing it (a read-only or network
file system, a locked or damaged database) turns it off for the process, with one warning, and
files are simply hashed.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

log = logging.getLogger(__name__)

__all__ = ["ENV", "SETTLE_S", "FileHashMemo", "active_memo", "use_memo"]

#: a file version is stored only if the file was unchanged this long before it was hashed
SETTLE_S = 2.0
#: new entries are written in batches of this many (and at exit)
_BATCH = 256
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS file_sha256 (dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, "
    "ctime_ns INTEGER, sha256 TEXT NOT NULL, PRIMARY KEY (dev, ino, size, mtime_ns, ctime_ns)) WITHOUT ROWID"
)

Version = tuple[int, int, int, int, int]


class FileHashMemo:
    """The SQLite memo at ``path`` (created on first use); thread-safe; best effort (see the module)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple] = []
        self._broken = False
        self.hits = 0
        self.stored = 0

    def __repr__(self) -> str:
        return f"FileHashMemo({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            import sqlite3  # imported on first use (a process that hashes nothing never pays for it)

            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=2.0, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=OFF")  # a memo: losing the last batch only costs hashing
                db.execute(_SCHEMA)
                self._db = db
            except (sqlite3.Error, OSError) as exc:
                self._disable(exc)
        return self._db

    def _disable(self, exc: BaseException) -> None:
        import sqlite3

        self._broken = True
        log.warning(
            "file-hash memo %s is off for this process (%s: %s); images are hashed", self.path, type(exc).__name__, exc
        )
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    def get(self, version: Version) -> str | None:
        """The stored SHA-256 of ``version``, or None."""
        import sqlite3

        with self._lock:
            if self._db is None and not self.path.exists():
                return None  # nothing stored yet: a look-up creates nothing
            db = self._connect()
            if db is None:
                return None
            try:
                row = db.execute(
                    "SELECT sha256 FROM file_sha256 WHERE dev=? AND ino=? AND size=? AND mtime_ns=? AND ctime_ns=?",
                    version,
                ).fetchone()
            except sqlite3.Error as exc:
                self._disable(exc)
                return None
            if row is None:
                return None
            self.hits += 1
            return str(row[0])

    def put(
        self, version: Version, sha256: str, *, hashed_at_ns: int | None = None, settled_ns: int | None = None
    ) -> None:
        """Remember ``sha256`` for ``version`` if the file had settled when it was hashed: its last
        change (``settled_ns``, default the version's mtime or ctime) at least :data:`SETTLE_S`
        before ``hashed_at_ns`` (default now)."""
        now = time.time_ns() if hashed_at_ns is None else hashed_at_ns
        changed = max(version[3], version[4]) if settled_ns is None else settled_ns
        if now - changed < SETTLE_S * 1e9:
            return
        with self._lock:
            if self._broken:
                return
            self._pending.append((*version, sha256))
            if len(self._pending) >= _BATCH:
                self._flush_locked()

    def flush(self) -> None:
        """Write the entries not yet written."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        import sqlite3

        rows, self._pending = self._pending, []
        if not rows:
            return
        db = self._connect()
        if db is None:
            return
        try:
            db.executemany("INSERT OR REPLACE INTO file_sha256 VALUES (?, ?, ?, ?, ?, ?)", rows)
            self.stored += len(rows)
        except sqlite3.Error as exc:
            self._disable(exc)

    def close(self) -> None:
        import sqlite3

        self.flush()
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
                self._db = None


#: the environment variable naming the process's memo file (set by the stage runner to
#: ``<Paths.cache>/file_hashes.sqlite``; inherited by worker processes; empty: no memo)
ENV = "MEMLENS_HASH_MEMO"


@functools.lru_cache(maxsize=4)
def _memo_at(path: str) -> FileHashMemo:
    memo = FileHashMemo(path)
    atexit.register(memo.close)  # the last batch is written when the process ends
    return memo


def use_memo(path: str | os.PathLike[str] | None) -> FileHashMemo | None:
    """Make the memo at ``path`` the process's, and its children's (``None``: none): sets :data:`ENV`."""
    current = active_memo()
    if current is not None:
        current.flush()
    if path is None:
        os.environ.pop(ENV, None)
        return None
    os.environ[ENV] = str(path)
    return active_memo()


def active_memo() -> FileHashMemo | None:
    """The memo :data:`ENV` names, or None."""
    path = os.environ.get(ENV)
    return _memo_at(path) if path else None
