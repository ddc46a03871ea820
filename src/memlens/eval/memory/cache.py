"""What every input adapter shares: the image it is shown and its on-disk description cache.

An adapter sees an :class:`ImageInput` (the image's SHA-256, its file and, optionally, its image
family) and nothing else: no role, no question, no evidence flag. Its descriptions are cached under
``<cache_dir>/<adapter id slug>/<sha[:2]>/<sha>.json``, one small file per (image, adapter id),
written atomically (temporary file, fsync, rename): a crash leaves whole entries or none. The
adapter id names the backend, its model and its prompt/format version, so the key is (image
SHA-256, adapter, prompt/version). Entries not found under ``cache_dir`` are looked up in the
``fallbacks`` folders (older cache layouts) and copied forward on a hit. Images
are described in chunks of ``chunk_size``, each stored as soon as it is done, so a crashed run
resumes after its last stored chunk, and a second run over the same images costs zero backend
calls (``stats["calls"]`` counts them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from memlens.core.errors import DataError, ImageError
from memlens.core.io import atomic_write_bytes, canonical_bytes

#: bumped when the layout of a cache entry changes
CACHE_VERSION = 1


@dataclass(frozen=True)
class ImageInput:
    """What an adapter sees of an image: its content hash, its file and (optionally) its family."""

    sha256: str
    path: Path
    family: str | None = None


def slug(adapter_id: str) -> str:
    """A folder name for an adapter id (``ocr/rapidocr-3.10.0/v1`` -> ``ocr__rapidocr-3.10.0__v1``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "__", adapter_id).strip("_") or "adapter"


class DescriptionCache:
    """Content-addressed texts keyed by (image SHA-256, adapter id), one atomic file each."""

    def __init__(self, root: Path, adapter_id: str, fallbacks: Sequence[Path] = ()):
        self.root = Path(root) / slug(adapter_id)
        self.adapter_id = adapter_id
        self.fallbacks = tuple(Path(f) / slug(adapter_id) for f in fallbacks if Path(f) != Path(root))

    def path(self, sha256: str, root: Path | None = None) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise DataError(f"adapter {self.adapter_id}: not a SHA-256 image id: {sha256!r}")
        return (root or self.root) / sha256[:2] / f"{sha256}.json"

    def get(self, sha256: str) -> str | None:
        text = self._read(self.path(sha256), sha256)
        if text is None:
            for root in self.fallbacks:
                text = self._read(self.path(sha256, root), sha256)
                if text is not None:
                    self.put(sha256, text)  # copied forward: the next run reads the one cache
                    break
        return text

    def _read(self, p: Path, sha256: str) -> str | None:
        try:
            raw = p.read_bytes()
        except FileNotFoundError:
            return None
        try:
            entry = json.loads(raw)
        except ValueError:
            return None  # an unreadable entry is recomputed (and rewritten atomically)
        if (
            not isinstance(entry, dict)
            or entry.get("id") != self.adapter_id
            or entry.get("sha256") != sha256
            or not isinstance(entry.get("text"), str)
        ):
            return None
        return entry["text"]

    def put(self, sha256: str, text: str) -> None:
        entry = {"v": CACHE_VERSION, "id": self.adapter_id, "sha256": sha256, "text": text}
        atomic_write_bytes(self.path(sha256), canonical_bytes(entry) + b"\n")


class CachedAdapter:
    """Base of the adapters whose descriptions cost something: looks each image up in the cache,
    computes the missing ones in one :meth:`_describe` call (subclasses) and stores them.

    ``stats``: ``calls`` = images the backend was asked to describe, ``hits`` = cache hits."""

    id: str = "adapter/v0"
    #: a result from ground truth rather than from the image (reports label it as an upper bound)
    upper_bound: bool = False

    #: images described per backend call (and stored after it)
    chunk_size: int = 16

    def __init__(self, cache_dir: Path | None, fallback_dirs: Sequence[Path] = ()):
        self.cache = DescriptionCache(Path(cache_dir), self.id, fallback_dirs) if cache_dir is not None else None
        self.stats = {"calls": 0, "hits": 0}
        #: called with the number of images described after each backend call (a caller's progress)
        self.progress_hook: Callable[[int], None] | None = None

    def describe_images(self, images: Sequence[ImageInput]) -> list[str]:
        out: list[str | None] = []
        todo: dict[str, ImageInput] = {}
        for im in images:
            text = self.cache.get(im.sha256) if self.cache is not None else None
            if text is None:
                todo.setdefault(im.sha256, im)
            else:
                self.stats["hits"] += 1
            out.append(text)
        if todo:
            missing = list(todo.values())
            for im in missing:
                if not Path(im.path).is_file():
                    raise ImageError(im.path, "missing file", item=im.sha256)
            done: dict[str, str] = {}
            bar = tqdm(
                total=len(missing),
                desc=self.id.split("/")[0],
                unit="img",
                disable=not getattr(self, "progress", True) or len(missing) < 2 * self.chunk_size,
                dynamic_ncols=True,
                mininterval=0.5,
            )
            try:
                # in chunks, each stored as soon as it is described: a crash loses one chunk at most
                for i in range(0, len(missing), self.chunk_size):
                    chunk = missing[i : i + self.chunk_size]
                    texts = self._describe(chunk)
                    if len(texts) != len(chunk):
                        raise RuntimeError(f"adapter {self.id}: {len(texts)} descriptions for {len(chunk)} images")
                    self.stats["calls"] += len(chunk)
                    for im, text in zip(chunk, texts):
                        if self.cache is not None:
                            self.cache.put(im.sha256, text)
                        done[im.sha256] = text
                    bar.update(len(chunk))
                    if self.progress_hook is not None:
                        self.progress_hook(len(chunk))
            finally:
                bar.close()
            out = [t if t is not None else done[im.sha256] for t, im in zip(out, images)]
        return [str(t) for t in out]

    def _describe(self, images: Sequence[ImageInput]) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError
