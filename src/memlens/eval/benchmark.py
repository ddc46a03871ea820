"""The benchmark a system is evaluated on: one object over either item source.

``data.items=built`` reads the benchmark this pipeline built (``data/generated`` + ``data/instances``,
:class:`memlens.core.items.BuiltBenchmark`); ``data.items=official`` reads an official MEMLENS release
folder (``data.official_dir``, :class:`memlens.core.official.OfficialRelease`). :class:`Benchmark` owns
what every consumer needs of it (VLMEvalKit's idea: a dataset owns its prompt and its scoring keys):
the items per length, the questions, the prompt of an item, the judge task key of a question and the
dataset hash that names what was evaluated. Systems, judges and reports never know which source it is.

Images resolve to content-addressed copies (hard links when possible) ``<cache>/neutral_images/
<sha256>.<ext>`` for both sources, so a path a system may be given (a ``file://`` URL with
``image_transport: url``, an adapter's input) names neither a release folder nor ``data/``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from memlens.construction.data_settings import ITEM_SOURCES
from memlens.core.config import Paths, resolved_lengths
from memlens.core.errors import ConfigError, DataError
from memlens.core.items import BuiltBenchmark, EvalItem
from memlens.core.official import OfficialRelease
from memlens.core.schema import Question
from memlens.core.store import content_link
from memlens.core.tasks import task_key
from memlens.eval.prompt import build_messages


class Benchmark:
    """Items of one benchmark (built or official), with prompts, task keys and the dataset hash."""

    def __init__(
        self,
        source: BuiltBenchmark | OfficialRelease,
        kind: str,
        paths: Paths | None = None,
        *,
        link_images: bool = True,
    ):
        """``link_images=False``: images resolve to their verified source files and nothing is
        written (a dry run, which sends no image and shows images by their hash only)."""
        if kind not in ITEM_SOURCES:
            raise ConfigError(f"unknown item source {kind!r} ({' | '.join(ITEM_SOURCES)})")
        self.source = source
        self.kind = kind
        self.paths = paths
        self.link_images = link_images
        self._linked: set[Path] = set()
        self._links: dict[str, Path] = {}  # image id -> its content-addressed copy

    @classmethod
    def from_config(cls, cfg, paths: Paths, *, link_images: bool = True) -> Benchmark:
        kind = str(cfg.data.items)
        if kind == "built":
            return cls(BuiltBenchmark(paths), kind, paths, link_images=link_images)
        if kind == "official":
            folder = cfg.data.official_dir
            if not folder:
                raise ConfigError("data.items=official needs data.official_dir (the folder with dataset_*.json)")
            folder = Path(str(folder))
            if not folder.is_absolute():
                folder = paths.root / folder
            release = OfficialRelease(folder, neutral_dir=neutral_dir(paths), link_images=link_images)
            return cls(release, kind, paths, link_images=link_images)
        raise ConfigError(f"unknown data.items {kind!r} ({' | '.join(ITEM_SOURCES)})")

    # items ------------------------------------------------------------------------------------
    def lengths(self) -> list[str]:
        return self.source.lengths()

    def items(self, length: str) -> Iterator[EvalItem]:
        if self.kind != "built" or self.paths is None or not self.link_images:
            return self.source.items(length)  # a release links its images itself (neutral_dir)
        return (replace(it, resolve_image=self.resolve_image) for it in self.source.items(length))

    def resolve_image(self, image_id: str) -> Path:
        """A built benchmark's image (verified against its id) as a content-addressed copy outside
        ``data/`` (:func:`neutral_dir`)."""
        assert self.paths is not None
        src = self.source.resolve_image(image_id)  # checks the source file on every call
        dest = self._links.get(image_id)
        if dest is None:  # the copy is made and verified once per process (content_link's ``linked``)
            dest = self._links[image_id] = content_link(src, image_id, neutral_dir(self.paths), self._linked)
        return dest

    def count(self, length: str) -> int:
        return self.source.count(length)

    @property
    def questions(self) -> dict[str, Question]:
        return self.source.questions

    # what the judge and the prompt need -------------------------------------------------------
    @staticmethod
    def task_key(question: Question) -> str:
        """The judge task key of a question (official routing)."""
        return task_key(question.question_type, question.question_subtype, str(question.answer))

    @staticmethod
    def messages(item: EvalItem, mode: str = "standard", **kwargs) -> list[dict]:
        """The chat messages of an item in a prompt mode (see :mod:`memlens.eval.prompt`)."""
        return build_messages(item, mode, **kwargs)

    # identity ---------------------------------------------------------------------------------
    def dataset_hash(self) -> str:
        """SHA-256 naming exactly this benchmark: the built benchmark's question and instance
        manifests (which list every artifact's hash), or the release files' hash."""
        if self.kind == "official":
            return self.source.dataset_hash()
        assert self.paths is not None
        h = hashlib.sha256()
        for p in (self.paths.generated / "manifest.json", self.paths.instances / "manifest.json"):
            if not p.is_file():
                raise DataError(f"{p}: missing; build the benchmark first (dvc repro assemble)")
            h.update(p.read_bytes())
        return h.hexdigest()


def neutral_dir(paths: Paths) -> Path:
    """Where a system's images are: ``<cache>/neutral_images/`` (content-addressed, both sources)."""
    return paths.cache / "neutral_images"


def requested_lengths(cfg, bench: Benchmark) -> list[str]:
    """The lengths a run covers: ``eval.lengths``, else the built scale's (``data.lengths`` or the
    scale's default), else every length of an official release; each must exist in the benchmark."""
    lengths = [str(x) for x in cfg.eval.lengths]
    if not lengths:
        lengths = resolved_lengths(cfg) if bench.kind == "built" else bench.lengths()
    built = bench.lengths()
    missing = [n for n in lengths if n not in built]
    if missing:
        raise ConfigError(f"lengths {missing} are not in the benchmark (built: {built})")
    return lengths


def open_benchmark(cfg, paths: Paths, *, link_images: bool = True) -> Benchmark:
    """The benchmark the config names (``data.items``); ``cfg``: settings or a composed config;
    ``link_images=False``: write nothing (see :class:`Benchmark`)."""
    from memlens.core.settings import as_settings

    return Benchmark.from_config(as_settings(cfg), paths, link_images=link_images)


def dataset_hash(cfg, paths: Paths) -> str:
    return open_benchmark(cfg, paths).dataset_hash()
