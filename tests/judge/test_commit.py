"""What an answer commits to (memlens.eval.judge.commit), one rule at a time, on counts and free text."""

from __future__ import annotations

import pytest

from memlens.eval.judge import commit as cm
from memlens.eval.judge.values import find_counts, find_dates, find_phrase, find_times, ref_tokens


def counted(text: str, question: str | None = None) -> cm.Commitment:
    return cm.commit(text, find_counts(text), question=question)


@pytest.mark.parametrize(
    ("text", "status", "value"),
    [
        # one value, nothing around it
        ("5", cm.VALUE, 5.0),
        ("There were five.", cm.VALUE, 5.0),
        # 1 retraction
        ("3. Actually, no - 4.", cm.VALUE, 4.0),
        ("3... wait, it was 4.", cm.VALUE, 4.0),
        ("3, sorry, I mean 4.", cm.VALUE, 4.0),
        ("3. No, 4.", cm.VALUE, 4.0),
        ("3. Hmm, that can't be right; it's 4.", cm.VALUE, 4.0),
        ("3 - looking again, 4.", cm.VALUE, 4.0),
        # 2 supersession: a first thought gives way
        ("I first thought it was 3, but it was 4.", cm.VALUE, 4.0),
        ("It was 3 at first, but then 4.", cm.VALUE, 4.0),
        ("We moved it from 3 to 4.", cm.VALUE, 4.0),
        # 3 context: parentheses, unit prices
        ("5 (2 from one photo and 3 from another)", cm.VALUE, 5.0),
        # 4 negation and denial
        ("4, not 3.", cm.VALUE, 4.0),
        ("It wasn't 3, it was 4.", cm.VALUE, 4.0),
        ("Not 3 but 4.", cm.VALUE, 4.0),
        ("3 is wrong; it's 4.", cm.VALUE, 4.0),
        ("It definitely wasn't 3.", cm.DENIAL, None),
        # 5 conclusion and head
        ("2 in one photo and 2 in another, so 4 in total.", cm.VALUE, 4.0),
        ("2 + 2 = 4", cm.VALUE, 4.0),
        ("4 in total: 2 in one photo and 2 in another.", cm.VALUE, 4.0),
        ("4 plants: one on the sill, one on the desk, two on the shelf.", cm.VALUE, 4.0),
        ("4, because 2 + 2.", cm.VALUE, 4.0),
        # 6 several values left: range or ambiguous
        ("Between 3 and 5.", cm.RANGE, None),
        ("3-5", cm.RANGE, None),
        ("3 or 4", cm.AMBIGUOUS, None),
        ("Either 3 or 4.", cm.AMBIGUOUS, None),
        ("Maybe 3, maybe 4.", cm.AMBIGUOUS, None),
        ("It could be 2, 3 or 4.", cm.AMBIGUOUS, None),
        ("2 in the first photo and 2 in the second.", cm.VALUE, 2.0),  # one distinct value
        ("3 in one photo and 1 in another.", cm.AMBIGUOUS, None),  # a trace, no total
        # 7 bound and approximation
        ("At least 3.", cm.BOUND, 3.0),
        ("3 or more.", cm.BOUND, 3.0),
        ("More than 2.", cm.BOUND, 2.0),
        ("Up to 3.", cm.BOUND, 3.0),
        ("About 5.", cm.APPROXIMATE, 5.0),
        ("Roughly 5 or so.", cm.APPROXIMATE, 5.0),
        # a hedge about certainty with one value commits to it
        ("Probably 5.", cm.VALUE, 5.0),
        ("I think it was 5, but I'm not sure.", cm.VALUE, 5.0),
        ("I'm not sure it's 5.", cm.VALUE, 5.0),
    ],
)
def test_commit_counts(text, status, value):
    got = counted(text)
    assert (got.status, got.value if status in (cm.VALUE, cm.BOUND, cm.APPROXIMATE) else None) == (status, value), got


def test_no_mention_is_none():
    assert counted("I see several plants.").status == cm.NONE


def test_the_question_picks_the_value_its_words_describe():
    q = "In the screenshot of the booking site page, how many nights was the booking for?"
    assert counted("The booking was for 6 nights, for 2 guests.", q) == cm.Commitment(cm.VALUE, 6.0, (6.0,))
    assert counted("The booking was for 6 nights, for 2 guests.").status == cm.AMBIGUOUS  # no question
    # a hedge stays a hedge whatever the question
    assert counted("6 nights or maybe 7 nights.", q).status == cm.AMBIGUOUS


