"""Configuration: Hydra composition of ``conf/`` (or of the committed ``params.yaml``) plus overrides,
validated against the schemas beside the components (:mod:`memlens.core.schemas`).

Two ways in, one composer (Hydra) and one validation:

* ``memlens <stage> key=value group=option ...`` composes ``conf/config.yaml`` with Hydra and the
  overrides (``compose(config_name="config")``).
* ``memlens <stage> --params params.yaml [overrides]`` is how DVC runs the stages: DVC composes
  ``conf/`` into ``params.yaml`` on ``dvc exp run`` (``hydra.enabled``) and every stage reads that file.
  The file's content becomes a Hydra *primary config* registered in Hydra's ``ConfigStore`` (named
  :data:`PARAMS_CONFIG`) and composed against the ``conf/`` search path, so overrides keep Hydra's
  semantics exactly. Its defaults list is ``[_self_, {data: null}, {model: null}, ...]`` (every config
  group of ``conf/``, unselected): with no override nothing is loaded from ``conf/`` and the result is
  the file. A group override (``model=chance``) selects that option, which Hydra loads *with its own
  defaults list*; the file's section of that group is emptied first (kept in place, so the key order
  stays the file's), so the section is exactly what composing ``conf/`` with ``model=chance`` gives
  while every other section stays the file's. ``key=value`` changes an existing key, ``+key=value``
  adds one, ``~key`` deletes one; an unknown group option is Hydra's error listing the options.

Every composed config is then validated (:func:`validate_config`, called by :func:`load_config` and
:func:`load_settings` on both paths, so every stage and ``memlens compose`` reject a bad config
before doing any work): a key the schema does not know is rejected, including one added with ``+``;
``key=value`` for a key that is not in the config names the key and the keys its section knows. All
errors are :class:`~memlens.core.errors.ConfigError` (one message, no traceback).

The CLI, the sweep, tests and tools call this module; a stage receives the
:class:`~memlens.core.settings.Settings` it makes and never imports it (so it is no part of any
stage's code).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from memlens.core.config import project_root
from memlens.core.errors import ConfigError
from memlens.core.schemas import validate
from memlens.core.secrets import check_no_secrets
from memlens.core.secrets import register as _register_secrets_check
from memlens.core.settings import Settings

__all__ = ["PARAMS_CONFIG", "config_groups", "load_config", "load_settings", "validate_config"]

#: name of the primary config made of a params file (Hydra ConfigStore)
PARAMS_CONFIG = "_memlens_params_"
#: folders of conf/ that are not config groups of the configuration itself
NOT_GROUPS = frozenset({"hydra"})

_register_secrets_check()  # the resolver of conf/config.yaml's `secrets_checked`


def config_groups(conf_dir: Path) -> list[str]:
    """The config groups of ``conf/`` (its sub-folders, ``hydra`` excepted)."""
    if not conf_dir.is_dir():
        return []
    return sorted(
        p.name
        for p in conf_dir.iterdir()
        if p.is_dir() and p.name not in NOT_GROUPS and not p.name.startswith((".", "_"))
    )


def _parse_overrides(overrides: list[str]) -> list:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as exc:
        raise ConfigError(f"bad override: {exc}".split("\nSee https://hydra.cc")[0]) from None


def _config_error_in(exc: BaseException) -> ConfigError | None:
    """A :class:`ConfigError` raised inside a resolver (the secrets check), if ``exc`` wraps one."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, ConfigError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def _hydra_message(exc: Exception, origin: str) -> str:
    inner = _config_error_in(exc)
    if inner is not None:
        return str(inner)
    text = str(exc).strip()
    text = text.split("\nConfig search path:")[0].rstrip()
    text = text.replace(f"In '{PARAMS_CONFIG}'", f"In {origin!r}").replace(f"'{PARAMS_CONFIG}'", repr(origin))
    return f"config error: {text}"


