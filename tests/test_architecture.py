"""The shape of the package: three layers (core < construction < eval) under thin entry points, no import
cycles between modules or folders, no reach-ins to private names, no module-level mutable state in
stage code, and DVC stage deps that are exactly each stage's code.

Each rule is checked on the real package and, on a small package made in tmp_path, shown to fail
on exactly the defects it exists to catch.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from memlens.core import codegraph as cg

REPO = Path(__file__).resolve().parents[1]

#: layer of each top-level part of the package; a module may import its own layer and lower ones
LAYERS = {"core": 0, "construction": 1, "eval": 2}
TOP = 3  # memlens.cli, memlens.sweep: entry points


def layer_of(mod: str) -> int:
    parts = mod.split(".")
    if len(parts) == 1:  # the package's __init__: only the version, from core
        return 0
    return LAYERS.get(parts[1], TOP)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for a, bs in sorted(graph.items()):
        for b in sorted(bs):
            if layer_of(b) > layer_of(a):
                bad.append(f"{a} -> {b}")
    return bad


def folder_graph(graph, mods):
    """Folders, with each top-level module (cli, sweep) a node of its own."""

    def node(m):
        if m.count(".") == 1 and mods[m].name != "__init__.py":
            return m
        return cg.package_of(m, mods)

    out: dict[str, set[str]] = {}
    for a, bs in graph.items():
        out.setdefault(node(a), set())
        for b in bs:
            if node(b) != node(a):
                out[node(a)].add(node(b))
    return out


def private_reach_ins(mods: dict[str, Path]) -> list[str]:
    """``from x import _name`` of a project module: private names stay in their module."""
    bad = []
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memlens"):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        bad.append(f"{mod}: from {node.module} import {a.name}")
    return bad


def mutable_module_state(path: Path) -> list[str]:
    """Module-level names bound to an empty container (a registry or cache filled at run time) or
    rebound with ``global``. Constants built at import from literals or data files are fine."""
    tree = ast.parse(path.read_text())
    bad = []
    for node in tree.body:
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for t in targets:
            if not isinstance(t, ast.Name):
                continue
            empty = (
                isinstance(value, (ast.Dict, ast.List, ast.Set))
                and not getattr(value, "keys", None)
                and not getattr(value, "elts", None)
            )
            # an empty container made to be filled later (a constant built from data is fine)
            ctor = (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and (
                    (
                        value.func.id in ("dict", "list", "set", "OrderedDict", "Counter")
                        and not value.args
                        and not value.keywords
                    )
                    or value.func.id == "defaultdict"
                )
            )
            if empty or ctor:
                bad.append(f"{path.name}:{node.lineno}: {t.id} = <mutable, filled at run time>")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            bad.append(f"{path.name}:{node.lineno}: global {', '.join(node.names)}")
    return bad


# --------------------------------------------------------------------------------------------------
# the real package
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real():
    mods = cg.module_files()
    return mods, cg.import_graph(implicit_parents=False)


def test_three_layers_and_entry_points(real):
    mods, graph = real
    assert {m.split(".")[1] for m in mods if "." in m} >= {"core", "construction", "eval", "cli"}
    assert layer_violations(graph) == []


def test_no_module_cycle(real):
    _, graph = real
    assert cg.find_cycle(graph) is None


def test_no_folder_cycle(real):
    mods, graph = real
    assert cg.find_cycle(folder_graph(graph, mods)) is None


def test_no_reach_in_to_private_names(real):
    mods, _ = real
    assert private_reach_ins(mods) == []


def test_no_module_level_mutable_state(real):
    mods, _ = real
    bad = [b for p in sorted(set(mods.values())) for b in mutable_module_state(p)]
    assert bad == []


def test_dvc_stage_deps_are_exactly_the_stage_code():
    """Every stage in dvc.yaml lists exactly the files of its import closure (plus package data and
    the modules its config groups' `_target_`s name) under src/: nothing missing, nothing extra."""
    import yaml

    from memlens.cli import STAGES, stage_code_paths

    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    assert set(stages) == set(STAGES)
    for name, st in stages.items():
        listed = sorted(d for d in st["deps"] if isinstance(d, str) and d.startswith("src/"))
        assert listed == sorted(stage_code_paths(name, REPO)), (
            f"dvc.yaml stage {name!r}: code deps differ from its import closure; run `memlens deps --write`"
        )


def test_stage_code_paths_cover_the_closure():
    """The listed paths cover each module of a stage's closure (a folder is listed only when all
    of its files are used)."""
    from memlens.cli import stage_code_paths, stage_modules

    mods = cg.module_files()
    graph = cg.import_graph()
    for stage in ("crawl", "evaluate"):
        paths = [REPO / p for p in stage_code_paths(stage, REPO)]
        used = cg.closure(graph, stage_modules(stage, REPO / "conf"))
        for m in used:
            f = mods[m]
            assert any(f == p or p in f.parents for p in paths), (stage, m)
        for p in paths:
            files = [p] if p.is_file() else [x for x in p.rglob("*.py")]
            assert any(x in {mods[m] for m in used} for x in files) or not files, (stage, p)


# --------------------------------------------------------------------------------------------------
# the checks catch the defects they are for (a small package in tmp_path)
# --------------------------------------------------------------------------------------------------
def _package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "memlens"
    for rel, src in files.items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    for d in [pkg, *[p for p in pkg.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()
    return pkg


def test_checks_catch_cycles_upward_imports_and_missing_deps(tmp_path):
    pkg = _package(
        tmp_path,
        {
            "core/schema.py": "from memlens.eval.report import table\n",  # core -> eval: upward
            "construction/abilities/tr.py": "def f():\n    from memlens.construction.generate.stage import x\n",
            "construction/generate/stage.py": "from memlens.construction.abilities import tr\nx = 1\n",  # abilities <-> generate
            "construction/crawl/stage.py": "from memlens.construction.abilities import tr\n",
            "eval/report/table.py": "from memlens.eval import tracking\n",
            "eval/tracking.py": "def f():\n    from memlens.eval.report import table\n",  # eval <-> eval.report folder
        },
    )
    mods = cg.module_files(pkg)
    graph = cg.import_graph(pkg, implicit_parents=False)
    assert layer_violations(graph) == ["memlens.core.schema -> memlens.eval.report.table"]
    cycle = cg.find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1]
    fcycle = cg.find_cycle(folder_graph(graph, mods))
    assert fcycle is not None
    # the crawl stage runs generate/stage.py through abilities: its closure must include it
    used = cg.closure(cg.import_graph(pkg), ["memlens.construction.crawl.stage"])
    assert "memlens.construction.generate.stage" in used
    listed = [pkg / "construction/crawl", pkg / "construction/abilities"]  # what a hand-written dvc.yaml had
    files = cg.code_files(["memlens.construction.crawl.stage"], pkg)
    assert [f for f in files if not any(p in f.parents for p in listed)], "a missing dep must show"


def test_check_catches_module_state_and_reach_ins(tmp_path):
    pkg = _package(
        tmp_path,
        {
            "construction/generate/stage.py": "BOILERPLATE: set[str] = set()\n_CACHE = {}\nLIMITS = {'a': 1}\n"
            "def run():\n    global _X\n",
            "eval/sweep.py": "from memlens.cli import _resolve\n",
            "cli.py": "def _resolve():\n    pass\n",
        },
    )
    bad = mutable_module_state(pkg / "construction/generate/stage.py")
    assert any("BOILERPLATE" in b for b in bad) and any("_CACHE" in b for b in bad)
    assert any("global _X" in b for b in bad) and not any("LIMITS" in b for b in bad)
    assert private_reach_ins(cg.module_files(pkg)) == ["memlens.eval.sweep: from memlens.cli import _resolve"]


def test_code_hash_follows_the_closure(tmp_path):
    pkg = _package(
        tmp_path,
        {
            "core/io.py": "X = 1\n",
            "construction/crawl/stage.py": "from memlens.core import io\n",
            "construction/filter/stage.py": "Y = 2\n",
        },
    )
    h0 = cg.code_hash("memlens.construction.crawl.stage", pkg=pkg)
    (pkg / "construction/filter/stage.py").write_text("Y = 3\n")  # not imported by crawl
    assert cg.code_hash("memlens.construction.crawl.stage", pkg=pkg) == h0
    (pkg / "core/io.py").write_text("X = 2\n")  # imported by crawl
    assert cg.code_hash("memlens.construction.crawl.stage", pkg=pkg) != h0
    with pytest.raises(KeyError, match="not modules"):
        cg.code_hash("memlens.construction.nothing", pkg=pkg)
