"""Helpers shared by several families: addresses, names, codes, barcodes, QR-like blocks."""

from __future__ import annotations

import random
import string

from PIL import ImageDraw

from . import vocab


def person_name(rng: random.Random) -> str:
    return f"{rng.choice(vocab.FIRST_NAMES)} {rng.choice(vocab.LAST_NAMES)}"


def street_address(rng: random.Random, city: str | None = None) -> str:
    num = rng.randint(1, 240)
    st = f"{rng.choice(vocab.STREET_NAMES)} {rng.choice(vocab.STREET_TYPES)}"
    return f"{num} {st}, {city}" if city else f"{num} {st}"


def city_for_currency(rng: random.Random, cur: str) -> str:
    return rng.choice(vocab.CURRENCY_CITIES.get(cur) or [c[0] for c in vocab.CITIES])


COUNTRY_CODES = {
    "France": 33,
    "Italy": 39,
    "Germany": 49,
    "Netherlands": 31,
    "Spain": 34,
    "Portugal": 351,
    "Austria": 43,
    "Ireland": 353,
    "Finland": 358,
    "Greece": 30,
    "Denmark": 45,
    "Switzerland": 41,
    "Sweden": 46,
    "Norway": 47,
    "Czechia": 420,
    "Iceland": 354,
}


def phone_number(rng: random.Random, cur: str, city: str | None = None) -> str:
    if cur == "USD":
        return f"({rng.randint(201, 989)}) 555-{rng.randint(100, 9999):04d}"
    if cur == "GBP":
        return f"020 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}"
    if cur == "JPY":
        return f"03-{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}"
    country = next((c[2] for c in vocab.CITIES if c[0] == city), None)
    cc = COUNTRY_CODES.get(country or "", 49)
    return f"+{cc} {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)}"


def code(
    rng: random.Random, n: int, alphabet: str = string.ascii_uppercase + string.digits, avoid: str = "O0I1"
) -> str:
    """Random code without easily confused characters (O/0, I/1)."""
    pool = [ch for ch in alphabet if ch not in avoid]
    return "".join(rng.choice(pool) for _ in range(n))


def digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def draw_barcode(d: ImageDraw.ImageDraw, box, payload: str, fill=(20, 20, 20)) -> None:
    """A decorative 1-D barcode whose bar pattern is derived from `payload` (deterministic)."""
    x0, y0, x1, y1 = box
    r = random.Random("barcode:" + payload)
    widths = [r.choice((1, 1, 2, 3)) for _ in range(200)]
    total = sum(widths)
    unit = (x1 - x0) / total
    x = x0
    for i, w in enumerate(widths):
        if i % 2 == 0:
            d.rectangle([round(x), y0, max(round(x), round(x + w * unit) - 1), y1], fill=fill)
        x += w * unit


def draw_qr(d: ImageDraw.ImageDraw, box, payload: str, fill=(20, 20, 20), bg=(255, 255, 255)) -> None:
    """A decorative QR-like square (three finder patterns plus payload-derived modules)."""
    x0, y0, x1, _ = box
    n = 25
    cell = (x1 - x0) / n
    r = random.Random("qr:" + payload)
    d.rectangle([x0, y0, x0 + n * cell, y0 + n * cell], fill=bg)
    finder = {(i, j) for i in range(7) for j in range(7)}
    for i in range(n):
        for j in range(n):
            corner = None
            for ci, cj in ((0, 0), (0, n - 7), (n - 7, 0)):
                if (i - ci, j - cj) in finder:
                    corner = (i - ci, j - cj)
            if corner is not None:
                a, b = corner
                on = a in (0, 6) or b in (0, 6) or (2 <= a <= 4 and 2 <= b <= 4)
            elif (i < 8 and (j < 8 or j >= n - 8)) or (i >= n - 8 and j < 8):
                on = False
            else:
                on = r.random() < 0.5
            if on:
                d.rectangle(
                    [x0 + j * cell, y0 + i * cell, x0 + (j + 1) * cell - 0.5, y0 + (i + 1) * cell - 0.5], fill=fill
                )
