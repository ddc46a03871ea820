"""Input adapters: what an image becomes in a memory agent's store.

Interface (stable; memory agents code against it)::

    class ImageInput:            # what an adapter sees: no role, no question
        sha256: str; path: Path; family: str | None
    class Adapter(Protocol):
        id: str                  # name + backend + prompt/model version, e.g. "ocr/rapidocr-3.10.0/v1"
        upper_bound: bool        # True for oracle_caption (ground truth, not perception)
        def describe_images(self, images: Sequence[ImageInput]) -> list[str]
    def build_adapter(name, *, cache_dir: Path, fallback_dirs=(), **options) -> Adapter
    def open_adapter(name, options, *, cache_root: Path, benchmark=None) -> Adapter  # the shared cache

``describe_images`` returns, for each image, the text that replaces its ``<image>`` placeholder in a
text memory (:func:`memlens.eval.memory.retrieval.session_docs` substitutes it):

- ``markers``: ``[image]`` (nothing of the image survives).
- ``ocr``: ``[image; text read: ...]`` (rapidocr, :mod:`memlens.eval.memory.ocr`).
- ``caption``: ``[image: <caption>]`` by BLIP-2 through transformers or any OpenAI-compatible VLM
  endpoint (:mod:`memlens.eval.memory.caption`).
- ``oracle_caption``: ``[image (ground truth): ...]``: the image's exact ground truth written as text.
  An UPPER BOUND, never a perception result (``upper_bound`` is True, its id starts with
  ``oracle_caption/``). Its truth comes from the benchmark's image records (``truth_of``: a mapping
  or callable sha256 -> truth dict, built from the image index by the caller that owns the answer
  key), never from anything an agent is shown.
- ``interleaved``: the original image files: ``describe_images`` returns their paths (an agent with
  pixel access reads them).
- ``render``: sessions drawn as screenshot-style composite images (:mod:`memlens.eval.memory.render`);
  ``describe_images`` returns image paths like ``interleaved``, ``render_session(...)`` the
  composite images of a whole session (cached by session content).

Every adapter that computes something caches it on disk by (image hash, adapter id), the id
naming the backend, its model and its prompt/format version
(:class:`memlens.eval.memory.cache.DescriptionCache`, atomic files under ``cache_dir``), so a second
run costs zero backend calls (``adapter.stats["calls"]``).

**One cache for every user.** :func:`open_adapter` is how the memory agents, the LVLM ``caption``
mode, the MemOS/M2A exporter and ``memlens diagnose`` get an adapter: all of them read and write
the same folder, :func:`adapter_cache_dir` (``<Paths.cache>/memory/adapters``), so an OCR text or a
caption computed by the diagnostics is reused by an agent run and the other way round. Entries of
the older agent-side folder (``<Paths.cache>/agents/adapters``, :data:`LEGACY_CACHE_DIRS`) are still
read and copied forward.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memlens.core.errors import ConfigError, DataError
from memlens.core.registry import component, component_names, find_component
from memlens.eval.memory.cache import CachedAdapter, ImageInput

__all__ = [
    "Adapter",
    "ImageInput",
    "InterleavedAdapter",
    "MarkersAdapter",
    "OracleCaptionAdapter",
    "adapter_cache_dir",
    "build_adapter",
    "image_lookup",
    "open_adapter",
    "truth_lookup",
    "truth_text",
]

MARKER = "[image]"


@runtime_checkable
class Adapter(Protocol):
    id: str

    def describe_images(self, images: Sequence[ImageInput]) -> list[str]: ...


@component("adapter", "markers")
class MarkersAdapter:
    """``[image]`` for every image: the text-only baseline (costs nothing, needs no cache)."""

    id = "markers/v1"
    upper_bound = False

    @classmethod
    def create(cls, *, cache_dir: Path | None = None, fallback_dirs: Sequence[Path] = (), **options: Any):
        return cls()

    def __init__(self) -> None:
        self.stats = {"calls": 0, "hits": 0}

    def describe_images(self, images: Sequence[ImageInput]) -> list[str]:
        return [MARKER for _ in images]


@component("adapter", "interleaved")
class InterleavedAdapter:
    """The original images: their file paths (for agents that keep or read pixels)."""

    id = "interleaved/v1"
    upper_bound = False
    #: ``describe_images`` gives image paths, not text
    gives_paths = True

    @classmethod
    def create(cls, *, cache_dir: Path | None = None, fallback_dirs: Sequence[Path] = (), **options: Any):
        return cls()

    def __init__(self) -> None:
        self.stats = {"calls": 0, "hits": 0}

    def describe_images(self, images: Sequence[ImageInput]) -> list[str]:
        return [str(Path(im.path)) for im in images]


# ------------------------------------------------------------------------------- oracle captions
#: truth keys that describe how an image was drawn, not what it shows
_DRAWING_KEYS = frozenset(
    {"photo", "seed", "size", "bbox", "center", "cells", "accent", "board_color", "label_color", "color_rgb", "cols"}
)
ORACLE_FORMAT_VERSION = "v1"


def _is_drawing_value(v: Any) -> bool:
    """Pixel geometry or RGB tuples: lists of numbers."""
    return isinstance(v, (list, tuple)) and bool(v) and all(isinstance(x, (int, float)) for x in v)


def _flatten(value: Any, key: str = "") -> list[str]:
    if isinstance(value, dict):
        parts = []
        for k in sorted(value):
            if k in _DRAWING_KEYS or value[k] is None or _is_drawing_value(value[k]):
                continue
            parts += _flatten(value[k], f"{key}.{k}" if key else str(k))
        return parts
    if isinstance(value, (list, tuple)):
        if all(isinstance(x, (str, int, float)) for x in value):
            return [f"{key}: {', '.join(str(x) for x in value)}"] if value else []
        items = []
        for x in value:
            inner = _flatten(x)
            if inner:
                items.append("(" + "; ".join(inner) + ")")
        return [f"{key}: {' '.join(items)}"] if items else []
    if isinstance(value, bool):
        return [f"{key}: {'yes' if value else 'no'}"]
    return [f"{key}: {value}"]


def truth_text(truth: Mapping[str, Any]) -> str:
    """An image's ground truth as one line of ``key: value`` facts (drawing parameters left out;
    list order kept, so left-to-right object order and receipt line order survive)."""
    return "; ".join(_flatten(dict(truth)))


@component("adapter", "oracle_caption")
class OracleCaptionAdapter(CachedAdapter):
    """The ground truth of each image written as text: an upper bound on any captioner.

    ``truth_of`` maps an image's SHA-256 to its truth dict (a mapping or a callable); it is built by
    the caller from the benchmark's image index (the answer key), never from what agents see."""

    id = f"oracle_caption/truth-text/{ORACLE_FORMAT_VERSION}"
    upper_bound = True

    def __init__(
        self,
        cache_dir: Path | None,
        *,
        truth_of: Mapping[str, dict] | Callable[[str], dict | None],
        fallback_dirs: Sequence[Path] = (),
    ):
        super().__init__(cache_dir, fallback_dirs)
        self._truth_of = truth_of

    @classmethod
    def create(cls, *, cache_dir: Path | None = None, fallback_dirs: Sequence[Path] = (), **options: Any):
        if options.get("truth_of") is None:
            raise ConfigError("oracle_caption needs truth_of (sha256 -> ground truth, from the image index)")
        return cls(cache_dir, truth_of=options.pop("truth_of"), fallback_dirs=fallback_dirs)

    def _truth(self, sha: str) -> dict:
        t = self._truth_of(sha) if callable(self._truth_of) else self._truth_of.get(sha)
        if t is None:
            raise DataError(f"oracle_caption: image {sha} has no ground truth in the image index")
        return t

    def describe_images(self, images: Sequence[ImageInput]) -> list[str]:
        # ground truth costs nothing to read, but it is cached like any adapter (same code path)
        return super().describe_images(images)

    def _describe(self, images: Sequence[ImageInput]) -> list[str]:
        return [f"[image (ground truth): {truth_text(self._truth(im.sha256))}]" for im in images]


