"""M3C style agent: dense retrieval over sessions keyed by their first turns, a short QA context.

Published settings: backbone Qwen/Qwen2-VL-2B-Instruct (LoRA), retriever ``jihyoung/M3C-retrieval``;
sessions stored as records; retrieval encodes the first 4 turns of each session; top 3 sessions;
the QA context in retrieved-rank order with at most 20 turns per session and 12,000 characters;
a concise answer, the current date given; the reported run used no images.

Here: the dense retriever of ``memlens.eval.memory.retrieval`` (the bundled all-MiniLM-L6-v2 unless
``retriever_options`` names another local encoder) over one document per session made of its
first ``encode_turns`` turns; the context is cut at ``max_context_chars``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memlens.core.registry import component
from memlens.core.settings import PositiveInt, configured
from memlens.eval.agents.common import session_doc, session_text
from memlens.eval.agents.runtime import AgentAnswer, AgentSettings, Memory, MemoryAgent, QuestionContext, Retrieved
from memlens.eval.agents.view import AgentSession

__all__ = ["M3CAgent"]

PROMPTS = {
    "system": (
        "You answer questions about the user's earlier conversations using the retrieved sessions. "
        "Reply with a concise answer only. If the sessions do not contain the answer, reply "
        "'Insufficient information'."
    ),
    "user": "Retrieved sessions:\n{context}\n\nCurrent date: {question_date}\nQuestion: {question}\nAnswer:",
}


class _M3CMemory(Memory):
    def __init__(self, ctx: QuestionContext, agent: M3CAgent):
        super().__init__(ctx)
        self.agent = agent
        self.sessions: dict[str, AgentSession] = {}
        self.texts: dict[str, str] = {}

    async def ingest(self, session: AgentSession) -> None:
        self.texts.update(await self.ctx.image_texts(session.images))
        self.sessions[session.session_id] = session
        self.items += 1
        self.bytes += len(session_text(session, self.texts).encode("utf-8"))

    def ranking(self, question: str, question_date: str, k: int) -> list[Retrieved]:
        """Dense top ``k`` by the first ``encode_turns`` turns (no temporal filter, as published);
        each hit carries the turns the QA context shows of it."""
        from memlens.eval.memory.retrieval import build_retriever

        a = self.agent
        n = a.encode_turns
        docs = [
            session_doc(s, session_text(s, self.texts, max_turns=n, header=False), turn_ids=range(min(n, len(s.turns))))
            for s in self.sessions.values()
        ]
        with a.encoder_lock:  # the shared encoder one call at a time
            retriever = build_retriever("dense", encoder=a.text_encoder())
            retriever.index(docs)
            hits = retriever.search(question, k)
        return [
            Retrieved(
                h.session_id,
                h.score,
                h.rank,
                tuple(range(min(a.max_turns_per_session, len(self.sessions[h.session_id].turns)))),
            )
            for h in hits
        ]

    async def answer(self, question: str, question_date: str) -> AgentAnswer:
        a = self.agent
        hits = await asyncio.to_thread(self.ranking, question, question_date, a.top_k)  # CPU, off the loop
        context, shown = "", []
        for h in hits:
            s = self.sessions[h.session_id]
            block = session_text(s, self.texts, max_turns=a.max_turns_per_session) + "\n\n"
            room = a.max_context_chars - len(context)
            if room <= 0:
                break
            context += block[:room]
            shown.append(h.session_id)
        messages = [
            {"role": "system", "content": PROMPTS["system"]},
            {
                "role": "user",
                "content": PROMPTS["user"].format(
                    context=context.strip() or "(none)", question_date=question_date, question=question
                ),
            },
        ]
        raw = await self.ctx.chat(messages, what="answer")
        return AgentAnswer(raw.strip(), hits, {"context_chars": len(context), "shown_sessions": len(shown)})


class M3CSettings(AgentSettings):
    """``model`` with ``_target_: memlens.eval.agents.m3c.M3CAgent``."""

    top_k: PositiveInt = 3
    encode_turns: PositiveInt = 4
    max_turns_per_session: PositiveInt = 20
    max_context_chars: PositiveInt = 12000
    retriever_options: dict[str, Any] | None = None


@configured
@component("agent", "m3c")
class M3CAgent(MemoryAgent):
    """M3C style: dense top ``top_k`` sessions keyed by their first ``encode_turns`` turns."""

    Config = M3CSettings
    PROMPTS = PROMPTS
    RETRIEVER = "dense over session openings"

    def __init__(
        self,
        name: str = "m3c",
        *,
        top_k: int,
        encode_turns: int,
        max_turns_per_session: int,
        max_context_chars: int,
        retriever_options: dict | None,
        **common,
    ):
        opts = dict(
            top_k=top_k,
            encode_turns=encode_turns,
            max_turns_per_session=max_turns_per_session,
            max_context_chars=max_context_chars,
            retriever_options=dict(retriever_options or {}),
        )
        super().__init__(name, **common)
        self.options.update(opts)
        self.top_k = int(top_k)
        self.encode_turns = int(encode_turns)
        self.max_turns_per_session = int(max_turns_per_session)
        self.max_context_chars = int(max_context_chars)
        self.retriever_options = dict(retriever_options or {})

    def new_memory(self, ctx: QuestionContext) -> Memory:
        return _M3CMemory(ctx, self)
