"""The judge self-test: decoys and cases from the build, figures, reports, MLflow, any judge."""

from __future__ import annotations

import contextlib
import json
import re
from types import SimpleNamespace

import pytest

from memlens.core.config import Paths, load_config
from memlens.core.tasks import KU_UPDATE, TASK_KEYS
from memlens.eval.benchmark import open_benchmark
from memlens.eval.judge.decoys import benchmark_facts, build_facts, neighbours, same_value, value_kind
from memlens.eval.judge.selfcases import PATTERNS, question_cases
from memlens.eval.judge.selftest import build_cases, markdown, metrics, summarise
from tests.conftest import TINY, run_stage


@pytest.fixture(scope="module")
def tiny_bench(tiny_project):
    cfg = load_config(list(TINY), root=tiny_project)
    return open_benchmark(cfg, Paths.from_cfg(cfg, root=tiny_project))


@pytest.fixture(scope="module")
def tiny_cases(tiny_bench):
    return build_cases(tiny_bench)


def test_every_question_gets_decoys_from_the_build(tiny_bench):
    facts = benchmark_facts(tiny_bench)
    assert {f.key for f in facts} == set(TASK_KEYS)
    sources = {d.source for f in facts for d in f.decoys}
    # the build's own decoys, not only generic ones
    assert {"ku_old", "history_image", "other_option", "other_order", "other_polarity", "guess"} <= sources
    for f in facts:
        for d in f.decoys:
            assert not same_value(f.kind, str(f.question.answer), d.value), (f.question.question_id, d)
        if f.key == KU_UPDATE and f.question.old_answer:
            assert any(d.source == "ku_old" and d.value == f.question.old_answer for d in f.decoys)


def test_history_image_decoys_rerun_the_derivation_on_other_images(tiny_bench):
    """Each ``history_image`` decoy is what the question's derivation gives with one evidence image
    replaced by another image of the same family and kind that the question's history shows."""
    from memlens.construction.abilities.derive import derive

    src = tiny_bench.source
    length = src.lengths()[0]
    history = {i.question_id: set(i.image_ids) for i in src.items(length)}
    checked = 0
    for f in benchmark_facts(tiny_bench):
        q = f.question
        decoys = {d.value for d in f.of("history_image")}
        if not decoys:
            continue
        ids = q.details["image_ids"]
        truths = [src.images[i].truth for i in ids]
        ctx = {"evidence_dates": [e.date for e in q.evidence]}
        found = set()
        for k, ev in enumerate(ids):
            kind = (src.images[ev].family, src.images[ev].truth.get("kind", ""))
            for other in history[q.question_id] - set(ids):
                rec = src.images[other]
                if (rec.family, rec.truth.get("kind", "")) == kind:
                    alt = list(truths)
                    alt[k] = rec.truth
                    with contextlib.suppress(KeyError, IndexError, ValueError, TypeError):
                        found.add(derive(q.details["derivation"], alt, ctx))
        assert decoys <= found, (q.question_id, decoys - found)
        checked += len(decoys)
    assert checked > 0


def test_neighbours_keep_the_reference_format():
    assert neighbours("date", "2024/03/05")[:2] == ["2024/03/06", "2024/03/04"]
    assert "2024/05/03" in neighbours("date", "2024/03/05")  # day and month swapped
    assert neighbours("time", "19:45")[0] == "20:45"
    assert neighbours("amount", "$9.75")[0] == "$10.75"
    assert neighbours("amount", "1,508.00 DKK")[0] == "1,509.00 DKK"
    assert neighbours("integer", "0") == ["1", "2"]
    assert value_kind("IE_Entity", "AD72 KPB") == "code" and value_kind("IE_Entity", "0897") == "code"


