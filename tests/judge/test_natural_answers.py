"""Natural answers the deterministic judge must read: amounts as the images print them, the final
choice of a reasoned A/B answer, partitive counts; and the judge identity that versions these rules."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import pytest

from memlens.construction.images.synthetic.formats import CURRENCIES, fmt_money
from memlens.core.io import read_json
from memlens.eval.judge import deterministic as det
from memlens.eval.judge.deterministic import score

MSR, TR, IE, KU = "multi_session_reasoning", "temporal_reasoning", "information_extraction", "knowledge_update"
Q_AB = "Which lasted longer: (A) the trip to Rome, or (B) the trip to Oslo? Answer A or B."


# ---------------------------------------------------------------------------------------------
# amounts
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "pred", "correct", "parsed"),
    [
        ("€7.98", "7,98 €", True, "7.98 EUR"),
        ("7.98", "7,98", True, "7.98"),
        ("€7.98", "The two came to 7,98 € in total.", True, "7.98 EUR"),
        ("98.00 DKK", "98,00 kr.", True, "98.00 KR"),
        ("185 DKK", "185,00 kr.", True, "185.00 KR"),
        ("€1,234.50", "1.234,50 €", True, "1234.50 EUR"),
        ("€1,234.50", "1234,50 EUR", True, "1234.50 EUR"),
        ("$1,234.50", "1,234.50 $", True, "1234.50 USD"),
        ("$7.98", "7.98$", True, "7.98 USD"),
        ("CHF 1,234.00", "CHF 1'234.00", True, "1234.00 CHF"),
        ("¥1,280", "¥1,280", True, "1280.00 JPY"),
        ("¥1,280", "1,280 yen", True, "1280.00 JPY"),
        ("$1,500", "1,500 dollars", True, "1500.00 USD"),  # three digits after the comma: thousands
        ("€12.50", "12,5 €", True, "12.50 EUR"),
        ("€2,345,678.00", "2.345.678 €", True, "2345678.00 EUR"),
        ("€15.50", "9,50 € plus 6,00 € makes 15,50 €", True, "15.50 EUR"),
        # negatives: the comma is never read as a thousands separator before two digits
        ("7.98", "798", False, "798"),
        ("€7.98", "798 €", False, "798.00 EUR"),
        ("€798.00", "7,98 €", False, "7.98 EUR"),
        ("€1,234.50", "1.234 €", False, "1.23 EUR"),  # one dot group alone is a decimal point
        ("€7.98", "$7.98", False, "7.98 USD"),  # the currency checks still apply
        ("98.00 DKK", "98,00 €", False, "98.00 EUR"),
        ("€7.98", "between 7,98 € and 9,50 €", False, None),
        ("€15.50", "9,50 € plus 6,00 €", False, None),  # two amounts, no total: no committed answer
    ],
)
def test_amount_notations(ref, pred, correct, parsed):
    v = score(MSR, "arithmetic", ref, pred)
    assert (v.correct, v.parsed) == (correct, parsed), v


def _printed_forms():
    """Every printed notation of the renderers, for an amount with thousands and cents."""
    for cur, spec in CURRENCIES.items():
        value = Decimal("1234.5") if spec["decimals"] else Decimal("1280")
        for kw in ({}, {"symbol": False}, {"code": True}):
            yield cur, value, fmt_money(value, cur, **kw)
        small = Decimal("7.98") if spec["decimals"] else Decimal("790")
        yield cur, small, fmt_money(small, cur)


@pytest.mark.parametrize(("cur", "value", "printed"), list(_printed_forms()))
def test_every_printed_amount_format_of_the_renderers_is_accepted(cur, value, printed):
    ref = f"{value:.2f} {cur}"
    v = score(MSR, "arithmetic", ref, printed)
    assert v.correct, (printed, v)
    # and a different value in the same notation is rejected
    other = fmt_money(value * 10 + 1, cur)
    assert not score(MSR, "arithmetic", ref, other).correct, other


@pytest.mark.parametrize(
    ("ref", "pred", "correct"),
    [
        ("€7.98", "7,98 €", True),
        ("€7.98", "It showed 7,98 € at the bottom.", True),
        ("185.00 DKK", "185,00 kr.", True),
        ("€7.98", "7.98", True),
        ("€7.98", "798 €", False),
        ("€7.98", "$7.98", False),
        ("€7.98", "5,00 €", False),
    ],
)
def test_money_references_of_information_extraction(ref, pred, correct):
    v = score(IE, "previnfo", ref, pred)
    assert v.correct is correct, v


@pytest.mark.parametrize(
    ("pred", "correct"),
    [
        ("It's 7,98 € now; it used to be 5,00 €.", True),
        ("It went from 5,00 € to 7,98 €.", True),
        ("7,98 €", True),
        ("5,00 €", False),
        ("7,98 € and 5,00 €", False),
        ("$7.98", False),
    ],
)
def test_money_references_of_knowledge_update(pred, correct):
    v = score(KU, "", "€7.98", pred, old_answer="€5.00")
    assert v.correct is correct, v


# ---------------------------------------------------------------------------------------------
# A/B: the committed final choice
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "pred", "correct"),
    [
        ("B", "A lasted 9 days and B lasted 21 days, so B.", True),
        ("A", "A lasted 9 days and B lasted 21 days, so B.", False),
        ("B", "A: 9 days. B: 21 days. So the answer is B.", True),
        ("B", "Therefore the answer is B rather than A.", True),
        ("B", "B, not A", True),
        ("A", "B, not A", False),
        ("A", "A, not B.", True),
        ("B", "Not A but B.", True),
        ("B", "It's not A.", True),  # the only option named is rejected: the other one
        ("A", "It's not A.", False),
        ("A", "A, because it lasted 21 days while B lasted 9.", True),
        ("B", "A, because it lasted 21 days while B lasted 9.", False),
        ("A", "(A) the trip to Rome; it lasted longer than B.", True),
        ("B", "B took 21 days, longer than A", True),
        ("B", "The trip to Oslo (B) took longer.", True),
        ("B", "I can't tell for sure, but I think B.", True),
        ("A", "Rome took 21 days and Oslo 9. Overall, A lasted longer than B.", True),
        ("B", "Rome took 21 days and Oslo 9. Overall, A lasted longer than B.", False),
        ("B", "So A lasted 9 days and B lasted 21 days.", False),  # a conclusion that commits to nothing
        # no committed choice: a trace without a conclusion
        ("B", "A lasted 9 days and B lasted 21 days.", False),
        ("A", "A lasted 9 days and B lasted 21 days.", False),
        ("A", "B is shorter than A", True),  # the comparative read as the question asks
        ("B", "B is shorter than A", False),
        ("A", "A or B", False),
    ],
)
def test_reasoned_choice(ref, pred, correct):
    v = score(TR, "duration_comparison", ref, pred, question=Q_AB)
    assert v.correct is correct, v


def test_reasoned_choice_reasons():
    assert score(TR, "duration_comparison", "A", "A lasted 9 days and B 21 days.", question=Q_AB).reason == (
        "ambiguous: A and B"
    )
    assert score(TR, "duration_comparison", "A", "..., so B.", question=Q_AB).reason == "choice-mismatch: B != A"
    assert score(TR, "duration_comparison", "A", "Insufficient information.", question=Q_AB).reason == "refusal"


def test_shorter_question_reads_shorter_comparatives():
    q = "Which was shorter: (A) the trip to Rome, or (B) the trip to Oslo? Answer A or B."
    assert score(TR, "duration_comparison", "B", "B is shorter than A", question=q).correct
    assert not score(TR, "duration_comparison", "B", "B is longer than A", question=q).correct


# ---------------------------------------------------------------------------------------------
# counts stated as a part of a whole
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "pred", "correct", "parsed"),
    [
        ("1", "One of the three receipts was paid in cash.", True, "1"),
        ("3", "One of the three receipts was paid in cash.", False, "1"),
        ("1", "Only one of the three receipts was paid in cash.", True, "1"),
        ("2", "2 out of 5 receipts were paid by card.", True, "2"),
        ("5", "2 out of 5 receipts were paid by card.", False, "2"),
        ("2", "Two of the four tickets were for trains.", True, "2"),
        ("4", "Two of the four tickets were for trains.", False, "2"),
        ("0", "None of the four receipts was paid in cash.", True, "0"),
        ("2", "I checked all three receipts; two of them were paid in cash.", True, "2"),
        ("3", "I checked all three receipts; two of them were paid in cash.", False, "2"),
    ],
)
def test_partitive_counts(ref, pred, correct, parsed):
    v = score(MSR, "counting", ref, pred)
    assert (v.correct, v.parsed) == (correct, parsed), v


# ---------------------------------------------------------------------------------------------
# the judge identity versions the rules; stale archived verdicts are dropped
# ---------------------------------------------------------------------------------------------


def _cfg():
    from tests.support.settings import settings

    return settings(["judge=deterministic"])


def test_judge_key_changes_with_the_rules_version(monkeypatch):
    from memlens.eval.judge.stage import judge_key

    before = judge_key(_cfg())
    assert judge_key(_cfg()) == before
    monkeypatch.setattr(det, "RULES_VERSION", det.RULES_VERSION + "-next")
    assert judge_key(_cfg()) != before


def test_archived_verdicts_of_another_judge_version_are_dropped(tmp_path):
    from memlens.eval.judge.stage import current_archive

    paths = SimpleNamespace(cache=tmp_path)
    ds = "d" * 64
    root = current_archive(paths, ds, "deterministic", "k1")
    old = root / "sysA" / "standard" / "32k.deterministic.jsonl"
    other_judge = root / "sysA" / "standard" / "32k.llm.jsonl"
    for f in (old, other_judge):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("{}\n")
    assert current_archive(paths, ds, "deterministic", "k1") == root and old.is_file()  # same key: kept
    current_archive(paths, ds, "deterministic", "k2")
    assert not old.exists()  # another version: never mixed with the new verdicts
    assert other_judge.is_file()  # another judge's verdicts are not touched
    assert read_json(root / "judge_keys.json") == {"deterministic": "k2"}
