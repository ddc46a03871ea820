"""evaluate stage: run the configured system on every item the results store has no answer for.

Answers go to the results store (:mod:`memlens.eval.results`, outside DVC) as they finish, so an
interrupted run, another experiment or another branch resumes without asking anything twice; items
whose request changed are asked again; failed items are retried. The stage then writes the view
``data/predictions/<system>/<mode>/<length>.jsonl`` for the current benchmark. A progress bar
shows done/total, throughput and failures.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from tqdm import tqdm

from memlens.core.config import Paths, section
from memlens.core.errors import ConfigError, DataError, MemLensError
from memlens.core.items import EvalItem
from memlens.core.registry import class_for_target
from memlens.core.schema import Prediction
from memlens.core.settings import Settings, as_settings, operational_keys
from memlens.core.store import hash_tree, write_manifest
from memlens.eval.agents.subset import subset_ids, subset_name
from memlens.eval.benchmark import open_benchmark, requested_lengths
from memlens.eval.prompt import PROMPT_PROTOCOL
from memlens.eval.results import ResultsStore, request_key, write_view
from memlens.eval.systems.base import MODES, Model, ModelOutput

log = logging.getLogger(__name__)


def postprocess(raw: str | None, mode: str) -> str | None:
    """``prediction`` = the raw output without thinking blocks/special tokens; in ``reasoning``
    mode, the text after the first ``[ANSWER]`` tag (official post-processing)."""
    if raw is None:
        return None
    from memlens.eval.judge.parsing import parse_model_output

    text = parse_model_output(raw)
    if mode == "reasoning":
        low = text.lower()
        i = low.find("[answer]")
        if i >= 0:
            rest = text[i + len("[answer]") :]
            j = rest.lower().find("[answer]")
            text = (rest[:j] if j >= 0 else rest).strip()
    return text


def build_model(cfg: Settings) -> Model:
    """The system ``model`` names: its ``_target_`` class (a component of kind ``model`` or
    ``agent``, or a class of your own with a ``Config``) built from the section as composed."""
    cfg = as_settings(cfg)
    options = section(cfg, "model")["model"]
    cls = class_for_target(("model", "agent"), str(options.get("_target_")), section="model")
    try:
        model = cls(**{k: v for k, v in options.items() if k != "_target_"})
    except Exception as exc:
        raise ConfigError(f"cannot build model {options.get('name')!r} from conf/model: {exc}") from None
    if not isinstance(model, Model):
        raise ConfigError(f"model._target_ {options.get('_target_')!r} is not a memlens Model")
    return model


def system_identity(model_cfg: dict, extra: dict | None = None, *, operational: frozenset[str] | None = None) -> dict:
    """What determines a system's answers: its model config as composed without the operational
    keys (those its schema marks :func:`~memlens.core.settings.operational`: ``operational``, by
    default the keys of the schema of its ``_target_``), plus what the system itself adds
    (:meth:`Model.identity_extra`: a memory agent's prompt version and adapter id; nothing for the
    other systems)."""
    if operational is None:
        operational = operational_keys(model_schema(str(model_cfg.get("_target_"))))
    ident = {k: v for k, v in sorted(model_cfg.items()) if k not in operational}
    for k, v in sorted((extra or {}).items()):
        ident[f"+{k}"] = v
    return ident


def model_schema(target: str):
    """The schema (``Config``) of a model ``_target_`` class."""
    return class_for_target(("model", "agent"), target, section="model").Config


def results_root(paths: Paths) -> Path:
    """The results store: ``<cache>/results`` (see :attr:`Paths.cache`)."""
    return paths.cache / "results"


def _prediction(model_name: str, mode: str, length: str, item: EvalItem, rec: dict, key: str) -> Prediction:
    q = item.question
    return Prediction(
        system=model_name,
        mode=mode,
        length=length,
        question_id=q.question_id,
        question_type=q.question_type,
        question_subtype=q.question_subtype,
        ok=bool(rec["ok"]),
        raw_prediction=rec.get("text"),
        prediction=postprocess(rec.get("text"), mode) if rec["ok"] else None,
        error=rec.get("error"),
        prompt_tokens=rec.get("prompt_tokens"),
        completion_tokens=rec.get("completion_tokens"),
        # timings vary between runs: kept in the results store, left out of the view
        meta={k: v for k, v in (rec.get("meta") or {}).items() if k != "timing"},
        request_key=key,
    )


def evaluate_length(
    model: Model,
    store: ResultsStore,
    source,
    length: str,
    mode: str,
    paths: Paths,
    max_items=None,
    *,
    wait_for_lock: bool = False,
    before_first_request=None,
    subset: set[str] | None = None,
    prepare=None,
) -> dict:
    """Answer every item of one length that the store has no answer for, then write the view.
    ``before_first_request()`` runs once before anything is sent (the endpoint health check)."""
    items: list[EvalItem] = []
    for item in source.items(length):
        if subset is not None and item.question_id not in subset:
            continue
        if max_items and len(items) >= int(max_items):
            break
        items.append(item)
    if not items:
        raise DataError(f"the benchmark has no items at {length}: nothing to evaluate (an empty dataset file?)")
    keys = {}
    for item in items:
        if item.question_id in keys:
            raise DataError(f"{length}: question id {item.question_id} appears twice in the benchmark")
        keys[item.question_id] = request_key(store.key, PROMPT_PROTOCOL, mode, item.fingerprint())
    stats = {"items": len(items), "reused": 0, "new": 0, "failed": 0, "failed_retried": 0, "failures": []}

    def todo(it):
        return not store.has_answer(keys[it.question_id])

    if any(todo(it) for it in items):
        with store.writer(wait=wait_for_lock):
            pending = [it for it in items if todo(it)]  # re-checked under the lock
            stats["reused"] = len(items) - len(pending)
            if pending and before_first_request is not None:
                before_first_request()
            bar = tqdm(
                total=len(items),
                initial=stats["reused"],
                desc=f"{model.name}/{mode}@{length}",
                unit="item",
                dynamic_ncols=True,
                mininterval=0.5,
                leave=False,
            )
            t0 = time.perf_counter()

            def on_result(item: EvalItem, out: ModelOutput) -> None:
                store.put(
                    keys[item.question_id],
                    {
                        "question_id": item.question_id,
                        "length": length,
                        "mode": mode,
                        "ok": out.ok,
                        "text": out.text,
                        "error": out.error,
                        "prompt_tokens": out.prompt_tokens,
                        "completion_tokens": out.completion_tokens,
                        "meta": out.meta,
                        "latency_s": out.latency_s,
                        "attempts": out.attempts,
                        "created": time.time(),
                    },
                )
                stats["new"] += 1
                stats["failed"] += int(not out.ok)
                stats["failed_retried"] += int(not out.ok and (out.attempts or 0) > 1)
                bar.update(1)
                el = time.perf_counter() - t0
                bar.set_postfix(failed=stats["failed"], rate=f"{stats['new'] / el:.1f}/s" if el > 0 else "-")

            # a system sees the item without its answer key and with neutral ids (EvalItem.for_system);
            # mode caption then adds the images' adapter texts
            stream = (it.for_system(mode, answer_space=model.answer_space) for it in pending)
            if prepare is not None:
                stream = (prepare(it) for it in stream)
            try:
                model.run(stream, mode, on_result)
            finally:
                bar.close()
    else:
        stats["reused"] = len(items)
    preds = []
    for item in items:
        rec = store.get(keys[item.question_id])
        if rec is None:  # interrupted before this item finished: it has no record yet
            continue
        preds.append(_prediction(model.name, mode, length, item, rec, keys[item.question_id]))
        if not rec["ok"]:
            stats["failures"].append((f"{item.question_id}@{length}", rec.get("error")))
    write_view(paths.predictions / model.name / mode / f"{length}.jsonl", preds)
    log.info(
        "evaluate %s/%s@%s: %d items, %d reused from the results store, %d new, %d failed",
        model.name,
        mode,
        length,
        stats["items"],
        stats["reused"],
        stats["new"],
        stats["failed"],
    )
    return stats


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    mode = str(cfg.eval.mode)
    if mode not in MODES:
        raise ConfigError(f"unknown eval.mode {mode!r} (known: {', '.join(MODES)})")
    source = open_benchmark(cfg, paths)
    lengths = requested_lengths(cfg, source)
    model = build_model(cfg)
    model.attach(paths, source)
    prepare = None
    extra = model.identity_extra()
    if mode == "caption":
        from memlens.eval.agents.captions import CaptionMode

        captions = CaptionMode(cfg.eval, paths, source)
        prepare = captions.prepare
        extra = {**extra, "caption_adapter": captions.adapter_id}
    subset_label = subset_name(cfg, model)
    subset = subset_ids(subset_label, source)
    identity = system_identity(section(cfg, "model")["model"], extra, operational=operational_keys(type(cfg.model)))
    store = ResultsStore(results_root(paths), identity)
    out = paths.predictions / model.name
    summary = {}
    checked = []

    def check_once() -> None:
        if not checked:
            model.check()
            checked.append(True)

    try:
        for length in lengths:
            summary[length] = evaluate_length(
                model,
                store,
                source,
                length,
                mode,
                paths,
                cfg.eval.max_items,
                wait_for_lock=cfg.eval.wait_for_lock,
                before_first_request=check_once,
                subset=subset,
                prepare=prepare,
            )
    finally:
        model.close()
    report_failures(summary, model.name)
    arts = hash_tree(out)
    extra = {
        "system": model.name,
        "mode": mode,
        "lengths": lengths,
        "system_key": store.key,
        "prompt_protocol": PROMPT_PROTOCOL,
        "dataset_sha256": source.dataset_hash(),
        "max_items": cfg.eval.max_items,
        "subset": None if subset is None else len(subset),
        "subset_name": subset_label,
    }
    write_manifest(
        out, "evaluate", {"model": identity, "eval": section(cfg, "eval")["eval"]}, arts, code=(__name__,), extra=extra
    )
    fail_limit(summary, float(cfg.eval.max_failure_rate), model.name)


class TooManyFailuresError(MemLensError):
    """More items failed (after retries) than ``eval.max_failure_rate`` allows; exit status 1."""

    exit_code = 1


def report_failures(summary: dict, system: str) -> None:
    """Print why items failed (every failed item of the evaluated lengths, from the results store's
    records): one line per reason with its count and first example item (:mod:`memlens.eval.failures`)."""
    import sys

    from memlens.eval.failures import render, summarize

    failures = [f for s in summary.values() for f in s.get("failures", [])]
    table = render(summarize(failures), f"evaluate {system}: why items failed")
    if table:
        print(table, file=sys.stderr, flush=True)


def fail_limit(summary: dict, max_rate: float, system: str) -> None:
    """Fail the stage (exit 1) when the failures recorded in this run exceed ``max_rate`` of its
    requests. The answers and failure records are kept: a re-run retries only the failed items."""
    sent = sum(s["new"] for s in summary.values())
    failed = sum(s["failed"] for s in summary.values())
    retried = sum(s.get("failed_retried", 0) for s in summary.values())
    if sent and failed / sent > max_rate:
        how = (
            "after retries"
            if retried == failed
            else f"{retried} after retries, {failed - retried} at once (not retryable)"
            if retried
            else "at once, none could be retried"
        )
        raise TooManyFailuresError(
            f"{system}: {failed} of {sent} requests failed ({how}; {failed / sent:.0%} > "
            f"eval.max_failure_rate={max_rate:.0%}); the reasons are listed above. Answers so far are stored, "
            "re-run to retry the failed items"
        )