def test_cases_are_labelled_patterns_of_every_task_key(tiny_cases):
    patterns = {c.pattern for c in tiny_cases}
    assert patterns <= set(PATTERNS)
    for key in TASK_KEYS:
        mine = [c for c in tiny_cases if c.task_key == key]
        assert any(c.expected for c in mine) and any(not c.expected for c in mine), key
    assert len({c.case_id for c in tiny_cases}) == len(tiny_cases)
    # the patterns are all there
    for p in ("wrong:hedge", "wrong:candidates", "wrong:not_pair", "wrong:retraction", "wrong:denial", "wrong:bound"):
        assert p in patterns
    for p in ("wrong:ku_reverse", "wrong:ku_old", "wrong:yes_and_no", "right:option_text", "right:event_names"):
        assert p in patterns
    for p in ("right:numbered_list", "right:format", "right:refusal", "right:not_pair", "right:retraction"):
        assert p in patterns


def test_cases_are_deterministic_and_depend_on_the_seed(tiny_bench, tiny_cases):
    assert build_cases(tiny_bench) == tiny_cases
    other = build_cases(tiny_bench, seed=1)
    assert {(c.task_key, c.pattern) for c in other} == {(c.task_key, c.pattern) for c in tiny_cases}
    assert {c.prediction for c in other} != {c.prediction for c in tiny_cases}


def test_a_stratified_sample_keeps_every_pattern(tiny_bench, tiny_cases):
    small = build_cases(tiny_bench, max_cases=len(tiny_cases) // 4)
    assert len(small) < len(tiny_cases) // 2
    assert {(c.task_key, c.pattern) for c in small} == {(c.task_key, c.pattern) for c in tiny_cases}


def test_an_answer_refusal_question_gets_refusals_right_and_guesses_wrong(tiny_bench):
    q = next(q for q in tiny_bench.questions.values() if q.question_type == "answer_refusal")
    cases = question_cases(build_facts(q))
    assert all(c.expected for c in cases if c.pattern == "right:refusal")
    assert any(c.pattern == "wrong:refusal_then_guess" for c in cases)


def _verdicts(flags):
    return [SimpleNamespace(correct=f) for f in flags]


def test_summary_figures(tiny_cases):
    accept_all = summarise(tiny_cases, _verdicts([True] * len(tiny_cases)))
    assert accept_all["overall"]["false_accept"] == 1.0 and accept_all["overall"]["false_reject"] == 0.0
    assert not accept_all["passed"]
    reject_all = summarise(tiny_cases, _verdicts([False] * len(tiny_cases)))
    assert reject_all["overall"]["false_reject"] == 1.0 and reject_all["overall"]["false_accept"] == 0.0
    perfect = summarise(tiny_cases, _verdicts([c.expected for c in tiny_cases]))
    assert perfect["passed"] and perfect["overall"]["accuracy"] == 1.0
    failed = summarise(tiny_cases, _verdicts([None] + [c.expected for c in tiny_cases[1:]]))
    assert failed["overall"]["failed"] == 1 and not failed["passed"]  # a judge failure is not a verdict
    m = metrics(perfect)
    assert m["passed"] == 1.0 and all("/" not in k for k in m)
    assert any(k.startswith("err__KU_KnowledgeUpdate__wrong_ku_reverse") for k in m)


def test_deterministic_judge_passes_its_selftest_and_reports(tiny_copy):
    assert run_stage(tiny_copy, "judge", "--selftest", *TINY) == 0
    out = tiny_copy / "reports" / "judge_selftest"
    report = json.loads((out / "deterministic.json").read_text())
    assert report["passed"], {k: v["accuracy"] for k, v in report["task_keys"].items()}
    assert set(report["task_keys"]) == set(TASK_KEYS) and not report["missing_task_keys"]
    assert report["version"] and report["judge_key"] and report["dataset_sha256"]
    md = (out / "deterministic.md").read_text()
    assert "| KU_KnowledgeUpdate |" in md and "wrong:ku_reverse" in md
    rows = [json.loads(line) for line in (out / "deterministic.cases.jsonl").read_text().splitlines()]
    assert len(rows) == report["overall"]["n"] and {"expected", "correct", "prediction"} <= set(rows[0])
    # one MLflow run with the figures, kept apart from the leaderboard's evaluation runs
    import mlflow

    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tiny_copy / 'mlflow.db'}")
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    st = [r for r in runs if r.data.tags.get("memlens.role") == "judge_selftest"]
    assert len(st) == 1 and st[0].data.metrics["passed"] == 1.0
    assert "false_accept__KU_KnowledgeUpdate" in st[0].data.metrics
    assert {a.path for a in client.list_artifacts(st[0].info.run_id)} >= {"deterministic.json", "deterministic.md"}
    # a second run updates the same MLflow run
    assert run_stage(tiny_copy, "judge", "--selftest", *TINY) == 0
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    assert len([r for r in runs if r.data.tags.get("memlens.role") == "judge_selftest"]) == 1


