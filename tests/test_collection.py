"""Every test file on disk is collected: a folder that pytest (or its ``norecursedirs``) skips, a file
whose name pytest does not match, or a module that fails to import would silently drop tests.

Run as a subprocess of ``pytest --collect-only`` over the same ``tests/`` folder and the project's
own pytest configuration, so it sees exactly what ``make test`` and CI collect.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"


def test_files_on_disk() -> list[str]:
    """Every ``test_*.py`` / ``*_test.py`` under tests/, as a path relative to the repository."""
    return sorted(
        p.relative_to(REPO).as_posix()
        for p in TESTS.rglob("*.py")
        if (p.name.startswith("test_") or p.name.endswith("_test.py")) and "__pycache__" not in p.parts
    )


test_files_on_disk.__test__ = False  # a helper, not a test


def collected_files(args: list[str]) -> tuple[set[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    files = {line.split("::", 1)[0] for line in proc.stdout.splitlines() if "::" in line}
    return files, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.slow
def test_every_test_file_on_disk_is_collected():
    on_disk = set(test_files_on_disk())
    assert len(on_disk) > 50, "the scan of tests/ found almost nothing"
    files, output = collected_files(["tests"])
    missing = sorted(on_disk - files)
    assert not missing, f"test files on disk that pytest does not collect: {missing}\n{output}"


def test_the_check_sees_a_skipped_folder(tmp_path):
    """The scan is not vacuous: a folder named ``build`` (skipped by pytest's default ``norecursedirs``)
    holding a test file is found on disk by the scan and not collected by pytest."""
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "test_hidden.py").write_text("def test_x():\n    assert 1 + 1 == 2\n")
    (tmp_path / "test_seen.py").write_text("def test_y():\n    assert 2 * 2 == 4\n")
    (tmp_path / "conftest.py").write_text("")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(tmp_path),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    collected = {Path(line.split("::", 1)[0]).name for line in proc.stdout.splitlines() if "::" in line}
    assert "test_seen.py" in collected, proc.stdout + proc.stderr
    assert "test_hidden.py" not in collected, "pytest's defaults no longer skip build/: the guard is untested"


def test_no_source_or_test_folder_is_named_like_a_skipped_one():
    """Folder names that pytest's ``norecursedirs``, black's excludes or the common Python
    ``.gitignore`` template (unanchored ``build/``, ``dist/``) skip must not hold project code."""
    skipped = {"build", "dist", "venv", "node_modules", "CVS", "_darcs"}
    bad = sorted(
        p.relative_to(REPO).as_posix()
        for top in ("src", "tests", "benchmarks")
        for p in (REPO / top).rglob("*")
        if p.is_dir() and p.name in skipped
    )
    assert not bad, f"folders named like ones tools skip: {bad}"
