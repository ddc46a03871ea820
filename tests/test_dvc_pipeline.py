"""The DVC pipeline on a fresh copy of the repository at tiny scale: `dvc repro` builds and evaluates,
a second `dvc repro` is a no-op, `dvc exp run -S model=chance` re-runs only evaluate/judge/report,
and `dvc exp show` lists the experiment with per-type accuracies."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


def sh(cmd, cwd, check=True):
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    env.pop("DVC_ROOT", None)
    r = subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True, env=env, timeout=900)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


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
    sh(
        "git init -q && memlens compose data.scale=tiny images.workers=1 > /dev/null && git add -A && git commit -qm init",
        dest,
    )
    return dest


def test_repro_noop_and_experiment(repo_copy):
    r = sh("dvc repro", repo_copy)
    assert "Running stage 'crawl'" in r.stdout and "Running stage 'report'" in r.stdout
    assert json.loads((repo_copy / "reports" / "metrics.json").read_text())["system"] == "refuse"
    r2 = sh("dvc repro", repo_copy)
    assert "up to date" in r2.stdout, r2.stdout
    sh("git add -A && git commit -qm baseline", repo_copy)
    r3 = sh("dvc exp run -S data.scale=tiny -S images.workers=1 -S model=chance -n exp-chance", repo_copy)
    out = r3.stdout
    for st in ("evaluate", "judge", "report"):
        assert f"Running stage '{st}'" in out, out
    for st in ("ontology", "crawl", "filter", "generate", "assemble", "validate", "export"):
        assert f"Running stage '{st}'" not in out, st
    show = json.loads(sh("dvc exp show --json", repo_copy).stdout)
    blob = json.dumps(show)
    assert "exp-chance" in blob and "acc__IE" in blob
    board = (repo_copy / "reports" / "leaderboard.md").read_text()
    assert "chance" in board and "refuse" in board
