"""calendar_page: a wall-calendar month grid with circled days and handwritten-style event labels.

Ground truth (spec keys):
  year, month, month_name, title ("MAY 2024"), week_start "monday" | "sunday", days_in_month,
  first_weekday (of day 1; 0 = Monday), n_weeks,
  marked [{date "YYYY/MM/DD", day, label | null, color}] sorted by day, cells {day: [col, row]} (as strings),
  texts (title, weekday headers, every day number, every label)
Constraints: year, month, marked ([day | "YYYY/MM/DD" | {"date"|"day", "label"}]), labels (list aligned with
marked), n_marked, week_start.
"""

from __future__ import annotations

import calendar
import datetime as dt
import random

from PIL import Image, ImageDraw

from .base import FamilyBase, register
from .fonts import fit_font, fit_wrapped, font
from .formats import MONTHS, WD, canon_date, parse_date

EVENTS = [
    "Dentist 10:30",
    "Mom's birthday",
    "Flight to Oslo",
    "Rent due",
    "Yoga 18:00",
    "Team dinner",
    "Book club",
    "Vet appt 9:15",
    "Concert!",
    "Haircut 14:00",
    "Parents visit",
    "Pay day",
    "Dad's bday",
    "Move out",
    "Job interview",
    "Wedding",
    "Car service",
    "Piano recital",
    "Hike w/ Sam",
    "Exam",
    "Trip to Rome",
    "Doctor 11:45",
    "BBQ at Leo's",
    "Gym trial",
    "Passport renewal",
    "Anniversary",
]
INKS = [(200, 30, 40), (30, 70, 170), (20, 120, 60)]


