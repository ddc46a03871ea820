"""Offline retrieval figures of the agents (:mod:`memlens.eval.agents.offline`) on hand-built
histories whose evidence is known: the agent's own ranking, no model call, refused for agents that
need a model to retrieve."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from memlens.core.errors import ConfigError
from memlens.core.items import EvalItem, HistorySession
from memlens.core.schema import Question, Turn
from memlens.eval.agents.hybrid import HybridPixelAgent
from memlens.eval.agents.memagent import MemAgent
from memlens.eval.agents.memory_t1 import MemoryT1Agent
from memlens.eval.agents.offline import agent_retrieval

DEAD = "http://127.0.0.1:9/v1"  # nothing listens: any model call would fail the test


@dataclass
class _Paths:
    cache: Path


def _session(sid: str, date: str, text: str, evidence: bool = False) -> HistorySession:
    turns = [Turn("user", text), Turn("assistant", "Noted, thanks for telling me.")]
    return HistorySession(sid, date, turns, evidence, f"d-{sid}")


def _item(qid: str, question: str, sessions: list[HistorySession], date: str) -> EvalItem:
    q = Question(
        question_id=qid,
        question_type="information_extraction",
        question_subtype="entity",
        question=question,
        answer="x",
        question_date=date,
    )
    return EvalItem(q, "32k", sessions, None)


FILLER = [
    "We talked about repainting the kitchen cabinets in a pale green.",
    "My sister recommended a podcast about gardening on balconies.",
    "I am trying to run three times a week before work.",
    "The printer at the office jams whenever it prints on both sides.",
]


def _items() -> list[EvalItem]:
    date = "2024/06/10 (Mon) 09:00"
    hay = [
        _session(f"h{i}", f"2024/05/0{i + 1} ({d}) 10:00", t)
        for i, (t, d) in enumerate(zip(FILLER, ["Wed", "Thu", "Fri", "Sat"]))
    ]
    one = _item(
        "q1",
        "How much did the tram ticket in Lisbon cost?",
        [*hay, _session("ev1", "2024/05/20 (Mon) 18:00", "I bought a tram ticket in Lisbon today.", True)],
        date,
    )
    # the better match is dated after the question: the temporal filter drops it
    later = _session(
        "late", "2024/06/20 (Thu) 12:00", "Tram ticket Lisbon tram ticket Lisbon price of the tram ticket."
    )
    two = _item(
        "q2",
        "What did I say about the tram ticket in Lisbon?",
        [*hay, later, _session("ev2", "2024/05/22 (Wed) 08:00", "The tram ticket in Lisbon was sold out.", True)],
        date,
    )
    return [one, two]


@pytest.mark.parametrize("cls", [MemoryT1Agent, HybridPixelAgent])
def test_the_agents_own_ranking_scored_against_known_evidence(cls, tmp_path):
    agent = cls(name="probe", base_url=DEAD, adapter="markers", cache_calls=False)
    agent.attach(_Paths(tmp_path), None)
    rows = agent_retrieval(agent, _items(), ks=(1, 3))
    assert [r["question_id"] for r in rows] == ["q1", "q2"]
    for r in rows:
        assert r["recall@1"] == 1.0 and r["mrr"] == 1.0 and r["shown_recall"] == 1.0, r
        assert r["n_sessions"] in (5, 6) and r["n_evidence"] == 1 and r["top_k"] == agent.top_k
    assert {r["agent"] for r in rows} == {"probe"} and rows[0]["adapter"] == agent.adapter_id()


def test_without_the_temporal_filter_the_later_session_wins(tmp_path):
    agent = MemoryT1Agent(name="probe", base_url=DEAD, adapter="markers", cache_calls=False, temporal_filter=False)
    agent.attach(_Paths(tmp_path), None)
    rows = {r["question_id"]: r for r in agent_retrieval(agent, _items(), ks=(1, 3))}
    assert rows["q1"]["recall@1"] == 1.0
    assert rows["q2"]["recall@1"] == 0.0 and rows["q2"]["recall@3"] == 1.0 and rows["q2"]["mrr"] == 0.5


def test_an_agent_that_needs_a_model_to_retrieve_is_refused(tmp_path):
    agent = MemAgent(name="probe", base_url=DEAD, cache_calls=False)
    agent.attach(_Paths(tmp_path), None)
    with pytest.raises(ConfigError, match="needs a model to retrieve"):
        agent_retrieval(agent, _items())
