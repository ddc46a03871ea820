"""clock: analog wall clocks (hands at exact angles) and digital seven-segment displays.

Ground truth (spec keys):
  kind "analog" | "digital" (= style), time "HH:MM" (24 h, as given), hour, minute
  analog:  time_on_face "h:mm" (12-hour reading; a face cannot show AM/PM), hour_angle_deg,
           minute_angle_deg (clockwise from 12 o'clock: hour = (h % 12) * 30 + m / 2, minute = m * 6),
           numerals "arabic" | "roman" | "none", second | null (+ second_angle_deg), brand
  digital: display (the digits as shown, e.g. "8:12" or "20:12"), hour_format 12 | 24, am_pm ("AM"/"PM"
           indicator lit, 12-hour only) | null, date | null, date_printed | null, color
Constraints: time ("HH:MM"), style ("analog"|"digital"), numerals, second (int or None), hour_format,
date ("YYYY/MM/DD" or None), brand.
"""

from __future__ import annotations

import math
import random

from PIL import Image, ImageDraw

from .base import FamilyBase, register
from .fonts import fit_font, font
from .formats import MON, WD, canon_date, canon_time, parse_date, parse_time, random_date
from .palette import mix, shade

ROMAN = ["XII", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI"]
SEGMENTS = {  # a b c d e f g
    "0": "abcdef",
    "1": "bc",
    "2": "abdeg",
    "3": "abcdg",
    "4": "bcfg",
    "5": "acdfg",
    "6": "acdefg",
    "7": "abc",
    "8": "abcdefg",
    "9": "abcdfg",
    " ": "",
}
LED_COLORS = {"red": (255, 48, 40), "green": (70, 250, 120), "blue": (120, 200, 255), "amber": (255, 176, 30)}


def hand_angles(h: int, m: int, s: int | None = None) -> tuple[float, float, float | None]:
    return ((h % 12) * 30 + m * 0.5, m * 6.0, None if s is None else s * 6.0)


class Clock(FamilyBase):
    name = "clock"
    track = "experience"
    tracks = ("experience", "document")
    photo_prob = 0.5
    photo_mode = "scene"
    photo_like = True

    def _sample(self, rng: random.Random, **c) -> dict:
        allowed = {"time", "style", "numerals", "second", "hour_format", "date", "brand"}
        if set(c) - allowed:
            raise TypeError(f"clock: unknown constraints {sorted(set(c) - allowed)}")
        style = c.get("style") or rng.choice(["analog", "analog", "digital"])
        if style not in ("analog", "digital"):
            raise ValueError("clock style must be 'analog' or 'digital'")
        h, m = parse_time(c["time"]) if c.get("time") else (rng.randrange(24), rng.randrange(60))
        spec = {"kind": style, "style": style, "time": canon_time(h, m), "hour": h, "minute": m}
        if style == "analog":
            numerals = c.get("numerals") or rng.choice(["arabic", "arabic", "arabic", "roman"])
            second = c["second"] if "second" in c else (rng.randrange(60) if rng.random() < 0.3 else None)
            ha, ma, sa = hand_angles(h, m, second)
            brand = c.get("brand") or rng.choice(["QUARTZ", "NORDHAVEN", "ALPINA", "", "MERIDIAN"])
            face_time = f"{h % 12 or 12}:{m:02d}"
            spec.update(
                {
                    "size": [800, 800],
                    "time_on_face": face_time,
                    "hour_angle_deg": ha,
                    "minute_angle_deg": ma,
                    "numerals": numerals,
                    "second": second,
                    "second_angle_deg": sa,
                    "brand": brand,
                    "frame_color": list(
                        rng.choice(
                            [(30, 30, 34), (150, 110, 60), (200, 200, 204), (170, 40, 40), (30, 70, 130), (60, 110, 70)]
                        )
                    ),
                    "wall_color": list(
                        rng.choice(
                            [(220, 214, 200), (196, 210, 214), (232, 226, 216), (186, 196, 180), (214, 196, 180)]
                        )
                    ),
                }
            )
            labels = (
                [str(i) for i in [12] + list(range(1, 12))]
                if numerals == "arabic"
                else ROMAN
                if numerals == "roman"
                else []
            )
            spec["texts"] = labels + ([brand] if brand else [])
        else:
            fmt = int(c.get("hour_format") or rng.choice([12, 24]))
            if fmt not in (12, 24):
                raise ValueError("hour_format must be 12 or 24")
            if fmt == 12:
                display = f"{h % 12 or 12}:{m:02d}"
                am_pm = "AM" if h < 12 else "PM"
            else:
                display = f"{h:02d}:{m:02d}"
                am_pm = None
            if "date" in c:
                d = parse_date(c["date"]) if c["date"] else None
            else:
                d = random_date(rng) if rng.random() < 0.5 else None
            date_printed = f"{WD[d.weekday()].upper()} {d.day} {MON[d.month - 1].upper()}" if d else None
            spec.update(
                {
                    "size": [900, 520],
                    "display": display,
                    "hour_format": fmt,
                    "am_pm": am_pm,
                    "date": canon_date(d) if d else None,
                    "date_printed": date_printed,
                    "color": rng.choice(sorted(LED_COLORS)),
                }
            )
            spec["texts"] = [display] + ([am_pm] if am_pm else []) + ([date_printed] if date_printed else [])
        spec["seed"] = rng.getrandbits(32)
        return spec

    def _draw(self, spec: dict) -> Image.Image:
        return self._draw_analog(spec) if spec["kind"] == "analog" else self._draw_digital(spec)

    def _draw_analog(self, spec):
        S = 2
        W, H = spec["size"]
        img = Image.new("RGB", (W * S, H * S), tuple(spec["wall_color"]))
        d = ImageDraw.Draw(img)
        cx, cy = W * S / 2, H * S / 2
        R = min(W, H) * S * 0.42
        frame = tuple(spec["frame_color"])
        d.ellipse(
            [cx - R + 14 * S, cy - R + 18 * S, cx + R + 14 * S, cy + R + 18 * S], fill=shade(spec["wall_color"], 0.78)
        )
        d.ellipse([cx - R, cy - R, cx + R, cy + R], fill=frame)
        d.ellipse([cx - R * 0.94, cy - R * 0.94, cx + R * 0.94, cy + R * 0.94], fill=shade(frame, 0.7))
        r = R * 0.9
        face = (250, 248, 242)
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=face)
        ink = (24, 24, 28)

        def pol(angle_deg, rad):
            a = math.radians(angle_deg)
            return cx + rad * math.sin(a), cy - rad * math.cos(a)

        for i in range(60):
            a = i * 6
            major = i % 5 == 0
            p0, p1 = pol(a, r * (0.86 if major else 0.92)), pol(a, r * 0.97)
            d.line([p0, p1], fill=ink, width=int((5 if major else 2) * S))
        if spec["numerals"] != "none":
            labels = [str(i) for i in [12] + list(range(1, 12))] if spec["numerals"] == "arabic" else ROMAN
            arabic = spec["numerals"] == "arabic"
            fn = font("sans-bold" if arabic else "serif-bold", int(r * (0.16 if arabic else 0.12)))
            for i, lab in enumerate(labels):
                x, y = pol(i * 30, r * 0.72)
                d.text((x, y), lab, font=fn, fill=ink, anchor="mm")
        if spec.get("brand"):
            d.text(
                (cx, cy - r * 0.36), spec["brand"], font=font("sans", int(r * 0.06)), fill=(110, 110, 116), anchor="mm"
            )

        def hand(angle, length, width, color, tail=0.12):
            a = math.radians(angle)
            ux, uy = math.sin(a), -math.cos(a)
            px, py = -uy, ux
            tip = (cx + ux * length, cy + uy * length)
            back = (cx - ux * length * tail, cy - uy * length * tail)
            w = width / 2
            pts = [
                (back[0] + px * w, back[1] + py * w),
                (tip[0] + px * w * 0.35, tip[1] + py * w * 0.35),
                (tip[0] + ux * w * 0.6, tip[1] + uy * w * 0.6),
                (tip[0] - px * w * 0.35, tip[1] - py * w * 0.35),
                (back[0] - px * w, back[1] - py * w),
            ]
            d.polygon(pts, fill=color)

        hand(spec["hour_angle_deg"], r * 0.5, r * 0.065, ink)
        hand(spec["minute_angle_deg"], r * 0.8, r * 0.042, ink)
        if spec.get("second") is not None:
            hand(spec["second_angle_deg"], r * 0.86, r * 0.014, (200, 30, 30), tail=0.2)
        d.ellipse([cx - r * 0.045, cy - r * 0.045, cx + r * 0.045, cy + r * 0.045], fill=ink)
        d.ellipse([cx - r * 0.015, cy - r * 0.015, cx + r * 0.015, cy + r * 0.015], fill=(180, 180, 180))
        return img.reduce(S)

    def _draw_digital(self, spec):
        W, H = spec["size"]
        jr = random.Random(spec["seed"])
        bg = jr.choice([(196, 186, 170), (150, 160, 170), (220, 220, 214), (120, 100, 80)])
        img = Image.new("RGB", (W, H), bg)
        d = ImageDraw.Draw(img)
        d.rectangle([0, int(H * 0.82), W, H], fill=shade(bg, 0.75))
        bx0, by0, bx1, by1 = int(W * 0.08), int(H * 0.12), int(W * 0.92), int(H * 0.86)
        d.rounded_rectangle([bx0 + 10, by0 + 14, bx1 + 10, by1 + 14], radius=40, fill=shade(bg, 0.6))
        d.rounded_rectangle([bx0, by0, bx1, by1], radius=40, fill=(36, 36, 40))
        sx0, sy0, sx1, sy1 = bx0 + 40, by0 + 40, bx1 - 40, by1 - 40
        d.rounded_rectangle([sx0, sy0, sx1, sy1], radius=16, fill=(12, 12, 14))
        on = LED_COLORS[spec["color"]]
        off = mix((12, 12, 14), on, 0.08)
        text = spec["display"]
        has_date = bool(spec.get("date_printed"))
        dh = (sy1 - sy0) * (0.56 if has_date else 0.7)
        dw = dh * 0.52
        t = dh * 0.11
        gap = dw * 0.32
        chars = list(text.rjust(5))
        total = sum(dw if ch != ":" else dw * 0.4 for ch in chars) + gap * (len(chars) - 1)
        x = (sx0 + sx1) / 2 - total / 2 - (dw * 0.4 if spec.get("am_pm") else 0)
        y0 = sy0 + (sy1 - sy0 - dh) / 2 - (dh * 0.18 if has_date else 0)
        for ch in chars:
            if ch == ":":
                cw = dw * 0.4
                for fy in (0.3, 0.7):
                    cyy = y0 + dh * fy
                    d.ellipse([x + cw / 2 - t * 0.7, cyy - t * 0.7, x + cw / 2 + t * 0.7, cyy + t * 0.7], fill=on)
                x += cw + gap
                continue
            lit = SEGMENTS[ch]
            for seg in "abcdefg":
                d.polygon(_segment(seg, x, y0, dw, dh, t), fill=on if seg in lit else off)
            x += dw + gap
        if spec.get("am_pm"):
            fa = font("sans-bold", int(dh * 0.16))
            d.text((x - gap + 14, y0 + dh * 0.05), "AM", font=fa, fill=on if spec["am_pm"] == "AM" else off)
            d.text((x - gap + 14, y0 + dh * 0.62), "PM", font=fa, fill=on if spec["am_pm"] == "PM" else off)
        if has_date:
            fd = fit_font("sans-bold", spec["date_printed"], (sx1 - sx0) * 0.6, int((sy1 - sy0) * 0.14))
            d.text(((sx0 + sx1) / 2, sy1 - 16), spec["date_printed"], font=fd, fill=on, anchor="md")
        return img


def _segment(seg, x, y, w, h, t):
    """Hexagonal segment polygon of a seven-segment digit with top-left (x, y), size w x h, thickness t."""
    m = y + h / 2
    e = t / 2

    def hseg(yc):
        return [
            (x + e, yc),
            (x + t, yc - e),
            (x + w - t, yc - e),
            (x + w - e, yc),
            (x + w - t, yc + e),
            (x + t, yc + e),
        ]

    def vseg(xc, ya, yb):
        return [(xc, ya + e), (xc + e, ya + t), (xc + e, yb - t), (xc, yb - e), (xc - e, yb - t), (xc - e, ya + t)]

    return {
        "a": hseg(y + e),
        "g": hseg(m),
        "d": hseg(y + h - e),
        "f": vseg(x + e, y + e, m),
        "b": vseg(x + w - e, y + e, m),
        "e": vseg(x + e, m, y + h - e),
        "c": vseg(x + w - e, m, y + h - e),
    }[seg]


FAMILY = register(Clock())
