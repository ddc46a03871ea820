"""Judges behind one small protocol: ``judge_many(pairs) -> list[Verdict]``.

A *pair* is a question and the system's prediction. ``DeterministicJudge`` applies the typed rules of
:mod:`memlens.eval.judge.deterministic`; the LLM judge lives in :mod:`memlens.eval.judge.llm`. A failed
prediction (the request failed after its retries) gets ``correct=None``: it is reported as a
failure, never counted as a wrong answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memlens.core.registry import component
from memlens.core.schema import Prediction, Question, Verdict
from memlens.core.settings import NonNegFloat, SafeName, Targeted, configured


class Judge(Protocol):
    name: str

    def judge_many(self, pairs: Sequence[tuple[Question, Prediction]]) -> list[Verdict]: ...


def verdict_for(judge: str, q: Question, p: Prediction, **decision) -> Verdict:
    """A verdict on prediction ``p`` of question ``q``: the item's identity plus the judge's decision
    (``correct``, ``reason``, ``task_key`` ...); it names the answer it scores (``request_key``)."""
    return Verdict(
        system=p.system,
        mode=p.mode,
        length=p.length,
        question_id=q.question_id,
        question_type=q.question_type,
        question_subtype=q.question_subtype,
        judge=judge,
        request_key=p.request_key,
        **decision,
    )


def failed_verdict(judge: str, q: Question, p: Prediction, reason: str) -> Verdict:
    return verdict_for(judge, q, p, correct=None, reason=reason)


class DeterministicJudgeSettings(Targeted):
    """``judge`` with ``_target_: memlens.eval.judge.judges.DeterministicJudge``."""

    name: SafeName
    tolerance: NonNegFloat | None = None  # absolute tolerance of arithmetic answers; null = exact to the cent


@configured
@component("judge", "deterministic")
class DeterministicJudge:
    """The typed rules of :mod:`memlens.eval.judge.deterministic` (``conf/judge/deterministic.yaml``)."""

    Config = DeterministicJudgeSettings

    def __init__(self, name: str = "deterministic", *, tolerance: float | None):
        self.name = name
        self.tolerance = tolerance

    def describe(self) -> dict:
        from memlens.eval.judge.deterministic import RULES_VERSION

        return {"name": self.name, "tolerance": self.tolerance, "rules_version": RULES_VERSION}

    def judge_many(self, pairs: Sequence[tuple[Question, Prediction]]) -> list[Verdict]:
        from memlens.eval.judge.deterministic import score

        out = []
        for q, p in pairs:
            if not p.ok:
                out.append(failed_verdict(self.name, q, p, f"prediction failed: {p.error}"))
                continue
            v = score(
                q.question_type,
                q.question_subtype,
                q.answer,
                p.prediction or "",
                old_answer=q.old_answer,
                tolerance=self.tolerance,
                question=q.question,
            )
            out.append(
                verdict_for(
                    self.name,
                    q,
                    p,
                    correct=bool(v.correct),
                    parsed=v.parsed,
                    reason=v.reason,
                    task_key=v.task_key,
                    abstained=bool(v.abstained),
                    auto_zero=bool(v.auto_zero),
                    truncated=bool(v.truncated),
                )
            )
        return out
