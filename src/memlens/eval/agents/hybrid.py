"""Hybrid pixel-retrieval agent: fused text/OCR/image retrieval, then an LVLM reads the pixels.

Text-memory agents are length-stable (retrieval keeps the prompt small) but lose what the images
show when they store them as text; LVLMs keep the pixels but degrade with the history length.
This agent takes both halves: it retrieves sessions with one or more channels (several are fused
by reciprocal-rank fusion, RRF, ``1 / (rrf_k + rank)`` summed over channels):

* ``bm25``: BM25 over the session's text (images as ``[image]`` markers),
* ``ocr``: BM25 over the adapter's text of the session's images (``adapter``, default ``ocr``),
* ``bm25_ocr``: BM25 over the session's text with the adapter's text of each image in its place
  (one document: the words of a turn and of its image count together),
* ``image``: the image-embedding retriever (the question embedded as text, each session scored
  by its images), from ``memlens.eval.memory.retrieval``.

The default is ``bm25_ocr`` alone (plus ``image`` given a checkpoint): measured offline
(``benchmarks/bench_agent_retrieval.py``), fusing a separate OCR-only ranking with the text ranking
puts sessions that merely hold a matching image above the evidence and lowers recall@5, while
BM25 over text and OCR in one document ranks best.

The top ``top_k`` sessions dated no later than the question (``temporal_filter``) are then shown
to the LVLM backbone in date order *with their original images*, in the official message layout
(``=== Session i (Date: d) ===`` headers, turns with their roles, the official system prompt and
question template), while they fit in ``prompt_budget_tokens`` (text counted with ``tokenizer``,
``image_tokens`` per image; by rank: a session that does not fit is dropped).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from memlens.core.constants import INSTRUCTIONS, QUESTION_TEMPLATE, SESSION_HEADER, SYSTEM_PROMPT
from memlens.core.registry import component, named
from memlens.core.settings import PositiveInt, configured
from memlens.eval.agents.common import session_doc, session_text
from memlens.eval.agents.runtime import AgentAnswer, AgentSettings, Memory, MemoryAgent, QuestionContext, Retrieved
from memlens.eval.agents.view import AgentSession, render_turn

__all__ = ["HybridPixelAgent", "rrf"]

CHANNELS = ("bm25", "ocr", "bm25_ocr", "image")
PROMPTS = {"system": SYSTEM_PROMPT, "question": QUESTION_TEMPLATE, "instruction": INSTRUCTIONS["standard"]}


def rrf(rankings: list[list[str]], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion of ranked id lists: ``[(id, score)]`` best first (ties by id)."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, 1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))


class _PixelMemory(Memory):
    def __init__(self, ctx: QuestionContext, agent: HybridPixelAgent):
        super().__init__(ctx)
        self.agent = agent
        self.sessions: dict[str, AgentSession] = {}
        self.texts: dict[str, str] = {}

    async def ingest(self, session: AgentSession) -> None:
        if {"ocr", "bm25_ocr"} & set(self.agent.channels):
            self.texts.update(await self.ctx.image_texts(session.images))
        self.sessions[session.session_id] = session
        self.items += 1
        self.bytes += len(session_text(session, {}).encode("utf-8")) + sum(
            im.path.stat().st_size for im in session.images
        )

    def _channel(self, name: str, question: str, before: str | None, k: int) -> list[str]:
        from memlens.eval.memory.retrieval import build_retriever

        sessions = list(self.sessions.values())
        if name == "bm25":
            docs = [session_doc(s, session_text(s, {}, header=False)) for s in sessions]
            retriever = build_retriever("bm25")
        elif name == "bm25_ocr":
            docs = [session_doc(s, session_text(s, self.texts, header=False)) for s in sessions]
            retriever = build_retriever("bm25")
        elif name == "ocr":
            docs = [session_doc(s, " ".join(self.texts.get(im.sha256, "") for im in s.images) or "-") for s in sessions]
            retriever = build_retriever("bm25")
        else:
            docs = [session_doc(s, "") for s in sessions if s.images]
            if not docs:
                return []
            paths = {im.sha256: im.path for s in sessions for im in s.images}
            retriever = build_retriever("image", image_path=paths.__getitem__, encoder=self.agent.image_encoder())
        retriever.index(docs)
        return [h.session_id for h in retriever.search(question, k, before=before)]

    def _messages(self, shown: list[AgentSession], question: str, question_date: str) -> list[dict]:
        messages: list[dict] = [{"role": "system", "content": [{"type": "text", "text": SYSTEM_PROMPT}]}]
        for i, s in enumerate(shown, 1):
            header = SESSION_HEADER.format(i=i, date=s.date)
            for j, t in enumerate(s.turns):
                blocks: list[dict] = []
                parts = t.content.split("<image>")
                for n, part in enumerate(parts):
                    if n:
                        blocks.append({"type": "image_url", "image_url": {"url": str(t.images[n - 1].path)}})
                    if part.strip():
                        blocks.append({"type": "text", "text": part})
                if j == 0:
                    if blocks and blocks[0]["type"] == "text":
                        blocks[0] = {"type": "text", "text": f"{header}\n{blocks[0]['text']}"}
                    else:
                        blocks.insert(0, {"type": "text", "text": header})
                if blocks:
                    messages.append({"role": t.role, "content": blocks})
        q = QUESTION_TEMPLATE.format(
            instruction=INSTRUCTIONS["standard"], question_date=question_date, question=question
        )
        messages.append({"role": "user", "content": [{"type": "text", "text": q}]})
        return messages

    def ranking(self, question: str, question_date: str, k: int) -> list[Retrieved]:
        """The channels' rankings (each ``max(4 k, 20)`` deep) fused by RRF, top ``k``."""
        a = self.agent
        before = question_date if a.temporal_filter else None
        depth = max(k * 4, 20)
        with a.encoder_lock:  # the shared image encoder one call at a time
            rankings = [self._channel(c, question, before, depth) for c in a.channels]
        return [Retrieved(sid, score, i + 1) for i, (sid, score) in enumerate(rrf(rankings, a.rrf_k)[:k])]

    async def answer(self, question: str, question_date: str) -> AgentAnswer:
        a = self.agent
        fused = await asyncio.to_thread(self.ranking, question, question_date, a.top_k)  # CPU, off the loop
        overhead = self.ctx.tokens(SYSTEM_PROMPT) + self.ctx.tokens(QUESTION_TEMPLATE) + self.ctx.tokens(question) + 16
        budget, used, kept = a.prompt_budget_tokens - overhead, 0, []
        for r in fused:
            sid = r.session_id
            s = self.sessions[sid]
            cost = sum(self.ctx.tokens(render_turn(t)) + 4 for t in s.turns) + a.image_tokens * len(s.images)
            if used + cost <= budget:
                kept.append(sid)
                used += cost
        shown = sorted((self.sessions[sid] for sid in kept), key=lambda s: (s.date, s.session_id))
        raw = await self.ctx.chat(self._messages(shown, question, question_date), what="answer")
        return AgentAnswer(
            raw.strip(),
            fused,
            {
                "shown_sessions": len(shown),
                "shown_images": sum(len(s.images) for s in shown),
                "prompt_tokens_est": used,
            },
        )


