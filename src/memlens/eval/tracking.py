"""MLflow tracking: one run per (system, mode, length) in a SQLite store in the project root.

Experiment: one per benchmark build (``memlens-<dataset hash prefix>``). Run name
``<system>@<length>`` (``<system>[<mode>]@<length>`` for non-standard modes). Tags: dataset hash,
git commit, DVC experiment name, system, mode, length. Metrics are flat names where no name is a
path-prefix of another (``acc``, ``acc_ci_low``, ``acc__IE``, ``acc__IE_ci_low``, ...). Secrets are
never logged: only config keys, and no key whose name contains "key" unless it is an ``*_env`` name.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")


def tracking_uri(root: Path, tcfg) -> str:
    uri = tcfg.get("uri") if tcfg is not None else None
    return str(uri) if uri else f"sqlite:///{(root / 'mlflow.db').resolve()}"


def artifact_root(root: Path) -> str:
    return (root / "mlartifacts").resolve().as_uri()


def git_commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _flatten(prefix: str, obj: Any, out: dict[str, str]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if "key" in str(k).lower() and not str(k).endswith("_env"):
                continue  # never log anything that could be a secret
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = str(obj)[:500]


def flatten_params(d: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    _flatten("", d, out)
    return out


class Tracker:
    def __init__(self, root: Path, tcfg, dataset_hash: str):
        import mlflow

        self.mlflow = mlflow
        self.root = root
        self.uri = tracking_uri(root, tcfg)
        mlflow.set_tracking_uri(self.uri)
        name = (tcfg.get("experiment") if tcfg is not None else None) or f"memlens-{dataset_hash[:10]}"
        self.experiment_name = str(name)
        client = mlflow.tracking.MlflowClient()
        exp = client.get_experiment_by_name(self.experiment_name)
        if exp is None:
            self.experiment_id = client.create_experiment(
                self.experiment_name, artifact_location=artifact_root(root) + f"/{self.experiment_name}"
            )
        else:
            self.experiment_id = exp.experiment_id
        self.client = client

    def log_run(
        self,
        *,
        system: str,
        mode: str,
        length: str,
        params: dict[str, Any],
        metrics: dict[str, float],
        tags: dict[str, str],
        artifacts: list[Path],
        texts: dict[str, str] | None = None,
    ) -> str:
        run_name = f"{system}@{length}" if mode == "standard" else f"{system}[{mode}]@{length}"
        all_tags = {"system": system, "mode": mode, "length": length, **tags}
        with self.mlflow.start_run(experiment_id=self.experiment_id, run_name=run_name, tags=all_tags) as run:
            flat = flatten_params(params)
            items = list(flat.items())
            for i in range(0, len(items), 90):
                self.mlflow.log_params(dict(items[i : i + 90]))
            self.mlflow.log_metrics({k: float(v) for k, v in metrics.items() if v is not None})
            for p in artifacts:
                if p.is_file():
                    self.mlflow.log_artifact(str(p))
            for name, text in (texts or {}).items():
                self.mlflow.log_text(text, name)
            return run.info.run_id

    def latest_runs(self) -> list[dict]:
        """Latest run per (system, mode, length) in this experiment: tags + metrics."""
        runs = self.client.search_runs([self.experiment_id], max_results=50000, order_by=["attributes.start_time DESC"])
        seen: dict[tuple, dict] = {}
        for r in runs:
            t = r.data.tags
            key = (t.get("system"), t.get("mode"), t.get("length"))
            if None in key or key in seen:
                continue
            seen[key] = {
                "system": key[0],
                "mode": key[1],
                "length": key[2],
                "metrics": dict(r.data.metrics),
                "run_id": r.info.run_id,
                "params": dict(r.data.params),
            }
        return list(seen.values())
