"""Tests for memlens.eval.judge.parsing: output parsing, pre-processing, extraction, refusals."""

from __future__ import annotations

import dataclasses

import pytest

from memlens.eval.judge.parsing import (
    TRUNCATION_MARKER,
    Prepared,
    degeneracy,
    extract_final_answer,
    hedging_count,
    is_refusal,
    last_refusal_span,
    parse_model_output,
    prepare_prediction,
    unique_5gram_ratio,
)

# ---------------------------------------------------------------------------------------------
# parse_model_output (official §5.1)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", ""),
        (None, ""),
        ("  5  ", "5"),
        ("<think>let me count: 3</think>\n5", "5"),
        ("<think>a</think> b </think> c", "b </think> c"),  # only the first </think> splits
        ("<think>unclosed reasoning 5", "<think>unclosed reasoning 5"),
        ("<|begin_of_box|>B<|end_of_box|>", "B"),
        ("<|im_start|>assistant\nYes<|im_end|>", "assistant\nYes"),
        ("[CONTENT_FILTER_REJECTED]", ""),
        ("Paris [CONTENT_FILTER_REJECTED]", "Paris"),
        ("x <| not a token", "x <| not a token"),
        ("<think>r</think><|box|> 42 <|/box|>\n", "42"),
    ],
)
def test_parse_model_output(raw, expected):
    assert parse_model_output(raw) == expected


# ---------------------------------------------------------------------------------------------
# prepare_prediction (official §4.4, with the documented fixes)
# ---------------------------------------------------------------------------------------------


def test_prepare_empty():
    p = prepare_prediction("")
    assert p == Prepared("", 0, False, 0, False, False, 0, 1.0)
    assert prepare_prediction(None).text == ""


def test_prepare_original_len_is_before_parsing():
    raw = "<think>" + "x" * 100 + "</think> 5"
    p = prepare_prediction(raw)
    assert p.original_len == len(raw)
    assert p.text == "5"
    assert p.parsed_words == 1


def test_prepare_only_special_tokens_is_empty_but_keeps_length():
    p = prepare_prediction("<|im_end|>")
    assert p.text == "" and p.original_len == len("<|im_end|>") and not p.auto_zero


@pytest.mark.parametrize(("n_chars", "truncated"), [(5999, False), (6000, False), (6001, True)])
def test_truncation_threshold(n_chars, truncated):
    text = ("abcd " * 2000)[: n_chars - 1] + "Z"
    p = prepare_prediction(text)
    assert p.was_truncated is truncated
    if truncated:
        assert p.text.startswith(TRUNCATION_MARKER + "\n")
        tail = p.text[len(TRUNCATION_MARKER) + 1 :]
        assert tail == text[int(0.7 * len(text)) :]
        assert tail.endswith("Z")
    else:
        assert p.text == text


def test_truncation_respects_min_len_parameter():
    text = "word " * 900  # 4500 chars
    assert not prepare_prediction(text).was_truncated
    p = prepare_prediction(text, tail_char_limit=1000, min_len_for_truncation=5000)
    assert not p.was_truncated
    p = prepare_prediction(text, tail_char_limit=1000, min_len_for_truncation=100, tail_fraction=0.5)
    assert p.was_truncated and len(p.text) == len(TRUNCATION_MARKER) + 1 + len(text.strip()) // 2 + 1


def test_parsed_words_excludes_truncation_marker():
    # 2000 short words: the kept tail has some words; the marker's three words are not counted.
    text = " ".join(f"w{i % 10}" for i in range(3000))  # 3 chars per word + space
    p = prepare_prediction(text)
    assert p.was_truncated
    tail = p.text[len(TRUNCATION_MARKER) + 1 :]
    assert p.parsed_words == len(tail.split())
    assert p.parsed_words == len(p.text.split()) - 3  # the official count would include 3 more


def test_auto_zero_boundary_counts_words_after_truncation():
    exactly = " ".join(["w"] * 500)
    over = " ".join(["w"] * 501)
    assert not prepare_prediction(exactly).auto_zero
    assert prepare_prediction(over).auto_zero
    assert prepare_prediction(over).parsed_words == 501
    assert not prepare_prediction(over, max_words=501).auto_zero


def test_auto_zero_when_truncated_tail_still_too_long():
    # 3500 words * 4 chars = 14000 chars -> tail of 4200 chars = 1050 words.
    text = " ".join(["abc"] * 3500)
    p = prepare_prediction(text)
    assert p.was_truncated and p.auto_zero and p.parsed_words == 1050


def test_truncated_but_not_auto_zero():
    # Long words: 7000 chars, tail 2100 chars ~ 210 words.
    text = " ".join(["abcdefghi"] * 700)
    p = prepare_prediction(text)
    assert p.was_truncated and not p.auto_zero


