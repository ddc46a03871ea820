"""MLflow record of a filter run: the per-channel score summary as metrics, the filter settings as
params and the filter index (every image's scores, verdict and reason) as an artifact.

Logged to the project's tracking store (``tracking.uri``, default ``sqlite:///<root>/mlflow.db``,
artifacts under ``<root>/mlartifacts``), experiment ``memlens-build``, one run named ``filter`` per
stage run, when ``tracking.enabled`` and the filter uses channels other than the offline default.
"""

from __future__ import annotations

import time
from pathlib import Path

EXPERIMENT = "memlens-build"


def _params(prefix: str, obj, out: dict[str, str]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _params(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _params(f"{prefix}.{i}", v, out)
    elif not any(s in prefix.lower() for s in ("key", "secret", "token")):
        out[prefix] = str(obj)[:500]


def log_filter_run(tcfg, root: Path, settings: dict, counts: dict, summary: dict, index: Path) -> str | None:
    """The MLflow run id, or None when tracking is off."""
    if tcfg is None or not tcfg.enabled:
        return None
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    from memlens.core.config import shared_root

    root = shared_root(Path(root))  # a DVC experiment executor logs to the main project's store
    uri = str(tcfg.uri or f"sqlite:///{(root / 'mlflow.db').resolve()}")
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    exp_id = (
        exp.experiment_id
        if exp is not None
        else client.create_experiment(
            EXPERIMENT,
            artifact_location=(root / "mlartifacts").resolve().as_uri(),
            tags={"mlflow.experimentKind": "custom_model_development"},  # the UI's "Model training" type
        )
    )
    run = client.create_run(exp_id, run_name="filter", tags={"memlens.stage": "filter"})
    now = int(time.time() * 1000)
    metrics = [Metric(k, float(v), now, 0) for k, v in counts.items()]
    for ch, s in summary.items():
        for k in ("scored", "passed", "mean", "min", "max", "threshold"):
            if s.get(k) is not None:
                metrics.append(Metric(f"channel.{ch}.{k}", float(s[k]), now, 0))
    params: dict[str, str] = {}
    _params("filter", settings, params)
    client.log_batch(run.info.run_id, metrics=metrics, params=[Param(k, v) for k, v in sorted(params.items())])
    client.log_artifact(run.info.run_id, str(index))
    client.set_terminated(run.info.run_id)
    return run.info.run_id
