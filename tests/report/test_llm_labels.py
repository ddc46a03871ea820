"""The LLM-labelled taxonomy (memlens.eval.report.llm_labels): reply parsing, caching against the
stand-in OpenAI server, and its agreement with the exact taxonomy computed by hand."""

from __future__ import annotations

import json

import pytest

from memlens.eval.report.llm_labels import (
    LabellerSettings,
    agreement,
    build_messages,
    label_answers,
    parse_label,
    read_labels,
    write_labels,
)
from tests.support.fake_openai import FakeOpenAIServer


def test_parse_label():
    assert parse_label('{"label": "grounding_failure"}') == "grounding_failure"
    assert parse_label('Thinking... {"label": "computation slip"}') == "computation_slip"
    assert parse_label("It is a stale-knowledge error, not unsupported answer") == "unsupported_answer"
    assert parse_label('{"label": "nonsense"}') is None and parse_label("") is None


def _errors(labels):
    return [
        {"system": "s", "length": "32k", "question_id": f"q{i}", "request_key": f"k{i}", "label": lb}
        for i, lb in enumerate(labels)
    ]


def test_agreement_by_hand():
    exact = ["grounding_failure", "grounding_failure", "stale_knowledge", "unsupported_answer", "untraceable"]
    llm = ["grounding_failure", "stale_knowledge", "stale_knowledge", "unsupported_answer", "computation_slip"]
    labels = {("s", "32k", f"q{i}", f"k{i}"): {"label": lb, "labeller": "m"} for i, lb in enumerate(llm)}
    a = agreement(_errors(exact), labels)
    # the untraceable answer is left out: 4 pairs, 3 agree; p_e = (2*1 + 1*2 + 1*1) / 16
    assert a["n"] == 4 and a["agreement"] == pytest.approx(0.75)
    assert a["kappa"] == pytest.approx((0.75 - 5 / 16) / (1 - 5 / 16))
    assert a["group_agreement"] == 1.0  # the one disagreement, grounding vs stale, is near-miss on both sides
    assert a["untraceable_llm"] == {"computation_slip": 1}
    g = {r["label"]: r for r in a["by_label"]}
    assert g["grounding_failure"]["recall"] == 0.5 and g["stale_knowledge"]["precision"] == 0.5
    # a label of another answer (another request key) is not compared
    assert agreement(_errors(exact), {("s", "32k", "q0", "other"): {"label": "wrong_evidence"}})["n"] == 0


def test_group_agreement_counts_near_and_total_miss():
    a = agreement(
        _errors(["grounding_failure", "unsupported_answer"]),
        {
            ("s", "32k", "q0", "k0"): {"label": "computation_slip"},
            ("s", "32k", "q1", "k1"): {"label": "grounding_failure"},
        },
    )
    assert a["agreement"] == 0.0 and a["group_agreement"] == 0.5


def test_label_answers_caches_and_retries_failures(tmp_path):
    def responder(body):
        text = body["messages"][-1]["content"]
        if "unparsable" in text:
            return "I cannot decide."
        return json.dumps({"label": "stale_knowledge" if "Outdated" in text else "unsupported_answer"})

    items = [
        ("a", build_messages("Q1?", "Red", "Blue", old_answer="Blue")),
        ("b", build_messages("Q2?", "5", "7")),
        ("c", build_messages("Q3?", "x", "unparsable")),
    ]
    cache = tmp_path / "labels.sqlite"
    with FakeOpenAIServer(responder=responder) as server:
        settings = LabellerSettings(base_url=server.base_url, model="labeller", api_key_env=None, max_retries=0)
        got = label_answers(settings, items, cache)
        assert got == {"a": "stale_knowledge", "b": "unsupported_answer", "c": None}
        first = server.request_count
        assert first == 3
        again = label_answers(settings, items, cache)
        assert again == got
        assert server.request_count == first + 1  # only the failed one is asked again


def test_labels_round_trip(tmp_path):
    rows = [{"question_id": "q2", "request_key": "k", "label": "wrong_evidence", "labeller": "m@prompt-1"}]
    write_labels(tmp_path, "sys", "standard", "64k", rows)
    assert read_labels(tmp_path) == {("sys", "64k", "q2", "k"): rows[0]}
