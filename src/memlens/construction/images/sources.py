"""Image sources behind one protocol: ``fetch(request, rng) -> (bytes, ext, truth)``.

- ``synthetic`` (offline default): renders the requested family with Pillow; ``truth`` is the exact
  ground truth of what the image shows.
- ``directory``: the user's own images (``<dir>/<family>/*.{jpg,png}``), truth = file metadata.

A source is chosen by the ``images`` config group (``conf/images/``) and instantiated from its
``_target_``; adding one is one class marked ``@component("image_source", name)`` with ``fetch``, its
schema as ``Config`` (a :class:`SourceSettings`), and one YAML file.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from memlens.core.errors import ConfigError, ImageError
from memlens.core.registry import component
from memlens.core.settings import Fraction, NonNegFloat, NonNegInt, Targeted, configured


@dataclass
class ImageRequest:
    """What one image must show: its family (renderer or folder) and the constraints a question
    type puts on its content (e.g. ``{"count": 3}``); ``role`` is evidence or haystack."""

    family: str
    constraints: dict = field(default_factory=dict)
    role: str = "evidence"


class ImageSource(Protocol):
    name: str

    def fetch(self, request: ImageRequest, rng: random.Random) -> tuple[bytes, str, dict]: ...


class SourceSettings(Targeted):
    """Keys of every image source (``images``); ``haystack_per_session`` and ``workers`` are read by
    the crawl stage, not by the source class."""

    name: str
    haystack_per_session: NonNegFloat = 2.0  # haystack images per image-bearing session
    workers: NonNegInt = 0  # rendering processes; 0 = one per CPU core (at most 8)


class SyntheticSourceSettings(SourceSettings):
    """``images`` with ``_target_: memlens.construction.images.sources.SyntheticSource`` (offline renderers)."""

    name: str = "synthetic"
    photo_effect_rate: Fraction = 0.5  # share of photo-like images that get perspective/blur/noise/lighting


class DirectorySourceSettings(SourceSettings):
    """``images`` with ``_target_: memlens.construction.images.sources.DirectorySource`` (your own images,
    ``root/<family>/*.jpg|png``)."""

    name: str = "directory"
    root: str  # the folder holding one sub-folder per image family


@configured
@component("image_source", "synthetic")
class SyntheticSource:
    name = "synthetic"
    Config = SyntheticSourceSettings

    def __init__(self, *, name: str, photo_effect_rate: float, **_):
        self.photo_effect_rate = float(photo_effect_rate)

    def families(self) -> list[str]:
        from memlens.construction.images.synthetic import FAMILIES

        return sorted(FAMILIES)

    def fetch(self, request: ImageRequest, rng: random.Random) -> tuple[bytes, str, dict]:
        from memlens.construction.images.synthetic import get_family, render_bytes

        try:
            fam = get_family(request.family)
        except KeyError as exc:
            raise ConfigError(str(exc)) from None
        cons = dict(request.constraints)
        if "photo" not in cons:  # photo-like variants (perspective, blur, noise, lighting)
            cons["photo"] = rng.random() < self.photo_effect_rate
        spec = fam.sample(rng, **cons)
        data, ext = render_bytes(spec)
        return data, ext, spec


@configured
@component("image_source", "directory")
class DirectorySource:
    """Serve the user's own images from ``root/<family>/``, in sorted order."""

    name = "directory"
    Config = DirectorySourceSettings

    def __init__(self, root: str, *, name: str, **_):
        self.root = Path(root)
        if not self.root.is_dir():
            raise ConfigError(f"images.root {self.root} is not a folder")
        self._used: set[Path] = set()

    def families(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if p.is_dir())

    def fetch(self, request: ImageRequest, rng: random.Random) -> tuple[bytes, str, dict]:
        folder = self.root / request.family
        files = sorted(p for p in folder.glob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
        free = [p for p in files if p not in self._used]
        if not free:
            raise ImageError(folder, f"no unused images left for family {request.family!r}")
        p = free[rng.randrange(len(free))]
        self._used.add(p)
        ext = "jpg" if p.suffix.lower() in (".jpg", ".jpeg") else "png"
        return (
            p.read_bytes(),
            ext,
            {"family": request.family, "file": p.name, "query": request.constraints.get("query", "")},
        )
