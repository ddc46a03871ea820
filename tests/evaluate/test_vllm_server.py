"""The stage-managed vLLM server: command construction, health check, delegation to the OpenAI
client, and shutdown in every case, with a stand-in executable (tests/evaluate/fake_vllm.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memlens.core.compose import load_settings
from memlens.core.errors import ConfigError
from memlens.eval.evaluate.stage import build_model
from memlens.eval.systems.vllm_server import (
    ENV_COMMAND,
    ServerError,
    VLLMServer,
    VLLMServerModel,
    build_serve_command,
    check_resources,
)
from tests.conftest import REPO, run_stage
from tests.evaluate.eval_support import TINY, predictions

FAKE = Path(__file__).with_name("fake_vllm.py")
STANDIN = [sys.executable, str(FAKE), "serve"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_dead(pid: int, timeout: float = 10) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture()
def standin_env(monkeypatch, tmp_path):
    argv_file = tmp_path / "argv.json"
    src = str(REPO / "src")
    monkeypatch.setenv("PYTHONPATH", src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("FAKE_VLLM_ARGV_FILE", str(argv_file))
    # server logs without a model.log_file go to a temporary file: this test's folder, not /tmp
    logs = tmp_path / "tmp"
    logs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(logs))
    monkeypatch.setenv("TMPDIR", str(logs))
    return argv_file


def test_roster_serve_command_exact(monkeypatch):
    monkeypatch.delenv(ENV_COMMAND, raising=False)
    cfg = load_settings(["model=qwen3-vl-8b-thinking"], root=REPO)
    model = build_model(cfg)
    assert isinstance(model, VLLMServerModel)
    assert model.command(8000) == [
        "vllm",
        "serve",
        "Qwen/Qwen3-VL-8B-Thinking",
        "--served-model-name",
        "qwen3-vl-8b-thinking",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--tensor-parallel-size",
        "1",
        "--max-model-len",
        "262144",
        "--limit-mm-per-prompt",
        '{"image":256}',
        "--gpu-memory-utilization",
        "0.9",
        "--enable-prefix-caching",
        "--reasoning-parser",
        "qwen3",
    ]
    assert model.config.max_new_tokens == 16384 and model.config.model == "qwen3-vl-8b-thinking"
    big = build_model(load_settings(["model=qwen3-vl-235b-a22b-instruct"], root=REPO))
    assert (
        "--tensor-parallel-size" in big.command(1)
        and big.command(1)[big.command(1).index("--tensor-parallel-size") + 1] == "8"
    )
    assert "--enable-expert-parallel" in big.command(1)


def test_command_sources(monkeypatch):
    kw = dict(model="m", served_model_name="s", bind_host="0.0.0.0", port=9)
    monkeypatch.delenv(ENV_COMMAND, raising=False)
    assert build_serve_command(command=None, **kw)[:3] == ["vllm", "serve", "m"]
    monkeypatch.setenv(ENV_COMMAND, "/opt/vllm/bin/vllm serve")
    assert build_serve_command(command=None, **kw)[:3] == ["/opt/vllm/bin/vllm", "serve", "m"]
    docker = "docker run --rm --gpus all --network host vllm/vllm-openai:v0.18.0"
    assert build_serve_command(command=docker, **kw)[:9] == docker.split() + ["m"]
    assert build_serve_command(command=["x", "y z"], trust_remote_code=True, extra_args=["--a", 1], **kw) == [
        "x",
        "y z",
        "m",
        "--served-model-name",
        "s",
        "--host",
        "0.0.0.0",
        "--port",
        "9",
        "--tensor-parallel-size",
        "1",
        "--trust-remote-code",
        "--a",
        "1",
    ]


def test_resources_validation():
    assert check_resources({"accelerator": "A100-80GB", "gpus": 8, "tensor_parallel_size": 8}, None) == 8
    assert check_resources(None, None) == 1
    with pytest.raises(ConfigError, match="disagrees"):
        check_resources({"gpus": 8, "tensor_parallel_size": 8}, 4)
    with pytest.raises(ConfigError, match="gpus"):
        check_resources({"gpus": 2, "tensor_parallel_size": 4}, None)
    with pytest.raises(ConfigError, match="unknown keys"):
        check_resources({"gpu": 2}, None)
    with pytest.raises(ConfigError, match="hf_id or model_path"):
        VLLMServerModel("x")
    with pytest.raises(ConfigError, match="base_url"):
        VLLMServerModel("x", hf_id="a/b", base_url="http://127.0.0.1:1/v1")


def test_stage_starts_uses_and_stops_the_server(tiny_copy, standin_env):
    ov = [
        "model=vllm_server",
        f"model.command=['{sys.executable}','{FAKE}','serve']",
        "model.hf_id=fake/tiny-vl",
        "model.served_model_name=fake-vl",
        "model.health_interval_s=0.05",
        "model.startup_timeout_s=60",
        "model.shutdown_timeout_s=10",
        "eval.lengths=[32k]",
        "eval.mode=no_context",
        f"model.log_file={tiny_copy / 'vllm.log'}",
    ]
    assert run_stage(tiny_copy, "evaluate", *TINY, *ov) == 0
    info = json.loads(standin_env.read_text())
    assert info["argv"][:3] == ["serve", "fake/tiny-vl", "--served-model-name"]
    assert "--limit-mm-per-prompt" in info["argv"] and '{"image":256}' in info["argv"]
    assert _wait_dead(info["pid"]), "the server outlived the stage"
    from memlens.core.config import Paths
    from memlens.core.items import BuiltBenchmark

    rows = predictions(tiny_copy, "fake-vl", "no_context")["32k"]
    assert len(rows) == BuiltBenchmark(Paths(tiny_copy)).count("32k") and all(
        r["ok"] and r["raw_prediction"].startswith("ANSWER:") for r in rows.values()
    )
    assert "fake vllm: ready" in (tiny_copy / "vllm.log").read_text()


def test_server_stopped_when_the_run_fails(tiny_project, standin_env):
    from memlens.core.config import Paths
    from memlens.core.items import BuiltBenchmark

    items = list(BuiltBenchmark(Paths(tiny_project)).items("32k"))
    model = VLLMServerModel("fake-vl", hf_id="fake/x", command=STANDIN, health_interval_s=0.05, shutdown_timeout_s=10)

    def on_result(item, out):
        raise RuntimeError("store exploded")

    with pytest.raises(RuntimeError, match="store exploded"):
        model.run(items, "no_context", on_result)
    pid = json.loads(standin_env.read_text())["pid"]
    assert model.server is None and _wait_dead(pid)
    model.close()


def test_server_reused_across_lengths_and_stopped_on_close(tiny_project, standin_env):
    from memlens.core.config import Paths
    from memlens.core.items import BuiltBenchmark

    bench = BuiltBenchmark(Paths(tiny_project))
    model = VLLMServerModel("fake-vl", hf_id="fake/x", command=STANDIN, health_interval_s=0.05)
    outs = []
    try:
        for length in bench.lengths():
            model.run(bench.items(length), "no_context", lambda it, o: outs.append(o))
            pid = json.loads(standin_env.read_text())["pid"]
            assert model.server is not None and model.server.running
    finally:
        model.close()
    assert len(outs) == sum(bench.count(n) for n in bench.lengths()) and all(o.ok for o in outs)
    assert model.server is None and _wait_dead(pid)


def test_crashing_server_fails_fast_with_its_log(monkeypatch, standin_env):
    monkeypatch.setenv("FAKE_VLLM_MODE", "crash")
    server = VLLMServer([*STANDIN, "m", "--port", "1"], host="127.0.0.1", port=1, health_interval_s=0.05)
    t0 = time.monotonic()
    with pytest.raises(ServerError, match=r"exited with status 3(.|\n)*CUDA out of memory"):
        server.start()
    assert time.monotonic() - t0 < 20 and not server.running


def test_unhealthy_server_times_out_and_is_killed(monkeypatch, standin_env):
    monkeypatch.setenv("FAKE_VLLM_MODE", "never_healthy")
    server = VLLMServer(
        [*STANDIN, "m", "--port", "1"],
        host="127.0.0.1",
        port=1,
        health_interval_s=0.05,
        startup_timeout_s=1.0,
        shutdown_timeout_s=5,
    )
    with pytest.raises(ServerError, match="not healthy after 1 s"):
        server.start()
    assert _wait_dead(json.loads(standin_env.read_text())["pid"])


def test_sigterm_ignored_escalates_to_sigkill(monkeypatch, standin_env):
    monkeypatch.setenv("FAKE_VLLM_MODE", "ignore_sigterm")
    model = VLLMServerModel("fake-vl", hf_id="fake/x", command=STANDIN, health_interval_s=0.05, shutdown_timeout_s=1)
    model.start()
    pid = json.loads(standin_env.read_text())["pid"]
    t0 = time.monotonic()
    model.close()
    assert _wait_dead(pid) and time.monotonic() - t0 < 10


def test_missing_executable_is_a_clear_error(standin_env):
    model = VLLMServerModel("x", hf_id="a/b", command=["/nonexistent/vllm", "serve"])
    with pytest.raises(ServerError, match="cannot start the model server"):
        model.start()


_ORPHAN = """
import json, sys, time
from memlens.eval.systems.vllm_server import VLLMServer
s = VLLMServer({argv!r} + ["m", "--port", str({port})], host="127.0.0.1", port={port}, health_interval_s=0.05)
s.start()
print(s.proc.pid, flush=True)
time.sleep(600)
"""


def test_server_dies_with_a_killed_evaluator(standin_env):
    """kill -9 of the evaluating process: PR_SET_PDEATHSIG stops the server too."""
    from memlens.eval.systems.vllm_server import _free_port

    port = _free_port("127.0.0.1")
    code = _ORPHAN.format(argv=STANDIN, port=port)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        pid = int(parent.stdout.readline())
        assert _alive(pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert _wait_dead(pid), "server orphaned after kill -9 of its parent"
