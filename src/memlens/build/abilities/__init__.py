"""Question types: one module per type (IE, MSR, TR, KU, AR), one registry."""
from __future__ import annotations

import random

from memlens.build.abilities.base import Ability, Draft, FactDraft, ImageRequest, Plan
from memlens.core.schema import AR, IE, Question

_REGISTRY: dict[str, Ability] = {}


#: the answerable question types: (module, class). Answer refusal wraps all of them.
ANSWERABLE_MODULES = (("memlens.build.abilities.ie", "InformationExtraction"),
                      ("memlens.build.abilities.msr", "MultiSessionReasoning"),
                      ("memlens.build.abilities.tr", "TemporalReasoning"),
                      ("memlens.build.abilities.ku", "KnowledgeUpdate"))


def registry() -> dict[str, Ability]:
    if not _REGISTRY:
        import importlib

        from memlens.build.abilities.ar import AnswerRefusal

        found = []
        for mod, cls in ANSWERABLE_MODULES:
            try:
                m = importlib.import_module(mod)
            except ModuleNotFoundError as exc:
                if exc.name == mod:
                    continue
                raise
            ability = getattr(m, cls)()
            _REGISTRY[ability.question_type] = ability
            found.append(ability)
        sources = [(a, sub, v) for a in found for sub, vs in a.variants.items() for v in vs
                   if a.ar_source(sub, v)]
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
    # open-form questions have no answer space to draw from: commit to an arbitrary name, never
    # an abstention (that would make chance a partial refuser)
    return guess or f"My guess: {rng.choice(OPEN_FORM_GUESSES)}"


OPEN_FORM_GUESSES = ("Maple", "Orchid", "Harbor", "Cedar", "Willow", "Juniper", "Aster", "Beacon")


__all__ = ["Ability", "Draft", "FactDraft", "ImageRequest", "Plan", "registry", "ability_for", "chance_answer"]
