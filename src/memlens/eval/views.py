"""The prediction views of one system: ``data/predictions/<system>/<mode>/<length>.jsonl`` + manifest.

The views are what DVC tracks of an evaluation (the answers themselves live in the results store,
:mod:`memlens.eval.results`). A view folder is named after the system's ``name``, but its lines come
from one system *identity* (the system key: name, temperature, layout ...), so the folder, its lock
and its manifest belong to that key together:

* :class:`SystemViews` holds the view lock of the folder (``data/predictions/.locks/``, outside
  DVC's output) for the whole evaluation: a second evaluation of the same name in this workspace
  (whatever its other settings) stops at once with a message naming the running one
  (``eval.wait_for_lock=true`` queues it instead). Shards of a sweep write no view and take no lock.
* The views of a run are staged aside per length and moved into place together with the manifest
  at the end, so a folder's lines and manifest always agree: the manifest lists every view file
  with the system key, mode, length and dataset it was made from (``views``). View files made by
  another system key (the same name, other settings) are removed when a new key writes the folder;
  their answers stay in the results store.
* :func:`check_view_matches` is what ``report`` runs before it logs anything: predictions made by
  another identity than the config describes are refused.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import shutil
import socket
import time
from pathlib import Path

from memlens.core.config import Paths
from memlens.core.errors import DataError, MemLensError
from memlens.core.io import read_json, sha256_bytes
from memlens.core.schema import Prediction
from memlens.core.store import hash_tree, write_manifest
from memlens.eval.results import system_identity, write_view

log = logging.getLogger(__name__)

LOCKS = ".locks"
STAGING = ".staging"
#: ``eval`` keys that decide how an evaluation runs, never what a view holds: left out of the manifest
OPERATIONAL_EVAL_KEYS = frozenset({"wait_for_lock", "shard", "collect", "max_failure_rate"})


class ViewBusyError(MemLensError):
    """Another evaluation is writing the views of the same system name in this workspace."""


def _tag(name: str) -> str:
    """A file name for a system name (names are free text: no path is built from them here)."""
    return sha256_bytes(name.encode("utf-8"))[:16]


class SystemViews:
    """The views of one system name in one workspace, written as a whole (see the module docstring).

    ``with SystemViews(paths, name, system_key) as views: views.stage(mode, length, preds) ...;
    views.commit(...)``; leaving the context without :meth:`commit` leaves the folder as it was."""

    def __init__(self, paths: Paths, name: str, system_key: str, *, wait: bool = False):
        self.paths, self.name, self.system_key, self.wait = paths, name, system_key, wait
        self.out = paths.predictions / name
        self.lock_path = paths.predictions / LOCKS / f"{_tag(name)}.lock"
        self.staging = paths.predictions / STAGING / f"{_tag(name)}-{os.getpid()}"
        self.staged: dict[str, dict] = {}
        self._fh = None

    # the lock --------------------------------------------------------------------------------------
    def __enter__(self) -> SystemViews:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.lock_path, "a+")  # held until __exit__
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | (0 if self.wait else fcntl.LOCK_NB))
        except OSError as exc:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise ViewBusyError(
                f"{self.out}: another evaluation of a system named {self.name!r} is writing these views "
                f"({holder}); wait for it to finish, or run with eval.wait_for_lock=true to queue behind it "
                "(no answer is lost either way)"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(
            f"pid {os.getpid()} on {socket.gethostname()}, system key {self.system_key[:12]}, "
            f"since {time.strftime('%Y-%m-%d %H:%M:%S')}"
        )
        fh.flush()
        self._fh = fh
        shutil.rmtree(self.staging, ignore_errors=True)
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.seek(0)
                fh.truncate()
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
                fh.close()

    # staging and committing ------------------------------------------------------------------------
    def stage(self, mode: str, length: str, predictions: list[Prediction], **info) -> int:
        """Write one length's view aside; it replaces the folder's only at :meth:`commit`."""
        if self._fh is None:
            raise RuntimeError("SystemViews.stage outside `with SystemViews(...)`")
        rel = f"{mode}/{length}.jsonl"
        n = write_view(self.staging / rel, predictions)
        self.staged[rel] = {"system_key": self.system_key, "mode": mode, "length": length, "n": n, **info}
        return n

    def commit(self, *, config: dict, extra: dict, code: tuple[str, ...]) -> Path:
        """Move the staged views into the folder and write the manifest that describes every view
        file in it; files made by another system key (or of unknown origin) are removed."""
        if self._fh is None:
            raise RuntimeError("SystemViews.commit outside `with SystemViews(...)`")
        dataset = extra.get("dataset_sha256")
        kept = self._kept_views(dataset)
        for p in sorted(self.out.rglob("*.jsonl")) if self.out.is_dir() else []:
            rel = p.relative_to(self.out).as_posix()
            if rel not in kept and rel not in self.staged:
                log.warning(
                    "%s: removed (made by another configuration of %s; its answers stay in the store)", p, self.name
                )
                p.unlink()
        for rel in self.staged:
            dest = self.out / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.staging / rel, dest)
        views = {**kept, **self.staged}
        self.staged = {}
        return write_manifest(
            self.out,
            "evaluate",
            config,
            hash_tree(self.out),
            code=code,
            extra={**extra, "views": dict(sorted(views.items()))},
        )

    def _kept_views(self, dataset: str | None) -> dict[str, dict]:
        """The view files of the folder's current manifest that this system key made on this dataset."""
        prev = _manifest(self.out)
        if prev is None:
            return {}
        views = prev.get("views")
        if not isinstance(views, dict):  # a manifest of an earlier MemLens: one key for the folder
            if prev.get("system_key") != self.system_key:
                return {}
            views = {p.relative_to(self.out).as_posix(): _legacy_entry(p, prev) for p in self.out.rglob("*.jsonl")}
        return {
            rel: v
            for rel, v in views.items()
            if isinstance(v, dict)
            and v.get("system_key") == self.system_key
            and v.get("dataset_sha256", dataset) == dataset
            and (self.out / rel).is_file()
        }


