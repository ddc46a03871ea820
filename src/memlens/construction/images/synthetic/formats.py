"""Dates, times and money: canonical ground-truth forms and the printed (local) forms.

Canonical forms stored in specs: dates "YYYY/MM/DD" (the benchmark's answer format), times "HH:MM"
(24 h), amounts as Decimal strings with '.' and the currency's number of decimals ("6.50", "1280").
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import ROUND_HALF_UP, Decimal

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
MON = [m[:3] for m in MONTHS]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WD = [w[:3] for w in WEEKDAYS]

DATE_FORMATS = (
    "YYYY/MM/DD",
    "YYYY-MM-DD",
    "MM/DD/YYYY",
    "DD/MM/YYYY",
    "DD.MM.YYYY",
    "DD-MM-YYYY",
    "D Mon YYYY",
    "Mon D, YYYY",
    "Month D, YYYY",
    "D Month YYYY",
    "DDMONYY",
    "Wkd, D Mon YYYY",
    "Wkd, Mon D",
    "Weekday, Month D",
)
# numeric day/month orders a reader cannot tell apart when day <= 12
_AMBIGUOUS = {"MM/DD/YYYY", "DD/MM/YYYY", "DD-MM-YYYY"}


def parse_date(s) -> dt.date:
    if isinstance(s, dt.date):
        return s
    s = str(s).strip().replace("-", "/").replace(".", "/")
    y, m, d = (int(p) for p in s.split("/"))
    return dt.date(y, m, d)


def canon_date(d: dt.date) -> str:
    return f"{d.year:04d}/{d.month:02d}/{d.day:02d}"


def format_date(d: dt.date, fmt: str) -> str:
    y, m, day = d.year, d.month, d.day
    table = {
        "YYYY/MM/DD": f"{y:04d}/{m:02d}/{day:02d}",
        "YYYY-MM-DD": f"{y:04d}-{m:02d}-{day:02d}",
        "MM/DD/YYYY": f"{m:02d}/{day:02d}/{y:04d}",
        "DD/MM/YYYY": f"{day:02d}/{m:02d}/{y:04d}",
        "DD.MM.YYYY": f"{day:02d}.{m:02d}.{y:04d}",
        "DD-MM-YYYY": f"{day:02d}-{m:02d}-{y:04d}",
        "D Mon YYYY": f"{day} {MON[m - 1]} {y}",
        "Mon D, YYYY": f"{MON[m - 1]} {day}, {y}",
        "Month D, YYYY": f"{MONTHS[m - 1]} {day}, {y}",
        "D Month YYYY": f"{day} {MONTHS[m - 1]} {y}",
        "DDMONYY": f"{day:02d}{MON[m - 1].upper()}{y % 100:02d}",
        "Wkd, D Mon YYYY": f"{WD[d.weekday()]}, {day} {MON[m - 1]} {y}",
        "Wkd, Mon D": f"{WD[d.weekday()]}, {MON[m - 1]} {day}",
        "Weekday, Month D": f"{WEEKDAYS[d.weekday()]}, {MONTHS[m - 1]} {day}",
    }
    return table[fmt]


def is_ambiguous(d: dt.date, fmt: str) -> bool:
    return fmt in _AMBIGUOUS and d.day <= 12 and d.day != d.month


def pick_date_format(rng: random.Random, d: dt.date, choices, fallback="YYYY/MM/DD") -> str:
    fmt = rng.choice(list(choices))
    return fallback if is_ambiguous(d, fmt) else fmt


#: the default span of printed dates: before any history starts (histories begin 2024/01/01), so an
#: image no plan dated is never dated after the session that shares it; plans that fix a time line
#: (temporal reasoning, multi-session outings) constrain their dates explicitly
DEFAULT_DATES = (dt.date(2021, 6, 1), dt.date(2023, 11, 30))


def random_date(rng: random.Random, start=DEFAULT_DATES[0], end=DEFAULT_DATES[1]) -> dt.date:
    return start + dt.timedelta(days=rng.randrange((end - start).days + 1))


def parse_time(s) -> tuple[int, int]:
    h, m = str(s).strip().split(":")[:2]
    h, m = int(h), int(m)
    if not (0 <= h < 24 and 0 <= m < 60):
        raise ValueError(f"bad time {s!r}")
    return h, m


def parse_time_any(s) -> tuple[int, int]:
    """'19:30', '7:30 PM', '12:05 am' -> (h, m) in 24 h."""
    t = str(s).strip().upper()
    ampm = None
    for suf in ("AM", "PM"):
        if t.endswith(suf):
            ampm, t = suf, t[:-2].strip()
    h, m = parse_time(t)
    if ampm:
        if not 1 <= h <= 12:
            raise ValueError(f"bad 12-hour time {s!r}")
        h = h % 12 + (12 if ampm == "PM" else 0)
    return h, m


def canon_time(h: int, m: int) -> str:
    return f"{h:02d}:{m:02d}"


def format_time(h: int, m: int, twelve: bool = False, pad: bool = True) -> str:
    if not twelve:
        return f"{h:02d}:{m:02d}" if pad else f"{h}:{m:02d}"
    hh = h % 12 or 12
    return f"{hh}:{m:02d} {'AM' if h < 12 else 'PM'}"


def random_time(rng: random.Random, lo: int = 7, hi: int = 22, step: int = 1) -> tuple[int, int]:
    return rng.randrange(lo, hi), rng.randrange(0, 60, step)


def add_minutes(h: int, m: int, delta: int) -> tuple[int, int]:
    t = (h * 60 + m + delta) % (24 * 60)
    return t // 60, t % 60


# ---------------------------------------------------------------------------------------- money
CURRENCIES: dict[str, dict] = {
    "USD": {
        "symbol": "$",
        "prefix": True,
        "decimals": 2,
        "dec": ".",
        "thou": ",",
        "tax": [("Sales Tax", "0.0725"), ("Tax", "0.08875"), ("Tax", "0.06"), ("Sales Tax", "0.0825")],
        "dates": ["MM/DD/YYYY", "YYYY-MM-DD", "Mon D, YYYY"],
        "twelve": True,
    },
    "EUR": {
        "symbol": "€",
        "prefix": False,
        "decimals": 2,
        "dec": ",",
        "thou": ".",
        "tax": [("MwSt", "0.19"), ("MwSt", "0.07"), ("TVA", "0.20"), ("IVA", "0.10"), ("BTW", "0.09")],
        "dates": ["DD.MM.YYYY", "DD/MM/YYYY", "YYYY-MM-DD"],
        "twelve": False,
    },
    "GBP": {
        "symbol": "£",
        "prefix": True,
        "decimals": 2,
        "dec": ".",
        "thou": ",",
        "tax": [("VAT", "0.20"), ("VAT", "0.05")],
        "dates": ["DD/MM/YYYY", "D Mon YYYY"],
        "twelve": False,
    },
    "DKK": {
        "symbol": "kr.",
        "prefix": False,
        "decimals": 2,
        "dec": ",",
        "thou": ".",
        "tax": [("Moms", "0.25")],
        "dates": ["DD-MM-YYYY", "DD.MM.YYYY"],
        "twelve": False,
    },
    "JPY": {
        "symbol": "¥",
        "prefix": True,
        "decimals": 0,
        "dec": ".",
        "thou": ",",
        "tax": [("Tax", "0.10"), ("Tax", "0.08")],
        "dates": ["YYYY/MM/DD"],
        "twelve": False,
    },
    "CHF": {
        "symbol": "CHF",
        "prefix": True,
        "decimals": 2,
        "dec": ".",
        "thou": "'",
        "tax": [("MWST", "0.081"), ("MWST", "0.026")],
        "dates": ["DD.MM.YYYY"],
        "twelve": False,
    },
}
# price scale relative to USD for random catalogue prices
PRICE_SCALE = {"USD": 1, "EUR": 1, "GBP": 1, "DKK": 7, "JPY": 150, "CHF": 1}


def quantum(cur: str) -> Decimal:
    return Decimal(1).scaleb(-CURRENCIES[cur]["decimals"])


def money(value, cur: str) -> Decimal:
    """Exact Decimal amount in the currency's unit (floats are read through str(), so 6.5 -> 6.50)."""
    if isinstance(value, float):
        value = repr(value)
    return Decimal(value).quantize(quantum(cur), rounding=ROUND_HALF_UP)