class CalendarPage(FamilyBase):
    name = "calendar_page"
    track = "document"
    photo_prob = 0.35
    photo_mode = "document"

    def _sample(self, rng: random.Random, **c) -> dict:
        allowed = {"year", "month", "marked", "labels", "n_marked", "week_start"}
        if set(c) - allowed:
            raise TypeError(f"calendar_page: unknown constraints {sorted(set(c) - allowed)}")
        year = int(c.get("year") or rng.randint(2019, 2026))
        month = int(c.get("month") or rng.randint(1, 12))
        ndays = calendar.monthrange(year, month)[1]
        week_start = c.get("week_start") or rng.choice(["monday", "sunday"])
        if week_start not in ("monday", "sunday"):
            raise ValueError("week_start must be 'monday' or 'sunday'")
        marks: list[tuple[int, str | None]] = []
        if c.get("marked"):
            labels = list(c.get("labels") or [])
            for i, mk in enumerate(c["marked"]):
                label = labels[i] if i < len(labels) else None
                if isinstance(mk, dict):
                    label = mk.get("label", label)
                    mk = mk.get("date", mk.get("day"))
                if isinstance(mk, int):
                    day = mk
                else:
                    dd = parse_date(mk)
                    if (dd.year, dd.month) != (year, month):
                        if c.get("year") or c.get("month"):
                            raise ValueError(f"marked date {mk} is not in {year}/{month:02d}")
                        year, month = dd.year, dd.month
                        ndays = calendar.monthrange(year, month)[1]
                    day = dd.day
                if not 1 <= day <= ndays:
                    raise ValueError(f"day {day} is not in {year}/{month:02d}")
                marks.append((day, label))
            if len({d for d, _ in marks}) != len(marks):
                raise ValueError("marked days must be distinct")
        else:
            n = int(c.get("n_marked") or rng.choice([1, 1, 2, 3]))
            days = sorted(rng.sample(range(1, ndays + 1), n))
            labels = rng.sample(EVENTS, n)
            marks = [(d, lab if rng.random() < 0.9 else None) for d, lab in zip(days, labels)]
        marks.sort()
        first_wd = dt.date(year, month, 1).weekday()
        offset = first_wd if week_start == "monday" else (first_wd + 1) % 7
        n_weeks = (offset + ndays + 6) // 7
        cells = {str(day): [(offset + day - 1) % 7, (offset + day - 1) // 7] for day in range(1, ndays + 1)}
        heads = WD if week_start == "monday" else WD[6:] + WD[:6]
        title = f"{MONTHS[month - 1].upper()} {year}"
        marked = [
            {"date": canon_date(dt.date(year, month, d)), "day": d, "label": lab, "color": list(rng.choice(INKS))}
            for d, lab in marks
        ]
        cell_h = 120
        H = 150 + 44 + n_weeks * cell_h + 36
        texts = (
            [title]
            + [h.upper() for h in heads]
            + [str(d) for d in range(1, ndays + 1)]
            + [m["label"] for m in marked if m["label"]]
        )
        return {
            "size": [980, H],
            "seed": rng.getrandbits(32),
            "kind": "month_grid",
            "year": year,
            "month": month,
            "month_name": MONTHS[month - 1],
            "title": title,
            "week_start": week_start,
            "days_in_month": ndays,
            "first_weekday": first_wd,
            "n_weeks": n_weeks,
            "marked": marked,
            "cells": cells,
            "accent": list(rng.choice([(40, 90, 150), (150, 50, 50), (40, 120, 90), (90, 60, 140), (60, 60, 66)])),
            "texts": texts,
        }

    def _draw(self, spec: dict) -> Image.Image:
        W, H = spec["size"]
        img = Image.new("RGB", (W, H), (252, 251, 248))
        d = ImageDraw.Draw(img)
        acc = tuple(spec["accent"])
        m = 30
        d.rectangle([0, 0, W, 130], fill=acc)
        for x in range(60, W - 40, 70):  # spiral binding holes
            d.ellipse([x, 10, x + 14, 24], fill=(236, 236, 236))
        ft = fit_font("sans-bold", spec["title"], W - 2 * m, 64)
        d.text((W / 2, 82), spec["title"], font=ft, fill=(255, 255, 255), anchor="mm")
        heads = WD if spec["week_start"] == "monday" else WD[6:] + WD[:6]
        cw = (W - 2 * m) / 7
        y0 = 150
        fh = font("sans-bold", 20)
        for i, h in enumerate(heads):
            weekend = h in ("Sat", "Sun")
            d.text(
                (m + cw * i + cw / 2, y0 + 20),
                h.upper(),
                font=fh,
                fill=(190, 40, 40) if weekend else (60, 60, 66),
                anchor="mm",
            )
        gy = y0 + 44
        ch = 120
        n_weeks = spec["n_weeks"]
        grid = (200, 200, 206)
        for r in range(n_weeks + 1):
            d.line([m, gy + r * ch, W - m, gy + r * ch], fill=grid, width=2)
        for k in range(8):
            d.line([m + k * cw, gy, m + k * cw, gy + n_weeks * ch], fill=grid, width=2)
        fd = font("sans-bold", 26)
        marked = {mk["day"]: mk for mk in spec["marked"]}
        for day_s, (col, row) in spec["cells"].items():
            day = int(day_s)
            x, y = m + col * cw, gy + row * ch
            weekend = heads[col] in ("Sat", "Sun")
            d.text((x + 12, y + 8), day_s, font=fd, fill=(190, 40, 40) if weekend else (40, 40, 46))
            if day in marked:
                mk = marked[day]
                ink = tuple(mk["color"])
                jr = random.Random(f"{spec['seed']}:{day}")
                tw = fd.getlength(day_s)
                ex0, ey0 = x + 12 + tw / 2, y + 8 + 15
                rx, ry = max(28, tw / 2 + 16), 25
                # hand-drawn circle: two slightly offset ellipse strokes
                for _ in range(2):
                    dx, dy = jr.uniform(-3, 3), jr.uniform(-3, 3)
                    d.ellipse([ex0 - rx + dx, ey0 - ry + dy, ex0 + rx + dx, ey0 + ry + dy], outline=ink, width=3)
                if mk["label"]:
                    fl, lines, lh = fit_wrapped(
                        "sans-oblique", mk["label"], cw - 12, ch - 58, 20, min_size=12, max_lines=2
                    )
                    yy = y + 56
                    for ln in lines:
                        d.text((x + 7, yy), ln, font=fl, fill=ink)
                        yy += lh
        return img


FAMILY = register(CalendarPage())
