"""A sharded sweep on a real SLURM cluster (one node on localhost, tests/cluster/slurm.sh) through
hydra-submitit-launcher, against the stand-in OpenAI-compatible server, with MLflow on a tracking
server (``mlflow server``, SQLite behind it):

* one system, 3 lengths x 4 shards as one array of 12 jobs; one job is cancelled (``scancel``) while
  it answers, the sweep fails and says to resubmit; the same command resubmitted finishes it, and the
  final step writes the views, judges and reports once;
* nothing is lost (every item answered), requests sent again are at most those in flight at the
  cancel (``model.concurrency``), and the views, verdicts and leaderboard are byte-identical to a
  one-process run of the same system;
* the runs are on the tracking server; ``dvc exp run -S model=...`` on the head node then finds every
  answer in the shared results store (0 requests) and records the experiment.

Not part of ``make test`` (apt install and a cluster take minutes): ``make test-cluster``, which CI
runs after ``make test`` (.ci/run). It needs root to install and run the daemons; when SLURM cannot
be installed the test fails and says why (it is never skipped).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.cluster
SCRIPT = Path(__file__).with_name("slurm.sh")
BIN = Path(sys.executable).parent
LENGTHS = ("32k", "48k", "64k")
SHARDS = 4
CONCURRENCY = 2  # requests in flight per job: at most what a cancelled job can have to send again


def _env(extra: dict | None = None) -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        **(extra or {}),
    }
    for k in ("DVC_ROOT", "MEMLENS_ROOT", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(k, None)
    return env


def sh(args, cwd: Path, env: dict, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess:
    """Run a command in a process group of its own, which is killed whole if the test stops early or
    when ``timeout`` (s) has passed: every step of the test has a deadline."""
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        shell=isinstance(args, str),
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    r = subprocess.CompletedProcess(args, proc.returncode, out, err)
    if check and r.returncode != 0:
        raise AssertionError(f"{args} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-4000:]}")
    return r


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------ fixtures
def cluster_script(action: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    """tests/cluster/slurm.sh ACTION in a process group of its own, with a deadline: a step that
    does not finish in time fails the test with what it printed (never a hang)."""
    try:
        return sh(["bash", str(SCRIPT), action, *args], Path("/"), _env(), timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"slurm.sh {action} did not finish within {timeout:.0f} s: {e.stderr or ''}"[-3000:])


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node SLURM cluster for this module: installed (apt) if needed, started, always stopped."""
    inst = cluster_script("install", timeout=1200)
    if inst.returncode != 0:
        pytest.fail(f"SLURM could not be installed, so the cluster test cannot run: {inst.stderr[-2000:]}")
    folder = tmp_path_factory.mktemp("slurm")
    try:
        start = cluster_script("start", str(folder), timeout=300)
        if start.returncode != 0:
            pytest.fail(f"the SLURM cluster did not start: {start.stderr[-3000:]}")
        yield {"SLURM_CONF": str(folder / "slurm.conf")}
    finally:
        cluster_script("stop", str(folder), timeout=300)


class MlflowServer:
    """``mlflow server`` on 127.0.0.1 with SQLite behind it, in its own process group (stopped by pid)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(folder / "mlflow-server.log", "wb")  # noqa: SIM115 - closed in stop()
        store, artifacts = f"sqlite:///{folder / 'mlflow.db'}", str(folder / "artifacts")
        argv = ["server", "--backend-store-uri", store, "--artifacts-destination", artifacts, "--workers", "1"]
        self.proc = subprocess.Popen(
            [str(BIN / "mlflow"), *argv, "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**_env(), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        )

    def wait(self, timeout: float = 600) -> str:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            assert self.proc.poll() is None, (self.folder / "mlflow-server.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as r:
                    if r.status == 200:
                        return self.url
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError("the MLflow server did not become healthy")

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        self.log.close()


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    server = MlflowServer(tmp_path_factory.mktemp("mlflow"))  # starts now, in parallel with the build
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the repository (git + DVC) whose defaults are the tiny scale at 32k, 48k and 64k,
    after `dvc repro` (the benchmark built, the default system evaluated), committed."""
    dest = tmp_path_factory.mktemp("cluster") / "repo"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        if f.startswith(("data/", "reports/")) or f == "dvc.lock" or not (REPO / f).is_file():
            continue
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, dest / f)
    for rel, old, new in (
        ("data/default.yaml", "\nscale: small ", "\nscale: tiny "),
        ("data/default.yaml", "\nlengths: []   ", "\nlengths: [32k, 48k, 64k]   "),
        ("images/synthetic.yaml", "\nworkers: 0 ", "\nworkers: 1 "),
        # the diagnose stage without OCR and dense models
        ("memory/default.yaml", "\nadapters: [markers, ocr, oracle_caption]", "\nadapters: [markers]"),
        ("memory/default.yaml", "\nretrievers: [bm25, dense]", "\nretrievers: [bm25]"),
    ):
        conf = dest / "conf" / rel
        text = conf.read_text()
        assert old in text, (rel, old)
        conf.write_text(text.replace(old, new, 1))
    env = _env({"MEMLENS_CACHE": str(dest / ".memlens_cache")})
    sh("git init -q && memlens compose > /dev/null && git add -A && git commit -qm init", dest, env)
    sh("dvc repro", dest, env, timeout=1800)
    sh("git add -A && git commit -qm baseline", dest, env)
    return dest


