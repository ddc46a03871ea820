"""The LLM-labelled variant of the error taxonomy (the paper's method) and its agreement with the
exact one.

With ``report.llm_labels`` set (an OpenAI-compatible endpoint: ``base_url``, ``model``,
``api_key_env`` ...), the report stage asks that model to put each wrong answer of the system it
reports under one of the seven labels of :data:`memlens.eval.report.taxonomy.LABELS`, given the
question, the reference answer (and the KU old value) and the system's answer, as the paper did.
Every successful reply is cached in ``<cache>/error_labels.sqlite`` by its request (model id,
decoding, messages), so a second report sends no request; a failed or unparsable reply is recorded
as a failure, never as a label. The labels are kept per system next to the verdict archive
(``<cache>/error_labels/<dataset>/<system>/<mode>/<length>.jsonl``: question, the answer's request
key, label, labeller), so the cross-system report compares the exact taxonomy with every system's
LLM labels of the same answers (:func:`agreement`: raw agreement, Cohen's kappa, agreement on
near-/total-miss, precision and recall per label).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from memlens.core.io import enumerate_jsonl, write_jsonl
from memlens.core.reqcache import CachedCompletion, RequestCache, request_key
from memlens.eval.report.taxonomy import GROUPS, LABELS, UNTRACEABLE

log = logging.getLogger(__name__)

__all__ = [
    "PROMPT_VERSION",
    "DEFINITIONS",
    "LabellerSettings",
    "build_messages",
    "parse_label",
    "label_answers",
    "labels_dir",
    "write_labels",
    "read_labels",
    "agreement",
]

PROMPT_VERSION = "1"
DEFINITIONS = {
    "grounding_failure": "the answer comes from the right evidence (image or session) but reads a wrong detail of "
    "it, or misreads the asked detail",
    "computation_slip": "the right operands (values, dates) were used, but the arithmetic, counting, comparison or "
    "ordering went wrong",
    "incomplete_aggregation": "only part of the needed evidence was combined (one receipt of several, a count that "
    "misses some sessions)",
    "stale_knowledge": "the answer gives an earlier value that was later updated",
    "wrong_evidence": "the answer uses a different, similar image or another session than the one asked about",
    "unsupported_answer": "the answer has no anchor in the conversation (invented, hedged between candidates, or an "
    "answer where no answer exists)",
    "false_refusal": "the system declined to answer although the conversation holds the answer",
}
_SYSTEM = (
    "You analyse wrong answers of a multimodal long-term memory benchmark. A system read a long conversation with "
    "images and answered a question about it; its answer was judged wrong. Assign exactly one label:\n"
    + "\n".join(f"- {k}: {v}" for k, v in DEFINITIONS.items())
    + '\nReply with JSON only: {"label": "<one of the labels>"}.'
)


@dataclass(frozen=True)
class LabellerSettings:
    """The endpoint of the labelling model (``report.llm_labels``)."""

    base_url: str
    model: str
    model_id: str | None = None
    api_key_env: str | None = "MEMLENS_JUDGE_API_KEY"
    concurrency: int = 8
    max_new_tokens: int = 256
    temperature: float = 0.0
    timeout_s: float = 300.0
    max_retries: int = 4

    @property
    def labeller(self) -> str:
        return f"{self.model_id or self.model}@prompt-{PROMPT_VERSION}"

    def client_config(self):
        from memlens.core.http import OpenAICompatibleConfig

        return OpenAICompatibleConfig(
            base_url=self.base_url,
            model=self.model,
            api_key_env=self.api_key_env,
            concurrency=self.concurrency,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            max_image_side=None,
        )


def build_messages(question: str, reference: str, answer: str, old_answer: str | None = None) -> list[dict]:
    lines = [f"Question: {question}", f"Reference answer: {reference}"]
    if old_answer:
        lines.append(f"Outdated (earlier) value: {old_answer}")
    lines.append(f"System answer: {answer}")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


_JSON_RE = re.compile(r"""["']label["']\s*:\s*["']([A-Za-z _-]+)["']""")


def _canon(name: str) -> str:
    return re.sub(r"[\s-]+", "_", name.strip().lower())


def parse_label(text: str | None) -> str | None:
    """The label of a reply: the JSON ``label`` field, else the last label named in the text."""
    if not text:
        return None
    found = [_canon(m) for m in _JSON_RE.findall(text)]
    for f in reversed(found):
        if f in LABELS:
            return f
    low = _canon(text)
    best = None
    for lb in LABELS:
        i = low.rfind(lb)
        if i >= 0 and (best is None or i > best[0]):
            best = (i, lb)
    return best[1] if best else None


