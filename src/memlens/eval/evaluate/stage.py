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

import contextlib
import functools
import gc
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from memlens.core.config import Paths, section
from memlens.core.errors import ConfigError, DataError, MemLensError
from memlens.core.items import EvalItem
from memlens.core.registry import class_for_target
from memlens.core.schema import Prediction, Question
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


def _prediction(model_name: str, mode: str, length: str, q: Question, rec: dict, key: str) -> Prediction:
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


@dataclass
class LengthRun:
    """One length of an evaluation: the questions of its items (in benchmark order), their request
    keys, the counts the log and the failure report show, and the items still to send (emptied as
    they are streamed to the model, so a length's histories are not held after it is sent)."""

    length: str
    questions: list[Question]
    keys: dict[str, str]
    stats: dict
    pending: list[EvalItem] = field(default_factory=list)


def plan_length(
    store: ResultsStore,
    source,
    length: str,
    mode: str,
    max_items=None,
    *,
    subset: set[str] | None = None,
    shard: tuple[int, int] | None = None,
    collect: bool = False,
) -> LengthRun:
    """The items of ``length`` this run covers and which of them the store has no answer for (with
    ``shard=(i, n)``, only shard i's; with ``collect``, none: every item must have a record)."""
    items = select_items(source, length, max_items, subset)
    keys = request_keys(items, store, length, mode)
    mine = items if shard is None else [it for it in items if shard_of(it.question_id, shard[1]) == shard[0]]
    stats = {"items": len(mine), "reused": 0, "new": 0, "failed": 0, "failed_retried": 0, "failures": []}
    pending: list[EvalItem] = []
    if collect:
        err = missing_records(items, keys, store, length)
        if err is not None:
            raise err
        stats["reused"] = len(items)
    else:
        pending = [it for it in mine if not store.has_answer(keys[it.question_id])]
        stats["reused"] = len(mine) - len(pending)
    return LengthRun(length, [it.question for it in items], keys, stats, pending)


def finish_length(model: Model, store: ResultsStore, source, run: LengthRun, mode: str, paths: Paths, *, shard, views):
    """Log the length's counts and write its view (staged in ``views`` or written directly; none
    for a shard); the stats."""
    stats = run.stats
    label = "" if shard is None else f" shard {shard[0]}/{shard[1]}"
    log.info(
        "evaluate %s/%s@%s%s: %d items, %d reused from the results store, %d new, %d failed",
        model.name,
        mode,
        run.length,
        label,
        stats["items"],
        stats["reused"],
        stats["new"],
        stats["failed"],
    )
    if shard is not None:
        return stats
    preds = []
    for q in run.questions:
        rec = store.get(run.keys[q.question_id])
        if rec is None:  # interrupted before this item finished: it has no record yet
            continue
        preds.append(_prediction(model.name, mode, run.length, q, rec, run.keys[q.question_id]))
        if not rec["ok"]:
            stats["failures"].append((f"{q.question_id}@{run.length}", rec.get("error")))
    if views is None:
        write_view(paths.predictions / model.name / mode / f"{run.length}.jsonl", preds)
    else:
        views.stage(mode, run.length, preds, dataset_sha256=source.dataset_hash(), prompt_protocol=PROMPT_PROTOCOL)
    return stats


def evaluate_lengths(
    model: Model,
    store: ResultsStore,
    source,
    lengths: list[str],
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
) -> dict[str, dict]:
    """Answer every item of ``lengths`` that the store has no answer for, then write each length's
    view (see :func:`finish_length`); ``before_first_request()`` runs once before anything is sent
    (the endpoint health check).

    A model with ``pools_lengths`` gets the items of every length in one :meth:`Model.run`, so its
    requests flow on from one length into the next (no slot waits for a length's last answer
    before the next length starts); the next length's items are read only when the previous
    length's have all been handed to the model. Other models get one run per length."""
    plan = functools.partial(plan_length, store, source, mode=mode, max_items=max_items, subset=subset, shard=shard)
    runs: dict[str, LengthRun] = {}
    if collect:
        for length in lengths:
            runs[length] = plan(length, collect=True)
    else:
        groups = [list(lengths)] if model.pools_lengths else [[length] for length in lengths]
        for group in groups:
            with store.writer():  # reads what other writers finished meanwhile: not asked again
                _answer_group(model, store, group, plan, runs, mode, before_first_request, prepare)
    return {
        length: finish_length(model, store, source, runs[length], mode, paths, shard=shard, views=views)
        for length in lengths
    }


