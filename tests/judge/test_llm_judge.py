"""The LLM judge against an OpenAI-compatible server started on 127.0.0.1 by the test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from memlens.core.schema import Prediction, Question
from memlens.eval.judge.deterministic import TASK_KEYS
from memlens.eval.judge.llm import JudgeCache, LLMJudge, cache_key, parse_verdict
from memlens.eval.judge.parsing import TRUNCATION_MARKER
from memlens.eval.judge.prompts import PROMPT_VERSION, TASKS, build_messages
from tests.support.fake_openai import FakeOpenAIServer, faults_by_key

REPO = Path(__file__).resolve().parents[2]
DATE = "2024/05/31 (Fri) 07:58"
STUDENT_RE = re.compile(r"<Student Answer>: (.*?)\n\n\[Scoring Rationale\]:\s*$", re.S)

# (type, subtype, answer, old_answer) -> one question per task key
KINDS = {
    "IE_Entity": ("information_extraction", "entity", "1937", None),
    "IE_PreviousInfo": ("information_extraction", "previnfo", "red", None),
    "MSR_Arithmetic": ("multi_session_reasoning", "arithmetic", "$260.00", None),
    "MSR_Counting": ("multi_session_reasoning", "counting", "4", None),
    "MSR_YesNo": ("multi_session_reasoning", "entity_resolution", "Yes", None),
    "TR_DurationComparison": ("temporal_reasoning", "duration_comparison", "A", None),
    "TR_OrderRanking": ("temporal_reasoning", "order_ranking", "(2)(1)(3)", None),
    "TR_DateExtraction": ("temporal_reasoning", "temporal_info_extraction", "2024/03/05", None),
    "KU_KnowledgeUpdate": ("knowledge_update", "", "strawberries", "tomatoes"),
    "AR_AnswerRefusal": ("answer_refusal", "", "NOT_MENTIONED", None),
}


def question(key: str, qid: str | None = None) -> Question:
    qt, st, ans, old = KINDS[key]
    return Question(
        question_id=qid or f"q_{key}",
        question_type=qt,
        question_subtype=st,
        question=f"What about {key}?",
        answer=ans,
        question_date=DATE,
        old_answer=old,
    )


def prediction(q: Question, text: str | None, ok: bool = True, system: str = "sys") -> Prediction:
    return Prediction(
        system=system,
        mode="standard",
        length="32k",
        question_id=q.question_id,
        question_type=q.question_type,
        question_subtype=q.question_subtype,
        ok=ok,
        raw_prediction=text,
        prediction=text,
        error=None if ok else "HTTP 500",
        completion_tokens=7,
    )


def student_answer(body: dict) -> str:
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    m = STUDENT_RE.search(user)
    assert m, user[-300:]
    return m.group(1)


def responder(body: dict) -> str:
    """Grades 'RIGHT' as 1 and anything else as 0, in the format the prompt asks for; markers in
    the student answer select other output styles."""
    ans = student_answer(body)
    s = 1 if "RIGHT" in ans else 0
    if "FMT_DESERVES" in ans:
        return f"The student commits to an answer. The answer deserves {s} point."
    if "FMT_SCORE" in ans:
        return f"Rationale without the sentence.\n[Score]: {s}"
    if "FMT_CLAMP" in ans:
        return 'The answer deserves 1 point.\n[Score]: 1 point\n[JSON]: {"answer_score": 2}'
    if "FMT_THINK" in ans:
        return f'<think>maybe "answer_score": 0</think>The answer deserves {s} points.\n[JSON]: {{"answer_score": {s}}}'
    if "FMT_GARBAGE" in ans:
        return "I am not able to grade this."
    pts = "point" if s == 1 else "points"
    return (
        f"The final answer is given. The answer deserves {s} {pts}.\n[Score]: {s} {pts}\n"
        f'[JSON]: {{"answer_score": {s}}}'
    )


def make_judge(server: FakeOpenAIServer, tmp_path: Path, **kw) -> LLMJudge:
    args = dict(
        base_url=server.base_url,
        model="judge-served",
        model_id="org/judge-model",
        api_key_env="MEMLENS_TEST_JUDGE_KEY",
        concurrency=4,
        max_new_tokens=512,
        temperature=0.0,
        timeout_s=10,
        max_retries=2,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
        cache_path=str(tmp_path / "cache" / "judge.sqlite"),
        progress=False,
    )
    args.update(kw)
    return LLMJudge("llm", **args)


@pytest.fixture()
def server():
    with FakeOpenAIServer(responder=responder) as s:
        yield s


# ------------------------------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    "text,expected",
    [
        ('... deserves 1 point.\n[Score]: 1 point\n[JSON]: {"answer_score": 1}', 1),
        ('[JSON]: {"answer_score": 0}', 0),
        ('{"answer_score":1}', 1),
        ("{'answer_score': 1}", 1),
        ('"answer_score": 1.0', 1),
        ('"answer_score": 3', 1),  # clamped
        ('"answer_score": -1', 0),  # clamped
        ("The answer deserves 0 points.", 0),
        ("The answer deserves **1** point", 1),
        ("[Score]: 1", 1),
        ("[score] : 0 points", 0),
        ('deserves 0 points ... [JSON]: {"answer_score": 1}', 1),  # JSON wins over the phrase
        ('{"answer_score": 0} then revised {"answer_score": 1}', 1),  # last JSON match
        ('<think>"answer_score": 0</think>[JSON]: {"answer_score": 1}', 1),
        ("no verdict here", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


# ------------------------------------------------------------------------------------------ prompts
def test_prompts_have_rules_examples_and_every_task_key():
    assert set(TASKS) == set(TASK_KEYS)
    for key in TASK_KEYS:
        msgs = build_messages(key, "Q?", "ref", "student", None)
        sys_text = msgs[0]["content"]
        assert msgs[0]["role"] == "system" and msgs[1]["role"] == "user"
        assert "circular reasoning" in sys_text.lower()
        assert "Example A" in sys_text and "Example B" in sys_text and "Example C" in sys_text
        assert TRUNCATION_MARKER in sys_text
        assert TASKS[key].title in sys_text and TASKS[key].criteria in sys_text
        assert '"answer_score"' in sys_text and "deserves" in sys_text
        assert msgs[1]["content"].rstrip().endswith("[Scoring Rationale]:")
    single = build_messages("MSR_Counting", "Q?", "4", "four", None, layout="single")
    assert len(single) == 1 and single[0]["role"] == "user" and "<Student Answer>: four" in single[0]["content"]


def test_request_contents_per_task_key(server, tmp_path):
    judge = make_judge(server, tmp_path)
    qs = [question(k) for k in TASK_KEYS]
    pairs = [(q, prediction(q, f"answer for {q.question_id} RIGHT")) for q in qs]
    verdicts = judge.judge_many(pairs)
    assert [v.correct for v in verdicts] == [True] * len(qs)
    assert [v.task_key for v in verdicts] == list(TASK_KEYS)
    assert server.request_count == len(qs)
    by_qid = {}
    for body in server.requests:
        assert body["model"] == "judge-served"
        assert body["temperature"] == 0.0 and body["max_tokens"] == 512
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
        user = body["messages"][-1]["content"]
        qid = re.search(r"<Student Answer>: answer for (\S+)", user).group(1)
        by_qid[qid] = body
    for key in TASK_KEYS:
        body = by_qid[f"q_{key}"]
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        assert TASKS[key].criteria in system
        for other in TASK_KEYS:
            if other != key:
                assert TASKS[other].criteria not in system
        assert f"<Question>: What about {key}?" in user
        if key == "AR_AnswerRefusal":  # the stored reference is ignored
            assert "<Standard Answer>: Insufficient information" in user and "NOT_MENTIONED" not in user
        else:
            assert f"<Standard Answer>: {KINDS[key][2]}" in user
        if key == "KU_KnowledgeUpdate":
            assert "<Old (Outdated) Answer>: tomatoes" in user
        else:
            assert "<Old (Outdated) Answer>" not in user


def test_verdict_format_variants(server, tmp_path):
    judge = make_judge(server, tmp_path)
    q = question("MSR_Counting")
    cases = {
        "FMT_DESERVES RIGHT": True,
        "FMT_DESERVES nope": False,
        "FMT_SCORE RIGHT": True,
        "FMT_SCORE nope": False,
        "FMT_CLAMP": True,
        "FMT_THINK RIGHT": True,
        "FMT_THINK nope": False,
        "FMT_GARBAGE RIGHT": None,
    }
    pairs = [(question("MSR_Counting", f"q{i}"), prediction(q, text)) for i, text in enumerate(cases)]
    pairs = [(qq, Prediction(**{**p.to_dict(), "question_id": qq.question_id})) for qq, p in pairs]
    verdicts = judge.judge_many(pairs)
    assert [v.correct for v in verdicts] == list(cases.values())
    bad = verdicts[-1]
    assert bad.reason.startswith("judge failed: unparsable verdict")
    assert bad.details["judge_text"] == "I am not able to grade this."


# ------------------------------------------------------------------------------------------ policy
def test_auto_zero_and_empty_make_no_request(server, tmp_path):
    judge = make_judge(server, tmp_path)
    q1, q2, q3 = question("IE_Entity", "a"), question("IE_Entity", "b"), question("IE_Entity", "c")
    long_text = " ".join(["word"] * 600)  # 600 words, 2999 chars: not truncated, auto-zero
    verdicts = judge.judge_many(
        [(q1, prediction(q1, long_text)), (q2, prediction(q2, "")), (q3, prediction(q3, None, ok=False))]
    )
    assert server.request_count == 0
    az, empty, failed = verdicts
    assert az.correct is False and az.auto_zero and az.reason == "auto-zero: 600 words"
    assert az.details["auto_zero"] is True and az.details["parsed_words"] == 600
    assert empty.correct is False and empty.reason == "empty prediction"
    assert failed.correct is None and failed.reason.startswith("prediction failed")
    assert judge.last_stats.auto_zero == 1 and judge.last_stats.requests == 0


def test_long_output_is_tail_truncated(server, tmp_path):
    judge = make_judge(server, tmp_path)
    q = question("MSR_Counting")
    text = " ".join(["step"] * 1400) + " so the answer is RIGHT"  # ~7000 chars, tail ~420 words
    (v,) = judge.judge_many([(q, prediction(q, text))])
    assert v.correct is True and v.truncated and not v.auto_zero
    sent = student_answer(server.requests[0])
    assert sent.startswith(TRUNCATION_MARKER + "\n") and sent.endswith("so the answer is RIGHT")
    assert len(sent) < 0.35 * len(text)


def test_identical_items_are_sent_once(server, tmp_path):
    judge = make_judge(server, tmp_path, cache_path=None)
    q = question("TR_DurationComparison")
    p = prediction(q, "A RIGHT")
    verdicts = judge.judge_many([(q, p), (q, p), (q, p)])
    assert [v.correct for v in verdicts] == [True] * 3 and server.request_count == 1


# ------------------------------------------------------------------------------------------ cache
def test_cache_hit_means_zero_requests(tmp_path):
    qs = [question(k) for k in TASK_KEYS]
    pairs = [(q, prediction(q, f"{q.question_id} {'RIGHT' if i % 2 else 'wrong'}")) for i, q in enumerate(qs)]
    with FakeOpenAIServer(responder=responder) as s1:
        first = make_judge(s1, tmp_path).judge_many(pairs)
        assert s1.request_count == len(qs)
    cache_file = tmp_path / "cache" / "judge.sqlite"
    assert len(JudgeCache(cache_file)) == len(qs)
    with FakeOpenAIServer(responder=responder) as s2:
        judge = make_judge(s2, tmp_path)
        again = judge.judge_many(pairs)
        assert s2.request_count == 0
        assert judge.last_stats.cache_hits == len(qs) and judge.last_stats.requests == 0
    assert [v.to_dict() for v in again] == [v.to_dict() for v in first]
    # a different prompt input (prediction), judge model id or prompt version is a miss
    with FakeOpenAIServer(responder=responder) as s3:
        make_judge(s3, tmp_path, model_id="other/judge").judge_many(pairs[:2])
        assert s3.request_count == 2
        q = qs[0]
        make_judge(s3, tmp_path).judge_many([(q, prediction(q, "changed RIGHT"))])
        assert s3.request_count == 3
    k1 = cache_key(
        prompt_version=PROMPT_VERSION,
        model_id="m",
        task_key="IE_Entity",
        question="q",
        reference="r",
        old_answer=None,
        prediction="p",
    )
    k2 = cache_key(
        prompt_version="other",
        model_id="m",
        task_key="IE_Entity",
        question="q",
        reference="r",
        old_answer=None,
        prediction="p",
    )
    assert k1 != k2 and len(k1) == 64


def test_failed_calls_are_failures_not_zeros_and_not_cached(tmp_path):
    qs = [question("IE_Entity", "ok1"), question("IE_Entity", "bad1"), question("IE_Entity", "flaky")]
    pairs = [
        (qs[0], prediction(qs[0], "ok1 RIGHT")),
        (qs[1], prediction(qs[1], "bad1 RIGHT")),
        (qs[2], prediction(qs[2], "flaky RIGHT")),
    ]
    faults = faults_by_key({"bad1 RIGHT": ["500"] * 10, "flaky RIGHT": ["503", "429"]})
    with FakeOpenAIServer(responder=responder, faults=faults, retry_after_s=0) as s:
        judge = make_judge(s, tmp_path, max_retries=2)
        ok, bad, flaky = judge.judge_many(pairs)
        assert ok.correct is True
        assert bad.correct is None and bad.reason.startswith("judge failed:") and "500" in bad.reason
        assert flaky.correct is True  # retried with backoff, then succeeded
        assert s.request_count == 1 + 3 + 3
        assert judge.last_stats.failed == 1
    with FakeOpenAIServer(responder=responder) as s2:  # the failure was not cached: it is retried
        again = make_judge(s2, tmp_path).judge_many(pairs)
        assert s2.request_count == 1 and [v.correct for v in again] == [True, True, True]


def test_key_from_env_is_sent_but_never_stored(server, tmp_path, monkeypatch):
    secret = "sk-test-7f3a9c1e5b2d"
    monkeypatch.setenv("MEMLENS_TEST_JUDGE_KEY", secret)
    judge = make_judge(server, tmp_path)
    q = question("KU_KnowledgeUpdate")
    verdicts = judge.judge_many([(q, prediction(q, "strawberries RIGHT"))])
    assert server.request_headers[0]["authorization"] == f"Bearer {secret}"
    dumped = json.dumps([v.to_dict() for v in verdicts]) + json.dumps(judge.describe())
    assert secret not in dumped and "MEMLENS_TEST_JUDGE_KEY" in json.dumps(judge.describe())
    for f in (tmp_path / "cache").iterdir():
        assert secret.encode() not in f.read_bytes(), f


def test_config_file_builds_the_judge(tmp_path):
    cfg = OmegaConf.load(REPO / "conf" / "judge" / "llm.yaml")
    assert cfg.name == "llm" and cfg.model == "qwen3-235b-judge"
    assert cfg.model_id == "Qwen/Qwen3-VL-235B-A22B-Instruct" and cfg.api_key_env == "MEMLENS_JUDGE_API_KEY"
    assert cfg.temperature == 0.0 and cfg.extra_body.chat_template_kwargs.enable_thinking is False
    assert cfg.prompt_version == PROMPT_VERSION
    judge = instantiate(cfg, _convert_="all")
    assert isinstance(judge, LLMJudge) and judge.name == "llm"
    judge.set_root(tmp_path)
    assert judge.resolved_cache_path() == tmp_path / ".memlens_cache" / "judge.sqlite"
    with pytest.raises(Exception, match="prompt_version"):
        LLMJudge(prompt_version="old-version")


def test_judge_cache_commits_every_result(tmp_path):
    """A judge process killed at any point loses no judgment it had received: each put() is committed
    (another connection sees it at once, without close() or flush())."""
    path = tmp_path / "judge.sqlite"
    writer = JudgeCache(path)
    for i in range(3):
        writer.put(f"k{i}", 1, "[Score]: 1 point", model_id="m", prompt_version="v", task_key="IE_Entity")
        reader = JudgeCache(path)
        assert set(reader.get_many([f"k{j}" for j in range(3)])) == {f"k{j}" for j in range(i + 1)}
        reader.conn.close()
    writer.conn.close()  # no close(): like a kill -9
    assert len(JudgeCache(path)) == 3


def test_judge_cache_reads_a_file_written_before_the_shared_setup_and_refuses_a_non_database(tmp_path):
    """The judge cache opens through the request cache's SQLite set-up: an existing judge cache (the
    judgments table written by plain sqlite3) is read as it is, in WAL mode; a file that is not a
    database is an error naming it, left untouched."""
    import sqlite3

    from memlens.core.errors import ConfigError

    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)  # the layout of an existing cache, default (rollback) journal
    conn.execute(JudgeCache._SCHEMA)
    conn.execute(
        "INSERT INTO judgments VALUES (?,?,?,?,?,?,?)", ("k", 1, "[Score]: 1 point", "m", "v", "IE_Entity", 0.0)
    )
    conn.commit()
    conn.close()
    cache = JudgeCache(path)
    assert cache.get_many(["k", "x"]) == {"k": (1, "[Score]: 1 point")}
    assert cache.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.close()
    bad = tmp_path / "notes.sqlite"
    bad.write_bytes(b"these are my notes, not a database" * 100)
    with pytest.raises(ConfigError, match=r"notes\.sqlite: cannot open the judge cache .*judge\.cache_path"):
        JudgeCache(bad)
    assert bad.read_bytes() == b"these are my notes, not a database" * 100
