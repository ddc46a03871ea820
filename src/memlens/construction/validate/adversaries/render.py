"""Markdown tables of the adversaries' figures (``validity.md`` and the command line)."""

from __future__ import annotations


def _f(v) -> str:
    return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def text_only_md(fig: dict) -> list[str]:
    from memlens.construction.validate.adversaries.textonly import SOLVERS

    lines = []
    for ln, res in fig["lengths"].items():
        lines += [
            "",
            f"**Text-only solvers, {ln}** (held-out accuracy; best = best solver of the subtype)",
            "",
            "| subtype | n | chance | " + " | ".join(SOLVERS) + " | best | best - chance |",
            "|---|---:|---:|" + "---:|" * len(SOLVERS) + "---|---:|",
        ]
        for sub, r in res["subtypes"].items():
            accs = " | ".join(_f(r["accuracy"][s]) for s in SOLVERS)
            lines.append(
                f"| {sub} | {r['n']} | {_f(r['chance'])} | {accs} | {r['best']} | {_f(round(r['best_accuracy'] - r['chance'], 4))} |"
            )
        a = res["answerable"]
        lines.append(
            f"| **answerable** | {a['n']} | {_f(a['chance'])} | "
            + " | ".join("" for _ in SOLVERS)
            + f" | best per subtype {_f(a['best_accuracy'])} | {_f(round(a['best_accuracy'] - a['chance'], 4))} |"
        )
        rd = res["refusal_detection"]
        lines.append(
            f"| answer_refusal/ (detection, balanced acc.) | {rd['n']} ({rd['n_refusal']} refusals) | 0.500 | "
            + " | ".join("" for _ in SOLVERS)
            + f" | {_f(rd['balanced_accuracy'])} | {_f(round(rd['balanced_accuracy'] - 0.5, 4))} |"
        )
    return lines


def oracle_md(fig: dict | None) -> list[str]:
    """The oracle-evidence solvers: real questions per length, real + probes (what the gate decides
    on) and the probes alone."""
    from memlens.construction.validate.adversaries.oracle import SOLVERS

    if not fig:
        return []

    def table(title: str, rows: dict) -> list[str]:
        out = [
            "",
            title,
            "",
            "| subtype | n | chance | " + " | ".join(SOLVERS) + " | best - chance | top rules |",
            "|---|---:|---:|" + "---:|" * len(SOLVERS) + "---:|---|",
        ]
        for sub, r in rows.items():
            accs = " | ".join(_f(r["accuracy"][s]) for s in SOLVERS)
            top = ", ".join(f"{k} {v:.2f}" for k, v in r.get("top_rules", {}).items())
            out.append(
                f"| {sub} | {r['n']} | {_f(r['chance'])} | {accs} | {_f(round(r['best_accuracy'] - r['chance'], 4))} | {top} |"
            )
        return out

    lines = []
    draws = next((r.get("fold_draws", 1) for res in fig["lengths"].values() for r in res["subtypes"].values()), 1)
    held = "held-out accuracy" + (f", mean over {draws} draws of folds" if draws > 1 else "")
    for ln, res in fig["lengths"].items():
        lines += table(f"**Oracle-evidence solvers, {ln}, real questions** ({held})", res["subtypes"])
        if res.get("with_probes"):
            lines += table(
                f"**Oracle-evidence solvers, {ln}, real questions + probes** (the gate's sample)", res["with_probes"]
            )
    if fig.get("probe"):
        lines += table("**Oracle-evidence solvers, probes alone**", fig["probe"])
    return lines


def detectors_md(fig: dict) -> list[str]:
    lines = [
        "",
        "**Evidence detectors without the question** (out-of-fold ROC-AUC, folds grouped by question)",
        "",
        "| length | detector | n | evidence | ROC-AUC | top features |",
        "|---|---|---:|---:|---:|---|",
    ]
    for ln, dets in fig.items():
        for name, r in dets.items():
            if "roc_auc" not in r:
                lines.append(f"| {ln} | {name} | {r['n']} | {r['n_evidence']} | - | {r.get('skipped', '')} |")
                continue
            feats = r.get("top_features", [])[:5]
            txt = ", ".join(f"{f['feature']} ({f.get('importance', f.get('coef'))})".replace("|", "\\|") for f in feats)
            lines.append(f"| {ln} | {name} | {r['n']} | {r['n_evidence']} | {r['roc_auc']:.3f} | {txt} |")
    return lines


def repetition_md(fig: dict | None) -> list[str]:
    if not fig:
        return []
    lines = [
        "",
        f"**Sentence repetition** (sentences of {fig['min_words']}+ words): {fig['sentence_occurrences']} occurrences "
        f"of {fig['distinct_sentences']} distinct sentences; {fig['frequent_share']:.1%} of occurrences come from "
        f"sentences used {fig['frequent_uses']}+ times; the top sentence is used {fig['top_count']} times.",
        "",
        "| length | histories | repeats of an earlier sentence (mean) | median | max |",
        "|---|---:|---:|---:|---:|",
    ]
    for ln, r in fig["lengths"].items():
        lines.append(
            f"| {ln} | {r['histories']} | {r['repeat_share_mean']:.3f} | {r['repeat_share_median']:.3f} | {r['repeat_share_max']:.3f} |"
        )
    if fig["top_sentences"]:
        lines += ["", "Most used sentences:", ""]
        lines += [f"- {t['count']}x {t['sentence'][:120]}" for t in fig["top_sentences"]]
    return lines


def figures_md(figs: dict) -> list[str]:
    return (
        text_only_md(figs["text_only"])
        + oracle_md(figs.get("oracle"))
        + detectors_md(figs["detectors"])
        + repetition_md(figs["repetition"])
    )
