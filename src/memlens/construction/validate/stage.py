"""validate stage: the benchmark's validity gates. A failed gate fails the pipeline.

- **text leakage**: for every image-essential question, neither the answer nor the abstracted
  entity (its ``forbidden`` strings) occurs in any text of its history, token-bounded (must be 0).
- **answerability**: every answerable question's reference re-derives from the evidence images'
  ground truth through its recorded derivation (must be 100%); a text-only solver that sees the
  history text but no image truth (it searches the evidence sessions for the reference and its
  canonical forms) derives at most ``max_text_only_rate`` (default 2%).
- **text-only solvers** (:mod:`.adversaries.textonly`): the best solver's held-out accuracy minus
  chance, per subtype and length and over all answerable questions, at most
  ``max_text_only_excess``; refusal detection's balanced accuracy minus 0.5 at most
  ``max_refusal_detection_excess``.
- **oracle-evidence solvers** (:mod:`.adversaries.oracle`): the question plus the TRUE evidence
  sessions' text and timestamps (no pixels); the best solver's held-out accuracy minus chance per
  subtype at every length at most ``max_oracle_excess``, decided on the real questions of that length
  plus the probe set (:mod:`.adversaries.probe`: ``probe_per_subtype[data.scale]`` extra questions per
  subtype from the generator's code and a derived seed stream, never released; none: real alone).
- **evidence detectors** (:mod:`.adversaries.detectors`): session metadata, session text and image
  metadata, ROC-AUC at most ``max_auc`` for each, at every length.
- **repetition** (:mod:`.adversaries.repetition`): mean share of a history's sentences repeating an
  earlier one at most ``max_repeat_share`` (every length); share of occurrences from sentences used
  ``frequent_uses``+ times at most ``max_frequent_share``.
- **composition**: counts per type and subtype, tokens per instance, sessions and images per length.
- **closed answers** (reported, no gate): per subtype, the answers of A/B, Yes/No and count
  questions, the majority's share and the leave-one-out majority's accuracy.

Noisy gates (accuracies, AUCs) are decided on the one-sided lower ``confidence`` bound of their
figure and only from ``min_questions`` / ``min_evidence`` up (:mod:`.adversaries.stats`).
Writes ``reports/validity.json`` (gates, figures and a flat ``metrics`` map for MLflow) and
``reports/validity.md``.
"""

from __future__ import annotations

import logging
import re
from collections import Counter

import numpy as np

from memlens.construction.abilities.derive import derive
from memlens.construction.text.leakage import PhraseIndex
from memlens.construction.text.validators import contains_token_bounded
from memlens.construction.validate.adversaries import run_all
from memlens.construction.validate.adversaries.data import Bench
from memlens.construction.validate.adversaries.render import figures_md
from memlens.construction.validate.adversaries.stats import auc_lower, verdict, wilson_lower, wilson_upper
from memlens.construction.validate.adversaries.textonly import answer_format, constant_right
from memlens.construction.validate.settings import ValidateSettings
from memlens.core.config import Paths, length_tokens
from memlens.core.errors import GateError
from memlens.core.io import iter_jsonl, read_records, write_json
from memlens.core.schema import AR, IMAGE_PLACEHOLDER, ImageRecord, Instance, Question, Session
from memlens.core.settings import Settings, as_settings

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


