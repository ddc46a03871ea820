"""The prediction views belong to one system key with their lock and manifest (memlens.eval.views):
a second evaluation of the same name stops (or waits), a new key replaces the folder's views of the
old one, the manifest describes every line, and `report` refuses predictions of another config."""

from __future__ import annotations

import json
import threading
import time

from memlens.core.config import Paths
from memlens.core.io import iter_jsonl, read_json
from memlens.core.items import BuiltBenchmark
from memlens.eval.prompt import PROMPT_PROTOCOL
from memlens.eval.results import request_key
from memlens.eval.views import SystemViews
from tests.conftest import run_stage
from tests.evaluate.eval_support import TINY


def _manifest(root):
    return read_json(root / "data" / "predictions" / "chance" / "manifest.json")


def _lines_match_manifest(root) -> None:
    """Every line of every view was made by the system key its manifest entry names."""
    m = _manifest(root)
    bench = BuiltBenchmark(Paths(root))
    files = sorted((root / "data" / "predictions" / "chance").rglob("*.jsonl"))
    assert sorted(m["views"]) == [p.relative_to(root / "data/predictions/chance").as_posix() for p in files]
    for rel, entry in m["views"].items():
        mode, length = rel.split("/")[0], rel.split("/")[1][: -len(".jsonl")]
        items = {it.question_id: it for it in bench.items(length)}
        rows = list(iter_jsonl(root / "data" / "predictions" / "chance" / rel))
        assert rows and entry["n"] == len(rows) and entry["system_key"] == m["system_key"]
        for r in rows:
            fp = items[r["question_id"]].fingerprint()
            assert r["request_key"] == request_key(entry["system_key"], PROMPT_PROTOCOL, mode, fp)


def test_a_second_evaluation_of_the_same_name_stops_or_waits(tiny_copy, capsys):
    paths = Paths(tiny_copy)
    assert run_stage(tiny_copy, "evaluate", *TINY, "model=chance") == 0
    before = {p: p.read_bytes() for p in (tiny_copy / "data/predictions/chance").rglob("*") if p.is_file()}
    with SystemViews(paths, "chance", "a" * 64):  # an evaluation of `chance` with other settings runs
        assert run_stage(tiny_copy, "evaluate", *TINY, "model=chance", "model.seed=7") == 2
        err = capsys.readouterr().err
        assert "another evaluation of a system named 'chance' is writing these views" in err
        assert "system key aaaaaaaaaaaa" in err and "eval.wait_for_lock=true" in err
        assert {p: p.read_bytes() for p in before} == before  # nothing of the folder changed
        done = []
        waiter = threading.Thread(
            target=lambda: done.append(
                run_stage(tiny_copy, "evaluate", *TINY, "model=chance", "model.seed=7", "eval.wait_for_lock=true")
            )
        )
        waiter.start()
        time.sleep(1.0)
        assert not done  # queued behind the running one
    waiter.join(120)
    assert done == [0]
    assert _manifest(tiny_copy)["config"]["model"]["seed"] == 7
    _lines_match_manifest(tiny_copy)


def test_a_new_key_replaces_the_old_views_and_report_refuses_another_config(tiny_copy, capsys):
    root = tiny_copy
    assert run_stage(root, "evaluate", *TINY, "model=chance") == 0  # key K1 at 32k and 64k
    assert run_stage(root, "judge", *TINY, "model=chance") == 0
    k1 = _manifest(root)["system_key"]
    assert sorted(_manifest(root)["views"]) == ["standard/32k.jsonl", "standard/64k.jsonl"]
    other = ("model=chance", "model.seed=1")
    assert run_stage(root, "evaluate", *TINY, *other, "eval.lengths=[32k]") == 0  # key K2 at 32k only
    m = _manifest(root)
    assert m["system_key"] != k1 and sorted(m["views"]) == ["standard/32k.jsonl"]
    assert not (root / "data/predictions/chance/standard/64k.jsonl").exists()  # K1's view, not K2's
    _lines_match_manifest(root)
    assert run_stage(root, "judge", *TINY, *other, "eval.lengths=[32k]") == 0
    capsys.readouterr()
    # the 64k verdicts on disk were judged from K1's predictions: not reported under K2's params
    assert run_stage(root, "report", *TINY, *other, "tracking.enabled=false") == 2
    assert "no predictions of this configuration of 'chance' at 64k" in capsys.readouterr().err
    (root / "data/verdicts/chance/standard/64k.deterministic.jsonl").unlink()
    assert run_stage(root, "report", *TINY, *other, "tracking.enabled=false") == 0
    # and the default seed is another configuration than the one that made these predictions
    assert run_stage(root, "report", *TINY, "model=chance", "tracking.enabled=false") == 2
    err = capsys.readouterr().err
    assert "made by another configuration (seed: 1 there, 0 in the config)" in err


def test_a_manifest_of_an_earlier_memlens_is_taken_over(tiny_copy):
    root = tiny_copy
    assert run_stage(root, "evaluate", *TINY, "model=chance", "eval.lengths=[32k]") == 0
    mpath = root / "data/predictions/chance/manifest.json"
    old = json.loads(mpath.read_text())
    del old["views"]  # what evaluate wrote before views were listed: one system key for the folder
    mpath.write_text(json.dumps(old))
    assert run_stage(root, "evaluate", *TINY, "model=chance", "eval.lengths=[64k]") == 0
    assert sorted(_manifest(root)["views"]) == ["standard/32k.jsonl", "standard/64k.jsonl"]  # same key: kept
    _lines_match_manifest(root)
