"""report stage: metrics with intervals, MLflow runs, the leaderboard, analyses, figures and a page.

For the configured system and mode (DVC-tracked, deterministic: they depend only on this system's
verdicts and the benchmark):

* ``reports/metrics.json`` (``dvc metrics show`` / ``dvc exp show``): accuracy overall / per type
  with 95% bootstrap intervals, refusal rate, answer coverage and per-answer accuracy per length,
  completeness (``coverage``: items judged / items of the benchmark, ``complete``,
  ``failure_rate``), and the length transitions of this system (exact McNemar p, churn, Jaccard
  vs random);
* ``reports/plots/accuracy_by_length.{csv,png}`` (``dvc plots show``);
* ``reports/judge/<system>/<mode>/<length>/judge_{details,metrics}.json``: the configured judge's
  verdicts in the official MEMLENS layout.

Across every system (not DVC outputs: they depend on other systems' verdicts or on MLflow state):

* ``reports/analysis/``: every cross-system analysis (:mod:`memlens.eval.report.crossreport`);
* ``reports/leaderboard.{md,csv}`` and ``reports/leaderboard_by_length.png`` from MLflow: the
  complete runs of the current benchmark, incomplete ones in a table apart;
* ``reports/index.html``: one static page gathering all of the above.

Completeness: a length is *complete* when every item of the benchmark at that length has a
prediction (answered or a recorded failure) and a verdict, and the evaluation was not cut short
with ``eval.max_items`` (read from the evaluate manifest ``data/predictions/<system>/manifest.json``);
an evaluation is complete when every length it requested is. A failure rate (failed requests or
judge calls) above :data:`FAILURE_FLAG` is flagged.

MLflow (:mod:`memlens.eval.tracking`): one parent run per (system, mode, dataset, judge) with one
child run per length, updated in place when the same evaluation is reported again; the figures,
tables, official judge files and the page are artifacts of the child runs. At the end, a per-type
table of this system is printed to stdout.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from memlens.core.config import Paths, length_tokens, section
from memlens.core.constants import TYPE_ORDER
from memlens.core.errors import DataError
from memlens.core.io import read_json, read_records, write_json
from memlens.core.schema import TYPE_ABBREV, Verdict
from memlens.core.settings import Settings, as_settings
from memlens.eval.agents.subset import subset_ids
from memlens.eval.benchmark import Benchmark, open_benchmark
from memlens.eval.prompt import PROMPT_PROTOCOL
from memlens.eval.report.buildcost import build_accounting
from memlens.eval.report.cards import card_from_config, write_card
from memlens.eval.report.leaderboard import (
    FAILURE_FLAG,
    annotate_resolution,
    leaderboard_rows,
    paired_outcomes,
    write_leaderboard,
)
from memlens.eval.report.llm_labels import labels_dir
from memlens.eval.report.metrics import system_metrics, type_columns
from memlens.eval.report.plots import plot_length_curves
from memlens.eval.report.retrieval import write_attribution
from memlens.eval.report.settings import ReportSettings
from memlens.eval.views import check_view_matches

#: Report outputs that depend on other systems' verdicts or on MLflow state (not DVC outputs).
CROSS_SYSTEM_OUTPUTS = (
    "reports/analysis/",
    "reports/index.html",
    "reports/leaderboard.md",
    "reports/leaderboard.csv",
    "reports/leaderboard_by_length.png",
)

log = logging.getLogger(__name__)


def load_verdicts(paths: Paths, system: str, mode: str, judge: str) -> dict[str, list[Verdict]]:
    d = paths.verdicts / system / mode
    out = {}
    for p in sorted(d.glob(f"*.{judge}.jsonl")):
        out[p.name[: -len(f".{judge}.jsonl")]] = read_records(p, Verdict)
    if not out:
        raise DataError(f"{d}: no verdicts of judge {judge!r}; run `memlens judge` first")
    return dict(sorted(out.items(), key=lambda kv: length_tokens(kv[0])))


def system_transitions(by_length: dict[str, list[Verdict]]) -> dict[str, dict]:
    """Adjacent length transitions of one system (overall): McNemar exact p, churn, Jaccard vs random."""
    import numpy as np

    from memlens.eval.report import stats

    if len(by_length) < 2:
        return {}
    qids = sorted({v.question_id for vs in by_length.values() for v in vs})
    pos = {q: i for i, q in enumerate(qids)}
    outcomes = {}
    for ln, vs in by_length.items():
        x = np.full(len(qids), np.nan)
        for v in vs:
            x[pos[v.question_id]] = 1.0 if v.correct else 0.0
        outcomes[ln] = x
    deg = stats.length_degradation(outcomes)
    jac = {(r["from"], r["to"]): r for r in stats.jaccard_stability(outcomes, method="exact")}
    out = {}
    for r in deg:
        j = jac[(r["from"], r["to"])]
        flips = r["b01"] + r["b10"]
        rec = {
            "n": r["n"],
            "delta": r["delta"],
            "b01": r["b01"],
            "b10": r["b10"],
            "p_mcnemar": r["p"],
            "churn": flips / r["n"] if r["n"] else 0.0,
            "jaccard": j["jaccard"],
            "jaccard_ratio": j["ratio"],
        }
        out[f"{r['from']}_to_{r['to']}"] = {k: round(float(v), 6) for k, v in rec.items() if v is not None and v == v}
    return out


def write_official_files(paths: Paths, system: str, mode: str, by_length: dict[str, list[Verdict]]) -> dict[str, dict]:
    """The configured judge's verdicts in the official layout, per length (facts §4.8)."""
    from memlens.eval.judge.official import write_official
    from memlens.eval.results import PredictionStore

    out = {}
    for ln, vs in by_length.items():
        preds = None
        if any("original_len" not in (v.details or {}) for v in vs):
            pf = paths.predictions / system / mode / f"{ln}.jsonl"
            if pf.is_file():
                preds = PredictionStore(paths.predictions, system, mode, ln).load()
        out[ln] = write_official(paths.reports / "judge" / system / mode / ln, vs, preds)
    return out


