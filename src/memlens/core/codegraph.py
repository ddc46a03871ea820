"""The import graph of the ``memlens`` package, read from the source with :mod:`ast` (imports inside
functions included, nothing is imported or executed).

Used for three things that must agree: the code hash a stage writes into its manifest (the files of
its import closure), the DVC ``deps`` of each stage (the same closure, checked by a test against
``dvc.yaml``; ``memlens deps`` prints it) and the architecture tests (layers, no cycles).

A module that selects components by name (:data:`memlens.core.registry.SELECTORS` with a literal
kind) runs whichever one the configuration names, so for what code runs it counts as importing
every component of that kind (their ``@component`` marks, read from the source like the imports).

Parsing every module costs about 1.5 s, which every stage process paid for its manifest's code hash.
What one module's scan found is kept in a persistent cache (:func:`scan_cache_dir`), keyed by the
SHA-256 of the module's name and source and by the scanner's own source (this file and
``core/registry.py``), so an edited file, or an edited scanner, is parsed again and nothing else is.
The cache is only a shortcut: any entry it lacks, or a cache that cannot be read or written, means
the file is parsed.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

PKG = Path(__file__).resolve().parents[1]
#: entries kept in one scan cache file (the oldest are dropped first)
SCAN_CACHE_MAX = 4096

log = logging.getLogger(__name__)


def module_files(pkg: Path = PKG) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under the package."""
    out = {}
    for p in sorted(pkg.rglob("*.py")):
        parts = list(p.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":`` (its body runs only when the module is run as a script)."""
    t = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(t, ast.Compare)
        and isinstance(t.left, ast.Name)
        and t.left.id == "__name__"
        and len(t.comparators) == 1
        and isinstance(t.comparators[0], ast.Constant)
        and t.comparators[0].value == "__main__"
    )


def _nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node of a module except those under a module-level ``if __name__ == "__main__":``
    (what runs when a stage imports the module)."""
    todo = [n for n in getattr(tree, "body", []) if not _is_main_guard(n)]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _scan(mod: str, path: Path, tree: ast.AST) -> tuple[list[tuple[str, list[str]]], set[str]]:
    """One pass over a module (its ``__main__`` block left out): what it imports (``(module,
    names)``) and the component kinds it selects by name."""
    from memlens.core.registry import kinds_selected_by

    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    imports: list[tuple[str, list[str]]] = []
    kinds: set[str] = set()
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            imports += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            imports.append((name, [a.name for a in node.names]))
        elif isinstance(node, ast.Call):
            kinds |= kinds_selected_by(node)
    return imports, kinds


def scan_cache_dir() -> Path:
    """Where module scans are kept: ``$MEMLENS_CACHE/codegraph``, else
    ``$XDG_CACHE_HOME/memlens/codegraph`` (``~/.cache/memlens/codegraph``)."""
    env = os.environ.get("MEMLENS_CACHE")
    if env:
        return Path(env) / "codegraph"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "memlens" / "codegraph"


@lru_cache(maxsize=1)
def scanner_version() -> str:
    """SHA-256 of the scanner's source (this module and the registry, whose marks and selectors it reads)."""
    h = hashlib.sha256()
    for f in (Path(__file__), PKG / "core" / "registry.py"):
        h.update(f.read_bytes())
    return h.hexdigest()


def _scan_source(mod: str, path: Path, source: bytes) -> tuple[list, set[str], list[tuple[str, str, str]]]:
    """(imports, selected kinds, component marks) of one module's source."""
    from memlens.core.registry import marks_of

    tree = ast.parse(source.decode(), filename=str(path))
    imports, kinds = _scan(mod, path, tree)
    return imports, kinds, marks_of(tree)


def _scan_key(mod: str, path: Path, source: bytes) -> str:
    h = hashlib.sha256(f"{mod}\0{path.name}\0".encode())
    h.update(source)
    return h.hexdigest()


def _encode(scan: tuple[list, set[str], list]) -> list:
    imports, kinds, marks = scan
    return [[[name, list(names)] for name, names in imports], sorted(kinds), [list(m) for m in marks]]


def _decode(entry: list) -> tuple[list, set[str], list[tuple[str, str, str]]]:
    imports, kinds, marks = entry
    return [(name, list(names)) for name, names in imports], set(kinds), [tuple(m) for m in marks]


def _cache_file(folder: Path) -> Path:
    return folder / f"scans-{scanner_version()[:16]}.json"


def _read_cache(file: Path) -> dict[str, list]:
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(file: Path, entries: dict[str, list]) -> None:
    """Atomically replace ``file`` with ``entries`` (the newest :data:`SCAN_CACHE_MAX`); failures are ignored."""
    keep = dict(list(entries.items())[-SCAN_CACHE_MAX:])
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".scans-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(keep, fh, separators=(",", ":"))
            os.replace(tmp, file)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        log.debug("module scan cache %s not written: %s", file, exc)


@lru_cache(maxsize=8)
def _disk_entries(file: Path) -> dict[str, list]:
    """The persistent scan cache's entries, read once per process; scans made since are added to it."""
    return _read_cache(file)


@lru_cache(maxsize=4096)
def _scan_file(mod: str, path: Path, mtime_ns: int, size: int) -> tuple[list, set[str], list[tuple[str, str, str]]]:
    """(imports, selected kinds, component marks) of one module file: from the persistent scan
    cache, else parsed (and added to the cache's entries); looked up again when its time or size
    changes."""
    source = path.read_bytes()
    entries = _disk_entries(_cache_file(scan_cache_dir()))
    key = _scan_key(mod, path, source)
    entry = entries.get(key)
    if entry is not None:
        try:
            return _decode(entry)
        except (TypeError, ValueError):
            pass  # a damaged entry: parsed again
    scan = _scan_source(mod, path, source)
    entries[key] = _encode(scan)
    return scan


