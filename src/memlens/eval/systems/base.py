"""The model interface: every system under test (LVLM backend, memory agent, baseline) is a
:class:`Model`. The evaluate stage only calls :meth:`Model.run`; it never knows which kind it runs.

A model is one YAML file in ``conf/model/`` whose ``_target_`` names the class and whose other keys
are its constructor arguments, so adding a model is one YAML file and, at most, one small class.
A class is a component (``@component("model", name)``, or ``"agent"`` for a memory agent) whose
``Config`` class attribute is the pydantic schema the configuration is validated against before
anything runs, defined beside it; its constructor takes every key as a named argument (no
``**kwargs`` catch-all) and, decorated :func:`~memlens.core.settings.configured`, the defaults of
its schema (declared once, there). The schemas every system shares are here.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from memlens.core.items import EvalItem
from memlens.core.settings import PositiveFloat, PositiveInt, SafeName, Section, operational

#: the evaluation modes (``eval.mode``; :mod:`memlens.eval.prompt` renders each)
MODES = ("standard", "cot", "reasoning", "text_only", "no_context", "label_images", "oracle_evidence", "caption")


class ResourcesSettings(Section):
    """``model.resources``: what a model needs to run (scheduling; checked against the serve settings)."""

    accelerator: str | None = None
    gpus: PositiveInt | None = None
    tensor_parallel_size: PositiveInt | None = None
    data_parallel_size: PositiveInt | None = None
    nodes: PositiveInt | None = None
    cpus: PositiveInt | None = None
    mem_gb: PositiveFloat | None = None


class SystemSettings(Section):
    """Keys of every system: ``name`` names the prediction folder; ``kind`` (lvlm, baseline, agent ...)
    defaults to the class's own."""

    name: SafeName = operational()
    target: str = Field(alias="_target_")
    kind: str | None = operational(None)


class DescriptiveSettings(SystemSettings):
    """Descriptive keys, kept for the logs, the sweep planner and the report's system cards only
    (``params_total_b`` / ``params_active_b``: parameter counts in billions, for retention vs size;
    not part of the system identity)."""

    hf_id: str | None = None
    context_window: PositiveInt | None = operational(None)
    thinking: bool = False
    resources: ResourcesSettings | None = operational(None)
    notes: str | None = operational(None)
    params_total_b: PositiveFloat | None = operational(None)
    params_active_b: PositiveFloat | None = operational(None)


@dataclass
class ModelOutput:
    text: str | None
    ok: bool = True
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    attempts: int = 1
    meta: dict = field(default_factory=dict)


ResultCallback = Callable[[EvalItem, ModelOutput], None]


class Model(ABC):
    """Base class. Subclasses implement :meth:`generate` (one item) or override :meth:`run`
    (batched or asynchronous backends)."""

    kind = "model"
    #: the schema of the class's configuration keys (a pydantic model; see :mod:`memlens.core.settings`)
    Config: ClassVar[type | None] = None
    #: the question subset evaluated under ``eval.subset=auto`` (None: every question)
    default_subset: ClassVar[str | None] = None
    #: True only for calibration baselines that draw from the answer space: their items keep the
    #: question type and the answer-format hints (:meth:`memlens.core.items.EvalItem.for_system`)
    answer_space: ClassVar[bool] = False
    #: True for local, deterministic systems whose answers cost nothing to make again (the
    #: baselines): the results store fsyncs their segment once, when it closes, not after every
    #: answer (a crash of the machine may lose some of them; a killed process loses none)
    answers_are_free: ClassVar[bool] = False
    #: True for systems whose :meth:`run` may be given the items of several lengths at once (the
    #: evaluate stage then streams every length through one run, so the requests of the next length
    #: fill the slots the last answers of a length free; items carry their length)
    pools_lengths: ClassVar[bool] = False

    def __init__(self, name: str, kind: str | None = None, options: Mapping[str, Any] | None = None):
        """``options``: the settings reported by :meth:`describe` (subclasses pass their own)."""
        self.name = name
        if kind:
            self.kind = kind
        self.options = dict(options or {})

    @abstractmethod
    def generate(self, item: EvalItem, mode: str = "standard") -> ModelOutput:
        """Answer one item."""

    def run(self, items: Iterable[EvalItem], mode: str, on_result: ResultCallback) -> None:
        """Answer every item, calling ``on_result`` as each one finishes (so it can be stored at once)."""
        for item in items:
            t0 = time.perf_counter()
            try:
                out = self.generate(item, mode)
            except Exception as exc:
                out = ModelOutput(text=None, ok=False, error=f"{type(exc).__name__}: {exc}")
            if out.latency_s is None:
                out.latency_s = time.perf_counter() - t0
            on_result(item, out)

    def prefetch(self, items: Iterable[EvalItem], mode: str) -> None:  # noqa: B027 - optional hook
        """Called with the items of a run, lazily, as the system will see them (take the first few),
        before the health check: a system may start loading what their requests need (best
        effort, in the background)."""

    def attach(self, paths: Any, benchmark: Any) -> None:  # noqa: B027 - optional hook
        """Called by the evaluate stage before anything else: the project paths (its cache folder)
        and the benchmark being evaluated. Systems that keep caches or read the benchmark's image
        metadata use it; most need nothing."""

    def identity_extra(self) -> dict:
        """What determines the answers beyond the configuration keys (e.g. the version of a memory
        agent's prompts, an input adapter's id): merged into the system identity. Empty for
        systems whose configuration says it all."""
        return {}

    def check(self) -> None:  # noqa: B027 - optional hook: local systems have nothing to check
        """Called once before the first item is sent: raise a :class:`~memlens.core.errors.MemLensError`
        when the system cannot answer (a server that is down, a rejected key)."""

    def describe(self) -> dict:
        """Parameters logged to MLflow (never secrets)."""
        return {
            "name": self.name,
            "kind": self.kind,
            **{k: v for k, v in self.options.items() if "key" not in k.lower() or k.endswith("_env")},
        }

    def close(self) -> None:  # noqa: B027 - optional hook: most systems hold nothing to release
        """Release resources (servers, pools)."""