# ----------------------------------------------------------------------------------- completeness
def evaluate_manifest(paths: Paths, system: str, mode: str, ds_hash: str) -> dict:
    """The evaluate manifest of ``system`` (``{}`` if there is none); ``max_items`` and ``lengths``
    only when it describes this mode. Predictions made on another benchmark are an error."""
    p = paths.predictions / system / "manifest.json"
    if not p.is_file():
        return {}
    m = read_json(p)
    if not isinstance(m, dict):
        raise DataError(f"{p}: expected a JSON object")
    if m.get("mode") != mode:
        return {k: m[k] for k in ("system_key", "prompt_protocol") if k in m}
    made_on = m.get("dataset_sha256")
    if made_on and made_on != ds_hash:
        raise DataError(
            f"{p}: the predictions of {system!r} were made on benchmark {made_on[:12]}, the benchmark is now "
            f"{ds_hash[:12]}; run `memlens evaluate` and `memlens judge` again"
        )
    return m


def item_ids(source: Benchmark, length: str) -> list[str]:
    """Question ids of the benchmark's items at one length."""
    if source.kind == "built":
        return [inst.question_id for inst in source.source.instances(length)]
    from memlens.core.official import iter_json_array

    return [str(x.get("question_id")) for x in iter_json_array(source.source.dataset_path(length))]


