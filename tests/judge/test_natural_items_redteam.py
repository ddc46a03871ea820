"""The deterministic judge agrees with the red-team set (:mod:`tests.judge.natural_items_redteam`):
641 answers to 132 real items of a paper-scale build, written and labelled before their author read
the judge's rules. Every labelled answer is one test case."""

from __future__ import annotations

from collections import Counter

import pytest

from memlens.core.tasks import TASK_KEYS, task_key
from memlens.eval.judge.deterministic import score
from tests.judge import natural_items, natural_items_heldout, natural_items_redteam

ITEMS = natural_items_redteam.ITEMS
ANSWERS = natural_items_redteam.ANSWERS

#: (question id, answer) -> why the judge still disagrees with the hand label (kept strict: a rule
#: that fixes one of these makes its case pass, and the entry must then be removed).
KNOWN_DISAGREEMENTS = {
    ("q_a910cfe3", "An orange teacup."): "a compound noun ('teacup') is not the reference's word 'cup'"
}


def _grade(qid: str, answer: str):
    qtype, subtype, question, ref, old = ITEMS[qid]
    return score(qtype, subtype, ref, answer, old_answer=old, question=question)


def _case(qid, style, label, answer, note):
    reason = KNOWN_DISAGREEMENTS.get((qid, answer))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(qid, answer, label, marks=marks, id=f"{qid}-{style}")


@pytest.mark.parametrize(("qid", "answer", "label"), [_case(*a) for a in ANSWERS])
def test_judge_agrees_with_the_red_team_label(qid, answer, label):
    v = _grade(qid, answer)
    assert v.correct is label, (ITEMS[qid][3], answer, v)


def test_every_known_disagreement_is_an_answer_of_the_set():
    assert set(KNOWN_DISAGREEMENTS) <= {(q, a) for q, _, _, a, _ in ANSWERS}


def test_the_red_team_items_are_not_in_the_other_hand_labelled_sets():
    others = set(natural_items.ITEMS) | set(natural_items_heldout.ITEMS)
    assert not set(ITEMS) & others
    other_questions = {v[2] for v in {**natural_items.ITEMS, **natural_items_heldout.ITEMS}.values()}
    assert not {v[2] for v in ITEMS.values()} & other_questions


def test_the_red_team_set_is_well_formed_balanced_and_covers_every_task_key():
    assert {q for q, *_ in ANSWERS} == set(ITEMS)
    assert all(isinstance(label, bool) and answer.strip() for _, _, label, answer, _ in ANSWERS)
    assert len({(q, a) for q, _, _, a, _ in ANSWERS}) == len(ANSWERS)
    labels = Counter(label for _, _, label, _, _ in ANSWERS)
    assert abs(labels[True] - labels[False]) <= 0.1 * len(ANSWERS), labels
    assert {task_key(ITEMS[q][0], ITEMS[q][1], ITEMS[q][3]) for q, *_ in ANSWERS} == set(TASK_KEYS)
    assert len(ANSWERS) >= 600
