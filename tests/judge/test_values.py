"""Typed values in free text (memlens.eval.judge.values) and how the judge types a reference."""

from __future__ import annotations

import pytest

from memlens.eval.judge import values as V
from memlens.eval.judge.deterministic import reference_kind


def vals(mentions):
    return [m.value for m in mentions]


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("2024/05/31", ["2024/05/31"]),
        ("2024-05-31 and 2024.05.31", ["2024/05/31", "2024/05/31"]),
        ("March 4, 2025", ["2025/03/04"]),
        ("4 March 2025", ["2025/03/04"]),
        ("the 4th of March, 2025", ["2025/03/04"]),
        ("Tuesday, March 4, 2025", ["2025/03/04"]),
        ("March fourth, 2025", ["2025/03/04"]),
        ("the twenty-first of June 2024", ["2024/06/21"]),
        ("June twenty first, 2024", ["2024/06/21"]),
        ("21/06/2024", ["2024/06/21"]),  # day > 12: one reading
        ("06/21/2024", ["2024/06/21"]),
        ("03/04/2025", [V.AMBIGUOUS_DATE]),  # either reading: ambiguous
        ("03/03/2025", ["2025/03/03"]),  # both readings agree
        ("2024/02/30", []),  # not a date
        ("May 2024", []),
    ],
)
def test_dates(text, dates):
    assert vals(V.find_dates(text)) == dates


@pytest.mark.parametrize(
    ("text", "times"),
    [
        ("19:45", ["19:45"]),
        ("7:45 PM", ["19:45"]),
        ("7:45pm", ["19:45"]),
        ("7.45 p.m.", ["19:45"]),
        ("19.45", ["19:45"]),
        ("19h45", ["19:45"]),
        ("7 pm", ["19:00"]),
        ("7:45 in the evening", ["19:45"]),
        ("8:30 in the morning", ["08:30"]),
        ("12:15 PM", ["12:15"]),
        ("12:05 am", ["00:05"]),
        ("noon", ["12:00"]),
        ("midnight", ["00:00"]),
        ("7:45", ["07:45"]),  # a bare time is read as 24-hour
        ("7", []),  # a bare number is not a time
        ("7.45", []),  # nor a decimal without a marker
        ("2024/05/31 07:58", []),  # the time of a timestamp belongs to the date
    ],
)
def test_times(text, times):
    assert vals(V.find_times(text)) == times


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        ("3", [3.0]),
        ("three", [3.0]),
        ("twenty-one", [21.0]),
        ("a dozen", [12.0]),
        ("twice", [2.0]),
        ("none", [0.0]),
        ("There were no orange bottles.", [0.0]),
        ("No, there were 3.", [3.0]),  # "No," is not a zero
        ("a six-night stay", [6.0]),
        ("only one receipt", [1.0]),
        ("the only one", []),
        ("the red one", []),
        ("session 3", []),  # a label
        ("No. 169", [169.0]),  # the number itself
        ("number 169", [169.0]),
        ("one of the three receipts", [1.0]),
        ("2 out of 5", [2.0]),
        ("I checked all three receipts; two of them were cash.", [2.0]),  # the set's size goes
        ("In 2023 I bought 3.", [3.0]),  # a year goes when a count remains
        ("on 2024/05/31 at 19:45 I saw 3", [3.0]),  # dates and times are not counts
        ("1,500", [1500.0]),
    ],
)
def test_counts(text, counts):
    assert vals(V.find_counts(text)) == counts


