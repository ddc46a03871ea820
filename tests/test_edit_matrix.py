"""The goals of the edit-to-stage matrix (docs/edit-matrix.md, benchmarks/edit_matrix.py), checked
on the current tree: which stages' code (DVC deps, code hash) an edit or an added component changes.

- an edit under the evaluation layer changes no construction stage's code;
- the CLI, the help generator, the sweep, the config composition and validation and the dependency
  tool are no stage's code;
- adding a component of a kind (the files docs/architecture.md names) changes exactly the stages
  that can select that kind.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memlens.cli import STAGES
from memlens.core import codegraph as cg
from tests.support import scaffold

CONSTRUCTION = {s for s, t in STAGES.items() if t.startswith("memlens.construction.")}
#: kind -> the stages that can select one (the documented matrix)
SELECTED_BY = {
    "model": {"evaluate"},
    "agent": {"evaluate"},
    "judge": {"judge"},
    "image_source": {"crawl"},
    "adapter": {"evaluate", "diagnose"},
    "retriever": {"evaluate", "diagnose"},
    "filter_channel": {"filter"},
    "generator": {"generate"},
}


def stage_files(pkg: Path) -> dict[str, set[str]]:
    """stage -> its code files, relative to the folder holding the package."""
    return {
        s: {str(f.relative_to(pkg.parent)) for f in cg.code_files([t.split(":")[0]], pkg)} for s, t in STAGES.items()
    }


@pytest.fixture(scope="module")
def real() -> dict[str, set[str]]:
    return stage_files(cg.PKG)


def invalidated(files: dict[str, set[str]], rel: str) -> set[str]:
    return {s for s, fs in files.items() if rel in fs}


def test_an_edit_under_eval_invalidates_no_construction_stage(real):
    pkg = cg.PKG
    for f in sorted((pkg / "eval").rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            rel = str(f.relative_to(pkg.parent))
            assert not invalidated(real, rel) & CONSTRUCTION, rel


@pytest.mark.parametrize(
    "module", ["cli.py", "clihelp.py", "sweep.py", "core/compose.py", "core/schemas.py", "core/codegraph.py"]
)
def test_cli_help_composition_and_the_dependency_tool_invalidate_nothing(real, module):
    assert invalidated(real, f"memlens/{module}") == set()


def test_an_edit_of_a_component_invalidates_only_the_stages_that_select_its_kind(real):
    """A filter channel's module is only the filter's code, an adapter's only evaluate's and diagnose's."""
    assert invalidated(real, "memlens/construction/filter/channels.py") == {"filter"}
    assert invalidated(real, "memlens/eval/memory/ocr.py") == {"evaluate", "diagnose"}
    assert invalidated(real, "memlens/eval/judge/llm.py") == {"judge"}


@pytest.fixture(scope="module")
def copy(tmp_path_factory, real) -> tuple[Path, dict[str, set[str]]]:
    """A copy of the package (the additions go there) and its stages' code files."""
    root = tmp_path_factory.mktemp("edit-matrix")
    shutil.copytree(cg.PKG, root / "src" / "memlens", ignore=shutil.ignore_patterns("__pycache__"))
    pkg = root / "src" / "memlens"
    files = stage_files(pkg)
    assert files == real  # the copy is the tree
    return pkg, files


@pytest.mark.parametrize("kind", sorted(SELECTED_BY))
def test_adding_a_component_invalidates_only_the_stages_that_can_select_it(copy, kind):
    pkg, before = copy
    root = pkg.parent.parent
    touched = scaffold.add(root, kind, source_only=True)
    assert touched, kind
    try:
        after = stage_files(pkg)
    finally:
        for rel in touched:
            (root / rel).unlink()
    changed = {s for s in STAGES if after[s] != before[s]}
    assert changed == SELECTED_BY[kind], (kind, sorted(changed))
    for s in changed:
        assert after[s] - before[s] == {rel[len("src/") :] for rel in touched}, (kind, s)
