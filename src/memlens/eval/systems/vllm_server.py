"""``VLLMServerModel``: an open-weight model served by a stage-managed ``vllm serve`` process.

The evaluate stage builds the model, calls :meth:`~VLLMServerModel.run` once per length and
:meth:`~VLLMServerModel.close` in a ``finally``. On the first ``run`` the server is started
(:class:`VLLMServer`): the ``vllm serve`` command is built from the config, launched as a
subprocess in its own process group with stdout/stderr in a log file, and ``GET /health`` is
polled until it answers 200 (or the process exits, or ``startup_timeout_s`` passes: both raise
with the tail of the log). Requests then go through :class:`OpenAICompatibleModel` at
``http://<host>:<port>/v1``. The server is always stopped: on ``close()``, on any exception or
interrupt inside ``run()``, at interpreter exit, and, if the evaluating process is killed outright,
by ``PR_SET_PDEATHSIG`` (Linux) which delivers SIGTERM to the server. Stopping sends SIGTERM to the
whole process group, waits ``shutdown_timeout_s``, then SIGKILLs it.

vLLM never runs inside the project's environment (it pins its own torch and transformers). The
command comes from, in order: the ``command`` key (a string or a list, e.g. ``/opt/vllm/bin/vllm
serve`` or a ``docker run ... vllm/vllm-openai:v0.18.0`` prefix), the ``MEMLENS_VLLM_COMMAND``
environment variable (set once per GPU runner), or ``vllm serve`` on the PATH. The arguments
appended are::

    <model path or HF id> --served-model-name <served_name> --host <bind_host> --port <port>
    --tensor-parallel-size N [--max-model-len N] [--limit-mm-per-prompt '{"image": N}']
    [--gpu-memory-utilization X] [--trust-remote-code] [--enable-prefix-caching] <extra_args...>

``port: 0`` picks a free port. A model config declares the resources it needs::

    resources: {accelerator: A100-80GB, gpus: 8, tensor_parallel_size: 8}

``tensor_parallel_size`` defaults to ``resources.tensor_parallel_size``; the two must agree, and
``gpus`` must be at least the tensor-parallel size (checked at instantiation, so ``dvc exp run -S
model=...`` fails before any GPU is touched).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from memlens.core.errors import ConfigError, MemLensError
from memlens.core.items import EvalItem
from memlens.core.registry import component
from memlens.core.settings import Command, EnvValue, NonNegInt, PositiveFloat, PositiveInt, configured, operational
from memlens.eval.systems.base import ResultCallback
from memlens.eval.systems.openai_model import ClientSettings, OpenAICompatibleModel

log = logging.getLogger(__name__)

__all__ = ["ServerError", "VLLMServer", "VLLMServerModel", "build_serve_command", "check_resources"]

ENV_COMMAND = "MEMLENS_VLLM_COMMAND"
DEFAULT_COMMAND = ("vllm", "serve")


class ServerError(MemLensError):
    """The model server could not be started (it exited, or never became healthy)."""


def _as_argv(command: str | Sequence[str] | None) -> list[str]:
    if command is None:
        env = os.environ.get(ENV_COMMAND)
        return shlex.split(env) if env else list(DEFAULT_COMMAND)
    if isinstance(command, str):
        return shlex.split(command)
    return [str(c) for c in command]


def check_resources(resources: Mapping[str, Any] | None, tensor_parallel_size: int | None) -> int:
    """Validate a ``resources`` block against the serve settings; returns the tensor-parallel size."""
    res = dict(resources or {})
    unknown = set(res) - {"accelerator", "gpus", "tensor_parallel_size", "nodes", "cpus", "mem_gb"}
    if unknown:
        raise ConfigError(f"resources: unknown keys {sorted(unknown)}")
    tp_res = res.get("tensor_parallel_size")
    tp = tensor_parallel_size if tensor_parallel_size is not None else (tp_res if tp_res is not None else 1)
    if not isinstance(tp, int) or tp < 1:
        raise ConfigError(f"tensor_parallel_size must be a positive integer, got {tp!r}")
    if tp_res is not None and tensor_parallel_size is not None and int(tp_res) != int(tensor_parallel_size):
        raise ConfigError(
            f"tensor_parallel_size {tensor_parallel_size} disagrees with resources.tensor_parallel_size {tp_res}"
        )
    gpus = res.get("gpus")
    if gpus is not None and (not isinstance(gpus, int) or gpus < tp):
        raise ConfigError(f"resources.gpus ({gpus!r}) must be an integer >= tensor_parallel_size ({tp})")
    return int(tp)


def build_serve_command(
    *,
    command: str | Sequence[str] | None,
    model: str,
    served_model_name: str,
    bind_host: str,
    port: int,
    tensor_parallel_size: int = 1,
    max_model_len: int | None = None,
    limit_mm_per_prompt: Mapping[str, int] | None = None,
    gpu_memory_utilization: float | None = None,
    trust_remote_code: bool = False,
    enable_prefix_caching: bool = False,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The full ``vllm serve`` argv (see the module docstring)."""
    argv = _as_argv(command)
    argv += [
        str(model),
        "--served-model-name",
        served_model_name,
        "--host",
        bind_host,
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(tensor_parallel_size),
    ]
    if max_model_len:
        argv += ["--max-model-len", str(int(max_model_len))]
    if limit_mm_per_prompt:
        argv += [
            "--limit-mm-per-prompt",
            json.dumps({str(k): int(v) for k, v in limit_mm_per_prompt.items()}, separators=(",", ":")),
        ]
    if gpu_memory_utilization is not None:
        argv += ["--gpu-memory-utilization", f"{float(gpu_memory_utilization):g}"]
    if trust_remote_code:
        argv.append("--trust-remote-code")
    if enable_prefix_caching:
        argv.append("--enable-prefix-caching")
    argv += [str(a) for a in extra_args]
    return argv


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("0.0.0.0", "") else "127.0.0.1", 0))
        return s.getsockname()[1]


