"""Configuration: Hydra composition of ``conf/`` (or the committed ``params.yaml``) plus overrides.

DVC composes ``conf/`` into ``params.yaml`` on ``dvc exp run`` (``hydra.enabled``), so pipeline
stages read ``params.yaml`` (``memlens <stage> --params params.yaml``). Run by hand, ``memlens
<stage> key=value group=option`` composes ``conf/`` with Hydra and the given overrides.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memlens.core.constants import LENGTH_TOKENS
from memlens.core.errors import ConfigError


def length_tokens(name: str) -> int:
    key = str(name).lower()
    if key in LENGTH_TOKENS:
        return LENGTH_TOKENS[key]
    if key.endswith("k") and key[:-1].isdigit():
        return int(key[:-1]) * 1024
    raise ConfigError(f"unknown length {name!r}: use names such as 32k, 64k, 128k, 256k")


def project_root() -> Path:
    """``$DVC_ROOT`` when run by DVC, else the nearest folder above the cwd holding ``conf/``."""
    env = os.environ.get("MEMLENS_ROOT") or os.environ.get("DVC_ROOT")
    if env:
        return Path(env).resolve()
    here = Path.cwd().resolve()
    for p in (here, *here.parents):
        if (p / "conf" / "config.yaml").is_file():
            return p
    return here


def _compose(conf_dir: Path, overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=str(conf_dir.resolve()), version_base=None):
            return compose(config_name="config", overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(f"config error: {exc}".strip()) from None


def _apply_to_params(base: DictConfig, conf_dir: Path, overrides: list[str]) -> DictConfig:
    """Apply ``group=option`` and ``a.b=value`` overrides on top of a composed params file."""
    cfg = base
    for ov in overrides:
        if "=" not in ov:
            raise ConfigError(f"override {ov!r} must look like key=value")
        key, value = ov.split("=", 1)
        key = key.lstrip("+")
        group_dir = conf_dir / key
        if "." not in key and group_dir.is_dir():
            option = group_dir / f"{value}.yaml"
            if not option.is_file():
                known = sorted(p.stem for p in group_dir.glob("*.yaml"))
                raise ConfigError(f"unknown option {value!r} for config group {key!r} (available: {', '.join(known)})")
            cfg[key] = OmegaConf.load(option)
            continue
        try:
            OmegaConf.select(cfg, key, throw_on_missing=False)
            node_exists = OmegaConf.select(cfg, key, default="__missing__") != "__missing__"
        except Exception:  # noqa: BLE001
            node_exists = False
        if not node_exists and not ov.startswith("+"):
            raise ConfigError(f"unknown config key {key!r} (prefix it with + to add a new key)")
        OmegaConf.update(cfg, key, OmegaConf.from_dotlist([f"v={value}"]).v, merge=False, force_add=True)
    return cfg


def load_config(overrides: list[str] | None = None, *, params: str | Path | None = None,
                root: str | Path | None = None) -> DictConfig:
    overrides = list(overrides or [])
    root_p = Path(root) if root else project_root()
    conf_dir = root_p / "conf"
    if params is not None:
        p = Path(params)
        if not p.is_absolute():
            p = root_p / p
        if not p.is_file():
            raise ConfigError(f"{p}: params file not found (run `dvc exp run` or `memlens compose` to create it)")
        try:
            base = OmegaConf.load(p)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"{p}: not valid YAML: {exc}") from None
        cfg = _apply_to_params(base, conf_dir, overrides)
    else:
        if not (conf_dir / "config.yaml").is_file():
            raise ConfigError(f"{conf_dir}/config.yaml not found: run memlens from the project folder")
        cfg = _compose(conf_dir, overrides)
    validate_config(cfg)
    return cfg


REQUIRED = ("data", "source", "filter", "generator", "model", "judge", "tracking", "paths")


def validate_config(cfg: DictConfig) -> None:
    for key in REQUIRED:
        if key not in cfg:
            raise ConfigError(f"config is missing the section {key!r}")
    scale = cfg.data.get("scale")
    scales = cfg.data.get("scales", {})
    if scale not in scales:
        raise ConfigError(f"unknown data.scale {scale!r} (known: {', '.join(scales)})")
    for n in resolved_lengths(cfg):
        length_tokens(n)
    if not cfg.model.get("name"):
        raise ConfigError("model.name is required")


def resolved_lengths(cfg: DictConfig) -> list[str]:
    lengths = cfg.data.get("lengths")
    if not lengths:
        lengths = cfg.data.scales[cfg.data.scale].lengths
    return [str(x) for x in lengths]


def section(cfg: DictConfig, *keys: str) -> dict[str, Any]:
    """Plain dict of the given config sections (for manifests and MLflow params)."""
    return {k: OmegaConf.to_container(cfg[k], resolve=True) if isinstance(cfg[k], DictConfig) or
            OmegaConf.is_list(cfg[k]) else cfg[k] for k in keys}


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def data(self) -> Path: return self.root / "data"
    @property
    def ontology(self) -> Path: return self.data / "ontology"
    @property
    def images(self) -> Path: return self.data / "images"
    @property
    def filtered(self) -> Path: return self.data / "filtered"
    @property
    def generated(self) -> Path: return self.data / "generated"
    @property
    def instances(self) -> Path: return self.data / "instances"
    @property
    def release(self) -> Path: return self.data / "release"
    @property
    def predictions(self) -> Path: return self.data / "predictions"
    @property
    def verdicts(self) -> Path: return self.data / "verdicts"
    @property
    def reports(self) -> Path: return self.root / "reports"
    @property
    def models(self) -> Path: return self.root / "models"

    @classmethod
    def from_cfg(cls, cfg: DictConfig | None = None, root: str | Path | None = None) -> "Paths":
        return cls(Path(root).resolve() if root else project_root())
