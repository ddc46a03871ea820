"""Project paths and the small config helpers stages share (context lengths, composed sections).

Composing and validating the configuration is :mod:`memlens.core.compose` and
:mod:`memlens.core.schemas`, which the CLI, the sweep and the tools call and no stage imports: a stage
receives the validated :class:`~memlens.core.settings.Settings` and imports only this module, so
editing the composition changes no stage's code (``load_config`` and friends stay importable from
here, looked up lazily).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlens.core.constants import LENGTH_TOKENS
from memlens.core.errors import ConfigError

#: names that moved to :mod:`memlens.core.compose` (kept importable from here for existing callers)
MOVED = ("load_config", "load_settings", "validate_config", "config_groups", "PARAMS_CONFIG", "NOT_GROUPS")


def __getattr__(name: str) -> Any:
    if name in MOVED:
        import importlib

        return getattr(importlib.import_module("memlens.core.compose"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def resolved_lengths(cfg: Any) -> list[str]:
    """The lengths a build has: ``data.lengths``, or the scale's when it is empty."""
    data = cfg.data
    lengths = data.lengths or data.scales[data.scale].lengths
    return [str(x) for x in lengths]


def section(cfg: Any, *keys: str) -> dict[str, Any]:
    """Plain dict of the given sections as composed (for manifests and MLflow params): of
    :class:`~memlens.core.settings.Settings`, its composition; of a ``DictConfig``, its containers."""
    composed = getattr(cfg, "composed", None)
    if callable(composed):
        out = composed(*keys)
        missing = [k for k in keys if k not in out]
        if missing:
            raise ConfigError(f"config section {missing[0]} is not in the composed configuration")
        return out
    from omegaconf import DictConfig, OmegaConf

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
    def models(self) -> Path:
        return self.root / "models"

    @property
    def cache(self) -> Path:
        """What must outlive DVC checkouts (model answers, verdict archive, judge cache):
        ``$MEMLENS_CACHE`` or ``<project>/.memlens_cache``."""
        env = os.environ.get("MEMLENS_CACHE")
        return Path(env) if env else self.root / ".memlens_cache"

    @classmethod
    def from_cfg(cls, cfg: Any = None, root: str | Path | None = None) -> Paths:
        return cls(Path(root).resolve() if root else project_root())
