"""The ``render`` adapter: each session drawn as screenshot-style composite images (Pillow), the
input of M3-Agent-style memorization (a VLM reads the rendered session).

A page shows a header with the session date, then each turn as a chat bubble (user right, blue;
assistant left, grey) with its text wrapped to the page width and its images as thumbnails where
their ``<image>`` placeholders stand. A session taller than ``max_height`` continues on further pages.
Pages are PNG files in the cache, content-addressed by everything drawn (format version, sizes,
date, each turn's role, text and image hashes): ``<cache>/render__<v>/<key[:2]>/<key>-<page>.png``
and a ``<key>.json`` listing the pages, written last (atomically), so a crash mid-session renders
it again and a finished session is never drawn twice (``stats["calls"]`` counts drawn sessions).
Same input gives byte-identical PNGs.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from PIL import Image, ImageDraw

from memlens.construction.images.synthetic.fonts import font
from memlens.core.constants import IMAGE_PLACEHOLDER
from memlens.core.errors import ConfigError, ImageError
from memlens.core.io import atomic_write_bytes, canonical_bytes, sha256_bytes
from memlens.core.registry import component
from memlens.eval.memory.cache import ImageInput

RENDER_VERSION = "v1"
_MARGIN = 24
_PAD = 12
_FONT_SIZE = 18
_LINE = 24


def _wrap(text: str, f, max_w: float) -> list[str]:
    lines: list[str] = []
    for para in text.split("\n"):
        words, cur = para.split(), ""
        for w in words:
            cand = f"{cur} {w}".strip()
            if f.getlength(cand) <= max_w or not cur:
                cur = cand
            else:
                lines.append(cur)
                cur = w
        lines.append(cur)
    return lines


@component("adapter", "render")
class RenderAdapter:
    """Sessions as composite images; ``describe_images`` returns image paths (like ``interleaved``)."""

    upper_bound = False
    gives_paths = True

    @classmethod
    def create(cls, *, cache_dir: Path | None = None, fallback_dirs: Sequence[Path] = (), **options):
        if cache_dir is None:
            raise ConfigError("render needs a cache_dir (the rendered images are files)")
        return cls(cache_dir, **options)

    def __init__(
        self,
        cache_dir: Path,
        *,
        width: int = 1024,
        max_height: int = 4096,
        thumb: int = 320,
        resolve_image: Callable[[str], Path] | None = None,
    ):
        self.width, self.max_height, self.thumb = int(width), int(max_height), int(thumb)
        self.id = f"render/pillow-w{self.width}-h{self.max_height}-t{self.thumb}/{RENDER_VERSION}"
        self.root = Path(cache_dir) / f"render__{RENDER_VERSION}"
        self.resolve_image = resolve_image
        self.stats = {"calls": 0, "hits": 0}

    def describe_images(self, images: Sequence[ImageInput]) -> list[str]:
        return [str(Path(im.path)) for im in images]

    # ---------------------------------------------------------------------------------- sessions
    def session_key(self, date: str, turns) -> str:
        body = [self.id, date, [[t.role, t.content, list(t.images)] for t in turns]]
        return sha256_bytes(canonical_bytes(body))

    def render_session(
        self, date: str, turns, resolve_image: Callable[[str], Path] | None = None, *, session_id: str = ""
    ) -> list[Path]:
        """The page images of one session (``turns``: objects with ``role``, ``content``, ``images``)."""
        resolve = resolve_image or self.resolve_image
        key = self.session_key(date, turns)
        index = self.root / key[:2] / f"{key}.json"
        if index.is_file():
            try:
                pages = [self.root / key[:2] / p for p in json.loads(index.read_text())["pages"]]
                if all(p.is_file() for p in pages):
                    self.stats["hits"] += 1
                    return pages
            except (ValueError, KeyError):
                pass
        if resolve is None:
            raise ValueError("render_session needs resolve_image (image id -> file)")
        blocks = self._layout(date, turns, resolve, session_id)
        pages = self._paginate(blocks)
        names = []
        for i, page in enumerate(pages):
            buf = io.BytesIO()
            page.save(buf, format="PNG", optimize=False, compress_level=6)
            name = f"{key}-{i}.png"
            atomic_write_bytes(self.root / key[:2] / name, buf.getvalue())
            names.append(name)
        atomic_write_bytes(index, canonical_bytes({"id": self.id, "pages": names}) + b"\n")
        self.stats["calls"] += 1
        return [self.root / key[:2] / n for n in names]

    def _layout(self, date: str, turns, resolve, session_id: str) -> list[Image.Image]:
        """One image block per header/turn (pages are stacks of blocks)."""
        f, fb = font("sans", _FONT_SIZE), font("sans-bold", _FONT_SIZE)
        inner = self.width - 2 * _MARGIN
        bubble_w = int(inner * 0.8)
        blocks = []
        head = Image.new("RGB", (self.width, 48), (245, 245, 247))
        ImageDraw.Draw(head).text((_MARGIN, 12), f"Conversation - {date}", fill=(40, 40, 40), font=fb)
        blocks.append(head)
        for t in turns:
            parts = t.content.split(IMAGE_PLACEHOLDER)
            items: list[tuple[str, object]] = []
            for j, part in enumerate(parts):
                if part.strip():
                    items += [("text", ln) for ln in _wrap(part.strip(), f, bubble_w - 2 * _PAD)]
                if j < len(t.images):
                    items.append(("image", t.images[j]))
            thumbs = {}
            h = _PAD * 2 + _LINE  # speaker line
            for kind, val in items:
                if kind == "text":
                    h += _LINE
                else:
                    path = resolve(val)
                    try:
                        with Image.open(path) as im:
                            im = im.convert("RGB")
                            im.thumbnail((min(self.thumb * 2, bubble_w - 2 * _PAD), self.thumb), Image.LANCZOS)
                    except OSError as exc:
                        raise ImageError(path, f"cannot be rendered (session {session_id}): {exc}") from None
                    thumbs[val] = im
                    h += im.height + _PAD
            user = t.role == "user"
            block = Image.new("RGB", (self.width, h + _PAD), (255, 255, 255))
            d = ImageDraw.Draw(block)
            x0 = self.width - _MARGIN - bubble_w if user else _MARGIN
            d.rounded_rectangle((x0, 0, x0 + bubble_w, h), radius=14, fill=(214, 232, 255) if user else (236, 236, 238))
            y = _PAD
            d.text((x0 + _PAD, y), "User" if user else "Assistant", fill=(60, 60, 90), font=fb)
            y += _LINE
            for kind, val in items:
                if kind == "text":
                    d.text((x0 + _PAD, y), str(val), fill=(20, 20, 20), font=f)
                    y += _LINE
                else:
                    im = thumbs[val]
                    block.paste(im, (x0 + _PAD, y))
                    y += im.height + _PAD
            blocks.append(block)
        return blocks

    def _paginate(self, blocks: list[Image.Image]) -> list[Image.Image]:
        pages, cur, h = [], [], 0
        for b in blocks:
            if cur and h + b.height > self.max_height:
                pages.append(cur)
                cur, h = [], 0
            cur.append(b)
            h += b.height
        if cur:
            pages.append(cur)
        out = []
        for stack in pages:
            page = Image.new("RGB", (self.width, sum(b.height for b in stack)), (255, 255, 255))
            y = 0
            for b in stack:
                page.paste(b, (0, y))
                y += b.height
            out.append(page)
        return out
