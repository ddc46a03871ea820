"""The prompts of LLM construction (question writer, user and assistant simulators, checkers).

:data:`PROMPT_VERSION` names this text; it is a DVC param (``generator.llm.prompt_version`` must
equal it) and part of every request's cache key through the messages, so changing a prompt
re-runs exactly the requests it changes. Each system prompt starts with a ``[memlens:<task>]``
line and carries its inputs as one JSON block, so a server log (or a scripted test server) can
tell the tasks apart.
"""

from __future__ import annotations

import json
from typing import Any

from memlens.core.schema import IMAGE_PLACEHOLDER

__all__ = ["PROMPT_VERSION", "assistant_turn", "leak_check", "qa_messages", "task_of", "text_only_answer", "user_turn"]

PROMPT_VERSION = "llmgen-v1"


def _header(task: str) -> str:
    return f"[memlens:{task} {PROMPT_VERSION}]"


def _inputs(d: dict[str, Any]) -> str:
    return "INPUT\n```json\n" + json.dumps(d, ensure_ascii=False, sort_keys=True, indent=1) + "\n```"


def task_of(system_text: str) -> str | None:
    """The task name of a system prompt written here (``qa``, ``user_turn`` ...), else None."""
    if system_text.startswith("[memlens:"):
        return system_text[len("[memlens:") :].split(" ", 1)[0].rstrip("]")
    return None


def qa_messages(inputs: dict[str, Any], schema: dict) -> list[dict]:
    """Question writer (paper steps 1, 3 and 4): background with named entities, entity abstraction
    with image-dependent anaphora, and the (question, answer, evidence facts) triple.

    ``inputs``: topic, subtopic, question_type, question_subtype, draft_question, answer,
    format_instruction, facts (one sentence per evidence fact, ``<image>`` where the photo goes),
    forbidden (strings no text may contain)."""
    system = "\n".join(
        [
            _header("qa"),
            "You write one question of a multimodal long-term memory benchmark, from a user's point of view.",
            "1. background: a paragraph of three to five sentences about the topic that names at least two",
            "   recognisable entities, with every forbidden string replaced by an image-dependent anaphor",
            f"   (e.g. 'the bridge in this photo {IMAGE_PLACEHOLDER}').",
            "2. entities: for every forbidden string that names an entity, its category and the anaphor used.",
            "3. question: ask what draft_question asks, in natural words; keep every label such as (1) or (A),",
            "   and end with format_instruction verbatim when it is given. The answer must need the photos.",
            "4. answer: exactly the given answer (the official answer format).",
            "5. evidence_facts: one sentence per given fact, in the same order, as the user would say it;",
            f"   keep each {IMAGE_PLACEHOLDER} of a fact exactly once and never name a forbidden string.",
            "Reply with one JSON object matching this schema:",
            json.dumps(schema, sort_keys=True),
        ]
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": _inputs(inputs)}]


def _history_for(role: str, history: list[tuple[str, str]]) -> list[dict]:
    """The conversation as the simulated ``role`` sees it: its own turns as ``assistant``, the other
    side's as ``user``. Images are not sent; each ``<image>`` is shown as ``[photo]``."""
    out = []
    for r, text in history:
        shown = text.replace(IMAGE_PLACEHOLDER, "[photo]")
        out.append({"role": "assistant" if r == role else "user", "content": shown})
    return out


def user_turn(ctx: dict[str, Any], history: list[tuple[str, str]]) -> list[dict]:
    """User simulator: the next user message. ``ctx``: topic, subtopic, track, words [lo, hi],
    mention (a sentence to include verbatim, or None), avoid (strings never to write)."""
    rules = [
        _header("user_turn"),
        "You are role-playing a person chatting with an AI assistant. Write only your next message.",
        f"Topic: {ctx['topic']} ({ctx['subtopic']}). Stay natural and specific; do not greet at length.",
        f"Length: {ctx['words'][0]} to {ctx['words'][1]} words. End with '.', '?' or '!'.",
    ]
    if ctx.get("mention"):
        rules.append(
            "Include this sentence exactly as written, including the tag "
            f"{IMAGE_PLACEHOLDER} (it stands for the photo you attach), and mention it incidentally: "
            + json.dumps(ctx["mention"], ensure_ascii=False)
        )
        rules.append("Do not describe what the photo shows.")
    else:
        rules.append(f"Do not attach photos and never write {IMAGE_PLACEHOLDER}.")
    rules.append(_inputs({k: ctx.get(k) for k in ("topic", "subtopic", "track", "words", "mention", "avoid")}))
    msgs = [{"role": "system", "content": "\n".join(rules)}, *_history_for("user", history)]
    if not history or history[-1][0] == "user":
        msgs.append({"role": "user", "content": "(Start the conversation.)"})
    return msgs


def assistant_turn(ctx: dict[str, Any], history: list[tuple[str, str]]) -> list[dict]:
    """Assistant simulator (the paper's three-part reply): acknowledge, inform, ask a knowledge
    follow-up. ``ctx``: topic, subtopic, words [lo, hi], photo (the last user turn has one)."""
    rules = [
        _header("assistant_turn"),
        "You are a helpful AI assistant. Reply to the user's last message in three parts:",
        "acknowledge what the user shared in one or two sentences"
        + (" (a photo is marked [photo]; do not describe it)" if ctx.get("photo") else "")
        + "; give substantive information covering one or two key points; end with one knowledge-oriented",
        "follow-up question (e.g. 'Would you like tips on ...?'), not a personal one. The reply must end with '?'.",
        f"Length: {ctx['words'][0]} to {ctx['words'][1]} words. Plain prose, no lists, no headings.",
        _inputs({k: ctx.get(k) for k in ("topic", "subtopic", "words", "photo")}),
    ]
    return [{"role": "system", "content": "\n".join(rules)}, *_history_for("assistant", history)]


def leak_check(turn: str, hidden: list[str], schema: dict) -> list[dict]:
    """Semantic-leakage check of one turn: does the text reveal a hidden fact (the answer, what only
    the image shows)?"""
    system = "\n".join(
        [
            _header("leak_check"),
            f"You audit one chat message. {IMAGE_PLACEHOLDER} marks an attached photo you cannot see.",
            "Hidden facts are known only from the photo. Does the text of the message state, paraphrase or",
            "let a reader infer any hidden fact, or describe the photo's content? Reply with one JSON object",
            "matching this schema: " + json.dumps(schema, sort_keys=True),
        ]
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": _inputs({"message": turn, "hidden_facts": hidden})},
    ]


def text_only_answer(question: str, schema: dict) -> list[dict]:
    """The text-only solver (paper: a separate model answers from the question alone)."""
    system = "\n".join(
        [
            _header("text_only"),
            "Answer the question from the question text alone (you see no photo and no conversation).",
            "Set confident to true only if the text alone determines the answer. Reply with one JSON object",
            "matching this schema: " + json.dumps(schema, sort_keys=True),
        ]
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": _inputs({"question": question})}]
