"""What a question's derivation says about a wrong answer: its operands, the results of part of
the evidence, of an evidence image swapped for a distractor, and of a slip in the arithmetic.

The derivation (:mod:`memlens.construction.abilities.derive`) is the program that recomputes a
question's answer from its evidence images' ground truth. Re-running it on altered inputs gives the
values a system would have committed to had it

* read every operand right but used only part of them (:func:`subset_results`: a sum, count or
  distinct count over a proper subset of the evidence),
* taken a same-family image of the history for one evidence image (:func:`substituted_results`:
  the same field read off the distractor, or the distractor added to an aggregate),
* made an arithmetic slip with the right operands (:func:`is_slip`: off by one, one digit wrong or
  two adjacent digits swapped in a computed number, a computed date one day off, an order with one
  adjacent pair swapped).

:func:`near_number`, :func:`near_date` and :func:`near_text` say whether a value is a misreading of
another (one digit, one date field, one word, or two characters off).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from itertools import combinations

from memlens.construction.abilities.derive import evaluate
from memlens.eval.report.trace import canon_date, canon_number, canon_order, canon_text, canon_time

__all__ = [
    "Operand",
    "top_op",
    "operands",
    "consts",
    "template_values",
    "needs",
    "ARITHMETIC_OPS",
    "AGGREGATE_OPS",
    "subset_results",
    "substituted_results",
    "is_slip",
    "near_number",
    "near_date",
    "near_time",
    "near_text",
    "result_key",
]

#: derivations whose answer is computed from the operands (an arithmetic slip is possible)
ARITHMETIC_OPS = frozenset({"sum", "count", "distinct", "days_between", "minutes_between", "date_add", "order"})
#: derivations whose answer combines several evidence images
AGGREGATE_OPS = frozenset({"sum", "count", "distinct", "order", "last", "eq", "longer", "pick"})
_SUBSET_OPS = frozenset({"sum", "count", "distinct"})
_MAX_SUBSET_ARGS = 10


@dataclass(frozen=True)
class Operand:
    """One value the derivation reads off an evidence image (a ``get`` or ``format`` leaf)."""

    img: int
    path: tuple
    template: str | None
    value: object


def top_op(prog: dict | None) -> str:
    while isinstance(prog, dict) and prog.get("op") == "str":
        prog = prog.get("arg")
    return prog.get("op", "") if isinstance(prog, dict) else ""


def _unwrap(prog: dict) -> dict:
    while prog.get("op") == "str":
        prog = prog["arg"]
    return prog


def _leaves(prog) -> Iterator[dict]:
    if isinstance(prog, dict):
        if prog.get("op") in ("get", "format"):
            yield prog
            return
        for v in prog.values():
            yield from _leaves(v)
    elif isinstance(prog, list):
        for v in prog:
            yield from _leaves(v)


def _get(truth, path):
    v = truth
    for k in path:
        v = v[k]
    return v


def operands(prog: dict | None, truths: list[dict | None]) -> list[Operand]:
    """Every evidence-image value the derivation reads, in program order (unreadable ones skipped)."""
    out = []
    for leaf in _leaves(prog):
        i, path = leaf.get("img"), tuple(leaf.get("path") or ())
        if not isinstance(i, int) or i >= len(truths) or truths[i] is None:
            continue
        try:
            v = _get(truths[i], path)
            if leaf["op"] == "format":
                v = leaf["template"].format(**v)
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        out.append(Operand(i, path, leaf.get("template") if leaf["op"] == "format" else None, v))
    return out


def needs(prog: dict | None, image_essential: bool = True) -> str:
    """Where the evidence a question needs is: ``images``, ``text`` or ``both``."""
    has_img = has_text = False

    def walk(p) -> None:
        nonlocal has_img, has_text
        if isinstance(p, dict):
            op = p.get("op")
            if op in ("get", "format"):
                has_img = True
            elif op in ("const", "fact_date"):
                has_text = True
            for v in p.values():
                walk(v)
        elif isinstance(p, list):
            for v in p:
                walk(v)

    walk(prog)
    if not (has_img or has_text):
        return "images" if image_essential else "text"
    return "both" if has_img and has_text else ("images" if has_img else "text")


def result_key(v) -> tuple[str, object] | None:
    """A derivation result as a comparable (kind, key)."""
    s = str(v)
    o = canon_order(s)
    if o:
        return ("order", o)
    d = canon_date(s)
    if d:
        return ("date", d)
    t = canon_time(s)
    if t:
        return ("time", t)
    n = canon_number(s)
    if n is not None:
        return ("number", n)
    t = canon_text(s)
    return ("text", t) if t else None


def consts(prog) -> list[object]:
    """The values a derivation takes from the text (``const`` leaves)."""
    out = []
    if isinstance(prog, dict):
        if prog.get("op") == "const":
            return [prog.get("value")]
        for v in prog.values():
            out += consts(v)
    elif isinstance(prog, list):
        for v in prog:
            out += consts(v)
    return out


def template_values(prog, truths) -> list[tuple[int, str]]:
    """``(image index, text)`` of a ``format`` leaf's template applied to every element of the list
    it indexes in that evidence image (every object of a scene: the neighbours of the asked one)."""
    out = []
    for leaf in _leaves(prog):
        i, path = leaf.get("img"), tuple(leaf.get("path") or ())
        if leaf.get("op") != "format" or not path or not isinstance(i, int) or i >= len(truths) or not truths[i]:
            continue
        try:
            seq = _get(truths[i], path[:-1])
        except (KeyError, IndexError, TypeError):
            continue
        for obj in seq if isinstance(seq, list) else []:
            try:
                out.append((i, str(leaf["template"].format(**obj))))
            except (KeyError, IndexError, TypeError, ValueError):
                continue
    return out


def _safe_eval(prog: dict, truths, context) -> tuple[str, object] | None:
    try:
        return result_key(evaluate(prog, truths, context))
    except Exception:  # a changed program may not evaluate (too few operands, a missing key)
        return None


def subset_results(prog: dict | None, truths, context=None) -> set[tuple[str, object]]:
    """Results of a sum / count / distinct over every proper, non-empty subset of its operands."""
    if not isinstance(prog, dict):
        return set()
    p = _unwrap(prog)
    args = p.get("args") or []
    if p.get("op") not in _SUBSET_OPS or not 2 <= len(args) <= _MAX_SUBSET_ARGS:
        return set()
    out = set()
    for k in range(1, len(args)):
        for sub in combinations(args, k):
            got = _safe_eval({**p, "args": list(sub)}, truths, context)
            if got:
                out.add(got)
    return out


def _replace_leaf(prog, target: int, new_img: int, counter: list[int]):
    """``prog`` with its ``target``-th get/format leaf reading image ``new_img`` instead."""
    if isinstance(prog, dict):
        if prog.get("op") in ("get", "format"):
            counter[0] += 1
            return {**prog, "img": new_img} if counter[0] - 1 == target else prog
        return {k: _replace_leaf(v, target, new_img, counter) for k, v in prog.items()}
    if isinstance(prog, list):
        return [_replace_leaf(v, target, new_img, counter) for v in prog]
    return prog


def substituted_results(
    prog: dict | None, truths: list, distractors: dict[str, dict], context=None, *, max_distractors: int = 400
) -> dict[tuple[str, object], str]:
    """``{result: distractor id}``: the answer with one evidence image replaced by a distractor (its
    same field: for a ``format`` leaf, the element at the same place of the same list), and, for a
    sum or count, with the distractor added as one more operand. (Every element of every
    distractor's list would match a random "colour kind" answer in a long history by chance.)"""
    if not isinstance(prog, dict) or not distractors:
        return {}
    p = _unwrap(prog)
    leaves = list(_leaves(p))
    out: dict[tuple[str, object], str] = {}
    ids = sorted(distractors)[:max_distractors]
    base = list(truths)
    for j, leaf in enumerate(leaves):
        path = tuple(leaf.get("path") or ())
        for did in ids:
            dt = distractors[did]
            try:
                _get(dt, path)
            except (KeyError, IndexError, TypeError):
                continue
            ext = [*base, dt]
            new = _replace_leaf(p, j, len(base), [0])
            got = _safe_eval(new, ext, context)
            if got:
                out.setdefault(got, did)
            if p.get("op") in ("sum", "count") and p.get("args"):
                extra = _replace_leaf(p["args"][min(j, len(p["args"]) - 1)], 0, len(base), [0])
                got = _safe_eval({**p, "args": [*p["args"], extra]}, ext, context)
                if got:
                    out.setdefault(got, did)
    return out


# ------------------------------------------------------------------------------------------- slips
def _places(x: Decimal) -> int:
    e = x.as_tuple().exponent
    return max(0, -e) if isinstance(e, int) else 0


def _one_digit_apart(a: Decimal, b: Decimal) -> bool:
    """The two numbers differ in exactly one digit, or by two adjacent digits swapped."""
    places = max(_places(a), _places(b))
    sa, sb = f"{abs(a):.{places}f}", f"{abs(b):.{places}f}"
    if (a < 0) != (b < 0) or len(sa) != len(sb) or sum(c.isdigit() for c in sa) < 2:
        return False  # any two one-digit numbers differ "in one digit"
    diff = [i for i, (x, y) in enumerate(zip(sa, sb)) if x != y]
    if len(diff) == 1:
        return True
    return len(diff) == 2 and diff[1] == diff[0] + 1 and sa[diff[0]] == sb[diff[1]] and sa[diff[1]] == sb[diff[0]]


def near_number(got: Decimal, want: Decimal) -> bool:
    """Off by one, or (numbers of two or more digits) one digit wrong or two adjacent digits swapped."""
    if got == want:
        return False
    return abs(got - want) == 1 or _one_digit_apart(got, want)


def _adjacent_swaps(order: str) -> set[str]:
    idx = order.strip("()").split(")(")
    out = set()
    for i in range(len(idx) - 1):
        s = list(idx)
        s[i], s[i + 1] = s[i + 1], s[i]
        out.add("".join(f"({x})" for x in s))
    return out


def _ymd(d: str) -> _dt.date | None:
    try:
        y, m, dd = (int(x) for x in d.split("/"))
        return _dt.date(y, m, dd)
    except ValueError:
        return None


def is_slip(prog: dict | None, reference: str, got: tuple[str, object]) -> bool:
    """An arithmetic slip with the right operands (see the module docstring)."""
    op = top_op(prog)
    if op not in ARITHMETIC_OPS:
        return False
    want = result_key(reference)
    if want is None or want[0] != got[0]:
        return False
    kind, key = got
    if kind == "number":
        return near_number(key, want[1])
    if kind == "date":
        a, b = _ymd(key), _ymd(want[1])
        return a is not None and b is not None and abs((a - b).days) == 1
    if kind == "order":
        return key in _adjacent_swaps(want[1])
    return False


# ------------------------------------------------------------------------------------------- misreads
def near_date(got: str, want: str) -> bool:
    """One of year, month, day read wrong (the other two right), or day and month swapped."""
    if got == want:
        return False
    g, w = got.split("/"), want.split("/")
    if len(g) != 3 or len(w) != 3:
        return False
    if sum(x != y for x, y in zip(g, w)) == 1:
        return True
    return g[0] == w[0] and g[1] == w[2] and g[2] == w[1]


def near_time(got: str, want: str) -> bool:
    """The hour or the minute read wrong (the other right), or one digit off."""
    if got == want:
        return False
    (gh, gm), (wh, wm) = got.split(":"), want.split(":")
    if gh == wh or gm == wm:
        return True
    return sum(a != b for a, b in zip(got, want)) == 1


def _edit_distance(a: str, b: str, cap: int = 3) -> int:
    if abs(len(a) - len(b)) >= cap:
        return cap
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) >= cap:
            return cap
        prev = cur
    return min(prev[-1], cap)