def label_answers(
    settings: LabellerSettings, items: list[tuple[str, list[dict]]], cache_path: Path, *, progress: bool = False
) -> dict[str, str | None]:
    """``{item key: label or None}`` for ``(key, messages)`` items; cached replies are reused."""
    from memlens.core.http import OpenAICompatibleClient

    params = {"temperature": settings.temperature, "max_new_tokens": settings.max_new_tokens, "v": PROMPT_VERSION}
    model_id = settings.model_id or settings.model
    cache = RequestCache(cache_path)
    out: dict[str, str | None] = {}
    todo: dict[str, tuple[str, list[dict]]] = {}
    try:
        for key, messages in items:
            rk = request_key(model_id, params, messages)
            hit = cache.get(rk)
            if hit is not None:
                out[key] = parse_label(hit.text)
            else:
                todo.setdefault(rk, (key, messages))
        if todo:
            client = OpenAICompatibleClient(settings.client_config())
            owners: dict[str, list[str]] = {}
            for key, messages in items:
                rk = request_key(model_id, params, messages)
                if rk in todo:
                    owners.setdefault(rk, []).append(key)

            def on_result(rk: str, res) -> None:
                label = parse_label(res.text) if res.ok else None
                if label is not None:  # only parsable replies are kept: a failure is asked again
                    cache.put(
                        rk,
                        model_id,
                        "error_label",
                        CachedCompletion(
                            res.text or "", res.prompt_tokens or 0, res.completion_tokens or 0, None, None
                        ),
                    )
                for k in owners.get(rk, []):
                    out[k] = label

            client.run_many(
                [(rk, msgs) for rk, (_, msgs) in todo.items()], on_result, progress=progress, total=len(todo)
            )
            log.info("LLM error labels: %d requests sent, %d cached", len(todo), len(items) - len(todo))
    finally:
        cache.close()
    return out


def labels_dir(cache: Path, dataset: str) -> Path:
    return Path(cache) / "error_labels" / dataset[:16]


def write_labels(root: Path, system: str, mode: str, length: str, rows: list[dict]) -> Path:
    out = root / system / mode / f"{length}.jsonl"
    write_jsonl(out, sorted(rows, key=lambda r: r["question_id"]))
    return out


def read_labels(root: Path, mode: str = "standard") -> dict[tuple[str, str, str, str], dict]:
    """``{(system, length, question_id, request_key): row}`` of every stored label file."""
    out = {}
    if not Path(root).is_dir():
        return out
    for p in sorted(Path(root).glob(f"*/{mode}/*.jsonl")):
        system, length = p.parent.parent.name, p.stem
        for _, r in enumerate_jsonl(p):
            if isinstance(r, dict) and r.get("label"):
                out[(system, length, r["question_id"], r.get("request_key", ""))] = r
    return out


def agreement(errors: list[dict], labels: dict) -> dict:
    """Exact vs LLM labels of the same wrong answers (traceable ones; the exact ``untraceable``
    answers are counted apart with the LLM's labels of them)."""
    pairs, untraceable = [], Counter()
    labellers = set()
    for e in errors:
        r = labels.get((e["system"], e["length"], e["question_id"], e.get("request_key", "")))
        if r is None or r["label"] not in LABELS:
            continue
        labellers.add(r.get("labeller", ""))
        if e["label"] == UNTRACEABLE:
            untraceable[r["label"]] += 1
            continue
        pairs.append((e["label"], r["label"]))
    n = len(pairs)
    out = {"n": n, "labeller": ", ".join(sorted(labellers)), "untraceable_llm": dict(sorted(untraceable.items()))}
    if not n:
        return {**out, "agreement": None, "kappa": None, "group_agreement": None, "by_label": [], "confusion": []}
    po = sum(a == b for a, b in pairs) / n
    ca, cb = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    pe = sum(ca[k] * cb[k] for k in LABELS) / (n * n)
    kappa = (po - pe) / (1 - pe) if pe < 1 else (1.0 if po == 1 else 0.0)
    group = sum(GROUPS[a] == GROUPS[b] for a, b in pairs) / n
    by_label = []
    for lb in LABELS:
        both = sum(1 for a, b in pairs if a == lb and b == lb)
        by_label.append(
            {
                "label": lb,
                "n_exact": ca[lb],
                "n_llm": cb[lb],
                "n_both": both,
                "precision": both / cb[lb] if cb[lb] else None,
                "recall": both / ca[lb] if ca[lb] else None,
            }
        )
    confusion = [{"exact": a, "llm": b, "n": k} for (a, b), k in sorted(Counter(pairs).items())]
    return {
        **out,
        "agreement": po,
        "kappa": kappa,
        "group_agreement": group,
        "by_label": by_label,
        "confusion": confusion,
    }
