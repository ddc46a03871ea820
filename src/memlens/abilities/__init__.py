"""Question types: one module per type (IE, MSR, TR, KU, AR), one registry."""
from __future__ import annotations

import random

from memlens.abilities.base import Ability, Draft, FactDraft, ImageRequest, Plan
from memlens.schema import AR, IE, Question

_REGISTRY: dict[str, Ability] = {}


def registry() -> dict[str, Ability]:
    if not _REGISTRY:
        from memlens.abilities.ar import AnswerRefusal
        from memlens.abilities.ie import InformationExtraction

        ie = InformationExtraction()
        _REGISTRY[IE] = ie
        sources = [(a, sub, v) for a in (ie,) for sub, vs in a.variants.items() for v in vs]
        _REGISTRY[AR] = AnswerRefusal(sources)
    return _REGISTRY


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
    return guess or "I am not sure."


__all__ = ["Ability", "Draft", "FactDraft", "ImageRequest", "Plan", "registry", "ability_for", "chance_answer"]
