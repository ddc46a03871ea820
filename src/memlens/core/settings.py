"""The building blocks of the typed configuration, and :class:`Settings`, what a stage receives.

Every config section has a schema: a pydantic model derived from :class:`Section` (unknown keys are
errors, types are strict, instances are frozen). A schema lives beside the component it configures,
never here: the filter stage's :class:`~memlens.construction.filter.settings.FilterSettings` in
``construction/filter/settings.py``, a model backend's as the ``Config`` attribute of its class (in
the class's module), a filter channel's beside the channel class. :mod:`memlens.core.schemas` (no part of any
stage's code: the CLI validates before a stage runs) finds them, by a table of the plain sections and by the
``_target_`` class of the others, and validates a composed configuration into a :class:`Settings`.

Where a default lives: a key that ``conf/`` lists for every option of its group has its default
there (the schema declares it required); a key an option may leave out has its default in the
schema (and the constructor of a ``_target_`` class takes it from there, :func:`configured`), never
in both. :func:`operational` marks a key that changes how a system is reached, never what it
answers (left out of the system identity that keys stored answers).

This module is imported by every schema, so by every stage that reads one: it holds nothing else.
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memlens.core.errors import ConfigError

__all__ = [
    "Command",
    "DeviceMap",
    "EnvValue",
    "Fraction",
    "IntRange",
    "NonNegFloat",
    "NonNegInt",
    "PositiveFloat",
    "PositiveInt",
    "SafeName",
    "Section",
    "Settings",
    "Targeted",
    "as_settings",
    "configured",
    "operational",
    "operational_keys",
    "reject_api_key",
    "schema_defaults",
]


class Section(BaseModel):
    """Base of every schema: unknown keys are errors, types are strict (``"4"`` is not an int,
    ``"false"`` is not a bool; an int is accepted where a float is expected)."""

    model_config = ConfigDict(extra="forbid", strict=True, protected_namespaces=(), frozen=True)


class Targeted(Section):
    """A section that names its class: ``_target_`` (Hydra's key) is the class's import path."""

    target: str = Field(alias="_target_")


# ------------------------------------------------------------------------------------ value types
def _ordered_pair(v: list[int]) -> list[int]:
    if v[0] > v[1]:
        raise ValueError(f"[low, high] with low <= high, got {v}")
    return v


#: ``[low, high]`` (inclusive range of integers)
IntRange = Annotated[
    list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2), AfterValidator(_ordered_pair)
]
PositiveInt = Annotated[int, Field(ge=1)]
NonNegInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]


def _one_of(check, what: str):
    def validate(v: Any) -> Any:
        if not check(v):
            raise ValueError(f"expected {what}, got {v!r}")
        return v

    return AfterValidator(validate)


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


#: a command: a string (split like a shell) or a list of arguments
Command = Annotated[
    Any, _one_of(lambda v: v is None or isinstance(v, str) or _is_str_list(v), "null, a string or a list of strings")
]
#: ``device_map`` of transformers: a name (``auto``) or a mapping of module -> device
DeviceMap = Annotated[Any, _one_of(lambda v: v is None or isinstance(v, (str, dict)), "null, a string or a mapping")]
#: environment values (converted to strings)
EnvValue = Annotated[
    Any, _one_of(lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool), "a string or a number")
]


def _safe_name(v: str) -> str:
    """A name that becomes a folder (``data/predictions/<name>/``): letters, digits, ``.``, ``_``, ``-``."""
    from memlens.core.store import name_problem

    why = name_problem(v)
    if why:
        raise ValueError(f"{v!r} {why}")
    return v


#: a system or judge name (:func:`memlens.core.store.name_problem`)
SafeName = Annotated[str, Field(min_length=1), AfterValidator(_safe_name)]


def reject_api_key(section: str, data: Any) -> Any:
    """A literal API key is never accepted in the configuration (it would end up in params.yaml):
    for a ``model_validator(mode="before")`` of a section with an ``api_key_env``."""
    if isinstance(data, Mapping) and "api_key" in data:
        raise ValueError(
            f"{section}.api_key is not accepted: put the key in an environment variable and name "
            f"it in {section}.api_key_env"
        )
    return data


# ------------------------------------------------------------------------------------ operational keys
#: the ``json_schema_extra`` of an operational field
OPERATIONAL = {"operational": True}


def operational(default: Any = ..., **kwargs: Any) -> Any:
    """``Field(default, ...)`` of a key that changes how a system is reached (endpoint, concurrency,
    timeouts, server process, logs), never what it answers: such keys are left out of the system's
    identity, so a new endpoint or a longer timeout reuses the stored answers."""
    return Field(default, json_schema_extra=OPERATIONAL, **kwargs)


def operational_keys(schema: type[BaseModel]) -> frozenset[str]:
    """The keys (aliases) of a schema marked :func:`operational`."""
    return frozenset(
        (f.alias or name)
        for name, f in schema.model_fields.items()
        if isinstance(f.json_schema_extra, Mapping) and f.json_schema_extra.get("operational")
    )


# ------------------------------------------------------------------------------------ defaults
def schema_defaults(schema: type[BaseModel]) -> dict[str, Any]:
    """Key (alias) -> default of every field of ``schema`` that has one (fresh copies)."""
    return {
        (f.alias or name): copy.deepcopy(f.get_default(call_default_factory=True))
        for name, f in schema.model_fields.items()
        if not f.is_required()
    }


def configured(cls: type) -> type:
    """Class decorator: the constructor's missing keyword arguments take the defaults of the class's
    schema (``cls.Config``), so a default is declared once, in the schema, and the constructor lists
    its keys without defaults. Arguments given (by position or name) are left alone; a keyword the
    constructor does not take is still its ``TypeError``."""
    init = cls.__init__
    sig = inspect.signature(init)
    accepts = {n for n, p in sig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    forwards = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())

    @functools.wraps(init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        bound = sig.bind_partial(self, *args, **kwargs).arguments
        for key, value in schema_defaults(type(self).Config).items():
            if key in bound or key in kwargs:
                continue
            if key in accepts:
                kwargs[key] = value
            elif forwards and key != "_target_":
                kwargs[key] = value  # for the base class the extra keywords go to
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


# ------------------------------------------------------------------------------------ the settings
class Settings:
    """The validated configuration a stage receives: ``settings.filter`` is the filter section as
    its schema (:class:`~memlens.construction.filter.settings.FilterSettings`), ``settings.model``
    the model section as the schema of its ``_target_`` class, and so on; every value is typed and
    every default filled in. An optional section that the configuration leaves out (``export``,
    ``report`` ...) is its schema's defaults.

    :meth:`composed` gives the composition the settings were validated from, as plain containers
    (what ``params.yaml`` holds, without filled-in defaults): what manifests record and what a
    system's identity is made of, so they stay exactly what DVC tracks.

    Made by :func:`memlens.core.schemas.validate` (``memlens.core.compose.load_settings``); never by a stage.
    """

    __slots__ = ("_composed", "_sections")

    def __init__(self, sections: Mapping[str, Any], composed: Mapping[str, Any]):
        object.__setattr__(self, "_sections", dict(sections))
        object.__setattr__(self, "_composed", copy.deepcopy(dict(composed)))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._sections[name]
        except KeyError:
            known = ", ".join(self._sections)
            raise ConfigError(f"config section {name} is missing (the configuration has: {known})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Settings are read-only")

    def __getitem__(self, name: str) -> Any:
        return self._sections[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sections)

    def __len__(self) -> int:
        return len(self._sections)

    def __contains__(self, name: object) -> bool:
        return name in self._sections

    def __getstate__(self) -> tuple[dict, dict]:
        return self._sections, self._composed

    def __setstate__(self, state: tuple[dict, dict]) -> None:
        object.__setattr__(self, "_sections", state[0])
        object.__setattr__(self, "_composed", state[1])

    def __repr__(self) -> str:
        return f"Settings({', '.join(self._sections)})"

    def composed(self, *keys: str) -> dict[str, Any]:
        """The composed sections ``keys`` (all without keys) as fresh plain containers; a section
        the composition leaves out is absent."""
        names = keys or tuple(self._composed)
        return {k: copy.deepcopy(self._composed[k]) for k in names if k in self._composed}


def as_settings(cfg: Any) -> Settings:
    """``cfg`` as :class:`Settings`: settings as they are; a composed configuration (a ``DictConfig``
    such as :func:`memlens.core.compose.load_config` gives, or plain containers) validated first. For
    callers outside the CLI (tests, notebooks); the validator is looked up by name, since validating
    is no part of a stage's code."""
    if isinstance(cfg, Settings):
        return cfg
    import importlib

    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            cfg = OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        pass
    return importlib.import_module("memlens.core.schemas").validate(cfg)
