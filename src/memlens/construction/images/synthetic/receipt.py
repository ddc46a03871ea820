"""receipt: a thermal-printer shop receipt in a monospace layout.

Ground truth (spec keys):
  store, store_type, address, city (the shop's town, printed in its address), phone, receipt_no, cashier
  date "YYYY/MM/DD", date_printed, date_format, time "HH:MM" (24 h), time_printed
  currency (ISO code), currency_symbol
  items [{name, qty, unit_price, line_total, line_total_printed, unit_price_printed}]  amounts are
        canonical Decimal strings ("6.50"; JPY "1280"); line_total = qty * unit_price exactly
  subtotal, tax_label, tax_rate ("0.0725"), tax_rate_printed ("7.25%"), tax, total (= subtotal + tax),
  subtotal_printed, tax_printed, total_printed
  payment {method, card_last4 | null, tendered | null, change | null}
  lines  [{text, bold, large, align}]: every printed line exactly as drawn;  texts: the stripped lines
Constraints: store, store_type, address, city, phone, date ("YYYY/MM/DD"), date_format, time ("HH:MM"),
currency, items ([(name, qty, unit_price)] or dicts), n_items, tax_rate, tax_label, payment (method name),
receipt_no, cashier, cols (line width in characters).
"""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal

from PIL import Image, ImageDraw

from . import vocab
from .base import FamilyBase, register
from .common import city_for_currency, digits, draw_barcode, phone_number, street_address
from .fonts import fit_font, font
from .formats import (
    CURRENCIES,
    canon_date,
    canon_time,
    fmt_money,
    fmt_number,
    format_date,
    format_time,
    money,
    money_str,
    parse_date,
    parse_time,
    pick_date_format,
    random_date,
    random_price,
)

FS = 20  # font px
LINE_H = 27
MARGIN_X = 34  # paper inner margin
PAPER_PAD = 14  # canvas border around the paper


def _content_bottom(n_lines: int) -> int:
    # top pad + lines (the large store name takes two line heights) + barcode block
    return PAPER_PAD + 24 + (n_lines + 1) * LINE_H + 100


def _rate_str(rate: Decimal) -> str:
    pct = (rate * 100).normalize()
    s = format(pct, "f")
    return f"{s}%"


