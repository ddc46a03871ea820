"""Answer derivations: how a reference answer follows from the evidence images' ground truth.

A question-type module records, for every question, a small JSON program over the ground truth of
its evidence images. The validate stage re-runs it to prove every reference is derivable from the
images (answerability), and a text-only solver shows it is not derivable without them.

Ops (``img`` indexes the question's evidence images in order):
- ``{"op": "get", "img": 0, "path": ["counts", "red mug"]}``: a value from a truth.
- ``{"op": "format", "template": "{color} {kind}", "img": 0, "path": ["objects", 3]}``.
- ``{"op": "sum", "args": [...], "fmt": "money"|"int", "currency": "EUR"}``: a sum of sub-programs.
- ``{"op": "count", "args": [...], "value": "Yes"}``: number of sub-programs that evaluate truthy
  (or, with ``value``, that equal it).
- ``{"op": "const", "value": "..."}``: a value stated in the text (text-sufficient parts).
- ``{"op": "str", "arg": {...}}``: string of a sub-program.
- ``{"op": "eq", "a": {...}, "b": {...}}``: ``Yes`` if equal else ``No``.
- ``{"op": "distinct", "args": [...]}``: number of distinct values.
- ``{"op": "fact_date", "fact": k}``: ``YYYY/MM/DD`` of the k-th evidence session's timestamp
  (session dates are text, but which session is meant is known only through its image).
- ``{"op": "date_add", "date": {...}, "days": n}``: a ``YYYY/MM/DD`` date shifted by n days.
- ``{"op": "days_between", "a": {...}, "b": {...}}``: whole days from date a to date b.
- ``{"op": "minutes_between", "a": {...}, "b": {...}}``: minutes between ``HH:MM`` or dated times.
- ``{"op": "longer", "a": [start, end], "b": [start, end], "unit": "days"|"minutes"}``: ``A`` or
  ``B``, whichever interval is longer (ties are a construction error).
- ``{"op": "order", "args": [...]}``: ``(i)(j)(k)``: 1-based indices of the args sorted ascending.
- ``{"op": "last", "args": [...]}``: the value of the last sub-program (current state of a chain).
- ``{"op": "pick", "match": "Larkspur Books", "cases": [[key, value], ...]}``: the value of the first
  case whose key (usually a name read from an image) equals ``match``: it ties a text-side value such
  as a session date to the image that identifies it.

``context`` carries what is not in the images: ``evidence_dates`` (release-format dates of the
question's evidence sessions, in order).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any


class MissingTruth(Exception):
    """The derivation needs an image's ground truth that is not available."""


def _get(truths, img: int, path: list) -> Any:
    if truths is None or truths[img] is None:
        raise MissingTruth(img)
    v = truths[img]
    for k in path:
        v = v[k]
    return v


def money(value: Any, currency: str | None = None) -> str:
    d = Decimal(str(value)).quantize(Decimal("0.01"))
    sym = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}.get(currency or "USD")
    if sym:
        return f"{sym}{d:,.2f}" if (currency or "USD") != "JPY" else f"¥{int(d):,}"
    return f"{d:,.2f} {currency}"


def _date(v: Any):
    from datetime import datetime

    s = str(v).strip()
    for fmt in ("%Y/%m/%d %H:%M", "%Y/%m/%d", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(s[:16] if " " in fmt else s[:10], fmt)
        except ValueError:
            continue
    m = __import__("re").match(r"(\d{4}/\d{2}/\d{2}) \(\w{3}\) (\d{2}:\d{2})", s)
    if m:
        return datetime.strptime(f"{m.group(1)} {m.group(2)}", "%Y/%m/%d %H:%M")
    raise ValueError(f"not a date: {v!r}")


def _minutes(v: Any) -> int:
    s = str(v).strip()
    if len(s) <= 5 and ":" in s:
        h, m = s.split(":")
        return int(h) * 60 + int(m)
    d = _date(s)
    return int(d.timestamp() // 60)


def evaluate(prog: dict, truths: list[dict | None] | None, context: dict | None = None) -> Any:
    op = prog["op"]
    ev = lambda p: evaluate(p, truths, context)  # noqa: E731
    if op == "get":
        return _get(truths, prog["img"], prog["path"])
    if op == "format":
        obj = _get(truths, prog["img"], prog["path"])
        return prog["template"].format(**obj)
    if op == "const":
        return prog["value"]
    if op == "str":
        return str(ev(prog["arg"]))
    if op == "sum":
        total = sum(Decimal(str(ev(a))) for a in prog["args"])
        if prog.get("fmt") == "money":
            return money(total, prog.get("currency"))
        return str(int(total)) if total == int(total) else str(total)
    if op == "count":  # truthy sub-programs, or those equal to "value" (case-insensitive)
        if "value" in prog:
            want = str(prog["value"]).strip().lower()
            return str(sum(1 for a in prog["args"] if str(ev(a)).strip().lower() == want))
        return str(sum(1 for a in prog["args"] if ev(a)))
    if op == "eq":
        return "Yes" if str(ev(prog["a"])).strip().lower() == str(ev(prog["b"])).strip().lower() else "No"
    if op == "distinct":
        return str(len({str(ev(a)).strip().lower() for a in prog["args"]}))
    if op == "fact_date":
        dates = (context or {}).get("evidence_dates")
        if not dates:
            raise MissingTruth("evidence_dates")
        return _date(dates[prog["fact"]]).strftime("%Y/%m/%d")
    if op == "date_add":
        from datetime import timedelta

        return (_date(ev(prog["date"])) + timedelta(days=int(prog["days"]))).strftime("%Y/%m/%d")
    if op == "days_between":
        return (_date(ev(prog["b"])) - _date(ev(prog["a"]))).days
    if op == "minutes_between":
        return _minutes(ev(prog["b"])) - _minutes(ev(prog["a"]))
    if op == "longer":
        unit = prog.get("unit", "days")
        span = (
            (lambda s, e: (_date(e) - _date(s)).total_seconds())
            if unit == "days"
            else (lambda s, e: _minutes(e) - _minutes(s))
        )
        a = span(ev(prog["a"][0]), ev(prog["a"][1]))
        b = span(ev(prog["b"][0]), ev(prog["b"][1]))
        if a == b:
            raise ValueError("longer: the two intervals are equal")
        return "A" if a > b else "B"
    if op == "order":
        vals = [ev(a) for a in prog["args"]]
        keyf = prog.get("key", "date")
        conv = _date if keyf == "date" else (_minutes if keyf == "time" else float)
        idx = sorted(range(len(vals)), key=lambda i: conv(vals[i]))
        return "".join(f"({i + 1})" for i in idx)
    if op == "last":
        return ev(prog["args"][-1])
    if op == "pick":  # the value of the first case whose key (read from an image) equals `match`
        want = str(prog["match"]).strip().lower()
        for key, val in prog["cases"]:
            if str(ev(key)).strip().lower() == want:
                return ev(val)
        raise ValueError("pick: no case matches")
    raise ValueError(f"unknown derivation op {op!r}")


def derive(prog: dict, truths: list[dict | None] | None, context: dict | None = None) -> str | None:
    try:
        return str(evaluate(prog, truths, context))
    except MissingTruth:
        return None
