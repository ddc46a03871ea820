"""One adapter cache for the memory agents and ``memlens diagnose``: what one computes, the other
reuses (zero adapter calls), whichever runs first; older agent-side entries are still read."""

from __future__ import annotations

import pytest

from memlens.core.config import Paths
from memlens.core.errors import ConfigError
from memlens.eval.memory.adapters import (
    LEGACY_CACHE_DIRS,
    OracleCaptionAdapter,
    adapter_cache_dir,
    build_adapter,
    open_adapter,
)
from memlens.eval.memory.cache import DescriptionCache, ImageInput
from tests.agents.agent_support import agent_responder, run_evaluate
from tests.conftest import TINY, run_stage
from tests.support.fake_openai import FakeOpenAIServer

DIAGNOSE = (
    *TINY,
    "tracking.enabled=false",
    "memory.adapters=[oracle_caption]",
    "memory.retrievers=[bm25]",
    "memory.sample=all",  # the questions the agent answers (the default sample leaves out answer refusal)
)


@pytest.fixture()
def described(monkeypatch):
    """The images the oracle_caption adapter computes (not served from the cache), by run."""
    calls: list[str] = []
    real = OracleCaptionAdapter._describe

    def counting(self, images):
        calls.extend(im.sha256 for im in images)
        return real(self, images)

    monkeypatch.setattr(OracleCaptionAdapter, "_describe", counting)
    return calls


def _agent(root, server) -> int:
    return run_evaluate(root, server, "memory-t1", "eval.lengths=[32k]", "model.adapter=oracle_caption")


def _diagnose(root) -> int:
    return run_stage(root, "diagnose", *DIAGNOSE, "memory.lengths=[32k]")


@pytest.mark.parametrize("first", ["diagnose", "agent"])
def test_what_one_path_describes_the_other_reuses(tiny_copy, described, first):
    root = tiny_copy
    with FakeOpenAIServer(responder=agent_responder) as server:
        steps = [lambda: _diagnose(root), lambda: _agent(root, server)]
        if first == "agent":
            steps.reverse()
        assert steps[0]() == 0
        computed = set(described)
        assert computed, "the first run describes the images of the histories"
        entries = sorted(adapter_cache_dir(Paths(root).cache).rglob("*.json"))
        assert len(entries) == len(computed)
        described.clear()
        assert steps[1]() == 0
        assert described == []  # every image the second path needed was in the one cache
    assert sorted(adapter_cache_dir(Paths(root).cache).rglob("*.json")) == entries
    assert not (Paths(root).cache / "agents" / "adapters").exists()


def test_entries_of_the_older_agent_cache_are_read_and_copied_forward(tmp_path):
    sha = "a" * 64
    img = tmp_path / "x.png"
    img.write_bytes(b"not read: the entry is cached")
    with pytest.raises(ConfigError, match="needs a built benchmark"):
        open_adapter("oracle_caption", {}, cache_root=tmp_path, benchmark=None)
    truth = {sha: {"text": "Foxglove"}}
    legacy = build_adapter("oracle_caption", cache_dir=tmp_path / LEGACY_CACHE_DIRS[0], truth_of=truth)
    (old,) = legacy.describe_images([ImageInput(sha, img)])
    assert legacy.stats["calls"] == 1
    shared = build_adapter(
        "oracle_caption",
        cache_dir=adapter_cache_dir(tmp_path),
        fallback_dirs=[tmp_path / LEGACY_CACHE_DIRS[0]],
        truth_of={},  # would fail: no ground truth for the image
    )
    assert shared.describe_images([ImageInput(sha, img)]) == [old]
    assert shared.stats == {"calls": 0, "hits": 1}
    assert DescriptionCache(adapter_cache_dir(tmp_path), shared.id).get(sha) == old  # now in the one cache


def test_the_key_names_what_changes_the_text():
    """An OCR score threshold other than the default reads other text: another id, another entry."""
    default, lower = build_adapter("ocr"), build_adapter("ocr", min_score=0.3)
    assert default.id.endswith("/v1") and "-s" not in default.id.split("/")[1]
    assert lower.id != default.id and "-s0.3" in lower.id
