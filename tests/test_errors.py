"""Bad input ends a stage with one clear message (file, item, field) and loses nothing."""

import json

import pytest

from memlens.core.store import hash_tree
from tests.conftest import TINY, run_stage

pytestmark = pytest.mark.slow


def test_unknown_config_option(tiny_copy, capsys):
    assert run_stage(tiny_copy, "evaluate", *TINY, "model=nope") == 2
    err = capsys.readouterr().err
    assert "model/nope" in err and "Traceback" not in err


def test_missing_image_at_export_keeps_previous_release(tiny_copy, capsys):
    assert run_stage(tiny_copy, "export", *TINY) == 0
    release = tiny_copy / "data" / "release"
    before = hash_tree(release)
    inputs = {d: hash_tree(tiny_copy / "data" / d) for d in ("generated", "instances")}
    idx = [json.loads(x) for x in (tiny_copy / "data" / "images" / "index.jsonl").read_text().splitlines()]
    ev = next(r["image"] for r in idx if r["image"]["role"] == "evidence")
    ext = "jpg" if ev["format"] == "jpeg" else ev["format"]
    (tiny_copy / "data" / "images" / "objects" / f"{ev['sha256']}.{ext}").unlink()
    assert run_stage(tiny_copy, "export", *TINY) == 2
    err = capsys.readouterr().err
    assert ev["sha256"] in err and "missing" in err
    assert hash_tree(release) == before  # the previous release, every file of it
    assert {d: hash_tree(tiny_copy / "data" / d) for d in inputs} == inputs  # the inputs are untouched


def test_corrupt_image_is_rejected_by_filter(tiny_copy):
    idx = [json.loads(x) for x in (tiny_copy / "data" / "images" / "index.jsonl").read_text().splitlines()]
    rec = idx[-1]["image"]
    ext = "jpg" if rec["format"] == "jpeg" else rec["format"]
    p = tiny_copy / "data" / "images" / "objects" / f"{rec['sha256']}.{ext}"
    p.write_bytes(p.read_bytes()[:200])
    assert run_stage(tiny_copy, "filter", *TINY) == 0
    rows = {
        json.loads(x)["sha256"]: json.loads(x)
        for x in (tiny_copy / "data" / "filtered" / "index.jsonl").read_text().splitlines()
    }
    assert not rows[rec["sha256"]]["accepted"] and "corrupt" in rows[rec["sha256"]]["reason"]


def test_malformed_questions_file(tiny_copy, capsys):
    qf = tiny_copy / "data" / "generated" / "questions.jsonl"
    lines = qf.read_text().splitlines()
    lines[1] = lines[1][:40]
    qf.write_text("\n".join(lines) + "\n")
    before = (tiny_copy / "data" / "instances" / "32k.jsonl").read_bytes()
    assert run_stage(tiny_copy, "assemble", *TINY) == 2
    err = capsys.readouterr().err
    assert "questions.jsonl:2" in err
    assert (tiny_copy / "data" / "instances" / "32k.jsonl").read_bytes() == before


def test_schema_violation_names_field(tiny_copy, capsys):
    qf = tiny_copy / "data" / "generated" / "questions.jsonl"
    lines = qf.read_text().splitlines()
    row = json.loads(lines[0])
    row["question_date"] = "last tuesday"
    lines[0] = json.dumps(row)
    qf.write_text("\n".join(lines) + "\n")
    assert run_stage(tiny_copy, "assemble", *TINY) == 2
    err = capsys.readouterr().err
    assert "questions.jsonl:1" in err and "question_date" in err


def test_gate_failure_fails_validate(tiny_copy, capsys):
    # inject an answer into a haystack session's text: the leakage gate must catch it
    q = next(
        json.loads(x)
        for x in (tiny_copy / "data" / "generated" / "questions.jsonl").read_text().splitlines()
        if json.loads(x)["question_type"] == "information_extraction"
    )
    inst = next(
        json.loads(x)
        for x in (tiny_copy / "data" / "instances" / "32k.jsonl").read_text().splitlines()
        if json.loads(x)["question_id"] == q["question_id"]
    )
    hay = next(s for s in inst["session_ids"] if s not in inst["answer_session_ids"])
    sf = tiny_copy / "data" / "generated" / "sessions.jsonl"
    rows = [json.loads(x) for x in sf.read_text().splitlines()]
    for r in rows:
        if r["session_id"] == hay:
            r["turns"][0]["content"] += f" By the way the answer is {q['answer']}."
    sf.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert run_stage(tiny_copy, "validate", *TINY) == 2
    assert "text_leakage" in capsys.readouterr().err
    v = json.loads((tiny_copy / "reports" / "validity.json").read_text())
    assert v["gates"]["text_leakage"]["value"] >= 1
