"""Which questions a run evaluates (``eval.subset``)."""

from __future__ import annotations

from memlens.core.errors import ConfigError

__all__ = ["SUBSETS", "question_subset", "subset_ids", "subset_name"]

SUBSETS = ("auto", "all", "agent_subset_195")


def subset_name(cfg, model) -> str:
    """The subset ``eval.subset`` names for this system (``auto`` resolved: :attr:`Model.default_subset`)."""
    name = str(cfg.eval.subset)
    if name == "auto":
        name = model.default_subset or "all"
    if name not in SUBSETS:
        raise ConfigError(f"unknown eval.subset {name!r} (auto | all | agent_subset_195)")
    return name


def subset_ids(name: str, source) -> set[str] | None:
    """The question ids of subset ``name`` of a benchmark (None for ``all``)."""
    if name == "all":
        return None
    if name != "agent_subset_195":
        raise ConfigError(f"unknown eval.subset {name!r} (auto | all | agent_subset_195)")
    if source.kind == "official":
        return set(source.source.agent_subset())
    from memlens.construction.export.stage import agent_subset

    return set(agent_subset(list(source.questions.values()))["question_ids"])


def question_subset(cfg, source, model) -> set[str] | None:
    """The questions ``eval.subset`` selects (None: every question). ``auto`` = the system's own
    default (:attr:`Model.default_subset`: ``agent_subset_195`` for memory agents). The agent subset
    of a built benchmark is the export's (:func:`memlens.construction.export.stage.agent_subset`, the same
    stratified seeded draw as ``agent_subset_195.json``); an official release's is read from its
    ``agent_subset_195.json``."""
    return subset_ids(subset_name(cfg, model), source)
