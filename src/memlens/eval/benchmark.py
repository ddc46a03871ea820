"""Where evaluation items come from: a benchmark built by this pipeline (``data.source=built``) or
an official MEMLENS release in a local folder (``data.source=official``, ``data.official_dir``)."""
from __future__ import annotations

from pathlib import Path

from memlens.core.config import Paths
from memlens.core.errors import ConfigError


def open_source(cfg, paths: Paths):
    source = str(cfg.data.get("source", "built"))
    if source == "built":
        from memlens.core.items import BuiltBenchmark

        return BuiltBenchmark(paths)
    if source == "official":
        from memlens.core.official import OfficialRelease

        folder = cfg.data.get("official_dir")
        if not folder:
            raise ConfigError("data.source=official needs data.official_dir (the folder with dataset_*.json)")
        folder = Path(str(folder))
        if not folder.is_absolute():
            folder = paths.root / folder
        return OfficialRelease(folder)
    raise ConfigError(f"unknown data.source {source!r} (built | official)")