@dataclass
class Completeness:
    """How much of one length of the benchmark an evaluation covers."""

    length: str
    n_items: int  # items of the benchmark (of its subset, for a subset run) at this length
    n_predicted: int  # of them, with a prediction (answered or a recorded failure)
    n_judged: int  # of them, with a prediction and a verdict
    n_failed: int  # of them, verdicts without a decision (the request or the judge call failed)
    max_items: int | None = None  # the evaluation was cut short with eval.max_items
    subset: str = "all"  # the questions the evaluation covers: all, or a subset's name (eval.subset)
    n_judge_failed: int = 0  # answered items whose judge call failed
    n_answered: int = 0  # judged items whose request succeeded
    judged_ids: tuple[str, ...] = ()

    @property
    def coverage(self) -> float:
        return self.n_judged / self.n_items if self.n_items else 0.0

    @property
    def failure_rate(self) -> float:
        return self.n_failed / self.n_judged if self.n_judged else 0.0

    @property
    def judge_failed(self) -> bool:
        """The judge failed on most answered items: the run is failed, not ranked."""
        from memlens.eval.failures import judge_failed

        return judge_failed(self.n_judge_failed, self.n_answered)

    @property
    def complete(self) -> bool:
        return self.max_items is None and self.n_items > 0 and self.n_judged == self.n_items

    @property
    def ranked(self) -> bool:
        return self.complete and not self.judge_failed

    @property
    def scope(self) -> str:
        """What the run covers (:func:`memlens.eval.tracking.run_key`): the subset when complete,
        else ``partial-``/``failed-`` and a digest of the judged items (a partial or failed run never
        takes the key of the complete one)."""
        if self.ranked:
            return self.subset
        from memlens.core.io import canonical_bytes, sha256_bytes

        digest = sha256_bytes(canonical_bytes([self.subset, self.max_items, sorted(self.judged_ids)]))[:12]
        return f"{'failed' if self.judge_failed else 'partial'}-{digest}"

    @property
    def flagged(self) -> bool:
        return self.failure_rate > FAILURE_FLAG

    @property
    def reason(self) -> str:
        """Why the length is not ranked ("" when it is)."""
        out = []
        if self.judge_failed:
            out.append(f"the judge failed on {self.n_judge_failed} of {self.n_answered} answered items")
        if self.max_items is not None:
            out.append(f"eval.max_items={self.max_items}")
        if self.n_judged < self.n_items:
            out.append(f"{self.n_judged} of {self.n_items} items judged")
            if self.n_predicted > self.n_judged:
                out.append(f"{self.n_predicted - self.n_judged} predictions without a verdict")
        return "; ".join(out)


def completeness(
    ids: list[str],
    paths: Paths,
    system: str,
    mode: str,
    length: str,
    verdicts: list[Verdict],
    manifest: dict,
    subset: str = "all",
) -> Completeness:
    """Completeness of one length: ``ids`` are the items the evaluation covers there (:func:`item_ids`,
    within ``subset`` for a subset run)."""
    from memlens.eval.failures import judge_failure_count
    from memlens.eval.results import PredictionStore

    ids = set(ids)
    preds = PredictionStore(paths.predictions, system, mode, length).load()
    predicted = ids & set(preds)
    judged = {v.question_id: v for v in verdicts if v.question_id in predicted}
    judge_failures, answered = judge_failure_count(judged.values(), preds)
    mi = manifest.get("max_items")
    return Completeness(
        length=length,
        n_items=len(ids),
        n_predicted=len(predicted),
        n_judged=len(judged),
        n_failed=sum(v.correct is None for v in judged.values()),
        max_items=int(mi) if mi else None,
        subset=subset,
        n_judge_failed=judge_failures,
        n_answered=answered,
        judged_ids=tuple(sorted(judged)),
    )


def check_questions(paths: Paths, system: str, mode: str, judge: str, by_length: dict, questions: dict) -> None:
    for ln, vs in by_length.items():
        unknown = sorted({v.question_id for v in vs} - set(questions))
        if unknown:
            raise DataError(
                f"{paths.verdicts / system / mode / f'{ln}.{judge}.jsonl'}: {len(unknown)} verdicts of questions that "
                f"are not in the benchmark (e.g. {unknown[0]}); run `memlens evaluate` and `memlens judge` again"
            )


