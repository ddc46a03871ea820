"""Figures of the error taxonomy, the modality breakdown and retention vs model size (Agg backend,
fixed PNG metadata: the same records give the same bytes)."""

from __future__ import annotations

import math
from pathlib import Path

from memlens.core.config import length_tokens
from memlens.eval.report.plots import PNG_META, plt
from memlens.eval.report.taxonomy import LABELS, MODALITIES, UNTRACEABLE

__all__ = ["plot_taxonomy", "plot_modality", "plot_retention"]

_GROUPS = ["overall", "IE", "MSR", "TR", "KU", "AR"]


def save(fig, out: Path, dpi: int = 110) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, metadata=PNG_META)
    plt.close(fig)
    return out


def grid(n: int) -> tuple[int, int]:
    """(rows, cols) for n panels: one row up to 3, then two columns."""
    return (1, max(1, n)) if n <= 3 else ((n + 1) // 2, 2)


def _stacked(ax, rows: list[dict], keys: list[str], colors) -> None:
    groups = [g for g in _GROUPS if any(r["group"] == g for r in rows)]
    bottom = [0.0] * len(groups)
    for k, key in enumerate(keys):
        vals = []
        for g in groups:
            r = next((r for r in rows if r["group"] == g), None)
            vals.append(100 * (r.get(key) or 0.0) if r else 0.0)
        ax.bar(range(len(groups)), vals, bottom=bottom, color=colors[k], label=key.replace("_", " "), width=0.7)
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, g in enumerate(groups):
        r = next((r for r in rows if r["group"] == g), None)
        ax.text(i, 101, f"n={r['n_errors'] if r else 0}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, 110)
    ax.set_ylabel("share of wrong answers (%)")


def _panels(records: list[dict], system: str, level: str | None):
    rows = [r for r in records if r["system"] == system and (level is None or r["level"] in ("overall", level))]
    lengths = sorted({r["length"] for r in rows}, key=length_tokens)
    return rows, lengths


def plot_taxonomy(records: list[dict], out: Path, system: str) -> Path:
    """Label shares of the wrong answers per type, one panel per length (``system``: one system or
    :data:`memlens.eval.report.errors.ALL_SYSTEMS`)."""
    rows, lengths = _panels(records, system, "type")
    nr, nc = grid(max(1, len(lengths)))
    fig, axes = plt.subplots(nr, nc, figsize=(4.4 * nc + 1.8, 3.6 * nr), squeeze=False)
    keys = [*LABELS, UNTRACEABLE]
    colors = [plt.cm.tab10(i) for i in range(len(keys))]
    for ax, ln in zip(axes.flat, lengths):
        _stacked(ax, [r for r in rows if r["length"] == ln], keys, colors)
        ax.set_title(ln.upper())
    for ax in list(axes.flat)[len(lengths) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=7, frameon=False)
    fig.suptitle(f"Exact error taxonomy: {system} (near-miss: first four labels)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.8, 1))
    return save(fig, out)


def plot_modality(records: list[dict], out: Path, system: str) -> Path:
    """Visual / Reasoning / Mixed shares of the errors per type, one panel per length."""
    rows, lengths = _panels(records, system, None)
    nr, nc = grid(max(1, len(lengths)))
    fig, axes = plt.subplots(nr, nc, figsize=(4.2 * nc + 1.2, 3.4 * nr), squeeze=False)
    colors = ["#4c72b0", "#dd8452", "#8c8c8c"]
    for ax, ln in zip(axes.flat, lengths):
        _stacked(ax, [r for r in rows if r["length"] == ln], list(MODALITIES), colors)
        ax.set_title(ln.upper())
    for ax in list(axes.flat)[len(lengths) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8, frameon=False)
    fig.suptitle(f"Modality of the errors: {system}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.85, 1))
    return save(fig, out)


def plot_retention(records: list[dict], summary: dict, out: Path) -> Path:
    """Retention (long / short accuracy) against total parameters (log scale), one point per system."""
    pts = [r for r in records if r["retention"] is not None and r["params_total_b"]]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for r in pts:
        agent = r["kind"] == "agent"
        ax.scatter(
            [r["params_total_b"]],
            [r["retention"]],
            marker="^" if agent else "o",
            s=36,
            color="#dd8452" if agent else "#4c72b0",
            zorder=3,
        )
        ax.annotate(
            r["system"], (r["params_total_b"], r["retention"]), xytext=(4, 3), textcoords="offset points", fontsize=7
        )
    ax.set_xscale("log")
    ax.axhline(1.0, ls=":", color="0.6", lw=0.8)
    ax.set_xlabel("total parameters (billions, log scale)")
    short, long = (records[0]["short"], records[0]["long"]) if records else ("", "")
    ax.set_ylabel(f"retention: accuracy {long.upper()} / {short.upper()}")
    rho, p = summary.get("rho_total"), summary.get("p_total")
    stat = (
        f"Spearman rho = {rho:.2f}, p = {p:.3g} ({summary['n_systems']} systems)"
        if rho is not None and p is not None and not math.isnan(rho)
        else f"Spearman: needs {summary.get('min_systems', 5)} sized systems ({summary.get('n_systems', 0)} found)"
    )
    ax.set_title(f"Retention vs size (triangles: agents, not in rho). {stat}", fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return save(fig, out)
