"""Memory-T1 style agent: BM25 over labelled sessions, a temporal filter, a packed prompt.

Published settings (``shared/reference/official-memory-agents.md``): backbone
Qwen/Qwen2.5-3B-Instruct (RL-tuned), sessions labelled with their date, images removed (or replaced
by the adapter's text), BM25 over sessions, top 10, then a temporal filter (no session dated after
the question), packed under about 30K prompt tokens (32,768 context), a prompt with the memory
block, the current time and the question, and the answer on the last line as ``Answer: <answer>``.

Here: every session is one BM25 document (``memlens.eval.memory.retrieval``); the retriever's
``before`` filter is the temporal filter; the kept sessions (by rank, while they fit in
``prompt_budget_tokens`` counted with ``tokenizer``) are shown in date order.
"""

from __future__ import annotations

import asyncio

from memlens.core.registry import component
from memlens.core.settings import PositiveInt, configured
from memlens.eval.agents.common import answer_line, pack, session_doc, session_text
from memlens.eval.agents.runtime import AgentAnswer, AgentSettings, Memory, MemoryAgent, QuestionContext, Retrieved
from memlens.eval.agents.view import AgentSession

__all__ = ["MemoryT1Agent"]

PROMPTS = {
    "system": (
        "You are an assistant with a long-term memory of earlier conversations with the user. "
        "Use the memory below, paying attention to when each session took place, to answer the "
        "question. If the memory does not contain the information needed, answer "
        "'Insufficient information'."
    ),
    "user": (
        "Memory (past sessions, oldest first):\n{memory}\n\nCurrent time: {question_date}\n"
        "Question: {question}\n\nThink briefly if needed, then give the final answer on the last "
        "line in the form\nAnswer: <answer>"
    ),
}


class _T1Memory(Memory):
    def __init__(self, ctx: QuestionContext, agent: MemoryT1Agent):
        super().__init__(ctx)
        self.agent = agent
        self.sessions: list[AgentSession] = []
        self.texts: dict[str, str] = {}

    async def ingest(self, session: AgentSession) -> None:
        self.texts.update(await self.ctx.image_texts(session.images))
        self.sessions.append(session)
        self.items += 1
        self.bytes += len(session_text(session, self.texts).encode("utf-8"))

    def ranking(self, question: str, question_date: str, k: int) -> list[Retrieved]:
        from memlens.eval.memory.retrieval import build_retriever

        docs = [session_doc(s, session_text(s, self.texts, header=False)) for s in self.sessions]
        retriever = build_retriever("bm25")
        retriever.index(docs)
        hits = retriever.search(question, k, before=question_date if self.agent.temporal_filter else None)
        return [Retrieved(h.session_id, h.score, h.rank) for h in hits]

    async def answer(self, question: str, question_date: str) -> AgentAnswer:
        a = self.agent
        # CPU work, off the event loop (which keeps handling other questions' calls)
        hits = await asyncio.to_thread(self.ranking, question, question_date, a.top_k)
        by_id = {s.session_id: s for s in self.sessions}
        # a block = header + body; the body (the same in every history holding the session) is
        # counted once per run, the short header each time
        bodies = {h.session_id: session_text(by_id[h.session_id], self.texts, header=False) for h in hits}

        def cost(sid: str) -> int:
            s = by_id[sid]
            return self.ctx.tokens(f"Session {s.session_id} ({s.date}):") + self.ctx.tokens(bodies[sid]) + 1

        overhead = (
            self.ctx.tokens(PROMPTS["system"]) + self.ctx.tokens(PROMPTS["user"]) + self.ctx.tokens(question) + 16
        )
        kept, used = pack([h.session_id for h in hits], max(0, a.prompt_budget_tokens - overhead), cost)
        shown = sorted((hits[i] for i in kept), key=lambda h: (by_id[h.session_id].date, h.session_id))
        memory = "\n\n".join(session_text(by_id[h.session_id], self.texts) for h in shown) or "(empty)"
        messages = [
            {"role": "system", "content": PROMPTS["system"]},
            {
                "role": "user",
                "content": PROMPTS["user"].format(memory=memory, question_date=question_date, question=question),
            },
        ]
        raw = await self.ctx.chat(messages, what="answer")
        return AgentAnswer(answer_line(raw), hits, {"packed_sessions": len(kept), "memory_tokens": used})


class MemoryT1Settings(AgentSettings):
    """``model`` with ``_target_: memlens.eval.agents.memory_t1.MemoryT1Agent``."""

    top_k: PositiveInt = 10
    temporal_filter: bool = True
    prompt_budget_tokens: PositiveInt = 30000


@configured
@component("agent", "memory_t1")
class MemoryT1Agent(MemoryAgent):
    """Memory-T1 style: BM25 top ``top_k`` sessions, temporal filter, ``prompt_budget_tokens``."""

    Config = MemoryT1Settings
    PROMPTS = PROMPTS
    RETRIEVER = "bm25 over sessions"

    def __init__(
        self, name: str = "memory-t1", *, top_k: int, temporal_filter: bool, prompt_budget_tokens: int, **common
    ):
        super().__init__(name, **common)
        self.options.update(
            dict(top_k=top_k, temporal_filter=temporal_filter, prompt_budget_tokens=prompt_budget_tokens)
        )
        self.top_k = int(top_k)
        self.temporal_filter = bool(temporal_filter)
        self.prompt_budget_tokens = int(prompt_budget_tokens)

    def new_memory(self, ctx: QuestionContext) -> Memory:
        return _T1Memory(ctx, self)
