"""``python -m memlens.sweep``: fan evaluations out over models, lengths and shards with Hydra multirun.

The ``memlens`` CLI composes one configuration per command; this entry point is a ``@hydra.main``
application over the same ``conf/`` folder, so Hydra's sweeper and launchers apply::

    # locally, one job after the other
    python -m memlens.sweep -m model=refuse,chance eval.lengths=[32k],[64k]

    # on a SLURM cluster (conf/hydra/launcher/slurm_a100.yaml, which extends the submitit plugin's
    # submitit_slurm): one array job per command, each job starting its own vLLM server on its node
    python -m memlens.sweep -m hydra/launcher=slurm_a100 hydra.launcher.gpus_per_node=8 \\
        model=qwen3-vl-235b-a22b-instruct,glm-4.6v eval.lengths=[32k],[64k],[128k]

Each job runs the evaluate stage on the project found from the current directory (or
``$MEMLENS_ROOT``), writing to the same results store as
``memlens evaluate`` (``$MEMLENS_CACHE``, on the shared filesystem; every job appends to a segment
of its own, so any number of jobs write one system at once). Hydra's job folders go to
``data/sweeps/`` unless ``hydra.sweep.dir`` is given. A job that is killed, cancelled or times out
is resumed by re-submitting the same command: finished jobs find their answers and send nothing.
Every stage of a job and of the final step runs inside the same output guard as ``memlens <stage>``
(``memlens.cli.run_stage``: a stage that fails leaves the previous outputs byte-identical).

**Shards and the final step.** ``--shards N`` adds ``eval.shard=0/N,...,N-1/N`` to the sweep, so
one system's items of one length are split over N jobs (a stable hash of the question id); model x
length x shard jobs run as one array. The jobs of a sweep only answer (a job without a shard runs as
shard ``0/1``): they write to the results store, never to the views, so the jobs of one system at
several lengths and shards run at once. Once every job has returned, the **final step** runs here,
in the submitting process (the head node): per system it writes the views from the results store
(``eval.collect``: nothing is sent; an item without a record stops it, naming the items missing),
then judges and reports once over the sweep's lengths (MLflow: the sweep's ``tracking.uri``, e.g. a
tracking server). ``--no-final`` leaves that to the next ``dvc exp run -S model=...`` on the head
node, which finds every answer in the store and sends nothing.

On a cluster without accounting (no ``slurmdbd``: ``sacct`` answers "accounting storage is
disabled"), submitit cannot learn that a job was cancelled and would wait for it forever; the sweep
then reads job states from ``squeue --states=all`` instead (keep ``MinJobAge`` above the time the
submitting process may take to notice).

A SLURM array has one resource shape, so models are grouped by GPU count; ``--plan`` prints the
commands, one per group::

    python -m memlens.sweep --plan [--models a,b] [--lengths 32k,64k,128k] [--launcher slurm_a100] [--shards N]

``--gpu-models`` prints the GPU models of ``conf/model/`` as JSON (the CI workflow's matrix).
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("memlens.sweep")

#: Generic configs (templates, not systems of the roster).
GENERIC = frozenset({"openai_compatible", "vllm_server", "transformers"})
_GPU_TARGETS = ("VLLMServerModel", "TransformersModel")


def model_configs(root: Path) -> dict[str, dict[str, Any]]:
    """``conf/model/<name>.yaml`` -> raw dict (interpolations unresolved), roster files only."""
    from omegaconf import OmegaConf

    out = {}
    for p in sorted((root / "conf" / "model").glob("*.yaml")):
        if p.stem in GENERIC:
            continue
        out[p.stem] = OmegaConf.to_container(OmegaConf.load(p), resolve=False)
    return out


def gpu_models(root: Path) -> list[dict[str, Any]]:
    """Roster models that need GPUs: ``{model, hf_id, gpus, accelerator, tensor_parallel_size}``."""
    rows = []
    for name, cfg in model_configs(root).items():
        res = cfg.get("resources") or {}
        if not res or not str(cfg.get("_target_", "")).endswith(_GPU_TARGETS):
            continue
        rows.append(
            {
                "model": name,
                "hf_id": cfg.get("hf_id"),
                "gpus": int(res.get("gpus", 1)),
                "accelerator": res.get("accelerator"),
                "tensor_parallel_size": int(res.get("tensor_parallel_size", 1)),
                "data_parallel_size": int(res.get("data_parallel_size", 1)),
            }
        )
    return rows


def plan(root: Path, models: list[str] | None, lengths: list[str], launcher: str, shards: int = 0) -> list[str]:
    """One multirun command per GPU-count group (API models form a group without GPUs)."""
    roster = model_configs(root)
    wanted = models or sorted(roster)
    unknown = [m for m in wanted if m not in roster]
    if unknown:
        raise SystemExit(f"unknown models {unknown} (conf/model has: {', '.join(sorted(roster))})")
    groups: dict[int, list[str]] = {}
    for m in wanted:
        cfg = roster[m]
        if str(cfg.get("_target_", "")).startswith("memlens.eval.systems.baselines"):
            gpus = 0
        else:
            gpus = (
                int((cfg.get("resources") or {}).get("gpus", 0))
                if str(cfg.get("_target_", "")).endswith(_GPU_TARGETS)
                else 0
            )
        groups.setdefault(gpus, []).append(m)
    sweep = ",".join(f"[{x}]" for x in lengths)
    cmds = []
    for gpus in sorted(groups):
        names = groups[gpus]
        parts = ["python -m memlens.sweep -m", f"hydra/launcher={launcher}"]
        if launcher != "basic":
            parts.append(f"hydra.launcher.gpus_per_node={gpus or 'null'}")
        parts += [f"model={','.join(names)}", f"'eval.lengths={sweep}'"]
        if shards > 1:
            parts.append(f"--shards {shards}")
        cmds.append(f"# {gpus or 'no'} GPU(s): {', '.join(names)}\n" + " ".join(parts))
    return cmds


def _task(cfg) -> None:
    """One Hydra job: run the configured stages on the project.

    A job of a multirun only answers (its evaluate runs as a shard, ``eval.shard=0/1`` when the
    sweep has no shards, so it writes no view): the jobs of one system run at once, at several
    lengths or shards, and its views, verdicts and report are written once by the final step."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from memlens.cli import STAGES, run_stage
    from memlens.core.compose import validate_config
    from memlens.core.config import Paths, project_root

    multirun = HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
    if multirun and not cfg.eval.get("shard"):
        cfg.eval.shard = "0/1"  # every item, no view (set before the typed settings, which are frozen)
    cfg = validate_config(cfg)
    stages = [str(s) for s in (cfg.stages or ["evaluate"])]
    bad = [s for s in stages if s not in STAGES]
    if bad:
        raise SystemExit(f"unknown stages {bad} (known: {', '.join(STAGES)})")
    paths = Paths(project_root())
    if multirun:
        if stages != ["evaluate"]:
            log.info("a sweep job answers only: %s run once in the final step", ", ".join(stages))
        stages = ["evaluate"]
    for stage in stages:
        log.info(
            "%s: model=%s mode=%s lengths=%s shard=%s",
            stage,
            cfg.model.name,
            cfg.eval.mode,
            list(cfg.eval.lengths),
            cfg.eval.shard,
        )
        run_stage(stage, cfg, paths)  # inside the output guard, as `memlens <stage>`


