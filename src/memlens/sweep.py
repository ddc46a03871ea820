"""``python -m memlens.sweep``: fan evaluations out over models and lengths with Hydra multirun.

The ``memlens`` CLI composes one configuration per command; this entry point is a ``@hydra.main``
application over the same ``conf/`` folder, so Hydra's sweeper and launchers apply::

    # locally, one job after the other
    python -m memlens.sweep -m model=refuse,chance eval.lengths=[32k],[64k]

    # on a SLURM cluster (conf/hydra/launcher/slurm_a100.yaml, which extends the submitit plugin's
    # submitit_slurm): one array job per command, each job starting its own vLLM server on its node
    python -m memlens.sweep -m hydra/launcher=slurm_a100 hydra.launcher.gpus_per_node=8 \\
        model=qwen3-vl-235b-a22b-instruct,glm-4.6v eval.lengths=[32k],[64k],[128k]

Each job runs the evaluate stage (``+stages=[evaluate,judge,report]`` runs more) on the project
found from the current directory (or ``$MEMLENS_ROOT``), writing to the same resumable prediction
store as ``memlens evaluate`` (Hydra's job folders go to ``data/sweeps/`` unless
``hydra.sweep.dir`` is given): a job that is killed or times out is resumed by re-submitting the
same command. A SLURM array has one resource shape, so models are grouped by GPU count;
``--plan`` prints the commands, one per group::

    python -m memlens.sweep --plan [--models a,b] [--lengths 32k,64k,128k] [--launcher slurm_a100]

``--gpu-models`` prints the GPU models of ``conf/model/`` as JSON (the CI workflow's matrix).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

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
            }
        )
    return rows


def plan(root: Path, models: list[str] | None, lengths: list[str], launcher: str) -> list[str]:
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
        cmds.append(f"# {gpus or 'no'} GPU(s): {', '.join(names)}\n" + " ".join(parts))
    return cmds


def _task(cfg) -> None:
    """One Hydra job: run the configured stages on the project."""
    import logging

    from memlens.cli import STAGES, resolve_target
    from memlens.core.compose import validate_config
    from memlens.core.config import Paths, project_root

    cfg = validate_config(cfg)
    stages = [str(s) for s in (cfg.stages or ["evaluate"])]
    bad = [s for s in stages if s not in STAGES]
    if bad:
        raise SystemExit(f"unknown stages {bad} (known: {', '.join(STAGES)})")
    paths = Paths(project_root())
    log = logging.getLogger("memlens.sweep")
    for stage in stages:
        log.info("%s: model=%s mode=%s lengths=%s", stage, cfg.model.name, cfg.eval.mode, list(cfg.eval.lengths))
        resolve_target(STAGES[stage])(cfg, paths)


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
        a = p.parse_args(argv)
        if a.gpu_models:
            print(json.dumps(gpu_models(root)))
        else:
            models = [m for m in (a.models or "").split(",") if m] or None
            print("\n\n".join(plan(root, models, [x for x in a.lengths.split(",") if x], a.launcher)))
        return
    import os

    import hydra

    from memlens.core import environment

    environment.apply()
    os.environ.setdefault("MEMLENS_ROOT", str(root))  # jobs on other nodes / in other dirs find the project
    # Hydra's own output folders go under data/ (git-ignored), not into the project root.
    if not any(a.startswith("hydra.sweep.dir=") for a in argv):
        argv.append("hydra.sweep.dir=data/sweeps/${now:%Y-%m-%d}/${now:%H-%M-%S}")
    if not any(a.startswith("hydra.run.dir=") for a in argv):
        argv.append("hydra.run.dir=data/sweeps/runs/${now:%Y-%m-%d}/${now:%H-%M-%S}")
    sys.argv = [sys.argv[0], *argv]
    app = hydra.main(version_base=None, config_path=str(root / "conf"), config_name="config")(_task)
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
