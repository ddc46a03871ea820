"""Where answers live: the results store (outside DVC) and the prediction view (DVC's evaluate output).

A model answer can cost GPU hours, so answers are kept in an append-only **results store**
(``.memlens_cache/results/`` by default, outside every DVC output, modelled on lmms-eval's response
cache and lm-eval's CachingLM). Each finished request is appended as one line and fsynced before the
next is recorded, under a key that hashes everything that determines the answer:

* the system's identity (:meth:`memlens.eval.systems.base.Model.identity`: model id, revision,
  decoding parameters, prompt layout ... but not endpoints, concurrency or timeouts),
* the prompt protocol version and the prompt mode,
* the request content (:meth:`memlens.core.items.EvalItem.fingerprint`: question, date and the whole
  history, with the bytes of every image).

Any run, experiment, branch or dataset reuses an answer only when that key matches; a changed item
is asked again. One folder per system identity; a writer holds its lock (a second concurrent
writer waits or stops at once with a clear message). A partial last line (``kill -9`` during a
write) is cut off when a writer opens the file; readers skip it with a warning.

The **prediction view** ``data/predictions/<system>/<mode>/<length>.jsonl`` is materialised from the
store for the current system and benchmark (sorted by question id, written atomically). DVC tracks
the view; deleting it (``dvc exp run`` of another system, a checkout) loses no answer.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memlens.core.errors import MemLensError
from memlens.core.io import atomic_write_bytes, canonical_bytes, canonical_json, iter_jsonl, sha256_bytes, write_json
from memlens.core.schema import Prediction

log = logging.getLogger(__name__)

#: bump when the results store's record layout changes incompatibly
STORE_FORMAT = 1


class StoreBusyError(MemLensError):
    """Another process is writing answers of the same system."""


def _repair_tail(path: Path) -> int:
    """Truncate a partial last line; returns the number of bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
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


def system_key(identity: dict) -> str:
    """SHA-256 naming a system identity (a dict of everything that determines its answers)."""
    return sha256_bytes(canonical_bytes({"store_format": STORE_FORMAT, **identity}))


def request_key(system: str, protocol: str, mode: str, fingerprint: str) -> str:
    """The key of one request: system identity, prompt protocol, mode and item fingerprint."""
    return sha256_bytes(canonical_bytes([system, protocol, mode, fingerprint]))