def _legacy_entry(path: Path, manifest: dict) -> dict:
    """The ``views`` entry of a view file that a manifest of an earlier MemLens described as a whole."""
    with open(path, "rb") as fh:
        n = sum(1 for line in fh if line.strip())
    return {
        "system_key": manifest.get("system_key"),
        "mode": path.parent.name,
        "length": path.stem,
        "n": n,
        "dataset_sha256": manifest.get("dataset_sha256"),
        "prompt_protocol": manifest.get("prompt_protocol"),
    }


def _manifest(folder: Path) -> dict | None:
    p = folder / "manifest.json"
    if not p.is_file():
        return None
    m = read_json(p)
    if not isinstance(m, dict):
        raise DataError(f"{p}: expected a JSON object")
    return m


def manifest_config(identity: dict, eval_cfg: dict) -> dict:
    """The ``config`` of the evaluate manifest: the system identity and the ``eval`` settings that
    decide what the views hold (not how the run went: shards, locks, failure limits)."""
    return {"model": identity, "eval": {k: v for k, v in eval_cfg.items() if k not in OPERATIONAL_EVAL_KEYS}}


def check_view_matches(cfg, paths: Paths, lengths: list[str] | None = None) -> None:
    """Refuse predictions whose evaluate manifest does not describe the configured system: its
    identity (every key of ``model`` that decides answers) differs, or a length to report was made
    by another system key or in another mode. A folder without a manifest is not checked."""
    from memlens.core.config import section
    from memlens.core.settings import operational_keys

    system, mode = str(cfg.model.name), str(cfg.eval.mode)
    folder = paths.predictions / system
    m = _manifest(folder)
    if m is None:
        return
    made = ((m.get("config") or {}).get("model")) or {}
    want = system_identity(section(cfg, "model")["model"], operational=operational_keys(type(cfg.model)))
    made = {k: v for k, v in made.items() if not str(k).startswith("+")}
    diff = sorted(k for k in set(made) | set(want) if made.get(k) != want.get(k))
    if diff:
        shown = ", ".join(f"{k}: {made.get(k)!r} there, {want.get(k)!r} in the config" for k in diff[:4])
        raise DataError(
            f"{folder / 'manifest.json'}: the predictions of {system!r} were made by another configuration "
            f"({shown}); run `memlens evaluate` (and `memlens judge`) with this configuration first"
        )
    views = m.get("views")
    if not isinstance(views, dict):
        return
    key = m.get("system_key")
    for ln in lengths or []:
        v = views.get(f"{mode}/{ln}.jsonl")
        if v is None or v.get("system_key") != key:
            raise DataError(
                f"{folder / 'manifest.json'}: no predictions of this configuration of {system!r} at {ln} "
                f"in mode {mode}; run `memlens evaluate` (and `memlens judge`) first"
            )
