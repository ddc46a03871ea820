"""``memlens <stage> [--params params.yaml] [overrides...]``: one thin command per pipeline stage.

Stages are registered in :data:`STAGES`; each is a function ``run(cfg, paths) -> None``.
Errors of the :class:`~memlens.core.errors.MemLensError` family end the command with one clear message
and exit status 2; nothing already written is removed.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import time

from memlens.core.errors import MemLensError

for _k, _v in {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "DVC_NO_ANALYTICS": "1",
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(_k, _v)

#: stage name -> "module:function"
STAGES: dict[str, str] = {
    "ontology": "memlens.build.ontology.stage:run",
    "crawl": "memlens.build.crawl.stage:run",
    "filter": "memlens.build.filter.stage:run",
    "generate": "memlens.build.generate.stage:run",
    "assemble": "memlens.build.assemble.stage:run",
    "validate": "memlens.build.validate.stage:run",
    "export": "memlens.build.export.stage:run",
    "evaluate": "memlens.eval.evaluate.stage:run",
    "judge": "memlens.eval.judge.stage:run",
    "report": "memlens.eval.report.stage:run",
}
EXTRA: dict[str, str] = {
    "compose": "memlens.cli:compose",
    "leaderboard": "memlens.eval.report.leaderboard:run_cli",
}

log = logging.getLogger("memlens")


def _resolve(target: str):
    mod, fn = target.split(":")
    return getattr(importlib.import_module(mod), fn)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memlens", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="stages: " + " -> ".join(STAGES) + "\nextra: " + ", ".join(EXTRA))
    p.add_argument("command", choices=[*STAGES, *EXTRA])
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. model=chance data.lengths=[32k]")
    p.add_argument("--params", default=None,
                   help="read the composed config from this file (DVC stages use params.yaml) instead of conf/")
    p.add_argument("--root", default=None, help="project folder (default: $DVC_ROOT or the nearest folder with conf/)")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_intermixed_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for noisy in ("alembic", "mlflow", "urllib3", "httpx", "matplotlib", "PIL", "openai", "hydra"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from memlens.core.config import Paths, load_config

    t0 = time.perf_counter()
    try:
        if args.command in EXTRA:
            return int(_resolve(EXTRA[args.command])(args) or 0)
        cfg = load_config(args.overrides, params=args.params, root=args.root)
        paths = Paths.from_cfg(cfg, root=args.root)
        _resolve(STAGES[args.command])(cfg, paths)
    except MemLensError as exc:
        print(f"memlens {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"memlens {args.command}: interrupted; finished work is kept, re-run to resume", file=sys.stderr)
        return 130
    log.info("%s done in %.1f s", args.command, time.perf_counter() - t0)
    return 0


def compose(args) -> int:
    """Write params.yaml: the composition of conf/ with the given overrides (what `dvc exp run` does)."""
    from pathlib import Path

    from omegaconf import OmegaConf

    from memlens.core.config import load_config, project_root

    root = Path(args.root) if args.root else project_root()
    cfg = load_config(args.overrides, root=root)
    text = OmegaConf.to_yaml(cfg)
    (root / "params.yaml").write_text(text)
    print(f"wrote {root / 'params.yaml'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
