"""Named colours (clearly distinct RGB values) and small colour helpers."""

from __future__ import annotations

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (208, 32, 38),
    "blue": (28, 86, 200),
    "green": (36, 150, 62),
    "yellow": (246, 206, 30),
    "orange": (244, 124, 20),
    "purple": (122, 52, 168),
    "pink": (244, 128, 184),
    "brown": (118, 72, 36),
    "black": (28, 28, 30),
    "white": (246, 246, 244),
    "grey": (138, 138, 142),
}
COLOR_NAMES = tuple(COLORS)


def rgb(name_or_rgb) -> tuple[int, int, int]:
    if isinstance(name_or_rgb, str):
        return COLORS[name_or_rgb]
    return tuple(int(v) for v in name_or_rgb)  # type: ignore[return-value]


def shade(c, f: float) -> tuple[int, int, int]:
    """f < 1 darkens towards black, f > 1 lightens towards white."""
    c = rgb(c)
    if f <= 1:
        return tuple(int(round(v * f)) for v in c)  # type: ignore[return-value]
    t = f - 1
    return tuple(int(round(v + (255 - v) * t)) for v in c)  # type: ignore[return-value]


def mix(a, b, t: float) -> tuple[int, int, int]:
    a, b = rgb(a), rgb(b)
    return tuple(int(round(x + (y - x) * t)) for x, y in zip(a, b))  # type: ignore[return-value]


def dist(a, b) -> float:
    a, b = rgb(a), rgb(b)
    return sum((x - y) ** 2 for x, y in zip(a, b)) ** 0.5


def luminance(c) -> float:
    r, g, b = rgb(c)
    return 0.299 * r + 0.587 * g + 0.114 * b


def _rel_lum(c) -> float:
    def ch(v):
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = rgb(c)
    return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b)


def contrast_ratio(a, b) -> float:
    la, lb = sorted((_rel_lum(a), _rel_lum(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def ink_for(bg) -> tuple[int, int, int]:
    """Near-black or near-white text, whichever has the higher WCAG contrast ratio on `bg`."""
    dark, light = (20, 20, 20), (250, 250, 250)
    return dark if contrast_ratio(bg, dark) >= contrast_ratio(bg, light) else light


def outline_for(c) -> tuple[int, int, int]:
    """A darker edge colour (light colours get a mid-grey edge so they stand out on pale surfaces)."""
    if luminance(c) > 200:
        return (120, 120, 120)
    return shade(c, 0.55)
