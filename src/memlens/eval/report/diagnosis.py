"""The paper's diagnostic analyses as report sections: the exact error taxonomy (and its LLM-labelled
variant), the modality breakdown of the errors, retention vs model size and the backbone-matched
comparison. Called by :func:`memlens.eval.report.crossreport.build_analyses`; writes under
``reports/analysis/``:

================================  =========================================================
``taxonomy.{csv,md}``             label and near-/total-miss shares per system, length, type, subtype
``taxonomy_items.csv``            every wrong answer: its exact source, label, group, modality
``taxonomy_shift.{csv,md}``       each label's share from the shortest to the longest length
``taxonomy.png``                  label shares per type and length, all systems
``modality.{csv,md}``, ``.png``   Visual / Reasoning / Mixed shares of the errors per type
``taxonomy_llm_agreement.{csv,md}``  exact vs LLM labels (when an LLM labelled the errors)
``retention.{csv,md}``, ``retention_vs_size.png``  retention vs total / active parameters
``backbone.{csv,md}``             each agent vs its backbone's direct answers on the same questions
================================  =========================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlens.eval.report import errors as err
from memlens.eval.report.backbone import backbone_records
from memlens.eval.report.html import Block, Section
from memlens.eval.report.plots_analyses import plot_modality, plot_retention, plot_taxonomy
from memlens.eval.report.scaling import MIN_SYSTEMS, retention_records, retention_summary
from memlens.eval.report.tables import render_html, write_table
from memlens.eval.report.taxonomy import LABELS, MODALITIES, UNTRACEABLE

__all__ = ["error_sections", "system_sections", "add_diagnostics"]


class _Writer:
    def __init__(self, bundle, reports: Path, out_dir: Path):
        self.bundle, self.reports, self.out_dir = bundle, reports, out_dir

    def rel(self, p: Path) -> str:
        return p.relative_to(self.reports).as_posix()

    def table(self, name: str, records: list[dict], spec, title: str, note: str = "") -> list[str]:
        csv_p, md_p = write_table(self.out_dir / name, records, spec, title=title, note=note)
        self.bundle.files += [csv_p, md_p]
        return [self.rel(csv_p), self.rel(md_p)]

    def figure(self, p: Path) -> str:
        self.bundle.files.append(p)
        return self.rel(p)


_LABEL_SPEC = [(lb, lb.replace("_", " "), "pct") for lb in (*LABELS, UNTRACEABLE)]
_SHARE_SPEC = [
    ("system", "system", "str"),
    ("length", "length", "str"),
    ("level", "level", "str"),
    ("group", "group", "str"),
    ("n_errors", "errors", "int"),
    ("near_miss", "near-miss", "pct"),
    ("total_miss", "total-miss", "pct"),
    *_LABEL_SPEC,
]


def error_sections(
    bundle, reports: Path, out_dir: Path, errors: list[dict], totals: list[dict], agreement: dict | None
) -> dict[str, Any]:
    """Taxonomy and modality sections from :func:`memlens.eval.report.errors.trace_errors` rows;
    ``agreement``: :func:`memlens.eval.report.llm_labels.agreement` of the LLM labels, if any."""
    w = _Writer(bundle, reports, out_dir)
    if not errors:
        bundle.sections.append(
            Section(
                "taxonomy",
                "Error taxonomy",
                blocks=[
                    Block(
                        note="No wrong answer to trace (or no built benchmark: the exact taxonomy needs its ground truth)."
                    )
                ],
            )
        )
        return {"taxonomy": [], "taxonomy_shift": [], "modality": []}
    recs = err.taxonomy_records(errors)
    shift = err.taxonomy_shift(recs)
    mods = err.modality_records(errors)
    scope = f"{len({e['system'] for e in errors})} systems, {len(errors)} wrong answers"
    files = w.table("taxonomy", recs, _SHARE_SPEC, "Exact error taxonomy", scope)
    from memlens.core.io import atomic_write_bytes
    from memlens.eval.report.tables import render_csv

    items = out_dir / "taxonomy_items.csv"
    atomic_write_bytes(items, render_csv(errors).encode("utf-8"))
    bundle.files.append(items)
    sspec = [
        ("system", "system", "str"),
        ("level", "level", "str"),
        ("group", "group", "str"),
        ("label", "label", "str"),
        ("from", "from", "str"),
        ("to", "to", "str"),
        ("share_from", "share before", "pct"),
        ("share_to", "share after", "pct"),
        ("delta", "delta (pp)", "pct"),
        ("n_from", "errors before", "int"),
        ("n_to", "errors after", "int"),
    ]
    shift_files = w.table("taxonomy_shift", shift, sspec, "Shift of the error distribution with length")
    fig = w.figure(plot_taxonomy(recs, out_dir / "taxonomy.png", err.ALL_SYSTEMS))
    pooled = [r for r in recs if r["system"] == err.ALL_SYSTEMS and r["level"] in ("overall", "type")]
    per_system = [r for r in recs if r["system"] != err.ALL_SYSTEMS and r["level"] == "overall"]
    note = (
        "Every wrong answer is traced to where its committed value (the judge's parse) occurs in the history, from "
        "the benchmark's ground truth (no LLM): the first of the sources in memlens.eval.report.taxonomy that "
        "applies. near-miss / total-miss are shares of the traceable errors; 'untraceable' (the other option of "
        "an A/B or Yes/No question) is a share of all errors. Failed verdicts are not errors."
    )
    blocks = [
        Block(
            title="All systems",
            note=note,
            figures=[(fig, "Label shares of the wrong answers per type and length, all systems")],
            table_html=render_html(pooled, _SHARE_SPEC),
            files=[*files, w.rel(items)],
            scroll=True,
        ),
        Block(title="Per system", table_html=render_html(per_system, _SHARE_SPEC), scroll=True),
    ]
    big = sorted(
        (r for r in shift if r["system"] == err.ALL_SYSTEMS and r["level"] in ("overall", "subtype")),
        key=lambda r: -abs(r["delta"]),
    )[:20]
    blocks.append(
        Block(
            title="Shift with length (largest, all systems)",
            table_html=render_html(big, sspec) if big else "<p>Needs errors at two lengths.</p>",
            files=shift_files,
            scroll=True,
        )
    )
    if agreement and agreement.get("n"):
        blocks.append(_agreement_block(w, agreement))
    bundle.sections.append(Section("taxonomy", "Error taxonomy (exact, from the ground truth)", blocks=blocks))

    mspec = [
        ("system", "system", "str"),
        ("length", "length", "str"),
        ("group", "type", "str"),
        ("n_errors", "errors", "int"),
        *[(m, m, "pct") for m in MODALITIES],
    ]
    mfiles = w.table("modality", mods, mspec, "Modality of the errors")
    mfig = w.figure(plot_modality(mods, out_dir / "modality.png", err.ALL_SYSTEMS))
    bundle.sections.append(
        Section(
            "modality",
            "Modality of the errors",
            intro=(
                "Visual: the error is in locating or reading image evidence; Reasoning: the evidence was found but "
                "combined wrong (slips, partial aggregates, stale state) or the evidence is text; Mixed: the question "
                "needs images and text and the error cannot be put on one side. Refusal items have no evidence and "
                "are left out."
            ),
            blocks=[
                Block(
                    figures=[(mfig, "Visual / Reasoning / Mixed shares of the errors per type, all systems")],
                    table_html=render_html([r for r in mods if r["system"] == err.ALL_SYSTEMS], mspec),
                    files=mfiles,
                    scroll=True,
                )
            ],
        )
    )
    return {"taxonomy": recs, "taxonomy_shift": shift, "modality": mods, "taxonomy_totals": totals}


def _agreement_block(w: _Writer, agreement: dict) -> Block:
    rows = agreement["by_label"]
    spec = [
        ("label", "exact label", "str"),
        ("n_exact", "exact", "int"),
        ("n_llm", "LLM", "int"),
        ("n_both", "both", "int"),
        ("precision", "LLM precision", "pct"),
        ("recall", "LLM recall", "pct"),
    ]
    files = w.table(
        "taxonomy_llm_agreement",
        rows,
        spec,
        "Exact vs LLM-labelled taxonomy",
        f"{agreement['n']} wrong answers labelled by both; agreement {100 * agreement['agreement']:.1f}%, "
        f"Cohen's kappa {agreement['kappa']:.3f}; labeller {agreement.get('labeller', '')}",
    )
    return Block(
        title="Exact vs LLM-labelled",
        note=(
            f"The same wrong answers labelled by an LLM with the seven labels ({agreement.get('labeller', '')}): "
            f"{agreement['n']} answers, raw agreement {100 * agreement['agreement']:.1f}%, Cohen's kappa "
            f"{agreement['kappa']:.3f}; near-/total-miss agreement {100 * agreement['group_agreement']:.1f}%. "
            "Precision / recall of the LLM per exact label."
        ),
        table_html=render_html(rows, spec),
        files=files,
    )


def system_sections(
    bundle,
    reports: Path,
    out_dir: Path,
    cube,
    cards: dict,
    *,
    retention_lengths=None,
    n_resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Retention vs size and the backbone-matched comparison."""
    w = _Writer(bundle, reports, out_dir)
    ret, pair = retention_records(cube, cards, lengths=retention_lengths)
    summ = retention_summary(ret)
    rspec = [
        ("system", "system", "str"),
        ("kind", "kind", "str"),
        ("params_total_b", "total params (B)", "f2"),
        ("params_active_b", "active params (B)", "f2"),
        ("n", "n", "int"),
        ("acc_short", f"acc {pair[0] if pair else ''}", "pct"),
        ("acc_long", f"acc {pair[1] if pair else ''}", "pct"),
        ("retention", "retention", "f3"),
    ]
    if ret:
        stat = (
            f"Spearman rho (retention vs total parameters) = {summ['rho_total']:.3f}, p = {summ['p_total']:.3g}"
            + (f" (exact: {summ['p_total_exact']:.3g})" if summ.get("p_total_exact") is not None else "")
            + (
                f"; vs active parameters rho = {summ['rho_active']:.3f}, p = {summ['p_active']:.3g}"
                if summ.get("rho_active") is not None
                else ""
            )
            + f" ({summ['n_systems']} sized systems other than agents)"
            if summ.get("rho_total") is not None
            else f"Spearman needs at least {MIN_SYSTEMS} sized systems other than agents ({summ['n_systems']} found)"
        )
        rfiles = w.table("retention", ret, rspec, f"Retention {pair[1]} / {pair[0]} vs size", stat)
        rfig = w.figure(plot_retention(ret, summ, out_dir / "retention_vs_size.png"))
        blocks = [
            Block(
                note=f"Retention = accuracy at {pair[1]} / accuracy at {pair[0]} on the questions judged at both. "
                f"Sizes from the systems' cards (model configs). {stat}.",
                figures=[(rfig, "Retention vs total parameters (log scale)")],
                table_html=render_html(ret, rspec),
                files=rfiles,
                scroll=True,
            )
        ]
    else:
        blocks = [Block(note="Needs systems judged at two lengths.")]
    bundle.sections.append(Section("retention", "Retention vs model size", blocks=blocks))

    bb = backbone_records(cube, cards, n_resamples=n_resamples, seed=seed, alpha=alpha)
    bspec = [
        ("agent", "agent", "str"),
        ("backbone", "backbone (direct)", "str"),
        ("length", "length", "str"),
        ("group", "group", "str"),
        ("n", "n", "int"),
        ("acc_agent", "agent acc", "pct"),
        ("acc_backbone", "backbone acc", "pct"),
        ("diff", "diff (pp) [95% CI]", "pct_ci"),
        ("p_value", "p (McNemar)", "p"),
        ("mde", "MDE (pp)", "pct"),
        ("resolved", "gap >= MDE", "bool"),
    ]
    if bb:
        bfiles = w.table("backbone", bb, bspec, "Backbone-matched comparison")
        blocks = [
            Block(
                note="Each agent against its backbone's config answering directly, on the questions both answered "
                "(the agent subset): diff = agent - backbone with a paired 95% bootstrap interval, exact McNemar p and "
                "the paired minimum detectable effect (80% power).",
                table_html=render_html(bb, bspec, highlight="resolved"),
                files=bfiles,
                scroll=True,
            )
        ]
    else:
        blocks = [
            Block(
                note="Needs an agent whose config names its backbone (model.backbone_config) and that backbone's own "
                "verdicts on the same build."
            )
        ]
    bundle.sections.append(Section("backbone", "Backbone-matched comparison", blocks=blocks))
    return {"retention": ret, "retention_summary": summ, "retention_lengths": list(pair or []), "backbone": bb}