def _scanned(mods: dict[str, Path]) -> dict[str, tuple[list, set[str], list[tuple[str, str, str]]]]:
    """Module -> (imports, selected kinds, component marks) of every module; new scans are written
    to the persistent scan cache."""
    file = _cache_file(scan_cache_dir())
    entries = _disk_entries(file)
    before = len(entries)
    out = {}
    for mod, path in mods.items():
        st = path.stat()
        out[mod] = _scan_file(mod, path, st.st_mtime_ns, st.st_size)
    if len(entries) != before:
        _write_cache(file, entries)
    return out


def _selections(scanned: dict, mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the component modules it can select (every component of each kind it selects)."""
    from memlens.core.registry import in_kind

    components: dict[str, set[str]] = defaultdict(set)
    for mod, (_, _, marks) in scanned.items():
        for kind, _, _ in marks:
            if in_kind(kind, mod):
                components[kind].add(mod)
    out: dict[str, set[str]] = {}
    for mod, (_, kinds, _) in scanned.items():
        if kinds:
            out[mod] = set().union(*(components[k] for k in kinds)) - {mod}
    return out


def import_graph(
    pkg: Path = PKG, *, implicit_parents: bool = True, selections: bool | None = None
) -> dict[str, set[str]]:
    """Module -> the project modules it imports. ``from a import b`` counts as importing ``a.b`` when
    that is a module. With ``implicit_parents`` importing ``a.b.c`` also counts as importing the
    packages ``a`` and ``a.b`` (Python runs their ``__init__``), and with ``selections`` (default:
    ``implicit_parents``) a module that selects components of a kind counts as importing them all:
    both are right for what code runs (hashes, DVC deps); the architecture checks leave these edges
    out, since they are no import statement."""
    mods = module_files(pkg)
    scanned = _scanned(mods)
    graph: dict[str, set[str]] = defaultdict(set)

    def add(mod: str, t: str) -> None:
        graph[mod].add(t)
        parent = t.rsplit(".", 1)[0] if "." in t and implicit_parents else ""
        while parent:  # importing a.b.c runs a/__init__ and a/b/__init__
            if parent in mods and parent != mod:
                graph[mod].add(parent)
            parent = parent.rsplit(".", 1)[0] if "." in parent else ""

    for mod in mods:
        graph[mod]
        for name, names in scanned[mod][0]:
            if name.split(".")[0] != pkg.name:
                continue
            targets = [f"{name}.{n}" for n in names if f"{name}.{n}" in mods] or [name]
            for t in targets:
                while t and t not in mods:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != mod:
                    add(mod, t)
    if implicit_parents if selections is None else selections:
        for mod, selected in _selections(scanned, mods).items():
            for t in selected:
                add(mod, t)
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
                return stack[stack.index(m) :] + [m]
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
    """Folder -> the other folders whose modules it imports."""
    out: dict[str, set[str]] = defaultdict(set)
    for a, bs in graph.items():
        pa = package_of(a, mods)
        out[pa]
        for b in bs:
            pb = package_of(b, mods)
            if pb != pa:
                out[pa].add(pb)
    return dict(out)


def data_dirs(mods: dict[str, Path], used: Iterable[str]) -> set[Path]:
    """Folders of package data (no ``.py`` files, e.g. ``data/``) beside the used modules' files."""
    out = set()
    for m in used:
        folder = mods[m].parent
        for d in folder.iterdir():
            if d.is_dir() and d.name != "__pycache__" and not any(d.rglob("*.py")):
                out.add(d)
    return out


def code_files(roots: Iterable[str], pkg: Path = PKG) -> list[Path]:
    """Every source file the given modules run: their import closure plus its package data, sorted."""
    mods = module_files(pkg)
    unknown = [r for r in roots if r not in mods]
    if unknown:
        raise KeyError(f"not modules of {pkg.name}: {', '.join(unknown)}")
    used = closure(import_graph(pkg), roots)
    files = {mods[m] for m in used}
    for d in data_dirs(mods, used):
        files |= {f for f in d.rglob("*") if f.is_file() and "__pycache__" not in f.parts}
    return sorted(files)


def code_hash(*roots: str, pkg: Path = PKG) -> str:
    """SHA-256 over the files of :func:`code_files` (relative path and content of each)."""
    h = hashlib.sha256()
    for f in code_files(roots, pkg):
        h.update(str(f.relative_to(pkg)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def compress_paths(files: Iterable[Path], pkg: Path = PKG) -> list[str]:
    """The shortest list of paths (relative to the folder holding ``pkg``) that covers exactly
    ``files``: a folder whose every file is in the set is listed instead of its files."""
    files = {f for f in files}
    base = pkg.parent

    def all_files(d: Path) -> set[Path]:
        return {f for f in d.rglob("*") if f.is_file() and "__pycache__" not in f.parts}

    out: list[str] = []

    def walk(d: Path) -> None:
        inside = all_files(d)
        if inside and inside <= files:
            out.append(str(d.relative_to(base)))
            return
        for child in sorted(d.iterdir()):
            if child.name == "__pycache__":
                continue
            if child.is_dir():
                walk(child)
            elif child in files:
                out.append(str(child.relative_to(base)))

    walk(pkg)
    return out
