"""Where each config section's schema lives, and the validation of a composed configuration into the
typed :class:`~memlens.core.settings.Settings` a stage receives.

Every section of the composed configuration (``conf/`` or ``params.yaml``, see :mod:`memlens.core.compose`)
is checked against a schema, with ``extra="forbid"`` and strict types at every level, so a
misspelled key (``model.concurency``, also when added with ``+``) or a wrong type
(``model.concurrency=abc``) ends the command with one message naming the key path and, for unknown
keys, the keys that section knows::

    unknown config key model.concurency (known: name, _target_, kind, ...)

The schemas live beside their components (:mod:`memlens.core.settings` says why); this module finds
them without importing any component it does not need:

* a plain section (``data``, ``filter``, ``generator``, ``eval``, ``validate``, ``tracking``,
  ``memory``; the optional ``ontology``, ``export``, ``report``) by :data:`SECTIONS` (its schema's
  import path);
* a section with a ``_target_`` (``images``, ``model``, ``judge``) by the ``Config`` attribute of
  the class it names, which must be a component of the section's kinds (:data:`TARGETED`;
  :func:`memlens.core.registry.class_for_target`) or a class of the user's own with a ``Config``.

No stage imports this module (the CLI validates before a stage runs), so editing a message or a
rule here changes no stage's code (DVC deps, code hash).
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from memlens.core.config import length_tokens
from memlens.core.errors import ConfigError
from memlens.core.registry import class_for_target
from memlens.core.settings import Settings

__all__ = [
    "OPTIONAL",
    "ORDER",
    "SECTIONS",
    "TARGETED",
    "is_schema",
    "known_keys",
    "schema_for",
    "section_schema",
    "unknown_key_message",
    "unwrap_type",
    "validate",
]

#: plain section -> the import path of its schema (``module:Class``)
SECTIONS: dict[str, str] = {
    "data": "memlens.construction.data_settings:DataSettings",
    "filter": "memlens.construction.filter.settings:FilterSettings",
    "generator": "memlens.construction.generate.settings:GeneratorSettings",
    "eval": "memlens.eval.evaluate.settings:EvalSettings",
    "validate": "memlens.construction.validate.settings:ValidateSettings",
    "tracking": "memlens.eval.tracking:TrackingSettings",
    "memory": "memlens.eval.memory.settings:MemorySettings",
    "ontology": "memlens.construction.ontology.settings:OntologySettings",
    "export": "memlens.construction.export.settings:ExportSettings",
    "report": "memlens.eval.report.settings:ReportSettings",
    "selftest": "memlens.eval.judge.selftest:SelfTestSettings",
}
#: section with a ``_target_`` -> the component kinds its class may be
TARGETED: dict[str, tuple[str, ...]] = {"images": ("image_source",), "model": ("model", "agent"), "judge": ("judge",)}
#: sections a configuration may leave out (their schema's defaults apply); ``stages`` is the sweep's
OPTIONAL = frozenset({"ontology", "export", "report", "selftest", "stages", "secrets_checked"})
#: top-level keys that are plain values, not sections: ``stages`` (the sweep's) and ``secrets_checked``
#: (``conf/config.yaml``: the secrets check of :mod:`memlens.core.secrets`, true once it passed)
VALUES = frozenset({"stages", "secrets_checked"})
#: every top-level key, in the order messages and help list them
ORDER = (
    "data",
    "images",
    "filter",
    "generator",
    "model",
    "eval",
    "validate",
    "judge",
    "tracking",
    "memory",
    "ontology",
    "export",
    "report",
    "selftest",
    "stages",
    "secrets_checked",
)
#: the most problems one message lists
MAX_MESSAGES = 12


def _load(path: str) -> type[BaseModel]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def schema_for(section: str, data: Any) -> type[BaseModel]:
    """The schema of a ``_target_`` section (``images``, ``model``, ``judge``), chosen by its ``_target_``."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"config section {section} must be a mapping with a _target_, not {data!r}")
    target = data.get("_target_")
    if not target:
        raise ConfigError(f"missing config key {section}._target_ (a class of: {', '.join(TARGETED[section])})")
    cls = class_for_target(TARGETED[section], str(target), section=section)
    schema = getattr(cls, "Config", None)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    raise ConfigError(
        f"{section}._target_ {target!r} declares no config schema: give the class a `Config` "
        f"attribute (a pydantic model of its keys, extra='forbid')"
    )