# ----------------------------------------------------------------------------------- LLM error labels
def label_errors(paths: Paths, source: Benchmark, system: str, mode: str, by_length: dict, root: Path, llm) -> None:
    """The LLM-labelled taxonomy of this system's wrong answers (``report.llm_labels``), stored per
    length under ``root`` (:mod:`memlens.eval.report.llm_labels`); cached replies cost nothing."""
    from memlens.eval.report.llm_labels import LabellerSettings, build_messages, label_answers, write_labels
    from memlens.eval.results import PredictionStore

    raw = llm.model_dump() if hasattr(llm, "model_dump") else dict(llm)
    settings = LabellerSettings(**raw)
    questions = source.questions
    for ln, vs in by_length.items():
        preds = PredictionStore(paths.predictions, system, mode, ln).load()
        todo = []
        for v in vs:
            p = preds.get(v.question_id)
            if v.correct is not False or p is None or not p.ok or v.request_key != p.request_key:
                continue
            q = questions[v.question_id]
            ref = "Insufficient information" if q.question_type == "answer_refusal" else str(q.answer)
            todo.append((v.question_id, build_messages(q.question, ref, p.prediction or "", q.old_answer)))
        got = label_answers(settings, todo, paths.cache / "error_labels.sqlite")
        keys = {v.question_id: v.request_key for v in vs}
        rows = [
            {"question_id": qid, "request_key": keys[qid], "label": lb, "labeller": settings.labeller}
            for qid, lb in sorted(got.items())
            if lb is not None
        ]
        failed = sum(1 for lb in got.values() if lb is None)
        if failed:
            log.warning("report: %d LLM error labels of %s@%s failed (asked again next time)", failed, system, ln)
        write_labels(root, system, mode, ln, rows)


# ----------------------------------------------------------------------------------- MLflow
def _metric_safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def child_metrics(m: dict, c: Completeness) -> dict[str, float]:
    """A length's MLflow metrics: accuracy columns with bounds, counts and rates, completeness."""
    out = {k: v for k, v in m.items() if not k.endswith("_n")}  # per-column counts stay in the tables
    out["n_items"] = float(c.n_items)
    out["coverage"] = round(c.coverage, 6)
    out["failure_rate"] = round(c.failure_rate, 6)
    if "refusal_rate" in m:
        out["answer_coverage"] = round(1.0 - m["refusal_rate"], 6)
    return out


def summary_metrics(per_length: dict[str, dict], cover: dict[str, Completeness]) -> dict[str, float]:
    """The parent run's metrics: ``acc_at_<length>`` (+ bounds), ``acc_avg``, ``coverage``, ``failure_rate``."""
    out: dict[str, float] = {}
    for ln, m in per_length.items():
        for suffix in ("", "_ci_low", "_ci_high"):
            if f"acc{suffix}" in m:
                out[f"acc_at_{_metric_safe(ln)}{suffix}"] = m[f"acc{suffix}"]
    accs = [m["acc"] for m in per_length.values() if "acc" in m]
    if accs:
        out["acc_avg"] = round(sum(accs) / len(accs), 6)
    items = sum(c.n_items for c in cover.values())
    judged = sum(c.n_judged for c in cover.values())
    out["coverage"] = round(judged / items, 6) if items else 0.0
    out["failure_rate"] = round(sum(c.n_failed for c in cover.values()) / judged, 6) if judged else 0.0
    return out


def _completeness_tags(complete: bool, flagged: bool, reason: str, subset: str = "all", failed: bool = False):
    tags = {
        "memlens.complete": str(complete).lower(),
        "memlens.high_failure_rate": str(flagged).lower(),
        "memlens.subset": subset,
        "memlens.failed": str(failed).lower(),
    }
    if reason:
        tags["memlens.incomplete_reason"] = reason
    return tags


