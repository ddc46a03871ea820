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
    def from_cfg(cls, cfg: Any = None, root: str | Path | None = None) -> Paths:
        return cls(Path(root).resolve() if root else project_root())
