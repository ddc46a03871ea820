"""Cross-system analyses written under ``reports/analysis/`` and the page ``reports/index.html``.

:func:`build_analyses` runs every analysis of :mod:`memlens.eval.report.analyses` on the verdict files
present under ``data/verdicts/`` for one judge (the leaderboard judge) and writes:

=================================  ==========================================================
``accuracy.{csv,md}``              accuracy overall / type / subtype with 95% bootstrap CIs
``accuracy_by_length.png``         accuracy vs length, one panel per type, one line per system
``coverage.{csv,md}``              refusal rate, coverage, per-answer accuracy
``coverage_vs_pa.png``             coverage vs per-answer accuracy scatter
``degradation.{csv,md}``           McNemar exact per adjacent transition, Bonferroni, churn, reverts
``jaccard.{csv,md}``               Jaccard stability of correct sets vs the random baseline
``spearman.{csv,md}``              cross-type Spearman matrices (>= 3 systems)
``correlation_heatmap.png``        the same as heatmaps, one per length
``hard_questions.{csv,md}``        accuracy on questions solved by < 20% of systems
``judge_agreement.{csv,md}``       judge vs judge / LLM vs rules (closed-form task keys)
``judge_leaderboard_spearman.csv`` model-level Spearman of the two judges' leaderboards
``ablation.{csv,md}``              standard vs text_only / oracle_evidence, paired McNemar
``taxonomy*``, ``modality*``       the exact error taxonomy and the modality breakdown
``retention*``, ``backbone.*``     retention vs size, the backbone-matched comparison
                                   (these four: :mod:`memlens.eval.report.diagnosis`)
``summary.json``                   every record above, machine-readable
=================================  ==========================================================

These files depend on every system's verdicts (not only the DVC stage's own dependencies), so
they are not DVC outputs. :func:`write_index` gathers them, the DVC-tracked per-system outputs, the
MLflow leaderboard and the official-layout judge files into ``reports/index.html``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlens.core.config import length_tokens
from memlens.core.errors import DataError
from memlens.core.io import atomic_write_bytes
from memlens.eval.report import analyses as an
from memlens.eval.report import taxonomy
from memlens.eval.report.html import Block, Section, render_page
from memlens.eval.report.plots import plot_correlation_heatmap, plot_coverage_pa, plot_length_curves
from memlens.eval.report.retrieval import sections as retrieval_sections
from memlens.eval.report.tables import render_html, write_table

log = logging.getLogger(__name__)

__all__ = ["AnalysisBundle", "build_analyses", "write_index", "ANALYSIS_DIR"]

#: the taxonomy labels logged per run (``err__<label>``)
TAXONOMY_KEYS = frozenset({*taxonomy.LABELS, taxonomy.UNTRACEABLE})

ANALYSIS_DIR = "analysis"


@dataclass
class AnalysisBundle:
    judge: str
    mode: str
    sections: list[Section] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    def per_run_metrics(self, system: str, length: str) -> dict[str, float]:
        """Cross-system metrics of one (system, length): coverage, hard questions and
        :meth:`diagnosis_metrics`."""
        out: dict[str, float] = self.diagnosis_metrics(system, length)
        for r in self.summary.get("coverage", []):
            if r["system"] == system and r["length"] == length and r.get("coverage") is not None:
                out["coverage"] = float(r["coverage"])
        for r in self.summary.get("hard_questions", {}).get("rows", []):
            if r["system"] == system and r["length"] == length:
                out["hard_acc"] = float(r["acc"])
                out["hard_n"] = float(r["n"])
        return out

    def diagnosis_metrics(self, system: str, length: str) -> dict[str, float]:
        """What the report stage logs to the MLflow run of one (system, length): the exact
        taxonomy's shares (``err__<label>``, ``err_near_miss``, ...), the number of wrong answers
        (``err_count``) and the modality shares of its errors (``err_modality__Visual`` ...). Names
        that no run metric has (a run's ``coverage`` is its completeness)."""
        out: dict[str, float] = {}
        for r in self.summary.get("taxonomy", []):
            if r["system"] == system and r["length"] == length and r["level"] == "overall":
                out["err_count"] = float(r["n_errors"])
                for k in ("near_miss", "total_miss", "untraceable_share"):
                    if r.get(k) is not None:
                        out[f"err_{k}"] = round(float(r[k]), 6)
                for k, v in r.items():
                    if k in TAXONOMY_KEYS and v is not None:
                        out[f"err__{k}"] = round(float(v), 6)
        for r in self.summary.get("modality", []):
            if r["system"] == system and r["length"] == length and r["group"] == "overall":
                for m in ("Visual", "Reasoning", "Mixed"):
                    out[f"err_modality__{m}"] = round(float(r[m]), 6)
        return out


def _rel(reports: Path, p: Path) -> str:
    return p.relative_to(reports).as_posix()


def _wide(records: list[dict], columns: list[str]) -> list[dict]:
    rows: dict[tuple[str, str], dict] = {}
    for r in records:
        if r["column"] not in columns:
            continue
        row = rows.setdefault((r["system"], r["length"]), {"system": r["system"], "length": r["length"]})
        c = r["column"]
        row[c], row[f"{c}_low"], row[f"{c}_high"] = r["acc"], r["ci_low"], r["ci_high"]
        if c == "overall":
            row["n"], row["n_failed"] = r["n"], r["n_failed"]
    return sorted(rows.values(), key=lambda x: (length_tokens(x["length"]), -(x.get("overall") or 0), x["system"]))


def _finite(obj):
    """JSON has no NaN/inf: undefined statistics (e.g. a correlation over constant columns) become null."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalars
        try:
            return _finite(obj.item())
        except (TypeError, ValueError):
            return obj
    return obj


def build_analyses(
    verdicts_dir: Path,
    reports: Path,
    *,
    judge: str,
    mode: str = "standard",
    questions: dict | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    hard_threshold: float = 0.2,
    reference_length: str | None = None,
    test_direction: str = "any",
    built=None,
    conf_model_dir: Path | None = None,
    labels_root: Path | None = None,
    retention_lengths: list[str] | None = None,
    taxonomy_cache: Path | None = None,
) -> AnalysisBundle:
    """Compute and write every cross-system analysis (see the module docstring). ``built``: the
    built benchmark (its ground truth: the exact error taxonomy); ``conf_model_dir``: where system
    cards are looked up for systems without an archived card; ``labels_root``: the LLM error labels;
    ``taxonomy_cache``: traced verdict files kept between reports (:mod:`memlens.eval.report.diagnosis`)."""
    out_dir = reports / ANALYSIS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    files = an.scan_verdicts(verdicts_dir)
    bundle = AnalysisBundle(judge=judge, mode=mode)
    try:
        cube = an.load_cube(verdicts_dir, judge, mode, files=files)
    except DataError:
        log.warning("report: no %s verdicts of judge %s; cross-system analyses skipped", mode, judge)
        return bundle
    S = len(cube.systems)
    summary: dict[str, Any] = {
        "judge": judge,
        "mode": mode,
        "systems": cube.systems,
        "lengths": cube.lengths,
        "n_questions": len(cube.question_ids),
        "n_resamples": n_resamples,
        "seed": seed,
    }

    def table(name: str, records: list[dict], spec, title: str, note: str = "") -> list[str]:
        csv_p, md_p = write_table(out_dir / name, records, spec, title=title, note=note)
        bundle.files += [csv_p, md_p]
        return [_rel(reports, csv_p), _rel(reports, md_p)]

    scope = f"judge `{judge}`, mode `{mode}`, {S} systems, {len(cube.question_ids)} questions"

    # --- accuracy ---------------------------------------------------------------------------
    acc = an.accuracy_records(cube, n_resamples=n_resamples, seed=seed)
    summary["accuracy"] = acc
    spec = [
        ("system", "system", "str"),
        ("length", "length", "str"),
        ("column", "group", "str"),
        ("acc", "accuracy (%) [95% CI]", "pct_ci"),
        ("n", "n", "int"),
        ("n_failed", "failed", "int"),
    ]
    acc_files = table("accuracy", acc, spec, "Accuracy with 95% bootstrap intervals", scope)
    fig_acc = plot_length_curves(an.accuracy_rows(acc, mode), out_dir / "accuracy_by_length.png", mode=mode)
    bundle.files.append(fig_acc)
    types = [t for t in an.TYPE_ORDER if any(r["column"] == t for r in acc)]
    subs = sorted({r["column"] for r in acc if "/" in r["column"]})
    wspec = [
        ("system", "system", "str"),
        ("length", "length", "str"),
        ("n", "n", "int"),
        ("n_failed", "failed", "int"),
        ("overall", "overall", "pct_ci"),
        *[(t, t, "pct_ci") for t in types],
    ]
    blocks = [
        Block(
            note=f"Accuracy in % with 95% percentile-bootstrap intervals ({n_resamples} question "
            f"resamples, paired across systems and lengths); {scope}. Failed verdicts count as wrong "
            f"and are listed under 'failed'.",
            figures=[
                (
                    _rel(reports, fig_acc),
                    "Accuracy vs context length: one panel per type, one line per system, 95% intervals as bands",
                )
            ],
            table_html=render_html(_wide(acc, ["overall", *types]), wspec),
            files=acc_files,
            scroll=True,
        )
    ]
    if subs:
        sspec = [("system", "system", "str"), ("length", "length", "str"), *[(s, s, "pct_ci") for s in subs]]
        blocks.append(Block(title="Per subtype", table_html=render_html(_wide(acc, subs), sspec), scroll=True))
    bundle.sections.append(Section("accuracy", "Accuracy by system, length, type and subtype", blocks=blocks))

    # --- coverage vs per-answer accuracy ---------------------------------------------------
    cov = an.coverage_records(cube)
    summary["coverage"] = cov
    spec = [
        ("system", "system", "str"),
        ("length", "length", "str"),
        ("n", "n", "int"),
        ("accuracy", "accuracy", "pct"),
        ("refusal_rate", "refusal rate (answerable)", "pct"),
        ("coverage", "coverage", "pct"),
        ("per_answer_accuracy", "per-answer accuracy", "pct"),
        ("accuracy_answerable", "accuracy (answerable)", "pct"),
        ("abstention_rate_unanswerable", "abstention on AR", "pct"),
    ]
    cov_sorted = sorted(cov, key=lambda r: (length_tokens(r["length"]), r["system"]))
    cov_files = table("coverage", cov_sorted, spec, "Coverage vs per-answer accuracy", scope)
    fig_cov = plot_coverage_pa(cov, out_dir / "coverage_vs_pa.png")
    bundle.files.append(fig_cov)
    bundle.sections.append(
        Section(
            "coverage",
            "Coverage vs per-answer accuracy",
            intro=(
                "Coverage is the share of answerable questions a system attempts (does not refuse); per-answer accuracy "
                "is its accuracy on the attempted ones. A low overall score with a high per-answer accuracy is a "
                "calibration (over-refusal) deficit, not a memory one."
            ),
            blocks=[
                Block(
                    figures=[(_rel(reports, fig_cov), "Coverage vs per-answer accuracy, one point per system")],
                    table_html=render_html(cov_sorted, spec),
                    files=cov_files,
                    scroll=True,
                )
            ],
        )
    )

    # --- length degradation -----------------------------------------------------------------
    deg = an.degradation_records(cube, alpha=alpha, test_direction=test_direction)
    summary["degradation"] = deg
    spec = [
        ("system", "system", "str"),
        ("group", "group", "str"),
        ("from", "from", "str"),
        ("to", "to", "str"),
        ("n", "n", "int"),
        ("acc_before", "acc before", "pct"),
        ("acc_after", "acc after", "pct"),
        ("delta", "delta (pp)", "pct"),
        ("b01", "wrong->right", "int"),
        ("b10", "right->wrong", "int"),
        ("churn", "churn", "pct"),
        ("reverts", "reverts", "int"),
        ("p", "p (exact)", "p"),
        ("p_bonferroni", "p (Bonferroni)", "p"),
        ("significant", "significant", "bool"),
        ("mde", "MDE (pp)", "pct"),
        ("resolved", "|delta| >= MDE", "bool"),
    ]
    if deg:
        fam = deg[0]["n_tests"]
        which = "" if test_direction == "any" else f" with a nominal accuracy {test_direction}"
        note = (
            f"Exact McNemar test on paired per-question outcomes of adjacent lengths; Bonferroni correction over "
            f"the {fam} transitions{which} in the table (systems x groups x transitions), alpha={alpha}. "
            f"Churn = share "
            f"of questions that flip; reverts = flips undone at the next transition. MDE = the smallest paired "
            f"difference this transition detects with 80% power at alpha={alpha} (McNemar, normal approximation, "
            f"from its n and share of flips); a delta below it ('no' in the last column) is below the benchmark's "
            f"resolution."
        )
        deg_files = table("degradation", deg, spec, "Length degradation (McNemar exact, Bonferroni)", note)
        overall = [r for r in deg if r["group"] == "overall"]
        sig = [r for r in deg if r["group"] != "overall" and r.get("significant")]
        blocks = [
            Block(
                title="Overall",
                note=note,
                table_html=render_html(overall, spec, highlight="significant"),
                files=deg_files,
                scroll=True,
            ),
            Block(
                title="Per type: significant transitions",
                note="Type-level transitions significant after correction (all rows are in the CSV).",
                table_html=render_html(sig, spec) if sig else "<p>None.</p>",
                scroll=True,
            ),
        ]
    else:
        blocks = [Block(note="Needs verdicts at two or more lengths for a system.")]
    bundle.sections.append(Section("degradation", "Length degradation", blocks=blocks))

    # --- Jaccard stability ------------------------------------------------------------------
    jac = an.jaccard_records(cube, method="exact")
    summary["jaccard"] = jac
    spec = [
        ("system", "system", "str"),
        ("from", "from", "str"),
        ("to", "to", "str"),
        ("n", "n", "int"),
        ("k_from", "correct before", "int"),
        ("k_to", "correct after", "int"),
        ("intersection", "both", "int"),
        ("jaccard", "Jaccard", "f3"),
        ("expected_jaccard", "random baseline", "f3"),
        ("ratio", "ratio", "f2"),
    ]
    if jac:
        jac_files = table("jaccard", jac, spec, "Length stability (Jaccard of correct sets)")
        blocks = [
            Block(
                note="Jaccard overlap of the correctly answered question sets at adjacent lengths, against its "
                "expectation for two independent random sets of the same sizes (exact hypergeometric). "
                "A ratio well above 1 means the same questions stay solved: genuine stability rather than "
                "a floor effect.",
                table_html=render_html(jac, spec),
                files=jac_files,
                scroll=True,
            )
        ]
    else:
        blocks = [Block(note="Needs verdicts at two or more lengths for a system.")]
    bundle.sections.append(Section("stability", "Length stability (Jaccard)", blocks=blocks))

    # --- cross-type Spearman ----------------------------------------------------------------
    sp = an.spearman_by_length(cube)
    summary["spearman"] = sp
    if sp:
        recs = []
        for ln in sorted(sp, key=length_tokens):
            d = sp[ln]
            for i, a in enumerate(d["types"]):
                for j, b in enumerate(d["types"]):
                    recs.append(
                        {
                            "length": ln,
                            "type_a": a,
                            "type_b": b,
                            "rho": d["rho"][i][j],
                            "p": d["p"][i][j],
                            "n_systems": d["n_systems"],
                        }
                    )
        spec = [
            ("length", "length", "str"),
            ("type_a", "type", "str"),
            ("type_b", "type", "str"),
            ("rho", "rho", "f2"),
            ("p", "p", "p"),
            ("n_systems", "systems", "int"),
        ]
        sp_files = table("spearman", recs, spec, "Cross-type Spearman correlation across systems")
        fig_sp = plot_correlation_heatmap(sp, out_dir / "correlation_heatmap.png")
        bundle.files.append(fig_sp)
        blocks = [
            Block(
                note="Spearman rank correlation of per-type accuracy across systems (model level), per length; "
                "only systems judged on every type count.",
                figures=[(_rel(reports, fig_sp), "Cross-type Spearman correlation heatmap")],
                files=sp_files,
            )
        ]
    else:
        blocks = [Block(note=f"Needs at least 3 systems judged on every type at some length ({S} system(s) found).")]
    bundle.sections.append(Section("correlation", "Cross-type correlation", blocks=blocks))

    # --- hard questions -----------------------------------------------------------------------
    hq = an.hard_questions(cube, threshold=hard_threshold, reference_length=reference_length)
    summary["hard_questions"] = hq
    if hq.get("n_hard") is not None:
        rows = {}
        for r in hq["rows"]:
            rows.setdefault(r["system"], {"system": r["system"]})[r["length"]] = r["acc"]
        wide = sorted(rows.values(), key=lambda x: x["system"])
        mean_row = {"system": "mean over systems", **hq["mean_by_length"]}
        spec = [("system", "system", "str"), *[(ln, ln, "pct") for ln in cube.lengths]]
        note = (
            f"{hq['n_hard']} questions solved by fewer than {100 * hard_threshold:.0f}% of the "
            f"{hq['n_systems']} systems judged at {hq['reference_length']} (by type: "
            + ", ".join(f"{t} {n}" for t, n in hq["by_type"].items())
            + "). Accuracy (%) of each system on them."
        )
        hq_files = table("hard_questions", [*wide, mean_row], spec, "Hard questions", note)
        blocks = [Block(note=note, table_html=render_html([*wide, mean_row], spec), files=hq_files, scroll=True)]
    else:
        blocks = [
            Block(note=f"Needs at least 3 systems at {hq.get('reference_length')} ({hq.get('n_systems', 0)} found).")
        ]
    bundle.sections.append(Section("hard", "Hard questions", blocks=blocks))

    # --- judge agreement ----------------------------------------------------------------------
    judges = an.judges_present(files, mode)
    agree_rows, spear_rows, blocks = [], [], []
    spec = [
        ("group", "group", "str"),
        ("n", "n", "int"),
        ("agreement", "agreement", "pct"),
        ("kappa", "kappa", "f3"),
        ("n_fp", "judge FP", "int"),
        ("n_fn", "judge FN", "int"),
        ("fp_share", "FP share", "pct"),
        ("fn_share", "FN share", "pct"),
        ("fp_rate", "FP rate", "pct"),
        ("fn_rate", "FN rate", "pct"),
    ]
    for other in [j for j in judges if j != judge]:
        if "deterministic" in (judge, other):  # LLM vs rules: rules are the reference, closed-form keys only
            j1, ref = (other, judge) if judge == "deterministic" else (judge, other)
            keys, scope_name = an.CLOSED_FORM_TASK_KEYS, "closed-form task keys"
        else:
            j1, ref, keys, scope_name = judge, other, None, "all items"
        res = an.agreement_records(verdicts_dir, j1, ref, mode, task_keys=keys, files=files)
        if not res["rows"]:
            continue
        for r in res["rows"] + res["by_length"]:
            agree_rows.append({"judge": j1, "reference": ref, "scope": scope_name, **r})
        for r in res["leaderboard_spearman"]:
            spear_rows.append({"judge": j1, "reference": ref, "scope": scope_name, **r})
        sp_note = "; ".join(
            f"{r['length']}: rho={r['rho']:.2f} ({r['n_systems']} systems)"
            if r["rho"] is not None
            else f"{r['length']}: n/a ({r['n_systems']} systems)"
            for r in res["leaderboard_spearman"]
        )
        blocks.append(
            Block(
                title=f"{j1} vs {ref} ({scope_name})",
                note=(
                    f"'{ref}' is the reference: FP = {j1} credits an answer {ref} rejects; FN = the reverse. Shares are "
                    f"of all compared items (agreement + FP share + FN share = 100%), rates are conditional on the "
                    f"reference class. Model-level Spearman of the two leaderboards on these items: {sp_note}."
                ),
                table_html=render_html(res["rows"] + res["by_length"], spec),
            )
        )
    summary["judge_agreement"] = agree_rows
    summary["judge_leaderboard_spearman"] = spear_rows
    if agree_rows:
        files_a = table(
            "judge_agreement",
            agree_rows,
            [("judge", "judge", "str"), ("reference", "reference", "str"), ("scope", "scope", "str"), *spec],
            "Judge agreement",
        )
        csv_p = out_dir / "judge_leaderboard_spearman.csv"
        from memlens.eval.report.tables import render_csv

        atomic_write_bytes(csv_p, render_csv(spear_rows).encode("utf-8"))
        bundle.files.append(csv_p)
        blocks[-1].files = [*files_a, _rel(reports, csv_p)]
    else:
        blocks = [
            Block(
                note=f"Needs verdicts of a second judge for the same items (judges found: "
                f"{', '.join(judges) or 'none'}; run e.g. `memlens judge judge=llm`)."
            )
        ]
    bundle.sections.append(Section("judges", "Judge agreement", blocks=blocks))

    # --- ablations ----------------------------------------------------------------------------
    subsets = {}
    if questions:
        with_img = {qid for qid, q in questions.items() if getattr(q, "evidence_image_ids", None)}
        if 0 < len(with_img) < len(questions):
            subsets["evidence_images"] = with_img
        essential = {qid for qid, q in questions.items() if getattr(q, "image_essential", False)}
        if 0 < len(essential) < len(questions):
            subsets["image_essential"] = essential
    abl = an.ablation_records(verdicts_dir, judge, base=mode, subsets=subsets, files=files)
    summary["ablation"] = abl
    spec = [
        ("system", "system", "str"),
        ("variant", "variant", "str"),
        ("length", "length", "str"),
        ("subset", "subset", "str"),
        ("group", "group", "str"),
        ("n", "n", "int"),
        ("acc_base", f"{mode} acc", "pct"),
        ("acc_variant", "variant acc", "pct"),
        ("delta", "delta (pp)", "pct"),
        ("b01", "wrong->right", "int"),
        ("b10", "right->wrong", "int"),
        ("p_value", "p (McNemar)", "p"),
    ]
    if abl:
        abl_files = table("ablation", abl, spec, "Image ablation and oracle evidence")
        blocks = [
            Block(
                note=f"Each system's {mode} run against its text_only (evidence images removed) and "
                f"oracle_evidence (evidence sessions only) runs on the same questions.",
                table_html=render_html([r for r in abl if r["group"] == "overall"], spec),
                files=abl_files,
                scroll=True,
            )
        ]
    else:
        blocks = [
            Block(
                note="No text_only or oracle_evidence verdicts next to a standard run (run e.g. "
                "`memlens evaluate eval.mode=text_only` then judge it)."
            )
        ]
    bundle.sections.append(Section("ablation", "Image ablation and oracle evidence", blocks=blocks))

    # --- the paper's diagnostics: error taxonomy, modality, retention vs size, backbone-matched ------
    from memlens.eval.report.diagnosis import add_diagnostics

    summary |= add_diagnostics(
        bundle,
        Path(verdicts_dir),
        reports,
        out_dir,
        cube,
        files,
        judge=judge,
        mode=mode,
        built=built,
        conf_model_dir=conf_model_dir,
        labels_root=labels_root,
        retention_lengths=retention_lengths,
        n_resamples=n_resamples,
        seed=seed,
        alpha=alpha,
        taxonomy_cache=taxonomy_cache,
    )

    sp_path = out_dir / "summary.json"
    atomic_write_bytes(
        sp_path,
        (
            json.dumps(
                _finite(summary), indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False, default=_json_default
            )
            + "\n"
        ).encode("utf-8"),
    )
    bundle.files.append(sp_path)
    bundle.summary = summary
    return bundle


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def write_index(reports: Path, bundle: AnalysisBundle, *, system: str, mode: str, judge: str, note: str = "") -> Path:
    """Write ``reports/index.html`` linking every report output that exists."""
    sections: list[Section] = []
    this = []
    fig = reports / "plots" / "accuracy_by_length.png"
    files = [p for p in ("metrics.json", "plots/accuracy_by_length.csv") if (reports / p).is_file()]
    # The workspace's system: these files are DVC outputs, so after a checkout (`dvc exp apply`, `make
    # repro`) they are another system's while this page stays. The page names no system here: the
    # files and the figure (its legend) say which one the workspace holds.
    this.append(
        Block(
            note="The system the workspace holds now (DVC-tracked outputs: metrics.json names its system, "
            "mode and judge; they follow `dvc checkout` and `dvc exp apply`). This page was written by the "
            f"report of system '{system}', mode '{mode}', judge '{judge}'.",
            figures=[("plots/accuracy_by_length.png", "the workspace's system: accuracy vs context length")]
            if fig.is_file()
            else [],
            files=files,
        )
    )
    sections.append(Section("system", "The workspace's system (see metrics.json)", blocks=this))
    lb = [p for p in ("leaderboard.md", "leaderboard.csv") if (reports / p).is_file()]
    if lb:
        figs = (
            [("leaderboard_by_length.png", "Every tracked system: accuracy vs context length")]
            if (reports / "leaderboard_by_length.png").is_file()
            else []
        )
        sections.append(
            Section(
                "leaderboard",
                "Leaderboard (MLflow)",
                blocks=[
                    Block(
                        note="Latest MLflow run per system, mode and length of this benchmark's experiment.",
                        figures=figs,
                        files=lb,
                    )
                ],
            )
        )
    sections += bundle.sections
    sections += retrieval_sections(reports)
    off_root = reports / "judge"
    off = sorted(off_root.glob("*/*/*/judge_metrics.json")) if off_root.is_dir() else []
    if off:
        recs = []
        for p in off:
            s, m, ln = p.parent.parent.parent.name, p.parent.parent.name, p.parent.name
            try:
                o = json.loads(p.read_text())["overall"]
            except (OSError, ValueError, KeyError):
                continue
            recs.append(
                {
                    "system": s,
                    "mode": m,
                    "length": ln,
                    "accuracy": o.get("accuracy"),
                    "total": o.get("total"),
                    "auto_zero": o.get("auto_zero_count"),
                    "truncated": o.get("truncated_count"),
                    "degenerate": o.get("degenerate_count"),
                    "files": f"judge/{s}/{m}/{ln}/",
                }
            )
        recs.sort(key=lambda r: (r["system"], r["mode"], length_tokens(r["length"])))
        spec = [
            ("system", "system", "str"),
            ("mode", "mode", "str"),
            ("length", "length", "str"),
            ("accuracy", "accuracy", "pct"),
            ("total", "rows", "int"),
            ("auto_zero", "auto-zero", "int"),
            ("truncated", "truncated", "int"),
            ("degenerate", "degenerate", "int"),
        ]
        links = [
            f"judge/{r['system']}/{r['mode']}/{r['length']}/{f}"
            for r in recs
            for f in ("judge_metrics.json", "judge_details.json")
        ]
        sections.append(
            Section(
                "official",
                "Official-layout judge outputs",
                intro=(
                    "judge_details.json and judge_metrics.json in the layout of the official MEMLENS judge, for comparison with "
                    "published numbers (failed verdicts are left out rather than scored 0)."
                ),
                blocks=[Block(table_html=render_html(recs, spec), files=links, scroll=True)],
            )
        )
    intro = note or "MemLens report."
    page = render_page("MemLens report", intro, sections)
    out = reports / "index.html"
    atomic_write_bytes(out, page.encode("utf-8"))
    return out
