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


def _release(tiny_copy):
    assert run_stage(tiny_copy, "export", *TINY) == 0
    return tiny_copy / "data" / "release"


def _evaluate_release(root, release, capsys):
    capsys.readouterr()
    rc = run_stage(
        root,
        "evaluate",
        *TINY,
        "model=refuse",
        "data.items=official",
        f"data.official_dir={release}",
        "eval.lengths=[32k]",
    )
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    "defect,message",
    [
        ("utf8", "not UTF-8 text"),
        ("empty", "no items at 32k"),
        ("role", "role must be 'user' or 'assistant', got 'Assistant'"),
        ("duplicate", "appears twice"),
    ],
)
def test_bad_release_is_one_clear_error(tiny_copy, capsys, defect, message):
    import json

    release = _release(tiny_copy)
    path = release / "dataset_32k.json"
    items = json.loads(path.read_text())
    if defect == "utf8":
        path.write_bytes(path.read_bytes().replace(b'"question"', b'"question\xff"', 1))
    elif defect == "empty":
        path.write_text("[]")
    elif defect == "role":
        items[0]["haystack_sessions"][0][0]["role"] = "Assistant"
        path.write_text(json.dumps(items))
    elif defect == "duplicate":
        path.write_text(json.dumps([*items, items[0]]))
    rc, err = _evaluate_release(tiny_copy, release, capsys)
    assert rc == 2, err
    assert message in err and "Traceback" not in err


def test_filter_record_without_hash_is_one_clear_error(tiny_copy, capsys):
    index = tiny_copy / "data" / "filtered" / "index.jsonl"
    lines = index.read_text().splitlines()
    row = json.loads(lines[3])
    del row["sha256"]
    lines[3] = json.dumps(row)
    index.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert run_stage(tiny_copy, "generate", *TINY) == 2
    err = capsys.readouterr().err
    assert "index.jsonl:4" in err and "sha256" in err


def test_corrupt_line_in_predictions_is_one_clear_error(tiny_copy, capsys):
    assert run_stage(tiny_copy, "evaluate", *TINY, "model=refuse") == 0
    view = tiny_copy / "data" / "predictions" / "refuse" / "standard" / "32k.jsonl"
    lines = view.read_text().splitlines()
    lines[2] = lines[2][:40]
    view.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert run_stage(tiny_copy, "judge", *TINY, "model=refuse") == 2
    err = capsys.readouterr().err
    assert "32k.jsonl:3" in err and "not valid JSON" in err