# --------------------------------------------------------------------------------------------------
# shards and the final step
# --------------------------------------------------------------------------------------------------
def shard_sweep(n: int) -> str:
    """The override that sweeps every shard of ``n``."""
    if n < 1:
        raise SystemExit(f"--shards {n}: give a positive number of shards")
    return "eval.shard=" + ",".join(f"{i}/{n}" for i in range(n))


def sweep_jobs(overrides: list[str]) -> list[list[str]]:
    """The override list of every job the basic sweeper makes of ``overrides`` (``hydra.*`` left out)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    mine = [o for o in overrides if not o.lstrip("+~").startswith(("hydra.", "hydra/"))]
    parsed = OverridesParser.create().parse_overrides(mine)
    (batch,) = BasicSweeper.split_arguments(parsed, None)
    return [list(job) for job in batch]


def _split(override: str) -> tuple[str, str]:
    key, _, value = override.partition("=")
    return key.lstrip("+~"), value


def final_groups(jobs: list[list[str]]) -> list[tuple[list[str], list[str] | None]]:
    """One evaluation per distinct job configuration without its shard and lengths: its other
    overrides and the union of its jobs' lengths (None: a job covered every length)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    groups: dict[tuple[str, ...], list[str] | None] = {}
    for job in jobs:
        rest = tuple(o for o in job if _split(o)[0] not in ("eval.shard", "eval.lengths", "stages"))
        lengths = None
        for o in job:
            if _split(o)[0] == "eval.lengths":
                value = parser.parse_override(o).value()
                lengths = [str(x) for x in (value or [])] or None
        if rest not in groups:
            groups[rest] = lengths if lengths is not None else None
        elif groups[rest] is not None:
            groups[rest] = None if lengths is None else sorted(set(groups[rest]) | set(lengths), key=_length_order)
    return [(list(k), v) for k, v in groups.items()]


