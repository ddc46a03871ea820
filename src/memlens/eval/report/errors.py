"""The wrong answers of every system traced with the exact taxonomy, and their breakdowns.

* :func:`trace_errors` - every wrong verdict of one judge and mode under the verdict folder,
  traced by :func:`memlens.eval.report.taxonomy.classify` against the built benchmark's ground truth:
  one row per wrong answer (system, length, question, type, subtype, source, label, group,
  modality, the committed value and where it was found).
* :func:`taxonomy_records` - label and group shares per system (and over all systems), length and
  type / subtype / overall.
* :func:`taxonomy_shift` - how each label's share moves from the shortest to the longest length
  (paper: "unsupported" +10.23 points from 32K to 128K).
* :func:`modality_records` - Visual / Reasoning / Mixed shares of the errors per type and length.

The committed value of a verdict is its ``parsed`` field (the judge's parse); a verdict without one
(the LLM judge) takes the parse of the deterministic verdict of the same answer (same
``request_key``) when one exists beside it.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from memlens.core.config import length_tokens
from memlens.core.constants import TYPE_ORDER
from memlens.core.io import enumerate_jsonl, read_json, write_json
from memlens.core.schema import TYPE_ABBREV
from memlens.eval.report.analyses import VerdictFile, scan_verdicts
from memlens.eval.report.metrics import subtype_labels
from memlens.eval.report.taxonomy import (
    GROUPS,
    LABELS,
    MODALITIES,
    NEAR_MISS,
    TOTAL_MISS,
    UNTRACEABLE,
    classify,
    commitment_of,
    substituted,
)
from memlens.eval.report.trace import Ground, HistoryIndex

__all__ = [
    "trace_errors",
    "taxonomy_records",
    "taxonomy_shift",
    "modality_records",
    "ALL_SYSTEMS",
    "GROUPS",
    "history_index",
]

ALL_SYSTEMS = "all systems"


def _rows(path: Path) -> list[dict]:
    return [r for _, r in enumerate_jsonl(path) if isinstance(r, dict) and "question_id" in r]


def history_index(question, instance, ground: Ground, sessions: dict) -> HistoryIndex:
    """The :class:`HistoryIndex` of ``question`` at the length of ``instance`` (its history)."""
    ev_sessions = set(question.evidence_session_ids)
    evidence = [str(i) for i in (question.details.get("image_ids") or question.evidence_image_ids)]
    ev_set = set(evidence)
    others, seen = [], set()
    for sid in instance.session_ids:
        s = sessions.get(sid)
        for img in s.image_ids if s is not None else []:
            if img not in ev_set and img not in seen:
                seen.add(img)
                others.append(img)
    return HistoryIndex(
        ground=ground,
        evidence_images=evidence,
        other_images=others,
        evidence_sessions=[s for s in instance.session_ids if s in ev_sessions],
        other_sessions=[s for s in instance.session_ids if s not in ev_sessions],
        session_dates=dict(zip(instance.session_ids, instance.dates)),
    )


def _parses(files: list[VerdictFile], mode: str) -> dict[tuple[str, str], dict[str, dict]]:
    """Deterministic verdicts by (system, length) and request key: the parse an LLM verdict lacks."""
    out = {}
    for f in files:
        if f.judge == "deterministic" and f.mode == mode:
            out[(f.system, f.length)] = {r.get("request_key") or r["question_id"]: r for r in _rows(f.path)}
    return out


def trace_errors(
    verdicts_dir: str | Path,
    judge: str,
    built,
    *,
    mode: str = "standard",
    files: list[VerdictFile] | None = None,
    cache_dir: Path | None = None,
) -> tuple[list[dict], list[dict]]:
    """``(errors, totals)``: one row per wrong verdict, and per (system, length) the number of
    verdicts, wrong ones and failed ones. ``built`` is a :class:`memlens.core.items.BuiltBenchmark`.
    ``cache_dir``: each verdict file's rows are kept there under the hash of everything they follow
    from (the file, the deterministic parses it borrows, the benchmark's manifests, the taxonomy's
    code), so a report traces only the files that changed since the last one."""
    files = scan_verdicts(verdicts_dir) if files is None else files
    sel = [f for f in files if f.judge == judge and f.mode == mode]
    if not sel:
        return [], []
    tracer = _Tracer(built, _parses(files, mode) if judge != "deterministic" else {})
    errors, totals = [], []
    for f in sorted(sel, key=lambda f: (f.system, length_tokens(f.length))):
        cached = _cache_path(cache_dir, f, tracer, files, mode) if cache_dir is not None else None
        got = read_json(cached) if cached is not None and cached.is_file() else None
        if not isinstance(got, dict) or "errors" not in got:
            got = tracer.trace(f)
            if cached is not None:
                write_json(cached, got)
        errors += got["errors"]
        totals.append(got["total"])
    return errors, totals


def _digest(*parts: bytes | str) -> str:
    import hashlib

    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p.encode() if isinstance(p, str) else p).digest())
    return h.hexdigest()


def _code_digest() -> str:
    """The source of everything a traced row follows from (the taxonomy, the judge's normalisation,
    the derivations)."""
    import inspect

    from memlens.construction.abilities import derive
    from memlens.eval.judge import deterministic
    from memlens.eval.report import operands, taxonomy, trace

    mods = (derive, deterministic, operands, taxonomy, trace, sys.modules[__name__])
    return _digest(*(Path(inspect.getsourcefile(m)).read_bytes() for m in mods))


def _cache_path(cache_dir: Path, f: VerdictFile, tracer: _Tracer, files: list[VerdictFile], mode: str) -> Path:
    borrowed = [
        g.path.read_bytes()
        for g in files
        if tracer.parses
        and g.judge == "deterministic"
        and g.mode == mode
        and (g.system, g.length) == (f.system, f.length)
    ]
    key = _digest(f.path.read_bytes(), *borrowed, tracer.benchmark_digest(), tracer.code_digest())
    return Path(cache_dir) / f"{key}.json"


class _Tracer:
    """Traces the wrong verdicts of verdict files against one built benchmark (histories, their
    substitution results and the ground's value indexes are shared by every file)."""

    def __init__(self, built, parses: dict):
        self.built, self.parses = built, parses
        self.questions = built.questions
        self._ground: Ground | None = None
        self._instances: dict[str, dict] = {}
        self._histories: dict[tuple[str, str], tuple] = {}
        self._digests: dict[str, str] = {}
        qids = sorted(self.questions)
        types = [TYPE_ABBREV.get(self.questions[q].question_type, self.questions[q].question_type) for q in qids]
        subs = subtype_labels(types, [self.questions[q].question_subtype or "" for q in qids])
        self.sub_of = dict(zip(qids, subs))

    def benchmark_digest(self) -> str:
        if "bench" not in self._digests:
            gen, inst = self.built.paths.generated, self.built.paths.instances
            parts = [p.read_bytes() for p in (gen / "manifest.json", inst / "manifest.json") if p.is_file()]
            self._digests["bench"] = _digest(*parts) if parts else ""
        return self._digests["bench"]

    def code_digest(self) -> str:
        if "code" not in self._digests:
            self._digests["code"] = _code_digest()
        return self._digests["code"]

    def instances(self, length: str) -> dict:
        if length not in self._instances:
            try:
                self._instances[length] = {i.question_id: i for i in self.built.instances(length)}
            except Exception:  # a length the benchmark no longer has: nothing to trace there
                self._instances[length] = {}
        return self._instances[length]

    def history(self, q, length: str):
        inst = self.instances(length).get(q.question_id)
        if inst is None:
            return None, None
        key = (q.question_id, length)
        if key not in self._histories:
            if self._ground is None:
                self._ground = Ground.of_benchmark(self.built)
            h = history_index(q, inst, self._ground, self.built.sessions)
            self._histories[key] = (h, functools.cache(functools.partial(substituted, q, h)))
        return self._histories[key]

    def trace(self, f: VerdictFile) -> dict:
        errors, n, wrong, failed = [], 0, 0, 0
        for r in _rows(f.path):
            q = self.questions.get(r["question_id"])
            if q is None:
                continue
            n += 1
            if r.get("correct") is None:
                failed += 1
                continue
            if r.get("correct"):
                continue
            wrong += 1
            det = self.parses.get((f.system, f.length), {}).get(r.get("request_key") or r["question_id"])
            com = commitment_of(det if (r.get("parsed") is None and det) else r)
            hist, subs = self.history(q, f.length)
            t = classify(q, com, hist, r.get("task_key") or "", substitutions=subs)
            errors.append(
                {
                    "system": f.system,
                    "length": f.length,
                    "question_id": q.question_id,
                    "type": TYPE_ABBREV.get(q.question_type, q.question_type),
                    "subtype": self.sub_of.get(q.question_id, ""),
                    "task_key": r.get("task_key") or "",
                    "request_key": r.get("request_key") or "",
                    "source": t.source,
                    "label": t.label,
                    "group": t.group,
                    "modality": t.modality,
                    "committed": com.value or ("(refusal)" if com.abstained else ""),
                    "matched": t.matched,
                    "where": t.where,
                }
            )
        total = {"system": f.system, "length": f.length, "n": n, "n_wrong": wrong, "n_failed": failed}
        return {"errors": errors, "total": total}


# ------------------------------------------------------------------------------------ breakdowns
def _shares(rows: list[dict]) -> dict[str, Any]:
    n = len(rows)
    labels = Counter(r["label"] for r in rows)
    groups = Counter(r["group"] for r in rows)
    out: dict[str, Any] = {"n_errors": n}
    for lb in (*LABELS, UNTRACEABLE):
        out[f"n_{lb}"] = labels.get(lb, 0)
        out[lb] = labels.get(lb, 0) / n if n else None
    traced = groups.get(NEAR_MISS, 0) + groups.get(TOTAL_MISS, 0)
    out["near_miss"] = groups.get(NEAR_MISS, 0) / traced if traced else None
    out["total_miss"] = groups.get(TOTAL_MISS, 0) / traced if traced else None
    out["untraceable_share"] = groups.get(UNTRACEABLE, 0) / n if n else None
    return out


def _group_key(r: dict, by: str) -> str:
    return "overall" if by == "overall" else (r["type"] if by == "type" else (r["subtype"] or r["type"]))


def taxonomy_records(errors: list[dict], *, pooled: bool = True) -> list[dict]:
    """Label and group shares per (system, length, group) for group = overall, each type, each
    subtype; with ``pooled``, also over all systems together (``system`` = :data:`ALL_SYSTEMS`).
    ``near_miss`` / ``total_miss`` are shares of the traceable errors (the paper's two groups);
    ``untraceable_share`` is the share of all errors that no value can trace (binary flips)."""
    cells: dict[tuple[str, str, str, str], list[dict]] = defaultdict(list)
    for r in errors:
        for by in ("overall", "type", "subtype"):
            g = _group_key(r, by)
            if by == "subtype" and g == r["type"]:
                continue
            cells[(r["system"], r["length"], by, g)].append(r)
            if pooled:
                cells[(ALL_SYSTEMS, r["length"], by, g)].append(r)
    order = {g: i for i, g in enumerate(["overall", *TYPE_ORDER])}
    out = [
        {"system": s, "length": ln, "level": by, "group": g, **_shares(rows)} for (s, ln, by, g), rows in cells.items()
    ]
    out.sort(
        key=lambda r: (
            r["system"] == ALL_SYSTEMS,
            r["system"],
            length_tokens(r["length"]),
            ("overall", "type", "subtype").index(r["level"]),
            order.get(r["group"], 50),
            r["group"],
        )
    )
    return out


def taxonomy_shift(records: list[dict]) -> list[dict]:
    """Per (system, level, group, label): the share at the shortest and the longest length of that
    system and its change in points (the shift of the error distribution with length)."""
    by: dict[tuple[str, str, str], dict[str, dict]] = defaultdict(dict)
    for r in records:
        by[(r["system"], r["level"], r["group"])][r["length"]] = r
    out = []
    for (system, level, group), per in by.items():
        if len(per) < 2:
            continue
        lengths = sorted(per, key=length_tokens)
        a, b = per[lengths[0]], per[lengths[-1]]
        for lb in (*LABELS, UNTRACEABLE, "near_miss", "total_miss"):
            x, y = a.get(lb), b.get(lb)
            if x is None or y is None:
                continue
            out.append(
                {
                    "system": system,
                    "level": level,
                    "group": group,
                    "label": lb,
                    "from": lengths[0],
                    "to": lengths[-1],
                    "share_from": x,
                    "share_to": y,
                    "delta": y - x,
                    "n_from": a["n_errors"],
                    "n_to": b["n_errors"],
                }
            )
    return out


def modality_records(errors: list[dict], *, pooled: bool = True) -> list[dict]:
    """Visual / Reasoning / Mixed shares of the errors of answerable questions per (system,
    length, type) and overall."""
    cells: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for r in errors:
        if not r["modality"]:
            continue
        for s in (r["system"], ALL_SYSTEMS) if pooled else (r["system"],):
            cells[(s, r["length"], r["type"])][r["modality"]] += 1
            cells[(s, r["length"], "overall")][r["modality"]] += 1
    order = {g: i for i, g in enumerate(["overall", *TYPE_ORDER])}
    out = []
    for (s, ln, g), c in cells.items():
        n = sum(c.values())
        out.append(
            {
                "system": s,
                "length": ln,
                "group": g,
                "n_errors": n,
                **{m: c.get(m, 0) / n for m in MODALITIES},
                **{f"n_{m}": c.get(m, 0) for m in MODALITIES},
            }
        )
    out.sort(
        key=lambda r: (r["system"] == ALL_SYSTEMS, r["system"], length_tokens(r["length"]), order.get(r["group"], 50))
    )
    return out
