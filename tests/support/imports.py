"""The import graph of ``src/memlens``, read from the source with :mod:`ast` (imports inside functions
included), for the architecture tests and the DVC dependency check."""
from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
PKG = SRC / "memlens"


def module_files(pkg: Path = PKG) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under the package."""
    out = {}
    for p in sorted(pkg.rglob("*.py")):
        parts = list(p.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _imported_names(mod: str, path: Path) -> Iterable[tuple[str, list[str]]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            yield name, [a.name for a in node.names]


def import_graph(pkg: Path = PKG) -> dict[str, set[str]]:
    """Module -> the project modules it imports. ``from a import b`` counts as importing ``a.b`` when
    that is a module, and importing ``a.b.c`` also imports the packages ``a`` and ``a.b``."""
    mods = module_files(pkg)
    graph: dict[str, set[str]] = defaultdict(set)
    for mod, path in mods.items():
        graph[mod]
        for name, names in _imported_names(mod, path):
            if not name.split(".")[0] == pkg.name:
                continue
            targets = [f"{name}.{n}" for n in names if f"{name}.{n}" in mods] or [name]
            for t in targets:
                while t and t not in mods:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != mod:
                    graph[mod].add(t)
                    parent = t.rsplit(".", 1)[0] if "." in t else ""
                    while parent:  # importing a.b.c runs a/__init__ and a/b/__init__
                        if parent in mods and parent != mod:
                            graph[mod].add(parent)
                        parent = parent.rsplit(".", 1)[0] if "." in parent else ""
    return dict(graph)


def closure(graph: dict[str, set[str]], roots: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(graph.get(m, ()))
    return seen


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of nodes (first == last), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {n: WHITE for n in graph}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        color[n] = GREY
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if color.get(m, WHITE) == GREY:
                return stack[stack.index(m):] + [m]
            if color.get(m, WHITE) == WHITE:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        color[n] = BLACK
        return None

    for n in sorted(graph):
        if color[n] == WHITE:
            found = visit(n)
            if found:
                return found
    return None


def package_of(mod: str, mods: dict[str, Path]) -> str:
    """The package (folder) a module lives in: a package's ``__init__`` belongs to itself."""
    return mod if mods[mod].name == "__init__.py" else mod.rsplit(".", 1)[0]


def package_graph(graph: dict[str, set[str]], mods: dict[str, Path]) -> dict[str, set[str]]:
    """Folder -> folders it imports from (a package importing its own subpackage or parent's
    ``__init__`` is not an edge between different folders only when they are the same)."""
    out: dict[str, set[str]] = defaultdict(set)
    for a, bs in graph.items():
        pa = package_of(a, mods)
        out[pa]
        for b in bs:
            pb = package_of(b, mods)
            if pb != pa and not pa.startswith(pb + ".") or (pb != pa and mods[b].name != "__init__.py"):
                if pb != pa:
                    out[pa].add(pb)
    return dict(out)
