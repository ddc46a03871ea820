"""Throughput benchmark of the deterministic MemLens judge.

Builds N synthetic (question_type, subtype, reference, prediction) items across all ten task keys
from a seeded RNG - short answers in many surface forms, long chain-of-thought outputs ending in an
``[ANSWER]`` tag or a concluding sentence, tail-truncated and auto-zero-length outputs, refusals and
refusal-plus-guess outputs - then times ``memlens.eval.judge.deterministic.score`` over all of them.

The target (default 3.75 s for 75,000 items: 20,000 items/s) applies to plain scoring; a second, informational
run also computes the degeneracy diagnostic (``diagnostics=True``).

``--against REV`` also times the judge of another git revision on the same items, interleaved with
the current one (old, new, old, new ...), and prints both rates and their ratio: the before/after
figure of a change, measured in one run under the same load.

Usage: python benchmarks/bench_judge.py [--n 75000] [--seed 0] [--repeat 3] [--workers 1]
                                       [--profile] [--no-diagnostics-run] [--against main]
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing
import pstats
import random
import sys
import time
from collections import Counter
from typing import NamedTuple

from memlens.construction.images.synthetic.formats import MONTHS
from memlens.eval.judge.deterministic import score, task_key


class Item(NamedTuple):
    qtype: str
    subtype: str | None
    reference: str
    prediction: str
    old_answer: str | None
    expected: bool | None  # the label the generator intended, None when not well defined


_NUM_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
_MONTHS = list(MONTHS)
_ENTITIES = [
    "Biscuit",
    "the red bicycle",
    "Lake Tahoe",
    "a ceramic vase",
    "Dr. Alvarez",
    "the Blue Heron cafe",
    "sourdough bread",
    "Monstera deliciosa",
    "Tom & Jerry",
    "the Louvre",
    "a green umbrella",
    "Kyoto",
    "oat milk latte",
    "the 7:45 train",
]
_FILLER = [
    "Looking at session {a}, the user mentions the {e} again.",
    "In session {a} the assistant describes the image of {e}.",
    "Wait, let me re-read session {a} to be sure about {e}.",
    "Session {a} was on {m} {d}, 2024, and it talks about something else.",
    "Let me check whether {e} appears in session {b} as well.",
    "Hold on, the photo in session {b} might show {e}.",
    "Actually looking at it again, session {a} and session {b} are related.",
    "The user was awaiting a delivery in session {b}, which is unrelated.",
]
_REFUSALS = [
    "Insufficient information",
    "Insufficient information.",
    "NOT_MENTIONED",
    "I don't know.",
    "The conversation does not mention this.",
    "This cannot be determined from the conversation.",
    "There is not enough information to answer.",
    "I'm unable to determine that.",
    "That was not provided in the conversation.",
]
_GUESS_LEADS = [
    "The information is insufficient, but I think it is {v}.",
    "I'm not sure, there is no information about it, but my best guess is {v}.",
    "I cannot determine this for certain; probably {v}.",
]


def _filler(rng: random.Random, n_sentences: int) -> str:
    out = []
    for _ in range(n_sentences):
        t = rng.choice(_FILLER)
        out.append(
            t.format(
                a=rng.randint(1, 40),
                b=rng.randint(1, 40),
                e=rng.choice(_ENTITIES),
                m=rng.choice(_MONTHS),
                d=rng.randint(1, 28),
            )
        )
    return " ".join(out)


# ---- per-task generators: (reference, correct surface forms, wrong surface forms) -------------


def _counting(rng: random.Random) -> tuple[str, list[str], list[str]]:
    n = rng.randint(0, 12)
    w = (n + rng.randint(1, 3)) % 13
    good = [
        str(n),
        _NUM_WORDS[n],
        f"{n}.0",
        f"There are {n} in total.",
        f"I counted {max(n - 1, 0)} in session 2 and 1 more in session 5, so {n} in total.",
    ]
    bad = [str(w), f"{n} or {n + 1}", f"between {max(n - 1, 0)} and {n + 1}", f"{w} items"]
    return str(n), good, bad


def _arithmetic(rng: random.Random) -> tuple[str, list[str], list[str]]:
    cents = rng.randint(100, 500000)
    v = cents / 100
    cur = rng.choice(["$", "€", "£", "DKK"])
    ref = f"{v:,.2f} DKK" if cur == "DKK" else f"{cur}{v:,.2f}"
    sym = {"$": "USD", "€": "EUR", "£": "GBP", "DKK": "DKK"}[cur]
    a = round(v * 0.4, 2)
    good = [ref, f"{v:.2f} {sym}", f"{a:.2f} + {v - a:.2f} = {ref}", f"The total comes to {ref}.", f"{v:g}"]
    other = "EUR" if sym != "EUR" else "USD"
    bad = [f"{v + 1:.2f} {sym}", f"{v:.2f} {other}", f"between {v - 5:.2f} and {v + 5:.2f} {sym}"]
    return ref, good, bad


def _yes_no(rng: random.Random) -> tuple[str, list[str], list[str]]:
    yes = rng.random() < 0.5
    if yes:
        return "Yes", ["Yes", "yes, it is the same plant", "Yes."], ["No", "They are different."]
    return "No", ["No", "No.", "They are different."], ["Yes", "Yes, it's the same dog."]


def _duration(rng: random.Random) -> tuple[str, list[str], list[str]]:
    ref, other = rng.choice([("A", "B"), ("B", "A")])
    good = [ref, f"Option {ref}", f"({ref})", f"{ref}.", f"The answer is {ref}"]
    bad = [other, f"{ref} or {other}", f"Option {other}"]
    return ref, good, bad


def _order(rng: random.Random) -> tuple[str, list[str], list[str]]:
    k = rng.randint(3, 8)
    seq = rng.sample(range(1, 10), k)
    ref = "".join(f"({i})" for i in seq)
    good = [
        ref,
        ", ".join(map(str, seq)),
        "[" + ",".join(map(str, seq)) + "]",
        " -> ".join(map(str, seq)),
        f"The correct order is {ref}.",
    ]
    swapped = seq[:]
    swapped[0], swapped[1] = swapped[1], swapped[0]
    bad = ["".join(f"({i})" for i in seq[:-1]), "".join(f"({i})" for i in swapped), ref + f"({seq[0]})"]
    return ref, good, bad


def _date(rng: random.Random) -> tuple[str, list[str], list[str]]:
    y, m, d = rng.randint(2019, 2025), rng.randint(1, 12), rng.randint(13, 28)
    ref = f"{y}/{m:02d}/{d:02d}"
    mon = _MONTHS[m - 1]
    good = [
        ref,
        f"{y}-{m:02d}-{d:02d}",
        f"{mon} {d}, {y}",
        f"{d} {mon} {y}",
        f"{d:02d}/{m:02d}/{y}",
        f"{m:02d}/{d:02d}/{y}",
        f"The event happened on {mon} {d}th, {y}.",
    ]
    bad = [f"{y}/{m:02d}/{d - 1:02d}", f"{mon} {d}", f"{y + 1}-{m:02d}-{d:02d}"]
    return ref, good, bad


def _entity(rng: random.Random) -> tuple[str, list[str], list[str]]:
    ref = rng.choice(_ENTITIES)
    other = rng.choice([e for e in _ENTITIES if e != ref])
    good = [ref, f"It was {ref}.", f"You mentioned {ref} in our chat.", ref.upper()]
    bad = [other, f"It was {other}."]
    return ref, good, bad


_TYPES = [
    # (question_type, subtype, generator, weight)
    ("information_extraction", "entity", _entity, 16),
    ("information_extraction", "previnfo", _entity, 8),
    ("multi_session_reasoning", "counting", _counting, 8),
    ("multi_session_reasoning", "arithmetic", _arithmetic, 6),
    ("multi_session_reasoning", "entity_resolution", _yes_no, 6),
    ("temporal_reasoning", "duration_comparison", _duration, 6),
    ("temporal_reasoning", "order_ranking", _order, 6),
    ("temporal_reasoning", "temporal_info_extraction", _date, 6),
    ("knowledge_update", None, _entity, 14),
    ("answer_refusal", None, None, 10),
]


def _wrap_long(rng: random.Random, answer: str) -> str:
    """A chain-of-thought output around ``answer``: tagged, concluding sentence, or huge."""
    style = rng.random()
    if style < 0.5:
        return f"[REASONING] {_filler(rng, rng.randint(10, 60))}\n[ANSWER] {answer}"
    if style < 0.8:
        think = _filler(rng, rng.randint(20, 80))
        return f"<think>{think}</think>\n{_filler(rng, 3)}\nFinal answer: {answer}"
    # very long, tail-truncated; a fraction of them exceed 500 words even after truncation
    return f"{_filler(rng, rng.randint(150, 500))}\nSo the answer is {answer}"


def build_items(n: int, seed: int) -> list[Item]:
    rng = random.Random(seed)
    weights = [w for *_, w in _TYPES]
    items: list[Item] = []
    for _ in range(n):
        qtype, subtype, gen, _w = rng.choices(_TYPES, weights)[0]
        if gen is None:  # answer refusal
            ref = "NOT_MENTIONED"
            if rng.random() < 0.6:
                pred, exp = rng.choice(_REFUSALS), True
            else:
                pred, exp = rng.choice(_ENTITIES), False
            if rng.random() < 0.3:
                pred = _wrap_long(rng, pred)
                exp = None  # may be auto-zero
            items.append(Item(qtype, subtype, ref, pred, None, exp))
            continue
        ref, good, bad = gen(rng)
        old = None
        if qtype == "knowledge_update":
            old = rng.choice([e for e in _ENTITIES if e != ref])
            bad = bad + [old, f"It used to be {ref}, now {old}."]
            good = good + [f"It used to be {old}, but now it is {ref}."]
        r = rng.random()
        if r < 0.35:
            pred, exp = rng.choice(good), True
        elif r < 0.55:
            pred, exp = rng.choice(bad), False
        elif r < 0.62:
            pred, exp = rng.choice(_REFUSALS), False
        elif r < 0.67:
            pred, exp = rng.choice(_GUESS_LEADS).format(v=good[0]), True
        else:
            correct = rng.random() < 0.6
            pred, exp = _wrap_long(rng, rng.choice(good if correct else bad)), None
        items.append(Item(qtype, subtype, ref, pred, old, exp))
    return items


def run(items: list[Item], diagnostics: bool = False, judge=None) -> list:
    fn = score if judge is None else judge
    return [
        fn(it.qtype, it.subtype, it.reference, it.prediction, old_answer=it.old_answer, diagnostics=diagnostics)
        for it in items
    ]


def compare(items: list[Item], rev: str, repeat: int) -> None:
    """Best-of-``repeat`` rates of the judge of ``rev`` and of the current one, interleaved."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    from judge_baseline import load

    old = load(rev).score
    best = {"old": float("inf"), "new": float("inf")}
    for _ in range(max(1, repeat)):
        for name, fn in (("old", old), ("new", score)):
            t0 = time.perf_counter()
            run(items, judge=fn)
            best[name] = min(best[name], time.perf_counter() - t0)
    n = len(items)
    print(
        f"side by side, best of {repeat}: {rev} {n / best['old']:,.0f} items/s, current {n / best['new']:,.0f} "
        f"items/s (current/old = {best['old'] / best['new']:.2f})"
    )


