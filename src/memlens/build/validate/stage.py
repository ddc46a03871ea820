"""validate stage: the benchmark's validity gates. A failed gate fails the pipeline.

- **text leakage**: for every image-essential question, neither the answer nor the abstracted
  entity (its ``forbidden`` strings) occurs in any text of its history, token-bounded (must be 0).
- **answerability**: every answerable question's reference re-derives from the evidence images'
  ground truth through its recorded derivation (must be 100%); a text-only solver that sees the
  history text but no image truth (it searches the evidence sessions for the reference and its
  canonical forms) derives at most ``max_text_only_rate`` (default 2%).
- **indistinguishability**: TF-IDF (1-2-grams, 10,000 features, sublinear tf) logistic regression,
  5-fold cross-validation grouped by question, evidence vs haystack sessions with ``<image>``
  removed: accuracy and ROC-AUC; the gate is AUC <= ``max_auc`` (default 0.60).
- **composition**: counts per type and subtype, tokens per instance, sessions and images per length.
Writes ``reports/validity.json`` and ``reports/validity.md``.
"""

from __future__ import annotations

import logging
import re
from collections import Counter

import numpy as np

from memlens.build.abilities.derive import derive
from memlens.build.text.leakage import PhraseIndex
from memlens.build.text.validators import contains_token_bounded
from memlens.core.config import Paths, length_tokens
from memlens.core.errors import GateError
from memlens.core.io import iter_jsonl, read_records, write_json
from memlens.core.schema import AR, IMAGE_PLACEHOLDER, ImageRecord, Instance, Question, Session

log = logging.getLogger(__name__)


def text_leakage(questions, sessions, instances_by_len) -> dict:
    """Every forbidden string of every question, searched once per distinct session (token index),
    then checked against each instance's history."""
    forb_of = {
        qid: {f for f in q.details.get("forbidden", []) if f and not CLOSED_FORM.match(f.strip())}
        for qid, q in questions.items()
        if q.image_essential or q.question_type == AR
    }
    index = PhraseIndex(f for fs in forb_of.values() for f in fs)
    found = {sid: index.find(s.text.replace(IMAGE_PLACEHOLDER, " ")) for sid, s in sessions.items()} if index else {}
    leaks = []
    checked = 0
    for length, insts in instances_by_len.items():
        for inst in insts:
            forb = forb_of.get(inst.question_id)
            if forb is None:
                continue
            checked += 1
            for sid in inst.session_ids:
                for f in found.get(sid, ()) & forb:
                    leaks.append({"question_id": inst.question_id, "length": length, "session_id": sid, "string": f})
    return {"instances_checked": checked, "leaks": len(leaks), "examples": leaks[:20]}


CLOSED_FORM = re.compile(r"^(A|B|Yes|No|(\(\d+\))+)$")


def _canonical_forms(ans: str) -> list[str]:
    """Text forms of an open-form answer; closed-form answers (A/B, Yes/No, orders) have none:
    their words occur in any text, and only the derivation says whether text alone decides them."""
    if CLOSED_FORM.match(ans.strip()):
        return []
    forms = {ans}
    m = re.fullmatch(r"[$€£¥]?([\d,]+(?:\.\d+)?)(?:\s*[A-Z]{3})?", ans.strip())
    if m:
        num = m.group(1).replace(",", "")
        forms |= {num, num.rstrip("0").rstrip(".") if "." in num else num}
    return [f for f in forms if f]


