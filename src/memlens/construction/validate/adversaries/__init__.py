"""Validity adversaries: attacks on a built benchmark, run by the validate stage as gates.

- :mod:`.textonly`: text-only solvers (answer priors, option types, dates, a learned model) and
  answer-refusal detection;
- :mod:`.detectors`: evidence-vs-haystack detectors that never see the question (session
  metadata, session text, image metadata);
- :mod:`.repetition`: sentence repetition within histories and across the benchmark;
- :mod:`.oracle`: text-only solvers handed the true evidence sessions (text and timestamps, no
  pixels), on the real questions and the never-released probe set of :mod:`.probe`.

:func:`run_all` runs them all on a loaded :class:`~.data.Bench`; ``python -m
memlens.construction.validate.adversaries --data DIR`` prints the figures for a built data folder.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from memlens.construction.validate.adversaries import detectors, oracle, repetition, textonly
from memlens.construction.validate.adversaries.data import Bench, load
from memlens.construction.validate.adversaries.heap import release_freed_memory
from memlens.core.forked import balance, can_fork, run_split


def single_threaded():
    """One thread for OpenMP and BLAS. On a busy machine their multi-threaded barriers spin: gradient
    boosting on 150 rows took 48 s with the default threads and 0.5 s with one (the results do not
    depend on it). The libraries are loaded first: threadpoolctl only limits loaded ones."""
    import sklearn.ensemble
    import sklearn.linear_model  # noqa: F401
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


# seconds each step takes at paper scale (2 idle cores; the oracle's includes its probe set): how
# :func:`plan` balances the steps over processes. Only the split depends on them, never a figure.
COST = {"oracle": 140.0, "detectors": 90.0, "text_only": 22.0, "repetition": 4.0}


def plan(names: list[str], workers: int) -> list[list[str]]:
    """``names`` split into at most ``workers`` groups of about equal :data:`COST` (longest first,
    each to the lightest group), each group in ``names`` order; the first group (the parent
    process's) holds the costliest step."""
    return balance(names, COST, workers)


def run_all(
    bench: Bench,
    acfg: dict,
    *,
    seed: int = 0,
    progress: bool = False,
    only: tuple[str, ...] = (),
    probes: list | Callable[[], list] | None = None,
    workers: int = 1,
) -> dict:
    """Every adversary's figures (or those named in ``only``) and the seconds each took (``timing``);
    ``acfg``: the ``validate`` section (:class:`~memlens.construction.validate.settings.ValidateSettings`,
    dumped to a dict); ``probes``: the probe set's :class:`~.oracle.Item` list (:mod:`.probe`), or a
    function that makes it (called in the oracle's process, its seconds reported as ``probe``).
    ``workers`` > 1 runs the steps in that many processes (forked from this one, :func:`plan`); each
    step is seeded on its own, so the figures are the same with any number."""
    a = dict(acfg)
    make_probes = probes if callable(probes) else (lambda: list(probes or []))
    timing: dict[str, float] = {}

    def oracle_step():
        t0 = time.perf_counter()
        items = make_probes()
        release_freed_memory()  # the probe set's drafts, before the solvers fit
        if callable(probes):
            timing["probe"] = round(time.perf_counter() - t0, 2)
        return oracle.run(bench, k_folds=int(a["folds"]), seed=seed, probes=items, repeats=int(a["oracle_repeats"]))

    steps = {
        "text_only": lambda: textonly.run(
            bench, k_folds=int(a["folds"]), vocab_min=int(a["vocab_min"]), min_support=int(a["min_support"]), seed=seed
        ),
        "detectors": lambda: detectors.run(
            bench,
            k_folds=int(a["folds"]),
            seed=seed,
            top=int(a["top_features"]),
            max_features=int(a["text_max_features"]),
        ),
        "oracle": oracle_step,
        "repetition": lambda: repetition.run(
            bench, min_words=int(a["min_sentence_words"]), frequent_uses=int(a["frequent_uses"])
        ),
    }
    names = [n for n in steps if not only or n in only]
    if not can_fork():
        workers = 1
    groups = plan(names, workers)

    def run_group(group: list[str], bar: bool) -> dict:
        from tqdm import tqdm

        out, took = {}, {}
        with single_threaded():
            # costliest first: the step with the highest peak runs before the others' leftovers
            for name in tqdm(sorted(group, key=lambda n: -COST.get(n, 1.0)), desc="adversaries", disable=not bar):
                t0 = time.perf_counter()
                out[name] = steps[name]()
                took[name] = round(time.perf_counter() - t0, 2)
                release_freed_memory()
        return {"figures": out, "timing": took}

    # forked before any model is fitted; what the caller freed is not handed down to them
    results = run_split(
        [partial(run_group, g, i == 0 and progress) for i, g in enumerate(groups)],
        what=lambda i: f"validate: the process running {', '.join(groups[i])}",
        hint="rerun with validate.workers=1 to run every adversary in one process",
        before_fork=release_freed_memory,
    )
    out = {}
    for r in results:
        out.update(r["figures"])
        timing.update(r["timing"])
    out = {n: out[n] for n in names}
    out["timing"] = {k: timing[k] for k in [*names, "probe"] if k in timing}
    return out


__all__ = ["run_all", "load", "Bench", "plan"]
