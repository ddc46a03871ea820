"""Throughput of LLM construction (generator=llm) against the stand-in server, and of a cached re-run.

Simulates ``--sessions`` sessions shaped like the generate stage's (evidence sessions with a photo
mention carrying a hidden value, ~10 turns; every turn through the six-check validator chain and
the LLM leakage check) plus one question-writer request per ``--questions``, through the real
engine, simulator and request cache, against the fake OpenAI-compatible server running the scripted
construction roles in a child process with ``--latency`` seconds per answer. The ideal rate is
``concurrency / latency`` requests/s; the figure to meet is >= 90 % of it. A second pass over the
same requests is served by the cache (0 requests). For context on a shared machine, the evaluation
client alone (``OpenAICompatibleClient.run_many``, no simulator, same server) is measured on
``--baseline`` requests first: the engine cannot beat it. The paper-scale request count is
extrapolated from requests per session and per question.

Usage: python benchmarks/bench_llm_generate.py [--sessions 400] [--questions 100] [--latency 0.2]
       [--concurrency 32] [--baseline 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from memlens.construction.abilities.base import Draft, FactDraft
from memlens.construction.generate.llm import check_triple
from memlens.construction.text.llm import prompts
from memlens.construction.text.llm.engine import Endpoint, LLMEngine
from memlens.construction.text.llm.schemas import QA
from memlens.construction.text.llm.simulator import Simulator
from memlens.construction.text.sessions import Mention, WriterConfig
from memlens.construction.text.validators import RejectionLog
from memlens.core.http import OpenAICompatibleClient, OpenAICompatibleConfig
from memlens.core.reqcache import RequestCache
from memlens.core.schema import Topic
from tests.support.scripted_llm import ScriptedServer

ROLES = ("question_writer", "user", "assistant", "leakage_checker")
#: paper scale (conf/data/default.yaml): 789 questions, ~2.8 evidence sessions per question (tiny
#: build), 1600 haystack sessions
PAPER_QUESTIONS, PAPER_SESSIONS = 789, int(789 * 2.84) + 1600


def one_pass(base_url: str, cache_path: Path, n_sessions: int, n_questions: int, concurrency: int) -> dict:
    ep = Endpoint(base_url=base_url, model="bench")
    engine = LLMEngine({r: ep for r in ROLES}, cache=RequestCache(cache_path), concurrency=concurrency, max_retries=2)
    sim = Simulator(engine, WriterConfig(turns=(8, 12), max_regenerations=3), progress=False)
    topic = Topic("t_bench", "experience", "Hobbies", "Indoor gardening", ["herb pots"])
    log = RejectionLog()
    w = sim.writer(log, ["secret answer"])
    sessions = {}
    for i in range(n_sessions):
        rng = random.Random(i)
        m = Mention(f"I took a photo of shop sign number {i} <image> on my way home.", [f"img{i}"], True, [f"CODE{i}X"])
        s = w.write(rng, "evidence", topic, "herb pots", [m], extra_forbidden=[f"answer {i}"])
        sessions[s.session_id] = s
    draft = Draft(
        question="When did I go? Answer in YYYY/MM/DD.",
        answer="2025/05/20",
        facts=[FactDraft("I kept this ticket <image>.", [0])],
        forbidden=["Northern Weaves"],
    )

    async def questions():
        async def one(i):
            inputs = {
                "topic": "Museums",
                "subtopic": f"exhibition {i}",
                "question_type": "temporal_reasoning",
                "question_subtype": "temporal_info_extraction",
                "draft_question": draft.question,
                "answer": draft.answer,
                "format_instruction": "Answer in YYYY/MM/DD.",
                "facts": [f.mention for f in draft.facts],
                "forbidden": draft.forbidden,
            }
            await engine.json(
                "question_writer",
                f"qa:{i}",
                prompts.qa_messages(inputs, QA),
                QA,
                check=lambda v: check_triple(v, draft, []),
            )

        try:
            await asyncio.gather(*(one(i) for i in range(n_questions)))
        finally:
            await engine.aclose()

    t0 = time.perf_counter()
    asyncio.run(questions())
    sim.finish(sessions, w.pending_logs)
    elapsed = time.perf_counter() - t0
    s = engine.summary()
    engine.cache.close()
    return {"elapsed": elapsed, "run": s["run"]["total"], "build": s["build"]["total"]}


def baseline(base_url: str, n: int, concurrency: int) -> float:
    """Requests/s of the evaluation client alone on ``n`` prompts of a session's size."""
    c = OpenAICompatibleClient(
        OpenAICompatibleConfig(base_url=base_url, model="bench", concurrency=concurrency, max_retries=0)
    )
    items = ((i, [{"role": "user", "content": f"turn {i} " + "word " * 1500}]) for i in range(n))
    t0 = time.perf_counter()
    c.run_many(items, lambda k, r: None, progress=False, total=n)
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=400)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--baseline", type=int, default=1000)
    a = ap.parse_args()
    ideal = a.concurrency / a.latency
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(latency_s=a.latency, record_requests=False) as srv:
        cache = Path(tmp) / "bench.sqlite"
        base = baseline(srv.base_url, a.baseline, a.concurrency) if a.baseline else 0.0
        pre = srv.stats()["requests"]
        first = one_pass(srv.base_url, cache, a.sessions, a.questions, a.concurrency)
        sent = srv.stats()["requests"] - pre
        second = one_pass(srv.base_url, cache, a.sessions, a.questions, a.concurrency)
        resent = srv.stats()["requests"] - pre - sent
    rate = first["run"]["requests"] / first["elapsed"]
    per_session = (first["run"]["requests"] - a.questions) / a.sessions
    paper = PAPER_QUESTIONS + PAPER_SESSIONS * per_session
    print(f"sessions {a.sessions}, questions {a.questions}, latency {a.latency}s, concurrency {a.concurrency}")
    if a.baseline:
        print(f"client alone: {base:.1f} req/s on {a.baseline} requests = {100 * base / ideal:.1f}% of ideal")
    print(
        f"first pass : {first['run']['requests']} requests ({sent} received by the server) in {first['elapsed']:.1f}s "
        f"= {rate:.1f} req/s; ideal {ideal:.1f} req/s -> {100 * rate / ideal:.1f}% of ideal"
    )
    print(
        f"            {per_session:.1f} requests per session, repairs {first['build']['repairs']}, "
        f"tokens {first['build']['prompt_tokens']} prompt + {first['build']['completion_tokens']} completion"
    )
    print(
        f"cached pass: {second['run']['requests']} requests ({resent} received), {second['run']['cache_hits']} "
        f"cache hits in {second['elapsed']:.1f}s"
    )
    print(
        f"paper scale: ~{paper:.0f} requests ({PAPER_SESSIONS} simulated sessions) -> "
        f"{paper / rate / 60:.1f} min at this rate"
    )


if __name__ == "__main__":
    main()