def _pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


_LIVE: weakref.WeakSet[VLLMServer] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:  # pragma: no cover - exercised at interpreter exit
    for server in list(_LIVE):
        server.stop()


class VLLMServer:
    """One ``vllm serve`` subprocess: :meth:`start` (waits for health), :meth:`stop`, context manager."""

    def __init__(
        self,
        argv: list[str],
        *,
        host: str,
        port: int,
        env: Mapping[str, str] | None = None,
        startup_timeout_s: float = 1800,
        health_interval_s: float = 2.0,
        shutdown_timeout_s: float = 60,
        health_path: str = "/health",
        log_file: str | os.PathLike | None = None,
        served_model_name: str | None = None,
    ):
        self.argv = argv
        self.host = host
        self.port = port
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.startup_timeout_s = float(startup_timeout_s)
        self.health_interval_s = float(health_interval_s)
        self.shutdown_timeout_s = float(shutdown_timeout_s)
        self.health_path = health_path
        self.served_model_name = served_model_name
        self.log_path = Path(log_file) if log_file else Path(tempfile.mkstemp(prefix="vllm-", suffix=".log")[1])
        self.proc: subprocess.Popen | None = None
        self._log_fh = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def _healthy(self) -> bool:
        url = f"http://{self.host}:{self.port}{self.health_path}"
        try:
            with urllib.request.urlopen(url, timeout=max(1.0, self.health_interval_s * 2)) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def start(self) -> VLLMServer:
        if self.running:
            return self
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_fh = open(self.log_path, "ab")  # noqa: SIM115 - the server writes to it until stop()
        env = {**os.environ, **self.env}
        log.info("starting model server: %s (log: %s)", shlex.join(self.argv), self.log_path)
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log_fh,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_pdeathsig if sys.platform.startswith("linux") else None,
            )
        except OSError as exc:
            self._close_log()
            raise ServerError(
                f"cannot start the model server {self.argv[0]!r}: {exc} "
                f"(set model.command or ${ENV_COMMAND} to the vLLM executable or container)"
            ) from None
        _LIVE.add(self)
        t0 = time.monotonic()
        try:
            while True:
                code = self.proc.poll()
                if code is not None:
                    raise ServerError(
                        f"model server exited with status {code} before becoming healthy; "
                        f"log {self.log_path}:\n{self.log_tail()}"
                    )
                if self._healthy():
                    break
                if time.monotonic() - t0 > self.startup_timeout_s:
                    raise ServerError(
                        f"model server not healthy after {self.startup_timeout_s:g} s "
                        f"(GET {self.health_path} on port {self.port}); log {self.log_path}:\n{self.log_tail()}"
                    )
                time.sleep(self.health_interval_s)
        except BaseException:
            self.stop()
            raise
        self._check_models()
        log.info(
            "model server healthy on %s after %.1f s (pid %d)", self.base_url, time.monotonic() - t0, self.proc.pid
        )
        return self

    def _check_models(self) -> None:
        if not self.served_model_name:
            return
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=10) as r:
                ids = [m.get("id") for m in json.loads(r.read()).get("data", [])]
        except Exception:
            return
        if ids and self.served_model_name not in ids:
            log.warning("server serves %s, not %r: requests may fail", ids, self.served_model_name)

    def stop(self) -> int | None:
        """SIGTERM the process group, wait, then SIGKILL; returns the exit status (None if never started)."""
        proc, self.proc = self.proc, None
        _LIVE.discard(self)
        if proc is None:
            return None
        code = proc.poll()
        if code is None:
            self._signal(proc, signal.SIGTERM)
            try:
                code = proc.wait(timeout=self.shutdown_timeout_s)
            except subprocess.TimeoutExpired:
                log.warning(
                    "model server (pid %d) ignored SIGTERM for %.0f s: killing it", proc.pid, self.shutdown_timeout_s
                )
                self._signal(proc, signal.SIGKILL)
                code = proc.wait()
        # leftovers in the group (workers of a server that exited by itself)
        self._signal(proc, signal.SIGKILL, quiet=True)
        self._close_log()
        log.info("model server (pid %d) stopped with status %s", proc.pid, code)
        return code

    @staticmethod
    def _signal(proc: subprocess.Popen, sig: int, quiet: bool = False) -> None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:  # pragma: no cover
            if not quiet:
                proc.send_signal(sig)

    def _close_log(self) -> None:
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class VLLMServerSettings(ClientSettings):
    """``model`` with ``_target_: memlens.eval.systems.vllm_server.VLLMServerModel``: ``hf_id`` or
    ``model_path`` is served; the client connects to ``host:port`` (no ``base_url``/``model``)."""

    model_path: str | None = None
    served_model_name: str | None = operational(None)  # default: name
    command: Command = operational(None)  # null: $MEMLENS_VLLM_COMMAND or `vllm serve`
    host: str = operational("127.0.0.1")
    bind_host: str | None = operational(None)
    port: Annotated[int, Field(ge=0, le=65535)] = operational(0)
    tensor_parallel_size: PositiveInt | None = operational(None)
    max_model_len: PositiveInt | None = None
    limit_mm_per_prompt: dict[str, NonNegInt] | None = None
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] | None = operational(0.9)
    trust_remote_code: bool = False
    enable_prefix_caching: bool = operational(True)
    extra_args: list[str] = operational([])
    env: dict[str, EnvValue] | None = operational(None)
    startup_timeout_s: PositiveFloat = operational(1800)
    health_interval_s: PositiveFloat = operational(2.0)
    shutdown_timeout_s: PositiveFloat = operational(60)
    log_file: str | None = operational(None)

    @model_validator(mode="before")
    @classmethod
    def _no_external_server(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and ("base_url" in data or "model" in data):
            raise ValueError(
                "vllm_server derives base_url/model from host, port and served_model_name; use the "
                "openai_compatible backend (memlens.eval.systems.openai_model.OpenAICompatibleModel) "
                "for an external server"
            )
        return data

    @model_validator(mode="after")
    def _served(self) -> VLLMServerSettings:
        if not (self.hf_id or self.model_path):
            raise ValueError("vllm_server needs hf_id or model_path")
        res = self.resources
        tp_res = res.tensor_parallel_size if res else None
        tp = self.tensor_parallel_size or tp_res or 1
        if tp_res is not None and self.tensor_parallel_size is not None and tp_res != self.tensor_parallel_size:
            raise ValueError(
                f"tensor_parallel_size {self.tensor_parallel_size} disagrees with "
                f"resources.tensor_parallel_size {tp_res}"
            )
        if res and res.gpus is not None and res.gpus < tp:
            raise ValueError(f"resources.gpus ({res.gpus}) must be >= tensor_parallel_size ({tp})")
        return self


@configured
@component("model", "vllm_server")
class VLLMServerModel(OpenAICompatibleModel):
    """An open-weight model served by a ``vllm serve`` process that the evaluate stage manages.

    Args:
        name: system name; also the default served model name.
        hf_id: Hugging Face id (what is served unless ``model_path`` is given).
        model_path: local checkpoint folder (or id) to serve instead of ``hf_id``.
        served_model_name: ``--served-model-name`` (default ``name``).
        command: the vLLM command prefix (string or list); default ``$MEMLENS_VLLM_COMMAND`` or ``vllm serve``.
        host: address the client connects to; bind_host: ``--host`` (``0.0.0.0`` in containers).
        port: ``--port``; 0 picks a free one.
        tensor_parallel_size, max_model_len, limit_mm_per_prompt, gpu_memory_utilization,
            trust_remote_code, enable_prefix_caching, extra_args: serve flags.
        env: extra environment for the server (e.g. ``CUDA_VISIBLE_DEVICES``).
        startup_timeout_s, health_interval_s, shutdown_timeout_s, log_file: lifecycle settings.
        resources: ``{accelerator, gpus, tensor_parallel_size}`` (scheduling; validated).
        base_url, model: not accepted (derived from host, port and served_model_name); present only
            to fail with a clear message.
        **client: forwarded to :class:`OpenAICompatibleModel`, whose signature is strict (every client,
            prompt and descriptive option except ``base_url``/``model``); nothing is swallowed.
    """

    kind = "lvlm"
    Config = VLLMServerSettings

    def __init__(
        self,
        name: str,
        hf_id: str | None,
        *,
        model_path: str | None,
        served_model_name: str | None,
        command: str | Sequence[str] | None,
        host: str,
        bind_host: str | None,
        port: int,
        tensor_parallel_size: int | None,
        max_model_len: int | None,
        limit_mm_per_prompt: Mapping[str, int] | None,
        gpu_memory_utilization: float | None,
        trust_remote_code: bool,
        enable_prefix_caching: bool,
        extra_args: Sequence[str],
        env: Mapping[str, Any] | None,
        startup_timeout_s: float,
        health_interval_s: float,
        shutdown_timeout_s: float,
        log_file: str | None,
        resources: Mapping[str, Any] | None,
        base_url: str | None = None,
        model: str | None = None,
        **client: Any,
    ):
        target = model_path or hf_id
        if not target:
            raise ConfigError(f"model {name!r}: vllm_server needs hf_id or model_path")
        if base_url is not None or model is not None:
            raise ConfigError(
                f"model {name!r}: vllm_server derives base_url/model from host, port and "
                "served_model_name; use the openai_compatible backend for an external server"
            )
        tp = check_resources(resources, tensor_parallel_size)
        served = served_model_name or name
        super().__init__(
            name,
            base_url=f"http://{host}:{port or 0}/v1",
            model=served,
            hf_id=hf_id,
            resources=dict(resources or {}),
            **client,
        )
        self.serve = dict(
            command=command,
            model=str(target),
            served_model_name=served,
            bind_host=bind_host or host,
            tensor_parallel_size=tp,
            max_model_len=max_model_len,
            limit_mm_per_prompt=dict(limit_mm_per_prompt or {}) or None,
            gpu_memory_utilization=gpu_memory_utilization,
            trust_remote_code=bool(trust_remote_code),
            enable_prefix_caching=bool(enable_prefix_caching),
            extra_args=list(extra_args),
        )
        self.options.update(
            serve_model=str(target),
            served_model_name=served,
            tensor_parallel_size=tp,
            max_model_len=max_model_len,
            limit_mm_per_prompt=self.serve["limit_mm_per_prompt"],
            gpu_memory_utilization=gpu_memory_utilization,
        )
        self.host, self.port = host, int(port)
        self.server_options = dict(
            env=dict(env or {}),
            startup_timeout_s=startup_timeout_s,
            health_interval_s=health_interval_s,
            shutdown_timeout_s=shutdown_timeout_s,
            log_file=log_file,
        )
        self.server: VLLMServer | None = None

    def check(self) -> None:
        """Nothing to check before the run: the stage starts the server and waits for its health."""

    def command(self, port: int | None = None) -> list[str]:
        """The ``vllm serve`` argv for ``port`` (default: the configured one)."""
        return build_serve_command(port=self.port if port is None else port, **self.serve)

    def start(self) -> VLLMServer:
        """Start the server (if not running) and point the client at it."""
        if self.server is not None and self.server.running:
            return self.server
        port = self.port or _free_port(self.host)
        self.server = VLLMServer(
            self.command(port),
            host=self.host,
            port=port,
            served_model_name=self.serve["served_model_name"],
            **self.server_options,
        )
        self.server.start()
        from dataclasses import replace

        self.config = replace(self.config, base_url=self.server.base_url)
        self._client = None  # rebuilt for the new base_url (the image cache is kept)
        return self.server

    def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.stop()

    def run(self, items: Iterable[EvalItem], mode: str, on_result: ResultCallback) -> None:
        try:
            self.start()
            super().run(items, mode, on_result)
        except BaseException:
            self.stop()
            raise

    def close(self) -> None:
        try:
            self.stop()
        finally:
            super().close()