def build_adapter(
    name: str, *, cache_dir: Path | None = None, fallback_dirs: Sequence[Path] = (), **options: Any
) -> Adapter:
    """An adapter by name (a component of kind ``adapter``: ``memlens list adapters``), built by
    its class's ``create``; its cache under ``cache_dir`` (entries missing there are read from
    ``fallback_dirs``). Options:

    - ``ocr``: ``min_score`` (0.5), ``progress`` (True), ``workers`` (0: one process per core; 1: in-process),
      ``engine``, ``precision``, ``det_limit_type``, ``det_limit_side_len``, ``rec_batch_num``, ``use_cls`` (``memory.ocr``,
      :class:`memlens.eval.memory.settings.OCRSettings`; defaults :data:`memlens.eval.memory.ocr.READING`).
    - ``caption``: ``backend`` = ``blip2`` (``model_dir``: a local BLIP-2 folder; ``max_new_tokens``,
      ``prompt``) or ``openai`` (``base_url``, ``model``, ``api_key_env``, ``prompt``, ``concurrency``,
      ``max_new_tokens``, ``timeout_s``, ``max_retries``).
    - ``oracle_caption``: ``truth_of`` (required): sha256 -> truth dict, from the image index.
    - ``render``: ``width`` (1024), ``max_height`` (4096), ``resolve_image`` (sha -> path).
    """
    return find_component("adapter", name).create(cache_dir=cache_dir, fallback_dirs=fallback_dirs, **options)


