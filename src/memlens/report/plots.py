"""Figures. Matplotlib with the Agg backend; fixed metadata so PNG bytes are reproducible."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from memlens.config import length_tokens  # noqa: E402

TYPES = ["overall", "IE", "MSR", "TR", "KU", "AR"]
PNG_META = {"Software": None}


def _length_order(rows: list[dict]) -> list[str]:
    return sorted({r["length"] for r in rows}, key=length_tokens)


def plot_length_curves(rows: list[dict], out: Path, mode: str = "standard") -> Path:
    """Accuracy vs context length: one panel per type, one line per system, 95% intervals as bands."""
    rows = [r for r in rows if r["mode"] == mode]
    lengths = _length_order(rows)
    systems = sorted({r["system"] for r in rows})
    panels = [t for t in TYPES if any(("acc" if t == "overall" else f"acc__{t}") in r["metrics"] for r in rows)]
    n = max(1, len(panels))
    cols = min(3, n)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.3 * nrows), squeeze=False)
    x = list(range(len(lengths)))
    for ax, t in zip(axes.flat, panels):
        key = "acc" if t == "overall" else f"acc__{t}"
        for s in systems:
            pts = {r["length"]: r["metrics"] for r in rows if r["system"] == s}
            ys = [100 * pts[ln][key] if ln in pts and key in pts[ln] else float("nan") for ln in lengths]
            lo = [100 * pts[ln].get(f"{key}_ci_low", float("nan")) if ln in pts else float("nan") for ln in lengths]
            hi = [100 * pts[ln].get(f"{key}_ci_high", float("nan")) if ln in pts else float("nan") for ln in lengths]
            line, = ax.plot(x, ys, marker="o", label=s)
            ax.fill_between(x, lo, hi, alpha=0.15, color=line.get_color())
        ax.set_title(t)
        ax.set_xticks(x, [ln.upper() for ln in lengths])
        ax.set_ylim(-2, 102)
        ax.set_ylabel("accuracy (%)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    if systems:
        axes.flat[0].legend(fontsize=8, loc="best")
    fig.suptitle("Accuracy vs context length (95% bootstrap intervals)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, metadata=PNG_META)
    plt.close(fig)
    return out
