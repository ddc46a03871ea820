"""Question types: one module per type (IE, MSR, TR, KU, AR), each an :class:`Ability` marked
``@component("question_type", <official type>)``.

The registry (:mod:`memlens.core.registry`) finds them in this package; this module builds them on
first use, in the paper's order (:data:`memlens.core.constants.QUESTION_TYPES`: every registered
type must be one of the official types and every official type must have a module), and memoises
them: a pure function of the code. A module that fails to import is an error naming it, never a
silently missing type.
"""

from __future__ import annotations

import random
from functools import lru_cache

from memlens.construction.abilities.base import OPEN_FORM_GUESSES, Ability, Draft, FactDraft, ImageRequest, Plan
from memlens.core.constants import AR, QUESTION_TYPES, SUBTYPES
from memlens.core.errors import ConfigError
from memlens.core.registry import component_names, find_component
from memlens.core.schema import Question


def question_types() -> list[str]:
    """The registered question types in the paper's order; a type outside the official vocabulary,
    or an official type without a module, is an error."""
    names = component_names("question_type")
    unknown = sorted(set(names) - set(QUESTION_TYPES))
    if unknown:
        raise ConfigError(
            f"question type {unknown[0]!r} is not in the official vocabulary "
            "(memlens.core.constants.QUESTION_TYPES and SUBTYPES list it)"
        )
    missing = [t for t in QUESTION_TYPES if t not in names]
    if missing:
        raise ConfigError(f"question type {missing[0]!r} has no module (an @component('question_type', ...) Ability)")
    return [t for t in QUESTION_TYPES if t in names]


def answerable() -> list[type[Ability]]:
    """The classes of the answerable question types, in the paper's order (answer refusal wraps them)."""
    return [find_component("question_type", t) for t in question_types() if t != AR]


def check_subtypes(abilities: list[Ability]) -> None:
    """Every subtype an ability makes is an official one (:data:`memlens.core.constants.SUBTYPES`)."""
    for a in abilities:
        extra = sorted(set(a.variants) - set(SUBTYPES.get(a.question_type, ())))
        if extra:
            raise ConfigError(
                f"{a.question_type} subtype {extra[0]!r} is not in the official vocabulary "
                "(memlens.core.constants.SUBTYPES; its judge routing: memlens.core.tasks.ROUTES)"
            )


@lru_cache(maxsize=1)
def _registry() -> tuple[tuple[str, Ability], ...]:
    found = [cls() for cls in answerable()]
    check_subtypes(found)
    sources = [(a, sub, v) for a in found for sub, vs in a.variants.items() for v in vs if a.ar_source(sub, v)]
    ar = find_component("question_type", AR)(sources)
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
    "answerable",
    "check_subtypes",
    "question_types",
    "OPEN_FORM_GUESSES",
]
