"""M3-Agent style agent: sessions memorized by a VLM in batches, then a search/answer control loop.

Published settings: each session rendered as one composite screenshot-style image, batches of
10 sessions memorized by a VLM (an M3-Agent memorization model) into JSON
``{"video_descriptions": [...], "high_level_conclusions": [...]}``, stored in a per-question
memory and embedded (text-embedding-3-large); a control model then emits
``Action: [Search] Content: <query>`` or ``Action: [Answer] Content: <answer>``, at most 5 rounds.

Here: with ``adapter=interleaved`` (default) each session of a batch is shown to the memorizer as
its text with its original images in place; with ``adapter=render`` as the composite images of the
render adapter (``memlens.eval.memory.render``, ``render_session``, cached by session content). The memorizer
(``memorizer_model`` served at ``base_url``; default: ``model``) is asked to start every entry
with the id of the session it comes from (``[S003] ...``), which attributes entries to sessions
(an entry without a known id is attributed to the whole batch). Entries are embedded by the dense
retriever; each ``[Search]`` returns the top ``search_top_k`` entries. After ``max_rounds``
rounds without an answer the model is asked for a final answer. Unparsable memorizer output is
kept as one description (counted in ``parse_failures``).
"""

from __future__ import annotations

import asyncio
import json
import re
from types import SimpleNamespace
from typing import Any, Literal

from memlens.core.registry import component
from memlens.core.settings import PositiveInt, configured
from memlens.eval.agents.runtime import AgentAnswer, AgentSettings, Memory, MemoryAgent, QuestionContext, Retrieved
from memlens.eval.agents.view import AgentSession

__all__ = ["M3Agent", "parse_action", "parse_memory_json"]

PROMPTS = {
    "memorize": (
        "Below are {n} chat sessions between a user and an assistant, with their dates. Write what "
        'should be remembered from them as JSON with two lists: "video_descriptions" (concrete '
        "facts, including everything visible in the images: numbers, names, times, prices) and "
        '"high_level_conclusions" (what the facts say about the user). Start every entry with the '
        'id of the session it comes from in brackets, e.g. "[S003] ...". Reply with the JSON only.'
    ),
    "control": (
        "You answer a question about the user's past conversations by searching your memory. Each "
        "turn, reply with exactly one action:\nAction: [Search]\nContent: <a search query>\nor\n"
        "Action: [Answer]\nContent: <the final answer>\nYou may search at most {rounds} times. If the "
        "memory does not contain the answer, answer 'Insufficient information'.\n\n"
        "Current date: {question_date}\nQuestion: {question}"
    ),
    "results": 'Search results for "{query}":\n{results}',
    "final": "No more searches are allowed. Reply now with Action: [Answer] and Content: <the final answer>.",
}

