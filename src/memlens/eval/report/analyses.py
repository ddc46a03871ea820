"""Glue from verdict files to the statistics of :mod:`memlens.eval.report.stats`.

Every analysis reads the verdict files present under ``data/verdicts/`` (layout
``<system>/<mode>/<length>.<judge>.jsonl``) and returns plain records (lists of dicts) that the
report layer writes as CSV / Markdown / HTML tables and figures. Nothing here touches MLflow.

* :func:`scan_verdicts` - every verdict file, parsed from its path.
* :func:`load_cube` - outcome matrices ``systems x lengths x questions`` for one judge and mode
  (:class:`OutcomeCube`; NaN = question not judged for that system/length).
* :func:`accuracy_records` - accuracy overall / per type / per subtype with 95% bootstrap CIs
  (paired resampling shared by all systems and lengths).
* :func:`coverage_records` - refusal rate, coverage and per-answer accuracy (Appendix G.3).
* :func:`degradation_records` - exact McNemar per adjacent length transition and type, Bonferroni
  over every transition in the table, churn and reverts (Appendix G.5).
* :func:`jaccard_records` - overlap of correctly answered sets across adjacent lengths vs the
  random baseline (Appendix G.6).
* :func:`spearman_by_length` - cross-type Spearman matrix across systems (Figure 5).
* :func:`hard_questions` - questions solved by < 20% of systems and every system's accuracy on them
  per length (Appendix G.5).
* :func:`agreement_records` - judge vs judge (or LLM vs rules on closed-form task keys): raw
  agreement, Cohen's kappa, FP/FN per task key, model-level Spearman of the two leaderboards.
* :func:`ablation_records` - a system's ``standard`` run vs its ``text_only`` / ``oracle_evidence``
  runs (paired McNemar comparison), overall and per type.

Failed verdicts (``correct`` is None) count as not correct in accuracy-style analyses, as in the
leaderboard (they are reported separately as ``n_failed``), and as missing in judge agreement.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memlens.core.config import length_tokens
from memlens.core.constants import TYPE_ORDER
from memlens.core.errors import DataError
from memlens.core.io import enumerate_jsonl
from memlens.core.schema import TYPE_ABBREV
from memlens.eval.report import stats
from memlens.eval.report.metrics import metric_name, subtype_labels
from memlens.eval.report.power import mde_paired, resolved

__all__ = [
    "CLOSED_FORM_TASK_KEYS",
    "TYPE_ORDER",
    "VerdictFile",
    "OutcomeCube",
    "scan_verdicts",
    "load_cube",
    "accuracy_records",
    "accuracy_rows",
    "coverage_records",
    "degradation_records",
    "jaccard_records",
    "spearman_by_length",
    "hard_questions",
    "agreement_records",
    "ablation_records",
    "judges_present",
]

#: Task keys with a deterministic answer format (the paper's typed-accuracy audit: 7 subtypes).
CLOSED_FORM_TASK_KEYS = (
    "MSR_Counting",
    "MSR_Arithmetic",
    "MSR_YesNo",
    "TR_OrderRanking",
    "TR_DurationComparison",
    "TR_DateExtraction",
    "AR_AnswerRefusal",
)


# --------------------------------------------------------------------------------------- loading
@dataclass(frozen=True)
class VerdictFile:
    system: str
    mode: str
    length: str
    judge: str
    path: Path


def _is_length(name: str) -> bool:
    try:
        length_tokens(name)
        return True
    except Exception:
        return False


def scan_verdicts(verdicts_dir: str | Path) -> list[VerdictFile]:
    """Every ``<system>/<mode>/<length>.<judge>.jsonl`` under ``verdicts_dir`` (sorted)."""
    root = Path(verdicts_dir)
    out = []
    if not root.is_dir():
        return out
    for p in sorted(root.glob("*/*/*.jsonl")):
        stem = p.name[: -len(".jsonl")]
        if "." not in stem:
            continue
        length, judge = stem.split(".", 1)
        if not _is_length(length) or not judge:
            continue
        out.append(VerdictFile(p.parent.parent.name, p.parent.name, length, judge, p))
    return out


def judges_present(files: Iterable[VerdictFile], mode: str | None = None) -> list[str]:
    return sorted({f.judge for f in files if mode is None or f.mode == mode})


_FIELDS = ("question_id", "question_type", "question_subtype", "task_key", "correct", "abstained")


def _read_rows(path: Path) -> list[dict]:
    """The fields the analyses need of every verdict in a file."""
    rows = []
    for i, r in enumerate_jsonl(path):
        if not isinstance(r, dict) or "question_id" not in r:
            raise DataError(f"{path}:{i}: not a verdict (no question_id)")
        rows.append({k: r.get(k) for k in _FIELDS})
    return rows


def _length_sorted(names: Iterable[str]) -> list[str]:
    return sorted(set(names), key=length_tokens)


@dataclass
class OutcomeCube:
    """Per-question outcomes of several systems at several lengths, for one judge and one mode.

    ``correct``, ``abstained`` and ``failed`` have shape ``(S, L, Q)``; ``correct`` and
    ``abstained`` are float (1/0, NaN = not judged), ``failed`` is bool. ``types`` holds the type
    abbreviation (IE, MSR, ...) of each question, ``subtypes`` ``"<TYPE>/<subtype>"`` for types
    with more than one subtype ("" otherwise), ``task_keys`` the judge routing key.
    """

    judge: str
    mode: str
    systems: list[str]
    lengths: list[str]
    question_ids: list[str]
    types: list[str]
    subtypes: list[str]
    task_keys: list[str]
    correct: np.ndarray
    abstained: np.ndarray
    failed: np.ndarray

    @property
    def observed(self) -> np.ndarray:
        return ~np.isnan(self.correct)

    def system_index(self, system: str) -> int:
        return self.systems.index(system)

    def by_length(self, system: str) -> dict[str, np.ndarray]:
        """``{length: (Q,) outcomes}`` of one system over the lengths it was judged at."""
        s = self.system_index(system)
        return {ln: self.correct[s, j] for j, ln in enumerate(self.lengths) if self.observed[s, j].any()}


def load_cube(
    verdicts_dir: str | Path,
    judge: str,
    mode: str = "standard",
    *,
    systems: Sequence[str] | None = None,
    lengths: Sequence[str] | None = None,
    files: Sequence[VerdictFile] | None = None,
    failed_as: str = "zero",
) -> OutcomeCube:
    """Outcome matrices for ``judge`` and ``mode`` from every matching verdict file.

    ``failed_as="zero"`` counts a failed verdict as not correct (leaderboard convention);
    ``"missing"`` leaves it NaN. Raises :class:`DataError` when no file matches.
    """
    if failed_as not in ("zero", "missing"):
        raise ValueError("failed_as must be 'zero' or 'missing'")
    files = scan_verdicts(verdicts_dir) if files is None else list(files)
    sel = [
        f
        for f in files
        if f.judge == judge
        and f.mode == mode
        and (systems is None or f.system in systems)
        and (lengths is None or f.length in lengths)
    ]
    if not sel:
        raise DataError(f"{verdicts_dir}: no verdict files of judge {judge!r} in mode {mode!r}")
    found = {f.system for f in sel}
    sys_names = sorted(found) if systems is None else [s for s in systems if s in found]
    len_names = _length_sorted(f.length for f in sel)
    data: dict[tuple[str, str], list[dict]] = {(f.system, f.length): _read_rows(f.path) for f in sel}
    meta: dict[str, tuple[str, str, str]] = {}
    for rows in data.values():
        for r in rows:
            qid = r["question_id"]
            if qid not in meta:
                qt = r.get("question_type", "")
                meta[qid] = (TYPE_ABBREV.get(qt, qt), r.get("question_subtype") or "", r.get("task_key") or "")
            elif not meta[qid][2] and r.get("task_key"):
                meta[qid] = (*meta[qid][:2], r["task_key"])
    qids = sorted(meta)
    qpos = {q: i for i, q in enumerate(qids)}
    S, L, Q = len(sys_names), len(len_names), len(qids)
    correct = np.full((S, L, Q), np.nan)
    abstained = np.full((S, L, Q), np.nan)
    failed = np.zeros((S, L, Q), dtype=bool)
    for (system, length), rows in data.items():
        s, j = sys_names.index(system), len_names.index(length)
        for r in rows:
            q = qpos[r["question_id"]]
            c = r.get("correct")
            if c is None:
                failed[s, j, q] = True
                correct[s, j, q] = 0.0 if failed_as == "zero" else np.nan
            else:
                correct[s, j, q] = 1.0 if c else 0.0
            abstained[s, j, q] = 1.0 if r.get("abstained") else 0.0
    types = [meta[q][0] for q in qids]
    raw_sub = [meta[q][1] for q in qids]
    return OutcomeCube(
        judge=judge,
        mode=mode,
        systems=sys_names,
        lengths=len_names,
        question_ids=qids,
        types=types,
        subtypes=subtype_labels(types, raw_sub),
        task_keys=[meta[q][2] for q in qids],
        correct=correct,
        abstained=abstained,
        failed=failed,
    )


def _type_order(types: Iterable[str]) -> list[str]:
    present = set(types)
    return [t for t in TYPE_ORDER if t in present] + sorted(present - set(TYPE_ORDER))


def _f(x: Any) -> float | None:
    """JSON/CSV-friendly float: None for NaN."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


