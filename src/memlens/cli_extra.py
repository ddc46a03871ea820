"""Extra commands that are not pipeline stages."""
from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from memlens.config import load_config, project_root


def compose(args) -> int:
    """Write params.yaml: the composition of conf/ with the given overrides (what `dvc exp run` does)."""
    root = Path(args.root) if args.root else project_root()
    cfg = load_config(args.overrides, root=root)
    text = OmegaConf.to_yaml(cfg)
    (root / "params.yaml").write_text(text)
    print(f"wrote {root / 'params.yaml'}")
    return 0