class ResultsStore:
    """Append-only answers of one system identity.

    ``identity`` is the system's :meth:`~memlens.eval.systems.base.Model.identity`; it is written once
    to ``system.json`` (for people: which folder is which system) and its hash names the folder.
    """

    def __init__(self, root: str | Path, identity: dict, *, fsync: bool = True):
        self.identity = identity
        self.key = system_key(identity)
        self.dir = Path(root) / self.key[:32]
        self.path = self.dir / "answers.jsonl"
        self.fsync = fsync
        self._fh = None
        self._lock_fh = None
        self._index: dict[str, dict] = {}
        self._loaded_size = -1

    # reading -------------------------------------------------------------------------------------
    def reload(self) -> None:
        """Read every record (last ok record of a key wins; a failure never replaces an answer)."""
        index: dict[str, dict] = {}
        if self.path.exists():
            for rec in iter_jsonl(self.path, partial_tail="skip"):
                k = rec.get("key")
                if not isinstance(k, str):
                    continue
                prev = index.get(k)
                if prev is None or rec.get("ok") or not prev.get("ok"):
                    index[k] = rec
        self._index = index
        self._loaded_size = self.path.stat().st_size if self.path.exists() else 0

    def _ensure_loaded(self) -> None:
        size = self.path.stat().st_size if self.path.exists() else 0
        if size != self._loaded_size:
            self.reload()

    def get(self, key: str) -> dict | None:
        """The record of a request (an answer, or the last failure), or None."""
        self._ensure_loaded()
        return self._index.get(key)

    def has_answer(self, key: str) -> bool:
        rec = self.get(key)
        return bool(rec and rec.get("ok"))

    def __len__(self) -> int:
        self._ensure_loaded()
        return len(self._index)

    # writing -------------------------------------------------------------------------------------
    @contextmanager
    def writer(self, *, wait: bool = False) -> Iterator[ResultsStore]:
        """Hold this system's writer lock while appending. ``wait=False``: a second writer stops at
        once with :class:`StoreBusyError`; ``wait=True``: it waits for the first to finish."""
        self.dir.mkdir(parents=True, exist_ok=True)
        sysfile = self.dir / "system.json"
        if not sysfile.exists():
            write_json(sysfile, {"system_key": self.key, "identity": self.identity})
        lock_fh = open(self.dir / "lock", "a+")  # noqa: SIM115 - held for the whole writer context
        try:
            flags = fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB)
            try:
                fcntl.flock(lock_fh.fileno(), flags)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                lock_fh.seek(0)
                holder = lock_fh.read().strip() or "another process"
                raise StoreBusyError(
                    f"{self.dir}: another evaluation of this system is writing its answers ({holder}); "
                    "wait for it to finish, or run with eval.wait_for_lock=true to queue behind it "
                    "(nothing is lost either way)"
                ) from None
            lock_fh.seek(0)
            lock_fh.truncate()
            lock_fh.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}")
            lock_fh.flush()
            _repair_tail(self.path)
            self.reload()  # what another writer finished while we waited is not asked again
            self._fh = open(self.path, "ab")  # noqa: SIM115 - closed when the writer context ends
            self._lock_fh = lock_fh
            yield self
        finally:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
            self._lock_fh = None
            try:
                lock_fh.seek(0)
                lock_fh.truncate()
            finally:
                fcntl.flock(lock_fh.fileno(), fcntl.LOCK_UN)
                lock_fh.close()

    def put(self, key: str, record: dict) -> None:
        """Append one finished request (must hold :meth:`writer`)."""
        if self._fh is None:
            raise RuntimeError("ResultsStore.put outside `with store.writer()`")
        rec = {**record, "key": key}
        self._fh.write((canonical_json(rec) + "\n").encode("utf-8"))
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())
        prev = self._index.get(key)
        if prev is None or rec.get("ok") or not prev.get("ok"):
            self._index[key] = rec
        self._loaded_size = self.path.stat().st_size


# --------------------------------------------------------------------------------------------------
# the prediction view
# --------------------------------------------------------------------------------------------------
def write_view(path: str | Path, predictions: list[Prediction]) -> int:
    """Write a prediction view atomically, sorted by question id (one line per item)."""
    preds = sorted(predictions, key=lambda p: p.question_id)
    lines = [canonical_json(p.to_dict()) for p in preds]
    atomic_write_bytes(path, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    return len(lines)


class PredictionStore:
    """Reads a prediction view ``<root>/<system>/<mode>/<length>.jsonl``."""

    def __init__(self, root: str | Path, system: str, mode: str, length: str):
        self.dir = Path(root) / system / mode
        self.path = self.dir / f"{length}.jsonl"
        self.system, self.mode, self.length = system, mode, length

    def load(self) -> dict[str, Prediction]:
        """Question id -> prediction. A question listed twice is an error naming the file and line."""
        out: dict[str, Prediction] = {}
        if not self.path.exists():
            return out
        from memlens.core.errors import DataError
        from memlens.core.io import enumerate_jsonl

        for i, row in enumerate_jsonl(self.path):
            p = Prediction.from_dict(row, where=f"{self.path}:{i}")
            if p.question_id in out:
                raise DataError(f"{self.path}:{i}: question {p.question_id} appears twice")
            out[p.question_id] = p
        return out

    def done_ids(self) -> set[str]:
        return {q for q, p in self.load().items() if p.ok}


def verdict_archive(paths, dataset: str) -> Path:
    """``<cache>/verdicts/<dataset hash[:16]>/<system>/<mode>/<length>.<judge>.jsonl``: every system's
    verdicts on one benchmark build, kept outside DVC (the workspace holds one system's outputs at a
    time), for the cross-system analyses."""
    return paths.cache / "verdicts" / dataset[:16]
