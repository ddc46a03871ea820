"""The shape of the package: three layers (core < construction < eval) under thin entry points, no import
cycles between modules or folders, no reach-ins to private names, no module-level mutable state in
stage code, DVC stage deps that are exactly each stage's code (and hold no CLI, help, composition
or dependency tool), config schemas beside their components, and docs/architecture.md listing
every module.

Each rule is checked on the real package and, on a small package made in tmp_path, shown to fail
on exactly the defects it exists to catch.
"""

from __future__ import annotations

import ast
import sys
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
        used = cg.closure(graph, stage_modules(stage))
        for m in used:
            f = mods[m]
            assert any(f == p or p in f.parents for p in paths), (stage, m)
        for p in paths:
            files = [p] if p.is_file() else [x for x in p.rglob("*.py")]
            assert any(x in {mods[m] for m in used} for x in files) or not files, (stage, p)


#: modules that measure, compose or explain the code a stage runs: never part of it
NOT_STAGE_CODE = (
    "memlens.cli",
    "memlens.clihelp",
    "memlens.sweep",
    "memlens.core.compose",
    "memlens.core.schemas",
    "memlens.core.codegraph",
)


def stage_closures() -> dict[str, set[str]]:
    from memlens.cli import STAGES, stage_modules

    graph = cg.import_graph()
    return {s: cg.closure(graph, stage_modules(s)) for s in STAGES}


def test_no_stage_runs_the_cli_help_composition_or_dependency_tool():
    for stage, used in stage_closures().items():
        assert not used & set(NOT_STAGE_CODE), (stage, sorted(used & set(NOT_STAGE_CODE)))


def test_construction_stages_run_no_evaluation_code():
    from memlens.cli import STAGES

    for stage, used in stage_closures().items():
        if STAGES[stage].startswith("memlens.construction."):
            assert not [m for m in used if m.startswith("memlens.eval")], stage


def test_stages_run_every_component_they_can_select():
    """A stage whose code selects components of a kind by name runs every component of that kind
    (the registry's lookups are edges of the graph): its deps change when one is added."""
    from memlens.core.registry import discover

    closures = stage_closures()
    selects = {
        "filter": "filter_channel",
        "generate": "generator",
        "crawl": "image_source",
        "evaluate": "agent",
        "judge": "judge",
        "diagnose": "retriever",
    }
    for stage, kind in selects.items():
        modules = {m for m, _ in discover(kind).values()}
        assert modules <= closures[stage], (stage, kind, sorted(modules - closures[stage]))
    assert not {m for m, _ in discover("adapter").values()} & closures["judge"]


def test_schemas_live_beside_their_components():
    """No config section's schema is in the core (only the building blocks are); every plain
    section's schema module belongs to the layer of the stages that read it."""
    from memlens.core import schemas

    for section, path in schemas.SECTIONS.items():
        module = path.split(":")[0]
        assert not module.startswith("memlens.core."), (section, module)
    src = (REPO / "src" / "memlens" / "core" / "settings.py").read_text()
    assert "class DataSettings" not in src and "MODEL_SCHEMAS" not in src


def config_gets(path: Path) -> list[str]:
    """``.get(...)`` on the configuration a stage receives (``cfg``, ``cfg.<section>``, or a name
    ending in ``cfg`` bound to a section): settings are typed, every key is an attribute."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
            continue
        root = node.func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and (root.id == "cfg" or root.id.endswith("cfg")) and root.id != "model_cfg":
            bad.append(f"{path.name}:{node.lineno}: {ast.unparse(node.func)}(...)")
    return bad


def test_stage_code_reads_settings_as_attributes():
    pkg = REPO / "src" / "memlens"
    bad = [b for layer in ("construction", "eval") for p in sorted((pkg / layer).rglob("*.py")) for b in config_gets(p)]
    assert bad == []


def doc_modules() -> set[str]:
    """The module paths docs/architecture.md lists in its Modules section."""
    import re

    text = (REPO / "docs" / "architecture.md").read_text()
    part = text.split("## Modules", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([\w/]+\.py)` \|", part, re.M))


def tree_modules() -> set[str]:
    pkg = REPO / "src" / "memlens"
    return {str(p.relative_to(pkg)) for p in pkg.rglob("*.py") if "__pycache__" not in p.parts}


def test_architecture_doc_lists_every_module():
    listed, present = doc_modules(), tree_modules()
    assert sorted(present - listed) == [], "modules missing from docs/architecture.md"
    assert sorted(listed - present) == [], "docs/architecture.md lists modules that do not exist"


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


def test_selection_edges_and_main_blocks(tmp_path):
    """A module that selects a kind by name runs every component of that kind (and no other
    module does); an import under ``if __name__ == "__main__":`` runs no code of a stage."""
    pkg = _package(
        tmp_path,
        {
            "core/registry.py": "def find_component(kind, name):\n    pass\n",
            "eval/memory/a.py": "from memlens.core.registry import component\n@component('adapter', 'a')\nclass A:\n    pass\n",
            "eval/memory/b.py": "@component('adapter', 'b')\nclass B:\n    pass\n",
            "eval/memory/use.py": "from memlens.core.registry import find_component\n"
            "def f():\n    return find_component('adapter', 'a')\n",
            "eval/other.py": "X = 1\n",
            "eval/tool.py": "X = 1\nif __name__ == '__main__':\n    from memlens.eval import other\n",
        },
    )
    run = cg.import_graph(pkg)
    assert {"memlens.eval.memory.a", "memlens.eval.memory.b"} <= run["memlens.eval.memory.use"]
    assert "memlens.eval.memory.b" not in cg.import_graph(pkg, implicit_parents=False)["memlens.eval.memory.use"]
    assert "memlens.eval.other" not in run["memlens.eval.tool"]
    assert not {"memlens.eval.memory.a", "memlens.eval.memory.b"} & run["memlens.eval.other"]


def test_doc_check_catches_a_missing_module(tmp_path, monkeypatch):
    """The doc check fails when a module is added without a row, or a row names no module."""
    fake = tmp_path / "src" / "memlens"
    (fake / "core").mkdir(parents=True)
    (fake / "core" / "new.py").write_text("X = 1\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "architecture.md").write_text(
        "## Modules\n\n| module | x |\n|---|---|\n| `core/old.py` | gone |\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert tree_modules() - doc_modules() == {"core/new.py"}
    assert doc_modules() - tree_modules() == {"core/old.py"}


def test_config_get_check_catches_defaults_read_by_key(tmp_path):
    pkg = _package(
        tmp_path,
        {
            "construction/x/stage.py": "def run(cfg, paths):\n    n = cfg.data.get('spare_fraction', 0.1)\n"
            "    fcfg = cfg.filter\n    rule = fcfg.get('rule', 'all')\n    ok = cfg.data.seed\n    row = {}.get('a', 1)\n"
        },
    )
    bad = config_gets(pkg / "construction" / "x" / "stage.py")
    assert [b.split(": ", 1)[1] for b in bad] == ["cfg.data.get(...)", "fcfg.get(...)"]
