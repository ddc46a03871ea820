"""judge stage: score every prediction of the configured system with the configured judge.

Reads ``data/predictions/<system>/<mode>/<length>.jsonl`` and writes
``data/verdicts/<system>/<mode>/<length>.<judge>.jsonl`` (one verdict per question, sorted), plus a
manifest. Questions come from the built benchmark or, with ``data.items=official``, the release.
Several judges can score the same system (``memlens judge judge=llm`` next to the default
deterministic judge): each writes its own ``<length>.<judge>.jsonl``.

Every verdict's ``details`` carries the official per-item diagnostics of its prediction
(``original_len``, ``was_truncated``, ``is_degenerate``, ``hedging_count``, ``unique_5gram_ratio``,
``auto_zero``, ``parsed_words``, ``output_len``; facts §4.8), which the report stage writes in the
official ``judge_details.json`` layout.
"""

from __future__ import annotations

import logging
from pathlib import Path

from memlens.core.config import Paths, section
from memlens.core.errors import DataError, MemLensError
from memlens.core.io import read_json, write_jsonl
from memlens.core.registry import build_target
from memlens.core.settings import Settings, as_settings, operational_keys
from memlens.core.store import hash_tree, write_manifest
from memlens.eval.failures import judge_failed, judge_failure_count
from memlens.eval.results import PredictionStore, verdict_archive

log = logging.getLogger(__name__)


def load_questions(cfg, paths: Paths) -> dict:
    from memlens.eval.benchmark import open_benchmark

    return open_benchmark(cfg, paths).questions


def verdict_path(paths: Paths, system: str, mode: str, length: str, judge: str) -> Path:
    return paths.verdicts / system / mode / f"{length}.{judge}.jsonl"


def attach_diagnostics(verdicts: list, pairs: list) -> None:
    """Add the official per-item diagnostics to each verdict's ``details`` (judge-provided values win)."""
    from memlens.eval.judge.official import official_diagnostics

    for v, (_, p) in zip(verdicts, pairs):
        if "original_len" not in (v.details or {}):
            v.details = {**official_diagnostics(p), **(v.details or {})}


def build_judge(cfg: Settings):
    """The judge ``judge`` names: its ``_target_`` class (a component of kind ``judge``), built from
    the section as composed."""
    return build_target("judge", section(as_settings(cfg), "judge")["judge"], section="judge")


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    from memlens.eval.benchmark import open_benchmark, requested_lengths

    judge = build_judge(cfg)
    if hasattr(judge, "set_root"):
        judge.set_root(paths.home)  # the judge cache is shared by the workspace and every DVC experiment
    system, mode = str(cfg.model.name), str(cfg.eval.mode)
    bench = open_benchmark(cfg, paths)
    questions = bench.questions
    dataset = bench.dataset_hash()
    pred_dir = paths.predictions / system / mode
    lengths = requested_lengths(cfg, bench)
    manifest = paths.predictions / system / "manifest.json"
    evaluated = read_json(manifest) if manifest.is_file() else {}
    if evaluated.get("dataset_sha256") not in (None, dataset):
        raise DataError(
            f"{manifest}: the predictions of {system!r} were made for another build of the benchmark "
            f"(dataset {str(evaluated.get('dataset_sha256'))[:12]}, current {dataset[:12]}); run `memlens evaluate` first"
        )
    totals = {}
    judge_failures: list[tuple[str, int, int, str]] = []  # (length, failed, answered, first reason)
    key = judge_key(cfg)
    for length in lengths:
        view = pred_dir / f"{length}.jsonl"
        if not view.is_file():
            raise DataError(f"{view}: no predictions of {system!r} at {length}: run `memlens evaluate` first")
        preds = PredictionStore(paths.predictions, system, mode, length).load()
        pairs = []
        for qid in sorted(preds):
            q = questions.get(qid)
            if q is None:
                raise DataError(f"{view}: prediction for unknown question {qid}")
            pairs.append((q, preds[qid]))
        verdicts = judge.judge_many(pairs)
        if len(verdicts) != len(pairs):
            raise DataError(f"judge {judge.name!r} returned {len(verdicts)} verdicts for {len(pairs)} predictions")
        attach_diagnostics(verdicts, pairs)
        for v, (_, p) in zip(verdicts, pairs):
            v.request_key = p.request_key
        write_jsonl(verdict_path(paths, system, mode, length, judge.name), verdicts)
        failed_calls, answered = judge_failure_count(verdicts, preds)
        if judge_failed(failed_calls, answered):
            first = next(v.reason for v in verdicts if v.correct is None and preds[v.question_id].ok)
            judge_failures.append((length, failed_calls, answered, first))
            continue  # failed verdicts never reach the archive the cross-system analyses read
        # the verdict archive outside DVC (per benchmark build): cross-system analyses read every
        # system judged on this build, whichever system the DVC workspace holds now; a partial run
        # (a smoke run: fewer items) never replaces the archived verdicts of a fuller one
        archive = current_archive(paths, dataset, judge.name, key)
        archive_verdicts(archive / system / mode / f"{length}.{judge.name}.jsonl", verdicts)
        ok = [v for v in verdicts if v.correct is not None]
        totals[length] = {
            "n": len(verdicts),
            "correct": sum(bool(v.correct) for v in ok),
            "failed": len(verdicts) - len(ok),
            "items": bench.count(length),
        }
        run_stats = getattr(judge, "last_stats", None)
        if run_stats is not None:
            log.info(
                "judge %s %s/%s@%s: %d cached, %d requests sent",
                judge.name,
                system,
                mode,
                length,
                run_stats.cache_hits,
                run_stats.requests,
            )
        log.info(
            "judge %s %s/%s@%s: %d/%d correct, %d failed",
            judge.name,
            system,
            mode,
            length,
            totals[length]["correct"],
            len(verdicts),
            totals[length]["failed"],
        )
    if judge_failures:
        raise JudgeFailedError(
            f"judge {judge.name!r} failed on most answered items of {system} ("
            + "; ".join(f"{ln}: {n} of {m}" for ln, n, m, _ in judge_failures)
            + f"), e.g. {judge_failures[0][3][:200]}: the run is failed, not ranked; fix the judge and re-run "
            "(its successful calls are cached)"
        )
    out = paths.verdicts / system
    write_manifest(
        out,
        "judge",
        section(cfg, "judge"),
        hash_tree(out),
        code=(__name__,),
        extra={
            "system": system,
            "mode": mode,
            "totals": totals,
            "dataset_sha256": dataset,
            "system_key": evaluated.get("system_key"),
            "judge_key": key,
        },
    )