def _derive(prog, truths, ctx) -> tuple[str | None, str | None]:
    """(derived answer, error): a truth that lacks what the derivation reads is a failed
    derivation of that question, not a crash of the stage."""
    if not prog:
        return None, "no derivation"
    try:
        return derive(prog, truths, ctx), None
    except (KeyError, IndexError, TypeError, ValueError, ArithmeticError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


def answerability(questions, sessions, images: dict[str, ImageRecord]) -> dict:
    answerable = [q for q in questions.values() if q.question_type != AR]
    ok_truth, text_only, failures = 0, 0, []
    for q in answerable:
        prog = q.details.get("derivation")
        ids = q.details.get("image_ids", [])
        truths = [images[i].truth if i in images else None for i in ids]
        ctx = {"evidence_dates": [e.date for e in q.evidence]}
        got, err = _derive(prog, truths, ctx)
        if got is not None and got.strip().lower() == q.answer.strip().lower():
            ok_truth += 1
        else:
            failures.append(
                {"question_id": q.question_id, "reference": q.answer, "derived": got, **({"error": err} if err else {})}
            )
        # text-only solver: no image truth, full evidence text
        ev_text = " ".join(
            sessions[s].text.replace(IMAGE_PLACEHOLDER, " ") for s in q.evidence_session_ids if s in sessions
        )
        no_truth, _ = _derive(prog, [None] * len(ids), ctx)
        if (no_truth is not None and no_truth == q.answer) or any(
            contains_token_bounded(ev_text, f) for f in _canonical_forms(q.answer)
        ):
            text_only += 1
    n = len(answerable)
    return {
        "answerable": n,
        "derivable_with_images": ok_truth,
        "rate_with_images": ok_truth / n if n else 1.0,
        "derivable_text_only": text_only,
        "rate_text_only": text_only / n if n else 0.0,
        "failures": failures[:20],
    }


def indistinguishability(questions, sessions, instances_by_len, seed: int = 0) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, roc_auc_score
    from sklearn.model_selection import GroupKFold

    docs, labels, groups = [], [], []
    # each distinct session once (haystack sessions are shared by many histories; counting them
    # twice would put the same text in train and test folds), grouped by the first question whose
    # history (at the shortest length) holds it; filler sessions are text-only and excluded
    length = min(instances_by_len, key=length_tokens)
    seen: set[str] = set()
    for inst in sorted(instances_by_len[length], key=lambda i: i.question_id):
        ev = set(inst.answer_session_ids)
        for sid in inst.session_ids:
            s = sessions[sid]
            if s.kind == "filler" or sid in seen:
                continue
            seen.add(sid)
            docs.append(" ".join(t.content.replace(IMAGE_PLACEHOLDER, " ") for t in s.turns))
            labels.append(1 if sid in ev else 0)
            groups.append(inst.question_id)
    y = np.array(labels)
    if y.sum() == 0 or y.sum() == len(y):
        return {"n": len(y), "skipped": "needs both evidence and haystack sessions"}
    n_splits = min(5, len(set(groups)))
    probs = np.zeros(len(y))
    for tr, te in GroupKFold(n_splits=n_splits).split(docs, y, groups):
        vec = TfidfVectorizer(ngram_range=(1, 2), max_features=10000, sublinear_tf=True)
        xtr = vec.fit_transform([docs[i] for i in tr])
        if len(set(y[tr])) < 2:
            probs[te] = y[tr].mean()
            continue
        clf = LogisticRegression(max_iter=2000, class_weight="balanced", random_state=seed)
        clf.fit(xtr, y[tr])
        probs[te] = clf.predict_proba(vec.transform([docs[i] for i in te]))[:, 1]
    return {
        "n": int(len(y)),
        "n_evidence": int(y.sum()),
        "folds": n_splits,
        "length": length,
        "accuracy": float(accuracy_score(y, probs >= 0.5)),
        "roc_auc": float(roc_auc_score(y, probs)),
    }


def composition(questions, instances_by_len) -> dict:
    by_sub = Counter(f"{q.question_type}/{q.question_subtype}" for q in questions.values())
    by_type = Counter(q.question_type for q in questions.values())
    lengths = {}
    for ln, insts in instances_by_len.items():
        toks = [i.total_tokens for i in insts]
        lengths[ln] = {
            "instances": len(insts),
            "tokens_min": min(toks),
            "tokens_max": max(toks),
            "tokens_mean": round(float(np.mean(toks)), 1),
            "max_rel_error": round(max(abs(i.total_tokens - i.target_tokens) / i.target_tokens for i in insts), 5),
            "sessions_mean": round(float(np.mean([len(i.session_ids) for i in insts])), 2),
            "images_mean": round(float(np.mean([i.n_images for i in insts])), 2),
        }
    return {
        "questions": len(questions),
        "by_type": dict(sorted(by_type.items())),
        "by_subtype": dict(sorted(by_sub.items())),
        "lengths": lengths,
    }


def render_md(report: dict) -> str:
    g = report["gates"]
    lines = ["# Benchmark validity", "", "| gate | value | threshold | pass |", "|---|---:|---:|:---:|"]
    for name, v in g.items():
        lines.append(f"| {name} | {v['value']} | {v['threshold']} | {'yes' if v['pass'] else '**NO**'} |")
    c = report["composition"]
    lines += ["", f"Questions: {c['questions']}", "", "| type/subtype | n |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in c["by_subtype"].items()]
    lines += [
        "",
        "| length | instances | mean tokens | max rel. error | sessions | images |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for ln, v in c["lengths"].items():
        lines.append(
            f"| {ln} | {v['instances']} | {v['tokens_mean']} | {v['max_rel_error']} | {v['sessions_mean']} | {v['images_mean']} |"
        )
    ind = report["indistinguishability"]
    if "roc_auc" in ind:
        lines += [
            "",
            f"Evidence vs haystack classifier (TF-IDF LR, {ind['folds']}-fold grouped CV, n={ind['n']}): "
            f"accuracy {ind['accuracy']:.3f}, ROC-AUC {ind['roc_auc']:.3f}.",
        ]
    return "\n".join(lines) + "\n"


def run(cfg, paths: Paths) -> None:
    vcfg = cfg.get("validate", {}) or {}
    max_auc = float(vcfg.get("max_auc", 0.60))
    max_text = float(vcfg.get("max_text_only_rate", 0.02))
    questions = {q.question_id: q for q in read_records(paths.generated / "questions.jsonl", Question)}
    sessions = {s.session_id: s for s in read_records(paths.generated / "sessions.jsonl", Session)}
    images = {}
    for row in iter_jsonl(paths.images / "index.jsonl"):
        rec = ImageRecord.from_dict(row["image"])
        images[rec.sha256] = rec
    inst = {p.stem: read_records(p, Instance) for p in sorted(paths.instances.glob("*.jsonl"))}
    leak = text_leakage(questions, sessions, inst)
    ans = answerability(questions, sessions, images)
    ind = indistinguishability(questions, sessions, inst, seed=int(cfg.data.seed))
    comp = composition(questions, inst)
    tol = float(cfg.data.length_tolerance)
    worst = max(v["max_rel_error"] for v in comp["lengths"].values())
    gates = {
        "text_leakage": {"value": leak["leaks"], "threshold": 0, "pass": leak["leaks"] == 0},
        "answerable_with_images": {
            "value": round(ans["rate_with_images"], 4),
            "threshold": 1.0,
            "pass": ans["rate_with_images"] >= 1.0,
        },
        "answerable_text_only": {
            "value": round(ans["rate_text_only"], 4),
            "threshold": max_text,
            "pass": ans["rate_text_only"] <= max_text,
        },
        "indistinguishability_auc": {
            "value": round(ind.get("roc_auc", 0.5), 4),
            "threshold": max_auc,
            "pass": ind.get("roc_auc", 0.5) <= max_auc,
        },
        "length_within_tolerance": {"value": worst, "threshold": tol, "pass": worst <= tol},
    }
    report = {
        "gates": gates,
        "text_leakage": leak,
        "answerability": ans,
        "indistinguishability": ind,
        "composition": comp,
    }
    paths.reports.mkdir(parents=True, exist_ok=True)
    write_json(paths.reports / "validity.json", report)
    (paths.reports / "validity.md").write_text(render_md(report))
    failed = [k for k, v in gates.items() if not v["pass"]]
    for k, v in gates.items():
        log.info("gate %-26s %-8s (threshold %s) %s", k, v["value"], v["threshold"], "ok" if v["pass"] else "FAILED")
    if failed and not bool(vcfg.get("warn_only", False)):
        raise GateError(f"validity gates failed: {', '.join(failed)} (see reports/validity.md)")
