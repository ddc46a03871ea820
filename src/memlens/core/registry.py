"""Components by kind, one mechanism for every kind: system backends, memory agents, judges, image
sources, input adapters, retrievers, filter channels, generators and question types.

A component is a class marked ``@component(kind, name)`` in a module under its kind's package
(:data:`KINDS`); its config schema is its ``Config`` attribute, beside it. The mark sets two class
attributes and nothing else: no registry is filled at import time. A kind's components are found by
reading the source of its package (:mod:`ast`; nothing is imported), and a component's module is
imported only when that component is asked for, so listing or validating imports no other
component, and a module that fails to import is an error naming it, never a missing entry.

Selecting one (:func:`find_component`, :func:`component_names`, :func:`class_for_target`,
:func:`build_target`: the :data:`SELECTORS`) with a literal kind is also what the dependency tool reads
(:func:`memlens.core.codegraph.import_graph`): a module that selects components of a kind has all
of them in its code (its DVC deps and code hash), and no other module has. Checking a name in a
schema (:func:`named`, :func:`validate_component`) is validation, done before a stage runs: it
selects nothing.

Adding a component of an existing kind is one module (or one class in an existing module) with the
mark; the files each kind needs are listed in ``docs/architecture.md`` ("Where to add things").
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from memlens.core.errors import ConfigError

__all__ = [
    "KINDS",
    "Kind",
    "Named",
    "SELECTORS",
    "build_target",
    "class_for_target",
    "component",
    "component_names",
    "discover",
    "find_component",
    "named",
    "selected_kinds",
    "validate_component",
]

PKG = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Kind:
    """A kind of component: where its modules live, what one is and which config key names one."""

    name: str
    packages: tuple[str, ...]
    what: str
    selected_by: str

    @property
    def label(self) -> str:
        return self.name.replace("_", " ")


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind(
            "model",
            ("memlens.eval.systems",),
            "a system backend: a memlens.eval.systems.base.Model subclass",
            "model._target_ (conf/model/<option>.yaml)",
        ),
        Kind(
            "agent",
            ("memlens.eval.agents",),
            "a memory agent: a memlens.eval.agents.runtime.MemoryAgent subclass (kind: agent)",
            "model._target_ (conf/model/<option>.yaml with kind: agent)",
        ),
        Kind(
            "judge",
            ("memlens.eval.judge",),
            "a judge: judge_many(pairs) -> list[Verdict]",
            "judge._target_ (conf/judge/<option>.yaml)",
        ),
        Kind(
            "image_source",
            ("memlens.construction.images",),
            "an image source: fetch(request, rng) -> (bytes, ext, truth)",
            "images._target_ (conf/images/<option>.yaml)",
        ),
        Kind(
            "adapter",
            ("memlens.eval.memory",),
            "an input adapter: describe_images(images) -> one text (or path) per image",
            "model.adapter, eval.caption_adapter, memory.adapters",
        ),
        Kind(
            "retriever",
            ("memlens.eval.memory",),
            "a retriever over session documents: index(docs), search(query, k, before)",
            "memory.retrievers; an agent's own retrieval",
        ),
        Kind(
            "filter_channel",
            ("memlens.construction.filter",),
            "a relevance channel of the filter: score(path, rec, request), threshold, role",
            "filter.channels[].name",
        ),
        Kind(
            "generator",
            ("memlens.construction.generate",),
            "a question and session generator (the Generator protocol of construction/generate/backends.py)",
            "generator.name",
        ),
        Kind(
            "question_type",
            ("memlens.construction.abilities",),
            "a question type: an Ability (plan, build, chance_answer) with its official subtypes",
            "data.scales.<scale>.counts (<question_type>/<subtype> keys)",
        ),
    )
}
#: the functions whose first argument (a kind, or a tuple of kinds) selects components by name
SELECTORS = ("find_component", "component_names", "class_for_target", "build_target")


def component(kind: str, name: str):
    """Class decorator: marks the class as the component ``name`` of ``kind`` (sets
    ``component_kind`` and ``component_name``; nothing is registered anywhere)."""
    if kind not in KINDS:
        raise ValueError(f"unknown component kind {kind!r} (kinds: {', '.join(KINDS)})")

    def mark(cls: type) -> type:
        cls.component_kind = kind
        cls.component_name = name
        return cls

    return mark


# ------------------------------------------------------------------------------------ discovery
def _str_args(call: ast.Call, n: int) -> list[str] | None:
    args = [a.value for a in call.args[:n] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return args if len(args) == n else None


def marks_in(path: Path) -> list[tuple[str, str, str]]:
    """``(kind, name, class name)`` of every ``@component(kind, name)`` class in a source file (a file
    whose text never names ``component`` has none and is not parsed: parsing costs ~5 ms a file)."""
    text = path.read_text()
    if "component" not in text:
        return []
    return marks_of(ast.parse(text, filename=str(path)))


def marks_of(tree: ast.AST) -> list[tuple[str, str, str]]:
    """``(kind, name, class name)`` of every ``@component(kind, name)`` class of a parsed module
    (components are module-level classes)."""
    out = []
    for node in getattr(tree, "body", []):
        if not isinstance(node, ast.ClassDef):
            continue
        for dec in node.decorator_list:
            func = dec.func if isinstance(dec, ast.Call) else None
            fname = getattr(func, "id", None) or getattr(func, "attr", None)
            if fname == "component":
                args = _str_args(dec, 2)
                if args:
                    out.append((args[0], args[1], node.name))
    return out


def in_kind(kind: str, module: str) -> bool:
    """Whether ``module`` lies under one of the packages of ``kind`` (where its components live)."""
    return any(module == p or module.startswith(p + ".") for p in KINDS[kind].packages)


def _module_name(path: Path, pkg: Path) -> str:
    parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _package_files(package: str, pkg: Path) -> list[Path]:
    rel = package.split(".")[1:]
    folder = pkg.joinpath(*rel)
    if folder.is_dir():
        return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
    single = folder.with_suffix(".py")
    return [single] if single.is_file() else []


def scan(kind: str, pkg: Path = PKG) -> dict[str, tuple[str, str]]:
    """``name -> (module, class name)`` of the components of ``kind`` under the package folder
    ``pkg`` (read from the source; two components of one name are an error)."""
    found: dict[str, tuple[str, str]] = {}
    for package in KINDS[kind].packages:
        for path in _package_files(package, pkg):
            mod = _module_name(path, pkg)
            for k, name, cls in marks_in(path):
                if k != kind:
                    continue
                if name in found and found[name] != (mod, cls):
                    other = ".".join(found[name])
                    raise ConfigError(f"two {KINDS[kind].label}s named {name!r}: {other} and {mod}.{cls}")
                found[name] = (mod, cls)
    return dict(sorted(found.items()))


@cache
def _discovered(kind: str) -> tuple[tuple[str, tuple[str, str]], ...]:
    return tuple(scan(kind).items())


def discover(kind: str) -> dict[str, tuple[str, str]]:
    """``name -> (module, class name)`` of the installed package's components of ``kind``
    (memoised: a pure function of the source)."""
    if kind not in KINDS:
        raise ConfigError(f"unknown component kind {kind!r} (kinds: {', '.join(KINDS)})")
    return dict(_discovered(kind))


def component_names(kind: str) -> list[str]:
    """The names of the components of ``kind``, sorted."""
    return list(discover(kind))


def _import(module: str, cls: str) -> type:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"{module} cannot be imported: {exc}") from None
    return getattr(mod, cls)


def find_component(kind: str, name: str) -> type:
    """The class of the component ``name`` of ``kind`` (its module imported now); an unknown name
    is a :class:`ConfigError` listing the known ones."""
    found = discover(kind)
    if name not in found:
        known = ", ".join(found) or "none"
        raise ConfigError(f"unknown {KINDS[kind].label} {name!r} (known: {known})")
    return _import(*found[name])


def class_for_target(kinds: str | Iterable[str], target: str, *, section: str | None = None) -> type:
    """The class a ``_target_`` names: a component of one of ``kinds`` when it is a memlens class, or
    a class of the user's own (outside the package) that declares its schema as ``Config``."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    where = f"{section}._target_" if section else "_target_"
    target = str(target)
    mod, _, cls = target.rpartition(".")
    if not mod:
        raise ConfigError(f"{where} {target!r} is not a class path (module.Class)")
    if mod.split(".")[0] == PKG.name:
        for kind in kinds:
            if (mod, cls) in discover(kind).values():
                return _import(mod, cls)
        known = ", ".join(f"{m}.{c}" for kind in kinds for m, c in discover(kind).values())
        labels = " or ".join(KINDS[k].label for k in kinds)
        raise ConfigError(f"{where} {target!r} is not a {labels} (known: {known})")
    try:
        found = _import(mod, cls)
    except (ConfigError, AttributeError) as exc:
        raise ConfigError(f"{where} {target!r} cannot be imported ({exc})") from None
    if not isinstance(found, type):
        raise ConfigError(f"{where} {target!r} is not a class")
    return found


