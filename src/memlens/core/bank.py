"""Data banks: word lists and template text kept as YAML package data beside the code that uses them.

``load_bank("memlens.construction.text", "assistant")`` reads ``memlens/construction/text/data/assistant.yaml``
once (cached) and returns a :class:`Bank`, whose accessors check the shape a caller expects and
name the file and key when the data do not fit::

    bank = load_bank(__package__, "user")
    greetings = bank.strings("greetings")                 # tuple[str, ...], non-empty
    leads = bank.templates("leads", "document", slots=SLOTS)  # strings whose {slots} are all known

A bank file is a YAML mapping of plain data: strings, integers, floats, ``null`` where a caller
allows it, lists and string-keyed mappings (no duplicate keys, no dates, no anchors needed). Key
order is kept. Every string is interned, as string literals of one Python module are, so equal
templates are the same object wherever they occur.

Python keeps the logic (which sentence to pick, how to fill it); the data files keep the text. A
data file belongs to the package folder of the module that loads it (``<package>/data/<name>.yaml``),
so a stage that depends on that folder depends on its data too.
"""

from __future__ import annotations

import string
import sys
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import yaml

from memlens.core.errors import DataError

__all__ = ["Bank", "load_bank", "bank_files"]

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader that refuses duplicate keys (YAML would silently keep the last one)."""


def _mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise yaml.constructor.ConstructorError(
                None, None, f"keys must be strings, found {key!r}", key_node.start_mark
            )
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _key(path: tuple) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _freeze(where: str, obj: Any, path: tuple) -> Any:
    """Check the value types and intern every string (keys included)."""
    if isinstance(obj, str):
        return sys.intern(obj)
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, float)):
        return obj
    if isinstance(obj, list):
        return [_freeze(where, x, path + (i,)) for i, x in enumerate(obj)]
    if isinstance(obj, dict):
        return {sys.intern(k): _freeze(where, v, path + (k,)) for k, v in obj.items()}
    raise DataError(
        f"{where}: key {_key(path)}: unsupported value {obj!r} ({type(obj).__name__}); quote it to make it a string"
    )


_FORMATTER = string.Formatter()


def placeholders(template: str) -> set[str]:
    """The ``{name}`` fields of a ``str.format`` template (ValueError on unbalanced braces)."""
    return {f for _, f, _, _ in _FORMATTER.parse(template) if f is not None}


class Bank:
    """One loaded data file. ``where`` (the file) names it in every error."""

    __slots__ = ("where", "data")

    def __init__(self, where: str, data: dict) -> None:
        self.where, self.data = where, data

    def __repr__(self) -> str:
        return f"Bank({self.where!r})"

    def error(self, path: Iterable, msg: str) -> DataError:
        return DataError(f"{self.where}: key {_key(tuple(path))}: {msg}")

    def get(self, *path: str | int) -> Any:
        """The value at ``path`` (mapping keys / list indexes); a missing key is an error."""
        node: Any = self.data
        for i, p in enumerate(path):
            if (isinstance(node, dict) and isinstance(p, str) and p in node) or (
                isinstance(node, list) and isinstance(p, int) and 0 <= p < len(node)
            ):
                node = node[p]
            else:
                raise self.error(path[: i + 1], "missing")
        return node

    def mapping(self, *path: str, keys: Iterable[str] | None = None) -> dict:
        """A non-empty mapping (its keys in file order); with ``keys``, exactly those keys."""
        v = self.get(*path)
        if not isinstance(v, dict) or not v:
            raise self.error(path, f"expected a non-empty mapping, found {_kind(v)}")
        if keys is not None:
            want = list(keys)
            missing = [k for k in want if k not in v]
            extra = [k for k in v if k not in want]
            if missing or extra:
                raise self.error(
                    path,
                    "expected the keys "
                    + ", ".join(want)
                    + (f"; missing {', '.join(missing)}" if missing else "")
                    + (f"; unknown {', '.join(extra)}" if extra else ""),
                )
        return v

    def string_map(self, *path: str) -> dict[str, str]:
        """A non-empty mapping of strings to strings."""
        v = self.mapping(*path)
        for k, x in v.items():
            if not isinstance(x, str):
                raise self.error(path + (k,), f"expected a string, found {_kind(x)}")
        return dict(v)

    def strings(self, *path: str, allow_empty: bool = False) -> tuple[str, ...]:
        """A list of strings (non-empty unless ``allow_empty``)."""
        v = self.get(*path)
        if not isinstance(v, list) or (not v and not allow_empty):
            raise self.error(path, f"expected a {'' if allow_empty else 'non-empty '}list of strings, found {_kind(v)}")
        for i, x in enumerate(v):
            if not isinstance(x, str):
                raise self.error(path + (i,), f"expected a string, found {_kind(x)}")
        return tuple(v)

    def phrases(self, *path: str) -> tuple[str, ...]:
        """Strings used as they are (words, slot values, connectors): no ``{}`` or ``[]`` in them."""
        out = self.strings(*path)
        for i, x in enumerate(out):
            if any(c in x for c in "{}[]"):
                raise self.error(path + (i,), f"a plain phrase may not hold {{, }}, [ or ]: {x!r}")
        return out

    def templates(self, *path: str, slots: Iterable[str] = ()) -> tuple[str, ...]:
        """Strings whose ``{placeholders}`` are all in ``slots`` and whose ``[a|b]`` groups are closed."""
        allowed = frozenset(slots)
        out = self.strings(*path)
        for i, t in enumerate(out):
            check_template(self, path + (i,), t, allowed)
        return out

    def rows(self, *path: str, types: tuple[type | tuple[type, ...], ...]) -> tuple[tuple, ...]:
        """A non-empty list of fixed-length lists, each item of the given type(s), as tuples."""
        v = self.get(*path)
        if not isinstance(v, list) or not v:
            raise self.error(path, f"expected a non-empty list of rows, found {_kind(v)}")
        out = []
        for i, row in enumerate(v):
            if not isinstance(row, list) or len(row) != len(types):
                raise self.error(path + (i,), f"expected a list of {len(types)} values, found {_kind(row)}")
            for j, (x, t) in enumerate(zip(row, types)):
                if not isinstance(x, t) or (isinstance(x, bool) and bool not in _as_tuple(t)):
                    raise self.error(path + (i, j), f"expected {_names(t)}, found {_kind(x)}")
            out.append(tuple(row))
        return tuple(out)


def check_template(bank: Bank, path: tuple, template: str, allowed: frozenset[str]) -> None:
    """``template`` uses only ``allowed`` placeholders and balanced ``[a|b]`` alternatives."""
    depth = 0
    for ch in template:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise bank.error(path, f"nested '[' in {template!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise bank.error(path, f"']' without '[' in {template!r}")
    if depth:
        raise bank.error(path, f"'[' without ']' in {template!r}")
    try:
        names = placeholders(template)
    except ValueError as exc:
        raise bank.error(path, f"{exc} in {template!r}") from None
    unknown = sorted(names - allowed)
    if unknown:
        known = ", ".join("{" + s + "}" for s in sorted(allowed)) or "none"
        raise bank.error(
            path,
            f"unknown placeholder {', '.join('{' + u + '}' for u in unknown)} in {template!r} (known here: {known})",
        )


def _as_tuple(t) -> tuple:
    return t if isinstance(t, tuple) else (t,)


def _names(t) -> str:
    return " or ".join(x.__name__ for x in _as_tuple(t))


def _kind(v: Any) -> str:
    if isinstance(v, (list, dict)):
        return f"{type(v).__name__} of {len(v)}"
    return f"{type(v).__name__} {v!r}"[:80]


@cache
def load_bank(package: str, name: str) -> Bank:
    """``<package>/data/<name>.yaml`` as a :class:`Bank` (read once per process)."""
    try:
        res = resources.files(package).joinpath("data").joinpath(f"{name}.yaml")
    except ModuleNotFoundError as exc:
        raise DataError(f"data bank {name!r}: no package {package!r}") from exc
    where = str(res)
    try:
        text = res.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        raise DataError(f"{where}: data bank file missing (package data not installed?)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{where}: cannot read: {exc}") from None
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise DataError(f"{where}: invalid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict) or not data:
        raise DataError(f"{where}: expected a mapping of keys at the top level, found {_kind(data)}")
    return Bank(where, _freeze(where, data, ()))


def bank_files(package: str) -> list[str]:
    """Names of the data banks of ``package`` (``data/*.yaml``), sorted."""
    folder = resources.files(package).joinpath("data")
    if not folder.is_dir():
        return []
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))