def closed_answers(questions) -> dict:
    """Per subtype and closed answer format (A/B, Yes/No, count): how often each answer is the
    reference, the majority answer's share and the accuracy of the leave-one-out majority (each
    question answered with the most frequent answer of the subtype's other questions; ties: the
    first in order). Balanced answers (:mod:`memlens.construction.abilities.balance`) put the
    majority at chance and the leave-one-out majority below it."""
    groups: dict[tuple[str, str], list[str]] = {}
    for q in questions.values():
        if q.question_type == AR:
            continue
        fmt = answer_format(q.answer)
        if fmt in ("ab", "yesno", "count"):
            groups.setdefault((f"{q.question_type}/{q.question_subtype}", fmt), []).append(" ".join(q.answer.split()))
    out = {}
    for (sub, fmt), answers in sorted(groups.items()):
        counts = Counter(answers)
        loo = 0.0
        for a in answers:
            rest = counts.copy()
            rest[a] -= 1
            loo += constant_right(rest, a)
        out[f"{sub}/{fmt}"] = {
            "n": len(answers),
            "answers": dict(sorted(counts.items())),
            "majority_share": round(max(counts.values()) / len(answers), 4),
            "loo_majority_accuracy": round(loo / len(answers), 4),
            "chance": round(1 / len(counts), 4) if fmt != "count" else None,
        }
    return out


def adversary_gates(figs: dict, v: dict) -> dict:
    """The gates decided by the adversaries' figures (see the module docstring)."""
    conf = float(v["confidence"])
    gates = {}
    for ln, res in figs.get("text_only", {}).get("lengths", {}).items():
        for sub, r in res["subtypes"].items():
            n, acc, ch = r["n"], r["best_accuracy"], r["chance"]
            gates[f"text_only/{ln}/{sub}"] = verdict(
                acc - ch, wilson_lower(acc * n, n, conf) - ch, v["max_text_only_excess"], n, v["min_questions"]
            )
        a = res["answerable"]
        gates[f"text_only/{ln}/answerable"] = verdict(
            a["best_accuracy"] - a["chance"],
            wilson_lower(a["best_accuracy"] * a["n"], a["n"], conf) - a["chance"],
            v["max_text_only_excess"],
            a["n"],
            v["min_questions"],
        )
        rd = res["refusal_detection"]
        n_eff = 2 * min(rd["n_refusal"], rd["n"] - rd["n_refusal"])  # balanced accuracy: the smaller class decides
        gates[f"refusal_detection/{ln}"] = verdict(
            rd["balanced_accuracy"] - 0.5,
            wilson_lower(rd["balanced_accuracy"] * n_eff, n_eff, conf) - 0.5,
            v["max_refusal_detection_excess"],
            rd["n_refusal"],
            v["min_questions"],
        )
    for ln, res in (figs.get("oracle") or {}).get("lengths", {}).items():
        decided = res.get("with_probes") or res["subtypes"]
        for sub, r in decided.items():
            n, acc, ch = r["n"], r["best_accuracy"], r["chance"]
            lo = wilson_lower(acc * n, n, conf)
            g = verdict(acc - ch, lo - ch, v["max_oracle_excess"], n, v["min_questions"])
            g["interval"] = [round(lo, 4), round(wilson_upper(acc * n, n, conf), 4)]
            g["decided_on"] = "real+probes" if res.get("with_probes") else "real"
            gates[f"oracle/{ln}/{sub}"] = g
    for ln, dets in figs.get("detectors", {}).items():
        for name, r in dets.items():
            auc = r.get("roc_auc", 0.5)
            n_pos, n_neg = r.get("n_evidence", 0), r.get("n", 0) - r.get("n_evidence", 0)
            gates[f"evidence_auc/{ln}/{name}"] = verdict(
                auc, auc_lower(auc, n_pos, n_neg, conf), v["max_auc"], n_pos if "roc_auc" in r else 0, v["min_evidence"]
            )
    rep = figs.get("repetition")
    if rep:
        for ln, r in rep["lengths"].items():
            gates[f"repetition/{ln}"] = verdict(r["repeat_share_mean"], None, v["max_repeat_share"], r["histories"], 1)
        gates["repetition/frequent_sentences"] = verdict(
            rep["frequent_share"], None, v["max_frequent_share"], rep["sentence_occurrences"], 1
        )
    return gates


