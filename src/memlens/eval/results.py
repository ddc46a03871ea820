"""Where answers live: the results store (outside DVC), shared by any number of writers at once.

A model answer can cost GPU hours, so answers are kept in an append-only **results store**
(``.memlens_cache/results/`` by default, outside every DVC output, modelled on lmms-eval's response
cache and lm-eval's CachingLM), under a key that hashes everything that determines the answer:

* the system's identity (:func:`system_identity`: its model config without the operational keys,
  such as endpoints, concurrency or timeouts),
* the prompt protocol version and the prompt mode,
* the request content (:meth:`memlens.core.items.EvalItem.fingerprint`: question, date and the whole
  history, with the bytes of every image).

Any run, experiment, branch or dataset reuses an answer only when that key matches.

**Many writers, no lock.** One folder per system identity, ``results/<system key[:32]>/``, holding
``system.json`` (which folder is which system, for people) and ``segments/``: every writer (one
``memlens evaluate`` process, one SLURM array task, one shard) appends to a segment of its own,
``<host>-<pid>-<run id>.jsonl``, created with ``O_EXCL`` and fsynced after every answer (the
answers of a system that costs nothing to run again, ``Model.answers_are_free``: once, when the
segment is sealed). A segment
starts with a header line (host, pid, run id, SLURM job) and a writer that closes normally ends it
with a seal line. No two writers share a file, so nothing depends on ``flock`` or ``O_APPEND``
working across the machines of a shared filesystem (NFS does neither reliably).

**Reading merges.** A reader reads every segment (and the ``answers.jsonl`` of a store written by an
earlier MemLens, which is never written again) and merges records by request key with one rule
that does not depend on the order files are listed in: an answer (``ok``) always wins over a
failure; among answers the first one made wins (smallest ``(created, origin)``, ``origin`` being the
segment and record number, unique per record), so a view once written never changes because a
later duplicate arrived; among failures the latest is kept (its error is the current one). Extra
answers to one key are counted as duplicates (:meth:`ResultsStore.stats`); a record copied by
compaction keeps its origin and is never counted twice. A partial last line (``kill -9`` during a
write, or a writer still writing) is not a record: readers stop before it and read it once it is
complete. So ``kill -9`` of any writer at any moment loses no finished answer, and a resumed run
sends again only what was in flight.

**Compaction** (``memlens results compact``) merges the segments of finished writers (sealed, or
whose process on this host is gone; with ``--idle`` every segment) into one sealed segment written
aside and renamed into place, then removes what it merged: a crash in between leaves both, which
readers merge to the same answers. Segments that may still be written are left as they are.

The **prediction view** ``data/predictions/<system>/<mode>/<length>.jsonl`` (DVC's evaluate output,
:mod:`memlens.eval.views`) is materialised from the store for the current system and benchmark;
deleting it (``dvc exp run`` of another system, a checkout) loses no answer.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import logging
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from memlens.core.errors import ConfigError, DataError
from memlens.core.io import canonical_bytes, canonical_json, sha256_bytes, write_json
from memlens.core.schema import Prediction

try:  # orjson parses 3-5x faster; nothing written depends on it
    from orjson import loads as _json_loads
except ImportError:  # pragma: no cover
    from json import loads as _json_loads

log = logging.getLogger(__name__)

#: bump when the results store's record layout changes incompatibly (it names the folders)
STORE_FORMAT = 1
#: the single-writer store of earlier MemLens versions: read, never written
LEGACY_FILE = "answers.jsonl"
SEGMENTS = "segments"


def system_identity(model_cfg: dict, extra: dict | None = None, *, operational: frozenset[str]) -> dict:
    """What determines a system's answers: its model config as composed without the operational
    keys (``operational``: those its schema marks :func:`~memlens.core.settings.operational`, i.e.
    ``operational_keys(type(settings.model))``), plus what the system itself adds
    (:meth:`Model.identity_extra`: a memory agent's prompt version and adapter id; nothing for the
    other systems)."""
    ident = {k: v for k, v in sorted(model_cfg.items()) if k not in operational}
    for k, v in sorted((extra or {}).items()):
        ident[f"+{k}"] = v
    return ident


def system_key(identity: dict) -> str:
    """SHA-256 naming a system identity (a dict of everything that determines its answers)."""
    return sha256_bytes(canonical_bytes({"store_format": STORE_FORMAT, **identity}))


def request_key(system: str, protocol: str, mode: str, fingerprint: str) -> str:
    """The key of one request: system identity, prompt protocol, mode and item fingerprint."""
    return sha256_bytes(canonical_bytes([system, protocol, mode, fingerprint]))


# --------------------------------------------------------------------------------------------------
# shards
# --------------------------------------------------------------------------------------------------
def parse_shard(spec) -> tuple[int, int] | None:
    """``eval.shard``: ``None`` (every item) or ``"I/N"`` with ``0 <= I < N``."""
    if spec is None or spec == "":
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(spec))
    if not m:
        raise ConfigError(f"eval.shard={spec!r}: expected I/N, e.g. 0/4 (shard I of N, counting from 0)")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or i >= n:
        raise ConfigError(f"eval.shard={spec}: the shard index counts from 0 to N-1 (0/{max(n, 1)} ... {n - 1}/{n})")
    return i, n


def shard_of(item_key: str, n: int) -> int:
    """The shard (``0..n-1``) an item belongs to: a stable hash of its key (the question id), the
    same on every machine, Python version and run; every length of a question lands in one shard."""
    digest = hashlib.sha256(f"memlens-shard\0{item_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


# --------------------------------------------------------------------------------------------------
# segments
# --------------------------------------------------------------------------------------------------
def _host() -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "host"


def _slurm() -> dict:
    keys = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID")
    return {k.lower(): os.environ[k] for k in keys if os.environ.get(k)}


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _Segment:
    """The segment of one writer: created on its first record, fsynced per record (or, with
    ``fsync=False``, once when sealed), sealed on close."""

    def __init__(self, folder: Path, fsync: bool):
        self.folder = folder
        self.fsync = fsync
        self.run_id = uuid.uuid4().hex[:12]
        self.name = f"{_host()}-{os.getpid()}-{self.run_id}.jsonl"
        self.path = folder / self.name
        self.fd: int | None = None
        self.count = 0
        self.size = 0

    def _open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        header = {
            "segment": {
                "format": STORE_FORMAT,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "run_id": self.run_id,
                "started": time.time(),
                **_slurm(),
            }
        }
        self._line(header)
        _fsync_dir(self.folder)  # the new file's directory entry survives a crash too

    def _line(self, obj: dict) -> None:
        data = (canonical_json(obj) + "\n").encode("utf-8")
        _write_all(self.fd, data)
        if self.fsync:
            os.fsync(self.fd)
        self.size += len(data)

    def append(self, key: str, record: dict) -> dict:
        if self.fd is None:
            self._open()
        rec = {**record, "key": key, "origin": f"{self.name[:-6]}:{self.count}"}
        self._line(rec)
        self.count += 1
        return rec

    def close(self) -> None:
        if self.fd is None:
            return
        try:
            self._line({"sealed": True, "records": self.count, "closed": time.time()})
            if not self.fsync:  # records not fsynced one by one are made durable together
                os.fsync(self.fd)
        except OSError as exc:  # a full disk: the records are fsynced, only the seal is missing
            log.warning("%s: could not seal the segment (%s); its answers are kept", self.path, exc)
        finally:
            os.close(self.fd)
            self.fd = None


@dataclass
class _Source:
    """What a reader has consumed of one file: bytes up to the last complete line."""

    path: Path
    offset: int = 0
    lines: int = 0
    header: dict = field(default_factory=dict)
    sealed: bool = False
    partial: int = 0  # bytes of an incomplete last line (not yet a record)


@dataclass
class _Entry:
    """The merge state of one request key."""

    ok: dict | None = None
    ok_token: tuple = ()
    fail: dict | None = None
    fail_token: tuple = ()
    origins: set = field(default_factory=set)

    @property
    def best(self) -> dict | None:
        return self.ok if self.ok is not None else self.fail


def _token(rec: dict) -> tuple:
    created = rec.get("created")
    return (float(created) if isinstance(created, (int, float)) else 0.0, str(rec.get("origin", "")))


def _merge(index: dict[str, _Entry], key: str, rec: dict) -> None:
    """Fold one record into ``index`` (the rule of the module docstring)."""
    entry = index.get(key)
    if entry is None:
        entry = index[key] = _Entry()
    tok = _token(rec)
    if rec.get("ok"):
        entry.origins.add(tok[1])
        if entry.ok is None or tok < entry.ok_token:
            entry.ok, entry.ok_token = rec, tok
    elif entry.fail is None or tok > entry.fail_token:
        entry.fail, entry.fail_token = rec, tok


@dataclass
class StoreStats:
    """What one system's folder holds."""

    keys: int = 0
    answers: int = 0
    failures: int = 0  # keys with a failure and no answer
    duplicates: int = 0  # answers beyond the first for a key (distinct origins)
    segments: int = 0
    legacy: bool = False
    sealed: int = 0
    partial_bytes: int = 0