def _compose_raw(conf_dir: Path, config_name: str, overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize, initialize_config_dir

    if conf_dir.is_dir():
        ctx = initialize_config_dir(config_dir=str(conf_dir.resolve()), version_base=None)
    else:  # a params file without conf/: nothing to select from, overrides still apply
        ctx = initialize(config_path=None, version_base=None)
    with ctx:
        return compose(config_name=config_name, overrides=list(overrides))


def _compose(conf_dir: Path, config_name: str, overrides: list[str], origin: str) -> DictConfig:
    """Hydra's composition; its errors become one :class:`ConfigError`."""
    from hydra.errors import ConfigCompositionException, HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        return _compose_raw(conf_dir, config_name, overrides)
    except ConfigCompositionException as exc:
        msg = _not_in_config(exc, conf_dir, config_name, overrides)
        raise ConfigError(msg or _hydra_message(exc, origin)) from None
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(_hydra_message(exc, origin)) from None
    except yaml.YAMLError as exc:  # a config file that is not YAML: its file, line and column
        mark = getattr(exc, "problem_mark", None)
        where = f"{mark.name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else "a file under conf/"
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: not valid YAML ({what}); fix the file") from None


def _not_in_config(exc: Exception, conf_dir: Path, config_name: str, overrides: list[str]) -> str | None:
    """For ``key=value`` on a key the config does not have: the schema's message naming the key and
    the keys its section knows (judged on the composition without that override)."""
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    from memlens.core.schemas import unknown_key_message

    cause = exc.__cause__
    if not isinstance(cause, (ConfigAttributeError, ConfigKeyError)) or not getattr(cause, "full_key", None):
        return None
    missing = str(cause.full_key)
    parsed = _parse_overrides(overrides)
    bad = next(
        (
            o
            for o in parsed
            if not (o.is_add() or o.is_force_add() or o.is_delete())
            and (o.key_or_group == missing or o.key_or_group.startswith(missing + "."))
        ),
        None,
    )
    if bad is None:
        return None
    groups = set(config_groups(conf_dir))
    for keep in (
        [o.input_line for o in parsed if o is not bad],
        [o.input_line for o in parsed if o.key_or_group in groups],
    ):
        try:
            base = OmegaConf.to_container(_compose_raw(conf_dir, config_name, keep), resolve=False)
        except Exception:
            continue
        msg = unknown_key_message(base, bad.key_or_group)
        if msg:
            return msg
        return (
            f"config key {bad.key_or_group} is not in the composed config (its section accepts it): "
            f"add it with +{bad.input_line}"
        )
    return None


def _compose_params(base: dict[str, Any], conf_dir: Path, overrides: list[str], origin: str) -> DictConfig:
    """Compose a params file (a composed config) plus overrides with Hydra (see the module docstring)."""
    from hydra.core.config_store import ConfigStore

    if "defaults" in base:
        raise ConfigError(
            f"{origin}: a params file is a composed config and has no defaults list "
            "(regenerate it with `memlens compose`)"
        )
    groups = config_groups(conf_dir)
    parsed = [o for o in _parse_overrides(overrides) if o.key_or_group in groups]
    deleted = {o.key_or_group for o in parsed if o.is_delete()}
    chosen = {o.key_or_group for o in parsed} - deleted
    body = {k: ({} if k in chosen else v) for k, v in base.items() if k not in deleted}
    node = {"defaults": ["_self_", *({g: None} for g in groups)], **body}
    ConfigStore.instance().store(name=PARAMS_CONFIG, node=node)
    return _compose(conf_dir, PARAMS_CONFIG, overrides, origin)


def load_config(
    overrides: list[str] | None = None, *, params: str | Path | None = None, root: str | Path | None = None
) -> DictConfig:
    """The validated composition: ``conf/`` composed with ``overrides``, or the params file (relative
    to the project root) with ``overrides`` applied by Hydra, as a ``DictConfig`` (what
    ``memlens compose`` writes); :func:`load_settings` gives the typed settings of the same."""
    cfg = _composed(overrides, params=params, root=root)
    validate_config(cfg)
    if "secrets_checked" in cfg:  # the check ran (validate_config resolved it): its value, as DVC writes it
        cfg.secrets_checked = True
    return cfg


def _composed(
    overrides: list[str] | None = None, *, params: str | Path | None = None, root: str | Path | None = None
) -> DictConfig:
    overrides = [str(o) for o in (overrides or [])]
    root_p = Path(root) if root else project_root()
    conf_dir = root_p / "conf"
    if params is not None:
        p = Path(params)
        if not p.is_absolute():
            p = root_p / p
        if not p.is_file():
            raise ConfigError(f"{p}: params file not found (run `dvc exp run` or `memlens compose` to create it)")
        try:
            base = OmegaConf.to_container(OmegaConf.load(p), resolve=False)
        except Exception as exc:
            raise ConfigError(f"{p}: not valid YAML: {exc}") from None
        if not isinstance(base, dict):
            raise ConfigError(f"{p}: a params file must be a mapping of config sections")
        cfg = _compose_params(base, conf_dir, overrides, p.name)
    else:
        if not (conf_dir / "config.yaml").is_file():
            raise ConfigError(f"{conf_dir}/config.yaml not found: run memlens from the project folder")
        cfg = _compose(conf_dir, "config", overrides, "config")
    return cfg


def validate_config(cfg: DictConfig | dict) -> Settings:
    """Check ``cfg`` against the schemas (unknown keys, types, values) and the cross-section rules
    (:func:`memlens.core.schemas.validate`); returns the typed :class:`~memlens.core.settings.Settings`.
    ``cfg`` itself is not changed."""
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(cfg, DictConfig):
        try:
            data = OmegaConf.to_container(cfg, resolve=True)
        except OmegaConfBaseException as exc:
            inner = _config_error_in(exc)
            raise ConfigError(str(inner) if inner else f"config error: {exc}".strip()) from None
    else:
        data = cfg
    check_no_secrets(data)
    return validate(data)


def load_settings(
    overrides: list[str] | None = None, *, params: str | Path | None = None, root: str | Path | None = None
) -> Settings:
    """The typed settings a stage receives: :func:`load_config`'s composition, validated."""
    return validate_config(_composed(overrides, params=params, root=root))
