"""Validated settings for tests: conf/ composed with overrides, then partial sections merged in.

``settings(filter={"max_side": 100})`` is the default configuration with ``filter.max_side``
changed, validated like a stage's (``memlens.core.schemas.validate``): a test states only what it
changes and the stage still receives a complete, typed :class:`~memlens.core.settings.Settings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from memlens.core.compose import load_config
from memlens.core.schemas import validate
from memlens.core.settings import Settings
from tests.conftest import REPO


def merged(base: Any, over: Any) -> Any:
    """``over`` deep-merged into ``base`` (non-empty mappings merge; anything else, an empty mapping
    included, replaces)."""
    if isinstance(base, Mapping) and isinstance(over, Mapping) and over:
        return {**base, **{k: merged(base.get(k), v) for k, v in over.items()}}
    return over


def composed(overrides: tuple[str, ...] | list[str] = (), root: Path = REPO, **sections: Any) -> dict:
    data = OmegaConf.to_container(load_config(list(overrides), root=root), resolve=True)
    return merged(data, sections) if sections else data


def settings(overrides: tuple[str, ...] | list[str] = (), root: Path = REPO, **sections: Any) -> Settings:
    return validate(composed(overrides, root, **sections))
