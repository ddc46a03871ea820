"""The exact error taxonomy (memlens.eval.report.taxonomy) on hand-built questions and histories:
every source, its label and group, the modality, and the commitment read from the judge's parse."""

from __future__ import annotations

import pytest

from memlens.core.constants import AR, IE, KU, MSR, TR
from memlens.core.schema import Evidence, Question
from memlens.eval.report import operands as ops
from memlens.eval.report.taxonomy import GROUPS, LABELS, SOURCES, Commitment, classify, commitment_of
from memlens.eval.report.trace import Ground, HistoryIndex

DATE = "2024/06/01 (Sat) 10:00"
EV1, EV2, DIS, CLOCK = "a" * 64, "b" * 64, "c" * 64, "d" * 64
TRUTHS = {
    EV1: {"store": "Copper Coffee", "total": "12.50", "date": "2024/05/01", "cashier": "Marco", "seed": 77},
    EV2: {"store": "Juniper Books", "total": "7.25", "date": "2024/05/03", "cashier": "Ava"},
    DIS: {"store": "Bluebird Diner", "total": "9.99", "date": "2024/04/20", "cashier": "Lena"},
    CLOCK: {"time": "14:35", "brand": "Tickwell"},
}
FAMILIES = {EV1: "receipt", EV2: "receipt", DIS: "receipt", CLOCK: "clock"}
TEXTS = {
    "s_ev1": "I had lunch at the place <image>.",
    "s_ev2": "Picked up a book <image>.",
    "s_dis": "Dinner was fine <image>.",
    "s_other": "My rent went up, I paid 123.45 for the storage unit. <image> Also the clock.",
}
SUM = {
    "op": "sum",
    "args": [{"op": "get", "img": 0, "path": ["total"]}, {"op": "get", "img": 1, "path": ["total"]}],
    "fmt": "money",
    "currency": "USD",
}


def question(qtype, subtype, answer, derivation=None, images=(EV1, EV2), **kw) -> Question:
    ev = [
        Evidence(session_id=f"s_ev{i + 1}", date=DATE, fact="x <image>", image_ids=[img])
        for i, img in enumerate(images)
    ]
    return Question(
        question_id="q1",
        question_type=qtype,
        question_subtype=subtype,
        question=kw.pop("text", "How much did I spend at the two shops?"),
        answer=answer,
        question_date="2024/07/01 (Mon) 10:00",
        evidence=ev,
        details={"derivation": derivation, "image_ids": list(images), **kw.pop("details", {})},
        **kw,
    )


def history(images=(EV1, EV2)) -> HistoryIndex:
    ground = Ground(TRUTHS, FAMILIES, TEXTS)
    return HistoryIndex(
        ground=ground,
        evidence_images=list(images),
        other_images=[i for i in (DIS, CLOCK) if i not in images],
        evidence_sessions=[f"s_ev{i + 1}" for i in range(len(images))],
        other_sessions=["s_dis", "s_other"],
        session_dates={"s_ev1": DATE, "s_ev2": DATE, "s_dis": DATE, "s_other": "2024/02/02 (Fri) 09:00"},
    )


def trace(q, value, key="MSR_Arithmetic", abstained=False, hist=None):
    return classify(q, Commitment(abstained, value), hist or history(q.details["image_ids"]), key)


MSR_Q = question(MSR, "arithmetic", "$19.75", SUM)


@pytest.mark.parametrize(
    ("value", "source"),
    [
        ("12.50 USD", "evidence_operand"),  # one receipt's total of the two
        ("20.75 USD", "arithmetic_slip"),  # off by one
        ("19.57 USD", "arithmetic_slip"),  # two adjacent digits swapped
        ("29.74 USD", "distractor_image"),  # the same-family distractor's total added
        ("17.24 USD", "distractor_image"),  # ... or swapped for one evidence receipt
        ("123.45 USD", "other_session"),  # an amount said in another session
        ("555.55 USD", "not_in_history"),
    ],
)
def test_arithmetic_answers_are_traced(value, source):
    t = trace(MSR_Q, value)
    assert t.source == source
    assert t.label == SOURCES[source] and t.group == GROUPS[t.label]


