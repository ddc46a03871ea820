"""Question types: one module per type (IE, MSR, TR, KU, AR), one registry.

The registry is built on first use from the modules below (imported statically, so a broken module
is an error, never a silently missing type) and memoised: it is a pure function of the code.
"""

from __future__ import annotations

import random
from functools import lru_cache

from memlens.construction.abilities.ar import AnswerRefusal
from memlens.construction.abilities.base import OPEN_FORM_GUESSES, Ability, Draft, FactDraft, ImageRequest, Plan
from memlens.construction.abilities.ie import InformationExtraction
from memlens.construction.abilities.ku import KnowledgeUpdate
from memlens.construction.abilities.msr import MultiSessionReasoning
from memlens.construction.abilities.tr import TemporalReasoning
from memlens.core.schema import Question

#: the answerable question types, in the paper's order; answer refusal wraps all of them
ANSWERABLE: tuple[type[Ability], ...] = (
    InformationExtraction,
    MultiSessionReasoning,
    TemporalReasoning,
    KnowledgeUpdate,
)


@lru_cache(maxsize=1)
def _registry() -> tuple[tuple[str, Ability], ...]:
    found = [cls() for cls in ANSWERABLE]
    sources = [(a, sub, v) for a in found for sub, vs in a.variants.items() for v in vs if a.ar_source(sub, v)]
    ar = AnswerRefusal(sources)
    return (*((a.question_type, a) for a in found), (ar.question_type, ar))


def registry() -> dict[str, Ability]:
    """Question type -> its ability (a fresh dict; the abilities themselves are shared)."""
    return dict(_registry())


def ability_for(question_type: str) -> Ability:
    reg = registry()
    if question_type not in reg:
        raise KeyError(f"no ability module for question type {question_type!r} (have: {', '.join(reg)})")
    return reg[question_type]


def chance_answer(question: Question, rng: random.Random) -> str:
    try:
        guess = ability_for(question.question_type).chance_answer(question, rng)
    except KeyError:
        guess = ""
    # open-form questions have no answer space to draw from: commit to an arbitrary name, never
    # an abstention (that would make chance a partial refuser)
    return guess or f"My guess: {rng.choice(OPEN_FORM_GUESSES)}"


__all__ = [
    "Ability",
    "Draft",
    "FactDraft",
    "ImageRequest",
    "Plan",
    "registry",
    "ability_for",
    "chance_answer",
    "ANSWERABLE",
    "OPEN_FORM_GUESSES",
]