def text_adapters() -> list[str]:
    """The adapters whose ``describe_images`` gives text (not image paths)."""
    return [n for n in component_names("adapter") if not getattr(find_component("adapter", n), "gives_paths", False)]


# ------------------------------------------------------------------------------- the shared cache
#: older adapter-cache folders under ``Paths.cache``, still read (hits are copied forward)
LEGACY_CACHE_DIRS = ("agents/adapters",)


def adapter_cache_dir(cache_root: str | Path) -> Path:
    """The one adapter cache of a project: ``<cache_root>/memory/adapters`` (``cache_root`` is
    :attr:`memlens.core.config.Paths.cache`)."""
    return Path(cache_root) / "memory" / "adapters"


def image_lookup(benchmark: Any, field: str) -> Callable[[str], Any] | None:
    """``image id -> <field> of its image record`` (``truth``, ``family`` ...) of a built benchmark's
    image index, or None for a benchmark without one (an official release)."""
    src = getattr(benchmark, "source", None)
    if src is None or not hasattr(src, "paths"):
        return None

    def lookup(image_id: str) -> Any:
        rec = src.images.get(image_id)
        return getattr(rec, field) if rec is not None else None

    return lookup


def truth_lookup(benchmark: Any) -> Callable[[str], dict | None] | None:
    """``sha256 -> ground truth`` of a built benchmark's images (for ``oracle_caption``), or None
    (an official release has no image ground truth)."""
    return image_lookup(benchmark, "truth")


def open_adapter(
    name: str, options: Mapping[str, Any] | None, *, cache_root: str | Path, benchmark: Any = None
) -> Adapter:
    """The adapter ``name`` with ``options`` on the project's one cache (:func:`adapter_cache_dir`).

    ``oracle_caption`` reads the ground truth of ``benchmark``'s image index (an upper bound: whoever
    uses the adapter is never shown the index); it is a :class:`ConfigError` without a built
    benchmark."""
    opts = dict(options or {})
    if name == "oracle_caption":
        truth_of = truth_lookup(benchmark)
        if truth_of is None:
            raise ConfigError("adapter oracle_caption needs a built benchmark (its image index holds the ground truth)")
        opts["truth_of"] = truth_of
    return build_adapter(
        name,
        cache_dir=adapter_cache_dir(cache_root),
        fallback_dirs=tuple(Path(cache_root) / d for d in LEGACY_CACHE_DIRS),
        **opts,
    )
