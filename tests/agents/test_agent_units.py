"""The agents' parsers, fusion, chunking and the role-stripped view, on hand-made inputs."""

from __future__ import annotations

import hashlib

import pytest

from memlens.core.items import EvalItem, HistorySession
from memlens.core.schema import Question, Turn
from memlens.eval.agents.common import answer_line, pack
from memlens.eval.agents.hybrid import rrf
from memlens.eval.agents.m3_agent import parse_action, parse_memory_json
from memlens.eval.agents.memagent import chunk_text
from memlens.eval.agents.view import ImageStore, build_view


def test_answer_line_takes_the_last_answer_line():
    assert answer_line("thinking...\nAnswer: 12\nmore\nAnswer: **B**") == "B"
    assert answer_line("**Answer:** 2024/05/01") == "2024/05/01"
    assert answer_line("  just this  ") == "just this"


def test_m3_agent_protocol_parsers():
    assert parse_action("Action: [Search]\nContent: the receipt total") == ("search", "the receipt total")
    assert parse_action("I think.\naction: [ANSWER] content: 42") == ("answer", "42")
    assert parse_action("no action at all") == ("answer", "no action at all")
    got = parse_memory_json('sure: {"video_descriptions": ["[S001] a", ""], "high_level_conclusions": "c"}')
    assert got == (["[S001] a"], ["c"])
    assert parse_memory_json("not json {") is None


def test_rrf_sums_reciprocal_ranks():
    fused = rrf([["a", "b", "c"], ["b", "a"], ["c"]], k=60)
    assert [d for d, _ in fused] == ["a", "b", "c"]  # a and b tie (ids break ties)
    score = dict(fused)
    assert abs(score["a"] - (1 / 61 + 1 / 62)) < 1e-12 and abs(score["c"] - (1 / 63 + 1 / 61)) < 1e-12


def test_pack_keeps_what_fits_in_order():
    assert pack(["aaaa", "bb", "cccccc", "d"], 7, len) == ([0, 1, 3], 7)


def test_chunks_cover_the_text_at_token_boundaries():
    from memlens.construction.assemble.tokens import load_tokenizer

    tok = load_tokenizer("minilm")
    text = " ".join(f"word{i}" for i in range(700))
    chunks = chunk_text(text, 100, tok)
    assert "".join(chunks) == text
    assert all(len(tok.encode(c, add_special_tokens=False).ids) <= 101 for c in chunks)
    assert len(chunks) == -(-len(tok.encode(text, add_special_tokens=False).ids) // 100)


def test_the_view_strips_roles_orders_by_date_and_names_images_by_content(tmp_path):
    needle = tmp_path / "release_images" / "needle_images"
    needle.mkdir(parents=True)
    (needle / "abc.png").write_bytes(b"pixels")
    q = Question("q1", "information_extraction", "entity", "What?", "x", "2024/06/01 (Sat) 10:00")
    sessions = [
        HistorySession(
            "answer_1",
            "2024/05/02 (Thu) 09:00",
            [Turn("user", "look <image>", ["needle_images/abc.png"], True)],
            True,
            "d1",
        ),
        HistorySession("haystack_7", "2024/05/01 (Wed) 09:00", [Turn("assistant", "hello")], False, "d2"),
    ]
    item = EvalItem(q, "32k", sessions, lambda i: tmp_path / "release_images" / i)
    view = build_view(item, ImageStore(tmp_path / "store"))
    assert [s.session_id for s in view.sessions] == ["S001", "S002"]
    assert [view.real(s.session_id) for s in view.sessions] == ["haystack_7", "answer_1"]
    im = view.sessions[1].turns[0].images[0]
    assert im.sha256 == hashlib.sha256(b"pixels").hexdigest() and im.path.name == f"{im.sha256}.png"
    assert "needle" not in str(im.path) and im.path.read_bytes() == b"pixels"
    shown = repr(view.sessions) + view.question
    for leak in ("answer_1", "haystack_7", "needle", "has_answer", "is_evidence"):
        assert leak not in shown


def test_the_call_cache_keeps_a_committed_call_and_refuses_a_file_that_is_not_one(tmp_path):
    from memlens.core.errors import ConfigError
    from memlens.eval.agents.llm import CallCache

    path = tmp_path / "calls.sqlite"
    CallCache(path).put("k", {"text": "Answer: 3"})  # committed at once: no close needed
    assert CallCache(path).get("k") == {"text": "Answer: 3"} and len(CallCache(path)) == 1
    bad = tmp_path / "notes.sqlite"
    bad.write_bytes(b"not a database " * 200)
    with pytest.raises(ConfigError, match=r"notes\.sqlite: cannot open the agent call cache"):
        CallCache(bad)
    assert bad.read_bytes() == b"not a database " * 200