def exact_gate(value, threshold, ok: bool) -> dict:
    """A gate on an exact count or rate (no sampling noise): always evaluated."""
    return {
        "value": value,
        "lower_bound": None,
        "threshold": threshold,
        "status": "pass" if ok else "fail",
        "pass": ok,
        "point_over": False,
    }


def metrics(gates: dict) -> dict[str, float]:
    """Flat ``validity/<gate>`` -> value (and ``.../lower_bound``) map for MLflow; stable names."""
    out = {}
    for name, g in gates.items():
        key = "validity/" + name.replace(" ", "_").rstrip("/")
        out[key] = float(g["value"])
        if g.get("lower_bound") is not None:
            out[key + "/lower_bound"] = float(g["lower_bound"])
        out[key + "/pass"] = float(g["pass"])
    return dict(sorted(out.items()))


def render_md(report: dict) -> str:
    g = report["gates"]
    cfg = report["settings"]
    lines = [
        "# Benchmark validity",
        "",
        f"Noisy gates are decided on the one-sided {cfg['confidence']:.0%} lower bound (Wilson for accuracies, "
        f"Hanley-McNeil for ROC-AUC) and not evaluated below {cfg['min_questions']} questions / "
        f"{cfg['min_evidence']} evidence units. Text-only figures are the best solver's accuracy minus chance.",
        "",
        "| gate | value | lower bound | threshold | n | result |",
        "|---|---:|---:|---:|---:|:---:|",
    ]
    for name, v in g.items():
        res = {"pass": "yes", "fail": "**NO**", "not evaluated": "not evaluated: n too small"}[v["status"]]
        if v.get("advisory") and not v["pass"]:
            res += " (advisory)"
        if v.get("point_over"):
            res += " (point estimate above)"
        lb = "-" if v.get("lower_bound") is None else v["lower_bound"]
        if v.get("interval"):  # the accuracy's interval the gate decided on (lower bound minus chance)
            lb = f"{lb} (accuracy {v['interval'][0]}-{v['interval'][1]}, {v['decided_on']})"
        lines.append(f"| {name} | {v['value']} | {lb} | {v['threshold']} | {v.get('n', '-')} | {res} |")
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
    ca = report.get("closed_answers") or {}
    if ca:
        lines += [
            "",
            "## Closed answers",
            "",
            "Per subtype and format: the references' answers, the majority answer's share and the "
            "accuracy of the leave-one-out majority answer.",
            "",
            "| subtype/format | n | answers | majority share | leave-one-out majority |",
            "|---|---:|---|---:|---:|",
        ]
        for k, r in ca.items():
            ans = ", ".join(f"{a}: {c}" for a, c in r["answers"].items())
            lines.append(f"| {k} | {r['n']} | {ans} | {r['majority_share']} | {r['loo_majority_accuracy']} |")
    lines += ["", "## Adversaries", *figures_md(report["adversaries"])]
    return "\n".join(lines) + "\n"


