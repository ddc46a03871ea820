"""Closed answers (memlens.eval.judge.closed): A/B options, yes/no polarity, event orders."""

from __future__ import annotations

import pytest

from memlens.eval.judge.closed import ab_options, order_events, read_choice, read_order, read_yes_no

Q_LONG = (
    'Which lasted longer: (A) the time from finding the book "The Amber Aviary" to visiting Everly Tailors, or '
    '(B) the time from the "Tidewater Folk Weekend" festival to visiting Mirabel Framing? Answer A or B.'
)
Q_SHORT = "Which was shorter: (A) the batch of jam, or (B) the long video call? Answer A or B."
Q_ORDER = (
    'Put these events in the order they happened: (1) the "Velvet Static" concert; (2) the "Dentist" marked '
    "on the calendar in my godmother's hallway; (3) the \"Team offsite\" marked on the calendar in my partner's "
    "guest room. Answer with the numbers in parentheses, earliest first."
)


def test_options_and_events_of_the_question():
    assert ab_options(Q_SHORT) == {"A": "the batch of jam", "B": "the long video call"}
    assert ab_options("Which trip was longer? (A) the trip to Rome (B) the trip to Oslo") == {
        "A": "the trip to Rome",
        "B": "the trip to Oslo",
    }
    assert list(order_events(Q_ORDER)) == ["1", "2", "3"]
    assert order_events(Q_ORDER)["3"].startswith('the "Team offsite"')


@pytest.mark.parametrize(
    ("text", "choice"),
    [
        ("B", "B"),
        ("(B)", "B"),
        ("option b", "B"),
        ("The latter.", "B"),
        ("B - the festival stretch was 58 days.", "B"),
        ("The time from the Tidewater Folk Weekend to Mirabel Framing lasted longer.", "B"),
        ("Finding The Amber Aviary to Everly Tailors was longer.", "A"),
        ("A was shorter than B.", "B"),  # a comparative read as the question asks
        ("B is longer than A.", "B"),
        ("It's not A.", "B"),  # the only option named is denied: the other one
        ("A, not B.", "A"),
        ("B. Actually, no - A lasted longer.", "A"),
        ("A lasted 32 days and B lasted 58 days, so B.", "B"),
        ("B. The festival stretch was 58 days, versus 32 for A.", "B"),  # a short first sentence answers
        ("A trip to Rome took longer, so B.", "B"),  # "A trip" is an article
        ("A: 32 days.\nB: 58 days.\n\nB lasted longer.", "B"),  # measurements, then the claim
    ],
)
def test_read_choice(text, choice):
    got = read_choice(text, Q_LONG)
    assert (got.status, got.value) == ("value", choice), got


@pytest.mark.parametrize("text", ["A or B", "A and B", "A/B", "A lasted 32 days and B lasted 58 days.", "Neither."])
def test_read_choice_commits_to_nothing(text):
    assert read_choice(text, Q_LONG).status != "value"


def test_a_shorter_question_reads_shorter():
    assert read_choice("The batch of jam was shorter.", Q_SHORT).value == "A"
    assert read_choice("The jam took longer than the call.", Q_SHORT).value == "B"


def test_ordinals_need_named_options():
    assert read_choice("the first one", Q_LONG).value == "A"
    assert read_choice("the first one", "Which trip was longer?").status == "none"


@pytest.mark.parametrize(
    ("text", "polarity"),
    [
        ("Yes", "Yes"),
        ("Yep, same one.", "Yes"),
        ("They were the same shop.", "Yes"),
        ("Not different at all.", "Yes"),
        ("No", "No"),
        ("No, different shops.", "No"),
        ("Not the same place.", "No"),
        ("They weren't the same.", "No"),
        ("Yes. Sorry, I misread: they were different shops.", "No"),
        ("No one could tell, but they were the same shop.", "Yes"),  # "no one" is not a polarity
        ("I don't think so.", "No"),
        ("I believe so.", "Yes"),
        ("Definitely not.", "No"),
    ],
)
def test_read_yes_no(text, polarity):
    got = read_yes_no(text)
    assert (got.status, got.value) == ("value", polarity), got


@pytest.mark.parametrize("text", ["Yes and no.", "Maybe.", "No, they were the same."])
def test_read_yes_no_commits_to_nothing(text):
    assert read_yes_no(text).status != "value"


@pytest.mark.parametrize(
    "text",
    [
        "(1)(3)(2)",
        "1, 3, 2",
        "1-3-2",
        "1 3 2",
        "[1, 3, 2]",
        "1 -> 3 -> 2",
        "(1), (3), (2)",
        "Earliest first: 1, then 3, then 2.",
        "Latest first: 2, 3, 1.",
        "1. The Velvet Static concert\n2. The team offsite\n3. The dentist",
        "1. (1) the concert\n2. (3) the offsite\n3. (2) the dentist",
        "First the concert, then the team offsite, and last the dentist.",
        "(1)(2)(3) is wrong; the order is (1)(3)(2).",
        "(1)(3)(2), from sessions 4 and 7",
    ],
)
def test_read_order(text):
    got = read_order(text, Q_ORDER)
    assert (got.status, got.value) == ("value", "(1)(3)(2)"), got


@pytest.mark.parametrize("text", ["Either (1)(3)(2) or (3)(1)(2).", "The concert and the dentist."])
def test_read_order_commits_to_nothing(text):
    assert read_order(text, Q_ORDER).status != "value"
