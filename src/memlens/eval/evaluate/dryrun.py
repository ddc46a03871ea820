"""``memlens evaluate --dry-run``: what the evaluate stage would send for one item, sending nothing.

Opens the benchmark the config names (:func:`memlens.eval.benchmark.open_benchmark`), takes the first
item of the first length the stage would evaluate, renders its prompt with the model's prompt
settings (``layout``, ``label_images``, ``system_prefix``; :func:`memlens.eval.prompt.build_messages`)
and prints the messages with their roles (long text blocks shortened in the middle, images as
``<image sha256[:12]>``) and the results-store request key the stage would use for it, computed the
way the stage computes it (system identity, prompt protocol, mode, item fingerprint).

The system identity the results store keys on is printed too, key by key. A model is never
instantiated (no client, no server process, no weights): its settings are read from the composed
config. A memory agent (``kind: agent``) is: its identity holds its prompt hash and its input
adapter's id, which only the agent object knows; building it connects to nothing. For an agent the
item is the first of the questions it would be asked (the agent subset by default) and, instead of
an LVLM prompt it never sends, the dry run shows what the agent is (adapter, retriever, backbone)
and what it would be given (the role-stripped sessions); it writes its prompts from its memory at
answer time. Nothing is written: the results store is only read, to say whether the item already
has a stored answer.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TextIO

from memlens.core.config import Paths, resolved_lengths, section
from memlens.core.errors import ConfigError, DataError
from memlens.core.io import sha256_file
from memlens.core.registry import class_for_target
from memlens.core.settings import Settings, as_settings, operational_keys
from memlens.core.tasks import task_key
from memlens.eval.agents.subset import question_subset
from memlens.eval.benchmark import open_benchmark
from memlens.eval.evaluate.stage import build_model, results_root
from memlens.eval.prompt import PROMPT_PROTOCOL, build_messages, instruction_for
from memlens.eval.results import ResultsStore, request_key, system_identity
from memlens.eval.systems.base import MODES

__all__ = ["render_messages", "run", "shorten"]

_SHA256 = re.compile(r"[0-9a-f]{64}")
INDENT = "    "


def shorten(text: str, chars: int) -> str:
    """``text`` with its middle replaced by ``[... N chars ...]`` when longer than ``chars``
    (the first and last ``chars // 2`` characters are kept; ``chars <= 0`` keeps everything)."""
    half = chars // 2
    if chars <= 0 or len(text) <= chars + 24:
        return text
    return f"{text[:half]}[... {len(text) - 2 * half} chars ...]{text[-half:]}"


def image_label(ref) -> str:
    """``<image sha256[:12]>`` of an image block's reference (built images are named by their hash;
    other images are hashed)."""
    image_id = str(getattr(ref, "image_id", "") or "")
    sha = image_id if _SHA256.fullmatch(image_id) else sha256_file(str(ref))
    return f"<image {sha[:12]}>"


def render_messages(messages: list[dict], chars: int, question_from: str | None = None) -> list[str]:
    """Printable lines of chat messages, text blocks shortened to ``chars``; the question is never
    shortened: the last text block of the last message is kept whole from ``question_from`` (the
    instruction line that opens the question) on, or entirely when that is not given."""
    lines: list[str] = []
    for i, m in enumerate(messages, 1):
        content = m["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
        n_img = sum(b.get("type") == "image_url" for b in blocks)
        n_chars = sum(len(b.get("text", "")) for b in blocks)
        lines.append(f"[{i}] {m['role']}  ({n_chars} chars, {n_img} images)")
        last_text = max((k for k, b in enumerate(blocks) if b.get("type") == "text"), default=-1)
        for k, b in enumerate(blocks):
            if b.get("type") == "image_url":
                ref = b["image_url"]["url"] if isinstance(b["image_url"], dict) else b["image_url"]
                lines.append(INDENT + image_label(ref))
                continue
            text = b.get("text", "")
            if i == len(messages) and k == last_text:
                cut = text.rfind(question_from) if question_from else 0
                cut = max(cut, 0)
                text = shorten(text[:cut], chars) + text[cut:]
            else:
                text = shorten(text, chars)
            lines += [(INDENT + t).rstrip() for t in text.split("\n")]
    return lines


def _value(v) -> str:
    return "null" if v is None else json.dumps(v)


def run(cfg: Settings, paths: Paths, *, chars: int = 240, out: TextIO | None = None) -> int:
    """Print the prompt and request key of the first item the evaluate stage would ask."""
    cfg = as_settings(cfg)
    out = out or sys.stdout
    mode = str(cfg.eval.mode)
    if mode not in MODES:
        raise ConfigError(f"unknown eval.mode {mode!r} (known: {', '.join(MODES)})")
    source = open_benchmark(cfg, paths, link_images=False)  # images shown by hash: nothing linked
    lengths = [str(x) for x in cfg.eval.lengths] or (
        resolved_lengths(cfg) if cfg.data.items == "built" else source.lengths()
    )
    built = source.lengths()
    missing = [n for n in lengths if n not in built]
    if missing:
        raise ConfigError(f"lengths {missing} are not in the benchmark (built: {built})")
    if not lengths:
        raise DataError("the benchmark has no lengths to evaluate")
    length = lengths[0]
    model_cfg = section(cfg, "model")["model"]  # as composed: what the system identity is made of
    model = cfg.model  # typed, every default filled in
    agent = None
    if model.kind == "agent":
        agent = build_model(cfg)  # no client, no connection: only what its identity needs
        agent.attach(paths, source)
    subset = question_subset(cfg, source, agent or _ModelClass(model.target))
    item = next((it for it in source.items(length) if subset is None or it.question_id in subset), None)
    if item is None:
        raise DataError(f"the benchmark has no item at {length}" + ("" if subset is None else " in eval.subset"))
    if agent is not None:
        return _agent_dry_run(paths, source, agent, model_cfg, item, length, mode, subset, out)

    # prompt options exist for the LVLM backends only (a baseline's schema has none)
    layout = str(getattr(model, "layout", None) or cfg.eval.layout)
    label_images = bool(getattr(model, "label_images", False))
    system_prefix = getattr(model, "system_prefix", None)
    try:
        messages = build_messages(item, mode, layout=layout, label_images=label_images, system_prefix=system_prefix)
    except ValueError as exc:
        raise ConfigError(f"cannot render the prompt of {item.question_id}: {exc}") from None
    identity = system_identity(
        model_cfg, _caption_extra(cfg, paths, source, mode), operational=operational_keys(type(cfg.model))
    )
    store = ResultsStore(results_root(paths), identity)
    key = request_key(store.key, PROMPT_PROTOCOL, mode, item.fingerprint())
    q = item.question
    n_images = sum(
        b.get("type") == "image_url" for m in messages if isinstance(m["content"], list) for b in m["content"]
    )
    n_chars = sum(len(b.get("text", "")) for m in messages if isinstance(m["content"], list) for b in m["content"])
    target = model.target
    endpoint = ", ".join(
        f"{k} {getattr(model, k)}" for k in ("base_url", "model", "hf_id", "model_path") if getattr(model, k, None)
    )
    head = [
        "memlens evaluate --dry-run: nothing is sent and no model or client is built",
        f"system       {model.name} ({target.rsplit('.', 1)[-1]}, kind {model.kind or '?'})"
        + (f"; {endpoint}" if endpoint else ""),
        f"prompt       mode {mode}, layout {layout}, label_images {str(label_images).lower()}, "
        f"system_prefix {_value(system_prefix)}, protocol {PROMPT_PROTOCOL}",
        f"item         {length}: 1 of {source.count(length)} ({source.kind} benchmark), "
        f"question {q.question_id}, {q.question_type}/{q.question_subtype or '-'}, "
        f"judge task {task_key(q.question_type, q.question_subtype, str(q.answer), strict=False)}",
        f"question     {q.question}",
        f"answer       {q.answer}",
        f"request key  {key} ({'answered in' if store.has_answer(key) else 'not yet in'} the results store)",
        *identity_lines(identity, store.key),
        f"messages     {len(messages)} messages, {n_images} images, {n_chars} text chars"
        + (f" (text blocks shortened to {chars} chars; the question in full)" if chars > 0 else ""),
        "",
    ]
    out.write("\n".join(head + render_messages(messages, chars, instruction_for(mode))) + "\n")
    return 0


class _ModelClass:
    """What :func:`question_subset` reads of a model (its ``default_subset``), from its class alone."""

    def __init__(self, target: str):
        self.default_subset = getattr(
            class_for_target(("model", "agent"), target, section="model"), "default_subset", None
        )


def _caption_extra(cfg, paths: Paths, source, mode: str) -> dict:
    """The identity the ``caption`` mode adds (its adapter's id), as the evaluate stage adds it."""
    if mode != "caption":
        return {}
    from memlens.eval.agents.captions import CaptionMode

    return {"caption_adapter": CaptionMode(cfg.eval, paths, source).adapter_id}


def identity_lines(identity: dict, key: str) -> list[str]:
    """The system identity the results store keys on, one ``key = value`` line each."""
    lines = [f"identity     system key {key} (results/{key[:32]}/), from:"]
    lines += [f"{INDENT}{k} = {json.dumps(v, sort_keys=True)}" for k, v in identity.items()]
    return lines


def _agent_dry_run(paths: Paths, source, agent, model_cfg: dict, item, length: str, mode: str, subset, out) -> int:
    """The dry run of a memory agent: its identity, what it is, what it would be given."""
    if mode != "standard":
        raise ConfigError(f"{agent.name}: memory agents answer in eval.mode=standard only, not {mode!r}")
    identity = system_identity(model_cfg, agent.identity_extra(), operational=operational_keys(type(agent).Config))
    store = ResultsStore(results_root(paths), identity)
    key = request_key(store.key, PROMPT_PROTOCOL, mode, item.fingerprint())
    q = item.question
    target = str(model_cfg["_target_"])
    backbone = ", ".join(f"{k} {model_cfg[k]}" for k in ("model", "hf_id", "base_url") if model_cfg.get(k))
    # what the role-stripped view (memlens.eval.agents.view) will hold, without building it: it
    # copies the images into the agents' image folder, and a dry run writes nothing
    sessions = sorted(item.sessions, key=lambda s: s.date or "")
    n_images = len(item.image_ids)
    asked = sum(1 for it in source.items(length) if it.question_id in subset) if subset is not None else None
    head = [
        "memlens evaluate --dry-run: nothing is sent and no client is built",
        f"system       {agent.name} (memory agent {target.rsplit('.', 1)[-1]}, kind agent)",
        f"agent        adapter {agent.adapter_name} ({agent.adapter_id()}"
        + (", an UPPER BOUND: ground truth written as text" if getattr(agent.adapter, "upper_bound", False) else "")
        + f"), retriever {agent.retrieval()}, tokenizer {agent.tokenizer_name}",
        f"backbone     {backbone or '-'}",
        f"item         {length}: 1 of {source.count(length) if asked is None else asked} "
        f"({source.kind} benchmark{'' if asked is None else ', eval.subset'}), "
        f"question {q.question_id}, {q.question_type}/{q.question_subtype or '-'}, "
        f"judge task {task_key(q.question_type, q.question_subtype, str(q.answer), strict=False)}",
        f"question     {q.question} (given at answer time, dated {q.question_date or 'unknown'})",
        f"answer       {q.answer}",
        f"request key  {key} ({'answered in' if store.has_answer(key) else 'not yet in'} the results store)",
        *identity_lines(identity, store.key),
        f"given        {len(sessions)} sessions in date order as S001..S{len(sessions):03d} (their own ids, "
        f"evidence flags and image paths stripped), {n_images} images by content hash; the agent writes "
        "its prompts from its memory at answer time",
    ]
    out.write("\n".join(head) + "\n")
    return 0