def probe_set(cfg, paths: Paths, v: dict, questions: list[Question]) -> tuple[list, dict, float]:
    """The oracle gate's probe set at this data scale (:mod:`.adversaries.probe`), what the report
    says of it (counts per subtype and a digest: the probes themselves stay in memory, never written,
    never released) and the seconds it took (logged, not reported)."""
    import hashlib
    import time

    from memlens.construction.ontology.stage import load_topics
    from memlens.construction.text.sessions import WriterConfig
    from memlens.construction.validate.adversaries.probe import probe_items, sizes_to_see
    from memlens.construction.validate.adversaries.textonly import chance_by_subtype

    cap = int(v["probe_per_subtype"].get(str(cfg.data.scale), 0))
    t0 = time.perf_counter()
    photo = float(getattr(cfg.images, "photo_effect_rate", 0.5))
    # as many as it takes to see a `max_oracle_excess` excess over the subtype's chance, at most `cap`
    chance = chance_by_subtype([q for q in questions if q.question_type != AR])
    n = sizes_to_see(chance, float(v["max_oracle_excess"]), float(v["confidence"]), cap) if cap else {}
    items = (
        probe_items(int(cfg.data.seed), load_topics(paths), n, WriterConfig.from_cfg(cfg.generator), photo)
        if any(n.values())
        else []
    )
    digest = hashlib.sha256()
    for it in items:
        digest.update(repr((it.question_id, it.question, it.answer, it.evidence)).encode())
    info = {
        "per_subtype": n,
        "cap": cap,
        "questions": len(items),
        "by_subtype": dict(sorted(Counter(it.subtype for it in items).items())),
        "sha256": digest.hexdigest() if items else None,
    }
    seconds = round(time.perf_counter() - t0, 2)
    if items:
        log.info("probe set: %d questions in %.1f s", len(items), seconds)
    return items, info, seconds


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    settings: ValidateSettings = cfg.validate
    v = settings.model_dump()
    questions = {q.question_id: q for q in read_records(paths.generated / "questions.jsonl", Question, nonempty=True)}
    sessions = {s.session_id: s for s in read_records(paths.generated / "sessions.jsonl", Session, nonempty=True)}
    images, sizes = {}, {}
    for row in iter_jsonl(paths.images / "index.jsonl"):
        rec = ImageRecord.from_dict(row["image"])
        images[rec.sha256] = rec
        f = paths.images / "objects" / rec.filename
        if f.is_file():
            sizes[rec.sha256] = f.stat().st_size
    inst = {
        p.stem: read_records(p, Instance)
        for p in sorted(paths.instances.glob("*.jsonl"), key=lambda p: length_tokens(p.stem))
    }
    leak = text_leakage(questions, sessions, inst)
    ans = answerability(questions, sessions, images)
    comp = composition(questions, inst)
    probe_info: dict = {}

    def probes() -> list:  # made in the oracle's process, while the other adversaries run in theirs
        items, info, _seconds = probe_set(cfg, paths, v, list(questions.values()))
        probe_info.update(info)
        return items

    figs = run_all(
        Bench(questions, sessions, images, sizes, inst),
        v,
        seed=int(cfg.data.seed),
        progress=True,
        probes=probes,
        workers=settings.processes(),
    )
    timing = figs.pop("timing")
    log.info("adversaries took %s s", timing)
    tol = float(cfg.data.length_tolerance)
    worst = max(x["max_rel_error"] for x in comp["lengths"].values())
    gates = {
        "text_leakage": exact_gate(leak["leaks"], 0, leak["leaks"] == 0),
        "answerable_with_images": exact_gate(round(ans["rate_with_images"], 4), 1.0, ans["rate_with_images"] >= 1.0),
        "answerable_text_only": exact_gate(
            round(ans["rate_text_only"], 4), v["max_text_only_rate"], ans["rate_text_only"] <= v["max_text_only_rate"]
        ),
        "length_within_tolerance": exact_gate(worst, tol, worst <= tol),
        **adversary_gates(figs, v),
    }
    for k, g in gates.items():
        g["advisory"] = k.split("/")[0] in v["advisory"]
    report = {
        "gates": gates,
        "metrics": metrics(gates),
        "settings": v,
        "text_leakage": leak,
        "answerability": ans,
        "adversaries": figs,
        "probe": probe_info,
        "composition": comp,
        "closed_answers": closed_answers(questions),
    }
    paths.reports.mkdir(parents=True, exist_ok=True)
    write_json(paths.reports / "validity.json", report)
    (paths.reports / "validity.md").write_text(render_md(report))
    failed = [k for k, g in gates.items() if not g["pass"] and not g["advisory"]]
    for k, g in gates.items():
        log.info("gate %-48s %-8s (threshold %s) %s", k, g["value"], g["threshold"], g["status"])
    if failed and not v["warn_only"]:
        raise GateError(f"validity gates failed: {', '.join(failed)} (see reports/validity.md)")
