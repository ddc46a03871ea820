"""The request engine of LLM construction: roles, cache, structured output, repair, accounting.

A *role* (``question_writer``, ``user``, ``assistant``, ``leakage_checker``) is one
OpenAI-compatible endpoint and model, served by :class:`memlens.core.http.OpenAICompatibleClient`
(the evaluation client: retries with backoff, bounded concurrency, no secret in any log). Roles on
the same endpoint share one client, so ``concurrency`` bounds the requests in flight per endpoint.

* Every request goes through the :class:`~memlens.core.reqcache.RequestCache` first, keyed by the
  role's model id, the decoding parameters and the messages: a re-run sends no request.
* :meth:`LLMEngine.json` asks for JSON matching a schema (``response_format: json_schema`` when the
  role has ``structured_output``), parses and validates the answer (plus the caller's semantic
  ``check``) and, when it is not valid, sends a repair request (the bad answer and the list of errors
  appended to the conversation) up to ``max_repairs`` times.
* A request that fails after the client's retries, or that is still invalid after the repairs,
  raises :class:`LLMRequestError` naming the task, the request key and the error; it is recorded in
  :attr:`LLMEngine.failures` (never cached, never silently dropped).
* :attr:`LLMEngine.usage` counts per role: requests sent, cache hits, HTTP attempts, repairs,
  failures, prompt/completion tokens sent now and the tokens the cached answers cost when they were
  made (so a fully cached re-run still reports what the build costs), and the cost in USD from the
  role's per-million-token prices.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from memlens.construction.text.llm.schemas import parse_json, validate
from memlens.core.errors import MemLensError
from memlens.core.http import OpenAICompatibleClient, OpenAICompatibleConfig
from memlens.core.reqcache import CachedCompletion, RequestCache, request_key
from memlens.core.settings import Fraction, NonNegFloat, PositiveInt, Section, reject_api_key

__all__ = ["Endpoint", "LLMEngine", "LLMRequestError", "Usage"]

log = logging.getLogger(__name__)


class LLMRequestError(MemLensError):
    """A construction request failed (after retries) or its answer stayed invalid (after repairs)."""


class Endpoint(Section):
    """One role's endpoint and decoding settings: the schema of ``generator.llm.<role>`` (see
    ``conf/generator/llm.yaml``), an OpenAI-compatible endpoint and model. Prices are USD per
    million tokens, for the cost accounting only."""

    base_url: str
    model: Annotated[str, Field(min_length=1)]
    model_id: str | None = None  # identity in the request cache key; default: model
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    temperature: NonNegFloat | None = 0.7  # null: none is sent (reasoning APIs)
    top_p: Fraction | None = None
    max_new_tokens: PositiveInt = 1024
    token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    extra_body: dict[str, Any] | None = None
    structured_output: bool = True  # send response_format json_schema for JSON tasks
    price_prompt_per_mtok: NonNegFloat = 0.0
    price_completion_per_mtok: NonNegFloat = 0.0

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return reject_api_key("generator.llm.<role>", data)

    @property
    def identity(self) -> str:
        return self.model_id or self.model

    def params(self) -> dict[str, Any]:
        """The decoding parameters that change an answer (part of the cache key)."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            self.token_param: self.max_new_tokens,
            "extra_body": self.extra_body or None,
        }


@dataclass
class Usage:
    """Requests and tokens of one role (see the module docstring)."""

    requests: int = 0
    cache_hits: int = 0
    attempts: int = 0
    repairs: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    cost_usd: float = 0.0  # of the requests sent now
    full_cost_usd: float = 0.0  # of every answer used (sent now or cached): what a fresh build costs

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cost_usd"] = round(self.cost_usd, 6)
        d["full_cost_usd"] = round(self.full_cost_usd, 6)
        return d


def _tokens(n: int | None) -> int:
    return int(n) if isinstance(n, int) and n >= 0 else 0


