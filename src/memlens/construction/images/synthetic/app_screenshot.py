"""app_screenshot: phone app / web screens with key-value content.

Kinds and ground truth (besides size/seed/kind/texts/photo):
  every kind: app (app or shop name), status_time, fields [[label, value], ...] = every key/value pair
              displayed, in display order (the values exactly as printed)
  order_confirmation:   shop, order_no, order_date, items [{name, qty, price}], subtotal, shipping, total,
                        currency, delivery_date ("YYYY/MM/DD"), delivery_printed, address
  fitness_tracker:      date, date_printed, steps, step_goal, distance_km, calories, active_minutes,
                        avg_heart_rate, week [{day, steps}] (bars, unlabeled)
  weather:              city, date, date_printed, unit ("C"|"F"), temp, condition, high, low,
                        hourly [{time, temp}], daily [{day, high, low, condition}]
  booking_confirmation: hotel, city, confirmation_no, check_in, check_out ("YYYY/MM/DD"), check_in_printed,
                        check_out_printed, nights, room_type, guests, total, currency
  streaming_bill:       service, plan, amount, currency, billing_date, next_billing_date, card_last4, invoice_no
Numbers are exact: order totals are sums (Decimal), nights = check_out - check_in, next billing = +1 month.
Constraints: kind, and any typed key of that kind (dates "YYYY/MM/DD").
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
from decimal import Decimal

from PIL import Image, ImageDraw

from . import vocab
from .base import FamilyBase, register
from .common import code, digits, person_name, street_address
from .fonts import fit_font, font
from .formats import (
    canon_date,
    fmt_money,
    format_date,
    format_time,
    money,
    money_str,
    parse_date,
    random_date,
    random_price,
)
from .palette import mix
from .phone import PHONE_SIZE, home_indicator, status_bar

KINDS = ("order_confirmation", "fitness_tracker", "weather", "booking_confirmation", "streaming_bill")
ACCENTS = [(20, 110, 220), (230, 90, 40), (30, 150, 110), (120, 70, 200), (220, 40, 90), (20, 20, 24)]


def _add_month(d: dt.date) -> dt.date:
    y, m = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
    return dt.date(y, m, min(d.day, calendar.monthrange(y, m)[1]))


class AppScreenshot(FamilyBase):
    name = "app_screenshot"
    takes_user = True
    track = "document"
    photo_prob = 0.0

    def _sample(self, rng: random.Random, **c) -> dict:
        kind = c.pop("kind", None) or rng.choice(KINDS)
        if kind not in KINDS:
            raise ValueError(f"unknown app_screenshot kind {kind!r}; kinds: {', '.join(KINDS)}")
        user = c.pop("user", None)  # the history's user: the guest on a booking unless given
        if user and kind == "booking_confirmation":
            c.setdefault("guest_name", user)
        spec = getattr(self, f"_s_{kind}")(rng, **c)
        spec["kind"] = kind
        spec["size"] = list(PHONE_SIZE)
        spec["status_time"] = spec.get("status_time") or format_time(rng.randint(7, 22), rng.randrange(60), pad=False)
        spec["accent"] = list(rng.choice(ACCENTS))
        spec["seed"] = rng.getrandbits(32)
        drawn = spec.pop("_texts", None)
        if drawn is None:
            drawn = spec.pop("_extra_texts", []) + [t for kv in spec["fields"] for t in kv]
        spec["texts"] = [spec["status_time"], spec["app"]] + drawn
        return spec

    # ------------------------------------------------------------------ samplers
    def _s_order_confirmation(
        self,
        rng,
        shop=None,
        order_no=None,
        order_date=None,
        items=None,
        currency=None,
        shipping=None,
        delivery_date=None,
        address=None,
    ):
        cur = currency or rng.choice(["USD", "EUR", "GBP"])
        shop = shop or rng.choice(vocab.ONLINE_SHOPS)
        od = parse_date(order_date) if order_date else random_date(rng)
        dd = parse_date(delivery_date) if delivery_date else od + dt.timedelta(days=rng.randint(1, 6))
        if items:
            its = [(str(n), int(q), money(p, cur)) for n, q, p in items]
        else:
            its = [
                (n, rng.choice([1, 1, 1, 2]), random_price(rng, lo, hi, cur))
                for n, lo, hi in rng.sample(vocab.ONLINE_ITEMS, rng.randint(1, 3))
            ]
        sub = sum((p * q for _, q, p in its), Decimal(0))
        ship = (
            money(shipping, cur) if shipping is not None else money(rng.choice(["0", "0", "4.99", "5.95", "3.50"]), cur)
        )
        total = sub + ship
        order_no = order_no or f"{digits(rng, 3)}-{digits(rng, 7)}"
        address = address or street_address(rng, rng.choice(vocab.CURRENCY_CITIES[cur]))
        fields = [["Order number", order_no], ["Order date", format_date(od, "Mon D, YYYY")]]
        for n, q, p in its:
            fields.append([f"{n} x{q}" if q > 1 else n, fmt_money(money(p * q, cur), cur)])
        fields += [
            ["Subtotal", fmt_money(money(sub, cur), cur)],
            ["Shipping", "Free" if ship == 0 else fmt_money(ship, cur)],
            ["Total", fmt_money(money(total, cur), cur)],
            ["Estimated delivery", format_date(dd, "Weekday, Month D")],
            ["Ship to", address],
        ]
        return {
            "app": shop,
            "shop": shop,
            "order_no": order_no,
            "order_date": canon_date(od),
            "items": [{"name": n, "qty": q, "price": money_str(p)} for n, q, p in its],
            "subtotal": money_str(money(sub, cur)),
            "shipping": money_str(ship),
            "total": money_str(money(total, cur)),
            "currency": cur,
            "delivery_date": canon_date(dd),
            "delivery_printed": format_date(dd, "Weekday, Month D"),
            "address": address,
            "fields": fields,
            "_extra_texts": ["Order confirmed", "Thanks for your order!"],
        }

    def _s_fitness_tracker(
        self,
        rng,
        date=None,
        steps=None,
        step_goal=None,
        distance_km=None,
        calories=None,
        active_minutes=None,
        avg_heart_rate=None,
    ):
        d = parse_date(date) if date else random_date(rng)
        steps = int(steps if steps is not None else rng.randint(1500, 19000))
        goal = int(step_goal or rng.choice([6000, 8000, 10000, 12000]))
        if distance_km is not None:
            dist = Decimal(str(distance_km))
        else:
            dist = (Decimal(steps) * Decimal("0.00074")).quantize(Decimal("0.1"))
        cal = int(calories if calories is not None else steps * rng.uniform(0.035, 0.05))
        act = int(active_minutes if active_minutes is not None else max(5, steps // rng.randint(110, 160)))
        hr = int(avg_heart_rate if avg_heart_rate is not None else rng.randint(62, 96))
        # the week ending on `d` (drawn as unlabeled bars)
        week = []
        for k in range(6, -1, -1):
            dd = d - dt.timedelta(days=k)
            week.append({"day": canon_date(dd), "steps": steps if k == 0 else rng.randint(1500, 16000)})
        dp = format_date(d, "Weekday, Month D")
        fields = [
            ["Steps", f"{steps:,}"],
            ["Goal", f"{goal:,}"],
            ["Distance", f"{dist} km"],
            ["Calories", f"{cal:,} kcal"],
            ["Active minutes", f"{act} min"],
            ["Avg heart rate", f"{hr} bpm"],
        ]
        return {
            "app": rng.choice(["StepSmart", "FitPulse", "MoveWell"]),
            "date": canon_date(d),
            "date_printed": dp,
            "steps": steps,
            "step_goal": goal,
            "distance_km": str(dist),
            "calories": cal,
            "active_minutes": act,
            "avg_heart_rate": hr,
            "week": week,
            "fields": fields,
            "_texts": [dp, f"{steps:,}", "Steps", f"{round(100 * steps / goal)}% of goal"]
            + [t for kv in fields[1:] for t in kv],
        }

    def _s_weather(self, rng, city=None, date=None, unit=None, temp=None, condition=None, high=None, low=None):
        cityrow = next((x for x in vocab.CITIES if x[0] == city), None) or rng.choice(vocab.CITIES)
        city = city or cityrow[0]
        unit = unit or ("F" if cityrow[2] == "USA" else "C")
        d = parse_date(date) if date else random_date(rng)
        south = cityrow[2] in ("Australia", "New Zealand")
        season = (d.month % 12) // 3  # 0 winter, 1 spring, 2 summer, 3 autumn (northern hemisphere)
        if south:
            season = (season + 2) % 4
        lo_c, hi_c = [(-6, 9), (6, 19), (17, 33), (5, 18)][season]
        base_c = rng.randint(lo_c, hi_c)
        base = base_c if unit == "C" else round(base_c * 9 / 5 + 32)
        temp = int(temp if temp is not None else base)
        high = int(high if high is not None else temp + rng.randint(1, 6))
        low = int(low if low is not None else temp - rng.randint(3, 9))
        if not low <= temp <= high:
            raise ValueError("weather needs low <= temp <= high")
        condition = condition or rng.choice(vocab.WEATHER)
        h0 = rng.randint(6, 18)
        hourly = [
            {"time": f"{(h0 + k) % 24:02d}:00", "temp": min(high, max(low, temp + rng.randint(-2, 3))) if k else temp}
            for k in range(5)
        ]
        daily = []
        for k in range(1, 4):
            dd = d + dt.timedelta(days=k)
            hi = temp + rng.randint(-4, 5)
            daily.append(
                {
                    "day": format_date(dd, "Wkd, Mon D")[:3],
                    "date": canon_date(dd),
                    "high": hi,
                    "low": hi - rng.randint(4, 10),
                    "condition": rng.choice(vocab.WEATHER),
                }
            )
        dp = format_date(d, "Weekday, Month D")
        deg = "\u00b0"
        fields = [
            ["City", city],
            ["Date", dp],
            ["Now", f"{temp}{deg}{unit}"],
            ["Condition", condition],
            ["High", f"H:{high}{deg}"],
            ["Low", f"L:{low}{deg}"],
        ]
        fields += [[hh["time"] if k else "Now", f"{hh['temp']}{deg}"] for k, hh in enumerate(hourly)]
        fields += [[dy["day"], f"{dy['high']}{deg} / {dy['low']}{deg}"] for dy in daily]
        texts = [city, dp, f"{temp}{deg}{unit}", condition, f"H:{high}{deg}   L:{low}{deg}"]
        for k, hh in enumerate(hourly):
            texts += ["Now" if k == 0 else hh["time"], f"{hh['temp']}{deg}"]
        for dy in daily:
            texts += [dy["day"], dy["condition"], f"{dy['high']}{deg} / {dy['low']}{deg}"]
        return {
            "_texts": texts,
            "app": "Weather",
            "city": city,
            "date": canon_date(d),
            "date_printed": dp,
            "unit": unit,
            "temp": temp,
            "condition": condition,
            "high": high,
            "low": low,
            "hourly": hourly,
            "daily": daily,
            "fields": fields,
        }

    def _s_booking_confirmation(
        self,
        rng,
        hotel=None,
        city=None,
        confirmation_no=None,
        check_in=None,
        check_out=None,
        nights=None,
        room_type=None,
        guests=None,
        total=None,
        currency=None,
        guest_name=None,
    ):
        cur = currency or rng.choice(["USD", "EUR", "GBP", "EUR"])
        hotel = hotel or rng.choice(vocab.HOTELS)
        city = city or rng.choice(vocab.CURRENCY_CITIES.get(cur, ["London"]))
        ci = parse_date(check_in) if check_in else random_date(rng)
        if check_out:
            co = parse_date(check_out)
        else:
            co = ci + dt.timedelta(days=int(nights or rng.randint(1, 7)))
        n = (co - ci).days
        if n <= 0:
            raise ValueError("check_out must be after check_in")
        room = room_type or rng.choice(vocab.ROOM_TYPES)
        guests = int(guests or rng.randint(1, 4))
        tot = money(total, cur) if total is not None else money(random_price(rng, 80, 260, cur) * n, cur)
        conf = confirmation_no or code(rng, 3, "ABCDEFGHJKLMNPQRSTUVWXYZ") + digits(rng, 6)
        guest_name = guest_name or person_name(rng)
        cip, cop = format_date(ci, "Wkd, D Mon YYYY"), format_date(co, "Wkd, D Mon YYYY")
        fields = [
            ["Confirmation", conf],
            ["Guest", guest_name],
            ["Check-in", cip],
            ["From", "15:00"],
            ["Check-out", cop],
            ["Until", "11:00"],
            ["Nights", str(n)],
            ["Room", room],
            ["Guests", f"{guests} adult{'s' if guests > 1 else ''}"],
            ["Total price", fmt_money(tot, cur)],
        ]
        return {
            "app": rng.choice(["StayFinder", "Bookly", "RoomRadar"]),
            "hotel": hotel,
            "city": city,
            "confirmation_no": conf,
            "guest_name": guest_name,
            "check_in": canon_date(ci),
            "check_out": canon_date(co),
            "check_in_printed": cip,
            "check_out_printed": cop,
            "nights": n,
            "room_type": room,
            "guests": guests,
            "total": money_str(tot),
            "currency": cur,
            "fields": fields,
            "_texts": ["Booking confirmed", hotel, city]
            + [t for kv in fields[:2] for t in kv]
            + ["Check-in", cip, "From 15:00", "Check-out", cop, "Until 11:00"]
            + [t for kv in fields[6:] for t in kv],
        }

    def _s_streaming_bill(
        self,
        rng,
        service=None,
        plan=None,
        amount=None,
        currency=None,
        billing_date=None,
        card_last4=None,
        invoice_no=None,
    ):
        svc = next((s for s in vocab.STREAMING if s[0] == service), None) or rng.choice(vocab.STREAMING)
        service = service or svc[0]
        plan = plan or rng.choice(svc[1])
        cur = currency or rng.choice(["USD", "EUR", "GBP", "DKK"])
        amt = money(amount, cur) if amount is not None else random_price(rng, 5, 23, cur)
        bd = parse_date(billing_date) if billing_date else random_date(rng)
        nd = _add_month(bd)
        last4 = card_last4 or digits(rng, 4)
        inv = invoice_no or f"INV-{digits(rng, 8)}"
        fields = [
            ["Plan", plan],
            ["Amount charged", fmt_money(amt, cur)],
            ["Billing date", format_date(bd, "Month D, YYYY")],
            ["Next billing date", format_date(nd, "Month D, YYYY")],
            ["Payment method", f"Visa \u2022\u2022\u2022\u2022 {last4}"],
            ["Invoice", inv],
        ]
        return {
            "app": service,
            "service": service,
            "plan": plan,
            "amount": money_str(amt),
            "currency": cur,
            "billing_date": canon_date(bd),
            "next_billing_date": canon_date(nd),
            "card_last4": last4,
            "invoice_no": inv,
            "fields": fields,
            "_texts": ["Payment receipt", fmt_money(amt, cur)]
            + [t for kv in fields for t in kv]
            + ["Thanks for being a member!"],
        }

    # ------------------------------------------------------------------ drawing
    def _draw(self, spec: dict) -> Image.Image:
        W, H = spec["size"]
        acc = tuple(spec["accent"])
        bg = (244, 245, 247)
        img = Image.new("RGB", (W, H), bg)
        d = ImageDraw.Draw(img)
        status_bar(d, W, spec["status_time"], (255, 255, 255))
        # app bar
        d.rectangle([0, 38, W, 100], fill=(255, 255, 255))
        d.line([0, 100, W, 100], fill=(222, 224, 228), width=1)
        d.text((20, 69), "\u2039", font=font("sans", 40), fill=acc, anchor="lm")
        d.text(
            (W / 2, 69),
            spec["app"],
            font=fit_font("sans-bold", spec["app"], W - 140, 22),
            fill=(24, 24, 28),
            anchor="mm",
        )
        getattr(self, f"_d_{spec['kind']}")(d, img, spec, acc)
        home_indicator(d, W, H)
        return img

    @staticmethod
    def _card(d, box):
        d.rounded_rectangle(box, radius=16, fill=(255, 255, 255), outline=(226, 228, 232))

    @staticmethod
    def _rows(d, x0, x1, y, rows, size=18, gap=40, label_col=(110, 112, 120), val_col=(24, 24, 28)):
        fl, _fv = font("sans", size), font("sans-bold", size)
        for lab, val in rows:
            d.text((x0, y), lab, font=fl, fill=label_col)
            fvv = fit_font("sans-bold", val, (x1 - x0) - fl.getlength(lab) - 20, size)
            d.text((x1, y), val, font=fvv, fill=val_col, anchor="ra")
            y += gap
        return y

    def _d_order_confirmation(self, d, img, spec, acc):
        W, _ = spec["size"]
        f = dict((k, v) for k, v in spec["fields"])
        d.ellipse([W / 2 - 36, 130, W / 2 + 36, 202], fill=acc)
        d.line([(W / 2 - 16, 167), (W / 2 - 4, 180), (W / 2 + 18, 152)], fill=(255, 255, 255), width=7)
        d.text((W / 2, 226), "Order confirmed", font=font("sans-bold", 28), fill=(24, 24, 28), anchor="ma")
        d.text((W / 2, 266), "Thanks for your order!", font=font("sans", 18), fill=(110, 112, 120), anchor="ma")
        n_items = len(spec["items"])
        y = 312
        self._card(d, [16, y, W - 16, y + 96])
        self._rows(d, 36, W - 36, y + 18, spec["fields"][:2])
        y += 112
        rows = spec["fields"][2 : 2 + n_items + 3]
        h = 24 + 40 * len(rows)
        self._card(d, [16, y, W - 16, y + h])
        self._rows(d, 36, W - 36, y + 18, rows[:n_items])
        d.line([36, y + 12 + 40 * n_items, W - 36, y + 12 + 40 * n_items], fill=(230, 230, 234))
        self._rows(d, 36, W - 36, y + 20 + 40 * n_items, rows[n_items:])
        y += h + 16
        rest = spec["fields"][2 + n_items + 3 :]
        self._card(d, [16, y, W - 16, y + 150])
        d.text((36, y + 18), rest[0][0], font=font("sans", 18), fill=(110, 112, 120))
        d.text((36, y + 44), rest[0][1], font=fit_font("sans-bold", rest[0][1], W - 72, 24), fill=acc)
        d.text((36, y + 86), rest[1][0], font=font("sans", 18), fill=(110, 112, 120))
        d.text((36, y + 110), rest[1][1], font=fit_font("sans", rest[1][1], W - 72, 19), fill=(24, 24, 28))
        _ = f

    def _d_fitness_tracker(self, d, img, spec, acc):
        W, _ = spec["size"]
        d.text((W / 2, 124), spec["date_printed"], font=font("sans-bold", 22), fill=(24, 24, 28), anchor="ma")
        cx, cy, r = W / 2, 330, 140
        frac = min(1.0, spec["steps"] / spec["step_goal"])
        d.ellipse([cx - r, cy - r, cx + r, cy + r], outline=(226, 228, 234), width=22)
        if frac > 0:
            d.arc([cx - r, cy - r, cx + r, cy + r], -90, -90 + 360 * frac, fill=acc, width=22)
        d.text((cx, cy - 18), f"{spec['steps']:,}", font=font("sans-bold", 50), fill=(24, 24, 28), anchor="mm")
        d.text((cx, cy + 30), "Steps", font=font("sans", 20), fill=(110, 112, 120), anchor="mm")
        pct = f"{round(100 * spec['steps'] / spec['step_goal'])}% of goal"
        d.text((cx, cy + 62), pct, font=font("sans", 16), fill=acc, anchor="mm")
        y = 500
        self._card(d, [16, y, W - 16, y + 24 + 40 * 5])
        self._rows(d, 36, W - 36, y + 18, spec["fields"][1:])
        # weekly bars
        y = 752
        self._card(d, [16, y, W - 16, y + 160])
        mx = max(wk["steps"] for wk in spec["week"])
        bw = (W - 80) / 7
        for i, wk in enumerate(spec["week"]):
            bh = 110 * wk["steps"] / mx
            x = 40 + i * bw
            d.rounded_rectangle(
                [x + 8, y + 130 - bh, x + bw - 8, y + 130],
                radius=6,
                fill=acc if i == 6 else mix(acc, (255, 255, 255), 0.6),
            )

    def _d_weather(self, d, img, spec, acc):
        W, H = spec["size"]
        top = mix(acc, (120, 180, 240), 0.6)
        for y in range(101, H - 20, 4):
            d.rectangle([0, y, W, y + 4], fill=mix(top, (30, 50, 90), (y - 100) / H))
        white = (255, 255, 255)
        d.text(
            (W / 2, 130), spec["city"], font=fit_font("sans-bold", spec["city"], W - 60, 34), fill=white, anchor="ma"
        )
        d.text((W / 2, 176), spec["date_printed"], font=font("sans", 18), fill=white, anchor="ma")
        deg = "\u00b0"
        d.text((W / 2, 300), f"{spec['temp']}{deg}{spec['unit']}", font=font("sans-light", 96), fill=white, anchor="mm")
        d.text((W / 2, 378), spec["condition"], font=font("sans", 24), fill=white, anchor="mm")
        d.text(
            (W / 2, 416),
            f"H:{spec['high']}{deg}   L:{spec['low']}{deg}",
            font=font("sans-bold", 20),
            fill=white,
            anchor="mm",
        )
        y = 460
        d.rounded_rectangle([16, y, W - 16, y + 150], radius=16, fill=mix(top, (0, 0, 0), 0.25))
        cw = (W - 32) / 5
        for k, hh in enumerate(spec["hourly"]):
            x = 16 + cw * k + cw / 2
            d.text((x, y + 26), "Now" if k == 0 else hh["time"], font=font("sans", 17), fill=white, anchor="mm")
            sunny = "un" in spec["condition"] or "lear" in spec["condition"]
            d.ellipse([x - 14, y + 56, x + 14, y + 84], fill=(250, 210, 60) if sunny else (220, 226, 236))
            d.text((x, y + 118), f"{hh['temp']}{deg}", font=font("sans-bold", 20), fill=white, anchor="mm")
        y = 630
        d.rounded_rectangle([16, y, W - 16, y + 220], radius=16, fill=mix(top, (0, 0, 0), 0.25))
        for k, dy in enumerate(spec["daily"]):
            yy = y + 24 + k * 64
            d.text((40, yy + 12), dy["day"], font=font("sans-bold", 20), fill=white, anchor="lm")
            d.text((140, yy + 12), dy["condition"], font=font("sans", 17), fill=white, anchor="lm")
            d.text(
                (W - 40, yy + 12),
                f"{dy['high']}{deg} / {dy['low']}{deg}",
                font=font("sans-bold", 20),
                fill=white,
                anchor="rm",
            )

    def _d_booking_confirmation(self, d, img, spec, acc):
        W, _ = spec["size"]
        jr = random.Random(spec["seed"])
        # hotel "photo" banner
        y = 100
        sky = mix(acc, (170, 210, 240), 0.7)
        d.rectangle([0, y, W, y + 170], fill=sky)
        for _ in range(5):
            bx = jr.randint(0, W - 120)
            bh = jr.randint(60, 150)
            d.rectangle(
                [bx, y + 170 - bh, bx + jr.randint(60, 140), y + 170], fill=mix((90, 90, 110), sky, jr.random() * 0.5)
            )
        d.rectangle([0, y + 170, W, y + 172], fill=(220, 220, 226))
        d.text((24, y + 190), "Booking confirmed", font=font("sans-bold", 16), fill=(30, 150, 80))
        d.text((24, y + 214), spec["hotel"], font=fit_font("sans-bold", spec["hotel"], W - 48, 28), fill=(24, 24, 28))
        d.text((24, y + 252), spec["city"], font=font("sans", 18), fill=(110, 112, 120))
        y = 390
        rows = spec["fields"]
        self._card(d, [16, y, W - 16, y + 24 + 40 * 2])
        self._rows(d, 36, W - 36, y + 18, rows[:2])
        y += 24 + 80 + 14
        # check-in / check-out panel
        self._card(d, [16, y, W - 16, y + 130])
        mid = W / 2
        d.line([mid, y + 16, mid, y + 114], fill=(226, 228, 232), width=2)
        for k, (lab, val) in enumerate([rows[2], rows[4]]):
            x = 36 if k == 0 else mid + 20
            sub = rows[3] if k == 0 else rows[5]
            d.text((x, y + 16), lab, font=font("sans", 16), fill=(110, 112, 120))
            d.text((x, y + 42), val, font=fit_font("sans-bold", val, mid - 56, 20), fill=(24, 24, 28))
            d.text((x, y + 80), f"{sub[0]} {sub[1]}", font=font("sans", 16), fill=(110, 112, 120))
        y += 144
        self._card(d, [16, y, W - 16, y + 24 + 40 * 4])
        self._rows(d, 36, W - 36, y + 18, rows[6:])

    def _d_streaming_bill(self, d, img, spec, acc):
        W, _ = spec["size"]
        d.rounded_rectangle([W / 2 - 44, 130, W / 2 + 44, 218], radius=20, fill=acc)
        d.polygon([(W / 2 - 14, 152), (W / 2 + 22, 174), (W / 2 - 14, 196)], fill=(255, 255, 255))
        d.text((W / 2, 240), "Payment receipt", font=font("sans-bold", 28), fill=(24, 24, 28), anchor="ma")
        amount = spec["fields"][1][1]
        d.text((W / 2, 300), amount, font=font("sans-bold", 48), fill=acc, anchor="ma")
        y = 390
        self._card(d, [16, y, W - 16, y + 24 + 44 * len(spec["fields"])])
        self._rows(d, 36, W - 36, y + 20, spec["fields"], gap=44)
        d.text(
            (W / 2, y + 60 + 44 * len(spec["fields"])),
            "Thanks for being a member!",
            font=font("sans", 18),
            fill=(110, 112, 120),
            anchor="ma",
        )


FAMILY = register(AppScreenshot())