def test_prepared_is_frozen():
    p = prepare_prediction("5")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.text = "6"  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# Degeneracy diagnostics
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("wait", 1),
        ("wait, let me check", 2),
        ("wait let me re-read this", 1),  # one marker, not "wait" + "wait let me"
        ("awaiting the results, waiting, waited", 0),  # word-bounded
        ("hold on. hold onto nothing", 1),
        ("let's reconsider. let s re-read", 2),
        ("re-evaluating and re evaluating", 2),
        ("i need to reconsider", 1),
        ("actually looking closer", 1),
        ("let me double check, let me double-check", 2),
        ("the outlet me check", 0),
        ("", 0),
    ],
)
def test_hedging_count(text, count):
    assert hedging_count(text) == count


def test_every_official_marker_counts_once():
    from memlens.eval.judge.parsing import _HEDGE_MARKERS

    assert len(set(_HEDGE_MARKERS)) == len(_HEDGE_MARKERS)  # each listed once
    for marker in _HEDGE_MARKERS:
        assert hedging_count(f"so {marker} now") == 1, marker
        assert hedging_count(f"x{marker}") == 0, marker  # word-bounded at the start
        # ... and at the end ("wait let mex" still holds the shorter marker "wait")
        shorter = any(marker.startswith(m + " ") for m in _HEDGE_MARKERS)
        assert hedging_count(f"{marker}x") == int(shorter), marker


@pytest.mark.parametrize(
    ("text", "ratio"),
    [
        ("", 1.0),
        ("a b c d", 1.0),
        ("a b c d e", 1.0),
        ("a b c d e f g h i j", 1.0),  # 6 grams, all distinct
        ("a b c d e a b c d e", 0.833),  # 6 grams, "a b c d e" twice
        ("x x x x x x x x x x", 0.167),  # 6 grams, one distinct
    ],
)
def test_unique_5gram_ratio(text, ratio):
    assert unique_5gram_ratio(text) == ratio


def test_degeneracy_short_texts_never_degenerate():
    assert degeneracy("wait " * 50) == (False, 0, 1.0)  # 250 chars < 500


def test_degeneracy_repetition_loop():
    loop = "Wait, let me check session 3 again. " * 40
    deg, hedges, ratio = degeneracy(loop)
    assert deg and hedges == 80 and ratio < 0.4  # "wait" and "let me check" each time
    p = prepare_prediction(loop)
    assert (p.is_degenerate, p.hedging_count, p.unique_5gram_ratio) == (deg, hedges, ratio)


def test_degeneracy_many_hedges_but_diverse():
    text = " ".join(f"Hold on, item {i} differs from item {i + 1} in colour {i * 7}." for i in range(20))
    assert len(text) >= 500
    deg, hedges, ratio = degeneracy(text)
    assert hedges == 20 and ratio > 0.4 and deg


def test_awaiting_is_not_a_hedge():
    text = "The user was awaiting a parcel. " * 20 + " ".join(str(i) for i in range(200))
    assert degeneracy(text)[1] == 0


def test_diagnostics_can_be_skipped():
    loop = "Wait, let me check session 3 again. " * 40
    p = prepare_prediction(loop, diagnostics=False)
    assert p.is_degenerate is None and p.hedging_count is None and p.unique_5gram_ratio is None
    assert p.text == prepare_prediction(loop).text


# ---------------------------------------------------------------------------------------------
# extract_final_answer
# ---------------------------------------------------------------------------------------------


LONG_COT = " ".join(f"Session {i} mentions a plant and maybe {i} more pots." for i in range(1, 12))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # short outputs are kept unchanged
        ("5", "5"),
        ("Paris", "Paris"),
        ("It was the red bicycle.", "It was the red bicycle."),
        ("", ""),
        # [ANSWER] tags (case-insensitive, last non-empty one, stop at [REASONING])
        ("[REASONING] count them [ANSWER] 3", "3"),
        ("[reasoning] x [answer] 7", "7"),
        ("[ANSWER] 5 [REASONING] because of sessions 2 and 4", "5"),
        ("[ANSWER] 3\n[ANSWER] 4", "4"),
        ("[ANSWER] 3\n[ANSWER]   ", "3"),
        ("[ANSWER]", ""),
        ("[REASONING] r\n[ANSWER] The answer is B.", "B"),
        (f"[REASONING] {LONG_COT}\n[ANSWER] **(2)(3)(1)**", "(2)(3)(1)"),
        # markers
        ("blah\n\nFinal answer: **B**", "B"),
        ("Final Answer: 12", "12"),
        ("Answer:\n\n  42  \n", "42"),
        ("So the answer is $15.50.", "$15.50"),
        ("The answer is: (2)(3)(1)", "(2)(3)(1)"),
        ("**Answer:** Yes", "Yes"),
        ("My answer: No.", "No"),
        # a question-like "whether the answer is" is not a commitment
        ("Whether the answer is A or B is unclear", "Whether the answer is A or B is unclear"),
        # truncation marker is removed first
        (f"{TRUNCATION_MARKER}\n...and so the answer is 7", "7"),
        (f"{TRUNCATION_MARKER}\nParis", "Paris"),
    ],
)
def test_extract_final_answer(text, expected):
    assert extract_final_answer(text) == expected


