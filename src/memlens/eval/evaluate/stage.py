"""evaluate stage: run the configured system on every item the results store has no answer for.

Answers go to the results store (:mod:`memlens.eval.results`, outside DVC) as they finish, so an
interrupted run, another experiment or another branch resumes without asking anything twice; items
whose request changed are asked again; failed items are retried. The stage then writes the views
``data/predictions/<system>/<mode>/<length>.jsonl`` for the current benchmark, with their manifest
(:mod:`memlens.eval.views`). A progress bar shows done/total, throughput and failures.

``eval.shard=I/N`` answers only the items of shard I of N (a stable hash of the question id,
:func:`memlens.eval.results.shard_of`) and writes no view: shards run at once on many machines, each
into its own segment of the shared results store; a later run without a shard (the sweep's final
step, or the next ``dvc exp run``) finds every answer there and writes the views.
``eval.collect=true`` writes the views from the store only, sending nothing: an item without a
record is an error naming it.
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
from memlens.eval.agents.subset import subset_ids, subset_name
from memlens.eval.benchmark import open_benchmark, requested_lengths
from memlens.eval.prompt import PROMPT_PROTOCOL
from memlens.eval.results import ResultsStore, parse_shard, request_key, shard_of, system_identity, write_view
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


def select_items(source, length: str, max_items=None, subset: set[str] | None = None) -> list[EvalItem]:
    """The items of one length this evaluation covers: ``subset`` (an agent's questions) and the first
    ``max_items``, before any sharding, so that every shard of a sweep agrees on them."""
    items: list[EvalItem] = []
    for item in source.items(length):
        if subset is not None and item.question_id not in subset:
            continue
        if max_items and len(items) >= int(max_items):
            break
        items.append(item)
    if not items:
        raise DataError(f"the benchmark has no items at {length}: nothing to evaluate (an empty dataset file?)")
    return items


def request_keys(items: list[EvalItem], store: ResultsStore, length: str, mode: str) -> dict[str, str]:
    """Question id -> results-store request key."""
    keys = {}
    for item in items:
        if item.question_id in keys:
            raise DataError(f"{length}: question id {item.question_id} appears twice in the benchmark")
        keys[item.question_id] = request_key(store.key, PROMPT_PROTOCOL, mode, item.fingerprint())
    return keys


def missing_records(items: list[EvalItem], keys: dict[str, str], store: ResultsStore, length: str):
    """A :class:`DataError` naming the items of ``length`` that have no record in the store, or None."""
    missing = [it.question_id for it in items if store.get(keys[it.question_id]) is None]
    if not missing:
        return None
    return DataError(
        f"{length}: {len(missing)} of {len(items)} items have no answer or failure in the results store, "
        f"e.g. {', '.join(missing[:3])}; run (or resubmit) their evaluation first"
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
    before_first_request=None,
    subset: set[str] | None = None,
    prepare=None,
    shard: tuple[int, int] | None = None,
    collect: bool = False,
    views=None,
) -> dict:
    """Answer every item of one length that the store has no answer for, then write its view:
    staged in ``views`` (:class:`memlens.eval.views.SystemViews`, committed by the caller), or
    written directly when ``views`` is None. With ``shard=(i, n)`` only shard i's items are answered
    and no view is written; with ``collect`` nothing is sent (every item must have a record).
    ``before_first_request()`` runs once before anything is sent (the endpoint health check)."""
    items = select_items(source, length, max_items, subset)
    keys = request_keys(items, store, length, mode)
    mine = items if shard is None else [it for it in items if shard_of(it.question_id, shard[1]) == shard[0]]
    stats = {"items": len(mine), "reused": 0, "new": 0, "failed": 0, "failed_retried": 0, "failures": []}

    def todo(it):
        return not store.has_answer(keys[it.question_id])

    if collect:
        err = missing_records(items, keys, store, length)
        if err is not None:
            raise err
        stats["reused"] = len(items)
    elif any(todo(it) for it in mine):
        with store.writer():
            pending = [it for it in mine if todo(it)]  # re-checked after reading what others wrote
            stats["reused"] = len(mine) - len(pending)
            if pending and before_first_request is not None:
                before_first_request()
            _answer(model, store, pending, keys, length, mode, stats, prepare)
    else:
        stats["reused"] = len(mine)
    label = "" if shard is None else f" shard {shard[0]}/{shard[1]}"
    log.info(
        "evaluate %s/%s@%s%s: %d items, %d reused from the results store, %d new, %d failed",
        model.name,
        mode,
        length,
        label,
        stats["items"],
        stats["reused"],
        stats["new"],
        stats["failed"],
    )
    if shard is not None:
        return stats
    preds = []
    for item in items:
        rec = store.get(keys[item.question_id])
        if rec is None:  # interrupted before this item finished: it has no record yet
            continue
        preds.append(_prediction(model.name, mode, length, item, rec, keys[item.question_id]))
        if not rec["ok"]:
            stats["failures"].append((f"{item.question_id}@{length}", rec.get("error")))
    if views is None:
        write_view(paths.predictions / model.name / mode / f"{length}.jsonl", preds)
    else:
        views.stage(mode, length, preds, dataset_sha256=source.dataset_hash(), prompt_protocol=PROMPT_PROTOCOL)
    return stats


def _answer(model: Model, store: ResultsStore, pending, keys, length: str, mode: str, stats: dict, prepare) -> None:
    """Send ``pending`` through the model, storing each result as it arrives. An item that another
    writer (a concurrent run of the same system) answered meanwhile is skipped, not sent again."""
    bar = tqdm(
        total=stats["items"],
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
        bar.set_postfix(failed=stats["failed"], rate=f"{stats['new'] / el:.1f}/s" if el > 0 else "-", refresh=False)

    def still_open(it: EvalItem) -> bool:
        store.refresh(max_age=2.0)
        if store.has_answer(keys[it.question_id]):
            stats["reused"] += 1
            bar.update(1)
            return False
        return True

    # a system sees the item without its answer key and with neutral ids (EvalItem.for_system);
    # mode caption then adds the images' adapter texts
    stream = (it.for_system(mode, answer_space=model.answer_space) for it in pending if still_open(it))
    if prepare is not None:
        stream = (prepare(it) for it in stream)
    try:
        model.run(stream, mode, on_result)
    finally:
        bar.close()


def run(cfg: Settings, paths: Paths) -> None:
    from memlens.eval.views import SystemViews, manifest_config

    cfg = as_settings(cfg)
    mode = str(cfg.eval.mode)
    if mode not in MODES:
        raise ConfigError(f"unknown eval.mode {mode!r} (known: {', '.join(MODES)})")
    shard = parse_shard(cfg.eval.shard)
    collect = bool(cfg.eval.collect)
    if shard is not None and collect:
        raise ConfigError("eval.collect writes the views of every shard: run it without eval.shard")
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
    store = ResultsStore(results_root(paths), identity, fsync=not model.answers_are_free)
    checked = []

    def check_once() -> None:
        if not checked:
            model.check()
            checked.append(True)

    def each_length(views=None) -> dict:
        summary = {}
        for length in lengths:
            summary[length] = evaluate_length(
                model,
                store,
                source,
                length,
                mode,
                paths,
                cfg.eval.max_items,
                before_first_request=check_once,
                subset=subset,
                prepare=prepare,
                shard=shard,
                collect=collect,
                views=views,
            )
        return summary

    try:
        if shard is not None:  # a shard writes answers only; the views are written once all are in
            summary = each_length()
        else:
            with SystemViews(paths, model.name, store.key, wait=bool(cfg.eval.wait_for_lock)) as views:
                summary = each_length(views)
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
                config = manifest_config(identity, section(cfg, "eval")["eval"])
                views.commit(config=config, extra=extra, code=(__name__,))
    finally:
        model.close()
    report_failures(summary, model.name)
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
