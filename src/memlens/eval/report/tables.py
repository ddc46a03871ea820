"""Records (lists of dicts) -> CSV, Markdown and HTML tables with one shared column spec.

A column spec is ``(key, header, fmt)``; ``fmt`` is one of ``str``, ``int``, ``pct`` (0-1 -> "12.3"),
``pct_ci`` (key ``k`` with ``k_low``/``k_high`` or ``ci_low``/``ci_high`` bounds -> "12.3 [10.1, 14.5]"),
``f2``/``f3`` (fixed decimals), ``p`` (p-value, 3 significant digits), ``bool`` (yes/no/-).
CSV files hold raw values (floats rounded to 6 decimals), so they are deterministic and easy to load.
"""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memlens.core.io import atomic_write_bytes

Spec = Sequence[tuple[str, str, str]]


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def fmt_value(rec: dict, key: str, fmt: str) -> str:
    v = rec.get(key)
    if fmt == "pct_ci":
        x = _num(v)
        if x is None:
            return "-"
        lo = rec.get(f"{key}_low", rec.get("ci_low"))
        hi = rec.get(f"{key}_high", rec.get("ci_high"))
        lo, hi = _num(lo), _num(hi)
        s = f"{100 * x:.1f}"
        return s + (f" [{100 * lo:.1f}, {100 * hi:.1f}]" if lo is not None and hi is not None else "")
    if fmt == "bool":
        return "-" if v is None else ("yes" if v else "no")
    if fmt == "str":
        return "-" if v is None else str(v)
    x = _num(v)
    if x is None:
        return "-"
    if fmt == "int":
        return str(int(round(x)))
    if fmt == "pct":
        return f"{100 * x:.1f}"
    if fmt == "f2":
        return f"{x:.2f}"
    if fmt == "f3":
        return f"{x:.3f}"
    if fmt == "p":
        return f"{x:.3g}" if x >= 1e-4 else f"{x:.1e}"
    raise ValueError(f"unknown column format {fmt!r}")


def _raw(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return "" if math.isnan(v) else round(v, 6)
    if isinstance(v, (list, tuple)):
        return ";".join(str(x) for x in v)
    return v


def render_csv(records: list[dict], columns: Sequence[str] | None = None) -> str:
    cols = list(columns) if columns is not None else list(dict.fromkeys(k for r in records for k in r))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in records:
        w.writerow([_raw(r.get(c)) for c in cols])
    return buf.getvalue()


def render_markdown(records: list[dict], spec: Spec) -> str:
    head = [h for _, h, _ in spec]
    align = ["---" if f == "str" else "---:" for _, _, f in spec]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for r in records:
        lines.append("| " + " | ".join(fmt_value(r, k, f).replace("|", "\\|") for k, _, f in spec) + " |")
    return "\n".join(lines) + "\n"


def render_html(records: list[dict], spec: Spec, *, highlight: str | None = None) -> str:
    """A ``<table>``; rows whose ``highlight`` key is truthy get ``class="hl"``."""
    out = [
        "<table>",
        "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in spec) + "</tr></thead>",
        "<tbody>",
    ]
    for r in records:
        cls = ' class="hl"' if highlight and r.get(highlight) else ""
        cells = "".join(
            f'<td class="{"txt" if f == "str" else "num"}">{html.escape(fmt_value(r, k, f))}</td>' for k, _, f in spec
        )
        out.append(f"<tr{cls}>{cells}</tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


def write_table(
    base: Path,
    records: list[dict],
    spec: Spec,
    *,
    title: str = "",
    note: str = "",
    csv_columns: Sequence[str] | None = None,
) -> tuple[Path, Path]:
    """Write ``base.csv`` (raw values, all keys) and ``base.md`` (formatted ``spec`` columns)."""
    csv_path, md_path = base.with_suffix(".csv"), base.with_suffix(".md")
    atomic_write_bytes(csv_path, render_csv(records, csv_columns).encode("utf-8"))
    md = []
    if title:
        md += [f"# {title}", ""]
    if note:
        md += [note, ""]
    md.append(render_markdown(records, spec) if records else "(no rows)\n")
    atomic_write_bytes(md_path, "\n".join(md).encode("utf-8"))
    return csv_path, md_path
