"""The image families, listed once: name -> family (read-only)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from PIL import Image

from . import (
    app_screenshot,
    calendar_page,
    chat_screenshot,
    clock,
    named_sign,
    object_scene,
    price_tag,
    receipt,
    ticket,
)
from .base import Family, encode_image

FAMILIES: Mapping[str, Family] = MappingProxyType(
    {
        m.FAMILY.name: m.FAMILY
        for m in (
            app_screenshot,
            calendar_page,
            chat_screenshot,
            clock,
            named_sign,
            object_scene,
            price_tag,
            receipt,
            ticket,
        )
    }
)


def get_family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(FAMILIES))
        raise KeyError(f"unknown image family {name!r}; known families: {known}") from None


def render(spec: dict) -> Image.Image:
    """Render any spec with its family."""
    return get_family(spec["family"]).render(spec)


def render_bytes(spec: dict) -> tuple[bytes, str]:
    """Render and encode a spec: (bytes, extension). JPEG (q=88) for photo-like images, PNG otherwise."""
    fam = get_family(spec["family"])
    img = fam.render(spec)
    is_photo = fam.is_photo(spec) if hasattr(fam, "is_photo") else bool(spec.get("photo"))
    return encode_image(img, is_photo)
