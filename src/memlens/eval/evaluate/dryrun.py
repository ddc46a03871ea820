"""``memlens evaluate --dry-run``: what the evaluate stage would send for one item, sending nothing.

Opens the benchmark the config names (:func:`memlens.eval.benchmark.open_benchmark`), takes the first
item of the first length the stage would evaluate, renders its prompt with the model's prompt
settings (``layout``, ``label_images``, ``system_prefix``; :func:`memlens.eval.prompt.build_messages`)
and prints the messages with their roles (long text blocks shortened in the middle, images as
``<image sha256[:12]>``) and the results-store request key the stage would use for it, computed the
way the stage computes it (system identity, prompt protocol, mode, item fingerprint).

The model is never instantiated (no client, no server process, no weights): its settings are read
from the composed config. Nothing is written: the results store is only read, to say whether the
item already has a stored answer.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TextIO

from omegaconf import OmegaConf

from memlens.core.config import Paths, resolved_lengths
from memlens.core.errors import ConfigError, DataError
from memlens.core.io import sha256_file
from memlens.core.tasks import task_key
from memlens.eval.benchmark import open_benchmark
from memlens.eval.evaluate.stage import results_root, system_identity
from memlens.eval.prompt import PROMPT_PROTOCOL, build_messages, instruction_for
from memlens.eval.results import ResultsStore, request_key
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


def run(cfg, paths: Paths, *, chars: int = 240, out: TextIO | None = None) -> int:
    """Print the prompt and request key of the first item the evaluate stage would ask."""
    out = out or sys.stdout
    mode = str(cfg.eval.mode)
    if mode not in MODES:
        raise ConfigError(f"unknown eval.mode {mode!r} (known: {', '.join(MODES)})")
    source = open_benchmark(cfg, paths)
    lengths = [str(x) for x in (cfg.eval.get("lengths") or [])] or (
        resolved_lengths(cfg) if str(cfg.data.get("items", "built")) == "built" else source.lengths()
    )
    built = source.lengths()
    missing = [n for n in lengths if n not in built]
    if missing:
        raise ConfigError(f"lengths {missing} are not in the benchmark (built: {built})")
    if not lengths:
        raise DataError("the benchmark has no lengths to evaluate")
    length = lengths[0]
    item = next(iter(source.items(length)), None)
    if item is None:
        raise DataError(f"the benchmark has no item at {length}")

    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    layout = str(model_cfg.get("layout") or cfg.eval.get("layout") or "messages")
    label_images = bool(model_cfg.get("label_images", False))
    system_prefix = model_cfg.get("system_prefix")
    try:
        messages = build_messages(item, mode, layout=layout, label_images=label_images, system_prefix=system_prefix)
    except ValueError as exc:
        raise ConfigError(f"cannot render the prompt of {item.question_id}: {exc}") from None
    identity = system_identity(model_cfg)
    store = ResultsStore(results_root(paths), identity)
    key = request_key(store.key, PROMPT_PROTOCOL, mode, item.fingerprint())
    q = item.question
    n_images = sum(
        b.get("type") == "image_url" for m in messages if isinstance(m["content"], list) for b in m["content"]
    )
    n_chars = sum(len(b.get("text", "")) for m in messages if isinstance(m["content"], list) for b in m["content"])
    target = str(model_cfg.get("_target_", "?"))
    endpoint = ", ".join(
        f"{k} {model_cfg[k]}" for k in ("base_url", "model", "hf_id", "model_path") if model_cfg.get(k)
    )
    head = [
        "memlens evaluate --dry-run: nothing is sent and no model or client is built",
        f"system       {model_cfg.get('name')} ({target.rsplit('.', 1)[-1]}, kind {model_cfg.get('kind') or '?'})"
        + (f"; {endpoint}" if endpoint else ""),
        f"prompt       mode {mode}, layout {layout}, label_images {str(label_images).lower()}, "
        f"system_prefix {_value(system_prefix)}, protocol {PROMPT_PROTOCOL}",
        f"item         {length}: 1 of {source.count(length)} ({source.kind} benchmark), "
        f"question {q.question_id}, {q.question_type}/{q.question_subtype or '-'}, "
        f"judge task {task_key(q.question_type, q.question_subtype, str(q.answer), strict=False)}",
        f"question     {q.question}",
        f"answer       {q.answer}",
        f"request key  {key} ({'answered in' if store.has_answer(key) else 'not yet in'} the results store)",
        f"messages     {len(messages)} messages, {n_images} images, {n_chars} text chars"
        + (f" (text blocks shortened to {chars} chars; the question in full)" if chars > 0 else ""),
        "",
    ]
    out.write("\n".join(head + render_messages(messages, chars, instruction_for(mode))) + "\n")
    return 0
