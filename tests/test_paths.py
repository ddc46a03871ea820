"""The project root comes from the working directory (DVC runs each experiment in its own folder),
never from ``$DVC_ROOT`` over it; what outlives an experiment lives in the main repository."""

from __future__ import annotations

import pytest

from memlens.core.config import Paths, project_root, shared_root
from memlens.core.errors import ConfigError, DataError
from memlens.core.store import inside, name_problem, safe_name
from tests.conftest import REPO, make_project


def _executor(tmp_path):
    main = make_project(tmp_path / "main")
    exe = make_project(main / ".dvc" / "tmp" / "exps" / "tmpabc123")
    (exe / "data").mkdir()
    return main, exe


def test_the_working_directory_wins_over_dvc_root(tmp_path, monkeypatch):
    """`dvc exp run --temp` / a queued experiment: cwd is the executor, DVC_ROOT the main repository."""
    main, exe = _executor(tmp_path)
    monkeypatch.chdir(exe / "data")
    monkeypatch.setenv("DVC_ROOT", str(main))
    monkeypatch.setenv("DVC_STAGE", "evaluate")
    assert project_root() == exe.resolve()
    monkeypatch.setenv("MEMLENS_ROOT", str(main))  # a stray MEMLENS_ROOT does not pull DVC's stage out either
    assert project_root() == exe.resolve()


def test_memlens_root_outside_dvc_and_dvc_root_as_last_resort(tmp_path, monkeypatch):
    main, exe = _executor(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DVC_ROOT", raising=False)
    monkeypatch.delenv("DVC_STAGE", raising=False)
    monkeypatch.setenv("MEMLENS_ROOT", str(exe))
    assert project_root() == exe.resolve()
    monkeypatch.delenv("MEMLENS_ROOT")
    monkeypatch.setenv("DVC_ROOT", str(main))  # no project above the cwd: DVC's root
    assert project_root() == main.resolve()


def test_an_executor_shares_the_main_repositorys_store_mlflow_and_models(tmp_path, monkeypatch):
    from memlens.eval.tracking import artifact_root, tracking_uri

    main, exe = _executor(tmp_path)
    monkeypatch.delenv("MEMLENS_CACHE", raising=False)
    monkeypatch.setenv("DVC_ROOT", str(main))
    paths = Paths(exe.resolve())
    assert paths.data == exe.resolve() / "data"  # its own outputs
    assert paths.home == main.resolve() and shared_root(exe) == main.resolve()
    assert paths.cache == main.resolve() / ".memlens_cache"  # the results store stays shared
    assert paths.models == main.resolve() / "models"
    assert tracking_uri(exe, None) == f"sqlite:///{main.resolve() / 'mlflow.db'}"
    assert artifact_root(exe) == (main.resolve() / "mlartifacts").as_uri()
    monkeypatch.setenv("MEMLENS_CACHE", str(tmp_path / "c"))
    assert paths.cache == tmp_path / "c"
    other = make_project(tmp_path / "elsewhere")  # not an executor of DVC_ROOT: its own home
    assert Paths(other.resolve()).home == other.resolve()


@pytest.mark.parametrize("bad", ["../../evil", "a/b", "..", ".hidden", "a..b", "sp ace", "", "x\x00y", "née"])
def test_system_names_that_are_not_one_safe_folder_are_refused(bad):
    from memlens.core.config import load_config

    assert name_problem(bad)
    with pytest.raises(DataError, match="system"):
        safe_name(bad, "system")
    with pytest.raises(ConfigError, match=r"model\.name"):
        load_config([f"model.name={bad!r}" if bad else "model.name=''"], root=REPO)


def test_good_names_and_paths_inside_their_folder(tmp_path):
    for good in ("gpt-5.4", "qwen3-vl-8b_instruct", "A.b-c_1"):
        assert name_problem(good) is None
    assert inside(tmp_path, "a", "b.json") == (tmp_path / "a" / "b.json").resolve()
    for bad in (("..", "x"), ("/etc/passwd",), ("a/../../x",)):
        with pytest.raises(DataError, match=r"escapes|not a relative path"):
            inside(tmp_path, *bad)
    (tmp_path / "link").symlink_to("/")
    with pytest.raises(DataError, match="escapes"):
        inside(tmp_path, "link", "etc")
