"""The DVC pipeline on a fresh copy of the repository whose conf/ defaults are the tiny scale:

* `dvc repro` builds and evaluates, a second `dvc repro` is a no-op;
* `dvc plots show` renders accuracy by length with a categorical x axis and one line per type;
* `dvc push` to the default remote (.dvc/config: ~/.cache/memlens/dvc-remote, here under a temporary
  HOME) and `dvc pull` in a fresh `git clone` restore data/ byte-identical;
* `make repro` runs each baseline as a named DVC experiment (only evaluate/judge/report run), and a
  second `make repro` starts no experiment, runs no stage and logs no MLflow run;
* `make exps` shows only the system and the accuracy columns.

`MAKE ...` (`make -o install -o install-ml ...`) skips every venv install: the
tests run in the venv they were started from, and a second venv with the ML stack would take ~10 GB."""

import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.workflow]  # `make test-workflow`, run by CI after `make test`
BIN = Path(sys.executable).parent
MAKE = "make -o install -o install-ml -o install-agents -o install-mem0"
CONSTRUCTION = ("ontology", "crawl", "filter", "generate", "assemble", "validate", "export")


def sh(cmd, cwd, check=True, **env_extra):
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        **env_extra,
    }
    env.pop("DVC_ROOT", None)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):  # not a sub-make of `make test`: no "Entering directory"
        env.pop(k, None)
    timeout = float(os.environ.get("MEMLENS_TEST_SH_TIMEOUT", "900"))  # a loaded machine: more
    r = subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True, env=env, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def set_default(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A HOME of its own, so the default remote (~/.cache/memlens/dvc-remote) is a temporary folder."""
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory):
    dest = tmp_path_factory.mktemp("dvcrepo") / "repo"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        if f.startswith(("data/", "reports/")) or f == "dvc.lock":
            continue
        src = REPO / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    # the copy's defaults are the tiny scale, so `dvc exp run` (which composes conf/) stays tiny
    set_default(dest / "conf" / "data" / "default.yaml", "\nscale: small ", "\nscale: tiny ")
    set_default(dest / "conf" / "images" / "synthetic.yaml", "\nworkers: 0 ", "\nworkers: 1 ")
    sh("git init -q && memlens compose > /dev/null && git add -A && git commit -qm init", dest)
    return dest


@pytest.fixture(scope="module")
def built(repo_copy):
    """The copy after `dvc repro`, committed like the repository's dvc.lock and reports/."""
    r = sh("dvc repro", repo_copy)
    sh("git add -A && git commit -qm baseline", repo_copy)
    return repo_copy, r.stdout


def mlflow_runs(root: Path) -> int:
    with sqlite3.connect(root / "mlflow.db") as db:
        return db.execute("select count(*) from runs").fetchone()[0]


def test_repro_then_noop(built):
    root, out = built
    for st in (*CONSTRUCTION, "evaluate", "judge", "report"):
        assert f"Running stage '{st}'" in out, st
    assert json.loads((root / "reports" / "metrics.json").read_text())["system"] == "refuse"
    r2 = sh("dvc repro", root)
    assert "Data and pipelines are up to date" in r2.stdout, r2.stdout
    assert "Running stage" not in r2.stdout


def test_plots_categorical_x_one_line_per_type(built, tmp_path):
    root, _ = built
    shown = json.loads(sh("dvc plots show --json", root).stdout)
    assert not shown.get("errors"), shown["errors"]
    (vega,) = shown["data"]["reports/plots/accuracy_by_length.csv"]
    assert vega["type"] == "vega"
    spec = vega["content"]
    x = spec["encoding"]["x"]
    assert x["field"] == "length" and x["type"] in ("ordinal", "nominal"), x
    # ordered by token count (parseFloat('128k') = 128), not alphabetically ('128k' < '32k')
    order = next(t for t in spec["transform"] if t.get("as") == x["sort"]["field"])
    assert order["calculate"] == "parseFloat(datum['length'])"
    assert spec["encoding"]["color"]["field"] == "type"
    assert spec["encoding"]["y"]["field"] == "accuracy"
    rows = spec["data"]["values"]
    lengths = {r["length"] for r in rows}
    types = {r["type"] for r in rows}
    assert lengths == {"32k", "64k"}
    assert types == {"overall", "IE", "MSR", "TR", "KU", "AR"}
    assert len(rows) == len(lengths) * len(types)  # one point per (type, length): one line per type
    assert "reports/plots/accuracy_by_length.png" in shown["data"]
    # the HTML is written offline; it only *references* the vega scripts on a CDN for viewing
    out = tmp_path / "plots"
    sh(f"dvc plots show -o {out}", root)
    html = (out / "index.html").read_text()
    assert '"field": "length", "type": "ordinal"' in html
    urls = set(re.findall(r"https?://[^\"'\s]+", html))
    assert urls and all(
        u.startswith(("https://cdn.jsdelivr.net/npm/vega", "https://vega.github.io/schema/")) for u in urls
    )


def files_under(root: Path) -> dict[str, bytes]:
    """The files under ``root``, without run-time folders (``.locks``, ``.staging``: the view locks and
    staging of ``memlens.eval.views``, which are no stage's output and so never pushed or pulled)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def test_remote_push_then_pull_in_a_fresh_clone(built, home, tmp_path):
    root, _ = built
    remote = home / ".cache" / "memlens" / "dvc-remote"
    r = sh(f"{MAKE} remote", root, HOME=str(home))
    assert remote.is_dir() and str(remote) in r.stdout
    assert "files pushed" in sh("dvc push", root, HOME=str(home)).stdout
    assert any(remote.rglob("*"))
    clone = tmp_path / "clone"
    sh(f"git clone -q {root} {clone}", tmp_path)
    assert not (clone / ".dvc" / "cache").exists() and not (clone / "data" / "images").exists()
    sh("dvc pull", clone, HOME=str(home))
    want, got = files_under(root / "data"), files_under(clone / "data")
    assert len(want) > 100 and got.keys() == want.keys()
    assert [f for f in want if got[f] != want[f]] == []
    # DVC_REMOTE_DIR moves the remote for this clone only (.dvc/config.local, git-ignored)
    other = tmp_path / "elsewhere"
    sh(f"{MAKE} remote DVC_REMOTE_DIR={other}", clone, HOME=str(home))
    assert other.is_dir() and str(other) in (clone / ".dvc" / "config.local").read_text()
    assert sh("dvc config remote.local.url", clone, HOME=str(home)).stdout.strip() == str(other)
    assert sh("git status --porcelain", clone).stdout == ""


def test_make_repro_is_idempotent(built, home):
    root, _ = built
    t0 = time.monotonic()
    r1 = sh(f"{MAKE} repro", root, HOME=str(home))
    first = time.monotonic() - t0
    out = r1.stdout
    names = set(sh("dvc exp list --name-only", root).stdout.split())
    assert names == {"refuse", "chance"}, out
    # the chance experiment re-runs only the evaluation stages
    chance = out.split("== dvc exp run -S model=chance -n chance", 1)[1].split("\n== ", 1)[0]
    for st in ("evaluate", "judge", "report"):
        assert f"Running stage '{st}'" in chance, chance
    for st in CONSTRUCTION:
        assert f"Running stage '{st}'" not in chance, st
    assert not (root / ".venv").exists(), "make repro installed a second venv in the copy"
    # the workspace is back on the default system
    assert json.loads((root / "reports" / "metrics.json").read_text())["system"] == "refuse"
    assert sh("git status --porcelain", root).stdout == ""
    board = (root / "reports" / "leaderboard.md").read_text()
    assert "chance" in board and "refuse" in board
    runs = mlflow_runs(root)

    t0 = time.monotonic()
    r2 = sh(f"{MAKE} repro", root, HOME=str(home))
    second = time.monotonic() - t0
    assert "Running stage" not in r2.stdout and "dvc exp run" not in r2.stdout, r2.stdout
    assert set(sh("dvc exp list --name-only", root).stdout.split()) == names
    assert mlflow_runs(root) == runs
    print(f"make repro: first {first:.1f} s, second {second:.1f} s")

    # make exps: the system and the accuracy columns only
    table = sh(f"{MAKE} exps", root).stdout
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    assert header[0] == "Experiment" and header[-1] == "model.name", header
    acc = header[1:-1]
    assert acc and all(re.fullmatch(r"\d+k\.acc(__[A-Z]+)?", c) for c in acc), acc
    assert {"32k.acc", "64k.acc__AR"} <= set(acc)
    assert "[chance]" in table and "[refuse]" in table


def _stored(root: Path) -> int:
    from tests.support.results import stored

    return stored(root)


def test_switching_systems_keeps_every_answer_and_a_killed_experiment_resumes(built):
    """`dvc exp run -S model=...` back and forth re-asks nothing, the cross-system analyses see every
    system judged on this build, and a `dvc exp run` killed mid-evaluation resumes where it stopped."""
    from tests.support.fake_openai import FakeOpenAIServer

    root, _ = built
    sh("dvc exp run -S model=chance", root)
    again = sh("dvc exp run -S model=refuse", root)
    assert re.search(
        r"evaluate refuse/standard@32k: 25 items, 25 reused from the results store, 0 new", again.stderr
    ), again.stderr[-3000:]
    archive = next((root / ".memlens_cache" / "verdicts").iterdir())
    assert {p.name for p in archive.iterdir()} >= {"refuse", "chance"}
    index = (root / "reports" / "index.html").read_text()
    assert "chance" in index and "refuse" in index

    n0 = _stored(root)
    with FakeOpenAIServer(latency_s=0.3, record_requests=False) as server:
        args = (
            f"-S model=openai_compatible -S model.base_url={server.base_url} -S model.model=fake-vl "
            "-S model.concurrency=2"
        )
        env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
        for k in ("DVC_ROOT", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
            env.pop(k, None)
        # No shell in between: the killed process must be our own child so that `wait()` reaps it. A shell's
        # orphaned `dvc` child stays a zombie where PID 1 does not reap, and DVC sees its lock as held.
        proc = subprocess.Popen(
            [str(BIN / "dvc"), "exp", "run", *shlex.split(args)],
            cwd=root,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        t0 = time.monotonic()
        while _stored(root) < n0 + 4:
            assert proc.poll() is None, "the experiment finished before it could be killed"
            assert time.monotonic() - t0 < 300, "no progress"
            time.sleep(0.05)
        os.killpg(proc.pid, 9)
        proc.wait()
        killed_at = _stored(root) - n0
        before = server.request_count
        sh(f"dvc exp run {args}", root)
        resumed = server.request_count - before
    total = 50  # tiny: 25 questions at 32k and 64k
    assert killed_at < total
    assert total - killed_at <= resumed <= total - killed_at + 2 * 2  # only in-flight requests repeat


def _exp_file(root: Path, name: str, path: str) -> str:
    refs = sh("git for-each-ref --format='%(refname)' refs/exps", root).stdout.split()
    ref = next(r for r in refs if r.endswith(f"/{name}"))
    return sh(f"git show {ref}:{path}", root).stdout


def test_queued_experiments_run_two_systems_at_once_into_the_shared_store_and_temp_ones_stay_apart(built):
    """`dvc queue start -j 2`: two systems at once, each in its own executor under .dvc/tmp/exps/, each
    evaluating its own parameters into the one results store of the main repository (no MEMLENS_CACHE
    set): every answer kept, none mixed; `--temp` likewise; the workspace is untouched."""
    from tests.support.fake_openai import FakeOpenAIServer

    root, _ = built
    seen: list[tuple[str, float]] = []

    def responder(body):
        seen.append((body["model"], time.monotonic()))
        return f"answer of {body['model']}"

    workspace = {p: (root / p).read_bytes() for p in ("params.yaml", "dvc.lock", "reports/metrics.json")}
    views = files_under(root / "data" / "predictions")
    with FakeOpenAIServer(latency_s=0.3, responder=responder, record_requests=False) as server:
        common = f"-S model=openai_compatible -S model.base_url={server.base_url} -S model.concurrency=1"
        for name in ("sys-a", "sys-b"):
            sh(f"dvc exp run --queue {common} -S model.model={name} -n q-{name}", root)
        sh("dvc queue start -j 2", root)
        t0 = time.monotonic()
        while True:
            status = sh("dvc queue status", root).stdout
            if status.count("Success") >= 2 or "Failed" in status:
                break
            assert time.monotonic() - t0 < 900, status
            time.sleep(2)
        assert status.count("Success") >= 2, status + sh("dvc queue logs q-sys-a", root, check=False).stdout[-3000:]
        sh("dvc exp run --temp -S model=chance -n t-chance", root)
    # the two systems ran at once
    span = {m: (min(t for n, t in seen if n == m), max(t for n, t in seen if n == m)) for m in ("sys-a", "sys-b")}
    assert span["sys-a"][0] < span["sys-b"][1] and span["sys-b"][0] < span["sys-a"][1], span
    # each experiment evaluated its own system and recorded only its own outputs
    for name, system in (("q-sys-a", "sys-a"), ("q-sys-b", "sys-b"), ("t-chance", "chance")):
        assert f"name: {system}" in _exp_file(root, name, "params.yaml")
        assert json.loads(_exp_file(root, name, "reports/metrics.json"))["system"] == system
    # one shared store in the main repository: 50 answers per system, each the answer of its own system
    answers: dict[str, list[dict]] = {}
    for f in (root / ".memlens_cache" / "results").glob("*/system.json"):
        ident = json.loads(f.read_text())["identity"]
        answers[ident.get("model", ident["_target_"].rsplit(".", 1)[-1])] = [
            json.loads(x)
            for seg in f.parent.glob("segments/*.jsonl")
            for x in seg.read_text().splitlines()
            if '"key":"' in x
        ]
    for system in ("sys-a", "sys-b"):
        recs = answers[system]
        assert len({r["key"] for r in recs if r["ok"]}) == 50, system
        assert {r["text"] for r in recs if r["ok"]} == {f"answer of {system}"}, system
    assert not any((root / ".dvc" / "tmp" / "exps").glob("**/.memlens_cache")), "no store inside an executor"
    # MLflow: one store, every system's runs in it
    with sqlite3.connect(root / "mlflow.db") as db:
        names = {r[0] for r in db.execute("select name from runs")}
    assert any(n.startswith("sys-a") for n in names) and any(n.startswith("sys-b") for n in names)
    assert any(n.startswith("chance") for n in names)
    # the workspace is as it was
    assert {p: (root / p).read_bytes() for p in workspace} == workspace
    assert files_under(root / "data" / "predictions") == views


def test_a_refused_key_leaves_params_yaml_and_every_ref_without_it(built):
    root, _ = built
    import hashlib

    key = "sk-proj-" + hashlib.sha256(b"a key never written").hexdigest()[:24]  # not in any committed file
    before = (root / "params.yaml").read_bytes()
    for how in (f"-S +model.api_key={key}", f"-S model.api_key_env={key}", f"--queue -S model.api_key_env={key}"):
        r = sh(f"dvc exp run {how}", root, check=False)
        assert r.returncode != 0 and "api_key" in r.stdout + r.stderr
        assert (root / "params.yaml").read_bytes() == before
    assert key not in sh("git log --all -p --no-color", root).stdout
    assert key not in sh("git stash list -p", root, check=False).stdout


def test_make_repro_after_other_experiments_leaves_git_clean(built, home):
    """Whatever ran in this copy before (the tests above: other systems in the workspace, a killed
    experiment, queued and temp ones) and then a smoke run of the default system in the workspace
    (the same model name, other parameters): `make repro` leaves git clean, on the full default run."""
    root, _ = built
    sh("dvc exp run -S eval.max_items=2", root)
    assert "max_items: 2" in (root / "params.yaml").read_text()
    assert sh("git status --porcelain", root).stdout != ""  # the smoke run's params.yaml, dvc.lock, reports/
    r = sh(f"{MAKE} repro", root, HOME=str(home))
    assert sh("git status --porcelain", root).stdout == "", r.stdout[-3000:]
    assert "dvc exp run" not in r.stdout, r.stdout  # every experiment of this commit exists: none runs again
    for st in CONSTRUCTION:
        assert f"Running stage '{st}'" not in r.stdout, st
    metrics = json.loads((root / "reports" / "metrics.json").read_text())
    assert metrics["system"] == "refuse"
    assert all(metrics[n]["complete"] and metrics[n]["n"] == 25 for n in ("32k", "64k")), metrics  # tiny: 25 each
