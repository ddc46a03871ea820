"""Answer derivations: how a reference answer follows from the evidence images' ground truth.

A question-type module records, for every question, a small JSON program over the ground truth of
its evidence images. The validate stage re-runs it to prove every reference is derivable from the
images (answerability), and a text-only solver shows it is not derivable without them.

Ops (``img`` indexes the question's evidence images in order):
- ``{"op": "get", "img": 0, "path": ["counts", "red mug"]}``: a value from a truth.
- ``{"op": "format", "template": "{color} {kind}", "img": 0, "path": ["objects", 3]}``.
- ``{"op": "sum", "args": [...], "fmt": "money"|"int", "currency": "EUR"}``: a sum of sub-programs.
- ``{"op": "count", "args": [...]}``: number of sub-programs that evaluate truthy.
- ``{"op": "const", "value": "..."}``: a value stated in the text (text-sufficient parts).
- ``{"op": "str", "arg": {...}}``: string of a sub-program.
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


def evaluate(prog: dict, truths: list[dict | None] | None) -> Any:
    op = prog["op"]
    if op == "get":
        return _get(truths, prog["img"], prog["path"])
    if op == "format":
        obj = _get(truths, prog["img"], prog["path"])
        return prog["template"].format(**obj)
    if op == "const":
        return prog["value"]
    if op == "str":
        return str(evaluate(prog["arg"], truths))
    if op == "sum":
        total = sum(Decimal(str(evaluate(a, truths))) for a in prog["args"])
        if prog.get("fmt") == "money":
            return money(total, prog.get("currency"))
        return str(int(total)) if total == int(total) else str(total)
    if op == "count":
        return str(sum(1 for a in prog["args"] if evaluate(a, truths)))
    raise ValueError(f"unknown derivation op {op!r}")


def derive(prog: dict, truths: list[dict | None] | None) -> str | None:
    try:
        return str(evaluate(prog, truths))
    except MissingTruth:
        return None