def test_extract_last_line_of_long_multiline_output():
    text = f"{LONG_COT}\n\nTherefore there are 4 plants in total.\n\nLet me know if you need anything else!"
    assert extract_final_answer(text) == "Therefore there are 4 plants in total"


def test_extract_last_sentence_of_long_paragraph():
    text = f"{LONG_COT} Adding everything up, the count is 9."
    assert extract_final_answer(text) == "Adding everything up, the count is 9"


def test_extract_mid_reasoning_weak_marker_is_ignored():
    text = "Let me think: the answer is probably 3.\n" + LONG_COT + "\n" + LONG_COT + "\nSo the total is 4."
    assert extract_final_answer(text) == "So the total is 4"


def test_extract_strong_marker_wins_even_with_explanation_after():
    text = "Final answer: 4\n\n" + LONG_COT + "\n" + LONG_COT
    assert extract_final_answer(text) == "4"


def test_extract_short_multiline_kept():
    assert extract_final_answer("5\n(from sessions 1, 3 and 4)") == "5\n(from sessions 1, 3 and 4)"


# ---------------------------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Insufficient information",
        "insufficient information.",
        "The information is insufficient to answer.",
        "NOT_MENTIONED",
        "That was not mentioned.",
        "It isn't mentioned anywhere.",
        "This cannot be determined from the conversation.",
        "I can't determine that.",
        "I don't know.",
        "I do not know",
        "There is not enough information to answer.",
        "There isn't sufficient information.",
        "I'm unable to determine the date.",
        "I am unable to answer that.",
        "There is no information about your sister.",
        "The question is unanswerable.",
        "That is not provided in the conversation.",
        "That isn't provided in the conversation.",
        "The exact date is not specified.",
        "It wasn't explicitly mentioned.",
        "The conversation doesn't mention it.",
        "I don't have enough information.",
        "You never mentioned that.",
        "unknown",
        "N/A",
        "I'm not sure.",
        "I’m unable to determine this.",  # curly apostrophe
    ],
)
def test_is_refusal_positive(text):
    assert is_refusal(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "There is sufficient information: 5",
        "There is sufficient information to say it was Paris.",
        "None",
        "none of them",
        "The answer is 5",
        "Paris",
        "The user has enough information",
        "I'm not sure, but 5",  # a hedge inside an answer is not a refusal
        "No",
        "The unknown soldier memorial",
        "The size was specified in session 2: 5",
        "It was not specified by brand but by colour: red",
    ],
)
def test_is_refusal_negative(text):
    assert not is_refusal(text)


def test_last_refusal_span_points_at_last_phrase():
    text = "I don't know; there is no information, but I think 5"
    start, end = last_refusal_span(text)
    assert text[start:end] == "no information"
    assert last_refusal_span("Paris") is None
    assert last_refusal_span("unknown") == (0, 7)


@pytest.mark.parametrize(
    "text",
    [
        # 1 insufficiency
        "There aren't enough details to say.",
        "That information isn't available to me.",
        # 2 inability
        "I can't compare them.",
        "I cannot count them from what you shared.",
        "I can't work out which was longer.",
        "There's no way to tell.",
        "Hard to say from the photos.",
        # 3 not known
        "I have no idea.",
        "I don't remember you telling me.",
        # 4 not had or seen
        "I don't have a date for that.",
        "I don't see any photo of that in our chats.",
        "I have no photos of those.",
        "I have no timing for the stew.",
        # 5 never said
        "You never told me when that was.",
        "You didn't share enough for me to work that out.",
        "You haven't told me which hotel you book.",
        "I don't think you ever showed me that.",
        "It never came up.",
        # 6 not mentioned
        "Nothing was mentioned about it.",
        # 7 nothing there
        "There's nothing in our conversations about that.",
        "Nothing you've shared covers that.",
        "I have dates for one of them, but nothing about the other.",
        "Nothing in our conversations says which one.",
        "The bookshelf took 50 minutes, but I have nothing on how long the stew took.",
        # 8 not in the record
        "There's no record of that photo.",
        "It isn't in our conversation history.",
        "It's unclear from the conversation.",
    ],
)
def test_refusal_by_meaning(text):
    assert is_refusal(text), text


@pytest.mark.parametrize(
    "text",
    [
        "I can't be completely sure, but I think it was 5.",  # a hedge about certainty, then an answer
        "You mentioned it on May 3.",
        "You told me it was 5.",
        "There were no orange bottles.",
        "I see 3 photos of that shelf.",
        "Nothing else was on the shelf but a green mug.",
    ],
)
def test_answers_are_not_refusals(text):
    assert not is_refusal(text), text


def test_refusal_scan_sees_overlapping_guards():
    # "can't" holds the guards "can" and "n't"; both families must run
    assert is_refusal("You can't have told me that, you never mentioned it.")
