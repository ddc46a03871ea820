"""Release and built-item readers are strict: a missing or empty required field, parallel lists of
different lengths and an unparseable date are errors naming the file, the item and the field."""

from __future__ import annotations

import copy

import pytest

from memlens.core.errors import SchemaError
from memlens.core.official import parse_item
from memlens.core.schema import Instance, Question, Session

DATE = "2024/05/31 (Fri) 07:58"
ITEM = {
    "question_id": "q1",
    "question_type": "information_extraction",
    "question_subtype": "entity",
    "question": "What colour was the car?",
    "answer": "red",
    "question_date": DATE,
    "haystack_dates": [DATE, "2024/06/01 (Sat) 09:00"],
    "haystack_session_ids": ["s1", "s2"],
    "haystack_sessions": [
        [{"role": "user", "content": "hi <image>", "images": ["needle_images/a.png"]}],
        [{"role": "assistant", "content": "hello"}],
    ],
    "answer_session_ids": ["s1"],
}


def broken(**changes):
    item = copy.deepcopy(ITEM)
    for key, value in changes.items():
        if value is ...:
            del item[key]
        else:
            item[key] = value
    return item


def test_a_good_item_parses():
    q, sessions = parse_item(copy.deepcopy(ITEM), "dataset_32k.json[0]")
    assert q.question_date == DATE and [s[0] for s in sessions] == ["s1", "s2"]


@pytest.mark.parametrize(
    "item,field",
    [
        (broken(question_date="yesterday"), "question_date"),
        (broken(question_date=...), "question_date"),
        (broken(answer=""), "answer"),
        (broken(question="  "), "question"),
        (broken(haystack_dates=[DATE]), "haystack_dates"),
        (broken(haystack_dates=...), "haystack_dates"),
        (broken(haystack_dates=[DATE, "unknown"]), "haystack_dates[1]"),
        (broken(haystack_session_ids=["s1"]), "haystack_session_ids"),
        (broken(haystack_session_ids=["s1", "s1"]), "haystack_session_ids"),
        (broken(answer_session_ids=["s9"]), "answer_session_ids"),
        (broken(haystack_sessions=[[{"role": "user"}], [{"role": "user", "content": "x"}]]), "'content'"),
        (broken(haystack_sessions=[[], [{"role": "user", "content": "x"}]]), "haystack_sessions[0]"),
    ],
)
def test_bad_items_name_file_item_and_field(item, field):
    with pytest.raises(SchemaError) as exc:
        parse_item(item, "dataset_32k.json[7]")
    msg = str(exc.value)
    assert "dataset_32k.json[7]" in msg and "question q1" in msg and field in msg, msg


@pytest.mark.parametrize(
    "cls,row,field",
    [
        (
            Question,
            {
                "question_id": "q2",
                "question_type": "knowledge_update",
                "question_subtype": "",
                "question": "",
                "answer": "a",
                "question_date": DATE,
            },
            "question",
        ),
        (
            Question,
            {
                "question_id": "q2",
                "question_type": "knowledge_update",
                "question_subtype": "",
                "question": "x?",
                "answer": "a",
                "question_date": "tomorrow",
            },
            "question_date",
        ),
        (
            Instance,
            {
                "question_id": "q3",
                "length": "32k",
                "target_tokens": 1,
                "session_ids": ["a", "b"],
                "dates": [DATE],
                "answer_session_ids": [],
                "total_tokens": 1,
                "text_tokens": 1,
                "image_tokens": 0,
                "n_images": 0,
            },
            "dates",
        ),
        (
            Instance,
            {
                "question_id": "q3",
                "length": "32k",
                "target_tokens": 1,
                "session_ids": ["a"],
                "dates": ["soon"],
                "answer_session_ids": [],
                "total_tokens": 1,
                "text_tokens": 1,
                "image_tokens": 0,
                "n_images": 0,
            },
            "dates",
        ),
        (
            Session,
            {"session_id": "", "kind": "haystack", "topic_id": "t", "turns": [{"role": "user", "content": "x"}]},
            "session_id",
        ),
    ],
)
def test_built_records_are_strict_and_name_the_record(cls, row, field):
    with pytest.raises(SchemaError) as exc:
        cls.from_dict(row, where="data/x.jsonl:4")
    msg = str(exc.value)
    assert "data/x.jsonl:4" in msg and field in msg, msg
    if row.get("question_id"):
        assert row["question_id"] in msg