def evaluate_length(
    model: Model, store: ResultsStore, source, length: str, mode: str, paths: Paths, max_items=None, **kw
):
    """:func:`evaluate_lengths` for one length; its stats."""
    return evaluate_lengths(model, store, source, [length], mode, paths, max_items, **kw)[length]


@contextlib.contextmanager
def _frozen_heap():
    """The objects alive when the requests start (the benchmark's items, the loaded modules) are
    left out of garbage collection while they run: a full collection walks every one of them (at
    small scale some 40 ms, with every request of the process waiting), and they are not garbage."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _answer_group(
    model: Model, store: ResultsStore, group, plan, runs, mode: str, before_first_request, prepare
) -> None:
    """Send the pending items of the lengths of ``group`` through one :meth:`Model.run`, storing
    each result as it arrives. Lengths are planned in order; those before the first one with
    pending items are planned at once (the health check runs before anything is sent), the rest
    when the stream reaches them. An item that another writer (a concurrent run of the same
    system) answered meanwhile is skipped, not sent again."""
    todo = iter(group)
    first = None
    for length in todo:
        runs[length] = plan(length)
        if runs[length].pending:
            first = runs[length]
            break
    if first is None:
        return
    if prepare is None:  # the first requests' inputs load while the health check runs
        model.prefetch((it.for_system(mode, answer_space=model.answer_space) for it in first.pending), mode)
    if before_first_request is not None:
        before_first_request()
    bar = tqdm(
        total=first.stats["items"],
        initial=first.stats["reused"],
        desc=f"{model.name}/{mode}@{first.length}",
        unit="item",
        dynamic_ncols=True,
        mininterval=0.5,
        leave=False,
    )
    t0 = time.perf_counter()
    counts = {"new": 0}

    def on_result(item: EvalItem, out: ModelOutput) -> None:
        run = runs[item.length]
        store.put(
            run.keys[item.question_id],
            {
                "question_id": item.question_id,
                "length": run.length,
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
        stats = run.stats
        stats["new"] += 1
        stats["failed"] += int(not out.ok)
        stats["failed_retried"] += int(not out.ok and (out.attempts or 0) > 1)
        counts["new"] += 1
        bar.update(1)
        el = time.perf_counter() - t0
        bar.set_postfix(failed=stats["failed"], rate=f"{counts['new'] / el:.1f}/s" if el > 0 else "-", refresh=False)

    def still_open(run: LengthRun, it: EvalItem) -> bool:
        store.refresh(max_age=2.0)
        if store.has_answer(run.keys[it.question_id]):
            run.stats["reused"] += 1
            bar.update(1)
            return False
        return True

    deferred: list[MemLensError] = []

    def runs_in_order():
        yield first
        for length in todo:  # planned when the stream reaches them
            try:
                run = runs[length] = plan(length)
            except MemLensError as exc:  # the stream ends here: the requests in flight still finish
                deferred.append(exc)
                return
            bar.total += run.stats["items"]
            bar.update(run.stats["reused"])
            bar.set_description(f"{model.name}/{mode}@{length}", refresh=False)
            yield run

    def stream():
        for run in runs_in_order():
            pending, run.pending = run.pending, []
            for it in pending:
                if still_open(run, it):
                    # a system sees the item without its answer key and with neutral ids
                    # (EvalItem.for_system); mode caption then adds the images' adapter texts
                    sent = it.for_system(mode, answer_space=model.answer_space)
                    yield sent if prepare is None else prepare(sent)
            del pending

    try:
        with _frozen_heap():
            model.run(stream(), mode, on_result)
    finally:
        bar.close()
    if deferred:  # a later length could not be read: raised once the answers in flight are stored
        raise deferred[0]
    for length in todo:  # a model that stopped reading early: these lengths still get their views
        runs[length] = plan(length)


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
        return evaluate_lengths(
            model,
            store,
            source,
            lengths,
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
