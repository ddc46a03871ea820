"""evaluate stage: run the configured system on every instance, appending to the prediction store.

Resumable: items already answered (``ok``) are skipped; failed items are retried. A progress bar
shows done/total, throughput and failures. Writes ``data/predictions/<system>/<mode>/<length>.jsonl``.
"""
from __future__ import annotations

import logging
import time

from hydra.utils import instantiate
from tqdm import tqdm

from memlens.core.config import Paths, resolved_lengths, section
from memlens.core.errors import ConfigError
from memlens.core.items import EvalItem
from memlens.eval.systems.base import MODES, Model, ModelOutput
from memlens.eval.benchmark import open_benchmark
from memlens.eval.results import PredictionStore
from memlens.core.schema import Prediction
from memlens.core.store import hash_tree, write_manifest

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
            rest = text[i + len("[answer]"):]
            j = rest.lower().find("[answer]")
            text = (rest[:j] if j >= 0 else rest).strip()
    return text


def build_model(cfg) -> Model:
    try:
        model = instantiate(cfg.model, _convert_="all")
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"cannot build model {cfg.model.get('name')!r} from conf/model: {exc}") from None
    if not isinstance(model, Model):
        raise ConfigError(f"model._target_ {cfg.model.get('_target_')!r} is not a memlens Model")
    return model


def evaluate_length(model: Model, source, length: str, mode: str, paths: Paths, max_items=None) -> dict:
    store = PredictionStore(paths.predictions, model.name, mode, length)
    done = store.done_ids()
    total = source.count(length)
    if max_items:
        total = min(total, int(max_items))

    def todo():
        for i, item in enumerate(source.items(length)):
            if max_items and i >= int(max_items):
                return
            if item.question_id not in done:
                yield item

    stats = {"done_before": len(done), "new": 0, "failed": 0}
    bar = tqdm(total=total, initial=min(len(done), total), desc=f"{model.name}/{mode}@{length}",
               unit="item", dynamic_ncols=True, mininterval=0.5, leave=False)
    t0 = time.perf_counter()

    def on_result(item: EvalItem, out: ModelOutput) -> None:
        q = item.question
        pred = Prediction(system=model.name, mode=mode, length=length, question_id=q.question_id,
                          question_type=q.question_type, question_subtype=q.question_subtype, ok=out.ok,
                          raw_prediction=out.text, prediction=postprocess(out.text, mode) if out.ok else None,
                          error=out.error, prompt_tokens=out.prompt_tokens,
                          completion_tokens=out.completion_tokens, meta=out.meta)
        store.append(pred, {"latency_s": out.latency_s, "attempts": out.attempts})
        stats["new"] += 1
        stats["failed"] += int(not out.ok)
        bar.update(1)
        el = time.perf_counter() - t0
        bar.set_postfix(failed=stats["failed"], rate=f"{stats['new'] / el:.1f}/s" if el > 0 else "-")

    try:
        model.run(todo(), mode, on_result)
    finally:
        bar.close()
        store.compact()
    log.info("evaluate %s/%s@%s: %d new, %d already done, %d failed", model.name, mode, length,
             stats["new"], stats["done_before"], stats["failed"])
    return stats


def run(cfg, paths: Paths) -> None:
    mode = str(cfg.eval.mode)
    if mode not in MODES:
        raise ConfigError(f"unknown eval.mode {mode!r} (known: {', '.join(MODES)})")
    source = open_benchmark(cfg, paths)
    lengths = [str(x) for x in (cfg.eval.get("lengths") or [])] or (
        resolved_lengths(cfg) if str(cfg.data.get("source", "built")) == "built" else source.lengths())
    built = source.lengths()
    missing = [n for n in lengths if n not in built]
    if missing:
        raise ConfigError(f"lengths {missing} are not in the benchmark (built: {built})")
    model = build_model(cfg)
    summary = {}
    try:
        for length in lengths:
            summary[length] = evaluate_length(model, source, length, mode, paths, cfg.eval.get("max_items"))
    finally:
        model.close()
    out = paths.predictions / model.name
    arts = hash_tree(out)
    extra = {"system": model.name, "mode": mode, "lengths": lengths}
    extra["dataset_sha256"] = source.dataset_hash()  # names exactly what was evaluated
    write_manifest(out, "evaluate", section(cfg, "model", "eval"), arts, code=(__name__,), extra=extra)