def validate_component(kind: str, spec: object, *, where: str, key: str = "name") -> object:
    """``spec`` (a name, or a mapping whose ``key`` is the name) validated against the schema of the
    component it names (``Config``); for the ``AfterValidator`` of a section field that selects a
    component. Problems are one ``ValueError`` naming ``where`` and the key."""
    if isinstance(spec, str):
        spec = {key: spec}
    if not isinstance(spec, dict) or not isinstance(spec.get(key), str):
        raise ValueError(f"{where}: expected a {KINDS[kind].label} name or a mapping with {key}, got {spec!r}")
    try:
        cls = find_component(kind, spec[key])
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    schema = getattr(cls, "Config", None)
    if schema is None:
        raise ValueError(f"{KINDS[kind].label} {spec[key]!r} ({cls.__name__}) declares no Config schema")
    from pydantic import ValidationError

    try:
        return schema.model_validate(spec)
    except ValidationError as exc:
        raise ValueError("; ".join(_problem(e, where, schema) for e in exc.errors(include_url=False))) from None


def _problem(e: dict, where: str, schema: type) -> str:
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"])
    if e["type"] == "extra_forbidden":
        known = ", ".join(f.alias or n for n, f in schema.model_fields.items())
        return f"unknown config key {where}{loc} (known: {known})"
    if e["type"] == "missing":
        return f"missing config key {where}{loc}"
    if e["type"] == "value_error":
        return str(e["ctx"]["error"]) if "ctx" in e else e["msg"]
    return f"config key {where}{loc}: {e['msg']} (got {e['input']!r})"


