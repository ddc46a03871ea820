"""named_sign: things whose name is readable only in the image.

Kinds and ground truth (besides size/seed/kind/texts/photo; `text` is always the primary name):
  shop_sign      text=name, subtitle, number (house number on the door), board_color, awning_color
  book_cover     text=title, author, publisher, subtitle | null, cover_color
  product_box    text=product, brand, weight, badge | null, box_color
  street_sign    text=street (exactly as printed), number (block or house number, string), style "us"|"eu"
  license_plate  text=plate (exact characters incl. spaces/dashes), region, country_code | null,
                 style "us"|"eu"|"uk", vanity (bool), car_color (palette name)
Constraints: kind, text (the name), and per kind: subtitle, number, board_color, awning_color, author, publisher, brand, weight, badge,
style, region, vanity, car_color.
"""

from __future__ import annotations

import math
import random

from PIL import Image, ImageDraw

from . import vocab
from .base import FamilyBase, register
from .common import code
from .fonts import fit_font, fit_wrapped, font
from .palette import COLORS, ink_for, mix, shade

KINDS = ("shop_sign", "book_cover", "product_box", "street_sign", "license_plate")
#: board colours of a shop sign
BOARDS = [(24, 64, 44), (20, 36, 72), (30, 30, 34), (110, 26, 36), (244, 240, 228), (60, 40, 30)]
#: awning stripe colours of a shop front (part of the ground truth: a shop keeps its colours)
AWNINGS = [(200, 40, 40), (30, 90, 60), (30, 60, 130), (60, 60, 60)]

US_STATES = [  # (state, pattern, plate colour, text colour, slogan)
    ("California", "DLLLDDD", (250, 250, 250), (20, 40, 120), "DMV.CA.GOV"),
    ("Texas", "LLL-DDDD", (250, 250, 245), (20, 20, 20), "THE LONE STAR STATE"),
    ("New York", "LLL-DDDD", (250, 236, 170), (20, 40, 110), "EMPIRE STATE"),
    ("Oregon", "DDD LLL", (240, 248, 240), (30, 70, 40), "PACIFIC WONDERLAND"),
    ("Washington", "LLLDDDD", (245, 245, 250), (30, 40, 120), "EVERGREEN STATE"),
    ("Florida", "LLL DLL", (250, 250, 250), (20, 110, 60), "SUNSHINE STATE"),
    ("Colorado", "LLL-DDD", (240, 250, 240), (20, 20, 20), "COLORFUL COLORADO"),
]
EU_COUNTRIES = [  # (country, code, pattern)
    ("Germany", "D", "L LL DDDD"),
    ("France", "F", "LL-DDD-LL"),
    ("Netherlands", "NL", "DD-LLL-D"),
    ("Denmark", "DK", "LL DD DDD"),
    ("Italy", "I", "LL DDDLL"),
    ("Spain", "E", "DDDD LLL"),
    ("Austria", "A", "W-DDDDL"),
    ("Sweden", "S", "LLL DDL"),
]
VANITY = [
    "GR8FUL",
    "LUV2SKI",
    "BKWORM",
    "CATMOM",
    "2FAST4U",
    "SUNNY1",
    "PLNTMOM",
    "COFFEE",
    "NVRL8",
    "BEACHBM",
    "DOGDAD",
    "HIKER",
    "TACO4U",
    "XPLORE",
    "JAZZY",
    "4EVRYNG",
    "OCEAN5",
    "MTNLIFE",
]
LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ"


def _plate_from_pattern(rng, pattern: str) -> str:
    out = []
    for ch in pattern:
        if ch == "L":
            out.append(rng.choice(LETTERS))
        elif ch == "D":
            out.append(rng.choice("0123456789"))
        else:
            out.append(ch)
    return "".join(out)