class Receipt(FamilyBase):
    name = "receipt"
    track = "document"
    photo_prob = 0.5
    photo_mode = "document"

    def _sample(self, rng: random.Random, **c) -> dict:
        allowed = {
            "store",
            "store_type",
            "address",
            "city",
            "phone",
            "date",
            "date_format",
            "time",
            "currency",
            "items",
            "n_items",
            "tax_rate",
            "tax_label",
            "payment",
            "receipt_no",
            "cashier",
            "cols",
        }
        if set(c) - allowed:
            raise TypeError(f"receipt: unknown constraints {sorted(set(c) - allowed)}")
        cur = c.get("currency") or rng.choice(["USD", "USD", "EUR", "EUR", "GBP", "DKK", "JPY", "CHF"])
        if cur not in CURRENCIES:
            raise ValueError(f"unknown currency {cur!r}; known: {', '.join(CURRENCIES)}")
        cinfo = CURRENCIES[cur]
        stype = c.get("store_type") or rng.choice(sorted(vocab.STORES))
        if stype not in vocab.STORES:
            raise ValueError(f"unknown store_type {stype!r}")
        suffixes, catalogue = vocab.STORES[stype]
        store = c.get("store") or f"{rng.choice(vocab.SHOP_WORDS)} {rng.choice(suffixes)}"
        city = c.get("city") or city_for_currency(rng, cur)
        address = c.get("address") or street_address(rng, city)
        phone = c.get("phone") or phone_number(rng, cur, city)

        d = parse_date(c["date"]) if c.get("date") else random_date(rng)
        fmt = c.get("date_format") or pick_date_format(rng, d, cinfo["dates"])
        h, m = parse_time(c["time"]) if c.get("time") else (rng.randint(7, 21), rng.randrange(60))

        # items
        items = []
        if c.get("items"):
            for it in c["items"]:
                if isinstance(it, dict):
                    name, qty, price = it["name"], it.get("qty", 1), it["unit_price"]
                elif len(it) == 3:
                    name, qty, price = it
                else:
                    (name, price), qty = it, 1
                items.append((str(name), int(qty), money(price, cur)))
        else:
            n = c.get("n_items") or rng.randint(2, 7)
            picks = rng.sample(catalogue, min(n, len(catalogue)))
            for name, lo, hi in picks:
                qty = 1 if rng.random() < 0.7 else rng.randint(2, 4)
                items.append((name, qty, random_price(rng, lo, hi, cur)))
        if not items:
            raise ValueError("receipt needs at least one item")
        if len(items) > 14:
            raise ValueError("receipt holds at most 14 items")
        if any(q <= 0 for _, q, _ in items):
            raise ValueError("item quantities must be positive")

        tax_label, rate = rng.choice(cinfo["tax"])
        if c.get("tax_label"):
            tax_label = c["tax_label"]
        rate = Decimal(str(c["tax_rate"])) if c.get("tax_rate") is not None else Decimal(rate)
        q = Decimal(1).scaleb(-cinfo["decimals"])
        subtotal = sum((money(p * qty, cur) for _, qty, p in items), Decimal(0)).quantize(q)
        tax = (subtotal * rate).quantize(q, rounding=ROUND_HALF_UP)
        total = subtotal + tax

        method = c.get("payment") or rng.choice(vocab.PAYMENT_METHODS)
        payment = {"method": method, "card_last4": None, "tendered": None, "change": None}
        if method.lower() == "cash":
            step = Decimal(1000) if cur == "JPY" else Decimal(50) if cur == "DKK" else Decimal(5)
            tendered = ((total / step).to_integral_value(rounding="ROUND_CEILING")) * step
            if rng.random() < 0.4:
                tendered += step
            payment["tendered"] = money_str(money(tendered, cur))
            payment["change"] = money_str(money(tendered - total, cur))
        elif method.lower() in ("visa", "mastercard", "amex", "debit card"):
            payment["card_last4"] = digits(rng, 4)

        receipt_no = c.get("receipt_no") or digits(rng, rng.choice([4, 6, 8]))
        cashier = c.get("cashier") or rng.choice(vocab.FIRST_NAMES)
        date_printed = format_date(d, fmt)
        time_printed = format_time(h, m, twelve=cinfo["twelve"])

        # ---- layout (monospace columns)
        cols = int(c.get("cols") or rng.randint(34, 40))
        amount_w = max(len(fmt_number(money(p * qty, cur), cur)) for _, qty, p in items)
        amount_w = max(amount_w, len(fmt_money(total, cur)), len(fmt_number(total, cur)))
        longest = max(len(n) for n, _, _ in items)
        cols = max(cols, longest + amount_w + 2, len(address) + 2, 30)
        if cols > 48:
            raise ValueError("receipt line too long (item name or address); use names under ~34 characters")

        lines: list[dict] = []

        def add(text="", bold=False, large=False, align="left"):
            lines.append({"text": text, "bold": bold, "large": large, "align": align})

        def lr(left, right, bold=False):
            add(left + " " * max(1, cols - len(left) - len(right)) + right, bold=bold)

        add(store.upper() if rng.random() < 0.6 else store, bold=True, large=True, align="center")
        add(address, align="center")
        add(f"Tel: {phone}", align="center")
        add("-" * cols)
        lr(f"Date: {date_printed}", f"Time: {time_printed}")
        lr(f"Receipt #{receipt_no}", f"Cashier: {cashier}")
        add("-" * cols)
        item_specs = []
        for name, qty, price in items:
            lt = money(price * qty, cur)
            lr(name, fmt_number(lt, cur))
            if qty > 1:
                add(f"  {qty} x {fmt_number(price, cur)}")
            item_specs.append(
                {
                    "name": name,
                    "qty": qty,
                    "unit_price": money_str(price),
                    "line_total": money_str(lt),
                    "unit_price_printed": fmt_number(price, cur),
                    "line_total_printed": fmt_number(lt, cur),
                }
            )
        add("-" * cols)
        n_units = sum(q for _, q, _ in items)
        lr(f"Subtotal ({n_units} item{'s' if n_units != 1 else ''})", fmt_number(subtotal, cur))
        lr(f"{tax_label} {_rate_str(rate)}", fmt_number(tax, cur))
        add("=" * cols)
        lr("TOTAL", fmt_money(total, cur), bold=True)
        add("=" * cols)
        if payment["tendered"] is not None:
            lr("Cash", fmt_number(Decimal(payment["tendered"]), cur))
            lr("Change", fmt_number(Decimal(payment["change"]), cur))
        elif payment["card_last4"]:
            lr(f"{method.upper()} ****{payment['card_last4']}", fmt_money(total, cur))
        else:
            lr(method, fmt_money(total, cur))
        add("")
        add(
            rng.choice(
                [
                    "Thank you for your visit!",
                    "Thank you! Come again.",
                    "Thanks for shopping with us!",
                    "Have a nice day!",
                ]
            ),
            align="center",
        )
        if rng.random() < 0.5:
            add(
                rng.choice(
                    ["Returns within 30 days", "Follow us @" + store.replace(" ", "").lower()[:20], "Keep this receipt"]
                ),
                align="center",
            )

        width = int(round(cols * font("mono", FS).getlength("0"))) + 2 * MARGIN_X + 2 * PAPER_PAD
        height = _content_bottom(len(lines)) + PAPER_PAD
        height = max(height, 640)
        if height > 1200:
            raise ValueError(f"receipt too long ({len(lines)} printed lines); use fewer items")
        return {
            "size": [width, height],
            "seed": rng.getrandbits(32),
            "kind": stype,
            "store": store,
            "store_type": stype,
            "address": address,
            "city": city,
            "phone": phone,
            "receipt_no": receipt_no,
            "cashier": cashier,
            "date": canon_date(d),
            "date_printed": date_printed,
            "date_format": fmt,
            "time": canon_time(h, m),
            "time_printed": time_printed,
            "currency": cur,
            "currency_symbol": cinfo["symbol"],
            "items": item_specs,
            "subtotal": money_str(subtotal),
            "subtotal_printed": fmt_number(subtotal, cur),
            "tax_label": tax_label,
            "tax_rate": format(rate, "f"),
            "tax_rate_printed": _rate_str(rate),
            "tax": money_str(tax),
            "tax_printed": fmt_number(tax, cur),
            "total": money_str(total),
            "total_printed": fmt_money(total, cur),
            "payment": payment,
            "cols": cols,
            "lines": lines,
            "texts": [ln["text"].strip() for ln in lines if ln["text"].strip()],
        }

    def _draw(self, spec: dict) -> Image.Image:
        W, H = spec["size"]
        img = Image.new("RGBA", (W, H), (226, 226, 229, 0))
        d = ImageDraw.Draw(img)
        jr = random.Random(spec["seed"])
        paper = (253, 252, 247)
        x0, x1 = PAPER_PAD, W - PAPER_PAD
        y_end = H - PAPER_PAD
        # paper with a zig-zag (torn) bottom edge
        teeth = []
        step = 12
        x = x0
        while x < x1:
            teeth += [(x, y_end - 6), (min(x + step / 2, x1), y_end)]
            x += step
        teeth.append((x1, y_end - 6))
        d.polygon([(x0, PAPER_PAD), (x1, PAPER_PAD)] + teeth[::-1] + [(x0, y_end - 6)], fill=paper)
        # faint thermal streaks (under the print)
        for _ in range(3):
            yy = jr.randint(PAPER_PAD, y_end - 10)
            d.line([x0, yy, x1, yy], fill=(247, 246, 241), width=1)
        ink = (38, 38, 42)
        f = font("mono", FS)
        fb = font("mono-bold", FS)
        y = PAPER_PAD + 24
        text_w = W - 2 * PAPER_PAD - 2 * MARGIN_X
        left = PAPER_PAD + MARGIN_X
        for ln in spec["lines"]:
            t = ln["text"]
            if ln["large"]:
                fl = fit_font("mono-bold", t, text_w, int(FS * 1.5))
                d.text((W / 2, y + LINE_H - 2), t, font=fl, fill=ink, anchor="ms")
                y += int(LINE_H * 1.0)
            elif ln["align"] == "center":
                d.text((W / 2, y + LINE_H - 6), t, font=fb if ln["bold"] else f, fill=ink, anchor="ms")
            elif t:
                d.text((left, y + LINE_H - 6), t, font=fb if ln["bold"] else f, fill=ink, anchor="ls")
            y += LINE_H
        bw = min(300, text_w)
        draw_barcode(d, (W / 2 - bw / 2, y + 16, W / 2 + bw / 2, y + 76), spec["receipt_no"] + spec["store"], fill=ink)
        return img


FAMILY = register(Receipt())
