"""Core of the procedural image families: the `Family` protocol, the registry and byte encoding.

Every family turns a random generator (plus optional constraints) into a *spec*: a JSON-serializable
dict that is the exact ground truth of the image (every answer-critical value and every drawn string).
`render(spec)` draws the image from the spec alone, so the same spec always gives the same pixels, and
`render_bytes(spec)` encodes it with fixed settings, so the same spec always gives the same bytes.

Common spec keys (all families):
  family   registry name              size   [w, h] of the final image
  seed     32-bit seed for visual jitter (drawn by sample(); render() uses nothing else random)
  kind     sub-type within the family (where the family has several)
  texts    every string drawn in the image, in reading order
  photo    photo-effect parameters (see photo.py) or None when the image is a clean render
"""

from __future__ import annotations

import io
import random
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from memlens.core.constants import TRACKS

from .photo import apply_photo_effects, sample_photo_effects

__all__ = [
    "Family",
    "FamilyBase",
    "register",
    "encode_image",
    "apply_photo_effects",
    "sample_photo_effects",
    "JPEG_QUALITY",
    "PNG_COMPRESS_LEVEL",
    "render_environment",
]

JPEG_QUALITY = 88
PNG_COMPRESS_LEVEL = 6


@runtime_checkable
class Family(Protocol):
    name: str
    track: str

    def sample(self, rng: random.Random, **constraints: Any) -> dict: ...

    def render(self, spec: dict) -> Image.Image: ...


def register(family: Family) -> Family:
    """Check a family's declaration (its module binds it as ``FAMILY``; :mod:`.registry` lists them)."""
    if family.track not in TRACKS:
        raise ValueError(f"family {family.name!r}: unknown track {family.track!r}")
    return family


class FamilyBase:
    """Shared behaviour: photo-effect sampling, the clean-render/effects split, size checks.

    Subclasses set `name`, `track`, optionally `tracks`, `photo_prob` (chance that sample() adds photo
    effects when the caller does not say), `photo_mode` ("document": the item lies on a surface;
    "scene": the whole frame is a photo) and `photo_like` (encode as JPEG even without effects), and
    implement `_sample(rng, **constraints) -> spec` and `_draw(spec) -> image`. The drawing is RGB, or RGBA
    whose alpha is the item's silhouette: clean renders show `canvas_color` behind it, document-mode photos
    show the surface.
    """

    name: str = ""
    track: str = "document"
    tracks: tuple[str, ...] = ()
    photo_prob: float = 0.0
    photo_mode: str = "document"
    photo_like: bool = False
    canvas_color: tuple[int, int, int] = (226, 226, 229)  # behind transparent parts of RGBA drawings
    #: the family prints the user's own name (passenger, ticket holder, chat owner, hotel guest):
    #: ``sample(..., user="First Last")`` puts the history's persona there; other families ignore it
    takes_user: bool = False

    # -- public API -------------------------------------------------------------------------------
    def sample(self, rng: random.Random, **constraints: Any) -> dict:
        photo = constraints.pop("photo", None)
        user = constraints.pop("user", None)
        if user and self.takes_user:
            constraints["user"] = user
        spec = self._sample(rng, **constraints)
        spec["family"] = self.name
        spec.setdefault("texts", [])
        # decide photo effects last, so that adding photo=... never changes the content
        want = rng.random() < self.photo_prob if photo is None else photo
        if isinstance(want, dict):
            effects = dict(want)
            effects.setdefault("mode", self.photo_mode)
            spec["photo"] = effects
        elif isinstance(want, str):  # photo="light" | "medium" | "strong"
            spec["photo"] = sample_photo_effects(rng, mode=self.photo_mode, strength=want)
        elif want:
            spec["photo"] = sample_photo_effects(rng, mode=self.photo_mode)
        else:
            spec["photo"] = None
        return spec

    def render(self, spec: dict) -> Image.Image:
        if spec.get("family") != self.name:
            raise ValueError(f"spec is for family {spec.get('family')!r}, not {self.name!r}")
        img = self._draw(spec)
        w, h = spec["size"]
        if img.size != (w, h):
            raise AssertionError(f"{self.name}: drew {img.size}, spec says {(w, h)}")
        if spec.get("photo"):
            # an RGBA drawing marks the item's silhouette (e.g. a receipt's torn paper) for document photos
            return apply_photo_effects(img, spec["photo"])
        if img.mode == "RGBA":
            flat = Image.new("RGB", img.size, self.canvas_color)
            flat.paste(img, (0, 0), img)
            return flat
        return img.convert("RGB") if img.mode != "RGB" else img

    def is_photo(self, spec: dict) -> bool:
        return bool(spec.get("photo")) or self.photo_like

    # -- to implement -----------------------------------------------------------------------------
    def _sample(self, rng: random.Random, **constraints: Any) -> dict:  # pragma: no cover
        raise NotImplementedError

    def _draw(self, spec: dict) -> Image.Image:  # pragma: no cover
        raise NotImplementedError


def encode_image(img: Image.Image, photo_like: bool) -> tuple[bytes, str]:
    """Encode with fixed settings (no metadata), so equal pixels always give equal bytes."""
    buf = io.BytesIO()
    if photo_like:
        img.convert("RGB").save(
            buf, format="JPEG", quality=JPEG_QUALITY, subsampling=2, optimize=False, progressive=False
        )
        return buf.getvalue(), "jpg"
    img.save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL, optimize=False)
    return buf.getvalue(), "png"


def render_environment() -> dict:
    """Versions that change rendered bytes (record them in the dataset manifest)."""
    import numpy
    import PIL
    from PIL import features

    from .fonts import font_fingerprint

    return {
        "pillow": PIL.__version__,
        "freetype": features.version("freetype2"),
        "libjpeg": features.version("jpg"),
        "libjpeg_turbo": features.version("libjpeg_turbo"),
        "zlib": features.version("zlib"),
        "numpy": numpy.__version__,
        "jpeg_quality": JPEG_QUALITY,
        "png_compress_level": PNG_COMPRESS_LEVEL,
        "fonts": font_fingerprint(),
    }
