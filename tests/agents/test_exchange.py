"""MemOS / M2A: their inputs exported role-stripped, their answers imported as a judged system."""

from __future__ import annotations

import hashlib
import json

from memlens.core.config import Paths
from memlens.core.items import BuiltBenchmark
from memlens.eval.agents.exchange_cli import main as exchange
from tests.agents.agent_support import TINY
from tests.conftest import run_stage


def _export(root, fmt, out):
    assert exchange(["export", "--format", fmt, "--out", out, "--root", str(root), *TINY, "eval.lengths=[32k]"]) == 0
    return json.loads((root / out / "32k.json").read_text())


def _no_roles(text: str, bench: BuiltBenchmark) -> None:
    for sid in bench.sessions:
        assert sid not in text
    for word in ("has_answer", "answer_session_ids", "is_evidence", "needle", "haystack_images"):
        assert word not in text


def test_exports_are_role_stripped_and_complete(tiny_copy):
    root = tiny_copy
    bench = BuiltBenchmark(Paths(root))
    items = {it.question_id: it for it in bench.items("32k")}
    lme = _export(root, "longmemeval", "exports/memos")
    assert lme and all(r["question_id"].endswith("@32k") for r in lme)
    _no_roles(json.dumps(lme), bench)
    for r in lme:
        it = items[r["question_id"].rsplit("@", 1)[0]]
        assert r["question"] == it.question.question and r["answer"] == ""
        assert r["haystack_dates"] == sorted(s.date for s in it.sessions)  # date order
        assert len(r["haystack_sessions"]) == len(it.sessions)
        assert r["haystack_session_ids"][0] == "S001"
    loco = _export(root, "locomo", "exports/m2a")
    _no_roles(json.dumps(loco), bench)
    imgs = [
        u
        for s in loco
        for k, v in s["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
        for t in v
        for u in t.get("img_url", [])
    ]
    assert imgs
    for rel in imgs:  # images by content hash
        data = (root / "exports/m2a" / rel).read_bytes()
        assert rel.split("/")[1].split(".")[0] == hashlib.sha256(data).hexdigest()
    first = loco[0]["conversation"]
    assert first["speaker_a"] == "User" and "session_0_date_time" in first and first["session_0"][0]["dia_id"] == "S0:1"
    assert json.loads((root / "exports/m2a/manifest.json").read_text())["format"] == "locomo"


def test_imported_answers_are_judged_and_bad_files_are_refused(tiny_copy, capsys):
    root = tiny_copy
    lme = _export(root, "longmemeval", "exports/memos")
    ids = [r["question_id"] for r in lme]
    answers = root / "exports/memos/answers.jsonl"
    model = ["model=memos", "model.answers=exports/memos/answers.jsonl", "eval.lengths=[32k]", *TINY]

    answers.write_text(
        "".join(json.dumps({"question_id": i, "hypothesis": "Insufficient information"}) + "\n" for i in ids[:-1])
    )
    assert run_stage(root, "evaluate", *model) == 2
    err = capsys.readouterr().err
    assert "no answer for 1 of" in err and ids[-1] in err and "nothing was recorded" in err
    assert all(not p.read_bytes() for p in (root / ".memlens_cache").glob("results/*/answers.jsonl"))

    with answers.open("a") as fh:
        fh.write(json.dumps({"question_id": ids[-1], "hypothesis": "Insufficient information"}) + "\n")
        fh.write(json.dumps({"question_id": "q_nope@32k", "hypothesis": "x"}) + "\n")
    assert run_stage(root, "evaluate", *model) == 2
    err = capsys.readouterr().err
    assert "not in the benchmark" in err and "q_nope@32k" in err

    lines = answers.read_text().splitlines()[:-1]
    answers.write_text("\n".join(lines[:-1] + [json.dumps({"question_id": ids[-1]})]) + "\n")
    assert run_stage(root, "evaluate", *model) == 2
    assert f"answers.jsonl:{len(lines)}: {ids[-1]}: no answer" in capsys.readouterr().err

    answers.write_text("\n".join(lines) + "\n")
    assert run_stage(root, "evaluate", *model) == 0
    preds = [json.loads(x) for x in (root / "data/predictions/memos/standard/32k.jsonl").read_text().splitlines()]
    assert sorted(p["question_id"] + "@32k" for p in preds) == sorted(ids)
    assert all(p["prediction"] == "Insufficient information" and p["meta"] == {"upstream": "memos"} for p in preds)
    assert run_stage(root, "judge", *model) == 0
    verdicts = list((root / "data/verdicts/memos/standard").glob("32k.*.jsonl"))
    assert verdicts and len(verdicts[0].read_text().splitlines()) == len(ids)