_TAG = re.compile(r"^\s*\[(S\d{3,})\]\s*")
_ACTION = re.compile(r"action\s*:\s*\[\s*(search|answer)\s*\]", re.IGNORECASE)
_CONTENT = re.compile(r"content\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)


def parse_memory_json(text: str) -> tuple[list[str], list[str]] | None:
    """``(video_descriptions, high_level_conclusions)`` of a memorizer reply, or None if unparsable."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    out = []
    for key in ("video_descriptions", "high_level_conclusions"):
        v = data.get(key) or []
        out.append([str(x) for x in v if str(x).strip()] if isinstance(v, list) else [str(v)])
    return out[0], out[1]


def parse_action(text: str) -> tuple[str, str]:
    """``("search" | "answer", content)``; a reply with no action is taken as the answer."""
    m = _ACTION.search(text or "")
    if not m:
        return "answer", (text or "").strip()
    rest = text[m.end() :]
    c = _CONTENT.search(rest)
    content = (c.group(1) if c else rest).strip()
    return m.group(1).lower(), content


class _GraphMemory(Memory):
    def __init__(self, ctx: QuestionContext, agent: M3Agent):
        super().__init__(ctx)
        self.agent = agent
        self.batch: list[AgentSession] = []
        self.entries: list[tuple[str, str, str, str]] = []  # (entry id, session id, date, text)
        self.dates: dict[str, str] = {}
        self.parse_failures = 0
        self.batches = 0

    async def ingest(self, session: AgentSession) -> None:
        self.batch.append(session)
        self.dates[session.session_id] = session.date
        if len(self.batch) >= self.agent.batch_sessions:
            await self._memorize()

    async def finish_ingest(self) -> None:
        if self.batch:
            await self._memorize()

    async def _content(self, sessions: list[AgentSession]) -> list[dict]:
        blocks: list[dict] = [{"type": "text", "text": PROMPTS["memorize"].format(n=len(sessions))}]
        rendered = await self.agent.render(sessions)
        for s, pages in zip(sessions, rendered):
            blocks.append({"type": "text", "text": f"\n=== Session {s.session_id} ({s.date}) ==="})
            if pages is not None:
                blocks += [{"type": "image_url", "image_url": {"url": str(p)}} for p in pages]
                continue
            for t in s.turns:
                parts = t.content.split("<image>")
                blocks.append({"type": "text", "text": f"[{t.role.capitalize()}]: {parts[0]}"})
                for im, piece in zip(t.images, parts[1:]):
                    blocks.append({"type": "image_url", "image_url": {"url": str(im.path)}})
                    if piece.strip():
                        blocks.append({"type": "text", "text": piece})
        return blocks

    async def _memorize(self) -> None:
        sessions, self.batch = self.batch, []
        self.batches += 1
        raw = await self.ctx.chat(
            [{"role": "user", "content": await self._content(sessions)}],
            model=self.agent.memorizer_model,
            what=f"memorize batch {self.batches}",
        )
        parsed = parse_memory_json(raw)
        if parsed is None:
            self.parse_failures += 1
            parsed = ([raw.strip()] if raw.strip() else [], [])
        ids = {s.session_id for s in sessions}
        for kind, items in zip(("d", "c"), parsed):
            for text in items:
                m = _TAG.match(text)
                owners = [m.group(1)] if m and m.group(1) in ids else sorted(ids)
                body = _TAG.sub("", text).strip()
                for sid in owners:
                    eid = f"{kind}{len(self.entries):05d}"
                    self.entries.append((eid, sid, self.dates[sid], body))

    async def answer(self, question: str, question_date: str) -> AgentAnswer:
        from memlens.eval.memory.retrieval import Doc, build_retriever

        a = self.agent
        retriever = build_retriever("dense", encoder=a.text_encoder())
        docs = [Doc(doc_id=e, session_id=s, date=d, text=f"({d}) {t}") for e, s, d, t in self.entries]

        def locked(fn, *args):
            with a.encoder_lock:
                return fn(*args)

        await asyncio.to_thread(locked, retriever.index, docs)  # CPU work, off the event loop
        text_of = {e: f"({d}) {t}" for e, s, d, t in self.entries}
        messages = [
            {
                "role": "user",
                "content": PROMPTS["control"].format(
                    rounds=a.max_rounds, question_date=question_date, question=question
                ),
            }
        ]
        best: dict[str, float] = {}
        searches = 0
        answer = None
        for rnd in range(a.max_rounds + 1):
            if rnd == a.max_rounds:
                messages.append({"role": "user", "content": PROMPTS["final"]})
            reply = await self.ctx.chat(messages, what=f"control round {rnd + 1}")
            action, content = parse_action(reply)
            if action == "answer" or rnd == a.max_rounds:
                answer = content
                break
            searches += 1
            hits = await asyncio.to_thread(locked, retriever.search, content, a.search_top_k) if self.entries else []
            for h in hits:
                if h.session_id not in best or h.score > best[h.session_id]:
                    best[h.session_id] = h.score
            results = "\n".join(f"- {text_of[h.doc_id]}" for h in hits) or "(nothing found)"
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": PROMPTS["results"].format(query=content, results=results)},
            ]
        order = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
        retrieved = [Retrieved(sid, score, i + 1) for i, (sid, score) in enumerate(order)]
        notes = {"searches": searches, "batches": self.batches, "parse_failures": self.parse_failures}
        return AgentAnswer((answer or "").strip(), retrieved, notes)

    def stats(self) -> dict:
        return {"items": len(self.entries), "bytes": sum(len(t.encode("utf-8")) for *_, t in self.entries)}


class M3AgentSettings(AgentSettings):
    """``model`` with ``_target_: memlens.eval.agents.m3_agent.M3Agent``: ``memorizer_model`` (served
    at ``base_url``; null = ``model``) memorizes the rendered sessions, ``model`` controls."""

    adapter: Literal["interleaved", "render"] = "interleaved"
    memorizer_model: str | None = None
    batch_sessions: PositiveInt = 10
    max_rounds: PositiveInt = 5
    search_top_k: PositiveInt = 5
    retriever_options: dict[str, Any] | None = None


@configured
@component("agent", "m3_agent")
class M3Agent(MemoryAgent):
    """M3-Agent style: batches of ``batch_sessions`` memorized by a VLM, ``max_rounds`` search rounds."""

    Config = M3AgentSettings
    PROMPTS = PROMPTS
    RETRIEVER = "dense over memorised entries"
    ADAPTERS = ("interleaved", "render")

    def __init__(
        self,
        name: str = "m3-agent",
        *,
        memorizer_model: str | None,
        batch_sessions: int,
        max_rounds: int,
        search_top_k: int,
        retriever_options: dict | None,
        adapter: str,
        **common,
    ):
        opts = dict(
            memorizer_model=memorizer_model,
            batch_sessions=batch_sessions,
            max_rounds=max_rounds,
            search_top_k=search_top_k,
            retriever_options=dict(retriever_options or {}),
        )
        super().__init__(name, adapter=adapter, **common)
        self.options.update(opts)
        self.memorizer_model = memorizer_model
        self.batch_sessions = int(batch_sessions)
        self.max_rounds = int(max_rounds)
        self.search_top_k = int(search_top_k)
        self.retriever_options = dict(retriever_options or {})

    async def render(self, sessions: list[AgentSession]) -> list[list | None]:
        """The composite images of each session (``adapter=render``, drawn in a worker thread, one
        call at a time like every adapter call), or None per session (interleaved)."""
        if self.adapter_name != "render":
            return [None] * len(sessions)

        def draw() -> list[list]:
            with self._adapter_lock:
                return self.rendered(sessions)

        return await asyncio.to_thread(draw)

    def rendered(self, sessions: list[AgentSession]) -> list[list]:
        out = []
        for s in sessions:
            turns = [
                SimpleNamespace(role=t.role, content=t.content, images=[im.sha256 for im in t.images]) for t in s.turns
            ]
            paths = {im.sha256: im.path for im in s.images}
            out.append(list(self.adapter.render_session(s.date, turns, paths.__getitem__, session_id=s.session_id)))
        return out

    def new_memory(self, ctx: QuestionContext) -> Memory:
        return _GraphMemory(ctx, self)