_SHARED: list[Item] = []  # set before forking: workers read it copy-on-write, nothing is pickled


def _run_slice(args: tuple[int, int, bool]) -> list:
    lo, hi, diagnostics = args
    return run(_SHARED[lo:hi], diagnostics)


def run_parallel(items: list[Item], workers: int, diagnostics: bool = False) -> list:
    """Judge with ``workers`` forked processes (pool start-up included in the timing)."""
    if workers <= 1:
        return run(items, diagnostics)
    _SHARED[:] = items
    chunk = -(-len(items) // (workers * 8))
    jobs = [(lo, min(lo + chunk, len(items)), diagnostics) for lo in range(0, len(items), chunk)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        parts = pool.map(_run_slice, jobs)
    return [v for part in parts for v in part]


def print_per_key(items: list[Item]) -> None:
    groups: dict[str, list[Item]] = {}
    for it in items:
        groups.setdefault(task_key(it.qtype, it.subtype, it.reference), []).append(it)
    for key, group in sorted(groups.items()):
        t0 = time.perf_counter()
        run(group)
        dt = time.perf_counter() - t0
        print(f"  {key:24s} {len(group):6d} items {dt:6.3f} s {1e6 * dt / len(group):6.1f} us/item")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=75_000, help="number of synthetic items")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs (best is reported)")
    ap.add_argument("--target", type=float, default=3.75, help="target seconds for one run (75,000 items: 20K/s)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one run")
    ap.add_argument("--workers", type=int, default=1, help="processes to judge with (fork; the machine has 2 cores)")
    ap.add_argument("--per-key", action="store_true", help="also time each task key separately")
    ap.add_argument("--against", default=None, help="also time the judge of this git revision, side by side")
    ap.add_argument(
        "--no-diagnostics-run",
        action="store_true",
        help="skip the extra timed run with diagnostics=True (degeneracy scan)",
    )
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    items = build_items(args.n, args.seed)
    t_build = time.perf_counter() - t0
    keys = Counter(task_key(i.qtype, i.subtype, i.reference) for i in items)
    chars = sum(len(i.prediction) for i in items)
    print(
        f"built {len(items):,} items in {t_build:.2f} s "
        f"({chars / 1e6:.1f} M prediction chars, mean {chars / len(items):.0f})"
    )
    print("items per task key: " + ", ".join(f"{k}={v}" for k, v in sorted(keys.items())))

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run(items)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)

    times = []
    verdicts = []
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        verdicts = run_parallel(items, args.workers)
        times.append(time.perf_counter() - t0)
    best, worst = min(times), max(times)
    print(
        f"judged {len(items):,} items with {args.workers} process(es): "
        f"best {best:.3f} s, worst {worst:.3f} s over {len(times)} runs -> "
        f"{len(items) / best:,.0f} items/s ({1e6 * best / len(items):.1f} us/item)"
    )

    n = len(verdicts)
    print(
        f"accuracy {sum(v.correct for v in verdicts) / n:.3f}; "
        f"auto-zero {sum(v.auto_zero for v in verdicts)}, "
        f"truncated {sum(v.truncated for v in verdicts)}, "
        f"abstained {sum(v.abstained for v in verdicts)}"
    )
    labelled = [(it.expected, v.correct) for it, v in zip(items, verdicts) if it.expected is not None]
    agree = sum(e == c for e, c in labelled)
    print(
        f"sanity: verdict == generator's intended label on {agree}/{len(labelled)} "
        f"unambiguous items ({agree / max(1, len(labelled)):.4f})"
    )
    if args.per_key:
        print_per_key(items)
    if not args.no_diagnostics_run:
        t0 = time.perf_counter()
        diag = run_parallel(items, args.workers, diagnostics=True)
        t_diag = time.perf_counter() - t0
        assert [v.correct for v in diag] == [v.correct for v in verdicts]
        print(
            f"with diagnostics=True (official degeneracy scan, never changes a score): "
            f"{t_diag:.3f} s -> {len(items) / t_diag:,.0f} items/s; "
            f"degenerate {sum(bool(v.degenerate) for v in diag)}"
        )
    if args.against:
        compare(items, args.against, args.repeat)
    ok = best < args.target
    print(f"target < {args.target:.2f} s: {'MET' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
