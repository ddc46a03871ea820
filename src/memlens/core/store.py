"""Content-addressed artifacts and stage manifests.

Images are stored once as ``objects/<sha256>.<ext>`` (the SHA-256 of their bytes); sessions are
stored once in a sorted JSONL keyed by an id derived from the SHA-256 of their canonical JSON.
Every stage writes ``manifest.json`` beside its outputs: each artifact's relative path and SHA-256,
the config section it used and the hash of the code that produced it. Manifests contain no
timestamps or absolute paths, so the same config and seed give byte-identical manifests.
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path
from typing import Any

from memlens.core.errors import DataError, ImageError
from memlens.core.io import (
    atomic_write_bytes,
    canonical_bytes,
    remember_linked,
    sha256_bytes,
    sha256_file,
    sha256_file_memo,
    write_json,
)
from memlens.core.version import VERSION as __version__


def derive_seed(*keys: Any) -> int:
    """A 64-bit seed derived from the global seed and an item key: adding an item does not reshuffle
    the others, so unrelated artifacts keep their hashes."""
    return int.from_bytes(hashlib.sha256(canonical_bytes([str(k) for k in keys])).digest()[:8], "big")


def derive_rng(*keys: Any) -> random.Random:
    return random.Random(derive_seed(*keys))


def short_id(prefix: str, *keys: Any, n: int = 12) -> str:
    return f"{prefix}_{hashlib.sha256(canonical_bytes([str(k) for k in keys])).hexdigest()[:n]}"


#: a name that becomes one path component (a system, judge, mode or length folder or file name)
SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")
#: a content address: a SHA-256 and a short extension
_OBJECT_NAME = re.compile(r"[0-9a-f]{64}(\.[a-z0-9]{1,8})?")


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a folder or file (None when it can): only letters, digits, ``.``,
    ``_`` and ``-``, and no ``..`` (so never a path and never outside its folder)."""
    if not isinstance(name, str) or not name:
        return "is not a non-empty string"
    if not SAFE_NAME.fullmatch(name):
        return "may only hold letters, digits, '.', '_' and '-' (it names a folder)"
    if ".." in name or name.startswith("."):
        return "may not start with '.' or contain '..' (it names a folder)"
    return None


def safe_name(name: object, what: str) -> str:
    """``name`` if it can name a folder (:func:`name_problem`), else a :class:`DataError` naming ``what``."""
    why = name_problem(name)
    if why:
        raise DataError(f"{what} {name!r} {why}")
    return str(name)


def inside(root: str | Path, *parts: str, what: str = "path") -> Path:
    """``root/part/...`` after checking that it stays inside ``root`` (no ``..``, absolute part or
    symlink leading out); a :class:`DataError` naming ``what`` otherwise."""
    root_r = Path(root).resolve()
    for part in parts:
        if not isinstance(part, str) or not part or "\x00" in part or Path(part).is_absolute():
            raise DataError(f"{what} {part!r}: not a relative path inside {root_r}")
    candidate = root_r.joinpath(*parts).resolve()
    if candidate != root_r and root_r not in candidate.parents:
        raise DataError(f"{what} {'/'.join(parts)!r} escapes its folder {root_r}")
    return candidate


