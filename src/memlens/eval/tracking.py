"""MLflow tracking: one parent run per evaluation, one child run per length, updated in place.

An *evaluation* is (system, prompt mode, dataset hash, judge). Its MLflow layout, in the experiment
``memlens-<dataset hash prefix>`` (or ``tracking.experiment``):

* a parent run ``<system>`` (``<system>[<mode>]`` for other modes, `` (<judge> judge)`` for a judge
  other than the deterministic one) with the evaluation's summary: ``acc_at_<length>`` and its
  ``_ci_low`` / ``_ci_high`` per length, ``acc_avg`` (mean over lengths), ``coverage``,
  ``failure_rate``;
* one child run per length, ``<parent name>@<length>`` (tag ``mlflow.parentRunId``), with accuracy
  overall / per type / per subtype and the bootstrap bounds (``acc``, ``acc_ci_low``,
  ``acc__IE``, ``acc__MSR__counting_ci_high``, ...), ``n``, ``n_failed``, ``failure_rate``,
  ``refusal_rate``, ``answer_coverage``, ``per_answer_acc`` and ``coverage``.

No metric name contains ``/``, so no name is a path-prefix of another.

Every run carries ``memlens.run_key``, the SHA-256 of its identity (system, mode, dataset hash,
judge, and the length for a child). Logging the same evaluation again finds its runs by that tag
and updates them: metrics get a new value, ``memlens.*`` tags are rewritten (stale ones removed),
artifacts are overwritten. MLflow params cannot change, so when the config logged as params
changed, or a metric the run has is no longer produced, the old run is deleted (soft: restorable
in the UI until ``mlflow gc``) and a new one is made under the same key. Duplicates of a key (two
reports at once) are resolved the same way: the oldest run is kept.

Params: the configuration, flattened (``model.max_new_tokens``), without any key that could hold a
secret (:func:`is_secret_key`). The dataset is logged with ``mlflow.log_input`` (an
``mlflow.data`` pandas dataset of per-length/type item counts whose digest is the dataset hash).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlens.core import environment
from memlens.core.secrets import find_secrets
from memlens.core.settings import PositiveInt, Section

log = logging.getLogger(__name__)

environment.apply()  # no telemetry, also when the tracker is used outside the CLI


class TrackingSettings(Section):
    """``tracking``: MLflow. ``uri: null`` = ``sqlite:///<root>/mlflow.db``; ``experiment: null`` =
    ``memlens-<dataset hash prefix>``."""

    enabled: bool
    uri: str | None
    experiment: str | None
    bootstrap_resamples: PositiveInt
    bootstrap_seed: int


#: tags MemLens sets and reads (MLflow's own: ``mlflow.parentRunId``, ``mlflow.source.git.commit``)
RUN_KEY = "memlens.run_key"
ROLE = "memlens.role"  # "evaluation" (parent) | "length" (child)
SYSTEM = "memlens.system"
MODE = "memlens.mode"
JUDGE = "memlens.judge"
LENGTH = "memlens.length"
DATASET = "memlens.dataset_hash"
COMPLETE = "memlens.complete"
SCOPE = "memlens.scope"  # what the run covers: "all", a subset name, or "partial-<digest>"
FAILED = "memlens.failed"  # "true": the judge failed on most items (not ranked)
PARENT = "mlflow.parentRunId"
GIT_COMMIT = "mlflow.source.git.commit"
ROLE_PARENT, ROLE_CHILD = "evaluation", "length"
#: the experiment type the MLflow UI opens on: "Model training" (runs, metrics), not its GenAI pages
EXPERIMENT_KIND, TRAINING_KIND = "mlflow.experimentKind", "custom_model_development"
#: the largest dataset digest MLflow stores (``MAX_DATASET_DIGEST_SIZE``)
DIGEST_CHARS = 36

_SECRET = re.compile(r"key|secret|passw|credential|token(?!s|iz)", re.IGNORECASE)


def tracking_uri(root: Path, tcfg: TrackingSettings | None) -> str:
    """``tracking.uri``, else ``sqlite:///<main project>/mlflow.db`` (one store for the workspace and
    every DVC experiment executor: :func:`memlens.core.config.shared_root`)."""
    from memlens.core.config import shared_root

    uri = tcfg.uri if tcfg is not None else None
    return str(uri) if uri else f"sqlite:///{(shared_root(Path(root)) / 'mlflow.db').resolve()}"


def artifact_root(root: Path) -> str:
    from memlens.core.config import shared_root

    return (shared_root(Path(root)) / "mlartifacts").resolve().as_uri()


def git_commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def dvc_tags() -> dict[str, str]:
    """The DVC experiment this process runs in: ``DVC_EXP_NAME`` and ``DVC_EXP_BASELINE_REV``, which
    ``dvc exp run`` sets; nothing outside an experiment."""
    out = {}
    for env, tag in (("DVC_EXP_NAME", "memlens.dvc_exp_name"), ("DVC_EXP_BASELINE_REV", "memlens.dvc_baseline_rev")):
        if os.environ.get(env):
            out[tag] = os.environ[env]
    return out


def is_secret_key(name: str) -> bool:
    """A config key that may hold a secret: it contains ``key``, ``secret``, ``passw``, ``credential``
    or ``token`` (not ``tokens``/``tokenizer``: ``max_new_tokens`` is kept), unless it ends with
    ``_env`` (the name of the environment variable that holds the secret)."""
    name = str(name)
    return not name.endswith("_env") and bool(_SECRET.search(name))


def _flatten(prefix: str, obj: Any, out: dict[str, str]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if is_secret_key(k):
                continue  # never log anything that could be a secret
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(obj, (list, tuple)) and any(
        isinstance(x, str) and x.startswith("-") and is_secret_key(x) for x in obj
    ):
        return  # a command line with a secret option (``--api-key X``): the value may follow it
    elif find_secrets({prefix.rsplit(".", 1)[-1]: obj}):
        return  # a value that looks like a key (refused by the config check; never logged either way)
    else:
        out[prefix] = str(obj)[:500]  # MLflow's param value limit


def flatten_params(d: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    _flatten("", d, out)
    return out


def run_key(
    system: str, mode: str, dataset_hash: str, judge: str, length: str | None = None, scope: str = "all"
) -> str:
    """SHA-256 of a run's identity: an evaluation (parent) or one of its lengths (child), and what it
    covers (``scope``: ``all`` for every item, a subset's name, ``partial-<digest of the items>`` for a
    run cut short), so a partial run never replaces the complete run of the same system."""
    ident = {"system": system, "mode": mode, "dataset_hash": dataset_hash, "judge": judge}
    if length is not None:
        ident["length"] = length
    if scope != "all":  # complete runs keep the keys they always had
        ident["scope"] = scope
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


def is_partial(scope: str) -> bool:
    return scope.startswith(("partial-", "failed-"))


def run_label(system: str, mode: str, judge: str, scope: str = "all") -> str:
    label = system if mode == "standard" else f"{system}[{mode}]"
    label = label if judge == "deterministic" else f"{label} ({judge} judge)"
    if scope.startswith("failed-"):
        return f"{label} [failed]"
    return f"{label} [partial]" if is_partial(scope) else label


@dataclass
class RunSpec:
    """What one run shows besides the evaluation's params: metrics, tags, a description."""

    metrics: dict[str, float]
    tags: dict[str, str] = field(default_factory=dict)
    description: str = ""
    scope: str = "all"  # what the run covers (see :func:`run_key`)


