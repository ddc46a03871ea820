"""memlens.sweep without a cluster: the jobs a sweep makes, the final step's groups, the sweep's own
options, and the squeue fallback of submitit's SLURM watcher (with stand-in sacct/squeue commands).
The sweep on a real SLURM cluster is tests/cluster/test_slurm_sweep.py."""

from __future__ import annotations

import os
import stat

import pytest

from memlens.sweep import _sweep_options, final_groups, install_squeue_fallback, shard_sweep, sweep_jobs


def test_a_sharded_sweep_makes_model_x_length_x_shard_jobs_and_one_final_step_per_system():
    argv = [
        "hydra/launcher=slurm_cpu",
        "hydra.launcher.partition=debug",
        "model=refuse,chance",
        "eval.lengths=[32k],[64k],[128k]",
        shard_sweep(4),
        "+stages=[evaluate,judge]",
    ]
    jobs = sweep_jobs(argv)
    assert len(jobs) == 2 * 3 * 4
    assert not any(o.startswith("hydra") for job in jobs for o in job)
    assert jobs[5] == ["model=refuse", "eval.lengths=[64k]", "eval.shard=1/4", "+stages=[evaluate,judge]"]
    groups = final_groups(jobs)
    assert groups == [(["model=refuse"], ["32k", "64k", "128k"]), (["model=chance"], ["32k", "64k", "128k"])]
    # a job over every length makes the final step cover every length too
    assert final_groups(sweep_jobs(["model=refuse", "eval.shard=0/2,1/2"])) == [(["model=refuse"], None)]
    mixed = final_groups([["model=x", "eval.lengths=[64k]"], ["model=x"]])
    assert mixed == [(["model=x"], None)]


def test_sweep_options_are_taken_out_before_hydra():
    assert _sweep_options(["-m", "model=a", "--shards", "3", "--no-final"]) == (["-m", "model=a"], 3, False)
    assert _sweep_options(["--shards=2", "--final"]) == ([], 2, True)
    assert shard_sweep(3) == "eval.shard=0/3,1/3,2/3"
    with pytest.raises(SystemExit, match="positive number"):
        _sweep_options(["--shards", "x"])
    with pytest.raises(SystemExit, match="positive number"):
        shard_sweep(0)


def _command(folder, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_without_accounting_job_states_come_from_squeue(tmp_path, monkeypatch):
    """sacct fails as on a cluster without slurmdbd; squeue lists a cancelled array task: submitit's
    watcher must see it finished (not wait for it forever), and a job squeue forgot after it ran too."""
    from submitit.slurm.slurm import SlurmInfoWatcher

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _command(bin_dir, "sacct", 'echo "Slurm accounting storage is disabled" >&2; exit 1')
    listing = tmp_path / "squeue.txt"
    listing.write_text("7_0|COMPLETED|vm\n7_1|CANCELLED|vm\n7_2|RUNNING|vm\n9_0|RUNNING|vm\n")
    _command(bin_dir, "squeue", f'cat "{listing}"')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(SlurmInfoWatcher, "update", SlurmInfoWatcher.update)  # restored after the test
    monkeypatch.setattr(SlurmInfoWatcher, "_memlens_squeue", False, raising=False)
    install_squeue_fallback()
    watcher = SlurmInfoWatcher(delay_s=0)
    for jid in ("7_0", "7_1", "7_2"):
        watcher.register_job(jid)
    watcher.update()
    assert watcher.get_state("7_1", mode="cache") == "CANCELLED" and watcher.is_done("7_1", mode="cache")
    assert not watcher.is_done("7_2", mode="cache") and watcher.is_done("7_0", mode="cache")
    listing.write_text("")  # the controller forgot the jobs (MinJobAge)
    watcher.update()
    assert watcher.is_done("7_2", mode="cache")  # seen running, gone now: finished (no result: reported)