@pytest.mark.parametrize(
    ("text", "amounts"),
    [
        ("$1,234.50", [(1234.5, "USD")]),
        ("1.234,50 €", [(1234.5, "EUR")]),
        ("CHF 1'234.00", [(1234.0, "CHF")]),
        ("98,00 kr.", [(98.0, "KR")]),
        ("56.60 Swiss francs", [(56.6, "CHF")]),
        ("It was ¥2,250, not ¥2,260.", [(2250.0, "JPY"), (2260.0, "JPY")]),  # a comma after the number ends it
        ("10-15 dollars", [(10.0, "USD"), (15.0, "USD")]),  # a bare number paired with an amount takes its currency
        ("3 receipts came to $12.00", [(12.0, "USD")]),  # with a currency present, bare numbers are not amounts
        ("on 2024/05/31 it cost $5", [(5.0, "USD")]),
        ("$15.50", [(15.5, "USD")]),  # not a clock time
    ],
)
def test_amounts(text, amounts):
    assert [(m.value.value, m.value.currency) for m in V.find_amounts(text)] == amounts


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("1 hour 30 minutes", [90.0]),
        ("90 min", [90.0]),
        ("1.5 hours", [90.0]),
        ("2 days", [2880.0]),
        ("a week", [10080.0]),
    ],
)
def test_durations(text, minutes):
    assert vals(V.find_durations(text)) == minutes


@pytest.mark.parametrize(
    ("text", "quantity"),
    [
        ("2kg", [("g", 2000.0)]),
        ("2 kilograms", [("g", 2000.0)]),
        ("0.5 kg", [("g", 500.0)]),
        ("500 g", [("g", 500.0)]),
        ("1.5 L", [("ml", 1500.0)]),
        ("40 bags", [("bag", 40.0)]),
        ("250 ml", [("ml", 250.0)]),
    ],
)
def test_quantities(text, quantity):
    assert vals(V.find_quantities(text)) == quantity


def test_codes_ignore_case_spaces_and_hyphens():
    shape = V.code_shape("AD72 KPB")
    assert vals(V.find_codes("ad72kpb, AD72-KPB or YM37 KEV", shape)) == ["AD72KPB", "AD72KPB", "YM37KEV"]
    # a code of another shape next to the reference's is still a code ("5SGR106 or NBS-718")
    assert vals(V.find_codes("It's 5SGR106 or possibly NBS-718.", V.code_shape("NBS-718"))) == ["5SGR106", "NBS718"]
    assert V.code_shape("3 cats") is None  # words with a number are not a code
    assert V.code_shape("156-6261935") is not None  # digit groups with a hyphen are


def test_colours():
    assert vals(V.find_colours("A dark grey one, next to a gray mug and a white cup")) == ["grey", "grey", "white"]
    assert V.ref_colour("Grey") == "grey" and V.ref_colour("green ball") is None


@pytest.mark.parametrize(
    ("ref", "kind"),
    [
        ("2024/05/31", "date"),
        ("19:00", "time"),
        ("7:45 pm", "time"),
        ("$9.75", "amount"),
        ("98.00 DKK", "amount"),
        ("260.00", "amount"),
        ("16414", "count"),
        ("0897", "code"),
        ("SX 2131", "code"),
        ("3D", "code"),
        ("156-6261935", "code"),
        ("250 g", "quantity"),
        ("90 minutes", "duration"),
        ("grey", "colour"),
        ("green ball", "text"),
        ("the 7:45 train", "text"),
        ("3 cats", "text"),
        ("5222#", "text"),
    ],
)
def test_reference_kind(ref, kind):
    assert reference_kind(ref) == kind


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("The Red Car!", "red car"),
        ("Tom & Jerry", "tom and jerri"),
        ("3.0 kg", "3 kg"),
        ("1,500", "1500"),
        ("a gray colour", "grei color"),
        ("Boxes, buses, glasses", "box bus glass"),
    ],
)
def test_normalisation(text, normal):
    assert V.normalize_text(text) == normal


def test_phrases_are_word_bounded():
    toks = V.ref_tokens("cat")
    assert V.find_phrase("a category", toks) == []
    assert V.find_phrase("the cat sat", toks) == [(4, 7)]
    assert V.find_phrase("It was gray.", V.ref_tokens("grey")) == [(7, 11)]  # the prefilter knows folded spellings
    assert V.find_phrase("Tom & Jerry", V.ref_tokens("Tom and Jerry")) == [(0, 11)]
