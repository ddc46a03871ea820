"""One way to add a component, the files docs/architecture.md names and no other: in a copy of the
project, one throwaway component of each kind (tests/support/scaffold.py) is added with exactly the
files of its row in "Where to add things", and `memlens list`, the stage help, the dry run (for
systems, on the tiny benchmark) and the architecture tests pick every one of them up."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, TINY
from tests.support import scaffold

pytestmark = pytest.mark.slow

#: kind -> (the `memlens list` argument that lists it, the help/dry-run overrides that select it)
SELECT = {
    "model": ("models", ["evaluate", "model=zz-model"]),
    "system": ("models", ["evaluate", "model=zz-system"]),
    "agent": ("agents", ["evaluate", "model=zz-agent"]),
    "judge": ("judges", ["judge", "judge=zz-judge"]),
    "image_source": ("images", ["crawl", "images=zz-image-source"]),
    "adapter": ("adapters", ["evaluate", "model=memory-t1", "model.adapter=zz_adapter"]),
    "retriever": ("retrievers", ["diagnose", "memory.retrievers=[zz_retriever]"]),
    "filter_channel": ("channels", ["filter", "filter.channels=[zz_filter_channel]"]),
    "generator": ("generators", ["generate", "generator.name=zz_generator"]),
    "question_type": ("types", ["crawl"]),
}
#: what each kind's stage help shows of it
HELP_SHOWS = {
    "model": "model.answer",
    "system": "model.api_key_env",
    "agent": "model.reply",
    "judge": "judge.verdict",
    "image_source": "conf/images/zz-image-source.yaml",
    "adapter": "model.adapter",
    "retriever": "zz_retriever",
    "filter_channel": "zz_filter_channel",
    "generator": "zz_generator",
}
#: the systems whose dry run runs on the tiny benchmark
DRY_RUN = {
    "model": ["model=zz-model"],
    "system": ["model=zz-system"],
    "agent": ["model=zz-agent"],
    "adapter": ["model=memory-t1", "model.adapter=zz_adapter"],
}


def documented_files() -> dict[str, list[str]]:
    """kind -> the files its row of "Where to add things" names."""
    text = (REPO / "docs" / "architecture.md").read_text()
    part = text.split("### Where to add things", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in part.splitlines():
        m = re.match(r"^\| `(\w+)` \| (.+?) \| .* \|$", line)
        if m:
            out[m.group(1)] = sorted(re.findall(r"`([^`]+)`", m.group(2)))
    return out


def test_the_docs_name_exactly_the_files_each_kind_touches():
    from memlens.core.registry import KINDS

    docs = documented_files()
    assert set(docs) == set(scaffold.FILES) == set(KINDS) | {"system"}
    for kind, files in docs.items():
        assert files == scaffold.paths(kind), kind


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A copy of the project with one throwaway component of every kind, its generated files
    (dvc.yaml's deps, params.yaml) regenerated as the docs say."""
    root = tmp_path_factory.mktemp("components") / "memlens"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("src", "conf", "tests", "docs"):
        shutil.copytree(REPO / name, root / name, ignore=ignore)
    for name in ("dvc.yaml", "params.yaml", "pyproject.toml"):
        shutil.copy2(REPO / name, root / name)
    touched = [rel for kind in scaffold.FILES for rel in scaffold.add(root, kind)]
    assert {r.split("/")[0] for r in touched} <= {"src", "conf", "docs"}
    for cmd in (["deps", "--write"], ["compose"]):
        assert memlens(root, *cmd, "--root", str(root)).returncode == 0
    return root


def memlens(root: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "MEMLENS_CACHE": str(root / ".cache")}
    code = "import sys; from memlens.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd or root, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("kind", sorted(SELECT))
def test_memlens_list_shows_it(project, kind):
    """`memlens list <what>` shows the new option (conf/ groups), type or component; `memlens list
    kinds` every new component under its kind."""
    what, _ = SELECT[kind]
    out = memlens(project, "list", what, "--root", str(project))
    assert out.returncode == 0, out.stderr
    if kind == "question_type":
        shown = scaffold.QTYPE
    elif kind in ("system", "model", "agent", "judge", "image_source"):
        shown = scaffold.option_of(kind)
    else:
        shown = scaffold.name_of(kind)
    assert shown in out.stdout, out.stdout
    if kind != "system":
        kinds = memlens(project, "list", "kinds", "--root", str(project)).stdout
        row = next(line for line in kinds.splitlines() if line.startswith(kind + " "))
        assert scaffold.name_of(kind) in row, row


@pytest.mark.parametrize("kind", sorted(SELECT))
def test_the_stage_help_takes_it(project, kind):
    _, (stage, *overrides) = SELECT[kind]
    out = memlens(project, stage, "--help", "--root", str(project), *overrides)
    assert out.returncode == 0, out.stderr
    if kind in HELP_SHOWS:
        assert HELP_SHOWS[kind] in out.stdout, out.stdout


@pytest.mark.parametrize("kind", sorted(DRY_RUN))
def test_the_dry_run_takes_it(project, tiny_project, tmp_path, kind):
    data = tmp_path / "bench"
    shutil.copytree(tiny_project, data, symlinks=False)
    shutil.copytree(project / "conf", data / "conf", dirs_exist_ok=True)  # the project's conf/, with its additions
    out = memlens(project, "evaluate", "--dry-run", "--root", str(data), *TINY, *DRY_RUN[kind])
    assert out.returncode == 0, out.stderr
    assert "nothing is sent" in out.stdout


def test_the_architecture_and_config_tests_pass_with_it(project):
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "tests/test_architecture.py",
        "tests/evaluate/test_model_configs.py::test_every_model_config_instantiates_offline",
        "tests/evaluate/test_model_configs.py::test_roster_entry",
        "tests/evaluate/test_model_configs.py::test_gpu_models_and_plan",
        "tests/test_settings.py::test_option_files_are_complete_or_rely_on_documented_defaults",
        "tests/test_config.py::test_committed_params_yaml_is_the_composition_of_conf",
    ]
    out = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
