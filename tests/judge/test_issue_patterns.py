"""Every failure pattern listed in issue 17, as the judge must now grade it (rules version 3 and later).

Each case fails under the rules of version 2 (``git show e7fc671:src/memlens/eval/judge/deterministic.py``):
run ``python benchmarks/bench_judge_selftest.py`` or this file against that revision to see them fail.
"""

from __future__ import annotations

import pytest

from memlens.eval.judge.deterministic import RULES_VERSION, score

IE, KU, MSR, TR = "information_extraction", "knowledge_update", "multi_session_reasoning", "temporal_reasoning"
Q_PORTO = "Which lasted longer: (A) your trip to Porto, or (B) your stay in Lyon? Answer A or B."
Q_ORDER = (
    "Put these events in the order they happened: (1) flying to Naples; (2) visiting Larkspur Gelato; "
    '(3) finding the book "A Distant Canyon"; (4) visiting Mirabel Tailors. Answer with the numbers in '
    "parentheses, earliest first."
)


def test_rules_version_is_bumped():
    assert RULES_VERSION == "4"


@pytest.mark.parametrize(
    ("ref", "pred", "correct"),
    [
        # information extraction is compared by type, not as text containing the reference
        ("3", "Either 3 or 4.", False),
        ("3", "It could be 2, 3 or 4.", False),
        ("green", "It was red, not green.", False),
        ("green", "It was green, not red.", True),
        ("12:15", "The original plan was 12:15, but we settled on 13:15.", False),
        ("13:15", "The original plan was 12:15, but we settled on 13:15.", True),
        ("2023/05/11", "2023-05-11", True),
        ("2022/10/29", "October 29, 2022", True),
        ("19:45", "7:45 PM", True),
        ("2 kg", "2kg", True),
        ("SX 2131", "SX2131", True),
        ("242.49 DKK", "The total is 242.49 DKK, not 246.99 DKK.", True),
        ("246.99 DKK", "The total is 242.49 DKK, not 246.99 DKK.", False),
    ],
)
def test_information_extraction_patterns(ref, pred, correct):
    assert score(IE, "previnfo", ref, pred).correct is correct, score(IE, "previnfo", ref, pred)


@pytest.mark.parametrize(
    ("qtype", "subtype", "ref", "pred", "correct", "old"),
    [
        (TR, "duration_comparison", "A", "B. Actually, no - A lasted longer.", True, None),
        (TR, "duration_comparison", "B", "B. Actually, no - A lasted longer.", False, None),
        (KU, "", "Lisbon", "Porto. Actually, no - Lisbon.", True, "Porto"),
        (MSR, "entity_resolution", "No", "Yes. Actually, no, they were different shops.", True, None),
        (IE, "entity", "4", "3. Actually, no - 4.", True, None),
    ],
)
def test_a_retraction_is_read(qtype, subtype, ref, pred, correct, old):
    q = Q_PORTO if subtype == "duration_comparison" else None
    assert score(qtype, subtype, ref, pred, old_answer=old, question=q).correct is correct


@pytest.mark.parametrize(
    ("pred", "correct"),
    [
        ("You switched from Lisbon to Porto.", False),
        ("You switched from Porto to Lisbon.", True),
        ("Porto replaced Lisbon.", False),
        ("Lisbon replaced Porto.", True),
        ("No longer Porto, now Lisbon.", True),
        ("No longer Lisbon, now Porto.", False),
        ("Lisbon and Porto.", False),
    ],
)
def test_knowledge_update_reads_direction(pred, correct):
    assert score(KU, "", "Lisbon", pred, old_answer="Porto").correct is correct


@pytest.mark.parametrize(
    ("ref", "pred"),
    [("2", "It definitely wasn't 2."), ("1", "At least 1."), ("3", "More than 2."), ("3", "between 2 and 4")],
)
def test_counting_rejects_denials_bounds_and_ranges(ref, pred):
    assert not score(MSR, "counting", ref, pred).correct


def test_yes_and_no_is_no_answer():
    assert not score(MSR, "entity_resolution", "Yes", "Yes and no.").correct
    assert not score(MSR, "entity_resolution", "No", "Yes and no.").correct


def test_refusal_by_meaning():
    pred = "I have dates for one of those periods, but nothing about the other, so I can't compare them."
    assert score("answer_refusal", "", "Insufficient information", pred).correct
    assert score(TR, "duration_comparison", "A", pred).reason == "refusal"


@pytest.mark.parametrize(
    "pred",
    [
        "3-2-4-1",
        "3, 2, 4, 1",
        "Earliest first: 3, then 2, then 4, then 1",
        "1. Finding the book\n2. Larkspur Gelato\n3. Mirabel Tailors\n4. The flight to Naples",
        "First I found the book, then Larkspur Gelato, then Mirabel Tailors and finally the flight to Naples.",
    ],
)
def test_order_ranking_in_every_notation(pred):
    v = score(TR, "order_ranking", "(3)(2)(4)(1)", pred, question=Q_ORDER)
    assert v.correct and v.parsed == "(3)(2)(4)(1)", v


def test_a_b_by_the_option_text():
    assert score(TR, "duration_comparison", "A", "Your trip to Porto lasted longer.", question=Q_PORTO).correct
    assert not score(TR, "duration_comparison", "B", "Your trip to Porto lasted longer.", question=Q_PORTO).correct


@pytest.mark.parametrize(
    ("ref", "pred", "correct"),
    [
        ("2025/06/23", "2025/06/23, not 2025/06/24.", True),
        ("2025/06/24", "2025/06/23, not 2025/06/24.", False),
        ("2024/12/14", "2024/12/14 - you mentioned it on 2024/12/17", True),
        ("2024/12/17", "2024/12/14 - you mentioned it on 2024/12/17", False),
    ],
)
def test_x_not_y_and_an_answer_followed_by_context(ref, pred, correct):
    assert score(TR, "temporal_info_extraction", ref, pred).correct is correct