def _near_word(a: str, b: str) -> bool:
    na, nb = canon_number(a), canon_number(b)
    if na is not None and nb is not None:
        return near_number(na, nb)
    return len(a) >= 3 and _edit_distance(a, b) <= 2


def near_text(want: str, got: str) -> bool:
    """``got`` (normalised text) holds a misreading of ``want``: a window of as many words with
    exactly one word different and that word misread (a near number, or two characters off), or a
    span within two characters of it, spaces ignored (codes, plates, single words of 4+ characters).
    "green bottle" is no misreading of "green ball", "9151 kg" none of "2 kg"."""
    wt, gt = want.split(), got.split()
    if not wt or not gt:
        return False
    n = len(wt)
    if n >= 2:
        for i in range(len(gt) - n + 1):
            diff = [(x, y) for x, y in zip(wt, gt[i : i + n]) if x != y]
            if len(diff) == 1 and _near_word(*diff[0]):
                return True
    w = "".join(wt)
    if len(w) < 4:
        return False
    budget = max(1, min(2, len(w) // 5))  # two characters off only for values of 10+ characters
    for i in range(len(gt)):
        for j in range(i + 1, min(len(gt), i + n + 2) + 1):
            span = "".join(gt[i:j])
            if span != w and abs(len(span) - len(w)) <= 1 and _edit_distance(span, w) <= budget:
                return True
    return False
