"""Shared phone-screen chrome for screenshot families (status bar, header, home indicator)."""

from __future__ import annotations

from PIL import ImageDraw

from .fonts import font
from .palette import ink_for

PHONE_SIZE = (540, 960)


def status_bar(d: ImageDraw.ImageDraw, W: int, time_text: str, bg, battery: int = 80, h: int = 38) -> None:
    d.rectangle([0, 0, W, h], fill=bg)
    ink = ink_for(bg)
    d.text((26, h / 2 + 1), time_text, font=font("sans-bold", 17), fill=ink, anchor="lm")
    x = W - 30
    # battery
    d.rounded_rectangle([x - 30, h / 2 - 8, x, h / 2 + 8], radius=3, outline=ink, width=2)
    d.rectangle([x + 1, h / 2 - 3, x + 3, h / 2 + 3], fill=ink)
    d.rectangle([x - 27, h / 2 - 5, x - 27 + 24 * battery / 100, h / 2 + 5], fill=ink)
    # wifi wedge and signal bars
    x -= 44
    d.pieslice([x - 12, h / 2 - 10, x + 12, h / 2 + 14], 225, 315, fill=ink)
    x -= 30
    for i in range(4):
        d.rectangle([x - 16 + i * 5, h / 2 + 6 - (i + 1) * 3.5, x - 13 + i * 5, h / 2 + 7], fill=ink)


def home_indicator(d: ImageDraw.ImageDraw, W: int, H: int, color=(30, 30, 30)) -> None:
    d.rounded_rectangle([W / 2 - 70, H - 14, W / 2 + 70, H - 9], radius=3, fill=color)