def test_selftest_flag_only_for_the_judge(tiny_project, capsys):
    assert run_stage(tiny_project, "evaluate", "--selftest", *TINY) == 2
    assert "--selftest is only for: judge" in capsys.readouterr().err


_STD_RE = re.compile(r"<Standard Answer>: (.*?)\n")
_STUDENT_RE = re.compile(r"<Student Answer>: (.*?)\n\n\[Scoring Rationale\]:\s*$", re.S)


def _lenient_judge(body: dict) -> str:
    """A stand-in LLM judge that accepts any answer containing the standard answer's text."""
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    std = _STD_RE.search(user).group(1).strip().lower()
    ans = _STUDENT_RE.search(user).group(1).lower()
    s = int(std in ans or ("insufficient" in std and "n't" in ans))
    return f'The answer deserves {s} point.\n[JSON]: {{"answer_score": {s}}}'


def test_llm_judge_selftest_through_an_openai_compatible_endpoint(tiny_copy):
    from tests.support.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(responder=_lenient_judge) as server:
        args = [
            "judge=llm",
            f"judge.base_url={server.base_url}",
            "judge.concurrency=4",
            "judge.max_retries=0",
            "+selftest.max_cases=400",
            *TINY,
        ]
        assert run_stage(tiny_copy, "judge", "--selftest", *args) == 0
        sent = len(server.requests)
        assert 0 < sent <= 400
        report = json.loads((tiny_copy / "reports" / "judge_selftest" / "llm.json").read_text())
        # the lenient judge accepts hedges and the old value: the self-test measures it
        assert report["overall"]["false_accept"] > 0.2 and not report["passed"]
        assert report["patterns"]["KU_KnowledgeUpdate"]["wrong:ku_both"]["false_accept"] == 1.0
        assert report["max_cases"] == 400 and report["overall"]["failed"] == 0
        # the official prompts went out (the judge's own protocol, not a self-test one)
        assert "<Standard Answer>:" in server.requests[0]["messages"][-1]["content"]
        # the LLM judge's cache answers a second run: no request is sent again
        assert run_stage(tiny_copy, "judge", "--selftest", *args) == 0
        assert len(server.requests) == sent
    md = markdown(report, report)
    assert "`llm`" in md and "FAILED" in md


@pytest.mark.parametrize("ref", ["2024/02/30", "24:99", "$", "0", "", "x" * 300, "¥1,280", "3D", "(1)"])
@pytest.mark.parametrize(
    ("qtype", "subtype"),
    [
        ("information_extraction", "entity"),
        ("multi_session_reasoning", "arithmetic"),
        ("temporal_reasoning", "temporal_info_extraction"),
        ("temporal_reasoning", "order_ranking"),
        ("knowledge_update", ""),
    ],
)
def test_odd_references_still_give_labelled_cases(ref, qtype, subtype):
    from memlens.core.schema import Question

    q = Question.unchecked(
        question_id="q_odd",
        question_type=qtype,
        question_subtype=subtype,
        question="Which? (1) a; (2) b.",
        answer=ref,
        question_date="2024/05/31 (Fri) 07:58",
        old_answer="an older one" if qtype == "knowledge_update" else None,
        evidence=[],
        details={},
    )
    cases = question_cases(build_facts(q))
    assert cases and all(c.pattern in PATTERNS for c in cases)
