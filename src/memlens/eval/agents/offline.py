"""Offline retrieval figures of the memory agents: no backbone, no model call.

An agent whose memory retrieves without a model (:meth:`~memlens.eval.agents.runtime.Memory.ranking`:
Memory-T1's BM25, M3C's dense retrieval over the first turns, the hybrid's RRF of BM25 on text and
on OCR) is driven exactly as in an evaluation (a fresh memory per question, its role-stripped
view, every session ingested in date order through the agent's input adapter), then asked for its
ranking instead of an answer. The ranking is scored against the question's evidence sessions:
recall@k, NDCG@10, MRR (:func:`memlens.eval.memory.diagnostics.retrieval_metrics`) and
``shown_recall``, the recall of the ``top_k`` sessions the agent would put in front of its
backbone. Agents whose memory needs a model to retrieve (Mem0, MemAgent, M3-Agent) are refused
with a clear error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence

from memlens.core.constants import TYPE_ABBREV
from memlens.core.errors import ConfigError
from memlens.core.items import EvalItem
from memlens.eval.agents.llm import CallCounter
from memlens.eval.agents.runtime import MemoryAgent, QuestionContext
from memlens.eval.agents.view import build_view
from memlens.eval.memory.diagnostics import KS, retrieval_metrics

__all__ = ["agent_retrieval"]


async def _ingest_all(memory, sessions) -> None:
    for session in sessions:
        await memory.ingest(session)
    await memory.finish_ingest()


def agent_retrieval(
    agent: MemoryAgent,
    items: Iterable[EvalItem],
    *,
    depth: int = 50,
    ks: Sequence[int] = KS,
    progress: Callable[[], None] | None = None,
) -> list[dict]:
    """One row per item with evidence sessions: the agent's ranking (``depth`` deep) scored against
    them. ``agent`` must be attached (:meth:`MemoryAgent.attach`); no model call is made."""
    rows: list[dict] = []
    for item in items:
        evidence = [s.session_id for s in item.evidence_sessions]
        if not evidence:
            continue
        view = build_view(item, agent.images)
        counter = CallCounter()
        memory = agent.new_memory(QuestionContext(agent, counter))

        asyncio.run(_ingest_all(memory, view.sessions))
        ranked = memory.ranking(view.question, view.question_date, depth)
        if ranked is None:
            raise ConfigError(f"{agent.name}: its memory needs a model to retrieve (no offline retrieval figures)")
        if counter.calls:
            raise RuntimeError(f"{agent.name}: {counter.calls} model calls while ingesting offline")
        ids = [view.real(r.session_id) for r in ranked]
        metrics = retrieval_metrics(ids, evidence, ks)
        top_k = int(getattr(agent, "top_k", depth))
        ev = set(evidence)
        rows.append(
            {
                "agent": agent.name,
                "adapter": agent.adapter_id(),
                "length": item.length,
                "question_id": item.question_id,
                "type": TYPE_ABBREV.get(item.question.question_type, item.question.question_type),
                "n_sessions": len(item.sessions),
                "n_evidence": len(ev),
                "top_k": top_k,
                **{k: round(v, 6) for k, v in metrics.items()},
                "shown_recall": round(len(ev & set(ids[:top_k])) / len(ev), 6),
            }
        )
        if progress is not None:
            progress()
    return rows