def _parent_scope(cover: dict[str, Completeness], subset: str) -> str:
    """The evaluation's scope: its subset when every length is ranked, else ``partial-``/``failed-``
    and a digest of the lengths' scopes."""
    if all(c.ranked for c in cover.values()):
        return subset
    from memlens.core.io import canonical_bytes, sha256_bytes

    kind = "failed" if any(c.judge_failed for c in cover.values()) else "partial"
    return f"{kind}-{sha256_bytes(canonical_bytes(sorted((ln, c.scope) for ln, c in cover.items())))[:12]}"


def dataset_spec(cfg, paths: Paths, source: Benchmark, ds_hash: str, ids: dict[str, list[str]]):
    """The benchmark as an MLflow dataset: item counts per length, type and subtype."""
    from collections import Counter

    from memlens.eval.tracking import DatasetSpec

    qs = source.questions
    rows = []
    for ln, qids in ids.items():
        counts = Counter(
            (TYPE_ABBREV.get(qs[q].question_type, qs[q].question_type), qs[q].question_subtype or "")
            for q in qids
            if q in qs
        )
        for (t, st), n in sorted(counts.items()):
            rows.append({"length": ln, "question_type": t, "question_subtype": st, "items": n})
    if source.kind == "official":
        folder = source.source.folder
        name = f"memlens-release-{folder.name}"
    else:
        folder, name = paths.data, f"memlens-{cfg.data.scale}"
    return DatasetSpec(name=name, digest=ds_hash, source=str(Path(folder).resolve()), rows=rows)


def description(system: str, per_length: dict[str, dict], cover: dict[str, Completeness]) -> str:
    """The parent run's description (markdown): accuracy and completeness per length."""
    lines = [f"**{system}**: accuracy per length (95% bootstrap interval) and completeness.", ""]
    lines += ["| length | accuracy | coverage | failed | status |", "|---|---:|---:|---:|---|"]
    for ln, c in cover.items():
        m = per_length.get(ln, {})
        acc = f"{100 * m['acc']:.1f} [{100 * m['acc_ci_low']:.1f}, {100 * m['acc_ci_high']:.1f}]" if "acc" in m else "-"
        status = "complete" if c.ranked else f"not ranked: {c.reason or 'no verdicts'}"
        if c.ranked and c.subset != "all":
            status += f" (subset {c.subset})"
        lines.append(f"| {ln} | {acc} | {100 * c.coverage:.1f}% | {100 * c.failure_rate:.1f}% | {status} |")
    return "\n".join(lines)


def evaluation(cfg, paths: Paths, source: Benchmark, ds_hash: str, manifest: dict, per_length, cover, ids, rows):
    """What MLflow records of this report (:class:`memlens.eval.tracking.Evaluation`): params, tags,
    the dataset, the parent's summary and one child per length (``rows``: this system's rows)."""
    from memlens.eval.tracking import Evaluation, RunSpec, dvc_tags, git_commit

    system, mode, judge = str(cfg.model.name), str(cfg.eval.mode), str(cfg.judge.name)
    commit = git_commit(paths.root)
    tags = {"memlens.prompt_protocol": str(manifest.get("prompt_protocol") or PROMPT_PROTOCOL), **dvc_tags()}
    if commit != "unknown":  # not a git checkout
        tags |= {"mlflow.source.git.commit": commit, "memlens.git_commit": commit}
    if manifest.get("system_key"):
        tags["memlens.system_key"] = str(manifest["system_key"])
    params = {
        "model": section(cfg, "model")["model"],
        "eval": section(cfg, "eval")["eval"],
        "judge": section(cfg, "judge")["judge"],
        "data": {"scale": str(cfg.data.scale), "seed": int(cfg.data.seed), "items": str(cfg.data.items)},
        "dataset_hash": ds_hash,
    }
    built = cfg.data.items == "built"
    if built and (cost := build_accounting(paths.generated)) is not None:  # generator=llm: models, tokens, cost
        params["build"] = cost
    lengths = list(cover)
    reasons = [f"{ln}: {cover[ln].reason or 'no verdicts'}" for ln in lengths if not cover[ln].ranked]
    complete = all(cover[ln].ranked for ln in lengths)
    failed = any(cover[ln].judge_failed for ln in lengths)
    subset = next(iter(cover.values())).subset if cover else "all"
    summary = summary_metrics(per_length, cover)
    return Evaluation(
        system=system,
        mode=mode,
        judge=judge,
        dataset_hash=ds_hash,
        params=params,
        tags=tags,
        dataset=dataset_spec(cfg, paths, source, ds_hash, ids),
        summary=RunSpec(
            metrics=summary,
            tags={
                **_completeness_tags(
                    complete, summary["failure_rate"] > FAILURE_FLAG, "; ".join(reasons), subset, failed
                ),
                "memlens.lengths": ",".join(lengths),
            },
            description=description(system, per_length, cover),
            scope=_parent_scope(cover, subset),
        ),
        lengths={r["length"]: RunSpec(metrics=r["metrics"], tags=r["tags"], scope=r["scope"]) for r in rows},
    )


