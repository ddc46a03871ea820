"""Configuration: Hydra composition of ``conf/`` (or of the committed ``params.yaml``) plus overrides,
validated against the typed schema of :mod:`memlens.core.settings`.

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

Every composed config is then validated (:func:`validate_config`, called by :func:`load_config` on
both paths, so every stage and ``memlens compose`` reject a bad config before doing any work): a key
the schema does not know is rejected, including one added with ``+``; ``key=value`` for a key that is
not in the config names the key and the keys its section knows. All errors are
:class:`~memlens.core.errors.ConfigError` (one message, no traceback).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from omegaconf import DictConfig, OmegaConf

from memlens.core.constants import LENGTH_TOKENS
from memlens.core.errors import ConfigError
from memlens.core.secrets import check_no_secrets
from memlens.core.secrets import register as _register_secrets_check

if TYPE_CHECKING:
    from memlens.core.settings import Settings

#: name of the primary config made of a params file (Hydra ConfigStore)
PARAMS_CONFIG = "_memlens_params_"
#: folders of conf/ that are not config groups of the configuration itself
NOT_GROUPS = frozenset({"hydra"})

_register_secrets_check()  # the resolver of conf/config.yaml's `secrets_checked`


def length_tokens(name: str) -> int:
    key = str(name).lower()
    if key in LENGTH_TOKENS:
        return LENGTH_TOKENS[key]
    if key.endswith("k") and key[:-1].isdigit():
        return int(key[:-1]) * 1024
    raise ConfigError(f"unknown length {name!r}: use names such as 32k, 64k, 128k, 256k")


def _nearest_project(start: Path) -> Path | None:
    for p in (start, *start.parents):
        if (p / "conf" / "config.yaml").is_file():
            return p
    return None


def _under_dvc() -> bool:
    """True inside a command that DVC runs (``dvc repro``/``dvc exp run`` set ``DVC_ROOT`` and ``DVC_STAGE``)."""
    return bool(os.environ.get("DVC_STAGE") or os.environ.get("DVC_ROOT"))


def project_root() -> Path:
    """The project folder: the nearest folder above the working directory holding ``conf/config.yaml``.

    DVC runs each stage in the folder of its experiment (the workspace, a ``--temp`` executor, a queued
    executor under ``.dvc/tmp/exps/``), while ``$DVC_ROOT`` always names the main repository, so the
    working directory wins over ``$DVC_ROOT``: every experiment reads its own ``params.yaml`` and writes
    only its own outputs. ``$MEMLENS_ROOT`` (set by ``memlens.sweep`` for its jobs) names the project
    outside DVC; ``$DVC_ROOT`` is the last resort when no folder above the working directory is a project.
    """
    here = Path.cwd().resolve()
    env = os.environ.get("MEMLENS_ROOT")
    if env and not _under_dvc():
        return Path(env).resolve()
    found = _nearest_project(here)
    if found is not None:
        return found
    dvc = os.environ.get("DVC_ROOT")
    return Path(dvc).resolve() if dvc else here


def shared_root(root: Path) -> Path:
    """Where what outlives an experiment lives (the results store, MLflow, local model files): the main
    repository ``$DVC_ROOT`` when ``root`` is one of its DVC experiment executors (a folder under
    ``$DVC_ROOT/.dvc/tmp/``), else ``root`` itself."""
    dvc = os.environ.get("DVC_ROOT")
    if not dvc:
        return root
    main = Path(dvc).resolve()
    try:
        Path(root).resolve().relative_to(main / ".dvc" / "tmp")
    except ValueError:
        return root
    return main


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

    from memlens.core.settings import unknown_key_message

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
    """The validated configuration: ``conf/`` composed with ``overrides``, or the params file (relative
    to the project root) with ``overrides`` applied by Hydra."""
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
    validate_config(cfg)
    if "secrets_checked" in cfg:  # the check ran (validate_config resolved it): its value, as DVC writes it
        cfg.secrets_checked = True
    return cfg


def validate_config(cfg: DictConfig | dict) -> Settings:
    """Check ``cfg`` against :mod:`memlens.core.settings` (unknown keys, types, values) and the
    cross-section rules; returns the typed :class:`~memlens.core.settings.Settings`. ``cfg`` itself
    is not changed."""
    from omegaconf.errors import OmegaConfBaseException

    from memlens.core.settings import validate_settings

    if isinstance(cfg, DictConfig):
        try:
            data = OmegaConf.to_container(cfg, resolve=True)
        except OmegaConfBaseException as exc:
            inner = _config_error_in(exc)
            raise ConfigError(str(inner) if inner else f"config error: {exc}".strip()) from None
    else:
        data = cfg
    check_no_secrets(data)
    settings = validate_settings(data)
    d = settings.data
    if d.scale not in d.scales:
        raise ConfigError(f"unknown data.scale {d.scale!r} (known: {', '.join(d.scales)})")
    for where, names in (
        ("data.lengths", d.lengths or d.scales[d.scale].lengths),
        ("eval.lengths", settings.eval.lengths),
    ):
        for n in names:
            try:
                length_tokens(n)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
    return settings


def resolved_lengths(cfg: DictConfig) -> list[str]:
    lengths = cfg.data.get("lengths")
    if not lengths:
        lengths = cfg.data.scales[cfg.data.scale].lengths
    return [str(x) for x in lengths]


def section(cfg: DictConfig, *keys: str) -> dict[str, Any]:
    """Plain dict of the given config sections (for manifests and MLflow params)."""
    return {
        k: OmegaConf.to_container(cfg[k], resolve=True)
        if isinstance(cfg[k], DictConfig) or OmegaConf.is_list(cfg[k])
        else cfg[k]
        for k in keys
    }


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def ontology(self) -> Path:
        return self.data / "ontology"

    @property
    def images(self) -> Path:
        return self.data / "images"

    @property
    def filtered(self) -> Path:
        return self.data / "filtered"

    @property
    def generated(self) -> Path:
        return self.data / "generated"

    @property
    def instances(self) -> Path:
        return self.data / "instances"

    @property
    def release(self) -> Path:
        return self.data / "release"

    @property
    def predictions(self) -> Path:
        return self.data / "predictions"

    @property
    def verdicts(self) -> Path:
        return self.data / "verdicts"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def home(self) -> Path:
        """The main project folder (:func:`shared_root`): ``root`` itself, or the main repository when
        ``root`` is a DVC experiment executor. MLflow, local model files and the cache live there."""
        return shared_root(self.root)

    @property
    def models(self) -> Path:
        return self.home / "models"

    @property
    def cache(self) -> Path:
        """What must outlive DVC checkouts (model answers, verdict archive, judge cache):
        ``$MEMLENS_CACHE`` or ``<main project>/.memlens_cache`` (:attr:`home`: shared by every DVC
        experiment, temporary and queued ones included)."""
        env = os.environ.get("MEMLENS_CACHE")
        return Path(env) if env else self.home / ".memlens_cache"

    @classmethod
    def from_cfg(cls, cfg: DictConfig | None = None, root: str | Path | None = None) -> Paths:
        return cls(Path(root).resolve() if root else project_root())