class ObjectStore:
    """A folder of files named by the SHA-256 of their content."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def put(self, data: bytes, ext: str) -> str:
        """Store ``data``; a file already there is kept only when its content matches its name."""
        sha = sha256_bytes(data)
        path = self.path(sha, ext)
        if not (path.is_file() and sha256_file(path) == sha):  # missing or corrupt: written anew
            atomic_write_bytes(path, data)
        return sha

    def path(self, sha: str, ext: str) -> Path:
        name = f"{sha}.{ext}"
        if not _OBJECT_NAME.fullmatch(name):
            raise ImageError(name, "not a content address (<sha256>.<ext>)")
        return self.root / name

    def verify(self, sha: str, ext: str) -> None:
        path = self.path(sha, ext)
        if not path.is_file():
            raise ImageError(path, "missing from the object store")
        actual = sha256_file(path)
        if actual != sha:
            raise ImageError(path, f"content hash {actual[:12]} does not match its name (corrupt file)")


def content_link(src: Path, digest: str, folder: Path, linked: set[Path] | None = None) -> Path:
    """``<folder>/<digest>.<ext>``: a copy of image ``src`` (a hard link when possible) under the
    SHA-256 of its bytes, so the path a system is given names nothing but the content (not a
    release folder, not ``data/``). Made once, verified against ``digest`` (a corrupt copy is made
    anew, a source that changed is an :class:`ImageError`); ``linked``: the links this process
    already verified."""
    import logging
    import os
    import shutil
    import threading

    suffix = src.suffix.lower() if re.fullmatch(r"\.[a-z0-9]{1,8}", src.suffix.lower()) else ".img"
    dest = Path(folder) / f"{digest}{suffix}"
    if linked is not None and dest in linked:
        return dest
    # missing, or corrupt: made anew, verified (hashes memoised per file version: a hard link of
    # ``src`` that was just verified is not read again, nor by the image encoder after this)
    if not (dest.is_file() and sha256_file_memo(dest) == digest):
        before = os.stat(src)
        if sha256_file_memo(src) != digest:
            raise ImageError(src, f"changed while being read (its content no longer hashes to {digest[:12]})")
        if dest.exists():
            logging.getLogger(__name__).warning("content-addressed image copy: %s was corrupt: made anew", dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.unlink(missing_ok=True)
        try:
            os.link(src, tmp)
        except OSError:  # another file system, or links not allowed: a copy
            shutil.copyfile(src, tmp)
        tmp.replace(dest)
        remember_linked(dest, digest, before)  # the link moved the file's ctime, not its bytes
    if linked is not None:
        linked.add(dest)
    return dest


def safe_join(root: str | Path, rel: str, *, item: str | None = None) -> Path:
    """Join ``rel`` under ``root`` and refuse paths that escape it (``..``, absolute paths, symlinks)."""
    root_r = Path(root).resolve()
    if not isinstance(rel, str) or not rel:
        raise ImageError(rel, "empty image path", item)
    if "\x00" in rel:
        raise ImageError(rel, "image path contains a NUL byte", item)
    candidate = (root_r / rel).resolve()
    if candidate != root_r and root_r not in candidate.parents:
        raise ImageError(rel, f"image path escapes the data folder {root_r}", item)
    return candidate


def code_identity(*modules: str) -> str:
    """The SHA-256 of the modules' code: the files of their import closure, as the dependency tool
    (:func:`memlens.core.codegraph.code_hash`) measures it; the same files are the stage's DVC deps.
    The tool is looked up by name: it measures a stage's code and is no part of it, so editing it
    changes no stage's code."""
    import importlib

    return importlib.import_module("memlens.core.codegraph").code_hash(*modules)


def write_manifest(
    out_dir: str | Path,
    stage: str,
    config: Any,
    artifacts: dict[str, str],
    *,
    code: tuple[str, ...] = (),
    extra: dict | None = None,
) -> Path:
    """Write ``out_dir/manifest.json``; ``artifacts`` maps relative path -> sha256."""
    out_dir = Path(out_dir)
    manifest = {
        "stage": stage,
        "memlens_version": __version__,
        "code_sha256": code_identity(*code) if code else None,  # the files of the modules' code
        "config": config,
        "artifacts": dict(sorted(artifacts.items())),
        "n_artifacts": len(artifacts),
    }
    if extra:
        manifest.update(extra)
    path = out_dir / "manifest.json"
    write_json(path, manifest)
    return path


def hash_tree(root: str | Path, *, exclude: tuple[str, ...] = ("manifest.json",)) -> dict[str, str]:
    """Relative path -> sha256 for every file under ``root`` (sorted)."""
    root = Path(root)
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name not in exclude and not p.name.startswith("."):
            out[str(p.relative_to(root))] = sha256_file(p)
    return out
