"""Procedural image families with exact ground truth (the offline stand-in for crawled web photos).

from memlens.construction.images.synthetic import get_family, render_bytes
fam = get_family("receipt")
spec = fam.sample(random.Random(7), store="Luna Bakery", currency="EUR")
data, ext = render_bytes(spec)      # same spec -> same bytes
"""

from __future__ import annotations

from .base import (
    JPEG_QUALITY,
    PNG_COMPRESS_LEVEL,
    Family,
    FamilyBase,
    apply_photo_effects,
    encode_image,
    register,
    render_environment,
    sample_photo_effects,
)
from .registry import FAMILIES, get_family, render, render_bytes

__all__ = [
    "FAMILIES",
    "Family",
    "FamilyBase",
    "apply_photo_effects",
    "encode_image",
    "get_family",
    "register",
    "render",
    "render_bytes",
    "render_environment",
    "sample_photo_effects",
    "JPEG_QUALITY",
    "PNG_COMPRESS_LEVEL",
]