def test_refusals_and_refusal_items():
    t = trace(MSR_Q, None, abstained=True)
    assert (t.source, t.label, t.group) == ("refusal_on_answerable", "false_refusal", "total-miss")
    assert t.modality == "Visual"  # the evidence it did not find is in images
    ar = question(AR, "", "Insufficient information", None, images=())
    t = classify(ar, Commitment(False, "5"), history(()), "AR_AnswerRefusal")
    assert (t.source, t.label, t.modality) == ("answer_on_refusal_item", "unsupported_answer", "")
    assert trace(MSR_Q, None).source == "no_commitment"


def test_text_answers_of_a_single_image():
    q = question(
        IE,
        "entity",
        "Copper Coffee",
        {"op": "get", "img": 0, "path": ["store"]},
        images=(EV1,),
        text="Which place was the receipt from?",
    )
    hist = history((EV1,))
    cases = {
        "bluebird diner": "distractor_image",  # the asked field of a same-family image
        "copper cofee": "asked_fact_misread",  # two characters off the asked fact
        "marco": "evidence_other_value",  # another value of the evidence image
        "tickwell": "other_session",  # a value of an image of another family
        "quillon vantablue": "not_in_history",
        "either copper coffee or bluebird diner": "hedged",  # the right value among others
    }
    for value, source in cases.items():
        assert trace(q, value, "IE_Entity", hist=hist).source == source, value
    assert trace(q, "marco", "IE_Entity", hist=hist).label == "grounding_failure"


def test_small_integers_are_traced_only_at_the_asked_field():
    """'7' is printed somewhere in every history: it is no evidence of where an answer came from."""
    q = question(IE, "entity", "4", {"op": "get", "img": 0, "path": ["count"]}, images=(EV1,))
    ground = Ground({**TRUTHS, EV1: {"count": 4, "other": 7}, DIS: {"count": 9}}, FAMILIES, TEXTS)
    hist = history((EV1,))
    hist.ground = ground
    assert classify(q, Commitment(False, "7"), hist, "IE_Entity").source == "not_in_history"
    assert classify(q, Commitment(False, "9"), hist, "IE_Entity").source == "distractor_image"
    assert classify(q, Commitment(False, "5"), hist, "IE_Entity").source == "asked_fact_misread"


def test_stale_knowledge_update():
    chain = {"op": "last", "args": [{"op": "get", "img": i, "path": ["store"]} for i in range(2)]}
    q = question(KU, "", "Juniper Books", chain, old_answer="Copper Coffee", text="Where do I shop now?")
    q.details["chain_values"] = ["Copper Coffee", "Juniper Books"]
    t = trace(q, "copper coffee", "KU_KnowledgeUpdate")
    assert (t.source, t.label, t.group, t.modality) == ("stale_value", "stale_knowledge", "near-miss", "Reasoning")


def test_binary_choices_are_untraceable_and_orders_slip():
    dur = question(TR, "duration_comparison", "A", {"op": "longer"}, images=(EV1,))
    t = trace(dur, "B", "TR_DurationComparison")
    assert (t.source, t.label, t.group, t.modality) == ("binary_choice", "untraceable", "untraceable", "Mixed")
    order = {
        "op": "order",
        "key": "date",
        "args": [{"op": "get", "img": i, "path": ["date"]} for i in range(2)]
        + [{"op": "const", "value": "2024/06/30"}],
    }
    q = question(TR, "order_ranking", "(1)(2)(3)", order)
    assert trace(q, "(2)(1)(3)", "TR_OrderRanking").source == "arithmetic_slip"
    assert trace(q, "(3)(1)(2)", "TR_OrderRanking").source == "not_in_history"


def test_modality_follows_the_evidence_and_the_error():
    mixed = question(MSR, "arithmetic", "$16.25", {**SUM, "args": [SUM["args"][0], {"op": "const", "value": "3.75"}]})
    assert ops.needs(mixed.details["derivation"]) == "both"
    assert trace(mixed, None, abstained=True).modality == "Mixed"
    assert trace(mixed, "3.75 USD").source == "evidence_operand"  # the amount told in the text
    assert trace(MSR_Q, "20.75 USD").modality == "Reasoning"
    assert trace(MSR_Q, "555.55 USD").modality == "Visual"