@dataclass
class DatasetSpec:
    """The benchmark as an ``mlflow.data`` dataset: ``rows`` is a small table (item counts per length,
    type and subtype), ``digest`` the dataset hash, ``source`` the data or release folder."""

    name: str
    digest: str
    source: str
    rows: list[dict]


@dataclass
class Evaluation:
    system: str
    mode: str
    judge: str
    dataset_hash: str
    params: dict[str, Any]  # nested config; flattened and stripped of secrets when logged
    tags: dict[str, str]  # tags of every run of the evaluation
    dataset: DatasetSpec
    summary: RunSpec  # the parent run
    lengths: dict[str, RunSpec]  # the child runs

    @property
    def label(self) -> str:
        return run_label(self.system, self.mode, self.judge, self.summary.scope)

    def key(self, length: str | None = None) -> str:
        scope = self.summary.scope if length is None else self.lengths[length].scope
        return run_key(self.system, self.mode, self.dataset_hash, self.judge, length, scope)


@dataclass
class Logged:
    parent: str
    children: dict[str, str]  # length -> run id
    experiment_id: str
    replaced: list[str] = field(default_factory=list)  # run ids deleted and made anew


class Tracker:
    def __init__(self, root: Path, tcfg: TrackingSettings | None, dataset_hash: str):
        import mlflow

        self.mlflow = mlflow
        self.root = root
        self.uri = tracking_uri(root, tcfg)
        mlflow.set_tracking_uri(self.uri)
        name = (tcfg.experiment if tcfg is not None else None) or f"memlens-{dataset_hash[:10]}"
        self.experiment_name = str(name)
        client = mlflow.tracking.MlflowClient(tracking_uri=self.uri)
        exp = client.get_experiment_by_name(self.experiment_name)
        if exp is None:
            tags = {} if tcfg is not None and tcfg.experiment else {DATASET: dataset_hash}
            self.experiment_id = client.create_experiment(
                self.experiment_name,
                artifact_location=artifact_root(root) + f"/{self.experiment_name}",
                tags={**tags, EXPERIMENT_KIND: TRAINING_KIND},
            )
        else:
            self.experiment_id = exp.experiment_id
            if EXPERIMENT_KIND not in exp.tags:  # made by an older version: the UI would open on GenAI
                client.set_experiment_tag(self.experiment_id, EXPERIMENT_KIND, TRAINING_KIND)
        self.client = client

    # finding runs ---------------------------------------------------------------------------------
    def _search(self, filter_string: str, deleted: bool = False) -> list:
        from mlflow.entities import ViewType

        view = ViewType.ALL if deleted else ViewType.ACTIVE_ONLY
        out, token = [], None
        while True:
            page = self.client.search_runs(
                [self.experiment_id], filter_string, run_view_type=view, max_results=50000, page_token=token
            )
            out.extend(page)
            token = page.token
            if not token:
                return out

    def find(self, key: str):
        """The run with this ``memlens.run_key`` (the oldest; later duplicates are deleted), or None."""
        runs = sorted(self._search(f"tags.`{RUN_KEY}` = '{key}'"), key=lambda r: (r.info.start_time, r.info.run_id))
        for dup in runs[1:]:
            log.warning(
                "MLflow: run %s duplicates run %s (same %s): deleted", dup.info.run_id, runs[0].info.run_id, key
            )
            self.client.delete_run(dup.info.run_id)
        return runs[0] if runs else None

    def _reusable(self, key: str, params: dict[str, str], metrics: dict[str, float], replaced: list[str]):
        """The run to update for ``key``, or None (new run): a run whose params differ from ``params``
        or that has a metric no longer produced is deleted (MLflow params are immutable)."""
        run = self.find(key)
        if run is None:
            return None
        old = run.data.params
        changed = sorted(k for k in old if params.get(k) != old[k])
        gone = sorted(set(run.data.metrics) - set(metrics))
        if not changed and not gone:
            return run
        log.info(
            "MLflow: run %s (%s) is made anew: %s",
            run.info.run_id,
            run.info.run_name,
            f"params changed ({', '.join(changed[:5])})"
            if changed
            else f"metrics no longer produced ({', '.join(gone[:5])})",
        )
        self.client.delete_run(run.info.run_id)
        replaced.append(run.info.run_id)
        return None

    # logging --------------------------------------------------------------------------------------
    def _dataset(self, spec: DatasetSpec):
        import pandas as pd
        from mlflow.data.sources import LocalArtifactDatasetSource

        with warnings.catch_warnings():  # MLflow's hint on integer columns in inferred schemas
            warnings.simplefilter("ignore", UserWarning)
            return self.mlflow.data.from_pandas(
                pd.DataFrame(spec.rows),
                source=LocalArtifactDatasetSource(spec.source),
                name=spec.name,
                digest=spec.digest[:DIGEST_CHARS],
            )

    def _update(self, run, tags: dict[str, str], spec: RunSpec, params: dict[str, str], dataset, ds_hash: str) -> None:
        mlflow = self.mlflow
        if run is not None:  # tags of ours that this report no longer sets
            for k in run.data.tags:
                if k.startswith("memlens.") and k not in tags:
                    self.client.delete_tag(run.info.run_id, k)
        mlflow.log_params(params)
        mlflow.log_metrics({k: float(v) for k, v in spec.metrics.items() if v is not None and v == v})
        with warnings.catch_warnings():  # MLflow's hint on integer columns when it infers the schema
            warnings.simplefilter("ignore", UserWarning)
            mlflow.log_input(dataset, context="evaluation", tags={DATASET: ds_hash})
        if spec.description:
            mlflow.set_tag("mlflow.note.content", spec.description)

    def log_evaluation(self, ev: Evaluation) -> Logged:
        """Create or update the parent run of ``ev`` and one child run per length."""
        mlflow = self.mlflow
        mlflow.set_tracking_uri(self.uri)  # the fluent API below uses the global URI
        params = flatten_params(ev.params)
        dataset = self._dataset(ev.dataset)
        common = {**ev.tags, SYSTEM: ev.system, MODE: ev.mode, JUDGE: ev.judge, DATASET: ev.dataset_hash}
        replaced: list[str] = []
        ptags = {**common, **ev.summary.tags, ROLE: ROLE_PARENT, RUN_KEY: ev.key(), SCOPE: ev.summary.scope}
        prun = self._reusable(ev.key(), params, ev.summary.metrics, replaced)
        children = {}
        with mlflow.start_run(
            run_id=prun.info.run_id if prun else None, experiment_id=self.experiment_id, run_name=ev.label, tags=ptags
        ) as parent:
            self._update(prun, ptags, ev.summary, params, dataset, ev.dataset_hash)
            for ln, spec in ev.lengths.items():
                cparams = {**params, "length": ln}
                ctags = {**common, **spec.tags, ROLE: ROLE_CHILD, LENGTH: ln, RUN_KEY: ev.key(ln), SCOPE: spec.scope}
                crun = self._reusable(ev.key(ln), cparams, spec.metrics, replaced)
                with mlflow.start_run(
                    run_id=crun.info.run_id if crun else None,
                    experiment_id=self.experiment_id,
                    run_name=f"{run_label(ev.system, ev.mode, ev.judge, spec.scope)}@{ln}",
                    nested=True,
                    tags={**ctags, PARENT: parent.info.run_id},
                ) as child:
                    self._update(crun, ctags, spec, cparams, dataset, ev.dataset_hash)
                    children[ln] = child.info.run_id
        return Logged(parent.info.run_id, children, self.experiment_id, replaced)

    def log_single_run(
        self, key: str, name: str, *, params: dict, metrics: dict[str, float], tags: dict[str, str], files: list[Path]
    ) -> str:
        """Create or update one stand-alone run (no parent, no dataset input) found by ``key``, e.g.
        a judge self-test (its ``memlens.role`` tag keeps it out of :meth:`runs`); returns its id."""
        mlflow = self.mlflow
        mlflow.set_tracking_uri(self.uri)
        flat = flatten_params(params)
        run = self._reusable(key, flat, metrics, [])
        with mlflow.start_run(
            run_id=run.info.run_id if run else None,
            experiment_id=self.experiment_id,
            run_name=name,
            tags={**tags, RUN_KEY: key},
        ) as active:
            mlflow.log_params(flat)
            mlflow.log_metrics({k: float(v) for k, v in metrics.items()})
            run_id = active.info.run_id
        self.log_artifacts(run_id, [(p, None) for p in files])
        return run_id

    def log_artifacts(self, run_id: str, files: list[tuple[Path, str | None]]) -> None:
        """Log (or overwrite) files as artifacts of a run, each under its folder (None: the root)."""
        for p, sub in files:
            if Path(p).is_file():
                self.client.log_artifact(run_id, str(p), sub or None)

    # reading --------------------------------------------------------------------------------------
    def runs(self, dataset_hash: str | None = None, role: str = ROLE_CHILD) -> list[dict]:
        """The runs of this experiment made by :meth:`log_evaluation` (children by default), optionally
        of one dataset only: system, mode, judge, length, completeness, metrics, tags, run ids."""
        flt = f"tags.`{ROLE}` = '{role}'"
        if dataset_hash:
            flt += f" and tags.`{DATASET}` = '{dataset_hash}'"
        out, seen = [], set()
        for r in sorted(self._search(flt), key=lambda r: (r.info.start_time, r.info.run_id)):
            t = r.data.tags
            if t.get(RUN_KEY) in seen:
                continue  # a duplicate (two reports at once); the next log_evaluation deletes it
            seen.add(t.get(RUN_KEY))
            out.append(
                {
                    "system": t.get(SYSTEM, ""),
                    "mode": t.get(MODE, ""),
                    "judge": t.get(JUDGE, ""),
                    "length": t.get(LENGTH, ""),
                    "dataset_hash": t.get(DATASET, ""),
                    "complete": t.get(COMPLETE) == "true",
                    "scope": t.get(SCOPE, "all"),
                    "failed": t.get(FAILED) == "true",
                    "metrics": dict(r.data.metrics),
                    "tags": dict(t),
                    "run_id": r.info.run_id,
                    "parent_id": t.get(PARENT),
                }
            )
        return out


def compare_url(run_ids: list[str], experiment_ids: list[str], base: str = "http://127.0.0.1:5000") -> str:
    """The MLflow UI's compare view of these runs: its hash route ``#/compare-runs`` with ``runs`` and
    ``experiments`` as JSON arrays of id strings (percent-encoded, so that terminals link all of it;
    the UI decodes either form)."""
    from urllib.parse import quote

    def arr(ids: list[str]) -> str:
        return quote(json.dumps([str(i) for i in ids], separators=(",", ":")), safe=",")

    return f"{base.rstrip('/')}/#/compare-runs?runs={arr(run_ids)}&experiments={arr(experiment_ids)}"
