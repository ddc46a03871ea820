"""ticket: airline boarding passes and event tickets.

Ground truth (spec keys), kind "boarding_pass":
  passenger, passenger_printed ("SMITH/EMMA"), airline, flight ("NW 837"), from_code, from_city, to_code,
  to_city, date "YYYY/MM/DD", date_printed, departure_time "HH:MM", boarding_time "HH:MM" (25-50 min
  before departure), gate, seat, cabin, group, booking_ref, texts
kind "event_ticket":
  event, event_type, venue, city, date, date_printed, doors_time, start_time, section, row, seat,
  price, price_printed, currency, ticket_no, holder, texts
Constraints: kind and any of the keys above (dates "YYYY/MM/DD", times "HH:MM"); for boarding passes
from_code/to_code may be any 3-letter code (city names are looked up when known).
"""

from __future__ import annotations

import random

from PIL import Image, ImageDraw

from . import vocab
from .base import FamilyBase, register
from .common import code, digits, draw_barcode, draw_qr, person_name
from .fonts import fit_font, font
from .formats import (
    add_minutes,
    canon_date,
    canon_time,
    fmt_money,
    format_date,
    money,
    money_str,
    parse_date,
    parse_time,
    random_date,
    random_price,
)
from .palette import mix

KINDS = ("boarding_pass", "event_ticket")
AIRLINE_COLORS = [(20, 60, 130), (150, 24, 40), (20, 110, 100), (70, 40, 120), (220, 110, 20), (30, 30, 36)]