class _Reader:
    """Reads files of records into one merged index, each file from where it was last read."""

    def __init__(self):
        self.index: dict[str, _Entry] = {}
        self.sources: dict[str, _Source] = {}
        self.count = 0  # records read (every line with a key)

    def read(self, path: Path) -> _Source:
        src = self.sources.get(path.name)
        if src is None:
            src = self.sources[path.name] = _Source(path)
        self._read_new(src)
        return src

    def _read_new(self, src: _Source) -> None:
        try:
            size = src.path.stat().st_size
        except FileNotFoundError:  # merged by a compaction meanwhile: its records are in the new segment
            return
        if size < src.offset:  # rewritten in place (a legacy writer cut a partial line): read it again
            src.offset, src.lines = 0, 0
        if size == src.offset:
            return
        try:
            with open(src.path, "rb") as fh:
                fh.seek(src.offset)
                data = fh.read(size - src.offset)
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        src.partial = len(data) - end
        for raw in data[:end].split(b"\n")[:-1]:
            src.lines += 1
            if raw.strip():
                self._record(src, raw)
        src.offset += end

    def _record(self, src: _Source, raw: bytes) -> None:
        try:
            rec = _json_loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise DataError(
                f"{src.path}:{src.lines}: not valid JSON ({exc}); the results store is damaged there: "
                "move the file aside to go on (the answers in it will be asked again)"
            ) from None
        if not isinstance(rec, dict):
            raise DataError(f"{src.path}:{src.lines}: expected a JSON object")
        key = rec.get("key")
        if isinstance(key, str):
            if "origin" not in rec:  # a legacy record: its place in its file is its origin
                rec["origin"] = f"{src.path.name}:{src.lines}"
            self.count += 1
            _merge(self.index, key, rec)
        elif isinstance(rec.get("segment"), dict):
            src.header = rec["segment"]
        elif rec.get("sealed") is True:
            src.sealed = True


