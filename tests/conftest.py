"""Shared fixtures: a tiny benchmark built once per test session in a temporary project folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memlens.core import environment

environment.apply()
os.environ.pop("DVC_ROOT", None)
os.environ.pop("MEMLENS_ROOT", None)
os.environ.pop("MEMLENS_CACHE", None)  # each test project keeps its own results store

REPO = Path(__file__).resolve().parents[1]
BUILD_STAGES = ("ontology", "crawl", "filter", "generate", "assemble")


def make_project(dest: Path) -> Path:
    """A minimal project folder: conf/ copied from the repo."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "conf", dest / "conf", dirs_exist_ok=True)
    return dest


def run_stage(root: Path, stage: str, *overrides: str) -> int:
    from memlens.cli import main

    return main([stage, "--root", str(root), *overrides])


TINY = ("data.scale=tiny", "images.workers=1")


@pytest.fixture(scope="session")
def tiny_project(tmp_path_factory) -> Path:
    """A tiny benchmark (data.scale=tiny) built through every construction stage."""
    root = make_project(tmp_path_factory.mktemp("tiny"))
    for st in BUILD_STAGES:
        assert run_stage(root, st, *TINY) == 0, st
    return root


@pytest.fixture()
def tiny_copy(tiny_project, tmp_path) -> Path:
    """A private copy of the tiny project that a test may modify."""
    dest = tmp_path / "proj"
    shutil.copytree(tiny_project, dest, symlinks=False)
    return dest