class Ticket(FamilyBase):
    name = "ticket"
    track = "document"
    photo_prob = 0.4
    photo_mode = "document"

    takes_user = True

    def _sample(self, rng: random.Random, **c) -> dict:
        kind = c.pop("kind", None) or rng.choice(KINDS)
        if kind not in KINDS:
            raise ValueError(f"unknown ticket kind {kind!r}; kinds: {', '.join(KINDS)}")
        user = c.pop("user", None)  # the history's user: the passenger / holder unless given
        if user:
            c.setdefault("passenger" if kind == "boarding_pass" else "holder", user)
        spec = self._sample_boarding(rng, **c) if kind == "boarding_pass" else self._sample_event(rng, **c)
        spec["kind"] = kind
        spec["seed"] = rng.getrandbits(32)
        return spec

    def _sample_boarding(
        self,
        rng,
        passenger=None,
        airline=None,
        flight=None,
        from_code=None,
        to_code=None,
        from_city=None,
        to_city=None,
        date=None,
        departure_time=None,
        boarding_time=None,
        gate=None,
        seat=None,
        cabin=None,
        group=None,
        booking_ref=None,
        date_format=None,
    ):
        passenger = passenger or person_name(rng)
        first, last = passenger.split(" ", 1) if " " in passenger else (passenger, "")
        printed = f"{last.upper()}/{first.upper()}" if last else passenger.upper()
        al = next((a for a in vocab.AIRLINES if a[0] == airline), None) or rng.choice(vocab.AIRLINES)
        airline = airline or al[0]
        flight = flight or f"{al[1]} {rng.randint(12, 2999)}"
        cities = {c3: c for c, c3, _ in vocab.CITIES}
        a, b = rng.sample(vocab.CITIES, 2)
        from_code = (from_code or a[1]).upper()
        to_code = (to_code or (b[1] if b[1] != from_code else a[1])).upper()
        from_city = from_city or cities.get(from_code, from_code)
        to_city = to_city or cities.get(to_code, to_code)
        d = parse_date(date) if date else random_date(rng)
        fmt = date_format or rng.choice(["DDMONYY", "D Mon YYYY", "Wkd, D Mon YYYY", "YYYY-MM-DD"])
        dh, dm = parse_time(departure_time) if departure_time else (rng.randint(6, 22), rng.randrange(0, 60, 5))
        if boarding_time:
            bh, bm = parse_time(boarding_time)
        else:
            bh, bm = add_minutes(dh, dm, -rng.choice([25, 30, 35, 40, 45, 50]))
        gate = gate or f"{rng.choice('ABCDEFG')}{rng.randint(1, 48)}"
        seat = seat or f"{rng.randint(1, 38)}{rng.choice('ABCDEF')}"
        cabin = cabin or rng.choice(vocab.CABINS)
        group = str(group or rng.randint(1, 6))
        ref = booking_ref or code(rng, 6, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        date_printed = format_date(d, fmt)
        f = {
            "passenger": passenger,
            "passenger_printed": printed,
            "airline": airline,
            "flight": flight,
            "from_code": from_code,
            "from_city": from_city,
            "to_code": to_code,
            "to_city": to_city,
            "date": canon_date(d),
            "date_printed": date_printed,
            "date_format": fmt,
            "departure_time": canon_time(dh, dm),
            "boarding_time": canon_time(bh, bm),
            "gate": gate,
            "seat": seat,
            "cabin": cabin,
            "group": group,
            "booking_ref": ref,
            "color": list(rng.choice(AIRLINE_COLORS)),
        }
        f["texts"] = [
            airline,
            "BOARDING PASS",
            printed,
            from_code,
            from_city,
            to_code,
            to_city,
            flight,
            date_printed,
            canon_time(bh, bm),
            canon_time(dh, dm),
            gate,
            seat,
            group,
            cabin,
            ref,
        ]
        f["size"] = [1000, 420]
        return f

    def _sample_event(
        self,
        rng,
        event=None,
        event_type=None,
        venue=None,
        city=None,
        date=None,
        doors_time=None,
        start_time=None,
        section=None,
        row=None,
        seat=None,
        price=None,
        currency=None,
        ticket_no=None,
        holder=None,
        date_format=None,
    ):
        et, names = next(((t, n) for t, n in vocab.EVENTS if t == event_type), None) or rng.choice(vocab.EVENTS)
        event_type = event_type or et
        event = event or rng.choice(names)
        venue = venue or rng.choice(vocab.VENUES)
        currency = currency or rng.choice(["USD", "EUR", "GBP", "EUR", "USD"])
        city = city or rng.choice(vocab.CURRENCY_CITIES.get(currency, ["London"]))
        d = parse_date(date) if date else random_date(rng)
        fmt = date_format or rng.choice(["Wkd, D Mon YYYY", "D Month YYYY", "Month D, YYYY", "DD.MM.YYYY"])
        sh, sm = parse_time(start_time) if start_time else (rng.randint(12, 21), rng.choice([0, 0, 30, 15, 45]))
        oh, om = parse_time(doors_time) if doors_time else add_minutes(sh, sm, -rng.choice([30, 45, 60, 90]))
        section = section or rng.choice(["A", "B", "C", "101", "112", "Floor", "Balcony", "Stalls", "204"])
        row = str(row or rng.choice([str(rng.randint(1, 30)), rng.choice("ABCDEFGHJKLMN")]))
        seat = str(seat or rng.randint(1, 40))
        price = money(price, currency) if price is not None else random_price(rng, 25, 160, currency)
        ticket_no = ticket_no or digits(rng, 10)
        holder = holder if holder is not None else person_name(rng)
        date_printed = format_date(d, fmt)
        f = {
            "event": event,
            "event_type": event_type,
            "venue": venue,
            "city": city,
            "date": canon_date(d),
            "date_printed": date_printed,
            "date_format": fmt,
            "doors_time": canon_time(oh, om),
            "start_time": canon_time(sh, sm),
            "section": section,
            "row": row,
            "seat": seat,
            "price": money_str(price),
            "price_printed": fmt_money(price, currency),
            "currency": currency,
            "ticket_no": ticket_no,
            "holder": holder,
            "color": list(rng.choice([(30, 30, 60), (120, 20, 60), (10, 90, 110), (200, 90, 20), (60, 20, 90)])),
        }
        f["texts"] = [
            event_type.upper(),
            event,
            f"{venue}, {city}",
            date_printed,
            f"Doors {canon_time(oh, om)}",
            f"Start {canon_time(sh, sm)}",
            section,
            row,
            seat,
            f["price_printed"],
            holder,
            ticket_no,
            "ADMIT ONE",
        ]
        f["size"] = [1000, 400]
        return f

    # ------------------------------------------------------------------ drawing
    def _draw(self, spec: dict) -> Image.Image:
        return self._draw_boarding(spec) if spec["kind"] == "boarding_pass" else self._draw_event(spec)

    @staticmethod
    def _field(d, x, y, label, value, fl, fv, ink, lab):
        d.text((x, y), label, font=fl, fill=lab)
        d.text((x, y + fl.size + 4), value, font=fv, fill=ink)

    def _draw_boarding(self, spec):
        W, H = spec["size"]
        img = Image.new("RGB", (W, H), (250, 250, 248))
        d = ImageDraw.Draw(img)
        col = tuple(spec["color"])
        ink, lab = (24, 24, 30), (110, 112, 120)
        stub_x = int(W * 0.71)
        d.rectangle([0, 0, W, 64], fill=col)
        d.text(
            (24, 32),
            spec["airline"],
            font=fit_font("sans-bold", spec["airline"], stub_x - 300, 30),
            fill=(255, 255, 255),
            anchor="lm",
        )
        d.text((stub_x - 24, 32), "BOARDING PASS", font=font("sans-bold", 22), fill=(255, 255, 255), anchor="rm")
        d.text(
            (W - 20, 32),
            spec["cabin"].upper(),
            font=fit_font("sans-bold", spec["cabin"].upper(), W - stub_x - 40, 18),
            fill=(255, 255, 255),
            anchor="rm",
        )
        for y in range(70, H, 14):
            d.line([stub_x, y, stub_x, y + 7], fill=(170, 170, 176), width=2)
        fl, fv, fbig = font("sans", 15), font("sans-bold", 24), font("sans-bold", 58)
        fname = fit_font("sans-bold", spec["passenger_printed"], stub_x - 60, 26)
        self._field(d, 28, 84, "PASSENGER", spec["passenger_printed"], fl, fname, ink, lab)
        # route
        y = 150
        d.text((28, y), spec["from_code"], font=fbig, fill=ink)
        d.text((28, y + 64), spec["from_city"], font=font("sans", 18), fill=lab)
        tx = int(stub_x * 0.56)
        d.text((tx, y), spec["to_code"], font=fbig, fill=ink)
        d.text((tx, y + 64), spec["to_city"], font=font("sans", 18), fill=lab)
        mid = (28 + fbig.getlength(spec["from_code"]) + tx) / 2
        d.text((mid, y + 30), "\u2708", font=font("sans", 44), fill=col, anchor="mm")
        # fields
        y2 = 270
        fields = [
            ("FLIGHT", spec["flight"]),
            ("DATE", spec["date_printed"]),
            ("BOARDING", spec["boarding_time"]),
            ("DEPARTS", spec["departure_time"]),
        ]
        x = 28
        widths = [0.2, 0.34, 0.22, 0.22]
        for (lbl, val), wf in zip(fields, widths):
            self._field(d, x, y2, lbl, val, fl, fit_font("sans-bold", val, (stub_x - 56) * wf - 10, 24), ink, lab)
            x += (stub_x - 56) * wf
        y3 = 336
        x = 28
        for lbl, val in (
            ("GATE", spec["gate"]),
            ("SEAT", spec["seat"]),
            ("GROUP", spec["group"]),
            ("BOOKING REF", spec["booking_ref"]),
        ):
            self._field(d, x, y3, lbl, val, fl, fv, ink, lab)
            x += (stub_x - 56) * 0.22
        # stub
        sx = stub_x + 22
        self._field(
            d,
            sx,
            84,
            "PASSENGER",
            spec["passenger_printed"],
            fl,
            fit_font("sans-bold", spec["passenger_printed"], W - sx - 16, 20),
            ink,
            lab,
        )
        self._field(d, sx, 140, "FLIGHT", spec["flight"], fl, font("sans-bold", 20), ink, lab)
        self._field(d, sx + 130, 140, "SEAT", spec["seat"], fl, font("sans-bold", 20), ink, lab)
        self._field(d, sx, 196, "FROM", spec["from_code"], fl, font("sans-bold", 20), ink, lab)
        self._field(d, sx + 130, 196, "TO", spec["to_code"], fl, font("sans-bold", 20), ink, lab)
        draw_qr(d, (sx + 40, 262, sx + 40 + 130, 392), spec["booking_ref"] + spec["flight"], fill=ink)
        return img

    def _draw_event(self, spec):
        W, H = spec["size"]
        col = tuple(spec["color"])
        img = Image.new("RGB", (W, H), (248, 246, 240))
        d = ImageDraw.Draw(img)
        stub_x = int(W * 0.74)
        jr = random.Random(spec["seed"])
        # colored art band on the left
        band = Image.new("RGB", (180, H), col)
        bd = ImageDraw.Draw(band)
        for _ in range(8):
            r = jr.randint(20, 70)
            x, y = jr.randint(0, 180), jr.randint(0, H)
            bd.ellipse([x - r, y - r, x + r, y + r], outline=mix(col, (255, 255, 255), 0.3), width=3)
        img.paste(band, (0, 0))
        d.text(
            (90, H / 2),
            spec["event_type"].upper(),
            font=fit_font("sans-bold", spec["event_type"].upper(), 160, 28),
            fill=(255, 255, 255),
            anchor="mm",
        )
        ink, lab = (24, 24, 30), (110, 112, 120)
        x0 = 206
        fe = fit_font("serif-bold", spec["event"], stub_x - x0 - 24, 40)
        d.text((x0, 26), spec["event"], font=fe, fill=ink)
        vt = f"{spec['venue']}, {spec['city']}"
        d.text((x0, 84), vt, font=fit_font("sans", vt, stub_x - x0 - 24, 22), fill=ink)
        fdate = fit_font("sans-bold", spec["date_printed"], stub_x - x0 - 24, 28)
        d.text((x0, 124), spec["date_printed"], font=fdate, fill=col)
        d.text((x0, 166), f"Doors {spec['doors_time']}", font=font("sans", 22), fill=ink)
        d.text((x0 + 190, 166), f"Start {spec['start_time']}", font=font("sans-bold", 22), fill=ink)
        fl, fv = font("sans", 15), font("sans-bold", 26)
        x = x0
        for lbl, val in (
            ("SECTION", spec["section"]),
            ("ROW", spec["row"]),
            ("SEAT", spec["seat"]),
            ("PRICE", spec["price_printed"]),
        ):
            self._field(d, x, 222, lbl, val, fl, fv, ink, lab)
            x += max(110, fv.getlength(val) + 30)
        d.text((x0, 300), spec["holder"], font=font("sans", 18), fill=ink)
        d.text((x0, 330), f"Ticket no. {spec['ticket_no']}", font=font("mono", 16), fill=lab)
        for y in range(0, H, 14):
            d.line([stub_x, y, stub_x, y + 7], fill=(170, 170, 176), width=2)
        sx = stub_x + 24
        d.text((sx, 26), "ADMIT ONE", font=font("sans-bold", 26), fill=col)
        self._field(d, sx, 76, "SECTION", spec["section"], fl, font("sans-bold", 20), ink, lab)
        self._field(d, sx + 120, 76, "ROW", spec["row"], fl, font("sans-bold", 20), ink, lab)
        self._field(d, sx, 130, "SEAT", spec["seat"], fl, font("sans-bold", 20), ink, lab)
        draw_barcode(d, (sx, 200, W - 24, 300), spec["ticket_no"], fill=ink)
        d.text((sx, 310), spec["ticket_no"], font=font("mono", 16), fill=ink)
        return img


FAMILY = register(Ticket())
