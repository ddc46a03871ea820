"""Image sources behind one protocol: ``fetch(request, rng) -> (bytes, ext, truth)``.

- ``synthetic`` (offline default): renders the requested family with Pillow; ``truth`` is the exact
  ground truth of what the image shows.
- ``directory``: the user's own images (``<dir>/<family>/*.{jpg,png}``), truth = file metadata.

A source is chosen by the ``images`` config group (``conf/images/``) and instantiated from its
``_target_``; adding one (e.g. a web crawler) is one class with ``fetch`` and one YAML file.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from memlens.core.errors import ConfigError, ImageError


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


class SyntheticSource:
    name = "synthetic"

    def __init__(self, name: str = "synthetic", photo_effect_rate: float = 0.5, **_):
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


class DirectorySource:
    """Serve the user's own images from ``root/<family>/``, in sorted order."""

    name = "directory"

    def __init__(self, root: str, name: str = "directory", **_):
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