# ----------------------------------------------------------------------------------- stdout
def _cell(m: dict, key: str) -> str:
    if key not in m:
        return "-"
    return f"{100 * m[key]:.1f} [{100 * m[key + '_ci_low']:.1f}-{100 * m[key + '_ci_high']:.1f}]"


def results_table(
    system: str, mode: str, judge: str, per_length: dict[str, dict], cover: dict[str, Completeness]
) -> str:
    """The per-type results of this system, one line per length (accuracy % [95% interval])."""
    types = [t for t in TYPE_ORDER if any(f"acc__{t}" in m for m in per_length.values())]
    head = ["system", "length", "n", "overall", *types, "status"]
    rows = []
    for ln, m in per_length.items():
        c = cover[ln]
        status = "complete" if c.complete else f"INCOMPLETE ({100 * c.coverage:.0f}% covered)"
        if c.complete and c.subset != "all":
            status += f" (subset {c.subset}: {c.n_items} questions)"
        if c.judge_failed:
            status = f"FAILED (judge failed on {c.n_judge_failed} of {c.n_answered})"
        if c.flagged:
            status += f", {100 * c.failure_rate:.0f}% failed"
        rows.append(
            [system, ln, str(int(m.get("n", 0))), _cell(m, "acc"), *[_cell(m, f"acc__{t}") for t in types], status]
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in (0, 1, len(cells) - 1) else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    title = f"Results: {system} (mode {mode}, judge {judge}); accuracy % [95% bootstrap interval]"
    return "\n".join([title, line(head), *[line(r) for r in rows]])


# ----------------------------------------------------------------------------------- the stage
def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    options: ReportSettings = cfg.report
    system, mode, judge = str(cfg.model.name), str(cfg.eval.mode), str(cfg.judge.name)
    source = open_benchmark(cfg, paths)
    questions = source.questions
    ds_hash = source.dataset_hash()
    manifest = evaluate_manifest(paths, system, mode, ds_hash)
    subset = str(manifest.get("subset_name") or "all")
    wanted = subset_ids(subset, source) if subset != "all" else None
    tcfg = cfg.tracking
    n_res, seed = int(tcfg.bootstrap_resamples), int(tcfg.bootstrap_seed)
    by_length = load_verdicts(paths, system, mode, judge)
    built = set(source.lengths())
    for ln in [ln for ln in by_length if ln not in built]:
        log.warning("report: verdicts at %s ignored: the benchmark has no such length", ln)
        del by_length[ln]
    if not by_length:
        raise DataError(f"{paths.verdicts / system / mode}: no verdicts at a length of the benchmark")
    check_view_matches(cfg, paths, list(by_length))  # never log predictions under another config's params
    check_questions(paths, system, mode, judge, by_length, questions)
    requested = [str(x) for x in manifest.get("lengths") or []] or list(by_length)
    lengths = sorted(set(requested) | set(by_length), key=length_tokens)
    bar = tqdm(
        total=len(by_length) + 3,
        desc="report",
        unit="step",
        delay=1.0,  # only when the work takes longer than a second
        disable=None,  # and only on a terminal
        leave=False,
        dynamic_ncols=True,
        mininterval=0.2,
    )
    try:
        ids, cover, per_length = {}, {}, {}
        for ln in lengths:
            ids[ln] = item_ids(source, ln) if ln in built else []
            if wanted is not None:  # a subset run (memory agents): complete when it covers its subset
                ids[ln] = [q for q in ids[ln] if q in wanted]
            cover[ln] = completeness(ids[ln], paths, system, mode, ln, by_length.get(ln, []), manifest, subset)
        for ln, vs in by_length.items():
            bar.set_description_str(f"report: bootstrap {ln}")
            per_length[ln] = system_metrics(questions, vs, n_resamples=n_res, seed=seed)
            bar.update()
        reports = paths.reports
        (reports / "plots").mkdir(parents=True, exist_ok=True)
        # DVC metrics: the current system, per length
        dvc_metrics = {"system": system, "mode": mode, "judge": judge}
        for ln, m in per_length.items():
            keep = [
                "acc",
                "acc_ci_low",
                "acc_ci_high",
                *[f"{c}{suffix}" for c in type_columns(m) for suffix in ("", "_ci_low", "_ci_high")],
                "n",
                "n_failed",
                "refusal_rate",
                "per_answer_acc",
            ]
            dvc_metrics[ln] = {k: m[k] for k in keep if k in m}
            if "refusal_rate" in m:
                dvc_metrics[ln]["answer_coverage"] = round(1.0 - m["refusal_rate"], 6)
            c = cover[ln]
            dvc_metrics[ln] |= {
                "coverage": round(c.coverage, 6),
                "complete": c.complete,
                "failure_rate": round(c.failure_rate, 6),
            }
        dvc_metrics["complete"] = all(cover[ln].complete for ln in lengths)
        transitions = system_transitions(by_length)
        if transitions:
            dvc_metrics["transitions"] = transitions
        write_json(reports / "metrics.json", dvc_metrics)
        lines = ["length,type,accuracy,ci_low,ci_high"]
        for ln, m in per_length.items():
            for key in ["acc", *type_columns(m)]:
                t = "overall" if key == "acc" else key.split("__", 1)[1]
                lines.append(f"{ln},{t},{m[key]:.6f},{m[key + '_ci_low']:.6f},{m[key + '_ci_high']:.6f}")
        (reports / "plots" / "accuracy_by_length.csv").write_text("\n".join(lines) + "\n")
        # DVC-tracked figure: this system only (reproducible)
        bar.set_description_str("report: figures and official files")
        sys_fig = plot_length_curves(
            [{"system": system, "mode": mode, "length": ln, "metrics": m} for ln, m in per_length.items()],
            reports / "plots" / "accuracy_by_length.png",
            mode=mode,
        )
        official = write_official_files(paths, system, mode, by_length)
        write_attribution(paths, system, mode, by_length, questions)  # memory agents: errors by evidence recall
        bar.update()

        # cross-system analyses over every system judged on this build: the verdict archive outside
        # DVC (the workspace holds one system's verdicts at a time after `dvc exp run -S model=...`)
        from memlens.eval.report.crossreport import build_analyses, write_index
        from memlens.eval.results import verdict_archive

        archive = verdict_archive(paths, ds_hash)
        if archive.is_dir():  # what the analyses know of this system: kind, sizes, backbone
            write_card(archive, card_from_config(section(cfg, "model")["model"]))
        labels = labels_dir(paths.cache, ds_hash)
        llm = options.llm_labels
        if llm is not None and mode == "standard":
            bar.set_description_str("report: LLM error labels")
            label_errors(paths, source, system, mode, by_length, labels, llm)
        bar.set_description_str("report: cross-system analyses")
        bundle = build_analyses(
            archive if archive.is_dir() else paths.verdicts,
            reports,
            judge=judge,
            mode="standard",
            questions=questions,
            n_resamples=n_res,
            seed=seed,
            alpha=float(options.alpha),
            hard_threshold=float(options.hard_threshold),
            reference_length=options.hard_reference_length,
            test_direction=options.degradation_test_direction,
            built=source.source if source.kind == "built" else None,
            conf_model_dir=paths.root / "conf" / "model",
            labels_root=labels,
            retention_lengths=options.retention_lengths,
            taxonomy_cache=paths.cache / "taxonomy",
        )
        bar.update()

        bar.set_description_str("report: MLflow")
        note = f"Benchmark `{ds_hash[:12]}`."
        local_rows = [
            {
                "system": system,
                "mode": mode,
                "judge": judge,
                "length": ln,
                "dataset_hash": ds_hash,
                "complete": cover[ln].ranked,
                "scope": cover[ln].scope,
                "failed": cover[ln].judge_failed,
                "metrics": {**child_metrics(m, cover[ln]), **bundle.diagnosis_metrics(system, ln)},
                "tags": _completeness_tags(
                    cover[ln].ranked, cover[ln].flagged, cover[ln].reason, cover[ln].subset, cover[ln].judge_failed
                ),
            }
            for ln, m in per_length.items()
        ]
        tracker, logged = None, None
        if tcfg.enabled:
            from memlens.eval.tracking import Tracker

            tracker = Tracker(paths.root, tcfg, ds_hash)
            ev = evaluation(cfg, paths, source, ds_hash, manifest, per_length, cover, ids, local_rows)
            logged = tracker.log_evaluation(ev)
            rows = tracker.runs(dataset_hash=ds_hash)
            note += f" MLflow experiment `{tracker.experiment_name}` ({len({r['system'] for r in rows})} systems)."
        else:
            rows = local_rows
        bar.update()
    finally:
        bar.close()
    # leaderboard files: every tracked system's complete runs of this benchmark; incomplete ones apart
    board = leaderboard_rows(rows, ds_hash)
    annotate_resolution(board["complete"], paired_outcomes(archive if archive.is_dir() else paths.verdicts))
    write_leaderboard(board, reports, note=note)
    plot_length_curves([r for r in board["complete"] if r["judge"] == judge], reports / "leaderboard_by_length.png")
    index = write_index(
        reports,
        bundle,
        system=system,
        mode=mode,
        judge=judge,
        note=f"{note} Analyses use the verdicts of judge `{judge}` found under data/verdicts/.",
    )
    if tracker is not None and logged is not None:
        shared = [(p, "analysis") for p in bundle.files] + [
            (index, ""),
            (sys_fig, "plots"),
            (reports / "metrics.json", ""),
        ]
        for ln, run_id in logged.children.items():
            own = [
                (paths.predictions / system / mode / f"{ln}.jsonl", None),
                (paths.verdicts / system / mode / f"{ln}.{judge}.jsonl", None),
                (Path(official[ln]["details"]), "judge"),
                (Path(official[ln]["metrics"]), "judge"),
            ]
            tracker.log_artifacts(run_id, [*shared, *own])
        tracker.log_artifacts(logged.parent, [(index, ""), (sys_fig, "plots"), (reports / "metrics.json", "")])
    for ln, m in per_length.items():
        log.info(
            "report %s/%s@%s: acc %.1f%% [%.1f, %.1f] (n=%d)",
            system,
            mode,
            ln,
            100 * m["acc"],
            100 * m["acc_ci_low"],
            100 * m["acc_ci_high"],
            m["n"],
        )
    print(results_table(system, mode, judge, per_length, cover))
    missing = [ln for ln in lengths if ln not in per_length]
    if missing:
        print(f"no verdicts at {', '.join(missing)}: the evaluation is incomplete")
    if logged is not None:
        from memlens.eval.tracking import compare_url

        runs = [logged.children[ln] for ln in per_length]
        print(f"MLflow (make ui): {compare_url(runs, [logged.experiment_id])}")
    log.info("report: %s", index)
