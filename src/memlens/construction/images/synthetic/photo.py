"""Photo-like degradations: perspective/rotation, lighting, blur, softness and sensor noise.

`sample_photo_effects(rng, mode)` draws the parameters (stored in spec["photo"]); `apply_photo_effects`
applies them deterministically (noise comes from numpy's PCG64 seeded by effects["seed"]).

Modes:
  document  the rendered item (receipt, ticket, card...) lies on a surface: it is shrunk, rotated and
            tilted inside the frame, with the surface and a soft shadow visible around it.
  scene     the render is already a full-frame scene: it is rotated/tilted and zoomed just enough that
            no empty corner shows (content within ~6% of the border may be cropped).
"""

from __future__ import annotations

import math
import random
from functools import lru_cache

import numpy as np
from PIL import Image, ImageChops, ImageFilter

SURFACES = [
    (122, 86, 58),
    (160, 122, 86),
    (92, 94, 98),
    (58, 62, 70),
    (186, 180, 168),
    (140, 146, 150),
    (96, 70, 50),
    (210, 206, 198),
]


def sample_photo_effects(rng: random.Random, mode: str = "document", strength: str = "medium") -> dict:
    k = {"light": 0.6, "medium": 1.0, "strong": 1.3}[strength]
    scene = mode == "scene"
    e = {
        "mode": mode,
        "seed": rng.getrandbits(32),
        # rows of a tilted document drift by tan(angle) x width: keep it well under one text line
        "rotate_deg": round(rng.uniform(-1, 1) * (2.0 if scene else 2.5) * k, 2),
        # corner offsets (tl, tr, br, bl) as fractions of width/height: perspective tilt
        "perspective": [round(rng.uniform(-1, 1) * (0.015 if scene else 0.018) * k, 4) for _ in range(8)],
        "scale": 1.0 if scene else round(rng.uniform(0.84, 0.93), 3),
        "shift": [0.0, 0.0] if scene else [round(rng.uniform(-0.02, 0.02), 4) for _ in range(2)],
        "background": list(rng.choice(SURFACES)),
        "blur_radius": round(rng.uniform(0.0, 0.8) * k, 2),
        "softness": round(rng.uniform(0.75, 1.0), 3),
        "noise_sigma": round(rng.uniform(2.0, 6.0) * k, 2),
        "brightness": round(rng.uniform(0.86, 1.08), 3),
        "contrast": round(rng.uniform(0.85, 1.0), 3),
        "light_angle_deg": round(rng.uniform(0, 360), 1),
        "light_strength": round(rng.uniform(0.0, 0.22) * k, 3),
        "color_cast": [round(rng.uniform(0.97, 1.03), 3) for _ in range(3)],
    }
    return e


def _coeffs(dst, src):
    """Perspective coefficients mapping output points `dst` to input points `src` (PIL convention)."""
    a = []
    b = []
    for (x, y), (u, v) in zip(dst, src):
        a.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        a.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        b.extend([u, v])
    sol = np.linalg.solve(np.array(a, dtype=np.float64), np.array(b, dtype=np.float64))
    return tuple(float(round(v, 10)) for v in sol)


def _inside(quad, p) -> bool:
    # convex quad, either orientation
    sign = 0
    for i in range(4):
        (x1, y1), (x2, y2) = quad[i], quad[(i + 1) % 4]
        cr = (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1)
        s = 1 if cr > 0 else -1 if cr < 0 else 0
        if s == 0:
            continue
        if sign == 0:
            sign = s
        elif s != sign:
            return False
    return True


def destination_quad(size, effects) -> list[tuple[float, float]]:
    """Where the corners (tl, tr, br, bl) of the clean render land in the output frame."""
    w, h = size
    cx, cy = w / 2, h / 2
    ang = math.radians(effects.get("rotate_deg", 0.0))
    ca, sa = math.cos(ang), math.sin(ang)
    p = list(effects.get("perspective", [0.0] * 8))
    scale = effects.get("scale", 1.0)
    sx, sy = effects.get("shift", [0.0, 0.0])
    corners = [(0, 0), (w, 0), (w, h), (0, h)]

    def place(z):
        out = []
        for i, (x, y) in enumerate(corners):
            dx, dy = (x - cx) * scale * z, (y - cy) * scale * z
            rx, ry = dx * ca - dy * sa, dx * sa + dy * ca
            out.append((cx + rx + (p[2 * i] + sx) * w * z, cy + ry + (p[2 * i + 1] + sy) * h * z))
        return out

    if effects.get("mode") == "scene":
        z = 1.0
        frame = [(0.5, 0.5), (w - 0.5, 0.5), (w - 0.5, h - 0.5), (0.5, h - 0.5)]
        while z < 1.5 and not all(_inside(place(z), c) for c in frame):
            z += 0.005
        return place(z)
    return place(1.0)


def _surface(size, color, seed) -> Image.Image:
    """A table/wall surface: low-frequency streaks (wood/fabric-like); fine grain comes from sensor noise."""
    w, h = size
    g = np.random.default_rng(seed ^ 0x5EED)
    y = np.arange(h, dtype=np.float32)
    freq = g.uniform(0.02, 0.06)
    phase = g.uniform(0, 6.28)
    stripes = np.sin(y * freq + phase) * 6 + np.sin(y * freq * 3.7 + 1.3) * 3
    col = np.clip(np.array(color, dtype=np.float32)[None, :] + stripes[:, None], 0, 255).astype(np.uint8)
    return Image.fromarray(col[:, None, :], "RGB").resize((w, h), Image.Resampling.NEAREST)


