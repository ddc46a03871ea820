"""The persistent module-scan cache of :mod:`memlens.core.codegraph`: same graph and hash as parsing,
an edited file parsed again, a damaged or unwritable cache only costs a parse."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlens.core import codegraph as cg


@pytest.fixture()
def pkg(tmp_path: Path) -> Path:
    """A small copy of a package: three modules, one importing another."""
    root = tmp_path / "src" / "memlens"
    (root / "core").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "core" / "__init__.py").write_text("")
    (root / "core" / "a.py").write_text("from memlens.core import b\n")
    (root / "core" / "b.py").write_text("import os\n")
    return root


def _parses(monkeypatch) -> list[str]:
    calls: list[str] = []
    real = cg._scan_source

    def counting(mod, path, source):
        calls.append(mod)
        return real(mod, path, source)

    monkeypatch.setattr(cg, "_scan_source", counting)
    return calls


def _fresh_process() -> None:
    """What a new process starts with: no in-process memo of scans or cache entries."""
    cg._scan_file.cache_clear()
    cg._disk_entries.cache_clear()


def test_second_process_parses_nothing_and_agrees(pkg, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_CACHE", str(tmp_path / "cache"))
    calls = _parses(monkeypatch)
    _fresh_process()
    first = cg.import_graph(pkg)
    h1 = cg.code_hash("memlens.core.a", pkg=pkg)
    assert sorted(calls) == ["memlens", "memlens.core", "memlens.core.a", "memlens.core.b"]
    assert first["memlens.core.a"] >= {"memlens.core.b"}
    calls.clear()
    _fresh_process()
    assert cg.import_graph(pkg) == first
    assert cg.code_hash("memlens.core.a", pkg=pkg) == h1
    assert calls == []  # every scan came from the cache


def test_edited_file_is_parsed_again(pkg, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_CACHE", str(tmp_path / "cache"))
    calls = _parses(monkeypatch)
    _fresh_process()
    cg.import_graph(pkg)
    (pkg / "core" / "b.py").write_text("from memlens.core import a  # now b imports a too\n")
    calls.clear()
    _fresh_process()
    graph = cg.import_graph(pkg)
    assert calls == ["memlens.core.b"]
    assert "memlens.core.a" in graph["memlens.core.b"]


def test_same_source_in_another_module_is_not_confused(pkg, tmp_path, monkeypatch):
    """The key holds the module name: a copy of a file under another name resolves its own relative imports."""
    monkeypatch.setenv("MEMLENS_CACHE", str(tmp_path / "cache"))
    (pkg / "core" / "c.py").write_text("from . import b\n")
    (pkg / "other").mkdir()
    (pkg / "other" / "__init__.py").write_text("")
    (pkg / "other" / "b.py").write_text("")
    shutil.copy(pkg / "core" / "c.py", pkg / "other" / "c.py")
    _fresh_process()
    graph = cg.import_graph(pkg)
    assert "memlens.core.b" in graph["memlens.core.c"]
    assert "memlens.other.b" in graph["memlens.other.c"]


@pytest.mark.parametrize("damage", ["not json", "[1, 2]", '{"x": 1}'])
def test_damaged_cache_is_parsed_around(pkg, tmp_path, monkeypatch, damage):
    monkeypatch.setenv("MEMLENS_CACHE", str(tmp_path / "cache"))
    _fresh_process()
    expected = cg.import_graph(pkg)
    file = cg._cache_file(cg.scan_cache_dir())
    text = damage if damage != '{"x": 1}' else json.dumps({k: 1 for k in json.loads(file.read_text())})
    file.write_text(text)
    _fresh_process()
    assert cg.import_graph(pkg) == expected


def test_unwritable_cache_still_scans(pkg, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("MEMLENS_CACHE", str(blocker))
    _fresh_process()
    assert "memlens.core.b" in cg.import_graph(pkg)["memlens.core.a"]


def test_cache_is_capped(pkg, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cg, "SCAN_CACHE_MAX", 3)
    _fresh_process()
    cg.import_graph(pkg)
    assert len(json.loads(cg._cache_file(cg.scan_cache_dir()).read_text())) == 3


def test_cache_dir_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("MEMLENS_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cg.scan_cache_dir() == tmp_path / "xdg" / "memlens" / "codegraph"
    monkeypatch.setenv("MEMLENS_CACHE", str(tmp_path / "c"))
    assert cg.scan_cache_dir() == tmp_path / "c" / "codegraph"
