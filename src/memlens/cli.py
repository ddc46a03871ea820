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
from pathlib import Path

from memlens.core.errors import MemLensError

for _k, _v in {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "DVC_NO_ANALYTICS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
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
#: stage name -> the config groups whose ``_target_`` classes the stage instantiates (their modules
#: are part of the stage's code, so of its DVC deps)
TARGET_GROUPS: dict[str, tuple[str, ...]] = {"crawl": ("images",), "evaluate": ("model",), "judge": ("judge",)}
EXTRA: dict[str, str] = {
    "compose": "memlens.cli:compose",
    "deps": "memlens.cli:deps",
    "leaderboard": "memlens.eval.report.leaderboard:run_cli",
}

log = logging.getLogger("memlens")


def resolve_target(target: str):
    mod, fn = target.split(":")
    return getattr(importlib.import_module(mod), fn)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memlens",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="stages: " + " -> ".join(STAGES) + "\nextra: " + ", ".join(EXTRA),
    )
    p.add_argument("command", choices=[*STAGES, *EXTRA])
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. model=chance data.lengths=[32k]")
    p.add_argument(
        "--params",
        default=None,
        help="read the composed config from this file (DVC stages use params.yaml) instead of conf/",
    )
    p.add_argument("--root", default=None, help="project folder (default: $DVC_ROOT or the nearest folder with conf/)")
    p.add_argument("--write", action="store_true", help="deps: write the stages' code deps into dvc.yaml")
    p.add_argument("--check", action="store_true", help="deps: exit 1 when dvc.yaml's code deps are out of date")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_intermixed_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("alembic", "mlflow", "urllib3", "httpx", "matplotlib", "PIL", "openai", "hydra"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from memlens.core.config import Paths, load_config

    t0 = time.perf_counter()
    try:
        if args.command in EXTRA:
            return int(resolve_target(EXTRA[args.command])(args) or 0)
        cfg = load_config(args.overrides, params=args.params, root=args.root)
        paths = Paths.from_cfg(cfg, root=args.root)
        resolve_target(STAGES[args.command])(cfg, paths)
    except MemLensError as exc:
        print(f"memlens {args.command}: error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 2))
    except KeyboardInterrupt:
        print(f"memlens {args.command}: interrupted; finished work is kept, re-run to resume", file=sys.stderr)
        return 130
    log.info("%s done in %.1f s", args.command, time.perf_counter() - t0)
    return 0


def compose(args) -> int:
    """Write params.yaml: the composition of conf/ with the given overrides (what `dvc exp run` does)."""
    from omegaconf import OmegaConf

    from memlens.core.config import load_config, project_root

    root = Path(args.root) if args.root else project_root()
    cfg = load_config(args.overrides, root=root)
    text = OmegaConf.to_yaml(cfg)
    (root / "params.yaml").write_text(text)
    print(f"wrote {root / 'params.yaml'}")
    return 0


def stage_modules(stage: str, conf_dir: Path) -> list[str]:
    """The modules a stage runs: this CLI, the stage module and every ``_target_`` module that an
    option of the config groups it instantiates can name."""
    from omegaconf import OmegaConf

    mods = [__name__, STAGES[stage].split(":")[0]]
    for group in TARGET_GROUPS.get(stage, ()):
        for f in sorted((conf_dir / group).glob("*.yaml")):
            target = OmegaConf.load(f).get("_target_")
            if target:
                mods.append(str(target).rsplit(".", 1)[0])
    return sorted(set(mods))


def stage_code_paths(stage: str, root: Path) -> list[str]:
    """A stage's code as DVC dependency paths (relative to the project root): the files of its
    import closure plus package data, with whole folders where every file is used."""
    import os

    from memlens.core.codegraph import PKG, code_files, compress_paths

    files = code_files(stage_modules(stage, root / "conf"))
    return [os.path.relpath(PKG.parent / p, root) for p in compress_paths(files)]


def rewrite_dvc_deps(text: str, code_paths: dict[str, list[str]]) -> str:
    """``dvc.yaml`` text with each stage's ``src/`` deps replaced by ``code_paths[stage]`` (other deps,
    comments and layout are kept)."""
    out: list[str] = []
    stage = None
    in_deps = False
    for line in text.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if indent == 2 and stripped.endswith(":") and not stripped.startswith("#"):
            stage, in_deps = stripped[:-1], False
        elif indent == 4 and stripped.endswith(":"):
            in_deps = stripped == "deps:"
            out.append(line)
            if in_deps and stage in code_paths:
                out.extend(f"      - {p}" for p in code_paths[stage])
            continue
        if in_deps and stage in code_paths and stripped.startswith("- src/"):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def deps(args) -> int:
    """Print each stage's code dependencies (what dvc.yaml's ``deps`` lists under src/);
    ``memlens deps --write`` puts them into dvc.yaml, ``--check`` exits 1 when it is out of date."""
    from memlens.core.config import project_root

    root = Path(args.root) if args.root else project_root()
    write, check = bool(getattr(args, "write", False)), bool(getattr(args, "check", False))
    names = list(args.overrides) or list(STAGES)
    unknown = [n for n in names if n not in STAGES]
    if unknown:
        print(f"memlens deps: unknown stage {unknown[0]!r} (stages: {', '.join(STAGES)})", file=sys.stderr)
        return 2
    paths = {name: stage_code_paths(name, root) for name in names}
    if write or check:
        dvc = root / "dvc.yaml"
        text = dvc.read_text()
        new = rewrite_dvc_deps(text, paths)
        if check:
            if new != text:
                print("dvc.yaml: stage code deps are out of date; run `memlens deps --write`", file=sys.stderr)
                return 1
            print("dvc.yaml: stage code deps are exact")
            return 0
        dvc.write_text(new)
        print(f"wrote {dvc}")
        return 0
    for name, ps in paths.items():
        print(f"{name}:")
        for path in ps:
            print(f"  - {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
