"""The LLM judge: an OpenAI-compatible chat model grades each prediction (paper section 3).

Policy (paper "LLM-as-Judge scoring"; official judge, facts §4):

* Routing to the ten task keys (:func:`memlens.eval.judge.deterministic.task_key`); the prompt is the
  base rules + three universal worked examples + the task criteria and examples
  (:mod:`memlens.eval.judge.prompts`), temperature 0, thinking off through ``extra_body``.
* Pre-processing with :func:`memlens.eval.judge.parsing.prepare_prediction`: tail truncation of long
  outputs (the judge sees the last 30% after a marker) and **auto-zero** (> ``max_words`` words
  after truncation: score 0, no call). An empty prediction also scores 0 without a call.
* AR questions are graded against the literal standard answer ``Insufficient information``; KU
  prompts carry the outdated answer line when the question has one.
* The verdict is parsed from the judge's text: the ``"answer_score": N`` JSON field, else
  "deserves N point(s)", else "[Score]: N"; the *last* match of the first pattern that matches
  wins (the official judge takes the first) and N is clamped to 0/1. Unparsable text is a
  failure, not a 0.
* Every successful call is stored in a SQLite cache (WAL) keyed by the SHA-256 of (prompt
  version, judge model id, task key, question, standard answer shown, old answer, prediction text
  sent). Re-judging the same predictions sends no request. Failures are never cached.
* Failed calls (after the client's retries with backoff) and unparsable verdicts give
  ``Verdict(correct=None, reason="judge failed: ...")``: reported as failures, not as wrong
  answers. A prediction whose own request failed gives ``correct=None`` as well.

The API key is read by the client from the environment variable named by ``api_key_env``; it is
never stored in the cache, the verdicts, the manifest or :meth:`LLMJudge.describe`.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import logging
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import model_validator

from memlens.core.errors import ConfigError
from memlens.core.http import BackoffSettings
from memlens.core.registry import component
from memlens.core.reqcache import open_sqlite
from memlens.core.schema import Prediction, Question, Verdict
from memlens.core.settings import (
    NonNegFloat,
    NonNegInt,
    PositiveFloat,
    PositiveInt,
    SafeName,
    Targeted,
    configured,
    operational,
    reject_api_key,
)
from memlens.eval.judge import deterministic as det
from memlens.eval.judge.judges import failed_verdict, verdict_for
from memlens.eval.judge.official import official_diagnostics
from memlens.eval.judge.parsing import parse_model_output, prepare_prediction
from memlens.eval.judge.prompts import PROMPT_VERSION, build_messages

log = logging.getLogger(__name__)

__all__ = ["LLMJudge", "JudgeCache", "parse_verdict", "cache_key", "official_diagnostics", "JudgeRunStats"]


# ---------------------------------------------------------------------------------------- parsing
_JSON_SCORE_RE = re.compile(r"""["']?answer_score["']?\s*[:=]\s*["']?\s*(-?\d+)(?:\.\d+)?""", re.I)
_DESERVES_RE = re.compile(r"deserves\s*[*_]*\s*(-?\d+)\s*[*_]*\s*points?", re.I)
_SCORE_LINE_RE = re.compile(r"\[\s*score\s*\]\s*:?\s*[*_]*\s*(-?\d+)", re.I)


def parse_verdict(text: str | None) -> int | None:
    """0/1 score from a judge's text, or None when no score can be found.

    Tried in order: the JSON field ``"answer_score": N``, the phrase "deserves N point(s)", the line
    "[Score]: N". Within the first pattern that matches, the last occurrence wins. N is clamped to
    0..1. A ``<think>`` block (thinking left on by mistake) is removed first.
    """
    if not text:
        return None
    body = parse_model_output(text) or text
    for rx in (_JSON_SCORE_RE, _DESERVES_RE, _SCORE_LINE_RE):
        found = rx.findall(body)
        if found:
            return min(1, max(0, int(found[-1])))
    return None


def cache_key(
    *,
    prompt_version: str,
    model_id: str,
    task_key: str,
    question: str,
    reference: str,
    old_answer: str | None,
    prediction: str,
) -> str:
    """SHA-256 of everything that determines a judge call's prompt and model."""
    payload = json.dumps(
        [prompt_version, model_id, task_key, question, reference, old_answer or "", prediction],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------- cache
class JudgeCache:
    """SQLite store of judge calls: one row per cache key with the score and the judge's raw text."""

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS judgments (
        key TEXT PRIMARY KEY,
        score INTEGER NOT NULL,
        judge_text TEXT NOT NULL,
        model_id TEXT NOT NULL,
        prompt_version TEXT NOT NULL,
        task_key TEXT NOT NULL,
        created_at REAL NOT NULL
    )"""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        # the same set-up as the construction request cache (the judgments table is unchanged, so
        # existing judge caches are read as they are)
        self.conn = open_sqlite(self.path, self._SCHEMA, what="judge cache", hint="delete it or set judge.cache_path")
        self._pending: list[tuple] = []

    def get_many(self, keys: Sequence[str]) -> dict[str, tuple[int, str]]:
        out: dict[str, tuple[int, str]] = {}
        uniq = list(dict.fromkeys(keys))
        for i in range(0, len(uniq), 500):
            chunk = uniq[i : i + 500]
            q = f"SELECT key, score, judge_text FROM judgments WHERE key IN ({','.join('?' * len(chunk))})"
            for k, s, t in self.conn.execute(q, chunk):
                out[k] = (int(s), t)
        return out

    def put(
        self,
        key: str,
        score: int,
        judge_text: str,
        *,
        model_id: str,
        prompt_version: str,
        task_key: str,
        flush_every: int = 1,
    ) -> None:
        """Store one judgment; committed at once by default (WAL), so a killed judge run re-sends
        nothing it had received (``flush_every`` > 1 batches commits for bulk imports)."""
        self._pending.append((key, int(score), judge_text, model_id, prompt_version, task_key, time.time()))
        if len(self._pending) >= flush_every:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        with self.conn:
            self.conn.executemany("INSERT OR REPLACE INTO judgments VALUES (?,?,?,?,?,?,?)", rows)

    def __len__(self) -> int:
        self.flush()
        return int(self.conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.conn.close()


# ---------------------------------------------------------------------------------------- judge
@dataclass
class JudgeRunStats:
    """Counts of the last :meth:`LLMJudge.judge_many` call."""

    items: int = 0
    cache_hits: int = 0
    requests: int = 0  # distinct judge calls sent (after de-duplication)
    auto_zero: int = 0
    empty: int = 0
    failed: int = 0  # judge calls that failed or were unparsable
    prediction_failed: int = 0
    elapsed_s: float = 0.0
    attempts: int = 0


@dataclass
class _Pending:
    index: int
    key: str
    task_key: str
    messages: list[dict] = field(repr=False)


class LLMJudgeSettings(Targeted, BackoffSettings):
    """``judge`` with ``_target_: memlens.eval.judge.llm.LLMJudge`` (see ``conf/judge/llm.yaml``).
    ``prompt_version`` must match :data:`memlens.eval.judge.prompts.PROMPT_VERSION` (checked when the
    judge is built)."""

    name: SafeName
    base_url: str = operational("http://127.0.0.1:8001/v1")
    model: str = "qwen3-235b-judge"
    model_id: str | None = None  # judge identity in the cache key; default: model
    api_key_env: str | None = operational("MEMLENS_JUDGE_API_KEY")
    concurrency: PositiveInt = operational(8)
    max_new_tokens: PositiveInt = 512
    temperature: NonNegFloat = 0.0
    timeout_s: PositiveFloat = operational(300.0)
    max_retries: NonNegInt = operational(4)
    extra_body: dict[str, Any] | None = None
    cache_path: str | None = operational(".memlens_cache/judge.sqlite")
    prompt_version: str | None = None
    layout: Literal["system", "single"] = "system"
    max_words: PositiveInt = 500
    progress: bool | None = None  # null: a progress bar when stderr is a terminal

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return reject_api_key("judge", data)


@configured
@component("judge", "llm")
class LLMJudge:
    """OpenAI-compatible LLM judge implementing the :class:`~memlens.eval.judge.judges.Judge` protocol.

    Built from ``conf/judge/llm.yaml`` (see there for the keys). ``cache_path`` relative paths are
    resolved against the project root (``set_root``, called by the judge stage; else the project
    root found from the working directory); ``cache_path: null`` disables the cache. The config
    schema is :class:`LLMJudgeSettings` (``LLMJudge.Config``; ``root`` is not a
    config key: the judge stage sets it).
    """

    Config = LLMJudgeSettings

    def __init__(
        self,
        name: str = "llm",
        *,
        base_url: str,
        model: str,
        model_id: str | None,
        api_key_env: str | None,
        concurrency: int,
        max_new_tokens: int,
        temperature: float,
        timeout_s: float,
        max_retries: int,
        backoff_base_s: float,
        backoff_max_s: float,
        extra_body: dict | None,
        cache_path: str | None,
        prompt_version: str | None,
        layout: str,
        max_words: int,
        progress: bool | None,
        root: str | Path | None = None,
    ):
        if prompt_version is not None and str(prompt_version) != PROMPT_VERSION:
            raise ConfigError(
                f"judge.prompt_version is {prompt_version!r} but the prompts in memlens.eval.judge.prompts are "
                f"{PROMPT_VERSION!r}; update the config (the cache is keyed by the version)"
            )
        if layout not in ("system", "single"):
            raise ConfigError(f"judge.layout must be 'system' or 'single', not {layout!r}")
        self.name = str(name)
        self.base_url = str(base_url)
        self.model = str(model)
        self.model_id = str(model_id or model)
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self.extra_body = dict(extra_body) if extra_body else None
        self.cache_path = cache_path
        self.prompt_version = PROMPT_VERSION
        self.layout = layout
        self.max_words = int(max_words)
        self.progress = progress
        self.root = Path(root) if root else None
        self.last_stats = JudgeRunStats()
        self._client = None

    # ------------------------------------------------------------------ config
    def set_root(self, root: str | Path) -> None:
        self.root = Path(root)

    def resolved_cache_path(self) -> Path | None:
        if not self.cache_path:
            return None
        p = Path(str(self.cache_path)).expanduser()
        if not p.is_absolute():
            if self.root is None:
                from memlens.core.config import project_root

                self.root = project_root()
            p = self.root / p
        return p

    def describe(self) -> dict[str, Any]:
        """Settings, safe to log (the key's environment variable *name* only)."""
        return {
            "name": self.name,
            "kind": "llm",
            "base_url": self.base_url,
            "model": self.model,
            "model_id": self.model_id,
            "api_key_env": self.api_key_env,
            "concurrency": self.concurrency,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "extra_body": self.extra_body,
            "prompt_version": self.prompt_version,
            "layout": self.layout,
            "max_words": self.max_words,
            "cache_path": None if self.cache_path is None else str(self.cache_path),
        }

    def client_config(self):
        from memlens.core.http import OpenAICompatibleConfig

        return OpenAICompatibleConfig(
            base_url=self.base_url,
            model=self.model,
            api_key_env=self.api_key_env,
            concurrency=self.concurrency,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            max_image_side=None,
            extra_body=self.extra_body,
            backoff_base_s=self.backoff_base_s,
            backoff_max_s=self.backoff_max_s,
        )

    # ------------------------------------------------------------------ judging
    def _verdict(
        self,
        q: Question,
        p: Prediction,
        *,
        correct: bool | None,
        reason: str,
        key: str,
        abstained: bool,
        auto_zero: bool,
        truncated: bool,
        details: dict,
    ) -> Verdict:
        return verdict_for(
            self.name,
            q,
            p,
            correct=correct,
            parsed=None,
            reason=reason,
            task_key=key,
            abstained=abstained,
            auto_zero=auto_zero,
            truncated=truncated,
            details=details,
        )

    def judge_many(self, pairs: Sequence[tuple[Question, Prediction]]) -> list[Verdict]:
        t0 = time.perf_counter()
        stats = JudgeRunStats(items=len(pairs))
        out: list[Verdict | None] = [None] * len(pairs)
        pending: list[_Pending] = []
        meta: dict[int, dict] = {}
        for i, (q, p) in enumerate(pairs):
            if not p.ok:
                stats.prediction_failed += 1
                v = failed_verdict(self.name, q, p, f"prediction failed: {p.error}")
                v.details = official_diagnostics(p, max_words=self.max_words)
                out[i] = v
                continue
            key = det.task_key(q.question_type, q.question_subtype, q.answer)
            diag = official_diagnostics(p, max_words=self.max_words)
            prep = prepare_prediction(p.prediction, max_words=self.max_words, diagnostics=False)
            # abstention (for coverage / per-answer accuracy) uses the rule-based refusal detector
            rules = det.score(
                q.question_type,
                q.question_subtype,
                q.answer,
                p.prediction or "",
                old_answer=q.old_answer,
                question=q.question,
            )
            common = dict(
                key=key, abstained=bool(rules.abstained), auto_zero=prep.auto_zero, truncated=prep.was_truncated
            )
            base_details = {"judge_model": self.model_id, "prompt_version": self.prompt_version, **diag}
            if prep.auto_zero:
                stats.auto_zero += 1
                out[i] = self._verdict(
                    q, p, correct=False, reason=f"auto-zero: {prep.parsed_words} words", details=base_details, **common
                )
                continue
            if not prep.text:
                stats.empty += 1
                out[i] = self._verdict(q, p, correct=False, reason="empty prediction", details=base_details, **common)
                continue
            reference = det.ABSTENTION_ANSWER if key == det.AR_REFUSAL else str(q.answer)
            old = q.old_answer if key == det.KU_UPDATE and q.old_answer else None
            ck = cache_key(
                prompt_version=self.prompt_version,
                model_id=self.model_id,
                task_key=key,
                question=q.question,
                reference=reference,
                old_answer=old,
                prediction=prep.text,
            )
            meta[i] = {"common": common, "details": base_details, "key": ck}
            pending.append(
                _Pending(i, ck, key, build_messages(key, q.question, reference, prep.text, old, layout=self.layout))
            )

        cpath = self.resolved_cache_path()
        cache = JudgeCache(cpath) if cpath is not None else None
        try:
            results: dict[str, tuple[int | None, str, str | None]] = {}  # key -> (score, text, error)
            if cache is not None and pending:
                for k, (s, text) in cache.get_many([x.key for x in pending]).items():
                    results[k] = (s, text, None)
            stats.cache_hits = sum(1 for x in pending if x.key in results)
            todo: dict[str, _Pending] = {}
            for x in pending:
                if x.key not in results and x.key not in todo:
                    todo[x.key] = x
            if todo:
                self._call(todo, results, cache, stats)
        finally:
            if cache is not None:
                cache.close()

        for x in pending:
            i = x.index
            q, p = pairs[i]
            m = meta[i]
            score, text, error = results[x.key]
            details = {**m["details"], "cache_key": x.key}
            if score is None:
                stats.failed += 1
                if text:
                    details["judge_text"] = text
                out[i] = self._verdict(
                    q, p, correct=None, reason=f"judge failed: {error}", details=details, **m["common"]
                )
            else:
                details["judge_text"] = text
                out[i] = self._verdict(
                    q, p, correct=bool(score), reason=f"judge score {score}", details=details, **m["common"]
                )
        stats.elapsed_s = time.perf_counter() - t0
        self.last_stats = stats
        log.info(
            "judge %s: %d items, %d cached, %d requests, %d auto-zero, %d failed",
            self.name,
            stats.items,
            stats.cache_hits,
            stats.requests,
            stats.auto_zero,
            stats.failed,
        )
        return [v for v in out if v is not None]

    def _call(self, todo: dict[str, _Pending], results: dict, cache: JudgeCache | None, stats: JudgeRunStats) -> None:
        from memlens.core.http import OpenAICompatibleClient

        if self._client is None:  # one client per judge: built (and the key read) once
            self._client = OpenAICompatibleClient(self.client_config())
        client = self._client
        stats.requests = len(todo)

        def on_result(key: str, res) -> None:
            stats.attempts += res.attempts
            if not res.ok:
                results[key] = (None, "", res.error or "request failed")
                return
            text = res.text or ""
            score = parse_verdict(text)
            if score is None:
                why = "empty judge response" if not text.strip() else f"unparsable verdict: {text[-120:]!r}"
                results[key] = (None, text, why)
                return
            results[key] = (score, text, None)
            if cache is not None:
                cache.put(
                    key,
                    score,
                    text,
                    model_id=self.model_id,
                    prompt_version=self.prompt_version,
                    task_key=todo[key].task_key,
                )

        items = [(k, x.messages) for k, x in todo.items()]
        progress = sys.stderr.isatty() if self.progress is None else bool(self.progress)

        def run() -> None:
            client.run_many(
                items, on_result, progress=progress, total=len(items), desc=f"judge {self.name}", require_content=True
            )  # an empty verdict is retried like a broken answer

        try:
            import asyncio

            asyncio.get_running_loop()
        except RuntimeError:
            run()
        else:  # called from inside an event loop: run the client's own loop in a worker thread
            with concurrent.futures.ThreadPoolExecutor(1) as ex:
                ex.submit(run).result()
        for k in todo:  # a result the client never delivered (should not happen) is a failure
            results.setdefault(k, (None, "", "no result"))
