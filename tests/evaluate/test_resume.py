"""A killed and resumed evaluation gives the same predictions as an uninterrupted one.

``memlens evaluate`` runs in a subprocess against a FakeOpenAIServer of this process (its answers are
a deterministic function of the request); the subprocess is killed with SIGKILL twice at different
points (watching the results store grow), then re-run to completion. The final prediction views
must be byte-identical to those of an uninterrupted run, with no duplicated item, and the resumed
runs must not ask again what the killed ones had stored.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.evaluate.eval_support import TINY, openai_overrides
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.results import stored


def _cmd(root: Path, server) -> list[str]:
    return [
        sys.executable,
        "-m",
        "memlens.cli",
        "evaluate",
        "--root",
        str(root),
        *TINY,
        *openai_overrides(server, "model.concurrency=2"),
    ]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _stored(root: Path) -> int:
    """Answers in the project's results store so far."""
    return stored(root)


def _run_and_kill(root: Path, server, after_lines: int, timeout: float = 120) -> None:
    proc = subprocess.Popen(_cmd(root, server), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t0 = time.monotonic()
        while _stored(root) < after_lines:
            if proc.poll() is not None:
                pytest.fail(f"evaluate finished (status {proc.returncode}) before it could be killed")
            if time.monotonic() - t0 > timeout:
                pytest.fail("evaluate made no progress")
            time.sleep(0.005)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
def test_kill9_and_resume_gives_identical_predictions(tiny_project, tmp_path):
    a, b = tmp_path / "uninterrupted", tmp_path / "killed"
    shutil.copytree(tiny_project, a)
    shutil.copytree(tiny_project, b)
    pred = lambda root, n: root / "data" / "predictions" / "fake-vl" / "standard" / f"{n}.jsonl"  # noqa: E731
    with FakeOpenAIServer(latency_s=0.15, record_requests=False) as server:
        done = subprocess.run(_cmd(a, server), env=_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        from memlens.core.config import Paths
        from memlens.core.items import BuiltBenchmark

        bench = BuiltBenchmark(Paths(a))
        n32, total = bench.count("32k"), bench.count("32k") + bench.count("64k")
        before = server.request_count
        _run_and_kill(b, server, after_lines=2)
        mid = _stored(b)
        assert not pred(b, "32k").exists()  # killed mid-run: the 32k view was never written ...
        assert 2 <= mid < n32  # ... but the answers so far are stored
        _run_and_kill(b, server, after_lines=n32 + 1)  # killed again, in the second length
        done = subprocess.run(_cmd(b, server), env=_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        # nothing stored was asked again: only requests in flight at a kill (at most 2 each) repeat
        assert total <= server.request_count - before <= total + 2 * 2
    assert _stored(b) <= total + 2 * 2
    for length in ("32k", "64k"):
        ref, got = pred(a, length).read_bytes(), pred(b, length).read_bytes()
        assert got == ref, length
        ids = [line.split(b'"question_id":')[1][:16] for line in got.splitlines()]
        assert len(ids) == len(set(ids)) == bench.count(length)