# ------------------------------------------------------------------------------------------ helpers
def system_overrides(server) -> list[str]:
    return [
        "model=openai_compatible",
        f"model.base_url={server.base_url}",
        "model.model=fake-vl",
        f"model.concurrency={CONCURRENCY}",
        "model.backoff_base_s=0.05",
        "eval.mode=text_only",
    ]


def segments(root: Path) -> list[dict]:
    """Per segment of the project's results store: its header and the number of complete records."""
    out = []
    for p in sorted((root / ".memlens_cache" / "results").glob("*/segments/*.jsonl")):
        data = p.read_bytes()
        lines = data[: data.rfind(b"\n") + 1].splitlines()
        if not lines:
            continue
        head = json.loads(lines[0]).get("segment", {})
        out.append(
            {
                "path": p,
                "header": head,
                "records": sum(b'"key":"' in x for x in lines),
                "sealed": lines[-1].startswith(b'{"closed"'),
            }
        )
    return out


def tree(root: Path, sub: str) -> dict[str, bytes]:
    base = root / sub
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def tail(path: Path, n: int = 3000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


def kill_group(proc: subprocess.Popen) -> None:
    """Stop a process started in its own session, with everything it started, if it still runs."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def squeue_active(env: dict) -> list[str]:
    out = sh(["squeue", "--noheader", "--array", "--format=%i|%T"], Path("/"), env, timeout=60).stdout
    return [line for line in out.splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------ the test
def test_sharded_sweep_on_slurm_with_a_cancelled_job(slurm, mlflow_server, project, tmp_path):
    root = project
    ref = tmp_path / "one-process"
    shutil.copytree(root, ref, symlinks=True)
    env = _env({**slurm, "MEMLENS_CACHE": str(root / ".memlens_cache")})
    ref_env = _env({"MEMLENS_CACHE": str(ref / ".memlens_cache")})
    lengths = f"eval.lengths=[{','.join(LENGTHS)}]"
    # the reference: one process, its own results store and MLflow store (answers do not depend on
    # the server instance: its address is no part of the system identity)
    with FakeOpenAIServer(record_requests=False) as quick:
        ref_args = [*system_overrides(quick), lengths, f"tracking.uri=sqlite:///{ref / 'mlflow-ref.db'}"]
        for stage in ("evaluate", "judge", "report"):
            sh(["memlens", stage, *ref_args], ref, ref_env)
        n_items = quick.request_count
    assert n_items == 25 * len(LENGTHS)
    # latency: a job is still answering when it is cancelled
    with FakeOpenAIServer(latency_s=3.0, record_requests=False) as server, contextlib.ExitStack() as stack:
        system = system_overrides(server)
        url = mlflow_server.wait()
        sweep = [
            sys.executable, "-m", "memlens.sweep", "-m", "hydra/launcher=slurm_cpu", "hydra.launcher.partition=debug",
            "hydra.launcher.timeout_min=60", *system, "eval.lengths=" + ",".join(f"[{n}]" for n in LENGTHS),
            "--shards", str(SHARDS), f"tracking.uri={url}",
        ]  # fmt: skip
        # its output goes to files (a pipe nobody reads while we wait would fill and block it), in a
        # process group of its own that is killed whole if the test stops early
        first_out, first_err = tmp_path / "first.out", tmp_path / "first.err"
        with open(first_out, "wb") as out, open(first_err, "wb") as errf:
            first = subprocess.Popen(
                [*sweep, f"hydra.sweep.dir={root / 'data/sweeps/first'}"],
                cwd=root,
                env=env,
                stdout=out,
                stderr=errf,
                start_new_session=True,
            )
        stack.callback(kill_group, first)
        # cancel a job while it answers (its segment has answers and no seal yet), one of the largest
        # shard, so that it still has work when SLURM's KillWait (5 s) has passed; the array task id
        # is the job's index in the sweep (lengths x shards, in that order)
        from memlens.core.config import Paths
        from memlens.core.items import BuiltBenchmark
        from memlens.eval.results import shard_of

        ids = [it.question_id for it in BuiltBenchmark(Paths(root)).items(LENGTHS[0])]
        sizes = [sum(shard_of(q, SHARDS) == i for q in ids) for i in range(SHARDS)]
        largest = sizes.index(max(sizes))
        assert max(sizes) >= 6, sizes
        targets = {str(li * SHARDS + largest) for li in range(len(LENGTHS))}
        t0, victim = time.monotonic(), None
        while victim is None:
            assert first.poll() is None, f"the sweep ended before a job could be cancelled:\n{tail(first_err)}"
            assert time.monotonic() - t0 < 900, "no job started answering"
            for seg in segments(root):
                if seg["records"] >= 1 and not seg["sealed"] and seg["header"].get("slurm_array_task_id") in targets:
                    victim = seg
                    break
            time.sleep(0.1)
        head = victim["header"]
        task = f"{head['slurm_array_job_id']}_{head['slurm_array_task_id']}"
        sh(["scancel", task], root, env, timeout=60)
        first.wait(timeout=900)
        err = first_err.read_text()
        assert first.returncode != 0, "the sweep succeeded although a job was cancelled"
        assert "resubmit the same command" in err, err[-3000:]
        assert not (root / "data/predictions/fake-vl").exists()  # no final step over a missing shard
        t0 = time.monotonic()
        while squeue_active(env) and time.monotonic() - t0 < 300:
            time.sleep(1)
        assert not squeue_active(env), "jobs of the first submission still run"
        cancelled = next(s for s in segments(root) if s["path"] == victim["path"])
        assert not cancelled["sealed"]  # killed in the middle, as intended
        answered_first = server.request_count

        # the same command again: the finished jobs send nothing, the cancelled one resumes
        again = sh([*sweep, f"hydra.sweep.dir={root / 'data/sweeps/again'}"], root, env)
        resent = server.request_count - n_items
        assert answered_first < n_items
        assert 0 <= resent <= CONCURRENCY, f"{resent} requests sent again (in flight at the cancel: <= {CONCURRENCY})"
        from memlens.eval.results import ResultsStore, system_folders

        (folder,) = [
            f for f in system_folders(root / ".memlens_cache/results") if "fake-vl" in (f / "system.json").read_text()
        ]
        stats = ResultsStore(folder.parent, json.loads((folder / "system.json").read_text())["identity"]).stats()
        assert stats.answers == n_items and stats.failures == 0  # nothing lost
        assert stats.duplicates <= CONCURRENCY
        # byte-identical views and verdicts, the same leaderboard as the one-process run
        assert tree(root, "data/predictions/fake-vl") == tree(ref, "data/predictions/fake-vl")
        assert tree(root, "data/verdicts/fake-vl") == tree(ref, "data/verdicts/fake-vl")
        for name in ("leaderboard.csv", "leaderboard.md"):
            assert (root / "reports" / name).read_text() == (ref / "reports" / name).read_text(), name
        assert "final step" in again.stdout + again.stderr

        # the runs are on the tracking server
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=url)
        runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
        mine = [r for r in runs if r.data.tags.get("memlens.system") == "fake-vl"]
        lengths_logged = sorted(
            r.data.tags.get("memlens.length") for r in mine if r.data.tags.get("memlens.role") == "length"
        )
        assert lengths_logged == sorted(LENGTHS)
        assert all(
            r.data.tags.get("memlens.complete") == "true" for r in mine if r.data.tags.get("memlens.role") == "length"
        )
        # the server keeps the artifacts (no local file path handed to the client)
        experiment = client.get_experiment(mine[0].info.experiment_id)
        assert experiment.artifact_location.startswith("mlflow-artifacts:"), experiment.artifact_location
        assert any((mlflow_server.folder / "artifacts").rglob("*.jsonl")), "no artifact reached the server"

        # back into DVC on the head node: every answer is in the shared store, nothing is sent
        sent = server.request_count
        exp = " ".join(f"-S '{o}'" for o in [*system, lengths, f"tracking.uri={url}"])
        done = sh(f"dvc exp run -n cluster-fake-vl {exp}", root, env)
        assert server.request_count == sent, "dvc exp run sent requests although every answer was stored"
        for n in LENGTHS:
            assert f"evaluate fake-vl/text_only@{n}: 25 items, 25 reused from the results store, 0 new" in done.stderr
        assert "cluster-fake-vl" in sh("dvc exp list --name-only", root, env).stdout
        shown = json.loads(sh("dvc exp show --json", root, env).stdout)
        assert "cluster-fake-vl" in json.dumps(shown)
        assert tree(root, "data/predictions/fake-vl") == tree(ref, "data/predictions/fake-vl")
        runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
        parents = [
            r
            for r in runs
            if r.data.tags.get("memlens.system") == "fake-vl" and r.data.tags.get("memlens.role") == "evaluation"
        ]
        assert len(parents) == 1 and parents[0].data.tags.get("memlens.dvc_exp_name") == "cluster-fake-vl"
    print(
        f"cluster sweep: {n_items} items, {answered_first} answered before the cancel, {resent} sent again, "
        f"{stats.duplicates} duplicates in the store, views/verdicts/leaderboard byte-identical to one process"
    )