def _tone_lut(effects) -> list[int]:
    contrast = float(effects.get("contrast", 1.0))
    gain = float(effects.get("brightness", 1.0))
    cast = effects.get("color_cast", [1.0, 1.0, 1.0])
    lut: list[int] = []
    for c in range(3):
        k = gain * float(cast[c])
        lut += [min(255, max(0, int(((v - 128.0) * contrast + 128.0) * k + 0.5))) for v in range(256)]
    return lut


def _light_map(size, effects) -> Image.Image | None:
    ls = float(effects.get("light_strength", 0.0))
    if ls <= 0:
        return None
    w, h = size
    a = math.radians(effects.get("light_angle_deg", 0.0))
    n = 32
    xs = (np.arange(n, dtype=np.float64) / (n - 1) - 0.5) * math.cos(a)
    ys = (np.arange(n, dtype=np.float64) / (n - 1) - 0.5) * math.sin(a)
    light = np.clip(1.0 - ls * (ys[:, None] + xs[None, :] + 0.5), 0, 1)
    small = Image.fromarray(np.round(light * 255).astype(np.uint8), "L")
    return small.resize((w, h), Image.Resampling.BILINEAR).convert("RGB")


def apply_photo_effects(img: Image.Image, effects: dict) -> Image.Image:
    """Make a clean render look photographed. Same image + same effects -> identical pixels.

    An RGBA input's alpha is the item's silhouette: in document mode only that part is laid on the surface."""
    if not effects:
        return img.convert("RGB")
    w, h = img.size
    if img.mode == "RGBA" and effects.get("mode") == "scene":
        flat = Image.new("RGB", img.size, tuple(effects.get("background", (90, 90, 90))))
        flat.paste(img, (0, 0), img)
        img = flat
    elif img.mode not in ("RGB", "RGBA"):
        img = img.convert("RGB")
    seed = int(effects.get("seed", 0))
    src = [(0, 0), (w, 0), (w, h), (0, h)]
    dst = destination_quad((w, h), effects)
    coeffs = _coeffs(dst, src)
    if effects.get("mode") == "scene":
        out = img.transform(
            (w, h),
            Image.Transform.PERSPECTIVE,
            coeffs,
            Image.Resampling.BILINEAR,
            fillcolor=tuple(effects.get("background", (90, 90, 90))),
        )
    else:
        out = _surface((w, h), effects.get("background", (120, 120, 120)), seed)
        rgba = img if img.mode == "RGBA" else img.convert("RGBA")
        fg = rgba.transform(
            (w, h), Image.Transform.PERSPECTIVE, coeffs, Image.Resampling.BILINEAR, fillcolor=(0, 0, 0, 0)
        )
        # soft drop shadow, offset down-right (computed at 1/8 scale)
        mask = fg.getchannel("A")
        sw, sh = max(1, w // 8), max(1, h // 8)
        shadow = mask.resize((sw, sh), Image.Resampling.BILINEAR).filter(ImageFilter.BoxBlur(2))
        shadow = shadow.resize((w, h), Image.Resampling.BILINEAR).point([int(v * 0.45) for v in range(256)])
        off = max(2, w // 120)
        out.paste((0, 0, 0), (off, off, w, h), shadow.crop((0, 0, w - off, h - off)))
        out.paste(fg, (0, 0), fg)
    # optics: softness = resolution loss (down- then up-sampling), blur applied at the reduced scale
    blur = float(effects.get("blur_radius", 0.0))
    soft = float(effects.get("softness", 1.0))
    if soft < 0.99:
        out = out.resize((max(1, round(w * soft)), max(1, round(h * soft))), Image.Resampling.BILINEAR)
    if blur > 0.05:
        out = out.filter(ImageFilter.BoxBlur(blur * min(1.0, soft)))
    if out.size != (w, h):
        out = out.resize((w, h), Image.Resampling.BILINEAR)
    out = out.point(_tone_lut(effects))
    light = _light_map((w, h), effects)
    if light is not None:
        out = ImageChops.multiply(out, light)
    sigma = float(effects.get("noise_sigma", 0.0))
    if sigma > 0:
        out = ImageChops.add(out, _noise((w, h), sigma, seed), scale=1.0, offset=-128)
    return out


_NOISE_SIDE = 1536
_NOISE_UNIT = 16.0  # grey levels per standard deviation in the stored base noise


@lru_cache(maxsize=1)
def _base_noise() -> Image.Image:
    """Gaussian noise N(0, 1) stored as 128 + 16 n (clipped at +-7.9 sd), from a fixed seed: the same in every
    process, so photo effects stay reproducible while costing one crop and one LUT per image."""
    g = np.random.default_rng(0x4D454D4C)  # "MEML"
    n = g.standard_normal((_NOISE_SIDE, _NOISE_SIDE), dtype=np.float32)
    return Image.fromarray(np.clip(np.round(128 + _NOISE_UNIT * n), 1, 255).astype(np.uint8), "L")


def _noise(size, sigma: float, seed: int) -> Image.Image:
    w, h = size
    base = _base_noise()
    if w > _NOISE_SIDE or h > _NOISE_SIDE:
        base = base.resize((max(w, _NOISE_SIDE), max(h, _NOISE_SIDE)), Image.Resampling.NEAREST)
    ox = seed % (base.width - w + 1)
    oy = (seed // 7919) % (base.height - h + 1)
    tile = base.crop((ox, oy, ox + w, oy + h))
    lut = [min(255, max(0, int(round(128 + (v - 128) / _NOISE_UNIT * sigma)))) for v in range(256)]
    tile = tile.point(lut)
    return Image.merge("RGB", (tile, tile, tile))
