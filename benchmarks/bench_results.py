"""Results-store benchmark: deciding which items need work, and what the store costs on disk.

Builds paper-scale-shaped items in memory (789 questions x 4 lengths; histories of 16/32/63/126
sessions drawn from a shared pool of 2,200 sessions of ~10 turns with images, as the built benchmark
shares sessions across questions and lengths), fills a results store in a temporary folder with
one answer per item, then times what the evaluate stage does before sending anything:

(a) fingerprint every item (question + history content digests) and derive its request key;
(b) open the store (read every record) and look every key up.

It also compares the store's size with the prediction views of the same answers (what the old
predictions files held) and with the raw answer texts, for short and for long answers.

Usage: python benchmarks/bench_results.py [--questions 789] [--answer-chars 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from memlens.core.items import EvalItem, HistorySession, session_digest
from memlens.core.schema import Prediction, Question, Turn
from memlens.eval.prompt import PROMPT_PROTOCOL
from memlens.eval.results import ResultsStore, request_key, write_view

LENGTHS = {"32k": 16, "64k": 32, "128k": 63, "256k": 126}


def make_items(n_questions: int, seed: int = 0) -> list[EvalItem]:
    rng = random.Random(seed)
    pool = []
    for s in range(2200):
        turns = []
        for t in range(10):
            imgs = [f"{rng.getrandbits(256):064x}"] if rng.random() < 0.15 else []
            text = " ".join(rng.choice(("alpha", "beta", "gamma", "delta", "notes", "photo")) for _ in range(120))
            turns.append(Turn("user" if t % 2 == 0 else "assistant", text + " <image>" * len(imgs), imgs))
        pool.append((f"sess_{s:06d}", turns, session_digest(turns, str)))
    items = []
    for q in range(n_questions):
        question = Question.unchecked(
            question_id=f"q_{q:06d}",
            question=f"What did the receipt {q} say?",
            question_date="2025/05/01 (Thu) 10:00",
            question_type="information_extraction",
            question_subtype="entity",
            answer="x",
        )
        for length, n in LENGTHS.items():
            picks = rng.sample(range(len(pool)), n)
            hist = [HistorySession(pool[i][0], "2025/01/01 (Wed) 09:00", pool[i][1], False, pool[i][2]) for i in picks]
            items.append(EvalItem(question, length, hist))
    return items


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=789)
    ap.add_argument("--answer-chars", type=int, nargs="+", default=[40, 1500])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    t0 = time.perf_counter()
    items = make_items(args.questions)
    print(f"built {len(items)} items in {time.perf_counter() - t0:.1f} s")
    identity = {"_target_": "memlens.eval.systems.openai_model.OpenAICompatibleModel", "model": "m", "temperature": 0}
    for chars in args.answer_chars:
        with tempfile.TemporaryDirectory() as tmp:
            store = ResultsStore(tmp, identity, fsync=False)
            keys = [request_key(store.key, PROMPT_PROTOCOL, "standard", it.fingerprint()) for it in items]
            text = "A" * chars
            with store.writer():
                for it, k in zip(items, keys):
                    store.put(
                        k,
                        {
                            "question_id": it.question_id,
                            "length": it.length,
                            "mode": "standard",
                            "ok": True,
                            "text": text,
                            "error": None,
                            "prompt_tokens": 120000,
                            "completion_tokens": 12,
                            "meta": {"finish_reason": "stop"},
                            "latency_s": 1.234,
                            "attempts": 1,
                            "created": 1764582000.0,
                        },
                    )
            best_fp, best_lookup = float("inf"), float("inf")
            for _ in range(args.repeat):
                t = time.perf_counter()
                ks = [request_key(store.key, PROMPT_PROTOCOL, "standard", it.fingerprint()) for it in items]
                best_fp = min(best_fp, time.perf_counter() - t)
                t = time.perf_counter()
                fresh = ResultsStore(tmp, identity)
                todo = [k for k in ks if not fresh.has_answer(k)]
                best_lookup = min(best_lookup, time.perf_counter() - t)
                assert not todo
            store_bytes = store.path.stat().st_size
            view_bytes = 0
            for length in LENGTHS:
                preds = [
                    Prediction(
                        system="m",
                        mode="standard",
                        length=length,
                        question_id=it.question_id,
                        question_type="information_extraction",
                        question_subtype="entity",
                        ok=True,
                        raw_prediction=text,
                        prediction=text,
                        prompt_tokens=120000,
                        completion_tokens=12,
                        meta={"finish_reason": "stop"},
                    )
                    for it in items
                    if it.length == length
                ]
                p = Path(tmp) / f"view_{length}.jsonl"
                write_view(p, preds)
                view_bytes += p.stat().st_size
            raw = chars * len(items)
            print(
                f"answers of {chars} chars: decide work for {len(items)} items: fingerprints {best_fp:.3f} s + "
                f"store open and lookup {best_lookup:.3f} s = {best_fp + best_lookup:.3f} s"
            )
            print(
                f"  store {store_bytes / 1e6:.2f} MB vs prediction views {view_bytes / 1e6:.2f} MB "
                f"(overhead {store_bytes / view_bytes - 1:+.1%}) vs raw answer text {raw / 1e6:.2f} MB "
                f"(x{store_bytes / raw:.2f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