def money_str(value: Decimal) -> str:
    """Canonical string of an amount: '6.50', '1280'."""
    return format(value, "f")


def fmt_number(value: Decimal, cur: str) -> str:
    c = CURRENCIES[cur]
    s = format(abs(value), f",.{c['decimals']}f")
    s = s.replace(",", "\0").replace(".", c["dec"]).replace("\0", c["thou"])
    return ("-" if value < 0 else "") + s


def fmt_money(value: Decimal, cur: str, symbol: bool = True, code: bool = False) -> str:
    """Printed amount: '$6.50', '6,50 €', '¥1,280', '45,00 kr.', 'CHF 12.00' ('6.50 USD' with code=True)."""
    c = CURRENCIES[cur]
    num = fmt_number(value, cur)
    if code:
        return f"{num} {cur}"
    if not symbol:
        return num
    if c["prefix"]:
        sep = " " if c["symbol"].isalpha() else ""
        return f"{c['symbol']}{sep}{num}"
    return f"{num} {c['symbol']}"


def random_price(rng: random.Random, lo: float, hi: float, cur: str) -> Decimal:
    scale = PRICE_SCALE[cur]
    v = rng.uniform(lo * scale, hi * scale)
    if CURRENCIES[cur]["decimals"] == 0:
        step = 10 if v < 2000 else 50
        return Decimal(max(step, int(round(v / step)) * step))
    if scale > 1:  # DKK: whole or half krone prices
        return money(round(v * 2) / 2, cur)
    cents = rng.choice([0, 25, 49, 50, 75, 95, 99, 29, 89, 45])
    return money(f"{int(v)}.{cents:02d}", cur)
