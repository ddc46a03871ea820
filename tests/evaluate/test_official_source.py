"""data.items=official: a release exported from the tiny benchmark (`memlens export`) is evaluated
through the same loader and gives exactly the requests of the built benchmark."""

from __future__ import annotations

import json

import pytest

from memlens.core.official import OfficialRelease
from tests.conftest import run_stage
from tests.evaluate.eval_support import TINY, openai_overrides, predictions
from tests.support.fake_openai import FakeOpenAIServer


@pytest.mark.slow
def test_official_release_evaluates_like_the_built_benchmark(tiny_copy):
    root = tiny_copy
    assert run_stage(root, "export", *TINY) == 0
    release = root / "data" / "release"
    assert OfficialRelease(release).lengths() == ["32k", "64k"]
    with FakeOpenAIServer() as server:
        assert run_stage(root, "evaluate", *TINY, *openai_overrides(server, model="built-run")) == 0
        built = server.requests
        server.reset()
        ov = openai_overrides(server, "data.items=official", f"data.official_dir={release}", model="official-run")
        assert run_stage(root, "evaluate", *TINY, *ov) == 0
        official = server.requests
    from memlens.core.config import Paths
    from memlens.core.items import BuiltBenchmark

    bench = BuiltBenchmark(Paths(root))
    assert len(built) == len(official) == sum(bench.count(n) for n in bench.lengths())

    def canon(bodies):
        return sorted(json.dumps(b["messages"], sort_keys=True) for b in bodies)

    assert canon(built) == canon(official)  # same messages, same (re-encoded) images, same order of blocks
    a, b = predictions(root, "built-run"), predictions(root, "official-run")
    assert a.keys() == b.keys() == {"32k", "64k"}
    for length in a:
        assert {q: r["raw_prediction"] for q, r in a[length].items()} == {
            q: r["raw_prediction"] for q, r in b[length].items()
        }
        assert all(r["ok"] for r in b[length].values())


def test_missing_release_folder_is_a_clear_error(tiny_copy, tmp_path, capsys):
    with FakeOpenAIServer() as server:
        rc = run_stage(
            tiny_copy,
            "evaluate",
            *TINY,
            *openai_overrides(server, "data.items=official", f"data.official_dir={tmp_path / 'nope'}"),
        )
        assert server.request_count == 0
    assert rc == 2  # one clear message, no traceback
    assert "release folder not found" in capsys.readouterr().err