class HybridSettings(AgentSettings):
    """``model`` with ``_target_: memlens.eval.agents.hybrid.HybridPixelAgent``."""

    adapter: Annotated[str, named("adapter")] = (
        "ocr"  # the text channel of the images (ocr, caption, oracle_caption ...)
    )
    top_k: PositiveInt = 5
    channels: list[Literal[CHANNELS]] = ["bm25_ocr"]  # type: ignore[valid-type]
    rrf_k: PositiveInt = 60
    temporal_filter: bool = True
    prompt_budget_tokens: PositiveInt = 32000
    image_tokens: PositiveInt = 1024  # budget charged per image
    retriever_options: dict[str, Any] | None = None


@configured
@component("agent", "hybrid")
class HybridPixelAgent(MemoryAgent):
    """Fused (RRF) text + OCR + image retrieval of sessions; the LVLM sees the top ones' pixels."""

    Config = HybridSettings
    PROMPTS = PROMPTS
    RETRIEVER = "reciprocal-rank fusion"

    def __init__(
        self,
        name: str = "hybrid-pixel",
        *,
        top_k: int,
        channels: tuple[str, ...] | list[str],
        rrf_k: int,
        temporal_filter: bool,
        prompt_budget_tokens: int,
        image_tokens: int,
        retriever_options: dict | None,
        adapter: str,
        **common,
    ):
        unknown = [c for c in channels if c not in CHANNELS]
        if unknown or not channels:
            raise ValueError(f"model.channels: choose from {', '.join(CHANNELS)} (got {list(channels)})")
        opts = dict(
            top_k=top_k,
            channels=list(channels),
            rrf_k=rrf_k,
            temporal_filter=temporal_filter,
            prompt_budget_tokens=prompt_budget_tokens,
            image_tokens=image_tokens,
            retriever_options=dict(retriever_options or {}),
        )
        super().__init__(name, adapter=adapter, **common)
        self.options.update(opts)
        self.top_k = int(top_k)
        self.channels = list(channels)
        self.rrf_k = int(rrf_k)
        self.temporal_filter = bool(temporal_filter)
        self.prompt_budget_tokens = int(prompt_budget_tokens)
        self.image_tokens = int(image_tokens)
        self.retriever_options = dict(retriever_options or {})
        self._image_encoder = None

    def retrieval(self) -> str:
        return f"{self.RETRIEVER} of {' + '.join(self.channels)} (rrf_k {self.rrf_k}), top {self.top_k}"

    def image_encoder(self):
        """One open_clip encoder for the run (``retriever_options``: ``checkpoint`` (required for
        the image channel), ``model_name``, ``model_config``, ``device``)."""
        if self._image_encoder is None:
            from memlens.core.errors import ConfigError
            from memlens.eval.memory.retrieval import ImageEncoder

            opts = dict(self.retriever_options)
            ckpt = opts.pop("checkpoint", None)
            if not ckpt:
                raise ConfigError(
                    "the image channel needs model.retriever_options.checkpoint (a local open_clip/SigLIP "
                    "checkpoint), or leave 'image' out of model.channels"
                )
            self._image_encoder = ImageEncoder(ckpt, **opts)
        return self._image_encoder

    def new_memory(self, ctx: QuestionContext) -> Memory:
        return _PixelMemory(ctx, self)