class JudgeFailedError(MemLensError):
    """The judge failed on most answered items (:data:`memlens.eval.failures.JUDGE_FAILURE_LIMIT`): the run
    is failed, not ranked; exit status 1 (the stage's previous verdicts are kept)."""

    exit_code = 1


def archive_verdicts(path: Path, verdicts: list) -> None:
    """Write ``verdicts`` to the archive unless the archived file covers items these do not (a partial run)."""
    if path.is_file():
        from memlens.core.io import iter_jsonl

        old = {str(r.get("question_id")) for r in iter_jsonl(path)}
        new = {v.question_id for v in verdicts}
        if old - new:
            log.info("verdict archive: %s keeps its %d verdicts (this run judged %d of them)", path, len(old), len(new))
            return
    write_jsonl(path, verdicts)


def current_archive(paths: Paths, dataset: str, judge: str, key: str) -> Path:
    """The verdict archive of this build, holding only verdicts of judge ``judge`` as ``key`` names it.

    ``<archive>/judge_keys.json`` records the key each judge name's archived verdicts were made
    with. When the judge changed (its config or its rules version), the verdict files of that
    judge name (every system's) are removed, with a warning naming them, before new ones are
    written: cross-system analyses never mix verdicts of two versions of a judge."""
    from memlens.core.io import write_json

    root = verdict_archive(paths, dataset)
    index = root / "judge_keys.json"
    known = read_json(index) if index.is_file() else {}
    if known.get(judge) not in (None, key):
        stale = sorted(root.rglob(f"*.{judge}.jsonl"))
        for f in stale:
            f.unlink()
        log.warning(
            "judge %s changed since its archived verdicts were written (rules or config): removed %d stale "
            "verdict files (%s); run `memlens judge` again for the other systems",
            judge,
            len(stale),
            ", ".join(str(f.relative_to(root)) for f in stale[:5]) + (" ..." if len(stale) > 5 else ""),
        )
    if known.get(judge) != key:
        root.mkdir(parents=True, exist_ok=True)
        write_json(index, {**known, judge: key})
    return root


def judge_key(cfg: Settings) -> str:
    """SHA-256 naming the judge: its config as composed (model, prompt version, rules) without the
    keys its schema marks operational, and the version of the deterministic rules (which also give
    the LLM judge its abstention flag)."""
    from memlens.core.io import canonical_bytes, sha256_bytes
    from memlens.eval.judge.deterministic import RULES_VERSION

    cfg = as_settings(cfg)
    j = section(cfg, "judge")["judge"]
    ops = operational_keys(type(cfg.judge))
    ident = {k: v for k, v in sorted(j.items()) if k not in ops}
    return sha256_bytes(canonical_bytes({**ident, "rules_version": RULES_VERSION}))