class ResultsStore:
    """Answers of one system identity, read from every writer's segment, appended to this writer's.

    ``identity`` is the system's :func:`system_identity`; it is written once to ``system.json`` and
    its hash names the folder. Reading is lazy (the first lookup reads every segment) and
    incremental (:meth:`refresh` reads only what was appended since).
    """

    def __init__(self, root: str | Path, identity: dict, *, fsync: bool = True):
        self.identity = identity
        self.key = system_key(identity)
        self.dir = Path(root) / self.key[:32]
        self.segments_dir = self.dir / SEGMENTS
        self.legacy_path = self.dir / LEGACY_FILE
        self.fsync = fsync
        self._reader = _Reader()
        self._loaded = False
        self._refreshed = 0.0
        self._segment: _Segment | None = None
        self._lock = threading.Lock()

    # reading -------------------------------------------------------------------------------------
    def files(self) -> list[Path]:
        """Every file holding records: the legacy ``answers.jsonl`` and the segments, sorted."""
        out = [self.legacy_path] if self.legacy_path.is_file() else []
        if self.segments_dir.is_dir():
            out += sorted(p for p in self.segments_dir.iterdir() if p.suffix == ".jsonl" and p.is_file())
        return out

    def reload(self) -> None:
        """Forget what was read and read every record again."""
        with self._lock:
            self._reader, self._loaded = _Reader(), False
        self.refresh()

    def refresh(self, max_age: float = 0.0) -> None:
        """Read what every writer appended since the last read (at most every ``max_age`` seconds)."""
        now = time.monotonic()
        if self._loaded and max_age > 0 and now - self._refreshed < max_age:
            return
        with self._lock:
            for path in self.files():
                self._reader.read(path)
            self._loaded, self._refreshed = True, now

    def _entry(self, key: str) -> _Entry | None:
        if not self._loaded:
            self.refresh()
        return self._reader.index.get(key)

    def get(self, key: str) -> dict | None:
        """The record of a request (its answer, or its latest failure), or None."""
        entry = self._entry(key)
        return None if entry is None else entry.best

    def has_answer(self, key: str) -> bool:
        entry = self._entry(key)
        return entry is not None and entry.ok is not None

    def __len__(self) -> int:
        if not self._loaded:
            self.refresh()
        return len(self._reader.index)

    def records(self) -> Iterator[dict]:
        """The merged record of every key (its answer or its latest failure), sorted by key."""
        if not self._loaded:
            self.refresh()
        index = self._reader.index
        for k in sorted(index):
            yield index[k].best

    def stats(self) -> StoreStats:
        """Counts over everything read so far (call :meth:`refresh` first for the latest)."""
        if not self._loaded:
            self.refresh()
        sources = self._reader.sources
        st = StoreStats(keys=len(self._reader.index), legacy=LEGACY_FILE in sources)
        for entry in self._reader.index.values():
            if entry.ok is not None:
                st.answers += 1
                st.duplicates += len(entry.origins) - 1
            else:
                st.failures += 1
        segs = [s for n, s in sources.items() if n != LEGACY_FILE and s.path.exists()]
        st.segments = len(segs)
        st.sealed = sum(s.sealed for s in segs)
        st.partial_bytes = sum(s.partial for s in sources.values())
        return st

    # writing -------------------------------------------------------------------------------------
    @contextmanager
    def writer(self) -> Iterator[ResultsStore]:
        """Append this process's answers to a segment of its own (created on the first answer,
        sealed when the context ends). Any number of writers, here or on other machines, may write
        the same system at once: none waits for another."""
        self.dir.mkdir(parents=True, exist_ok=True)
        sysfile = self.dir / "system.json"
        if not sysfile.exists():
            write_json(sysfile, {"system_key": self.key, "identity": self.identity})
        self.refresh()  # what other writers finished meanwhile is not asked again
        self._segment = _Segment(self.segments_dir, self.fsync)
        try:
            yield self
        finally:
            seg, self._segment = self._segment, None
            seg.close()

    def put(self, key: str, record: dict) -> None:
        """Append one finished request and fsync it (must be inside :meth:`writer`)."""
        seg = self._segment
        if seg is None:
            raise RuntimeError("ResultsStore.put outside `with store.writer()`")
        with self._lock:
            rec = seg.append(key, record)
            _merge(self._reader.index, key, rec)
            # a later refresh skips what this writer wrote itself
            src = self._reader.sources.setdefault(seg.name, _Source(seg.path))
            src.offset, src.lines = seg.size, seg.count + 1

    # compaction ----------------------------------------------------------------------------------
    def compact(self, *, idle: bool = False) -> dict:
        """Merge the files of finished writers into one sealed segment (see the module docstring);
        ``idle``: no writer of this system runs anywhere, so every file is finished. Returns counts."""
        merged, kept = [], []
        for path in self.files():
            (merged if self._finished(path, idle) else kept).append(path)
        result = {"merged": len(merged), "kept": len(kept), "records_in": 0, "records_out": 0, "dropped": 0}
        if not merged or (len(merged) == 1 and merged[0].name.startswith("compact-")):
            return result
        part = _Reader()
        for path in merged:
            part.read(path)
        result["records_in"] = part.count
        out = self._write_compacted(part.index, [p.name for p in merged])
        result["records_out"] = len(part.index)
        result["dropped"] = result["records_in"] - len(part.index)
        for path in merged:
            with suppress(FileNotFoundError):
                path.unlink()
        _fsync_dir(self.segments_dir)
        log.info("%s: merged %d files into %s (%d records kept)", self.dir, len(merged), out.name, len(part.index))
        self.reload()
        return result

    def _finished(self, path: Path, idle: bool) -> bool:
        """No writer will append to ``path`` again."""
        if idle:
            return True
        if path.name == LEGACY_FILE:
            return self._legacy_idle()
        if path.name.startswith("compact-"):
            return True
        src = _Reader().read(path)
        if src.sealed:
            return True
        head = src.header
        if head.get("host") != socket.gethostname() or not isinstance(head.get("pid"), int):
            return False  # a writer on another machine: it may still be running
        try:
            os.kill(head["pid"], 0)
        except ProcessLookupError:
            return True  # killed without sealing (kill -9, a cancelled job)
        except PermissionError:
            return False
        return False

    def _legacy_idle(self) -> bool:
        """No writer of an earlier MemLens holds the old store's lock (it flocked ``lock``)."""
        lock = self.dir / "lock"
        if not lock.exists():
            return True
        with open(lock, "a+") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    return False
                raise
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return True

    def _write_compacted(self, index: dict[str, _Entry], sources: list[str]) -> Path:
        run_id = uuid.uuid4().hex[:12]
        name = f"compact-{_host()}-{os.getpid()}-{run_id}.jsonl"
        self.segments_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.segments_dir / f".{name}.tmp"
        head = {
            "segment": {
                "format": STORE_FORMAT,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "run_id": run_id,
                "started": time.time(),
                "compacted_from": sources,
            }
        }
        lines = [canonical_json(head), *(canonical_json(index[k].best) for k in sorted(index))]
        lines.append(canonical_json({"sealed": True, "records": len(index), "closed": time.time()}))
        with open(tmp, "wb") as fh:
            fh.write(("\n".join(lines) + "\n").encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        out = self.segments_dir / name
        os.replace(tmp, out)
        _fsync_dir(self.segments_dir)
        return out


def system_folders(root: str | Path) -> list[Path]:
    """The system folders of a results store root (each with its ``system.json``)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "system.json").is_file())


def open_folder(folder: Path, *, fsync: bool = True) -> ResultsStore:
    """The store of one system folder, from its ``system.json``."""
    from memlens.core.io import read_json

    info = read_json(folder / "system.json")
    if not isinstance(info, dict) or not isinstance(info.get("identity"), dict):
        raise DataError(f"{folder / 'system.json'}: expected {{system_key, identity}}")
    store = ResultsStore(folder.parent, info["identity"], fsync=fsync)
    if store.dir != folder:
        raise DataError(f"{folder}: its system.json describes another system ({store.key[:12]})")
    return store


def run_cli(args) -> int:
    """``memlens results [stats|compact] [--idle]``: what the results store holds per system
    (answers, failures, duplicates, segments), or merge the segments of finished writers
    (``--idle``: no evaluation is running anywhere, so every segment is merged)."""
    from memlens.core.config import Paths, project_root

    words = list(args.overrides or []) or ["stats"]
    action = words[0]
    if action not in ("stats", "compact") or len(words) > 1:
        raise ConfigError(f"memlens results: expected `stats` or `compact`, not {' '.join(words)!r}")
    root = Path(args.root).resolve() if args.root else project_root()
    store_root = Paths(root).cache / "results"
    folders = system_folders(store_root)
    if not folders:
        print(f"{store_root}: no results yet")
        return 0
    for folder in folders:
        store = open_folder(folder)
        name = store.identity.get("model") or store.identity.get("hf_id") or store.identity.get("_target_", "?")
        if action == "compact":
            r = store.compact(idle=bool(getattr(args, "idle", False)))
            print(
                f"{folder.name[:12]} {name}: merged {r['merged']} files ({r['records_in']} records) into "
                f"{r['records_out']}, dropped {r['dropped']} superseded, left {r['kept']} open segments"
            )
        else:
            st = store.stats()
            print(
                f"{folder.name[:12]} {name}: {st.answers} answers, {st.failures} failed, {st.duplicates} "
                f"duplicates, {st.segments} segments ({st.sealed} sealed)"
                + (", legacy answers.jsonl" if st.legacy else "")
                + (f", {st.partial_bytes} bytes of unfinished lines" if st.partial_bytes else "")
            )
    return 0


# --------------------------------------------------------------------------------------------------
# the prediction view (files)
# --------------------------------------------------------------------------------------------------
def write_view(path: str | Path, predictions: list[Prediction]) -> int:
    """Write a prediction view atomically, sorted by question id (one line per item)."""
    from memlens.core.io import atomic_write_bytes

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
