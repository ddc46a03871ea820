"""MemAgent style agent: a recurrent memory rewritten chunk by chunk.

Published settings: backbone BytedTsinghua-SIA/RL-MemoryAgent-7B (Qwen2.5-7B, RL); the sessions
sorted by date and flattened to one text, read in 5,000-token chunks; after each chunk the model
rewrites its memory (the problem, the previous memory and the chunk in, the new memory out);
max context 300,000 tokens, 1,024 new tokens, vLLM max model length 16,384.

Here: ``ingest`` only appends the session to the flattened text (nothing is known yet of the
question); at answer time the text is cut into ``chunk_tokens`` chunks with the ``tokenizer``'s
offsets, the memory (at most ``memory_tokens`` new tokens per rewrite) is rewritten once per chunk
and the final answer is asked from the memory alone. A history longer than
``max_context_tokens`` keeps its most recent part (the skipped tokens are recorded). Each rewrite
is one cached call, so a crashed run resumes where it stopped.
"""

from __future__ import annotations

import asyncio

from memlens.core.registry import component
from memlens.core.settings import PositiveInt, configured
from memlens.eval.agents.common import session_text
from memlens.eval.agents.runtime import AgentAnswer, AgentSettings, Memory, MemoryAgent, QuestionContext
from memlens.eval.agents.view import AgentSession

__all__ = ["MemAgent", "chunk_text"]

PROMPTS = {
    "update": (
        "You are reading a long conversation history one section at a time, to answer a question "
        "later. Keep a memory of everything that may help answer it.\n\nQuestion: {question}\n\n"
        "Current memory:\n{memory}\n\nNew section:\n{chunk}\n\nRewrite the memory: keep what is still "
        "useful, add what this section says that bears on the question (with dates), drop the rest. "
        "Reply with the updated memory only."
    ),
    "final": (
        "Using your memory of a conversation history, answer the question.\n\nMemory:\n{memory}\n\n"
        "Current date: {question_date}\nQuestion: {question}\n\nIf the memory does not contain the "
        "needed information, answer 'Insufficient information'. Reply with the answer only."
    ),
}


def chunk_text(text: str, chunk_tokens: int, tokenizer) -> list[str]:
    """``text`` cut into pieces of at most ``chunk_tokens`` tokens, at token boundaries."""
    # encode_batch releases the GIL while it tokenises (encode holds it): a worker thread chunking
    # one question's history does not stall the event loop serving the others' calls
    (enc,) = tokenizer.encode_batch([text], add_special_tokens=False)
    offsets = enc.offsets
    if not offsets:
        return [text] if text.strip() else []
    chunks, start_char = [], 0
    for i in range(chunk_tokens, len(offsets), chunk_tokens):
        end_char = offsets[i][0]
        chunks.append(text[start_char:end_char])
        start_char = end_char
    chunks.append(text[start_char:])
    return [c for c in chunks if c.strip()]


class _RecurrentMemory(Memory):
    def __init__(self, ctx: QuestionContext, agent: MemAgent):
        super().__init__(ctx)
        self.agent = agent
        self.parts: list[str] = []
        self.texts: dict[str, str] = {}
        self.memory = ""

    async def ingest(self, session: AgentSession) -> None:
        self.texts.update(await self.ctx.image_texts(session.images))
        self.parts.append(session_text(session, self.texts))

    async def answer(self, question: str, question_date: str) -> AgentAnswer:
        a = self.agent
        text = "\n\n".join(self.parts)
        a.count_tokens("")  # loads the tokenizer
        chunks = await asyncio.to_thread(chunk_text, text, a.chunk_tokens, a.tokenizer)  # CPU, off the loop
        limit = max(1, a.max_context_tokens // a.chunk_tokens)
        skipped = max(0, len(chunks) - limit)
        chunks = chunks[skipped:]
        memory = "No memory yet."
        for i, chunk in enumerate(chunks):
            prompt = PROMPTS["update"].format(question=question, memory=memory, chunk=chunk)
            memory = (
                await self.ctx.chat(
                    [{"role": "user", "content": prompt}], max_new_tokens=a.memory_tokens, what=f"chunk {i + 1}"
                )
            ).strip() or memory
        self.memory = memory
        final = PROMPTS["final"].format(memory=memory, question_date=question_date, question=question)
        raw = await self.ctx.chat([{"role": "user", "content": final}], what="answer")
        return AgentAnswer(raw.strip(), [], {"chunks": len(chunks), "chunks_skipped": skipped})

    def stats(self) -> dict:
        return {"items": 1 if self.memory else 0, "bytes": len(self.memory.encode("utf-8"))}


class MemAgentSettings(AgentSettings):
    """``model`` with ``_target_: memlens.eval.agents.memagent.MemAgent``."""

    chunk_tokens: PositiveInt = 5000
    memory_tokens: PositiveInt = 1024
    max_context_tokens: PositiveInt = 300000


@configured
@component("agent", "memagent")
class MemAgent(MemoryAgent):
    """MemAgent style: ``chunk_tokens`` chunks, memory rewritten after each (``memory_tokens``)."""

    Config = MemAgentSettings
    PROMPTS = PROMPTS
    RETRIEVER = "none (reads every chunk)"

    def __init__(
        self, name: str = "memagent", *, chunk_tokens: int, memory_tokens: int, max_context_tokens: int, **common
    ):
        opts = dict(chunk_tokens=chunk_tokens, memory_tokens=memory_tokens, max_context_tokens=max_context_tokens)
        super().__init__(name, **common)
        self.options.update(opts)
        self.chunk_tokens = int(chunk_tokens)
        self.memory_tokens = int(memory_tokens)
        self.max_context_tokens = int(max_context_tokens)

    @property
    def tokenizer(self):
        self.count_tokens("")
        return self._tokenizer

    def new_memory(self, ctx: QuestionContext) -> Memory:
        return _RecurrentMemory(ctx, self)
