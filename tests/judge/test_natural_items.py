"""The deterministic judge agrees with hand-written, hand-labelled answers to real items of a
paper-scale build (:mod:`tests.judge.natural_items`)."""

from __future__ import annotations

from collections import Counter

import pytest

from memlens.eval.judge.deterministic import score
from tests.judge import natural_answers_long, natural_items, natural_items_heldout

ITEMS = {**natural_items.ITEMS, **natural_items_heldout.ITEMS}
ANSWERS = natural_items.ANSWERS + natural_items_heldout.ANSWERS + natural_answers_long.ANSWERS


def _grade(qid: str, answer: str):
    qtype, subtype, question, ref, old = ITEMS[qid]
    return score(qtype, subtype, ref, answer, old_answer=old, question=question)


@pytest.mark.parametrize(("qid", "answer", "label"), ANSWERS, ids=[f"{q}-{i}" for i, (q, _, _) in enumerate(ANSWERS)])
def test_judge_agrees_with_the_hand_label(qid, answer, label):
    v = _grade(qid, answer)
    assert v.correct is label, (ITEMS[qid][3], answer, v)


def test_the_two_sets_hold_different_items():
    assert not set(natural_items.ITEMS) & set(natural_items_heldout.ITEMS)


def test_the_hand_labelled_set_is_balanced_and_covers_every_task_key():
    from memlens.core.tasks import TASK_KEYS, task_key

    labels = Counter(label for _, _, label in ANSWERS)
    assert abs(labels[True] - labels[False]) <= 0.1 * len(ANSWERS), labels
    keys = {task_key(ITEMS[q][0], ITEMS[q][1], ITEMS[q][3]) for q, _, _ in ANSWERS}
    assert keys == set(TASK_KEYS)
    assert len(ANSWERS) >= 700