class NamedSign(FamilyBase):
    name = "named_sign"
    track = "identification"
    photo_prob = 0.7
    photo_mode = "scene"
    photo_like = True

    def _sample(self, rng: random.Random, **c) -> dict:
        kind = c.pop("kind", None) or rng.choice(KINDS)
        if kind not in KINDS:
            raise ValueError(f"unknown named_sign kind {kind!r}; kinds: {', '.join(KINDS)}")
        limit = {"shop_sign": 32, "book_cover": 60, "product_box": 36, "street_sign": 28, "license_plate": 10}[kind]
        if c.get("text") is not None and not 0 < len(str(c["text"])) <= limit:
            raise ValueError(f"{kind} text must be 1-{limit} characters to stay legible")
        fn = getattr(self, f"_sample_{kind}")
        try:
            spec = fn(rng, **c)
        except TypeError as e:
            raise TypeError(f"named_sign/{kind}: {e}") from None
        spec["kind"] = kind
        spec["seed"] = rng.getrandbits(32)
        return spec

    # ------------------------------------------------------------------ samplers
    def _sample_shop_sign(
        self, rng, text=None, subtitle=None, number=None, shop_type=None, board_color=None, awning_color=None
    ):
        stype = shop_type or rng.choice(vocab.SHOP_TYPES_SIGN)
        name = text or f"{rng.choice(vocab.SHOP_WORDS)} {stype}"
        if subtitle is None:
            subtitle = rng.choice(
                [
                    f"EST. {rng.randint(1952, 2021)}",
                    "FRESH DAILY",
                    "OPEN 7 DAYS",
                    "SINCE " + str(rng.randint(1960, 2015)),
                    "FAMILY OWNED",
                ]
            )
        number = str(number if number is not None else rng.randint(1, 199))
        board = rng.choice(BOARDS)
        if board_color is not None:  # a shop front seen again keeps its board
            board = tuple(int(x) for x in board_color)
        awning = rng.choice(AWNINGS)
        if awning_color is not None:  # ... and its awning
            awning = tuple(int(x) for x in awning_color)
        return {
            "size": [1000, 720],
            "text": name,
            "subtitle": subtitle,
            "number": number,
            "board_color": list(board),
            "awning_color": list(awning),
            "texts": [name, subtitle, number],
        }

    def _sample_book_cover(self, rng, text=None, author=None, publisher=None, subtitle="__random__"):
        title = text or f"{rng.choice(vocab.BOOK_WORDS_A)} {rng.choice(vocab.BOOK_WORDS_B)}"
        author = author or f"{rng.choice(vocab.FIRST_NAMES)} {rng.choice(vocab.LAST_NAMES)}"
        publisher = publisher or rng.choice(vocab.PUBLISHERS)
        if subtitle == "__random__":
            subtitle = rng.choice([None, "A Novel", "A Memoir", "Stories", None])
        cover = rng.choice(
            [
                (26, 52, 92),
                (120, 30, 40),
                (32, 86, 70),
                (236, 220, 190),
                (40, 40, 46),
                (214, 120, 60),
                (90, 60, 120),
                (200, 210, 220),
            ]
        )
        texts = [title] + ([subtitle] if subtitle else []) + [author.upper(), publisher]
        return {
            "size": [680, 960],
            "text": title,
            "author": author,
            "publisher": publisher,
            "subtitle": subtitle,
            "cover_color": list(cover),
            "texts": texts,
        }

    def _sample_product_box(self, rng, text=None, brand=None, weight=None, badge="__random__"):
        prod, weights = rng.choice(vocab.BOX_PRODUCTS)
        product = text or prod
        brand = brand or rng.choice(vocab.BRANDS)
        weight = weight or rng.choice(weights)
        if badge == "__random__":
            badge = rng.choice([None, "ORGANIC", "NEW", "WHOLE GRAIN", "FAMILY SIZE", "VEGAN"])
        box = rng.choice(["red", "blue", "green", "yellow", "orange", "purple", "brown", "white"])
        texts = [brand, product, weight] + ([badge] if badge else [])
        return {
            "size": [900, 760],
            "text": product,
            "brand": brand,
            "weight": weight,
            "badge": badge,
            "box_color": box,
            "texts": texts,
        }

    def _sample_street_sign(self, rng, text=None, number=None, style=None):
        style = style or rng.choice(["us", "eu"])
        if style not in ("us", "eu"):
            raise ValueError("street_sign style must be 'us' or 'eu'")
        if text is None:
            base, st = rng.choice(vocab.STREET_NAMES), rng.choice(vocab.STREET_TYPES)
            text = f"{base} {st}".upper() if style == "us" else f"{base} {vocab.STREET_TYPES_LONG[st]}"
        if number is None:
            number = str(rng.randrange(100, 9900, 100)) if style == "us" else str(rng.randint(1, 160))
        return {
            "size": [900, 800] if style == "us" else [1000, 700],
            "text": text,
            "number": str(number),
            "style": style,
            "texts": [text, str(number)],
        }

    def _sample_license_plate(self, rng, text=None, style=None, region=None, vanity=None, car_color=None):
        style = style or rng.choice(["us", "us", "eu", "uk"])
        country_code = None
        if style == "us":
            st = next((s for s in US_STATES if s[0] == region), None) or rng.choice(US_STATES)
            region = st[0]
            vanity = (rng.random() < 0.3) if vanity is None else bool(vanity)
            plate = text or (rng.choice(VANITY) if vanity else _plate_from_pattern(rng, st[1]))
            extra = [region, st[4]]
        elif style == "eu":
            ct = next((s for s in EU_COUNTRIES if s[0] == region), None) or rng.choice(EU_COUNTRIES)
            region, country_code = ct[0], ct[1]
            plate = text or _plate_from_pattern(rng, ct[2])
            vanity = bool(vanity)
            extra = [country_code]
        elif style == "uk":
            region, country_code = "United Kingdom", "UK"
            plate = text or f"{code(rng, 2, LETTERS)}{rng.randint(10, 74)} {code(rng, 3, LETTERS)}"
            vanity = bool(vanity)
            extra = [country_code]
        else:
            raise ValueError("license_plate style must be 'us', 'eu' or 'uk'")
        if len(plate) > 10:
            raise ValueError("plate text too long (max 10 characters)")
        car = car_color or rng.choice(["red", "blue", "black", "white", "grey", "green", "yellow", "orange"])
        texts = ([extra[0]] if style == "us" else []) + [plate] + ([extra[1]] if style == "us" else extra)
        return {
            "size": [1000, 640],
            "text": plate,
            "region": region,
            "country_code": country_code,
            "style": style,
            "vanity": vanity,
            "car_color": car,
            "texts": texts,
        }

    # ------------------------------------------------------------------ drawing
    def _draw(self, spec: dict) -> Image.Image:
        return getattr(self, f"_draw_{spec['kind']}")(spec)

    def _draw_shop_sign(self, spec):
        W, H = spec["size"]
        jr = random.Random(spec["seed"])
        wall = jr.choice([(168, 84, 60), (150, 76, 58), (190, 170, 140), (120, 120, 126), (210, 196, 170)])
        img = Image.new("RGB", (W, H), wall)
        d = ImageDraw.Draw(img)
        brick = wall[0] > wall[2] + 40 and jr.random() < 0.8
        if brick:
            bh, bw = 26, 70
            for r in range(H // bh + 1):
                off = (bw // 2) if r % 2 else 0
                for x in range(-off, W, bw):
                    col = shade(wall, 0.9 + jr.random() * 0.2)
                    d.rectangle([x + 2, r * bh + 2, x + bw - 2, r * bh + bh - 2], fill=col)
        board = tuple(spec["board_color"])
        ink = (232, 196, 96) if sum(board) < 300 and jr.random() < 0.5 else ink_for(board)
        bx0, by0, bx1, by1 = int(W * 0.06), int(H * 0.07), int(W * 0.94), int(H * 0.33)
        d.rectangle([bx0 + 6, by0 + 8, bx1 + 6, by1 + 8], fill=shade(wall, 0.55))
        edge = shade(board, 0.6) if sum(board) > 300 else mix(board, ink, 0.5)
        d.rectangle([bx0, by0, bx1, by1], fill=board, outline=edge, width=6)
        d.rectangle([bx0 + 14, by0 + 14, bx1 - 14, by1 - 14], outline=mix(board, ink, 0.6), width=2)
        face = jr.choice(["serif-bold", "sans-bold", "serif-cond-bold", "cond-bold"])
        f = fit_font(face, spec["text"], (bx1 - bx0) * 0.88, int((by1 - by0) * 0.52))
        d.text(((bx0 + bx1) / 2, by0 + (by1 - by0) * 0.44), spec["text"], font=f, fill=ink, anchor="mm")
        fs = fit_font("sans-bold", spec["subtitle"], (bx1 - bx0) * 0.6, int((by1 - by0) * 0.14))
        d.text(((bx0 + bx1) / 2, by0 + (by1 - by0) * 0.8), spec["subtitle"], font=fs, fill=ink, anchor="mm")
        # awning
        ay0, ay1 = by1 + 16, by1 + int(H * 0.1)
        acol = tuple(spec["awning_color"]) if spec.get("awning_color") else jr.choice(AWNINGS)
        n = 14
        for i in range(n):
            x0 = bx0 + (bx1 - bx0) * i / n
            d.polygon(
                [(x0, ay0), (x0 + (bx1 - bx0) / n, ay0), (x0 + (bx1 - bx0) / n + 6, ay1), (x0 + 6, ay1)],
                fill=acol if i % 2 == 0 else (240, 240, 236),
            )
        # window, door, number plaque
        gy0 = ay1 + 10
        frame = shade(board, 0.8) if sum(board) < 600 else (60, 60, 60)
        d.rectangle([bx0, gy0, int(W * 0.64), H - 30], fill=frame)
        glass = (150, 186, 206)
        d.rectangle([bx0 + 14, gy0 + 14, int(W * 0.64) - 14, H - 44], fill=glass)
        for k in range(3):
            x = bx0 + 60 + k * 120
            d.polygon(
                [(x, gy0 + 14), (x + 50, gy0 + 14), (x - 40, H - 44), (x - 90, H - 44)],
                fill=mix(glass, (255, 255, 255), 0.35),
            )
        d.rectangle([int(W * 0.68), gy0, bx1, H], fill=frame)
        d.rectangle([int(W * 0.68) + 16, gy0 + 16, bx1 - 16, H], fill=mix(frame, (120, 90, 60), 0.5))
        d.rectangle([int(W * 0.68) + 34, gy0 + 40, bx1 - 34, gy0 + 180], fill=glass)
        d.ellipse([bx1 - 56, gy0 + 220, bx1 - 38, gy0 + 238], fill=(210, 180, 80))
        fn = font("sans-bold", 34)
        cx = (int(W * 0.68) + bx1) / 2
        pw = max(70, fn.getlength(spec["number"]) + 30)
        d.rounded_rectangle(
            [cx - pw / 2, gy0 + 194, cx + pw / 2, gy0 + 246],
            radius=10,
            fill=(246, 246, 240),
            outline=(40, 40, 40),
            width=3,
        )
        d.text((cx, gy0 + 220), spec["number"], font=fn, fill=(20, 20, 20), anchor="mm")
        d.rectangle([0, H - 30, W, H], fill=(110, 110, 112))
        return img

    def _draw_book_cover(self, spec):
        W, H = spec["size"]
        jr = random.Random(spec["seed"])
        img = Image.new("RGB", (W, H), jr.choice([(150, 110, 76), (120, 86, 60), (200, 196, 188), (80, 84, 90)]))
        d = ImageDraw.Draw(img)
        cx0, cy0, cx1, cy1 = 40, 36, W - 40, H - 36
        d.rectangle([cx0 + 10, cy0 + 12, cx1 + 10, cy1 + 12], fill=(40, 34, 30))
        cover = tuple(spec["cover_color"])
        d.rectangle([cx0, cy0, cx1, cy1], fill=cover)
        d.rectangle([cx0, cy0, cx0 + 16, cy1], fill=shade(cover, 0.8))
        ink = ink_for(cover)
        acc = mix(cover, ink, 0.35)
        style = jr.choice(["circles", "mountains", "waves", "stripes"])
        ay0, ay1 = cy0 + int((cy1 - cy0) * 0.42), cy0 + int((cy1 - cy0) * 0.8)
        if style == "circles":
            for _ in range(6):
                r = jr.randint(30, 110)
                x, y = jr.randint(cx0 + 40, cx1 - 40), jr.randint(ay0 + r // 2, ay1 - r // 2)
                d.ellipse([x - r, y - r, x + r, y + r], outline=acc, width=4)
        elif style == "mountains":
            pts = [(cx0 + 16, ay1)]
            x = cx0 + 16
            while x < cx1:
                x += jr.randint(60, 140)
                pts.append((min(x, cx1), jr.randint(ay0, ay1 - 40)))
            pts.append((cx1, ay1))
            d.polygon(pts, fill=acc)
        elif style == "waves":
            for k in range(7):
                y = ay0 + k * (ay1 - ay0) / 7
                d.line([(x, y + 14 * math.sin(x / 40 + k)) for x in range(cx0 + 16, cx1, 6)], fill=acc, width=4)
        else:
            for k in range(5):
                y = ay0 + k * (ay1 - ay0) / 5
                d.rectangle([cx0 + 16, y, cx1, y + (ay1 - ay0) / 10], fill=acc)
        # title (wrapped), subtitle, author, publisher
        tw = (cx1 - cx0) * 0.84
        f, lines, lh = fit_wrapped("serif-bold", spec["text"], tw, (cy1 - cy0) * 0.3, 78, min_size=24, max_lines=3)
        y = cy0 + (cy1 - cy0) * 0.07
        for ln in lines:
            d.text(((cx0 + cx1) / 2 + 8, y), ln, font=f, fill=ink, anchor="ma")
            y += lh
        if spec.get("subtitle"):
            fs = font("serif-italic", 30)
            d.text(((cx0 + cx1) / 2 + 8, y + 8), spec["subtitle"], font=fs, fill=ink, anchor="ma")
        fa = fit_font("sans-bold", spec["author"].upper(), tw, 40)
        d.text(((cx0 + cx1) / 2 + 8, cy1 - (cy1 - cy0) * 0.12), spec["author"].upper(), font=fa, fill=ink, anchor="mm")
        fp = font("sans", 20)
        d.text(((cx0 + cx1) / 2 + 8, cy1 - 30), spec["publisher"], font=fp, fill=ink, anchor="mm")
        return img

    def _draw_product_box(self, spec):
        W, H = spec["size"]
        jr = random.Random(spec["seed"])
        wall = jr.choice([(226, 222, 214), (200, 210, 214), (236, 230, 220)])
        img = Image.new("RGB", (W, H), wall)
        d = ImageDraw.Draw(img)
        d.rectangle([0, int(H * 0.8), W, H], fill=jr.choice([(150, 112, 80), (90, 92, 98), (190, 180, 166)]))
        col = COLORS[spec["box_color"]]
        x0, y0, x1, y1 = int(W * 0.2), int(H * 0.08), int(W * 0.68), int(H * 0.9)
        dx, dy = int(W * 0.12), int(H * 0.05)
        d.polygon([(x1, y0), (x1 + dx, y0 - dy), (x1 + dx, y1 - dy), (x1, y1)], fill=shade(col, 0.72))
        d.polygon([(x0, y0), (x0 + dx, y0 - dy), (x1 + dx, y0 - dy), (x1, y0)], fill=shade(col, 1.25))
        d.rectangle([x0, y0, x1, y1], fill=col)
        ink = ink_for(col)
        w = x1 - x0
        # brand ribbon
        rb = (250, 250, 250) if spec["box_color"] != "white" else (30, 60, 130)
        rink = ink_for(rb)
        d.rounded_rectangle([x0 + w * 0.12, y0 + 24, x1 - w * 0.12, y0 + 84], radius=30, fill=rb)
        fb = fit_font("serif-bolditalic", spec["brand"], w * 0.66, 40)
        d.text(((x0 + x1) / 2, y0 + 54), spec["brand"], font=fb, fill=rink, anchor="mm")
        f, lines, lh = fit_wrapped("sans-bold", spec["text"], w * 0.86, (y1 - y0) * 0.3, 64, min_size=22, max_lines=2)
        y = y0 + 110
        for ln in lines:
            d.text(((x0 + x1) / 2, y), ln, font=f, fill=ink, anchor="ma")
            y += lh
        # illustration: a bowl
        by = y1 - (y1 - y0) * 0.3
        food = shade(col, 1.5) if spec["box_color"] != "white" else (220, 200, 160)
        d.ellipse([x0 + w * 0.2, by - 50, x1 - w * 0.2, by + 20], fill=food)
        d.chord(
            [x0 + w * 0.18, by - 60, x1 - w * 0.18, by + 90],
            0,
            180,
            fill=(250, 250, 250),
            outline=(120, 120, 120),
            width=3,
        )
        fw = font("sans-bold", 34)
        d.text((x1 - 24, y1 - 20), spec["weight"], font=fw, fill=ink, anchor="rd")
        if spec.get("badge"):
            r = 66
            bx, byy = x0 + 30 + r, y1 - 40 - r
            d.ellipse([bx - r, byy - r, bx + r, byy + r], fill=(250, 214, 40), outline=(180, 140, 20), width=4)
            fbd, bl, blh = fit_wrapped("sans-bold", spec["badge"], r * 1.6, r * 1.3, 26, min_size=12, max_lines=2)
            yy = byy - blh * len(bl) / 2
            for ln in bl:
                d.text((bx, yy), ln, font=fbd, fill=(30, 30, 30), anchor="ma")
                yy += blh
        return img

    def _draw_street_sign(self, spec):
        W, H = spec["size"]
        jr = random.Random(spec["seed"])
        if spec["style"] == "us":
            img = Image.new("RGB", (W, H), (150, 190, 230))
            d = ImageDraw.Draw(img)
            for y in range(0, H, 6):
                d.rectangle([0, y, W, y + 6], fill=mix((120, 170, 225), (215, 232, 245), y / H))
            x = 0
            while x < W:
                bw, bh = jr.randint(80, 180), jr.randint(120, 380)
                d.rectangle([x, H - bh, x + bw, H], fill=mix((120, 126, 140), (200, 200, 205), jr.random() * 0.5))
                x += bw + jr.randint(0, 20)
            px = int(W * 0.5)
            d.rectangle([px - 14, int(H * 0.2), px + 14, H], fill=(120, 124, 130))
            sx0, sy0, sx1, sy1 = int(W * 0.08), int(H * 0.24), int(W * 0.92), int(H * 0.48)
            green = (18, 110, 64)
            d.rounded_rectangle([sx0, sy0, sx1, sy1], radius=16, fill=green)
            d.rounded_rectangle([sx0 + 8, sy0 + 8, sx1 - 8, sy1 - 8], radius=12, outline=(245, 245, 245), width=5)
            fnum = font("sans-bold", int((sy1 - sy0) * 0.24))
            d.text((sx0 + 30, sy0 + 22), spec["number"], font=fnum, fill=(245, 245, 245))
            f = fit_font("cond-bold", spec["text"], (sx1 - sx0) * 0.86, int((sy1 - sy0) * 0.52))
            d.text(((sx0 + sx1) / 2, sy0 + (sy1 - sy0) * 0.6), spec["text"], font=f, fill=(245, 245, 245), anchor="mm")
            d.rectangle([px - 20, sy1, px + 20, sy1 + 16], fill=(90, 94, 100))
            return img
        wall = jr.choice([(226, 214, 190), (210, 200, 186), (236, 226, 206), (190, 176, 160)])
        img = Image.new("RGB", (W, H), wall)
        d = ImageDraw.Draw(img)
        for _ in range(400):
            x, y = jr.randrange(W), jr.randrange(H)
            d.point((x, y), fill=shade(wall, 0.9))
        d.rectangle([0, int(H * 0.82), W, H], fill=shade(wall, 0.78))
        sx0, sy0, sx1, sy1 = int(W * 0.1), int(H * 0.2), int(W * 0.72), int(H * 0.46)
        blue = (24, 60, 140)
        d.rounded_rectangle([sx0 + 6, sy0 + 6, sx1 + 6, sy1 + 6], radius=18, fill=shade(wall, 0.6))
        d.rounded_rectangle([sx0, sy0, sx1, sy1], radius=18, fill=blue)
        d.rounded_rectangle([sx0 + 10, sy0 + 10, sx1 - 10, sy1 - 10], radius=12, outline=(245, 245, 245), width=5)
        f = fit_font("sans-bold", spec["text"], (sx1 - sx0) * 0.84, int((sy1 - sy0) * 0.42))
        d.text(((sx0 + sx1) / 2, (sy0 + sy1) / 2), spec["text"], font=f, fill=(245, 245, 245), anchor="mm")
        nx0, ny0 = int(W * 0.78), int(H * 0.24)
        side = int(H * 0.18)
        d.rounded_rectangle([nx0 + 5, ny0 + 5, nx0 + side + 5, ny0 + side + 5], radius=12, fill=shade(wall, 0.6))
        d.rounded_rectangle([nx0, ny0, nx0 + side, ny0 + side], radius=12, fill=blue, outline=(245, 245, 245), width=5)
        fnum = fit_font("sans-bold", spec["number"], side * 0.8, int(side * 0.55))
        d.text((nx0 + side / 2, ny0 + side / 2), spec["number"], font=fnum, fill=(245, 245, 245), anchor="mm")
        # a window below
        d.rectangle([int(W * 0.2), int(H * 0.56), int(W * 0.5), int(H * 0.82)], fill=(90, 70, 50))
        d.rectangle([int(W * 0.2) + 12, int(H * 0.56) + 12, int(W * 0.5) - 12, int(H * 0.82)], fill=(150, 176, 190))
        return img

    def _draw_license_plate(self, spec):
        W, H = spec["size"]
        jr = random.Random(spec["seed"])
        img = Image.new("RGB", (W, H), (120, 124, 130))
        d = ImageDraw.Draw(img)
        d.rectangle([0, 0, W, int(H * 0.3)], fill=jr.choice([(170, 176, 184), (200, 196, 186), (140, 150, 160)]))
        d.rectangle([0, int(H * 0.86), W, H], fill=(70, 72, 76))
        body = COLORS[spec["car_color"]]
        cx0, cx1 = int(W * 0.08), int(W * 0.92)
        # wheels
        for wx in (cx0 + 40, cx1 - 150):
            d.rounded_rectangle([wx, int(H * 0.74), wx + 110, int(H * 0.95)], radius=20, fill=(24, 24, 26))
        # roof + rear window
        d.rounded_rectangle([int(W * 0.2), int(H * 0.06), int(W * 0.8), int(H * 0.42)], radius=50, fill=body)
        d.polygon(
            [
                (int(W * 0.25), int(H * 0.38)),
                (int(W * 0.29), int(H * 0.11)),
                (int(W * 0.71), int(H * 0.11)),
                (int(W * 0.75), int(H * 0.38)),
            ],
            fill=(40, 48, 58),
        )
        d.rounded_rectangle([cx0, int(H * 0.36), cx1, int(H * 0.84)], radius=40, fill=body)
        d.line([cx0 + 30, int(H * 0.5), cx1 - 30, int(H * 0.5)], fill=shade(body, 0.7), width=3)
        for tx in (cx0 + 20, cx1 - 170):
            d.rounded_rectangle(
                [tx, int(H * 0.42), tx + 150, int(H * 0.52)],
                radius=12,
                fill=(190, 20, 24),
                outline=(110, 10, 10),
                width=3,
            )
        d.rounded_rectangle(
            [cx0 - 6, int(H * 0.7), cx1 + 6, int(H * 0.84)],
            radius=20,
            fill=shade(body, 0.55) if spec["car_color"] != "black" else (60, 60, 64),
        )
        # plate
        style = spec["style"]
        if style == "us":
            st = next(s for s in US_STATES if s[0] == spec["region"])
            pw, ph = 330, 166
            bg, ink = st[2], st[3]
        elif style == "eu":
            pw, ph = 470, 104
            bg, ink = (250, 250, 250), (20, 20, 20)
        else:
            pw, ph = 470, 104
            bg, ink = (250, 206, 30), (20, 20, 20)
        px0, py0 = W / 2 - pw / 2, int(H * 0.54)
        d.rectangle([px0 - 10, py0 - 10, px0 + pw + 10, py0 + ph + 10], fill=shade(body, 0.45))
        d.rounded_rectangle([px0, py0, px0 + pw, py0 + ph], radius=10, fill=bg, outline=(40, 40, 40), width=3)
        if style == "us":
            fr = fit_font("serif-bolditalic", spec["region"], pw * 0.7, 32)
            region_ink = (190, 30, 36) if spec["region"] == "California" else ink
            d.text((W / 2, py0 + 8), spec["region"], font=fr, fill=region_ink, anchor="ma")
            f = fit_font("cond-bold", spec["text"], pw * 0.88, int(ph * 0.5))
            d.text((W / 2, py0 + ph * 0.56), spec["text"], font=f, fill=ink, anchor="mm")
            fs = fit_font("sans-bold", st[4], pw * 0.8, 16)
            d.text((W / 2, py0 + ph - 8), st[4], font=fs, fill=ink, anchor="md")
        else:
            text_x0 = px0
            if style == "eu":
                sw = 54
                d.rounded_rectangle([px0 + 3, py0 + 3, px0 + sw, py0 + ph - 3], radius=6, fill=(20, 60, 160))
                for k in range(12):
                    a = 2 * math.pi * k / 12
                    sx, sy = px0 + 3 + (sw - 3) / 2 + 15 * math.cos(a), py0 + 32 + 15 * math.sin(a)
                    d.ellipse([sx - 2.5, sy - 2.5, sx + 2.5, sy + 2.5], fill=(250, 210, 30))
                fc = font("sans-bold", 26)
                d.text(
                    (px0 + 3 + (sw - 3) / 2, py0 + ph - 14),
                    spec["country_code"],
                    font=fc,
                    fill=(250, 250, 250),
                    anchor="md",
                )
                text_x0 = px0 + sw
            f = fit_font("cond-bold", spec["text"], (px0 + pw - text_x0) * 0.9, int(ph * 0.74))
            d.text(((text_x0 + px0 + pw) / 2, py0 + ph / 2), spec["text"], font=f, fill=ink, anchor="mm")
        return img


FAMILY = register(NamedSign())