def section_schema(section: str, data: Mapping[str, Any] | None = None) -> Any:
    """The schema (or type) of a top-level key: a plain section's from :data:`SECTIONS`, a
    ``_target_`` section's from ``data`` (the composed configuration), ``stages``: a list of names."""
    if section in SECTIONS:
        return _load(SECTIONS[section])
    if section in TARGETED:
        return schema_for(section, (data or {}).get(section))
    if section == "stages":
        return list[str] | None
    if section == "secrets_checked":
        return bool | None
    raise KeyError(section)


# ------------------------------------------------------------------------------------ messages
def unwrap_type(tp: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` -> ``X``."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) != 1:
                return tp
            tp = members[0]
        else:
            return tp


def is_schema(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def known_keys(schema: type[BaseModel]) -> list[str]:
    """The keys a section accepts (aliases; ``name`` and ``_target_`` first, then declaration order)."""
    keys = [f.alias or name for name, f in schema.model_fields.items()]
    return sorted(keys, key=lambda k: (k != "name", k != "_target_"))


def _field(schema: type[BaseModel], key: Any):
    for name, f in schema.model_fields.items():
        if (f.alias or name) == key:
            return f
    return None


def _descend(tp: Any, key: Any) -> tuple[bool, Any]:
    """(known, type of the child) for ``key`` below a value of type ``tp``; the child type is None
    when nothing more is known about it."""
    tp = unwrap_type(tp)
    if is_schema(tp):
        f = _field(tp, key)
        return (False, None) if f is None else (True, f.annotation)
    origin = get_origin(tp)
    if origin in (dict, Mapping):
        args = get_args(tp)
        return True, args[1] if len(args) == 2 else None
    if origin in (list, Sequence) and isinstance(key, int):
        args = get_args(tp)
        return True, args[0] if args else None
    return True, None


def _dotted(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _walk(data: Any, path: Sequence[Any]) -> tuple[int, Any] | None:
    """The first component of ``path`` that the schemas do not know, as (index, schema of its
    section, or the list of top-level keys); None when every component is known (or below a
    free-form mapping)."""
    if not path:
        return None
    if path[0] not in ORDER:
        return 0, list(ORDER)
    try:
        tp: Any = section_schema(str(path[0]), data if isinstance(data, Mapping) else {})
    except ConfigError:
        return None
    for i, key in enumerate(path[1:], start=1):
        known, child = _descend(tp, key)
        if not known:
            return i, unwrap_type(tp)
        if child is None:
            return None
        tp = child
    return None


def unknown_key_message(data: Mapping[str, Any], key: str) -> str | None:
    """``unknown config key a.b (known: ...)`` for a dotted key the schemas do not know (judged on the
    composed ``data``, whose ``_target_`` values choose the schemas), or None if they know it."""
    path = [int(p) if p.isdigit() else p for p in key.split(".")]
    hit = _walk(data, path)
    if hit is None:
        return None
    i, schema = hit
    known = schema if isinstance(schema, list) else known_keys(schema)
    return f"unknown config key {_dotted(path[: i + 1])} (known: {', '.join(known)})"


def _messages(exc: ValidationError, prefix: tuple[Any, ...], schema: type[BaseModel]) -> list[str]:
    out = []
    for e in exc.errors(include_url=False):
        loc = tuple(e["loc"])
        path = _dotted(prefix + loc) or "config"
        kind = e["type"]
        if kind == "extra_forbidden":
            tp: Any = schema
            for part in loc[:-1]:
                tp = _descend(tp, part)[1]
            tp = unwrap_type(tp)
            known = ", ".join(known_keys(tp)) if is_schema(tp) else "?"
            out.append(f"unknown config key {path} (known: {known})")
        elif kind == "missing":
            out.append(f"missing config key {path}")
        elif kind == "value_error":
            out.append(f"{path}: {e['ctx']['error'] if 'ctx' in e else e['msg']}")
        else:
            out.append(f"config key {path}: {e['msg']} (got {e['input']!r})")
    return out


# ------------------------------------------------------------------------------------ validation
def _section(name: str, data: Mapping[str, Any], problems: list[str]) -> Any:
    value = data[name]
    if name == "stages":
        if value is None or (isinstance(value, list) and all(isinstance(s, str) for s in value)):
            return value
        problems.append(f"config key stages: expected a list of stage names (got {value!r})")
        return None
    if name == "secrets_checked":
        if value is None or isinstance(value, bool):
            return value
        problems.append(f"config key secrets_checked: expected true, false or null (got {value!r})")
        return None
    try:
        schema = section_schema(name, data)
    except ConfigError as exc:
        problems.append(str(exc))
        return None
    try:
        return schema.model_validate(value)
    except ValidationError as exc:
        problems.extend(_messages(exc, (name,), schema))
        return None


def _scale_counts(scales: Mapping[str, Any]) -> None:
    """Every scale counts every official (type, subtype) (0 leaves one out) and nothing else."""
    from memlens.core.constants import SUBTYPES

    known = [f"{t}/{s}" for t, subs in SUBTYPES.items() for s in subs]
    for name, sc in scales.items():
        extra = sorted(set(sc.counts) - set(known))
        if extra:
            raise ConfigError(
                f"data.scales.{name}.counts: {extra[0]} is not a known <type>/<subtype> (known: {', '.join(known)})"
            )
        missing = [k for k in known if k not in sc.counts]
        if missing:
            raise ConfigError(
                f"data.scales.{name}.counts has no count for {missing[0]} (every subtype needs one at every "
                "scale; 0 leaves it out)"
            )


def _cross_section(settings: Settings) -> None:
    """Rules between keys: ``data.scale`` names a scale, every scale counts every subtype, every
    length name is one."""
    d = settings.data
    if d.scale not in d.scales:
        raise ConfigError(f"unknown data.scale {d.scale!r} (known: {', '.join(d.scales)})")
    _scale_counts(d.scales)
    for where, names in (
        ("data.lengths", d.lengths or d.scales[d.scale].lengths),
        ("eval.lengths", settings.eval.lengths),
    ):
        for n in names:
            try:
                length_tokens(n)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None


def validate(data: Mapping[str, Any]) -> Settings:
    """Validate a resolved configuration (plain containers) into :class:`Settings`; raises one
    :class:`ConfigError` listing every problem found. An optional section left out is its schema's
    defaults; ``data`` itself is kept as the settings' composition."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"the configuration must be a mapping, not {type(data).__name__}")
    problems: list[str] = []
    unknown = [k for k in data if k not in ORDER]
    problems += [f"unknown config key {k} (known: {', '.join(ORDER)})" for k in unknown]
    problems += [f"missing config key {k}" for k in ORDER if k not in data and k not in OPTIONAL]
    sections: dict[str, Any] = {}
    for name in ORDER:
        if name in data:
            sections[name] = _section(name, data, problems)
        elif name in OPTIONAL:
            sections[name] = None if name in VALUES else section_schema(name)()
    if problems:
        more = f"; ... and {len(problems) - MAX_MESSAGES} more" if len(problems) > MAX_MESSAGES else ""
        raise ConfigError("; ".join(problems[:MAX_MESSAGES]) + more)
    settings = Settings(sections, data)
    _cross_section(settings)
    return settings
