"""A stage's outputs change only when the stage succeeds.

:func:`guard_outputs` wraps one stage run (``memlens <stage>``). Before the stage starts, each of its
outputs (the ``outs``/``metrics``/``plots`` of the stage in ``dvc.yaml``, or :data:`STAGE_OUTPUTS`
for a project folder without one) is set aside in ``<project>/.memlens-prev/<its path>`` (git-ignored,
outside every folder a stage reads): moved
(one rename) when DVC would delete it before the run anyway, copied when DVC keeps it
(``persist: true``: evaluate's view, the verdicts, the official judge files). The stage then runs as
under DVC. When it succeeds, the set-aside copies are deleted; when it fails, whatever the cause (bad
input, a full disk, Ctrl-C, an exception), what it wrote is removed and the previous outputs are put
back byte-identical. A stage killed outright (``kill -9``) leaves the set-aside copy behind: the next
run of the stage puts it back first. An error whose class sets ``keeps_outputs = True`` (a failed
validity gate: its report is the stage's result) keeps the new outputs.

One lock per output (``.memlens-prev/locks/<output>.lock``, held for the whole stage) makes a second
run of the same stage on the same outputs wait for the first.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: the outputs of each stage as ``(path, persist)`` (``dvc.yaml``'s, for a folder without one)
STAGE_OUTPUTS: dict[str, tuple[tuple[str, bool], ...]] = {
    "ontology": (("data/ontology", False),),
    "crawl": (("data/images", False),),
    "filter": (("data/filtered", False),),
    "generate": (("data/generated", False),),
    "assemble": (("data/instances", False),),
    "validate": (("reports/validity.json", False), ("reports/validity.md", False)),
    "diagnose": (
        ("reports/retrieval/retrieval.json", False),
        ("reports/retrieval/fidelity.json", False),
        ("reports/retrieval/per_question.jsonl", False),
        ("reports/retrieval/summary.md", False),
        ("reports/retrieval/recall_by_length.csv", False),
        ("reports/retrieval/recall_at_10_by_length.png", False),
        ("reports/retrieval/metrics.json", False),
    ),
    "export": (("data/release", False),),
    "evaluate": (("data/predictions/${model.name}", True),),
    "judge": (("data/verdicts/${model.name}", True),),
    "report": (
        ("reports/judge/${model.name}", True),
        ("reports/plots/accuracy_by_length.csv", False),
        ("reports/plots/accuracy_by_length.png", False),
        ("reports/metrics.json", False),
    ),
}
#: where outputs are set aside while their stage runs (relative to the project root)
PREV = ".memlens-prev"
_VAR = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Output:
    path: Path
    persist: bool
    prev: Path
    lock: Path


def _entries(stage_def: dict) -> list[tuple[str, bool]]:
    out = []
    for key in ("outs", "metrics", "plots"):
        for entry in stage_def.get(key) or []:
            if isinstance(entry, str):
                out.append((entry, False))
            elif isinstance(entry, dict):
                for path, opts in entry.items():
                    out.append((str(path), bool((opts or {}).get("persist", False))))
    return out


def declared_outputs(stage: str, root: Path) -> list[tuple[str, bool]]:
    """``(path, persist)`` of a stage's outputs: from ``root/dvc.yaml`` when it defines the stage, else
    :data:`STAGE_OUTPUTS`."""
    import yaml

    dvc = Path(root) / "dvc.yaml"
    if dvc.is_file():
        try:
            stages = (yaml.safe_load(dvc.read_text()) or {}).get("stages") or {}
        except (yaml.YAMLError, OSError, AttributeError):
            stages = {}
        if isinstance(stages.get(stage), dict):
            return _entries(stages[stage])
    return list(STAGE_OUTPUTS.get(stage, ()))


def stage_outputs(stage: str, root: Path, cfg=None) -> list[Output]:
    """The stage's outputs as paths, ``${key}`` taken from ``cfg`` (a stage whose outputs name a
    config value that is not set has no guarded outputs of that kind)."""
    from omegaconf import OmegaConf

    from memlens.core.store import inside

    out = []
    for rel, persist in declared_outputs(stage, root):
        missing = False

        def value(m: re.Match) -> str:
            nonlocal missing
            v = OmegaConf.select(cfg, m.group(1).strip(), default=None) if cfg is not None else None
            missing = missing or v is None
            return str(v)

        text = _VAR.sub(value, rel)
        if missing:
            continue
        path = inside(root, *Path(text).parts, what=f"{stage} output")
        aside = Path(root).resolve() / PREV
        rel = path.relative_to(Path(root).resolve())
        out.append(
            Output(path, persist, aside / "outputs" / rel, aside / "locks" / (str(rel).replace("/", "__") + ".lock"))
        )
    return out


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)


def restore(o: Output) -> None:
    """Put the set-aside copy of ``o`` back (what the stage wrote is removed)."""
    _remove(o.path)
    os.replace(o.prev, o.path)


def _set_aside(o: Output) -> None:
    if o.prev.exists() or o.prev.is_symlink():  # a run killed outright: its previous outputs come back first
        log.warning("%s: the last run of its stage was killed; its previous outputs are put back", o.path)
        restore(o)
    if not (o.path.exists() or o.path.is_symlink()):
        return
    o.prev.parent.mkdir(parents=True, exist_ok=True)
    if o.persist:
        tmp = o.prev.with_name(o.prev.name + ".tmp")
        _remove(tmp)
        _copy(o.path, tmp)
        os.replace(tmp, o.prev)
    else:
        os.replace(o.path, o.prev)


@contextmanager
def _locked(o: Output) -> Iterator[None]:
    o.lock.parent.mkdir(parents=True, exist_ok=True)
    with open(o.lock, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextmanager
def guard_outputs(stage: str, root: Path, cfg=None) -> Iterator[list[Output]]:
    """Run a stage so that its outputs change only when it succeeds (see the module docstring)."""
    outs = stage_outputs(stage, Path(root), cfg)
    with ExitStack() as stack:
        for o in outs:
            stack.enter_context(_locked(o))
        for o in outs:
            _set_aside(o)
        try:
            yield outs
        except BaseException as exc:
            if getattr(exc, "keeps_outputs", False):
                _drop_prev(outs)
                raise
            for o in outs:
                if o.prev.exists() or o.prev.is_symlink():
                    restore(o)
                else:
                    _remove(o.path)  # the stage had no previous output: none is left
            raise
        _drop_prev(outs)


def _drop_prev(outs: list[Output]) -> None:
    for o in outs:
        _remove(o.prev)
