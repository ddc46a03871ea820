"""Shared machinery of the question types: plans, drafts and the ability registry.

A question is made in two steps, mirroring the paper's pipeline (entity selection and image
retrieval before question writing):

1. ``plan(rng, topic, subtype, variant, index)`` (crawl stage) decides what the evidence images must
   show: a list of :class:`ImageRequest` (family + constraints) and latent choices (context phrase,
   wording). Plans are deterministic in (seed, type, subtype, index).
2. ``build(rng, plan, truths)`` (generate stage) receives the exact ground truth of the rendered and
   accepted images and writes the question, the reference answer and the evidence facts (each fact
   a user-turn mention with ``<image>`` placed next to the thing it shows).

What is specific to a type lives in its module (``memlens.construction.abilities.<type>``); nothing here knows a
particular type.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from memlens.construction.images.sources import ImageRequest
from memlens.core.schema import Question

__all__ = ["Ability", "Draft", "FactDraft", "ImageRequest", "Plan", "pick", "words_of", "OPEN_FORM_GUESSES"]


#: what a guesser commits to on an open-form question (chance baselines never abstain)
OPEN_FORM_GUESSES = ("Maple", "Orchid", "Harbor", "Cedar", "Willow", "Juniper", "Aster", "Beacon")


@dataclass
class Plan:
    plan_id: str
    question_type: str
    question_subtype: str
    variant: str
    topic_id: str
    subtopic: str
    images: list[ImageRequest]
    latent: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        d = dict(d)
        d["images"] = [ImageRequest(**x) for x in d["images"]]
        return cls(**d)


@dataclass
class FactDraft:
    """One evidence fact: the user-turn sentence carrying it (with ``<image>`` next to its mention)
    and the indices of the plan's images it shows."""

    mention: str
    image_idx: list[int] = field(default_factory=list)
    days_before: float | None = None  # fixed position in time (days before the question), if any
    at: str | None = None  # or an exact session timestamp, 'YYYY/MM/DD (Ddd) HH:MM'


@dataclass
class Draft:
    question: str
    answer: str
    facts: list[FactDraft]
    details: dict = field(default_factory=dict)
    old_answer: str | None = None
    image_essential: bool = True
    ordered: bool = False
    #: strings that must not appear in any text of the history (the abstracted entity, the answer)
    forbidden: list[str] = field(default_factory=list)
    #: context keys that haystack mentions must not reuse (they would make the question ambiguous)
    contexts: list[str] = field(default_factory=list)
    #: how the answer follows from the images' ground truth (see memlens.construction.abilities.derive)
    derivation: dict | None = None
    #: an exact question date ('YYYY/MM/DD (Ddd) HH:MM'), when the answer depends on it
    question_date: str | None = None


class Ability:
    """Base class of a question type."""

    question_type: str = ""
    #: official subtype -> list of finer variants (details), cycled over the question index
    variants: dict[str, list[str]] = {}
    #: image families each variant needs (topic selection prefers topics listing them)
    families: dict[str, list[str]] = {}

    def plan(self, rng: random.Random, topic, subtype: str, variant: str, plan_id: str, reserved: set[str]) -> Plan:
        """``reserved``: context phrases already used by earlier plans (add yours to it)."""
        raise NotImplementedError

    def build(self, rng: random.Random, plan: Plan, truths: list[dict]) -> Draft:
        raise NotImplementedError

    def answer_classes(self, subtype: str, variant: str) -> tuple[str, ...] | None:
        """The closed answers of a variant, balanced per build and subtype
        (:mod:`memlens.construction.abilities.balance`); its ``plan`` then takes ``want=`` (the
        answer to make). None: the answer is open or not balanced."""
        return None

    def ar_source(self, subtype: str, variant: str) -> bool:
        """Whether answer-refusal questions may be built from this variant."""
        return True

    def chance_answer(self, question: Question, rng: random.Random) -> str:
        """A uniform random valid answer for the question's format ("" when the format is open)."""
        return ""


def pick(rng: random.Random, seq):
    return seq[rng.randrange(len(seq))]


def words_of(x: Any) -> str:
    return str(x)
