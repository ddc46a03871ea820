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

from memlens.construction.validate.adversaries import detectors, oracle, repetition, textonly
from memlens.construction.validate.adversaries.data import Bench, load


def single_threaded():
    """One thread for OpenMP and BLAS. On a busy machine their multi-threaded barriers spin: gradient
    boosting on 150 rows took 48 s with the default threads and 0.5 s with one (the results do not
    depend on it). The libraries are loaded first: threadpoolctl only limits loaded ones."""
    import sklearn.ensemble
    import sklearn.linear_model  # noqa: F401
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def run_all(
    bench: Bench,
    acfg: dict,
    *,
    seed: int = 0,
    progress: bool = False,
    only: tuple[str, ...] = (),
    probes: list | None = None,
) -> dict:
    """Every adversary's figures (or those named in ``only``) and the seconds each took (``timing``);
    ``acfg``: the ``validate`` section (:class:`~memlens.construction.validate.settings.ValidateSettings`,
    dumped to a dict); ``probes``: the probe set's :class:`~.oracle.Item` list (:mod:`.probe`)."""
    a = dict(acfg)
    timing = {}
    out = {}
    steps = (
        (
            "text_only",
            lambda: textonly.run(
                bench,
                k_folds=int(a["folds"]),
                vocab_min=int(a["vocab_min"]),
                min_support=int(a["min_support"]),
                seed=seed,
            ),
        ),
        (
            "detectors",
            lambda: detectors.run(
                bench,
                k_folds=int(a["folds"]),
                seed=seed,
                top=int(a["top_features"]),
                max_features=int(a["text_max_features"]),
            ),
        ),
        ("oracle", lambda: oracle.run(bench, k_folds=int(a["folds"]), seed=seed, probes=probes, repeats=int(a["oracle_repeats"]))),
        (
            "repetition",
            lambda: repetition.run(
                bench, min_words=int(a["min_sentence_words"]), frequent_uses=int(a["frequent_uses"])
            ),
        ),
    )
    from tqdm import tqdm

    with single_threaded():
        for name, fn in tqdm(
            [st for st in steps if not only or st[0] in only], desc="adversaries", disable=not progress
        ):
            t0 = time.perf_counter()
            out[name] = fn()
            timing[name] = round(time.perf_counter() - t0, 2)
    out["timing"] = timing
    return out


__all__ = ["run_all", "load", "Bench"]
