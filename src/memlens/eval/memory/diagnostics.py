"""Offline diagnostics of memory stores: retrieval quality, storage fidelity, retrieval attribution.

These are graders, not systems: they read the benchmark's answer key (evidence flags, image ground
truth, answer derivations), which no agent ever sees.

- **Retrieval** (:func:`retrieval_metrics`): for a question, the ranked session ids a retriever
  returns over the question's history (its images replaced by an adapter's texts) against the
  evidence sessions: recall@k (share of evidence sessions in the top k), NDCG@10 (binary gains),
  MRR (1 / rank of the first evidence session; 0 when none is returned). Questions without
  evidence (answer refusal) are not scored.
- **Storage fidelity** (:func:`answer_critical_facts`, :func:`fact_present`): the answer-critical
  facts of a question are the values its derivation (:mod:`memlens.construction.abilities.derive`) reads
  from each evidence image's ground truth (``get`` and ``format`` leaves; a truth key ``k`` with a
  ``k_printed`` sibling also accepts the printed form, e.g. ``2024-10-03`` for ``2024/10/03``).
  Fidelity of an adapter = the share of those facts present in the text it stored for that image
  (NFKC, case-folded; values of 4+ characters match ignoring whitespace, shorter ones must stand
  as a whole token).
- **Retrieval attribution** (:func:`attribution`): for an agent run, each wrong answer is split by
  the evidence recall of what the agent reported retrieving (prediction ``meta["retrieved"]``: a
  list of ``{"session_id", "score"}``): recall < 0.5 is a retrieval error, >= 0.5 an error after
  retrieval (perception or reasoning), as in the paper's Fig. 19 but for every agent.
"""

from __future__ import annotations

import contextlib
import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

KS = (1, 3, 5, 10)
ATTRIBUTION_THRESHOLD = 0.5


