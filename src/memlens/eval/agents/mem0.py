"""Mem0 with the real ``mem0ai`` package (2.0.4, the paper's version), in an environment of its own.

``mem0ai`` 2.0.4 requires ``protobuf<7``, the main environment pins protobuf 7 (mlflow,
opentelemetry), so mem0 runs in ``.venv-mem0`` (``make install-mem0``) in worker processes
(:mod:`memlens.eval.agents.mem0_worker`, JSON lines over stdin/stdout): at most ``concurrency``
at once, questions in parallel, each question in a fresh ``Memory`` with its own FAISS store in a
fresh temporary folder; a worker serves up to ``worker_reuse`` questions one after the other (its
imports are what it keeps) and is killed after a failed one.

Published settings (``shared/reference/official-memory-agents.md``), as configured here: backbone
Qwen3-8B through an OpenAI-compatible endpoint, ``Memory`` config version v1.1, FAISS with cosine
distance and L2-normalised vectors, one store per question with ``user_id`` the question's (a
neutral per-question id here: benchmark question ids encode the question type), every message
prefixed with its session date, metadata ``session_id``/``session_date``, ``search(question,
top_k=20)``, then a separate chat completion over the retrieved memories (one line each: memory,
timestamp, score) with the question date, temperature 0, 2,048 max tokens, told to say so briefly
when the memories are not enough (prompt in our words). Images reach mem0 as the input adapter's
text, like the other text agents (the paper: BLIP-2 captions, ``model.adapter=caption``).

The extraction calls mem0 makes itself go from the worker straight to ``base_url`` (the
backbone) and ``embedder_base_url`` (an OpenAI-compatible ``/v1/embeddings``), through the worker's
call cache (``agents/mem0_calls.sqlite`` in the project cache, with ``cache_calls``); the answer call
goes through the runtime's client and its call cache. mem0 2.0.4 dates its extraction prompt
("Observation Date", "Current Date") by the wall clock; ``observation_date: session`` (the
default) dates it by the session instead, so the same history gives the same prompts on any day
(and the cache answers them); ``clock`` keeps mem0's own behaviour. A crashed, killed or hung worker
(``worker_timeout_s`` per request) fails that question only; the results store records the
failure and a re-run retries it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal

from memlens.core.errors import ConfigError, MemLensError
from memlens.core.registry import component
from memlens.core.schema import parse_date
from memlens.core.settings import PositiveFloat, PositiveInt, configured, operational
from memlens.eval.agents import mem0_worker
from memlens.eval.agents.runtime import AgentAnswer, AgentSettings, Memory, MemoryAgent, QuestionContext, Retrieved
from memlens.eval.agents.view import AgentSession, render_turn

__all__ = ["Mem0Agent"]

PROMPTS = {
    "system": (
        "You answer a user's question from memories that were extracted from your earlier "
        "conversations with that user. Each memory line gives the memory, the date of the "
        "conversation it comes from and how relevant the search found it. Use the dates to reason "
        "about time and to prefer the most recent information when facts changed. If the memories "
        "do not contain what the question needs, say so briefly."
    ),
    "user": "Memories:\n{memories}\n\nQuestion date: {question_date}\nQuestion: {question}\nAnswer:",
    "memory_line": "- {memory} (timestamp: {timestamp}; score: {score:.3f})",
    "message": "[{date}] {text}",
}

#: variables a worker inherits (besides the ones named by the ``*_api_key_env`` keys)
_PASS_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
_STDERR_TAIL = 2000
_INIT_TIMEOUT_S = 300.0


def iso_date(date: str) -> str:
    """``2024-05-31`` of a release date (``2024/05/31 (Fri) 07:58``); any other string unchanged."""
    try:
        return parse_date(date).date().isoformat()
    except ValueError:
        return date


def _install_hint(python: Path) -> str:
    return f"the Mem0 environment is missing ({python} not found): run `make install-mem0`"


class _Worker:
    """One worker process and its own temporary folder (``MEM0_DIR``, stderr); it serves one
    question at a time, each in a fresh ``Memory`` and store folder."""

    def __init__(self, agent: Mem0Agent):
        self.agent = agent
        self.proc: asyncio.subprocess.Process | None = None
        self.home: Path | None = None
        self.stderr = None
        self.usage: dict[str, int] = {}
        self.served = 0

    async def spawn(self) -> None:
        a = self.agent
        python = a.python_path()
        if not python.is_file():
            raise ConfigError(_install_hint(python))
        self.home = Path(tempfile.mkdtemp(prefix="memlens-mem0-"))
        try:
            self.stderr = open(self.home / "worker.stderr", "wb")  # noqa: SIM115 - closed in _cleanup()
            self.proc = await asyncio.create_subprocess_exec(
                str(python),
                "-I",
                str(Path(mem0_worker.__file__).resolve()),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=self.stderr,
                env=a.worker_env(),
                cwd=str(self.home),
                limit=1 << 24,
            )
        except BaseException:
            self._cleanup()
            raise

    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def _stderr_tail(self) -> str:
        if self.home is None:
            return ""
        try:
            if self.stderr is not None:
                self.stderr.flush()
            data = (self.home / "worker.stderr").read_bytes()[-_STDERR_TAIL:]
        except OSError:
            return ""
        lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
        return " | ".join(lines[-3:])

    async def call(self, req: dict, *, timeout_s: float | None = None) -> dict:
        proc = self.proc
        timeout_s = timeout_s or self.agent.worker_timeout_s
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise MemLensError("mem0 worker: not running")
        op = req.get("op")
        try:
            proc.stdin.write((json.dumps(req, ensure_ascii=False) + "\n").encode("utf-8"))
            await proc.stdin.drain()
            line = await asyncio.wait_for(proc.stdout.readline(), timeout_s)
        except TimeoutError:
            raise MemLensError(f"mem0 worker: no reply to {op!r} within {timeout_s:g} s (worker_timeout_s)") from None
        except (BrokenPipeError, ConnectionResetError):
            line = b""
        if not line:
            try:
                rc = await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                rc = None
            tail = self._stderr_tail()
            raise MemLensError(
                f"mem0 worker exited (status {rc}) during {op!r}" + (f"; stderr: {tail}" if tail else "")
            )
        try:
            reply = json.loads(line)
        except ValueError:
            raise MemLensError(f"mem0 worker: unreadable reply to {op!r}: {line[:200]!r}") from None
        self.usage = dict(reply.get("usage") or {})
        if not reply.get("ok"):
            raise MemLensError(f"mem0 worker ({op}): {reply.get('error')}")
        return reply

    async def stop(self, *, kill: bool = False) -> None:
        """End the process (``close`` request, or SIGKILL) and remove its folder."""
        proc, self.proc = self.proc, None
        try:
            if proc is not None and proc.returncode is None:
                if not kill and proc.stdin is not None:
                    with contextlib.suppress(OSError, RuntimeError):
                        proc.stdin.write(b'{"op": "close"}\n')
                        proc.stdin.close()
                else:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                try:
                    await asyncio.wait_for(proc.wait(), 30)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    await proc.wait()
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None


class _Mem0Memory(Memory):
    def __init__(self, ctx: QuestionContext, agent: Mem0Agent, user_id: str):
        super().__init__(ctx)
        self.agent = agent
        self.user_id = user_id
        self.worker: _Worker | None = None
        self.store: Path | None = None
        self.base: dict[str, int] = {}
        self.counted: dict[str, int] = {}
        self.added = 0

    async def _begin(self) -> _Worker:
        """A worker (idle or new) with a fresh ``Memory`` in a fresh store folder."""
        a = self.agent
        worker = self.worker = await a.acquire_worker()
        self.store = Path(tempfile.mkdtemp(prefix="memlens-mem0-store-"))
        init = {"op": "init", "dir": str(self.store), "home": str(worker.home), "user_id": self.user_id}
        # the first init imports mem0, faiss and qdrant-client: seconds on a busy machine
        reply = await worker.call({**init, **a.worker_init()}, timeout_s=max(a.worker_timeout_s, _INIT_TIMEOUT_S))
        if reply.get("mem0_version") != mem0_worker.MEM0_VERSION:
            raise ConfigError(
                f"{a.python_path()}: mem0ai {reply.get('mem0_version')} installed, {mem0_worker.MEM0_VERSION} "
                "required: run `make install-mem0`"
            )
        worker.served += 1
        # the process's totals so far (a reused worker): this question counts from here
        self.base = dict(worker.usage)
        self.counted = dict(worker.usage)
        return worker

    async def _finish(self, *, ok: bool) -> None:
        worker, self.worker = self.worker, None
        try:
            if worker is not None:
                await self.agent.release_worker(worker, ok=ok)
        finally:
            if self.store is not None:
                shutil.rmtree(self.store, ignore_errors=True)
                self.store = None

    def _count(self) -> None:
        """Add the worker's new chat calls and tokens to the question's counter."""
        if self.worker is None:
            return
        u, c = self.worker.usage, self.counted
        counter = self.ctx.counter
        counter.calls += u.get("chat_calls", 0) - c.get("chat_calls", 0)
        counter.cache_hits += u.get("chat_cache_hits", 0) - c.get("chat_cache_hits", 0)
        counter.prompt_tokens += u.get("chat_prompt_tokens", 0) - c.get("chat_prompt_tokens", 0)
        counter.completion_tokens += u.get("chat_completion_tokens", 0) - c.get("chat_completion_tokens", 0)
        self.counted = dict(u)

    async def _call(self, req: dict) -> dict:
        worker = self.worker or await self._begin()
        try:
            return await worker.call(req)
        finally:
            self._count()

    async def ingest(self, session: AgentSession) -> None:
        try:
            texts = await self.ctx.image_texts(session.images)
            messages = []
            for t in session.turns:
                text = render_turn(t, lambda im: texts.get(im.sha256, "[image]"))
                if not text:
                    continue
                role = t.role if t.role in ("user", "assistant") else "user"
                messages.append({"role": role, "content": PROMPTS["message"].format(date=session.date, text=text)})
            if not messages:
                return
            reply = await self._call(
                {
                    "op": "add",
                    "messages": messages,
                    "metadata": {"session_id": session.session_id, "session_date": session.date},
                    **({"date": iso_date(session.date)} if self.agent.observation_date == "session" else {}),
                }
            )
            self.added += len(reply.get("added") or [])
        except BaseException:
            await self._finish(ok=False)
            raise

    async def answer(self, question: str, question_date: str) -> AgentAnswer:
        a = self.agent
        try:
            found = (await self._call({"op": "search", "query": question, "top_k": a.top_k}))["results"]
            stored = await self._call({"op": "stats"})
            self.items, self.bytes = int(stored["items"]), int(stored["bytes"])
            u = self.worker.usage if self.worker is not None else {}
            notes_usage = {
                k: u.get(k, 0) - self.base.get(k, 0)
                for k in ("embedding_calls", "embedding_tokens", "refused_connections")
            }
            embedding_hits = u.get("embedding_cache_hits", 0) - self.base.get("embedding_cache_hits", 0)
            await self._call({"op": "end"})
        except BaseException:
            await self._finish(ok=False)
            raise
        # the worker goes back to the pool (or exits) while the answer call runs
        finishing = asyncio.create_task(self._finish(ok=True))
        lines = [
            PROMPTS["memory_line"].format(
                memory=str(r.get("memory") or "").strip(),
                timestamp=(r.get("metadata") or {}).get("session_date") or r.get("created_at") or "unknown",
                score=float(r.get("score") or 0.0),
            )
            for r in found
        ]
        messages = [
            {"role": "system", "content": PROMPTS["system"]},
            {
                "role": "user",
                "content": PROMPTS["user"].format(
                    memories="\n".join(lines) or "(no memories found)", question_date=question_date, question=question
                ),
            },
        ]
        try:
            raw = await self.ctx.chat(messages, what="answer")
        finally:
            await finishing
        retrieved: list[Retrieved] = []
        seen: set[str] = set()
        for r in found:  # best memory of each session, in retrieval order
            sid = (r.get("metadata") or {}).get("session_id")
            if not sid or sid in seen:
                continue
            seen.add(sid)
            retrieved.append(Retrieved(str(sid), float(r.get("score") or 0.0), len(retrieved) + 1))
        notes = {"memories_added": self.added, "memories_retrieved": len(found), **notes_usage}
        return AgentAnswer(raw.strip(), retrieved, notes, {"embedding_cache_hits": embedding_hits})


class Mem0Settings(AgentSettings):
    """``model`` with ``_target_: memlens.eval.agents.mem0.Mem0Agent`` (mem0ai 2.0.4 in
    ``.venv-mem0``): the backbone extracts and answers, ``embedder_*`` name an OpenAI-compatible
    ``/v1/embeddings`` endpoint (null base URL: ``base_url``) whose vectors have ``embedding_dims``."""

    top_k: PositiveInt = 20
    embedder_base_url: str | None = operational(None)
    embedder_model: str = "text-embedding-3-small"
    embedder_api_key_env: str | None = operational(None)  # NAME of the environment variable holding its key
    embedding_dims: PositiveInt = 1536
    distance_strategy: Literal["cosine", "euclidean", "inner_product"] = "cosine"
    extraction_max_tokens: PositiveInt = 2000  # mem0's own calls (its default)
    worker_python: str = operational(".venv-mem0/bin/python")  # relative to the project root
    worker_timeout_s: PositiveFloat = operational(3600)  # per worker request (one session's add, the search)
    worker_reuse: PositiveInt = operational(
        50
    )  # questions per worker process (each in a fresh Memory); 1: one process each
    # the date mem0's extraction prompt gives as "today": the session's (reproducible, cacheable) or
    # the wall clock's (mem0's own behaviour: the prompt changes every day)
    observation_date: Literal["session", "clock"] = "session"


@configured
@component("agent", "mem0")
class Mem0Agent(MemoryAgent):
    """Mem0 (``mem0ai`` 2.0.4, FAISS) in worker processes, a fresh ``Memory`` per question;
    ``search(top_k)`` then one answer call over the retrieved memories."""

    Config = Mem0Settings
    PROMPTS = PROMPTS
    RETRIEVER = "mem0 search (FAISS over extracted memories)"

    def __init__(
        self,
        name: str = "mem0",
        *,
        top_k: int,
        embedder_base_url: str | None,
        embedder_model: str,
        embedder_api_key_env: str | None,
        embedding_dims: int,
        distance_strategy: str,
        extraction_max_tokens: int,
        worker_python: str,
        worker_timeout_s: float,
        worker_reuse: int,
        observation_date: str,
        **common,
    ):
        super().__init__(name, **common)
        if distance_strategy not in ("cosine", "euclidean", "inner_product"):
            raise ConfigError(
                f"model.distance_strategy must be cosine, euclidean or inner_product, not {distance_strategy!r}"
            )
        for key, env in (("api_key_env", common.get("api_key_env")), ("embedder_api_key_env", embedder_api_key_env)):
            if env is not None and (not env or not str(env).replace("_", "").isalnum()):
                raise ConfigError(f"model.{key} must name an environment variable, not {env!r}")
        self.options.update(
            dict(
                top_k=top_k,
                embedder_base_url=embedder_base_url,
                embedder_model=embedder_model,
                embedder_api_key_env=embedder_api_key_env,
                embedding_dims=embedding_dims,
                distance_strategy=distance_strategy,
                extraction_max_tokens=extraction_max_tokens,
                worker_python=worker_python,
                worker_timeout_s=worker_timeout_s,
                worker_reuse=worker_reuse,
                observation_date=observation_date,
            )
        )
        if observation_date not in ("session", "clock"):
            raise ConfigError(f"model.observation_date must be session or clock, not {observation_date!r}")
        self.observation_date = observation_date
        self.top_k = int(top_k)
        self.embedder_base_url = embedder_base_url or self.client_settings["base_url"]
        self.embedder_model = embedder_model
        self.embedder_api_key_env = embedder_api_key_env
        self.embedding_dims = int(embedding_dims)
        self.distance_strategy = distance_strategy
        self.extraction_max_tokens = int(extraction_max_tokens)
        self.worker_python = worker_python
        self.worker_timeout_s = float(worker_timeout_s)
        self.worker_reuse = max(1, int(worker_reuse))
        self._idle: list[_Worker] = []
        self.root: Path | None = None
        self._slots: tuple[Any, asyncio.Semaphore] | None = None
        self._ids = itertools.count(1)

    def attach(self, paths: Any, benchmark: Any) -> None:
        super().attach(paths, benchmark)
        self.root = Path(paths.root)

    def python_path(self) -> Path:
        p = Path(self.worker_python).expanduser()
        if not p.is_absolute():
            p = (self.root or Path.cwd()) / p
        return p

    def slots(self) -> asyncio.Semaphore:
        """At most ``concurrency`` workers alive at once (one semaphore per event loop)."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(max(1, self.concurrency)))
        return self._slots[1]

    async def acquire_worker(self) -> _Worker:
        """An idle worker process, or a new one, once one of the ``concurrency`` slots is free."""
        slot = self.slots()
        await slot.acquire()
        try:
            while self._idle:
                w = self._idle.pop()
                if w.alive():
                    return w
                await w.stop(kill=True)
            w = _Worker(self)
            await w.spawn()
            return w
        except BaseException:
            slot.release()
            raise

    async def release_worker(self, worker: _Worker, *, ok: bool) -> None:
        """Back to the idle workers after a good question (at most ``worker_reuse`` questions per
        process); killed after a failed one, so that nothing of a broken state serves again."""
        try:
            if ok and worker.alive() and worker.served < self.worker_reuse:
                self._idle.append(worker)
            else:
                await worker.stop(kill=not ok)
        finally:
            self.slots().release()

    async def _run(self, items, on_result) -> None:
        self._idle = []
        try:
            await super()._run(items, on_result)
        finally:
            idle, self._idle = self._idle, []
            await asyncio.gather(*(w.stop() for w in idle), return_exceptions=True)

    def worker_env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in _PASS_ENV if k in os.environ}
        for name in (self.client_settings.get("api_key_env"), self.embedder_api_key_env):
            if name:
                if not os.environ.get(name):
                    raise ConfigError(f"environment variable {name} (api_key_env of {self.name}) is not set")
                env[name] = os.environ[name]
        env.update(MEM0_TELEMETRY="False", PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")
        return env

    def worker_init(self) -> dict:
        """The worker's configuration (environment variable names only, never a key)."""
        c = self.client_settings
        llm = {
            "base_url": c["base_url"],
            "model": c["model"],
            "api_key_env": c.get("api_key_env"),
            "temperature": c.get("temperature") if c.get("temperature") is not None else 0.0,
            "max_tokens": self.extraction_max_tokens,
            "top_p": c.get("top_p"),
            "extra_body": c.get("extra_body"),
        }
        embedder = {
            "base_url": self.embedder_base_url,
            "model": self.embedder_model,
            "api_key_env": self.embedder_api_key_env,
        }
        store = {
            "distance_strategy": self.distance_strategy,
            "normalize_L2": True,
            "embedding_dims": self.embedding_dims,
        }
        return {
            "llm": llm,
            "embedder": embedder,
            "vector_store": store,
            "call_cache": str(self._cache_root() / "mem0_calls.sqlite") if self.cache_calls else None,
            "timeout_s": c["timeout_s"],
            "max_retries": c["max_retries"],
        }

    def installed_mem0(self) -> str | None:
        """The mem0ai version of the worker's virtual environment, read from its package metadata
        (None when the interpreter is not a venv's)."""
        venv = self.python_path().parent.parent
        if not (venv / "pyvenv.cfg").is_file():
            return None
        for meta in sorted(venv.glob("lib/python*/site-packages/mem0ai-*.dist-info/METADATA")):
            for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
        return "none"

    def check(self) -> None:
        """The Mem0 environment exists and holds the required mem0ai (its package metadata, or
        ``mem0_worker.py --version`` for an interpreter outside a venv; no network). The worker
        checks the version it imports again. Then the backbone endpoint's preflight (as for every agent)."""
        self._check_environment()
        super().check()

    def _check_environment(self) -> None:
        python = self.python_path()
        if not python.is_file():
            raise ConfigError(_install_hint(python))
        version = self.installed_mem0()
        if version is not None:
            if version != mem0_worker.MEM0_VERSION:
                got = "mem0ai is not installed" if version == "none" else f"mem0ai {version} installed"
                raise ConfigError(f"{python}: {got}, {mem0_worker.MEM0_VERSION} required: run `make install-mem0`")
            return
        try:
            out = subprocess.run(
                [str(python), "-I", str(Path(mem0_worker.__file__).resolve()), "--version"],
                capture_output=True,
                text=True,
                timeout=120,
                env=self.worker_env(),
                check=False,
            )
            got = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {}
        except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"{python}: cannot run the Mem0 worker ({exc}): run `make install-mem0`") from None
        if got.get("mem0") != mem0_worker.MEM0_VERSION:
            why = f"mem0ai {got['mem0']}" if got.get("mem0") else (out.stderr.strip().splitlines() or ["no output"])[-1]
            raise ConfigError(
                f"{python}: {why}; mem0ai {mem0_worker.MEM0_VERSION} is required: run `make install-mem0`"
            )

    def identity_extra(self) -> dict:
        return {**super().identity_extra(), "mem0": mem0_worker.MEM0_VERSION, "mem0_worker": mem0_worker.PROTOCOL}

    def new_memory(self, ctx: QuestionContext) -> Memory:
        return _Mem0Memory(ctx, self, f"user-{next(self._ids):06d}")
