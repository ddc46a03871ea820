"""``memlens <stage> [--params params.yaml] [overrides...]``: one thin command per pipeline stage.

Stages are registered in :data:`STAGES`; each is a function ``run(cfg, paths) -> None``.
Errors of the :class:`~memlens.core.errors.MemLensError` family end the command with one clear message
and exit status 2; nothing already written is removed.

``memlens <command> --help`` explains one command (for a stage: every config key it reads, with its
value and description), ``memlens list models|agents|judges|types|images`` shows what there is to
choose from and ``memlens evaluate --dry-run`` prints the prompt of one item without sending it.
Help, listings and the dry run are reached by name (:data:`HELP`, :data:`EXTRA`, :data:`DRY_RUN`),
and a stage is given the validated :class:`~memlens.core.settings.Settings` (:func:`memlens.core.compose.load_settings`),
so neither this CLI, the help generator, the config composition nor the dependency tool is part of a
stage's code (its DVC deps and code hash): a stage's code is its own module's import closure, with
every component it can select by name (:mod:`memlens.core.registry`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import logging
import os
import sys
import time
from pathlib import Path

from memlens.core import environment
from memlens.core.errors import MemLensError
from memlens.core.version import VERSION

environment.apply()

#: stage name -> "module:function"
STAGES: dict[str, str] = {
    "ontology": "memlens.construction.ontology.stage:run",
    "crawl": "memlens.construction.crawl.stage:run",
    "filter": "memlens.construction.filter.stage:run",
    "generate": "memlens.construction.generate.stage:run",
    "assemble": "memlens.construction.assemble.stage:run",
    "validate": "memlens.construction.validate.stage:run",
    "export": "memlens.construction.export.stage:run",
    "evaluate": "memlens.eval.evaluate.stage:run",
    "judge": "memlens.eval.judge.stage:run",
    "report": "memlens.eval.report.stage:run",
    "diagnose": "memlens.eval.memory.stage:run",
}
EXTRA: dict[str, str] = {
    "compose": "memlens.cli:compose",
    "deps": "memlens.cli:deps",
    "leaderboard": "memlens.cli:leaderboard",
    "list": "memlens.clihelp:run_list",
    "results": "memlens.eval.results:run_cli",
}
#: stage name -> "module:function(cfg, paths, *, chars)" run by ``--dry-run`` instead of the stage
DRY_RUN: dict[str, str] = {"evaluate": "memlens.eval.evaluate.dryrun:run"}
#: stage name -> "module:function(cfg, paths)" run by ``--selftest`` instead of the stage
SELFTEST: dict[str, str] = {"judge": "memlens.eval.judge.selftest:run"}
#: what ``memlens <stage> --help`` runs (a stage's config keys, generated from dvc.yaml and the schema)
HELP = "memlens.clihelp:stage_help"
#: HTTP client loggers (a line per request or retry): shown below WARNING only with -v
HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "urllib3")
#: loggers kept at WARNING always
QUIET_LOGGERS = ("alembic", "mlflow", "matplotlib", "PIL", "hydra")
#: what the extra commands take besides overrides (their --help)
EXTRA_USAGE: dict[str, str] = {
    "compose": "memlens compose [overrides ...]",
    "deps": "memlens deps [stage ...] [--write | --check]",
    "leaderboard": "memlens leaderboard [--params params.yaml] [overrides ...]",
    "list": "memlens list {kinds,models,agents,judges,images,types,adapters,retrievers,channels,generators}",
    "results": "memlens results [stats | compact [--idle]]",
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
        add_help=False,
        epilog="stages: "
        + " -> ".join(STAGES)
        + "\nextra: "
        + ", ".join(EXTRA)
        + "\n\nmemlens <command> --help: that command (a stage: its config keys with values and descriptions)"
        + "\nmemlens list kinds|models|agents|judges|images|types|adapters|retrievers|channels|generators:"
        + " what there is to choose from"
        + "\nmemlens evaluate --dry-run: the rendered prompt of one item and its request key, nothing sent"
        + "\nmemlens judge --selftest: the judge's false-accept / false-reject rates on this build",
    )
    p.add_argument("command", nargs="?", choices=[*STAGES, *EXTRA], metavar="command", help="a stage or extra command")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. model=chance data.lengths=[32k]")
    p.add_argument("-h", "--help", action="store_true", help="show help (of the command, if one is given)")
    p.add_argument("--version", action="version", version=f"memlens {VERSION}")
    p.add_argument(
        "--params",
        default=None,
        help="read the composed config from this file (DVC stages use params.yaml) instead of conf/",
    )
    p.add_argument(
        "--root",
        default=None,
        help="project folder (default: the nearest folder above the working directory with conf/)",
    )
    p.add_argument("--write", action="store_true", help="deps: write the stages' code deps into dvc.yaml")
    p.add_argument("--check", action="store_true", help="deps: exit 1 when dvc.yaml's code deps are out of date")
    p.add_argument(
        "--idle", action="store_true", help="results compact: no evaluation runs anywhere; merge every segment"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help=f"{', '.join(DRY_RUN)}: print the prompt of the first item and its request key; build no client, send nothing",
    )
    p.add_argument(
        "--selftest",
        action="store_true",
        help=f"{', '.join(SELFTEST)}: the judge self-test on this build (false-accept / false-reject per task key)",
    )
    p.add_argument(
        "--chars",
        type=int,
        default=240,
        metavar="N",
        help="--dry-run: characters shown of each text block (first and last N/2; 0 = all)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logs, including every HTTP request")
    return p


class HttpLogFilter(logging.Filter):
    """Lets records of the HTTP client loggers (:data:`HTTP_LOGGERS`: one line per request or retry)
    through at WARNING and above only, unless ``verbose``."""

    def __init__(self, verbose: bool):
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        return self.verbose or record.levelno >= logging.WARNING or record.name.split(".")[0] not in HTTP_LOGGERS


def setup_logging(verbose: bool) -> None:
    """INFO (DEBUG with -v) on stderr; HTTP client records below WARNING only with -v.

    The HTTP rule is a filter on the stderr handler this sets up, not a level on the loggers, so
    a process that configured logging itself (a test capturing DEBUG records, a notebook) keeps
    seeing what it asked for."""
    root = logging.getLogger()
    fresh = not root.handlers
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if fresh:
        for handler in root.handlers:
            handler.addFilter(HttpLogFilter(verbose))
    for noisy in QUIET_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.WARNING)


def command_help(parser: argparse.ArgumentParser, args) -> int:
    """``memlens [command] --help``."""
    if args.command is None:
        parser.print_help()
        return 0
    if args.command in STAGES:
        print(resolve_target(HELP)(args.command, args), end="")
        return 0
    fn = resolve_target(EXTRA[args.command])
    doc = inspect.cleandoc(fn.__doc__ or "")
    print(f"usage: {EXTRA_USAGE.get(args.command, f'memlens {args.command} [overrides ...]')}\n\n{doc}")
    return 0


#: exit statuses (README: "Exit statuses")
EXIT_OK, EXIT_FAILED_ITEMS, EXIT_BAD_INPUT, EXIT_STORAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130


def storage_message(exc: OSError) -> str:
    """One line for a file-system error: the path, what happened and what to do."""
    import errno

    path = exc.filename or "a file"
    hint = {
        errno.ENOSPC: "the disk is full: free space (or point MEMLENS_CACHE at a larger disk) and re-run",
        errno.EDQUOT: "the disk quota is used up: free space and re-run",
        errno.EROFS: "the file system is read-only: point MEMLENS_CACHE (or the project) at a writable folder",
        errno.EACCES: "permission denied: make it writable for this user, or point MEMLENS_CACHE elsewhere",
        errno.EPERM: "operation not permitted: make it writable for this user, or point MEMLENS_CACHE elsewhere",
        errno.ENOTDIR: "a file is in the way where a folder is expected: remove or move it",
        errno.EEXIST: "a file is in the way where a folder is expected: remove or move it",
        errno.EISDIR: "a folder is in the way where a file is expected: remove or move it",
    }.get(exc.errno or 0, "check the path, its permissions and the free space")
    return f"{path}: {exc.strerror or exc}; {hint}. Finished work is kept, re-run to resume"


def run_command(args) -> int:
    """Run the parsed command (a stage runs inside :func:`memlens.core.outputs.guard_outputs`)."""
    from memlens.core.compose import load_settings
    from memlens.core.config import Paths

    if args.command in EXTRA:
        return int(resolve_target(EXTRA[args.command])(args) or 0)
    cfg = load_settings(args.overrides, params=args.params, root=args.root)
    paths = Paths.from_cfg(cfg, root=args.root)
    if args.dry_run:
        return int(resolve_target(DRY_RUN[args.command])(cfg, paths, chars=args.chars) or 0)
    if args.selftest:
        return int(resolve_target(SELFTEST[args.command])(cfg, paths) or 0)
    run_stage(args.command, cfg, paths)
    return EXIT_OK


#: the persistent file-hash memo in the project cache (:mod:`memlens.core.hashmemo`)
HASH_MEMO_FILE = "file_hashes.sqlite"
#: ``MEMLENS_HASH_MEMO`` as the user started the process (None: each stage uses its project's memo)
USER_HASH_MEMO = os.environ.get("MEMLENS_HASH_MEMO")


def run_stage(stage: str, cfg, paths) -> None:
    """Run one stage inside :func:`memlens.core.outputs.guard_outputs` (a stage that fails leaves its
    previous outputs byte-identical): ``memlens <stage>`` and every job of ``memlens.sweep``. A shard
    of an evaluation writes no outputs to guard (:func:`writes_no_outputs`) and runs unguarded."""
    from omegaconf import OmegaConf

    from memlens.core.hashmemo import use_memo
    from memlens.core.outputs import guard_outputs
    from memlens.core.settings import as_settings

    settings = as_settings(cfg)
    if USER_HASH_MEMO is None:  # image hashes shared by the project's processes (MEMLENS_HASH_MEMO= : none)
        use_memo(paths.cache / HASH_MEMO_FILE)
    if writes_no_outputs(stage, settings):  # nothing to guard, and no lock: shards run at once
        resolve_target(STAGES[stage])(cfg, paths)
        return
    with guard_outputs(stage, paths.root, OmegaConf.create(settings.composed())):
        resolve_target(STAGES[stage])(cfg, paths)


def writes_no_outputs(command: str, cfg) -> bool:
    """A shard of an evaluation (``eval.shard=I/N``) writes answers to the results store only, never
    the stage's view: it takes none of the output locks of :func:`guard_outputs`, which would make the
    shards of one system wait for each other."""
    return command == "evaluate" and getattr(getattr(cfg, "eval", None), "shard", None) not in (None, "")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)
    setup_logging(args.verbose)

    t0 = time.perf_counter()
    try:
        if args.help:
            return command_help(parser, args)
        if args.command is None:
            parser.print_usage(sys.stderr)
            print("memlens: error: name a command (memlens --help lists them)", file=sys.stderr)
            return EXIT_BAD_INPUT
        if args.dry_run and args.command not in DRY_RUN:
            print(f"memlens {args.command}: error: --dry-run is only for: {', '.join(DRY_RUN)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if args.selftest and args.command not in SELFTEST:
            print(f"memlens {args.command}: error: --selftest is only for: {', '.join(SELFTEST)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        from memlens.core.progress import plain_progress

        with plain_progress():  # outside a terminal: progress as occasional plain lines, no \r frames
            status = run_command(args)
        if args.command in EXTRA or args.dry_run or args.selftest:
            return status
    except MemLensError as exc:
        print(f"memlens {args.command}: error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", EXIT_BAD_INPUT))
    except KeyboardInterrupt:
        print(f"memlens {args.command}: interrupted; finished work is kept, re-run to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of stdout went away (`memlens ... | head`): nothing more to say
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        print(f"memlens {args.command}: error: {storage_message(exc)}", file=sys.stderr)
        return EXIT_STORAGE
    except Exception as exc:  # a bug: one line, the traceback with -v
        log.debug("internal error", exc_info=True)
        print(
            f"memlens {args.command}: internal error: {type(exc).__name__}: {exc} "
            "(a bug in memlens; -v shows the traceback; finished work is kept)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    log.info("%s done in %.1f s", args.command, time.perf_counter() - t0)
    return EXIT_OK


def leaderboard(args) -> int:
    """Rebuild reports/leaderboard.{md,csv} and the length plot from every run tracked in MLflow."""
    from memlens.core.compose import load_settings
    from memlens.core.config import Paths
    from memlens.eval.report.leaderboard import rebuild

    cfg = load_settings(args.overrides, params=args.params, root=args.root)
    return rebuild(cfg, Paths.from_cfg(cfg, root=args.root))


def compose(args) -> int:
    """Write params.yaml: the composition of conf/ with the given overrides (what `dvc exp run` does)."""
    from omegaconf import OmegaConf

    from memlens.core.compose import load_config
    from memlens.core.config import project_root

    root = Path(args.root) if args.root else project_root()
    cfg = load_config(args.overrides, root=root)
    text = OmegaConf.to_yaml(cfg)
    (root / "params.yaml").write_text(text)
    print(f"wrote {root / 'params.yaml'}")
    return 0


def stage_modules(stage: str) -> list[str]:
    """The module a stage runs (its code is that module's import closure, with every component it
    can select by name: :func:`memlens.core.codegraph.import_graph`)."""
    return [STAGES[stage].split(":")[0]]


def stage_code_paths(stage: str, root: Path) -> list[str]:
    """A stage's code as DVC dependency paths (relative to the project root): the files of its
    import closure plus package data, with whole folders where every file is used."""

    from memlens.core.codegraph import PKG, code_files, compress_paths

    files = code_files(stage_modules(stage))
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
