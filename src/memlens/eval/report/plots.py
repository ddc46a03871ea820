"""Figures. Matplotlib with the Agg backend; fixed metadata so PNG bytes are reproducible."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from memlens.core.config import length_tokens

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
    many = len(systems) > 6
    for ax, t in zip(axes.flat, panels):
        key = "acc" if t == "overall" else f"acc__{t}"
        for i, s in enumerate(systems):
            pts = {r["length"]: r["metrics"] for r in rows if r["system"] == s}
            ys = [100 * pts[ln][key] if ln in pts and key in pts[ln] else float("nan") for ln in lengths]
            lo = [_pct(pts[ln].get(f"{key}_ci_low")) if ln in pts else float("nan") for ln in lengths]
            hi = [_pct(pts[ln].get(f"{key}_ci_high")) if ln in pts else float("nan") for ln in lengths]
            if many:  # 10 colours x 4 marker/line styles keep up to 40 systems apart
                k = (i // 10) % 4
                (line,) = ax.plot(
                    x,
                    ys,
                    color=plt.cm.tab10(i % 10),
                    marker="os^D"[k],
                    ls=("-", "--", ":", "-.")[k],
                    lw=1.1,
                    ms=4,
                    label=s,
                )
            else:
                (line,) = ax.plot(x, ys, marker="o", label=s)
            ax.fill_between(x, lo, hi, alpha=0.05 if many else 0.15, color=line.get_color(), lw=0)
        ax.set_title(t)
        ax.set_xticks(x, [ln.upper() for ln in lengths])
        ax.set_ylim(-2, 102)
        ax.set_ylabel("accuracy (%)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    title = "Accuracy vs context length (95% bootstrap intervals)"
    if len(systems) <= 6:
        if systems:
            axes.flat[0].legend(fontsize=8, loc="best")
        fig.suptitle(title)
        fig.tight_layout()
    else:  # many systems: one legend block to the right of the panels
        handles, labels = axes.flat[0].get_legend_handles_labels()
        ncol = 1 if len(systems) <= 20 else 2
        longest = max(len(lb) for lb in labels)
        fig.suptitle(title)
        fig.tight_layout()
        width = fig.get_figwidth()
        extra = ncol * (0.55 + 0.065 * longest)
        left, right = fig.subplotpars.left, fig.subplotpars.right
        fig.set_figwidth(width + extra)
        scale = width / (width + extra)
        fig.subplots_adjust(left=left * scale, right=right * scale)
        fig.legend(
            handles,
            labels,
            loc="center left",
            bbox_to_anchor=(right * scale + 0.005, 0.5),
            fontsize=7,
            ncol=ncol,
            frameon=False,
            handlelength=2.6,
        )
    return _save(fig, out)


def _pct(v) -> float:
    return float("nan") if v is None else 100 * float(v)


def _save(fig, out: Path, dpi: int = 110) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, metadata=PNG_META)
    plt.close(fig)
    return out


def _grid(n: int) -> tuple[int, int]:
    """(rows, cols) for n panels: one row up to 3, then two columns."""
    if n <= 3:
        return 1, max(1, n)
    return (n + 1) // 2, 2


def system_styles(systems: list[str]) -> dict[str, dict]:
    """A distinct (colour, marker) per system: 10 colours x 4 markers."""
    return {s: {"color": plt.cm.tab10(i % 10), "marker": "os^D"[(i // 10) % 4]} for i, s in enumerate(systems)}


def plot_correlation_heatmap(spearman: dict[str, dict], out: Path) -> Path:
    """Cross-type Spearman correlation across systems: one annotated heatmap per context length.

    ``spearman`` is :func:`memlens.eval.report.analyses.spearman_by_length` output.
    """
    import numpy as np

    lengths = sorted(spearman, key=length_tokens)
    nr, nc = _grid(len(lengths))
    fig, axes = plt.subplots(nr, nc, figsize=(3.7 * nc + 1.0, 3.5 * nr + 0.5), squeeze=False)
    im = None
    for ax, ln in zip(axes.flat, lengths):
        d = spearman[ln]
        rho = np.array(d["rho"], dtype=float)
        types = d["types"]
        im = ax.imshow(np.ma.masked_invalid(rho), cmap="RdBu_r", vmin=-1, vmax=1)
        ax.set_xticks(range(len(types)), types)
        ax.set_yticks(range(len(types)), types)
        for i in range(len(types)):
            for j in range(len(types)):
                v = rho[i, j]
                txt = "n/a" if np.isnan(v) else f"{v:.2f}"
                color = "white" if (not np.isnan(v) and abs(v) > 0.6) else "black"
                ax.text(j, i, txt, ha="center", va="center", fontsize=9, color=color)
        ax.set_title(f"{ln.upper()} ({d['n_systems']} systems)", fontsize=10)
    for ax in list(axes.flat)[len(lengths) :]:
        ax.axis("off")
    fig.suptitle("Cross-type Spearman correlation of per-type accuracy across systems", fontsize=11)
    fig.tight_layout(rect=(0, 0, 0.84, 1))
    if im is not None:
        cax = fig.add_axes((0.865, 0.2, 0.022, 0.6))
        fig.colorbar(im, cax=cax, label="Spearman rho")
    return _save(fig, out)


def plot_coverage_pa(records: list[dict], out: Path) -> Path:
    """Coverage (answerable questions not refused) vs per-answer accuracy: one panel per length,
    one point per system (same colour and marker in every panel; names next to the points when
    there are few systems, else in a legend); dotted curves are constant accuracy on answerable
    questions (coverage x per-answer accuracy)."""
    import numpy as np

    recs = [r for r in records if r.get("coverage") is not None]
    lengths = sorted({r["length"] for r in recs}, key=length_tokens)
    systems = sorted({r["system"] for r in recs})
    styles = system_styles(systems)
    label_points = len(systems) <= 12
    nr, nc = _grid(len(lengths))
    fig, axes = plt.subplots(nr, nc, figsize=(4.6 * nc, 4.2 * nr), squeeze=False)
    xs_all = [100 * r["coverage"] for r in recs] or [0.0]
    ys_all = [100 * r["per_answer_accuracy"] for r in recs if r.get("per_answer_accuracy") is not None] or [0.0]
    # zoom on the data, but always show at least the top 30 points of each axis
    x0 = min(70.0, max(0.0, 10 * np.floor((min(xs_all) - 3) / 10)))
    y0 = min(70.0, max(0.0, 10 * np.floor((min(ys_all) - 3) / 10)))
    xs = np.linspace(max(x0, 1.0), 100, 300)
    for ax, ln in zip(axes.flat, lengths):
        for acc in (10, 20, 30, 40, 50, 60, 70, 80, 90):
            ys = 100 * acc / xs
            ok = (ys <= 100) & (ys >= y0)
            if not ok.any():
                continue
            ax.plot(xs[ok], ys[ok], ls=":", lw=0.8, color="0.65", zorder=1)
            i = int(np.flatnonzero(ok)[-1])
            ax.text(xs[i] - 0.5, ys[i] + 0.6, f"{acc}%", fontsize=7, color="0.45", ha="right", va="bottom")
        for r in sorted((r for r in recs if r["length"] == ln), key=lambda r: r["system"]):
            x = 100 * r["coverage"]
            st = styles[r["system"]]
            if r.get("per_answer_accuracy") is None:  # refused every answerable question: no PA
                ax.scatter([x], [y0], s=40, zorder=3, marker="x", color=st["color"], clip_on=False)
                if label_points:
                    ax.annotate(
                        f"{r['system']} (no answers)", (x, y0), xytext=(4, 4), textcoords="offset points", fontsize=7
                    )
                continue
            y = 100 * r["per_answer_accuracy"]
            ax.scatter([x], [y], s=30, zorder=3, edgecolors="white", linewidths=0.5, **st)
            if label_points:
                ax.annotate(r["system"], (x, y), xytext=(4, 3), textcoords="offset points", fontsize=7)
        ax.set_xlim(x0 - 1, 101)
        ax.set_ylim(y0 - 1, 101)
        ax.set_xlabel("coverage: answerable questions attempted (%)", fontsize=9)
        ax.set_ylabel("per-answer accuracy (%)", fontsize=9)
        ax.set_title(ln.upper())
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(lengths) :]:
        ax.axis("off")
    fig.suptitle(
        "Coverage vs per-answer accuracy (dotted: equal accuracy on answerable questions; x: no answer attempted)",
        fontsize=10,
    )
    fig.tight_layout()
    if not label_points:
        handles = [plt.Line2D([], [], ls="", ms=6, label=s, **styles[s]) for s in systems]
        ncol = 1 if len(systems) <= 20 else 2
        width = fig.get_figwidth()
        extra = ncol * (0.55 + 0.065 * max(len(s) for s in systems))
        left, right = fig.subplotpars.left, fig.subplotpars.right
        fig.set_figwidth(width + extra)
        scale = width / (width + extra)
        fig.subplots_adjust(left=left * scale, right=right * scale)
        fig.legend(
            handles=handles,
            loc="center left",
            bbox_to_anchor=(right * scale + 0.005, 0.5),
            fontsize=7,
            ncol=ncol,
            frameon=False,
        )
    return _save(fig, out)
