"""Font loading (DejaVu TTFs, cached) with a fallback to Pillow's bundled font, and text helpers."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

from PIL import ImageDraw, ImageFont

FONT_DIR = Path(os.environ.get("MEMLENS_FONT_DIR", "/usr/share/fonts/truetype/dejavu"))

FONT_FILES = {
    "sans": "DejaVuSans.ttf",
    "sans-bold": "DejaVuSans-Bold.ttf",
    "sans-oblique": "DejaVuSans-Oblique.ttf",
    "sans-boldoblique": "DejaVuSans-BoldOblique.ttf",
    "sans-light": "DejaVuSans-ExtraLight.ttf",
    "cond": "DejaVuSansCondensed.ttf",
    "cond-bold": "DejaVuSansCondensed-Bold.ttf",
    "mono": "DejaVuSansMono.ttf",
    "mono-bold": "DejaVuSansMono-Bold.ttf",
    "serif": "DejaVuSerif.ttf",
    "serif-bold": "DejaVuSerif-Bold.ttf",
    "serif-italic": "DejaVuSerif-Italic.ttf",
    "serif-bolditalic": "DejaVuSerif-BoldItalic.ttf",
    "serif-cond-bold": "DejaVuSerifCondensed-Bold.ttf",
}


@lru_cache(maxsize=1024)
def font(name: str, size: int) -> ImageFont.FreeTypeFont:
    """A DejaVu face by short name at a pixel size. BASIC layout (no raqm) for reproducible shaping."""
    size = max(6, int(size))
    path = FONT_DIR / FONT_FILES[name]
    try:
        return ImageFont.truetype(str(path), size, layout_engine=ImageFont.Layout.BASIC)
    except OSError:
        # Bundled Aileron: ASCII only (currency signs other than $ show as boxes).
        return ImageFont.load_default(size=size)


def text_width(f: ImageFont.FreeTypeFont, text: str) -> float:
    return f.getlength(text)


def text_box(f: ImageFont.FreeTypeFont, text: str) -> tuple[int, int, int, int]:
    return f.getbbox(text)


def fit_font(
    name: str, text: str, max_w: float, size: int, min_size: int = 8, max_h: float | None = None
) -> ImageFont.FreeTypeFont:
    """Largest size <= `size` at which `text` fits in max_w (and max_h, by cap-to-descender height)."""
    s = int(size)
    while s > min_size:
        f = font(name, s)
        if f.getlength(text) <= max_w:
            if max_h is None:
                return f
            b = f.getbbox(text)
            if b[3] - b[1] <= max_h:
                return f
        s -= max(1, s // 20)
    return font(name, min_size)


def wrap_text(f: ImageFont.FreeTypeFont, text: str, max_w: float) -> list[str]:
    """Greedy word wrap by measured width (words longer than the line are split by characters)."""
    lines: list[str] = []
    for para in text.split("\n"):
        cur = ""
        for word in para.split(" "):
            cand = word if not cur else cur + " " + word
            if f.getlength(cand) <= max_w:
                cur = cand
                continue
            if cur:
                lines.append(cur)
            while f.getlength(word) > max_w and len(word) > 1:
                k = len(word)
                while k > 1 and f.getlength(word[:k]) > max_w:
                    k -= 1
                lines.append(word[:k])
                word = word[k:]
            cur = word
        lines.append(cur)
    return lines


def draw_text_centered(d: ImageDraw.ImageDraw, cx: float, y: float, text: str, f, fill) -> None:
    d.text((cx, y), text, font=f, fill=fill, anchor="ma")


def font_fingerprint() -> dict[str, str]:
    """SHA-256 prefixes of the font files in use ("missing" when falling back), for dataset manifests."""
    out = {}
    for _key, fname in sorted(FONT_FILES.items()):
        p = FONT_DIR / fname
        try:
            out[fname] = hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        except OSError:
            out[fname] = "missing"
    return out


def fit_wrapped(
    name: str,
    text: str,
    max_w: float,
    max_h: float,
    size: int,
    min_size: int = 10,
    max_lines: int = 3,
    spacing: float = 1.15,
):
    """Largest font (<= size) at which `text`, word-wrapped to <= max_lines, fits in max_w x max_h.
    Words are never split unless even min_size cannot fit them. Returns (font, lines, line_height)."""
    s = int(size)
    while True:
        f = font(name, s)
        lines = wrap_text(f, text, max_w)
        asc, desc = f.getmetrics()
        lh = int((asc + desc) * spacing)
        # allow wrapping at word boundaries (not inside words)
        words_ok = all(w in " ".join(lines).split(" ") for w in text.split())
        if (len(lines) <= max_lines and lh * len(lines) <= max_h and words_ok) or s <= min_size:
            return f, lines, lh
        s -= max(1, s // 16)