# --------------------------------------------------------------------------------------- accuracy
def accuracy_records(
    cube: OutcomeCube, *, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> list[dict]:
    """One record per (system, length, column): ``acc``, ``ci_low``, ``ci_high``, ``n``, ``n_failed``.

    Columns: ``overall``, each type (``IE`` ...), each subtype (``MSR/counting`` ...). Cells a system
    was not judged at are left out.
    """
    res = stats.bootstrap_ci_matrix(
        cube.correct,
        {"type": cube.types, "subtype": cube.subtypes},
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
    )
    cols = [c if c == "overall" else c.split(":", 1)[1] for c in res.columns]
    order = ["overall", *_type_order(cube.types), *sorted(c for c in cols if "/" in c)]
    idx = {c: cols.index(c) for c in order}
    members = {}
    for c in order:
        if c == "overall":
            members[c] = np.ones(len(cube.types), dtype=bool)
        elif "/" in c:
            members[c] = np.array([s == c for s in cube.subtypes], dtype=bool)
        else:
            members[c] = np.array([t == c for t in cube.types], dtype=bool)
    out = []
    for s, system in enumerate(cube.systems):
        for j, length in enumerate(cube.lengths):
            if not cube.observed[s, j].any():
                continue
            for c in order:
                k = idx[c]
                n = int(res.n[s, j, k])
                if n == 0:
                    continue
                out.append(
                    {
                        "system": system,
                        "length": length,
                        "column": c,
                        "acc": _f(res.mean[s, j, k]),
                        "ci_low": _f(res.low[s, j, k]),
                        "ci_high": _f(res.high[s, j, k]),
                        "n": n,
                        "n_failed": int((cube.failed[s, j] & members[c]).sum()),
                    }
                )
    return out


def accuracy_rows(records: list[dict], mode: str = "standard") -> list[dict]:
    """Accuracy records in the leaderboard / plot row shape
    ``{"system", "mode", "length", "metrics": {"acc", "acc_ci_low", "acc__IE", ...}}``."""
    rows: dict[tuple[str, str], dict] = {}
    for r in records:
        key = (r["system"], r["length"])
        m = rows.setdefault(key, {"system": r["system"], "mode": mode, "length": r["length"], "metrics": {}})["metrics"]
        name = metric_name(r["column"])
        m[name] = r["acc"]
        m[f"{name}_ci_low"] = r["ci_low"]
        m[f"{name}_ci_high"] = r["ci_high"]
        if r["column"] == "overall":
            m["n"] = r["n"]
            m["n_failed"] = r["n_failed"]
    return list(rows.values())


def coverage_records(cube: OutcomeCube) -> list[dict]:
    """Refusal rate / coverage / per-answer accuracy per (system, length) (Table 17 style)."""
    answerable = np.array([t != "AR" for t in cube.types])
    out = []
    for s, system in enumerate(cube.systems):
        for j, length in enumerate(cube.lengths):
            obs = cube.observed[s, j]
            if not obs.any():
                continue
            c = cube.correct[s, j, obs].astype(bool)
            a = cube.abstained[s, j, obs].astype(bool)
            cov = stats.coverage_accuracy(c, a, answerable[obs])
            out.append(
                {
                    "system": system,
                    "length": length,
                    "n": int(obs.sum()),
                    "accuracy": _f(c.mean()),
                    "n_answerable": int(cov["n_answerable"]),
                    "refusal_rate": _f(cov["refusal_rate"]),
                    "coverage": _f(cov["coverage"]),
                    "per_answer_accuracy": _f(cov["per_answer_accuracy"]),
                    "accuracy_answerable": _f(cov["accuracy_answerable"]),
                    "abstention_rate_unanswerable": _f(cov["abstention_rate_unanswerable"]),
                }
            )
    return out


# --------------------------------------------------------------------------------------- lengths
def degradation_records(cube: OutcomeCube, *, alpha: float = 0.05, test_direction: str = "any") -> list[dict]:
    """McNemar exact tests on every adjacent length transition, per system and type (+ overall).

    The Bonferroni family is every tested transition in the returned table (all systems, groups
    and transitions), as in the paper's correction across all scanned transitions. Adds
    ``system``, ``churn = (b01 + b10) / n``, ``mde`` (the paired minimum detectable effect at 80%
    power for this n and discordance, :func:`memlens.eval.report.power.mde_paired`; None when none
    is detectable) and ``resolved`` (``|delta| >= mde``) to the records of
    :func:`memlens.eval.report.stats.length_degradation`.
    """
    per_system = {}
    for system in cube.systems:
        by_len = cube.by_length(system)
        if len(by_len) < 2:
            continue
        per_system[system] = by_len
    if not per_system:
        return []

    def run(n_tests: int | None) -> list[dict]:
        out = []
        for system, by_len in per_system.items():
            recs = stats.length_degradation(
                by_len,
                labels=cube.types,
                include_overall=True,
                alpha=alpha,
                test_direction=test_direction,
                n_tests=n_tests,
            )
            for r in recs:
                flips = r["b01"] + r["b10"]
                out.append({"system": system, **r, "churn": flips / r["n"] if r["n"] else None})
        return out

    first = run(None)
    n_tested = sum(1 for r in first if r["tested"])
    recs = run(max(1, n_tested))
    for r in recs:  # resolution: the paired minimum detectable effect (80% power) of this transition
        r["mde"] = mde_paired(r["n"], (r["b01"] + r["b10"]) / r["n"], alpha=alpha) if r["n"] else None
        r["resolved"] = resolved(r["delta"], r["mde"])
    order = {g: i for i, g in enumerate(["overall", *TYPE_ORDER])}
    recs.sort(key=lambda r: (r["system"], order.get(r["group"], 99), length_tokens(r["from"])))
    return [{k: (_f(v) if isinstance(v, float) else v) for k, v in r.items()} for r in recs]


def jaccard_records(cube: OutcomeCube, *, method: str = "exact") -> list[dict]:
    """Jaccard stability of correctly answered sets over adjacent lengths, per system."""
    out = []
    for system in cube.systems:
        by_len = cube.by_length(system)
        if len(by_len) < 2:
            continue
        for r in stats.jaccard_stability(by_len, method=method):
            out.append({"system": system, **{k: (_f(v) if isinstance(v, float) else v) for k, v in r.items()}})
    return out


# --------------------------------------------------------------------------------------- systems
def _type_accuracy(cube: OutcomeCube, j: int) -> tuple[list[str], list[str], np.ndarray]:
    """(systems observed at length j with every type, types, accuracy matrix S' x T)."""
    types = _type_order(cube.types)
    tarr = np.array(cube.types)
    rows, names = [], []
    for s, system in enumerate(cube.systems):
        x = cube.correct[s, j]
        accs = []
        for t in types:
            v = x[tarr == t]
            v = v[~np.isnan(v)]
            accs.append(v.mean() if v.size else np.nan)
        if not np.isnan(accs).any():
            rows.append(accs)
            names.append(system)
    return names, types, np.array(rows, dtype=float).reshape(len(rows), len(types))


def spearman_by_length(cube: OutcomeCube, *, min_systems: int = 3) -> dict[str, dict]:
    """Cross-type Spearman matrix across systems at every length with at least ``min_systems``
    systems judged on every type: ``{length: {"types", "rho", "p", "systems"}}`` (lists)."""
    out = {}
    for j, length in enumerate(cube.lengths):
        names, types, acc = _type_accuracy(cube, j)
        if len(names) < max(3, min_systems) or len(types) < 2:
            continue
        rho, p = stats.spearman_matrix(acc, types)
        out[length] = {"types": types, "systems": names, "rho": rho.tolist(), "p": p.tolist(), "n_systems": len(names)}
    return out


def hard_questions(
    cube: OutcomeCube, *, threshold: float = 0.2, reference_length: str | None = None, min_systems: int = 3
) -> dict[str, Any]:
    """Questions solved by fewer than ``threshold`` of the systems at ``reference_length``
    (default: the shortest length) and every system's accuracy on them at each length.

    Returns ``{"reference_length", "threshold", "n_systems", "n_hard", "by_type": {type: n},
    "question_ids", "rows": [{"system", "length", "n", "acc"}], "mean_by_length": {length: acc}}``;
    ``n_hard`` is None when fewer than ``min_systems`` systems were judged at that length.
    """
    if not cube.lengths:
        return {}
    ref = str(reference_length or cube.lengths[0])
    seen = (
        cube.observed[:, cube.lengths.index(ref)].any(axis=1)
        if ref in cube.lengths
        else np.zeros(len(cube.systems), dtype=bool)
    )
    j0 = cube.lengths.index(ref) if ref in cube.lengths else 0
    base = {"reference_length": ref, "threshold": threshold, "n_systems": int(seen.sum())}
    if seen.sum() < min_systems:
        return {**base, "n_hard": None, "by_type": {}, "question_ids": [], "rows": [], "mean_by_length": {}}
    mask = stats.hard_questions(cube.correct[seen, j0], threshold=threshold)
    by_type = {t: int(sum(1 for q, m in zip(cube.types, mask) if m and q == t)) for t in _type_order(cube.types)}
    rows, means = [], {}
    for j, length in enumerate(cube.lengths):
        accs = []
        for s, system in enumerate(cube.systems):
            x = cube.correct[s, j]
            sel = mask & ~np.isnan(x)
            if not sel.any():
                continue
            acc = float(x[sel].mean())
            accs.append(acc)
            rows.append({"system": system, "length": length, "n": int(sel.sum()), "acc": acc})
        if accs:
            means[length] = float(np.mean(accs))
    return {
        **base,
        "n_hard": int(mask.sum()),
        "by_type": by_type,
        "question_ids": [q for q, m in zip(cube.question_ids, mask) if m],
        "rows": rows,
        "mean_by_length": means,
    }


# --------------------------------------------------------------------------------------- judges
def agreement_records(
    verdicts_dir: str | Path,
    judge: str,
    reference: str,
    mode: str = "standard",
    *,
    task_keys: Sequence[str] | None = None,
    files: Sequence[VerdictFile] | None = None,
) -> dict[str, Any]:
    """Agreement of ``judge`` with ``reference`` on the items both judged (failures dropped).

    ``task_keys`` restricts the items (e.g. :data:`CLOSED_FORM_TASK_KEYS` for the LLM-vs-rules
    audit). Returns ``{"judge", "reference", "task_keys", "rows": [{"group", n, agreement, kappa,
    n_fp, n_fn, fp_rate, fn_rate, fp_share, fn_share, ...}], "by_length": [...],
    "leaderboard_spearman": [{"length", "rho", "p", "n_systems"}]}``; rows start with ``overall``
    then one row per task key; ``by_length`` rows are named ``length <name>``. ``n_fp``: the judge
    says correct, the reference says wrong.
    """
    files = scan_verdicts(verdicts_dir) if files is None else list(files)
    a = load_cube(verdicts_dir, judge, mode, files=files, failed_as="missing")
    b = load_cube(verdicts_dir, reference, mode, files=files, failed_as="missing")
    systems = [s for s in a.systems if s in b.systems]
    lengths = [ln for ln in a.lengths if ln in b.lengths]
    qids = sorted(set(a.question_ids) & set(b.question_ids))
    empty = {
        "judge": judge,
        "reference": reference,
        "mode": mode,
        "task_keys": list(task_keys) if task_keys else None,
        "rows": [],
        "by_length": [],
        "leaderboard_spearman": [],
    }
    if not systems or not lengths or not qids:
        return empty
    ia = np.array([a.question_ids.index(q) for q in qids])
    ib = np.array([b.question_ids.index(q) for q in qids])
    keys = [b.task_keys[i] or a.task_keys[j] for i, j in zip(ib, ia)]
    keep = np.array([task_keys is None or k in task_keys for k in keys])
    if not keep.any():
        return empty
    sa = [a.systems.index(s) for s in systems]
    sb = [b.systems.index(s) for s in systems]
    la = [a.lengths.index(ln) for ln in lengths]
    lb = [b.lengths.index(ln) for ln in lengths]
    A = a.correct[np.ix_(sa, la, ia[keep])]  # (S, L, Q')
    B = b.correct[np.ix_(sb, lb, ib[keep])]
    kq = np.array(keys)[keep]
    both = ~(np.isnan(A) | np.isnan(B))
    if not both.any():
        return empty

    def row(group: str, m: np.ndarray) -> dict:
        r = stats.agreement(A[m], B[m])
        return {"group": group, **{k: (_f(v) if isinstance(v, float) else v) for k, v in r.items()}}

    rows = [row("overall", both)]
    key_grid = np.broadcast_to(kq, A.shape)
    for k in sorted(set(kq.tolist())):
        m = both & (key_grid == k)
        if m.any():
            rows.append(row(k, m))
    by_length, spear = [], []
    for j, length in enumerate(lengths):
        m = both[:, j]
        if not m.any():
            continue
        mj = np.zeros_like(both)
        mj[:, j] = both[:, j]
        by_length.append({**row(f"length {length}", mj), "length": length})
        # leaderboard of each judge on the compared items: systems with items at this length
        acc_a, acc_b = [], []
        for s in range(len(systems)):
            ms = both[s, j]
            if ms.any():
                acc_a.append(A[s, j][ms].mean())
                acc_b.append(B[s, j][ms].mean())
        rho, p = stats.leaderboard_spearman(acc_a, acc_b) if len(acc_a) >= 3 else (math.nan, math.nan)
        spear.append({"length": length, "n_systems": len(acc_a), "rho": _f(rho), "p": _f(p)})
    return {**empty, "rows": rows, "by_length": by_length, "leaderboard_spearman": spear, "systems": systems}


# --------------------------------------------------------------------------------------- ablations
def ablation_records(
    verdicts_dir: str | Path,
    judge: str,
    *,
    base: str = "standard",
    variants: Sequence[str] = ("text_only", "oracle_evidence"),
    subsets: Mapping[str, set[str]] | None = None,
    files: Sequence[VerdictFile] | None = None,
) -> list[dict]:
    """Paired comparison of each system's ``base`` run with its ``variants`` at the same length.

    One record per (system, variant, length, subset, group) where both runs exist, with
    ``n, acc_base, acc_variant, delta, b01, b10, p_value`` (exact McNemar). ``subsets`` maps a
    name to a set of question ids (e.g. ``{"image_essential": {...}}``); ``all`` is always there.
    Groups: ``overall`` and each type.
    """
    files = scan_verdicts(verdicts_dir) if files is None else list(files)
    have = {(f.system, f.mode, f.length) for f in files if f.judge == judge}
    out = []
    for variant in variants:
        pairs = sorted({(s, ln) for (s, m, ln) in have if m == variant and (s, base, ln) in have})
        if not pairs:
            continue
        systems = sorted({s for s, _ in pairs})
        cb = load_cube(verdicts_dir, judge, base, systems=systems, files=files)
        cv = load_cube(verdicts_dir, judge, variant, systems=systems, files=files)
        qids = sorted(set(cb.question_ids) & set(cv.question_ids))
        ib = np.array([cb.question_ids.index(q) for q in qids], dtype=int)
        iv = np.array([cv.question_ids.index(q) for q in qids], dtype=int)
        types = np.array([cb.types[i] for i in ib])
        subs = {"all": np.ones(len(qids), dtype=bool)}
        for name, ids in (subsets or {}).items():
            subs[name] = np.array([q in ids for q in qids], dtype=bool)
        for system, length in sorted(pairs, key=lambda t: (t[0], length_tokens(t[1]))):
            xb = cb.correct[cb.system_index(system), cb.lengths.index(length)][ib]
            xv = cv.correct[cv.system_index(system), cv.lengths.index(length)][iv]
            for sub_name, sm in subs.items():
                groups = [("overall", sm)] + [(t, sm & (types == t)) for t in _type_order(types.tolist())]
                for g, m in groups:
                    if not m.any():
                        continue
                    r = stats.paired_comparison(xb[m], xv[m])
                    if r["n"] == 0:
                        continue
                    out.append(
                        {
                            "system": system,
                            "variant": variant,
                            "length": length,
                            "subset": sub_name,
                            "group": g,
                            **{k: (_f(v) if isinstance(v, float) else v) for k, v in r.items()},
                        }
                    )
    return out