# -------------------------------------------------------------------------------------- retrieval
def retrieval_metrics(ranked: Sequence[str], evidence: Iterable[str], ks: Sequence[int] = KS) -> dict[str, float]:
    """recall@k for each k, ``ndcg@10`` and ``mrr`` of a session ranking against evidence sessions."""
    ev = set(evidence)
    if not ev:
        raise ValueError("retrieval metrics need at least one evidence session")
    ranked = list(dict.fromkeys(ranked))  # a session counts once, at its best rank
    out = {f"recall@{k}": len(ev & set(ranked[:k])) / len(ev) for k in ks}
    dcg = sum(1.0 / math.log2(i + 2) for i, s in enumerate(ranked[:10]) if s in ev)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(ev), 10)))
    out["ndcg@10"] = dcg / idcg
    first = next((i for i, s in enumerate(ranked) if s in ev), None)
    out["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


def mean_rows(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    keys = [k for k in rows[0] if isinstance(rows[0][k], (int, float))] if rows else []
    return {k: sum(r[k] for r in rows) / len(rows) for k in keys}


# ------------------------------------------------------------------------------------------ facts
def _leaves(prog: Any, out: list[tuple[int, str, Any]]) -> None:
    """(image index, op, program) of every truth read in a derivation."""
    if isinstance(prog, dict):
        if prog.get("op") in ("get", "format") and "img" in prog:
            out.append((int(prog["img"]), prog["op"], prog))
            return
        for v in prog.values():
            _leaves(v, out)
    elif isinstance(prog, list):
        for v in prog:
            _leaves(v, out)


def _read(truth: Any, path: Sequence) -> Any:
    v = truth
    for k in path:
        v = v[k]
    return v


def _scalars(v: Any) -> list[str]:
    if isinstance(v, bool) or v is None:
        return []
    if isinstance(v, (str, int, float)):
        s = str(v).strip()
        return [s] if s else []
    return []


def answer_critical_facts(
    derivation: dict | None, image_ids: Sequence[str], truth_of: Callable[[str], dict | None]
) -> dict[str, list[tuple[str, ...]]]:
    """Image id -> its answer-critical facts; each fact is a tuple of accepted forms (the value
    first, then e.g. its printed form). Reads of missing truth are skipped."""
    leaves: list[tuple[int, str, Any]] = []
    _leaves(derivation or {}, leaves)
    out: dict[str, list[tuple[str, ...]]] = {}
    for img, op, prog in leaves:
        if img >= len(image_ids):
            continue
        sha = image_ids[img]
        truth = truth_of(sha)
        if truth is None:
            continue
        path = list(prog.get("path", []))
        try:
            value = _read(truth, path)
        except (KeyError, IndexError, TypeError):
            continue
        if op == "format":
            try:
                forms = [str(prog["template"]).format(**value)]
            except (KeyError, IndexError, TypeError, ValueError):
                continue
        else:
            forms = _scalars(value)
            if path and isinstance(path[-1], str):
                with contextlib.suppress(KeyError, IndexError, TypeError):
                    forms += _scalars(_read(truth, [*path[:-1], f"{path[-1]}_printed"]))
        forms = list(dict.fromkeys(forms))
        if forms and tuple(forms) not in out.setdefault(sha, []):
            out[sha].append(tuple(forms))
    return out


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", str(text)).casefold().split())


def fact_present(forms: Sequence[str], stored: str) -> bool:
    """Whether any form of a fact occurs in a stored text (see the module docstring)."""
    text = normalise(stored)
    squeezed = text.replace(" ", "")
    for f in forms:
        f = normalise(f)
        if not f:
            continue
        if len(f.replace(" ", "")) >= 4:
            if f.replace(" ", "") in squeezed:
                return True
        elif re.search(rf"(?<![0-9a-z]){re.escape(f)}(?![0-9a-z])", text):
            return True
    return False


def fidelity(
    facts: Mapping[str, Sequence[tuple[str, ...]]], stored: Mapping[str, str]
) -> tuple[int, int, list[dict[str, Any]]]:
    """(facts present, facts, per-fact detail) of one question's facts in the stored texts."""
    present, total, detail = 0, 0, []
    for sha in sorted(facts):
        text = stored.get(sha, "")
        for forms in facts[sha]:
            ok = fact_present(forms, text)
            present += ok
            total += 1
            detail.append({"image": sha, "fact": forms[0], "present": ok})
    return present, total, detail


# ------------------------------------------------------------------------------------ attribution
def retrieved_sessions(meta: Mapping[str, Any] | None) -> list[str] | None:
    """The session ids an agent reported retrieving (``meta["retrieved"]``), or None when it did not."""
    if not meta or "retrieved" not in meta:
        return None
    out = []
    for r in meta["retrieved"] or []:
        sid = r.get("session_id") if isinstance(r, Mapping) else r
        if isinstance(sid, str):
            out.append(sid)
    return list(dict.fromkeys(out))


def attribution(
    predictions: Iterable, verdicts: Iterable, evidence_of: Callable[[str], Sequence[str]]
) -> dict[str, Any]:
    """Errors split by evidence recall of the retrieved sessions (< 0.5: retrieval; >= 0.5: after
    retrieval). ``predictions``/``verdicts``: records with ``question_id`` (and ``meta`` /
    ``correct``, ``question_type``); ``evidence_of``: question id -> evidence session ids.
    Questions without evidence, without a verdict or whose prediction reports no retrieval are
    counted apart (``n_unscored``)."""
    meta = {p.question_id: p.meta for p in predictions}
    by_type: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    totals: dict[str, float] = defaultdict(float)
    recalls: list[float] = []
    for v in verdicts:
        ev = set(evidence_of(v.question_id))
        got = retrieved_sessions(meta.get(v.question_id))
        if not ev or got is None or v.correct is None:
            totals["n_unscored"] += 1
            continue
        recall = len(ev & set(got)) / len(ev)
        recalls.append(recall)
        for agg in (totals, by_type[v.question_type]):
            agg["n"] += 1
            agg["recall_sum"] += recall
            if not v.correct:
                agg["errors"] += 1
                agg["retrieval_errors" if recall < ATTRIBUTION_THRESHOLD else "post_retrieval_errors"] += 1

    def finish(a: Mapping[str, float]) -> dict[str, Any]:
        n, err = int(a.get("n", 0)), int(a.get("errors", 0))
        r_err = int(a.get("retrieval_errors", 0))
        return {
            "n": n,
            "errors": err,
            "retrieval_errors": r_err,
            "post_retrieval_errors": int(a.get("post_retrieval_errors", 0)),
            "retrieval_error_share": r_err / err if err else None,
            "mean_evidence_recall": a.get("recall_sum", 0.0) / n if n else None,
        }

    out = finish(totals)
    out["n_unscored"] = int(totals.get("n_unscored", 0))
    out["threshold"] = ATTRIBUTION_THRESHOLD
    out["per_type"] = {t: finish(a) for t, a in sorted(by_type.items())}
    return out