def test_add_up_to_is_a_total_not_a_bound():
    from memlens.eval.judge.values import find_amounts

    text = "The guide (€42.50) and the novel (€24.80) add up to €67.30."
    got = cm.commit(text, find_amounts(text))
    assert got.status == cm.VALUE and got.value.value == 67.30


def test_unit_price_each_is_context():
    from memlens.eval.judge.values import find_amounts

    text = "Four of them at £3.99 each would be £15.96."
    assert cm.commit(text, find_amounts(text)).value.value == 15.96


def test_a_total_named_after_its_value_is_the_conclusion():
    from memlens.eval.judge.values import find_amounts

    text = "You spent $71.06 in total: $42.56 on receipts plus the $28.50 you told me about."
    assert cm.commit(text, find_amounts(text)).value.value == 71.06


def test_a_short_first_sentence_is_the_answer():
    text = "4. The first photo had 3 and the second one 1."
    assert counted(text).value == 4.0
    assert counted("In the first photo I see 3. The second one had 1.").status == cm.AMBIGUOUS


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("Sometime after 2024/05/02.", cm.BOUND),
        ("Before 2024/05/03.", cm.BOUND),
        ("From 2024/05/02 to 2024/05/04.", cm.RANGE),
        ("2024/05/03 - you mentioned it on 2024/05/07.", cm.VALUE),
        ("2024/05/03, not 2024/05/04.", cm.VALUE),
    ],
)
def test_dates_bounds_ranges_context(text, status):
    assert cm.commit(text, find_dates(text), timeline=True).status == status


def test_times_are_bounded_only_on_a_timeline():
    text = "After 19:00."
    assert cm.commit(text, find_times(text), timeline=True).status == cm.BOUND
    assert cm.commit(text, find_times(text), timeline=False).status == cm.VALUE


def test_caller_can_rule_out_a_mention():
    text = "3"
    ms = find_counts(text)
    assert cm.commit(text, ms, negated_at=frozenset({ms[0].start})).status == cm.DENIAL


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("A green ball.", cm.VALUE),
        ("It was the green ball, not the red cup.", cm.VALUE),
        ("It wasn't the green ball.", cm.DENIAL),
        ("The red cup, not the green ball.", cm.DENIAL),
        ("Either the green ball or the red cup.", cm.AMBIGUOUS),
        ("It's the red cup or possibly the green ball.", cm.AMBIGUOUS),
        ("It could be a red cup, a green ball, or a blue mug.", cm.AMBIGUOUS),
        ("The green ball. Actually, no - the red cup.", cm.RETRACTED),
        ("The red cup. Actually, no - the green ball.", cm.VALUE),
        ("I first thought it was the green ball, but it was the red cup.", cm.SUPERSEDED),
        (
            "One photo shows a green ball. The one you meant shows a red cup. So the answer is the red cup.",
            cm.CONCLUDED_OTHER,
        ),
        ("The green ball, and the red cup was on its right.", cm.VALUE),
        ("No green ball anywhere.", cm.DENIAL),
        ("Nothing like that.", cm.NONE),
    ],
)
def test_commit_phrase(text, status):
    assert cm.commit_phrase(text, find_phrase(text, ref_tokens("green ball"))) == status


def test_a_slash_inside_a_value_is_no_hedge():
    q = "what was the check-out date?"
    text = "The booking page showed check-in on 2023/05/08 and check-out on 2023/05/11."
    assert cm.commit(text, find_dates(text), timeline=True, question=q).value == "2023/05/11"
    assert cm.commit("2023/05/08 / 2023/05/11", find_dates("2023/05/08 / 2023/05/11")).status == cm.AMBIGUOUS


def test_a_labelled_list_is_not_an_answer_head():
    from memlens.eval.judge.values import code_shape, find_codes

    text = "- White car: GY63 PCL\n- Grey car: CJV 44E"
    ms = find_codes(text, code_shape("CJV 44E"))
    assert cm.commit(text, ms, ordered=False).status == cm.AMBIGUOUS
    assert cm.commit(text, ms, ordered=False, question="the plate of the grey car?").value == "CJV44E"


def test_numbered_list_items_are_positions_not_counts():
    text = "1. on sale\n2. regular\n3. on sale\n\nThat's 2 labels on sale."
    assert counted(text).value == 2.0
    assert counted("4. The first photo had 3 and the second one 1.").value == 4.0  # one line: an answer


def test_one_by_one_counts_nothing():
    assert counted("Going through them one by one: 7 were on sale.").value == 7.0


def test_might_have_been_hedges_between_two_values():
    from memlens.eval.judge.values import find_colours

    text = "I believe the car was white, though it might have been light grey in that light."
    assert cm.commit(text, find_colours(text), ordered=False, question="What colour was the car?").status == (
        cm.AMBIGUOUS
    )