def add_diagnostics(
    bundle,
    verdicts_dir: Path,
    reports: Path,
    out_dir: Path,
    cube,
    files,
    *,
    judge: str,
    mode: str,
    built=None,
    conf_model_dir: Path | None = None,
    labels_root: Path | None = None,
    retention_lengths=None,
    n_resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    taxonomy_cache: Path | None = None,
) -> dict[str, Any]:
    """Every section of this module; returns their records for ``summary.json``. ``built``: the
    built benchmark whose ground truth the taxonomy traces (None: no taxonomy); ``labels_root``:
    where the LLM error labels are kept (:func:`memlens.eval.report.llm_labels.labels_dir`);
    ``taxonomy_cache``: where traced verdict files are kept (:func:`memlens.eval.report.errors.trace_errors`)."""
    from dataclasses import asdict

    from memlens.eval.report.cards import load_cards
    from memlens.eval.report.llm_labels import agreement, read_labels

    errors, totals = (
        ([], [])
        if built is None
        else err.trace_errors(verdicts_dir, judge, built, mode=mode, files=files, cache_dir=taxonomy_cache)
    )
    labels = read_labels(labels_root, mode) if labels_root is not None else {}
    agree = agreement(errors, labels) if labels and errors else None
    out = error_sections(bundle, reports, out_dir, errors, totals, agree)
    cards = load_cards(verdicts_dir, cube.systems, conf_model_dir)
    out |= system_sections(
        bundle,
        reports,
        out_dir,
        cube,
        cards,
        retention_lengths=retention_lengths,
        n_resamples=n_resamples,
        seed=seed,
        alpha=alpha,
    )
    out["cards"] = {s: {k: v for k, v in asdict(c).items() if k != "system"} for s, c in sorted(cards.items())}
    out["taxonomy_llm_agreement"] = agree
    return out
