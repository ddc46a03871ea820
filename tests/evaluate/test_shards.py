"""``eval.shard=I/N``: a stable split of a system's items; shards write answers only, ``eval.collect``
writes the views from the store, and the result is byte-identical to a one-process run."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from memlens.core.config import Paths, load_config
from memlens.core.errors import ConfigError
from memlens.core.items import BuiltBenchmark
from memlens.eval.results import parse_shard, shard_of
from tests.conftest import run_stage
from tests.evaluate.eval_support import TINY, openai_overrides
from tests.support.fake_openai import FakeOpenAIServer


def test_shard_of_is_pinned_and_balanced():
    # pinned: a changed hash would move items between the shards of a sweep that is running
    assert [shard_of(f"q_{i:04d}", 4) for i in range(12)] == [0, 3, 0, 3, 3, 1, 2, 2, 2, 2, 3, 3]
    counts = Counter(shard_of(f"q_{i:06d}", 7) for i in range(7000))
    assert set(counts) == set(range(7)) and all(900 < c < 1100 for c in counts.values())
    assert all(shard_of(f"x{i}", 1) == 0 for i in range(50))


@pytest.mark.parametrize(
    ("spec", "message"), [("4/4", "counts from 0"), ("1/0", "counts from 0"), ("a/b", "expected I/N"), ("3", "I/N")]
)
def test_bad_shard_specs_are_refused(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_shard(spec)
    assert parse_shard(" 2 / 5 ") == (2, 5) and parse_shard(None) is None


def _tree(root: Path, sub: str) -> dict[str, bytes]:
    base = root / sub
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def test_three_shards_then_collect_equal_one_process_run(tiny_project, tmp_path):
    one, sharded = tmp_path / "one", tmp_path / "sharded"
    shutil.copytree(tiny_project, one)
    shutil.copytree(tiny_project, sharded)
    args = ("eval.lengths=[32k]",)
    with FakeOpenAIServer() as server:
        assert run_stage(one, "evaluate", *TINY, *openai_overrides(server), *args) == 0
        n = server.request_count
        ids = [it.question_id for it in BuiltBenchmark(Paths(sharded)).items("32k")]
        for i in range(3):
            before = server.request_count
            assert run_stage(sharded, "evaluate", *TINY, *openai_overrides(server), *args, f"eval.shard={i}/3") == 0
            assert server.request_count - before == sum(shard_of(q, 3) == i for q in ids)  # its own items only
            assert not (sharded / "data" / "predictions" / "fake-vl").exists()  # a shard writes no view
        assert server.request_count == 2 * n  # every item asked once over the three shards
        again = server.request_count
        assert run_stage(sharded, "evaluate", *TINY, *openai_overrides(server), *args, "eval.collect=true") == 0
        assert server.request_count == again  # collect sends nothing
    assert _tree(sharded, "data/predictions") == _tree(one, "data/predictions")
    for root in (one, sharded):
        assert run_stage(root, "judge", *TINY, *openai_overrides(server), *args) == 0
    assert _tree(sharded, "data/verdicts") == _tree(one, "data/verdicts")


def test_collect_with_a_shard_missing_names_the_gap_and_sends_nothing(tiny_copy, capsys):
    args = ("eval.lengths=[32k]",)
    with FakeOpenAIServer() as server:
        for i in (0, 1):
            assert run_stage(tiny_copy, "evaluate", *TINY, *openai_overrides(server), *args, f"eval.shard={i}/3") == 0
        sent = server.request_count
        assert run_stage(tiny_copy, "evaluate", *TINY, *openai_overrides(server), *args, "eval.collect=true") == 2
        assert server.request_count == sent
    err = capsys.readouterr().err
    assert "32k: " in err and "have no answer or failure in the results store" in err
    assert not (tiny_copy / "data" / "predictions" / "fake-vl").exists()
    assert run_stage(tiny_copy, "evaluate", *TINY, "model=chance", "eval.shard=0/2", "eval.collect=true") == 2
    assert "run it without eval.shard" in capsys.readouterr().err


def test_a_shard_does_not_wait_for_the_output_lock_of_the_system(tiny_copy):
    """Shards of one system run at once from one workspace: a shard writes no view, so it takes no
    output lock (another run holding data/predictions/<name>'s lock, here this test, does not stop it)."""
    import fcntl
    import threading

    from memlens.core.outputs import stage_outputs

    with FakeOpenAIServer() as server:
        overrides = (*TINY, *openai_overrides(server), "eval.lengths=[32k]")
        (out,) = stage_outputs("evaluate", tiny_copy, load_config(list(overrides), root=tiny_copy))
        out.lock.parent.mkdir(parents=True, exist_ok=True)
        result = []
        with open(out.lock, "a") as held:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)
            shard = threading.Thread(
                target=lambda: result.append(run_stage(tiny_copy, "evaluate", *overrides, "eval.shard=0/2")),
                daemon=True,
            )
            shard.start()
            shard.join(timeout=120)
            finished = not shard.is_alive()
            fcntl.flock(held.fileno(), fcntl.LOCK_UN)
        shard.join(timeout=120)
        assert finished, "the shard waited for the output lock of the system"
        assert result == [0] and server.request_count > 0
