"""An empty judge reply is retried by the HTTP client (require_content) instead of ending the verdict."""

from __future__ import annotations

from memlens.core.schema import Prediction, Question
from memlens.eval.judge.llm import LLMJudge
from tests.support.fake_openai import FakeOpenAIServer

VERDICT = 'The answer deserves 1 point.\n[Score]: 1 point\n[JSON]: {"answer_score": 1}'


def _pair() -> tuple[Question, Prediction]:
    q = Question(
        question_id="q1",
        question_type="information_extraction",
        question_subtype="entity",
        question="What year?",
        answer="1937",
        question_date="2024/05/31 (Fri) 07:58",
        old_answer=None,
    )
    p = Prediction(
        system="sys",
        mode="standard",
        length="32k",
        question_id="q1",
        question_type=q.question_type,
        question_subtype=q.question_subtype,
        ok=True,
        raw_prediction="1937",
        prediction="1937",
        error=None,
        completion_tokens=3,
    )
    return q, p


def _judge(server: FakeOpenAIServer, tmp_path, **kw) -> LLMJudge:
    return LLMJudge(
        "llm",
        base_url=server.base_url,
        model="judge",
        model_id="org/judge",
        concurrency=1,
        max_new_tokens=64,
        timeout_s=10,
        backoff_base_s=0.01,
        backoff_max_s=0.02,
        cache_path=str(tmp_path / "judge.sqlite"),
        progress=False,
        **kw,
    )


def test_empty_reply_is_retried_then_graded(tmp_path):
    replies = iter(["", "   ", VERDICT])
    with FakeOpenAIServer(responder=lambda body: next(replies)) as srv:
        [verdict] = _judge(srv, tmp_path, max_retries=2).judge_many([_pair()])
        assert srv.request_count == 3
    assert verdict.correct is True


def test_always_empty_reply_is_a_failure_not_a_zero(tmp_path):
    with FakeOpenAIServer(responder=lambda body: "") as srv:
        judge = _judge(srv, tmp_path, max_retries=1)
        [verdict] = judge.judge_many([_pair()])
        assert srv.request_count == 2
    assert verdict.correct is None and verdict.reason.startswith("judge failed:")
    assert "EmptyContentError" in verdict.reason and judge.last_stats.failed == 1
