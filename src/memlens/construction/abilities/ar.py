"""Answer Refusal (AR): an answerable question whose evidence is removed from the history.

The plan wraps a plan of another type; the question is written from the ground truth its images
would have (sampled, never rendered or shown). The question's context is discussed in the history
(one evidence session talks about it in a sentence without any image, ``FactDraft.image_idx == []``)
but its evidence is never shown, so no answer is supported and the context's presence in the text
does not tell an answer-refusal question from an answerable one; the reference is the official
convention, ``Insufficient information``. The source question's forbidden strings (the values its
images would show) stay out of every text.
"""

from __future__ import annotations

from memlens.construction.abilities.base import OPEN_FORM_GUESSES, Ability, Draft, FactDraft, Plan
from memlens.construction.abilities.contexts import discussed_mention
from memlens.core.registry import component
from memlens.core.schema import AR, REFUSAL_REFERENCE, Question


@component("question_type", "answer_refusal")
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
        from memlens.construction.images.synthetic import get_family

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
        ctxs = [c for c in d.contexts if c and c in d.question]
        facts = [FactDraft(discussed_mention(rng, ctxs[0]), [])] if ctxs else []
        details["discussed_context"] = ctxs[0] if ctxs else None
        return Draft(
            question=d.question,
            answer=REFUSAL_REFERENCE,
            facts=facts,
            details=details,
            image_essential=False,
            # names the source would show (not its short closed-form or numeric answers, which the
            # shared text may say for other reasons)
            forbidden=[
                f
                for f in d.forbidden
                if len(f) >= 4 and not f.replace(".", "").isdigit() and not any(f in c or c in f for c in d.contexts)
            ],
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