class PriorityGate:
    """At most ``n`` holders; a freed slot goes to the waiter with the lowest priority value (ties:
    first come). The simulator gives each session's next request the priority minus its remaining
    work, so the longest sessions advance first and every slot stays busy until the end of a run
    (round-robin would leave slots idle while the longest sessions finish alone)."""

    def __init__(self, n: int):
        self.free = n
        self.waiters: list[tuple[float, int, asyncio.Future]] = []
        self._seq = itertools.count()

    async def acquire(self, priority: float = 0.0) -> None:
        if self.free > 0 and not self.waiters:
            self.free -= 1
            return
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self.waiters, (priority, next(self._seq), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted, then cancelled: pass the slot on
                self.release()
            raise

    def release(self) -> None:
        while self.waiters:
            _, _, fut = heapq.heappop(self.waiters)
            if not fut.done():
                fut.set_result(None)
                return
        self.free += 1


@dataclass
class LLMEngine:
    """Sends construction requests for named roles (see the module docstring)."""

    endpoints: dict[str, Endpoint]
    cache: RequestCache | None = None
    concurrency: int = 32
    timeout_s: float = 600.0
    max_retries: int = 5
    max_repairs: int = 2
    prompt_version: str = ""
    usage: dict[str, Usage] = field(default_factory=dict)
    failures: list[dict] = field(default_factory=list)
    _clients: dict[tuple, OpenAICompatibleClient] = field(default_factory=dict, repr=False)
    _gates: dict[tuple, tuple[asyncio.AbstractEventLoop, PriorityGate]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for role in self.endpoints:
            self.usage.setdefault(role, Usage())

    # ---------------------------------------------------------------- plumbing
    def _client(self, ep: Endpoint) -> OpenAICompatibleClient:
        k = (ep.base_url, ep.api_key_env)
        if k not in self._clients:
            cfg = OpenAICompatibleConfig(
                base_url=ep.base_url,
                model=ep.model,
                api_key_env=ep.api_key_env,
                concurrency=self.concurrency,
                max_new_tokens=ep.max_new_tokens,
                temperature=0.0,
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
                max_image_side=None,
            )
            self._clients[k] = OpenAICompatibleClient(cfg)
        return self._clients[k]

    def _gate(self, ep: Endpoint) -> PriorityGate:
        """The endpoint's gate in the running event loop (one per loop: each stage phase runs its own)."""
        k = (ep.base_url, ep.api_key_env)
        loop = asyncio.get_running_loop()
        held = self._gates.get(k)
        if held is None or held[0] is not loop:
            held = (loop, PriorityGate(self.concurrency))
            self._gates[k] = held
        return held[1]

    def distinct_endpoints(self, roles) -> int:
        """How many separate endpoints (clients, each with ``concurrency`` slots) serve ``roles``."""
        return len({(self.endpoints[r].base_url, self.endpoints[r].api_key_env) for r in roles if r in self.endpoints})

    async def aclose(self) -> None:
        """Release the HTTP connections (the clients rebuild them in the next event loop)."""
        for c in self._clients.values():
            await c.aclose()

    def _record_failure(self, role: str, tag: str, key: str, error: str) -> LLMRequestError:
        self.usage[role].failures += 1
        self.failures.append({"role": role, "task": tag, "request": key, "error": error})
        return LLMRequestError(f"LLM request {tag} ({role}, request {key[:16]}) failed: {error}")

    async def _complete(
        self,
        role: str,
        tag: str,
        messages: list[dict],
        *,
        seed: int | None,
        response_format: dict | None,
        priority: float = 0.0,
    ) -> tuple[str, str]:
        """(text, request key) of one request, from the cache or the endpoint."""
        ep = self.endpoints[role]
        params = {**ep.params(), "seed": seed, "response_format": response_format}
        key = request_key(ep.identity, params, messages)
        u = self.usage[role]
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            u.cache_hits += 1
            u.cached_prompt_tokens += hit.prompt_tokens
            u.cached_completion_tokens += hit.completion_tokens
            u.full_cost_usd += self._price(ep, hit.prompt_tokens, hit.completion_tokens)
            return hit.text, key
        overrides: dict[str, Any] = {"model": ep.model, "temperature": ep.temperature, "require_content": True}
        if ep.token_param == "max_tokens":
            overrides["max_new_tokens"] = ep.max_new_tokens
        else:
            overrides["max_new_tokens"] = None
            overrides[ep.token_param] = ep.max_new_tokens
        if ep.top_p is not None:
            overrides["top_p"] = ep.top_p
        if seed is not None:
            overrides["seed"] = seed
        if ep.extra_body:
            overrides["extra_body"] = ep.extra_body
        if response_format is not None:
            overrides["response_format"] = response_format
        u.requests += 1
        gate = self._gate(ep)
        await gate.acquire(priority)
        try:
            res = await self._client(ep).complete(messages, **overrides)
        finally:
            gate.release()
        u.attempts += res.attempts
        if not res.ok:
            raise self._record_failure(role, tag, key, str(res.error))
        if res.truncated:
            raise self._record_failure(
                role, tag, key, "the completion was cut by the token limit (finish_reason=length)"
            )
        pt, ct = _tokens(res.prompt_tokens), _tokens(res.completion_tokens)
        u.prompt_tokens += pt
        u.completion_tokens += ct
        cost = self._price(ep, pt, ct)
        u.cost_usd += cost
        u.full_cost_usd += cost
        if self.cache is not None:
            self.cache.put(
                key, ep.identity, tag, CachedCompletion(res.text or "", pt, ct, res.finish_reason, res.served_model)
            )
        return res.text or "", key

    @staticmethod
    def _price(ep: Endpoint, pt: int, ct: int) -> float:
        return (pt * ep.price_prompt_per_mtok + ct * ep.price_completion_per_mtok) / 1e6

    # ---------------------------------------------------------------- public API
    async def text(
        self, role: str, tag: str, messages: list[dict], *, seed: int | None = None, priority: float = 0.0
    ) -> str:
        """The text of one completion (raises :class:`LLMRequestError`); ``priority``: lower is sent
        sooner when every slot is busy (see :class:`PriorityGate`)."""
        text, _ = await self._complete(role, tag, messages, seed=seed, response_format=None, priority=priority)
        return text.strip()

    async def json(
        self,
        role: str,
        tag: str,
        messages: list[dict],
        schema: dict,
        *,
        check: Callable[[Any], list[str]] | None = None,
        seed: int | None = None,
        priority: float = 0.0,
    ) -> Any:
        """A JSON answer valid for ``schema`` and ``check`` (a list of semantic errors), repaired
        up to ``max_repairs`` times; raises :class:`LLMRequestError` naming the request."""
        ep = self.endpoints[role]
        rf = (
            {"type": "json_schema", "json_schema": {"name": tag.split(":")[0], "schema": schema, "strict": True}}
            if ep.structured_output
            else None
        )
        convo = list(messages)
        errors: list[str] = []
        key = ""
        for attempt in range(self.max_repairs + 1):
            text, key = await self._complete(role, tag, convo, seed=seed, response_format=rf, priority=priority)
            try:
                value = parse_json(text)
            except ValueError as exc:
                errors = [str(exc)]
            else:
                errors = validate(value, schema) or (check(value) if check else [])
                if not errors:
                    return value
            if attempt < self.max_repairs:
                self.usage[role].repairs += 1
                log.debug("%s: invalid answer (%s); asking for a repair", tag, "; ".join(errors))
                convo = [
                    *convo,
                    {"role": "assistant", "content": text},
                    {
                        "role": "user",
                        "content": "Your reply was not accepted: "
                        + "; ".join(errors)
                        + ". Reply again with the corrected JSON object only, following the schema.\n"
                        + json.dumps(schema, sort_keys=True),
                    },
                ]
        raise self._record_failure(
            role, tag, key, f"invalid answer after {self.max_repairs} repair(s): {'; '.join(errors)[:400]}"
        )

    def summary(self) -> dict[str, Any]:
        """``build``: what the build needs, the same whatever the cache held (answers used, their
        tokens and cost, repairs, failures; for the manifest); ``run``: what this run sent (requests,
        cache hits, HTTP attempts, new tokens and their cost; for logs and MLflow)."""
        build: dict[str, Any] = {}
        run: dict[str, Any] = {}
        for r, u in sorted(self.usage.items()):
            build[r] = {
                "answers": u.requests + u.cache_hits,
                "repairs": u.repairs,
                "failures": u.failures,
                "prompt_tokens": u.prompt_tokens + u.cached_prompt_tokens,
                "completion_tokens": u.completion_tokens + u.cached_completion_tokens,
                # from the token totals (one price per role), not a float sum whose order follows arrivals
                "cost_usd": round(
                    self._price(
                        self.endpoints[r],
                        u.prompt_tokens + u.cached_prompt_tokens,
                        u.completion_tokens + u.cached_completion_tokens,
                    ),
                    6,
                )
                if r in self.endpoints
                else round(u.full_cost_usd, 6),
            }
            run[r] = {
                "requests": u.requests,
                "cache_hits": u.cache_hits,
                "attempts": u.attempts,
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
                "cost_usd": round(self._price(self.endpoints[r], u.prompt_tokens, u.completion_tokens), 6)
                if r in self.endpoints
                else round(u.cost_usd, 6),
            }
        for d in (build, run):
            keys = sorted({k for v in d.values() for k in v})
            d["total"] = {k: round(sum(v[k] for v in list(d.values())), 6) for k in keys}
        models = {r: {"model": e.identity, "base_url": e.base_url} for r, e in sorted(self.endpoints.items())}
        return {
            "prompt_version": self.prompt_version,
            "models": models,
            "build": build,
            "run": run,
            "failures": sorted(self.failures, key=lambda f: (f["task"], f["request"])),
        }


def run_async(coro):
    """Run a coroutine in a fresh event loop (the stage is synchronous)."""
    return asyncio.run(coro)