def _length_order(name: str) -> int:
    from memlens.core.config import length_tokens

    return length_tokens(name)


def final_step(root: Path, groups: list[tuple[list[str], list[str] | None]]) -> int:
    """Per system of a finished sweep: views from the results store (nothing sent), judge, report.
    Returns the number of systems whose shards are not all in (0: every one was reported)."""
    from memlens.cli import run_stage
    from memlens.core.config import Paths, load_config
    from memlens.core.errors import MemLensError

    paths = Paths(root)
    incomplete = 0
    for overrides, lengths in groups:
        ov = [*overrides, "eval.shard=null"] + ([f"eval.lengths=[{','.join(lengths)}]"] if lengths else [])
        label = " ".join(overrides) or "(defaults)"
        try:
            run_stage("evaluate", load_config([*ov, "eval.collect=true"], root=root), paths)
        except MemLensError as exc:
            incomplete += 1
            log.error(
                "final step %s: not every shard is in: %s; resubmit the same sweep (finished jobs send nothing)",
                label,
                exc,
            )
            continue
        cfg = load_config([*ov, "eval.collect=false"], root=root)
        for stage in ("judge", "report"):
            log.info("final step %s: %s", label, stage)
            run_stage(stage, cfg, paths)
    return incomplete


# --------------------------------------------------------------------------------------------------
# SLURM without accounting
# --------------------------------------------------------------------------------------------------
def squeue_states(main_ids: set[str]) -> dict[str, dict[str, str]] | None:
    """``{"<job>_<task>": {"JobID", "State", "NodeList"}}`` of the jobs ``squeue --states=all`` still
    knows (finished ones until ``MinJobAge``), array tasks one per line; None when squeue fails."""
    try:
        out = subprocess.run(
            ["squeue", "--noheader", "--array", "--states=all", "--format=%i|%T|%N"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    states = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3 or parts[0].split("_")[0] not in main_ids:
            continue
        states[parts[0]] = {"JobID": parts[0], "State": parts[1], "NodeList": parts[2]}
    return states


def install_squeue_fallback() -> None:
    """Make submitit's SLURM job watcher read states from ``squeue`` when ``sacct`` fails (a cluster
    without accounting): without it a cancelled job, which leaves no result file, is waited for
    forever. A job squeue no longer lists after it was seen is taken as finished (submitit then
    reports it as a job without result). Nothing changes where ``sacct`` works."""
    try:
        from submitit.core import logger as submitit_logger
        from submitit.slurm.slurm import SlurmInfoWatcher
    except ImportError:  # pragma: no cover - submitit is a dependency of the SLURM launchers only
        return
    if getattr(SlurmInfoWatcher, "_memlens_squeue", False):
        return

    def update(self) -> None:
        command = self._make_command()
        if command is None:
            return
        self._num_calls += 1
        try:
            self._output = subprocess.check_output(command, shell=False, stderr=subprocess.PIPE)
            self._info_dict.update(self.read_info(self._output))
        except (OSError, subprocess.SubprocessError) as exc:
            mains = {x.split("_")[0] for x in self._registered - self._finished}
            states = squeue_states(mains)
            if states is None:
                submitit_logger.get_logger().warning(f"sacct and squeue failed ({exc}): job states unknown")
            else:
                for jid in self._registered - self._finished:
                    if jid in states:
                        self._info_dict[jid] = states[jid]
                    elif self._info_dict.get(jid, {}).get("State") not in (None, "PENDING"):
                        self._info_dict[jid] = {"JobID": jid, "State": "FINISHED", "NodeList": ""}
        self._last_status_check = time.time()

    SlurmInfoWatcher.update = update
    SlurmInfoWatcher._memlens_squeue = True


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    from memlens.core.config import project_root

    root = project_root()
    if argv and argv[0] in ("--plan", "--gpu-models"):
        p = argparse.ArgumentParser(prog="python -m memlens.sweep")
        p.add_argument("--plan", action="store_true")
        p.add_argument("--gpu-models", action="store_true")
        p.add_argument("--models", default=None, help="comma-separated model names (default: the whole roster)")
        p.add_argument("--lengths", default="32k,64k,128k")
        p.add_argument("--launcher", default="slurm_a100", help="hydra/launcher option (basic: run locally)")
        p.add_argument("--shards", type=int, default=0, help="split each system's items over N jobs")
        a = p.parse_args(argv)
        if a.gpu_models:
            print(json.dumps(gpu_models(root)))
        else:
            models = [m for m in (a.models or "").split(",") if m] or None
            print("\n\n".join(plan(root, models, [x for x in a.lengths.split(",") if x], a.launcher, a.shards)))
        return
    argv, shards, final = _sweep_options(argv)
    import os

    import hydra

    from memlens.core import environment

    environment.apply()
    os.environ.setdefault("MEMLENS_ROOT", str(root))  # jobs on other nodes / in other dirs find the project
    if shards:
        argv.append(shard_sweep(shards))
    multirun = any(a in ("-m", "--multirun") for a in argv)
    overrides = [a for a in argv if not a.startswith("-")]
    # Hydra's own output folders go under data/ (git-ignored), not into the project root.
    if not any(a.startswith("hydra.sweep.dir=") for a in argv):
        argv.append("hydra.sweep.dir=data/sweeps/${now:%Y-%m-%d}/${now:%H-%M-%S}")
    if not any(a.startswith("hydra.run.dir=") for a in argv):
        argv.append("hydra.run.dir=data/sweeps/runs/${now:%Y-%m-%d}/${now:%H-%M-%S}")
    install_squeue_fallback()
    sys.argv = [sys.argv[0], *argv]
    app = hydra.main(version_base=None, config_path=str(root / "conf"), config_name="config")(_task)
    try:
        app()
    except SystemExit as exc:
        if exc.code not in (0, None) and multirun:
            print(
                "memlens.sweep: a job of the sweep did not finish (cancelled, failed or timed out); when none of "
                "its jobs runs any more (squeue), resubmit the same command: finished jobs send nothing",
                file=sys.stderr,
            )
        raise
    if multirun and final is not False:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        if final_step(root, final_groups(sweep_jobs(overrides))):
            raise SystemExit(1)


def _sweep_options(argv: list[str]) -> tuple[list[str], int, bool | None]:
    """``--shards N`` and ``--final`` / ``--no-final`` (ours, not Hydra's) taken out of ``argv``."""
    rest, shards, final = [], 0, None
    it = iter(argv)
    for a in it:
        if a == "--shards" or a.startswith("--shards="):
            value = a.split("=", 1)[1] if "=" in a else next(it, "")
            if not value.isdigit():
                raise SystemExit(f"--shards {value!r}: give a positive number of shards")
            shards = int(value)
        elif a in ("--final", "--no-final"):
            final = a == "--final"
        else:
            rest.append(a)
    return rest, shards, final


if __name__ == "__main__":  # pragma: no cover
    main()
