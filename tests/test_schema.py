import json

import pytest

from memlens.core.errors import DataError, SchemaError
from memlens.core.io import canonical_json, iter_jsonl, read_json, read_records, write_jsonl
from memlens.core.schema import Evidence, ImageRecord, Question, Session, Turn, format_date, is_release_date, parse_date


def q(**kw):
    base = dict(
        question_id="q_1",
        question_type="information_extraction",
        question_subtype="entity",
        question="How many?",
        answer="3",
        question_date="2024/05/31 (Fri) 07:58",
    )
    base.update(kw)
    return Question(**base)


def test_release_date_roundtrip():
    d = parse_date("2024/05/31 (Fri) 07:58")
    assert format_date(d) == "2024/05/31 (Fri) 07:58"
    assert not is_release_date("2024/05/31 (Sat) 07:58")  # wrong weekday
    assert not is_release_date("2024-05-31 07:58")


def test_release_date_parse_agrees_with_strptime():
    """parse_date (regex + datetime, no strptime) accepts exactly what strptime and the weekday check did."""
    import random
    from datetime import datetime, timedelta

    from memlens.core.constants import DATE_FORMAT

    rng = random.Random(7)
    start = datetime(1999, 1, 1)
    for _ in range(3000):
        text = format_date(start + timedelta(minutes=rng.randrange(20 * 365 * 24 * 60)))
        assert parse_date(text) == datetime.strptime(text, DATE_FORMAT)
    for bad in (
        "2024/02/30 (Fri) 07:58",  # no such day
        "2023/02/29 (Wed) 07:58",  # not a leap year
        "2024/13/01 (Mon) 00:00",
        "2024/00/01 (Mon) 00:00",
        "2024/05/31 (Fri) 24:00",
        "2024/05/31 (Fri) 23:60",
        "2024/05/31 (Thu) 07:58",  # wrong weekday
        "2024/05/31 (Fri) 07:58\n",
        " 2024/05/31 (Fri) 07:58",
        "2024/05/31 (fri) 07:58",
        None,
        20240531,
    ):
        assert not is_release_date(bad), bad
        with pytest.raises(ValueError):
            parse_date(bad)


def test_turn_placeholder_count_must_match_images():
    Turn("user", "look <image>", ["a" * 64])
    with pytest.raises(ValueError, match="placeholders"):
        Turn("user", "look <image> <image>", ["a" * 64])
    with pytest.raises(ValueError, match="role"):
        Turn("system", "hi")


def test_question_roundtrip_and_errors():
    ev = Evidence("sess_x", "2024/05/01 (Wed) 10:00", "fact", [])
    qq = q(evidence=[ev], details={"visual_skill": "counting"})
    d = qq.to_dict()
    back = Question.from_dict(json.loads(canonical_json(d)))
    assert back == qq
    assert back.evidence_session_ids == ["sess_x"]
    bad = dict(d, question_type="nonsense")
    with pytest.raises(SchemaError, match="question_type"):
        Question.from_dict(bad, where="f.jsonl:3")
    missing = {k: v for k, v in d.items() if k != "answer"}
    with pytest.raises(SchemaError, match=r"f.jsonl:3.*answer"):
        Question.from_dict(missing, where="f.jsonl:3")
    with pytest.raises(SchemaError, match="question_date"):
        Question.from_dict(dict(d, question_date="yesterday"))


def test_nested_records_report_path():
    s = {"session_id": "s", "kind": "haystack", "topic_id": "t", "turns": [{"role": "bot", "content": "x"}]}
    with pytest.raises(SchemaError, match=r"turns\[0\]"):
        Session.from_dict(s, where="sessions.jsonl:7")


def test_image_record_validation():
    with pytest.raises(ValueError):
        ImageRecord(sha256="xyz", family="f", role="evidence", width=1, height=1, format="png", source="s")
    with pytest.raises(ValueError, match="role"):
        ImageRecord(sha256="a" * 64, family="f", role="nope", width=1, height=1, format="png", source="s")


def test_jsonl_errors_name_file_and_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n{"a": \n{"a": 3}\n')
    with pytest.raises(DataError, match=r"x.jsonl:2"):
        list(iter_jsonl(p))
    with pytest.raises(DataError, match="not found"):
        list(iter_jsonl(tmp_path / "missing.jsonl"))
    j = tmp_path / "bad.json"
    j.write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        read_json(j)


def test_write_jsonl_is_canonical(tmp_path):
    p1, p2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl(p1, [q(), q(question_id="q_2")])
    write_jsonl(p2, [q(), q(question_id="q_2")])
    assert p1.read_bytes() == p2.read_bytes()
    assert [x.question_id for x in read_records(p1, Question)] == ["q_1", "q_2"]