def build_target(kinds: str | Iterable[str], options: Mapping[str, Any], *, section: str | None = None) -> Any:
    """The instance a ``_target_`` section describes: the class :func:`class_for_target` finds,
    called with the section's other keys (as composed: what Hydra's ``instantiate`` passes)."""
    cls = class_for_target(kinds, str(options.get("_target_")), section=section)
    return cls(**{k: v for k, v in options.items() if k != "_target_"})


@dataclass(frozen=True)
class Named:
    """Field metadata (``Annotated[str, Named("adapter")]``): the value is a component name (or a
    list of names) of ``kind``; an unknown name is an error listing the known ones. The help
    generator lists the names."""

    kind: str

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def check(self, value: Any) -> Any:
        names = value if isinstance(value, list) else [value]
        known = component_names(self.kind)
        bad = [n for n in names if n not in known]
        if bad:
            raise ValueError(f"unknown {KINDS[self.kind].label} {bad[0]!r} (known: {', '.join(known) or 'none'})")
        return value


def named(kind: str) -> Named:
    """The :class:`Named` marker of a field holding component names of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"unknown component kind {kind!r} (kinds: {', '.join(KINDS)})")
    return Named(kind)


def selected_kinds(tree: ast.AST) -> set[str]:
    """The kinds a module selects by name: the literal first arguments of its :data:`SELECTORS` calls."""
    out: set[str] = set()
    for node in ast.walk(tree):
        out |= kinds_selected_by(node)
    return out


def kinds_selected_by(node: ast.AST) -> set[str]:
    """The kinds one call node selects (empty for any other node)."""
    if not isinstance(node, ast.Call) or not node.args:
        return set()
    fname = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
    if fname not in SELECTORS:
        return set()
    first = node.args[0]
    values = first.elts if isinstance(first, (ast.Tuple, ast.List)) else [first]
    return {v.value for v in values if isinstance(v, ast.Constant) and v.value in KINDS}
