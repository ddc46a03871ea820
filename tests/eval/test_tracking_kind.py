"""MLflow experiments are created as "Model training" experiments, so the UI opens on runs and metrics."""

from __future__ import annotations

from memlens.eval.tracking import EXPERIMENT_KIND, TRAINING_KIND, Tracker


def test_experiments_are_training_runs(tmp_path):
    tracker = Tracker(tmp_path, None, "a" * 64)
    exp = tracker.client.get_experiment(tracker.experiment_id)
    assert exp.tags[EXPERIMENT_KIND] == TRAINING_KIND == "custom_model_development"
    tracker.client.delete_experiment_tag(tracker.experiment_id, EXPERIMENT_KIND)  # an older store: tagged on use
    again = Tracker(tmp_path, None, "a" * 64)
    assert again.client.get_experiment(again.experiment_id).tags[EXPERIMENT_KIND] == TRAINING_KIND