def test_every_source_maps_to_one_of_the_seven_labels():
    assert len(LABELS) == 7
    assert set(SOURCES.values()) <= {*LABELS, "untraceable"}
    assert {GROUPS[lb] for lb in LABELS} == {"near-miss", "total-miss"}


def test_commitment_is_the_judge_parse():
    q = question(MSR, "arithmetic", "$19.75", SUM)
    assert commitment_of({"parsed": "20.75 USD", "abstained": False}) == Commitment(False, "20.75 USD", "")
    # a verdict without a parse (the LLM judge): the deterministic judge parses the answer text
    c = commitment_of({"parsed": None, "abstained": False}, q, "I think the total was $20.75.")
    assert c.value == "20.75 USD" and not c.abstained
    assert commitment_of({"parsed": None}, q, "Insufficient information.").abstained


def test_near_variants():
    from decimal import Decimal as D

    assert ops.near_number(D("19.57"), D("19.75")) and ops.near_number(D("20"), D("19"))
    assert not ops.near_number(D("29.74"), D("19.75")) and not ops.near_number(D("5"), D("5"))
    assert ops.near_date("2024/05/02", "2024/05/01") and ops.near_date("2024/01/05", "2024/05/01")
    assert not ops.near_date("2023/06/02", "2024/05/01")
    assert ops.near_text("copper coffee", "copper cofee") and ops.near_text("ab12 xyz", "ab13 xyz")
    assert not ops.near_text("copper coffee", "bluebird diner")


def test_history_wide_search_needs_specific_values():
    """A two-digit number or a short word turns up somewhere in a long history by chance: only
    specific values (dates, times, decimals, 3+ digits, longer texts) are traced by a history-wide search."""
    q = question(IE, "entity", "15", {"op": "get", "img": 0, "path": ["count"]}, images=(EV1,))
    ground = Ground({**TRUTHS, EV1: {"count": 15}, CLOCK: {"floor": 33, "serial": 4821}}, FAMILIES, TEXTS)
    hist = history((EV1,))
    hist.ground = ground
    assert classify(q, Commitment(False, "33"), hist, "IE_Entity").source == "not_in_history"
    assert classify(q, Commitment(False, "4821"), hist, "IE_Entity").source == "other_session"
    assert classify(q, Commitment(False, "16"), hist, "IE_Entity").source == "asked_fact_misread"


def test_a_word_of_a_value_does_not_explain_a_longer_answer():
    q = question(
        IE, "entity", "green ball", {"op": "get", "img": 0, "path": ["pick"]}, images=(EV1,), text="Which toy?"
    )
    ground = Ground({**TRUTHS, EV1: {"pick": "green ball", "other": "red"}}, FAMILIES, TEXTS)
    hist = history((EV1,))
    hist.ground = ground
    # "red" covers one of the answer's two words: not enough to call it the evidence image's value
    assert classify(q, Commitment(False, "red bottle"), hist, "IE_Entity").source == "not_in_history"
    assert classify(q, Commitment(False, "red"), hist, "IE_Entity").source == "evidence_other_value"


def test_clock_times_are_values():
    q = question(IE, "entity", "19:00", {"op": "get", "img": 0, "path": ["time"]}, images=(EV1,), text="When?")
    ground = Ground({**TRUTHS, EV1: {"time": "19:00"}, DIS: {"time": "19:30"}}, FAMILIES, TEXTS)
    hist = history((EV1,))
    hist.ground = ground
    assert classify(q, Commitment(False, "19:30"), hist, "IE_Entity").source == "distractor_image"
    assert classify(q, Commitment(False, "we met at 7:30 pm"), hist, "IE_Entity").source == "distractor_image"
    assert classify(q, Commitment(False, "19:05"), hist, "IE_Entity").source == "asked_fact_misread"
    assert classify(q, Commitment(False, "03:40"), hist, "IE_Entity").source == "not_in_history"
