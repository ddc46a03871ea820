"""Answer Refusal (AR): an answerable question whose evidence is removed from the history.

The plan wraps a plan of another type; the question is written from the ground truth its images
would have (sampled, never rendered or shown). The history never contains the question's context,
so no answer is supported; the reference is the official convention, ``Insufficient information``.
"""

from __future__ import annotations

from memlens.build.abilities.base import OPEN_FORM_GUESSES, Ability, Draft, Plan
from memlens.core.schema import AR, REFUSAL_REFERENCE, Question


class AnswerRefusal(Ability):
    question_type = AR
    variants = {"": ["from_answerable"]}
    families = {}

    def __init__(self, sources):
        self.sources = sources  # list of (ability, subtype, variant)
        self._by_type = {a.question_type: a for a, _, _ in sources}

    def _source_ability(self, question_type: str) -> Ability:
        if question_type not in self._by_type:
            raise KeyError(f"no answerable source type {question_type!r} (have: {', '.join(self._by_type)})")
        return self._by_type[question_type]

    def plan(self, rng, topic, subtype, variant, plan_id, reserved):
        ability, sub, var = self.sources[rng.randrange(len(self.sources))]
        inner = ability.plan(rng, topic, sub, var, plan_id, reserved)
        return Plan(
            plan_id,
            AR,
            "",
            f"{inner.question_type}/{inner.question_subtype}/{inner.variant}",
            inner.topic_id,
            inner.subtopic,
            [],
            {"source": inner.to_dict()},
        )

    def build(self, rng, plan, truths):
        from memlens.build.images.synthetic import get_family

        inner = Plan.from_dict(plan.latent["source"])
        src = self._source_ability(inner.question_type)
        virtual = [get_family(r.family).sample(rng, **r.constraints) for r in inner.images]
        d = src.build(rng, inner, virtual)
        details = {
            "source_type": inner.question_type,
            "source_subtype": inner.question_subtype,
            "source_variant": inner.variant,
            **{f"source_{k}": v for k, v in d.details.items()},
        }
        return Draft(
            question=d.question,
            answer=REFUSAL_REFERENCE,
            facts=[],
            details=details,
            image_essential=False,
            forbidden=list(d.contexts),
            contexts=list(d.contexts),
        )

    def chance_answer(self, question: Question, rng):
        """Abstain or commit to a random answer of the source question's format, 50/50."""
        if rng.random() < 0.5:
            return REFUSAL_REFERENCE
        src_type = question.details.get("source_type")
        proxy = Question.from_dict(
            {
                **question.to_dict(),
                "question_type": src_type or question.question_type,
                "question_subtype": question.details.get("source_subtype", ""),
                "details": {k[len("source_") :]: v for k, v in question.details.items() if k.startswith("source_")},
            }
        )
        try:
            guess = self._source_ability(proxy.question_type).chance_answer(proxy, rng) if src_type else ""
        except KeyError:
            guess = ""
        return guess or f"My guess: {rng.choice(OPEN_FORM_GUESSES)}"
