"""Throughput of the LLM judge against the fake OpenAI-compatible server, and of a cached re-run.

Builds N predictions over all ten task keys, judges them once (every item is a request to a server
with ``--latency`` seconds per answer) and again (every item is a cache hit: zero requests).

Usage: python benchmarks/bench_judge_llm.py [--n 3156] [--latency 0.05] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from memlens.core.schema import Prediction, Question
from memlens.eval.judge.llm import LLMJudge
from tests.support.fake_openai import FakeOpenAIServer

KINDS = [
    ("information_extraction", "entity", "1937"),
    ("information_extraction", "previnfo", "red"),
    ("multi_session_reasoning", "arithmetic", "$260.00"),
    ("multi_session_reasoning", "counting", "4"),
    ("multi_session_reasoning", "entity_resolution", "Yes"),
    ("temporal_reasoning", "duration_comparison", "A"),
    ("temporal_reasoning", "order_ranking", "(2)(1)(3)"),
    ("temporal_reasoning", "temporal_info_extraction", "2024/03/05"),
    ("knowledge_update", "", "strawberries"),
    ("answer_refusal", "", "NOT_MENTIONED"),
]


def responder(body):
    s = len(body["messages"][-1]["content"]) % 2
    return f'The answer deserves {s} points.\n[Score]: {s} points\n[JSON]: {{"answer_score": {s}}}'


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=789 * 4)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    pairs = []
    for i in range(args.n):
        qt, st, ans = KINDS[i % len(KINDS)]
        q = Question(
            question_id=f"q{i:05d}",
            question_type=qt,
            question_subtype=st,
            question=f"Question {i}?",
            answer=ans,
            question_date="2024/05/31 (Fri) 07:58",
            old_answer="tomatoes" if qt == "knowledge_update" else None,
        )
        text = f"Reasoning about item {i}. " * (i % 40) + f"Final answer: {ans if i % 3 else 'something else'}"
        pairs.append(
            (
                q,
                Prediction(
                    system="bench",
                    mode="standard",
                    length="32k",
                    question_id=q.question_id,
                    question_type=qt,
                    question_subtype=st,
                    ok=True,
                    prediction=text,
                ),
            )
        )
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeOpenAIServer(responder=responder, latency_s=args.latency, record_requests=False) as server,
    ):
        judge = LLMJudge(
            base_url=server.base_url,
            model="bench",
            concurrency=args.concurrency,
            progress=False,
            cache_path=str(Path(tmp) / "judge.sqlite"),
            max_retries=1,
        )
        t0 = time.perf_counter()
        judge.judge_many(pairs)
        t1 = time.perf_counter()
        print(
            f"first run : {args.n} items, {server.request_count} requests, {t1 - t0:.2f} s "
            f"({args.n / (t1 - t0):.0f} items/s; ideal {args.concurrency / args.latency:.0f}/s at this latency)"
        )
        judge.judge_many(pairs)
        t2 = time.perf_counter()
        print(
            f"cached run: {args.n} items, {judge.last_stats.requests} requests, {t2 - t1:.2f} s "
            f"({args.n / (t2 - t1):.0f} items/s)"
        )


if __name__ == "__main__":
    main()
