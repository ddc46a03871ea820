"""price_tag: a shelf-edge price label (product, size, price, unit price, optional sale with "was" price).

Ground truth (spec keys):
  product, brand, size_text ("500 g" or null), currency, price, price_printed,
  on_sale, was_price | null, was_printed | null, discount_pct (int) | null, discount_printed | null,
  unit_price | null (price per unit_label, exact to the cent), unit_label ("kg" / "L"), unit_printed | null,
  sku, label_color, texts
Constraints: product, brand, size_text (free text; unit price only for catalogue sizes or with
unit_qty+unit_label), unit_qty, unit_label, price, was_price, on_sale (bool), currency, sku.
"""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal

from PIL import Image, ImageDraw

from . import vocab
from .base import FamilyBase, register
from .common import digits, draw_barcode
from .fonts import fit_font, font
from .formats import CURRENCIES, fmt_money, money, money_str, random_price
from .palette import shade

# (product, size text, quantity in unit, unit, price range in USD)
CATALOGUE = [
    ("Rolled Oats", "500 g", "0.5", "kg", 2.0, 4.5),
    ("Whole Milk", "1 L", "1", "L", 1.0, 2.4),
    ("Orange Juice", "1.5 L", "1.5", "L", 2.5, 5.0),
    ("Greek Yogurt", "500 g", "0.5", "kg", 2.0, 4.8),
    ("Coffee Beans", "250 g", "0.25", "kg", 5.0, 11.0),
    ("Extra Virgin Olive Oil", "750 ml", "0.75", "L", 6.0, 13.0),
    ("Basmati Rice", "1 kg", "1", "kg", 2.2, 4.9),
    ("Dark Chocolate 70%", "100 g", "0.1", "kg", 1.5, 3.9),
    ("Spaghetti", "500 g", "0.5", "kg", 1.0, 2.8),
    ("Peanut Butter", "340 g", "0.34", "kg", 2.5, 5.5),
    ("Sparkling Water", "1.5 L", "1.5", "L", 0.8, 1.9),
    ("Wildflower Honey", "250 g", "0.25", "kg", 4.0, 8.5),
    ("Cheddar Cheese", "400 g", "0.4", "kg", 3.2, 6.9),
    ("Dish Soap", "500 ml", "0.5", "L", 1.5, 3.9),
    ("Laundry Detergent", "2 L", "2", "L", 6.0, 13.5),
    ("Corn Flakes", "375 g", "0.375", "kg", 2.4, 4.9),
    ("Tomato Passata", "680 g", "0.68", "kg", 1.4, 3.2),
    ("Almond Milk", "1 L", "1", "L", 1.8, 3.6),
    ("Granola", "450 g", "0.45", "kg", 3.0, 6.5),
    ("Butter", "250 g", "0.25", "kg", 2.2, 4.2),
    ("Strawberry Jam", "340 g", "0.34", "kg", 2.0, 4.4),
    ("Sunflower Oil", "1 L", "1", "L", 2.0, 4.0),
]
LABELS = [(255, 255, 255), (255, 236, 90), (236, 246, 255), (255, 244, 214)]


