"""The order in which DVC runs the stages of dvc.yaml: the release and the baseline's evaluation never
wait for the diagnostics (``diagnose`` runs OCR over the histories: minutes to hours), whatever the
scale. DVC runs the stages in its plan (``dvc.repo.reproduce.plan_repro``), the order `dvc repro` and
`dvc exp run` follow."""

from __future__ import annotations

from tests.conftest import REPO


def _plan() -> list[str]:
    from dvc.repo import Repo
    from dvc.repo.reproduce import plan_repro

    with Repo(str(REPO)) as repo:
        return [s.addressing for s in plan_repro(repo.index.graph)]


def test_release_and_baseline_evaluation_come_before_diagnose():
    plan = _plan()
    assert plan[-1] == "diagnose", plan
    for stage in ("validate", "export", "evaluate", "judge", "report"):
        assert plan.index(stage) < plan.index("diagnose"), plan


def test_nothing_waits_for_diagnose():
    from dvc.repo import Repo

    with Repo(str(REPO)) as repo:
        graph = repo.index.graph
        (diagnose,) = [s for s in graph.nodes if s.addressing == "diagnose"]
        # edges point from a stage to the stages it depends on
        assert [s.addressing for s in graph.predecessors(diagnose)] == []
