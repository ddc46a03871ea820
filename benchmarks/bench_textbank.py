"""Speed of the offline session text generator: sessions of ten turns per second, and the time to
load the text banks (``data/*.yaml``) and build the module's template tables.

    .venv/bin/python benchmarks/bench_textbank.py
"""

from __future__ import annotations

import importlib
import random
import time

from memlens.construction.ontology.stage import build_topics, load_ontology_file
from memlens.construction.text import textbank as tb


def load_time(n: int = 20) -> float:
    """Milliseconds to (re)load the text bank module with cold bank caches (median of ``n``)."""
    try:
        from memlens.core.bank import load_bank
    except ImportError:  # before the banks were data files
        load_bank = None
    times = []
    for _ in range(n):
        if load_bank is not None:
            load_bank.cache_clear()
        t0 = time.perf_counter()
        importlib.reload(tb)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2] * 1000


def main() -> None:
    ms = load_time()
    topics = build_topics(load_ontology_file(), 42)
    n = 3000
    t0 = time.perf_counter()
    for i in range(n):
        r = random.Random(i)
        t = topics[i % len(topics)]
        kw = {"topic_title": t.title, "subtopic": t.subtopics[i % len(t.subtopics)], "track": t.track}
        tb.session_opening(r, **kw)
        for k in range(5):
            tb.assistant_reply(r, **kw)
            if k < 4:
                tb.user_turn(r, **kw, mention="Here is the receipt from lunch <image>" if k == 1 else None)
    dt = time.perf_counter() - t0
    t1 = time.perf_counter()
    for i in range(n):
        tb.filler_session(random.Random(i), n_turns=10)
    dt2 = time.perf_counter() - t1
    print(f"load text banks + build tables: {ms:.1f} ms (median of 20 cold reloads)")
    print(f"topic sessions (10 turns): {n} in {dt:.2f} s -> {n / dt:,.0f}/s")
    print(f"filler sessions (10 turns): {n} in {dt2:.2f} s -> {n / dt2:,.0f}/s")


if __name__ == "__main__":
    main()