class PriceTag(FamilyBase):
    name = "price_tag"
    track = "identification"
    tracks = ("identification", "document")
    photo_prob = 0.6
    photo_mode = "scene"
    photo_like = True

    def _sample(self, rng: random.Random, **c) -> dict:
        allowed = {
            "product",
            "brand",
            "size_text",
            "unit_qty",
            "unit_label",
            "price",
            "was_price",
            "on_sale",
            "currency",
            "sku",
        }
        if set(c) - allowed:
            raise TypeError(f"price_tag: unknown constraints {sorted(set(c) - allowed)}")
        pool = ["USD", "USD", "EUR", "EUR", "GBP", "DKK", "JPY"]
        if c.get("price") is not None or c.get("was_price") is not None:
            pool = ["USD", "USD", "EUR", "EUR", "GBP"]  # constraint prices have cents
        cur = c.get("currency") or rng.choice(pool)
        if cur not in CURRENCIES:
            raise ValueError(f"unknown currency {cur!r}")
        cat = rng.choice(CATALOGUE)
        product = c.get("product") or cat[0]
        brand = c["brand"] if "brand" in c else rng.choice(vocab.BRANDS)
        if c.get("product") and "size_text" not in c:
            size_text, qty, unit = None, None, None
        else:
            size_text = c.get("size_text", cat[1])
            qty = c.get("unit_qty", cat[2] if "size_text" not in c else None)
            unit = c.get("unit_label", cat[3] if "size_text" not in c else None)
        price = money(c["price"], cur) if c.get("price") is not None else random_price(rng, cat[4], cat[5], cur)
        on_sale = c.get("on_sale")
        if on_sale is None:
            on_sale = c.get("was_price") is not None or rng.random() < 0.4
        was = None
        if on_sale:
            if c.get("was_price") is not None:
                was = money(c["was_price"], cur)
            else:
                pct = Decimal(rng.choice([10, 15, 20, 25, 30, 40, 50]))
                was = money(price / (1 - pct / 100), cur)
                if CURRENCIES[cur]["decimals"] == 2:
                    was = money(
                        int(was) + Decimal("0.99") if was % 1 > Decimal("0.5") else int(was) + Decimal("0.49"), cur
                    )
                else:
                    was = money(((was / 10).to_integral_value()) * 10, cur)
            if was <= price:
                raise ValueError("was_price must exceed price")
        disc = None
        if was is not None:
            disc = int(((was - price) / was * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))
        unit_price = None
        if qty is not None and unit:
            unit_price = money(price / Decimal(str(qty)), cur)
        sku = c.get("sku") or digits(rng, 7)
        label = rng.choice(LABELS) if not on_sale else rng.choice([(255, 236, 90), (255, 255, 255)])
        texts = []
        if brand:
            texts.append(brand.upper())
        texts.append(product)
        if size_text:
            texts.append(size_text)
        if on_sale:
            texts.append(f"SAVE {disc}%")
            texts.append(f"WAS {fmt_money(was, cur)}")
        texts.append(fmt_money(price, cur))
        if unit_price is not None:
            texts.append(f"{fmt_money(unit_price, cur)} / {unit}")
        texts.append(f"SKU {sku}")
        return {
            "size": list(rng.choice([(900, 600), (960, 640), (840, 600), (1000, 680)])),
            "seed": rng.getrandbits(32),
            "product": product,
            "brand": brand,
            "size_text": size_text,
            "currency": cur,
            "price": money_str(price),
            "price_printed": fmt_money(price, cur),
            "on_sale": bool(on_sale),
            "was_price": money_str(was) if was is not None else None,
            "was_printed": fmt_money(was, cur) if was is not None else None,
            "discount_pct": disc,
            "discount_printed": f"SAVE {disc}%" if disc is not None else None,
            "unit_price": money_str(unit_price) if unit_price is not None else None,
            "unit_label": unit if unit_price is not None else None,
            "unit_printed": f"{fmt_money(unit_price, cur)} / {unit}" if unit_price is not None else None,
            "sku": sku,
            "label_color": list(label),
            "texts": texts,
        }

    def _draw(self, spec: dict) -> Image.Image:
        W, H = spec["size"]
        jr = random.Random(spec["seed"])
        img = Image.new("RGB", (W, H), (70, 74, 80))
        d = ImageDraw.Draw(img)
        rail_y = int(H * 0.26)
        # products on the shelf above (cut by the top of the frame)
        x = -jr.randint(0, 60)
        while x < W:
            pw = jr.randint(90, 170)
            ph = jr.randint(int(H * 0.16), int(H * 0.3))
            col = (jr.randint(40, 230), jr.randint(40, 230), jr.randint(40, 230))
            d.rounded_rectangle(
                [x + 6, rail_y - ph, x + pw - 6, rail_y + 4], radius=10, fill=col, outline=shade(col, 0.6), width=3
            )
            d.rectangle([x + 16, rail_y - ph * 0.6, x + pw - 16, rail_y - ph * 0.35], fill=shade(col, 1.5))
            x += pw
        # the shelf edge rail
        d.rectangle([0, rail_y, W, rail_y + int(H * 0.1)], fill=(200, 203, 208))
        d.rectangle([0, rail_y + int(H * 0.1), W, H], fill=(96, 100, 108))
        d.line([0, rail_y + 3, W, rail_y + 3], fill=(236, 238, 240), width=3)
        d.rectangle([0, rail_y + int(H * 0.1) - 4, W, rail_y + int(H * 0.1)], fill=(150, 154, 160))
        # the label
        label = tuple(spec["label_color"])
        lx0, lx1 = int(W * 0.12), int(W * 0.88)
        ly0, ly1 = rail_y + int(H * 0.03), int(H * 0.93)
        d.rectangle([lx0 + 8, ly0 + 8, lx1 + 8, ly1 + 8], fill=(50, 52, 56))
        d.rectangle([lx0, ly0, lx1, ly1], fill=label, outline=(160, 160, 160), width=2)
        ink = (24, 24, 28)
        red = (200, 24, 32)
        pad = int((lx1 - lx0) * 0.05)
        iw = lx1 - lx0 - 2 * pad
        y = ly0 + pad * 0.6
        if spec["brand"]:
            fb = fit_font("sans-bold", spec["brand"].upper(), iw * 0.6, int(H * 0.035))
            d.text((lx0 + pad, y), spec["brand"].upper(), font=fb, fill=(90, 90, 96))
            y += fb.size * 1.25
        fp = fit_font("sans-bold", spec["product"], iw, int(H * 0.062))
        d.text((lx0 + pad, y), spec["product"], font=fp, fill=ink)
        y += fp.size * 1.2
        if spec["size_text"]:
            fs = font("sans", int(H * 0.038))
            d.text((lx0 + pad, y), spec["size_text"], font=fs, fill=ink)
        y_price_top = y + int(H * 0.07)
        if spec["on_sale"]:
            # sale banner at the top-right corner
            t = spec["discount_printed"]
            fsb = font("sans-bold", int(H * 0.042))
            bw = fsb.getlength(t) + 36
            d.rectangle([lx1 - bw, ly0, lx1, ly0 + fsb.size * 1.7], fill=red)
            d.text((lx1 - bw / 2, ly0 + fsb.size * 0.85), t, font=fsb, fill=(255, 255, 255), anchor="mm")
            tw = f"WAS {spec['was_printed']}"
            fw = font("sans", int(H * 0.042))
            wy = ly1 - pad * 0.5 - fw.size * 1.1
            d.text((lx0 + pad, wy), tw, font=fw, fill=(70, 70, 76))
            bbox = d.textbbox((lx0 + pad, wy), tw, font=fw)
            pbox = d.textbbox((lx0 + pad, wy), "WAS ", font=fw)
            d.line([pbox[2], (bbox[1] + bbox[3]) / 2, bbox[2], (bbox[1] + bbox[3]) / 2], fill=red, width=3)
        # big price, bottom-right
        pr = spec["price_printed"]
        fpr = fit_font("sans-bold", pr, iw * 0.62, int(H * 0.2))
        price_bottom = ly1 - pad * 0.5 - (int(H * 0.045) if spec["unit_printed"] else 0)
        d.text((lx1 - pad, price_bottom), pr, font=fpr, fill=red if spec["on_sale"] else ink, anchor="rd")
        if spec["unit_printed"]:
            fu = font("sans", int(H * 0.032))
            d.text((lx1 - pad, ly1 - pad * 0.4), spec["unit_printed"], font=fu, fill=ink, anchor="rd")
        # barcode + sku, bottom-left (above the "was" line when on sale)
        by1 = ly1 - pad * 0.5 - (int(H * 0.07) if spec["on_sale"] else 0)
        bx0 = lx0 + pad
        bw = min(iw * 0.3, 200)
        fsku = font("mono", int(H * 0.026))
        d.text((bx0, by1), f"SKU {spec['sku']}", font=fsku, fill=ink, anchor="ld")
        draw_barcode(
            d,
            (bx0, max(y_price_top, by1 - fsku.size * 1.3 - H * 0.1), bx0 + bw, by1 - fsku.size * 1.3),
            spec["sku"],
            fill=ink,
        )
        return img


FAMILY = register(PriceTag())
