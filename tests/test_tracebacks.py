"""The six tracebacks of issue 22 are one-line errors naming what to fix, with exit statuses that say
what happened (2 bad input, 3 storage, 4 internal, 0 for a closed pipe)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

from memlens.cli import main
from tests.conftest import REPO, TINY


def one_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.startswith("memlens ")]
    assert "Traceback" not in err and len(lines) == 1, err[-2000:]
    return lines[0]


def test_an_empty_questions_file(tiny_copy, capsys):
    (tiny_copy / "data" / "generated" / "questions.jsonl").write_text("")
    assert main(["assemble", "--root", str(tiny_copy), *TINY]) == 2
    assert "questions.jsonl: holds no Question records" in one_line(capsys.readouterr().err)


def test_a_model_yaml_with_a_syntax_error(tmp_path, capsys):
    from tests.conftest import make_project

    root = make_project(tmp_path / "p")
    (root / "conf" / "model" / "broken.yaml").write_text("name: broken\n_target_: x\n  foo: [unclosed\n")
    assert main(["evaluate", "--root", str(root), "model=broken"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "broken.yaml:3:" in line and "not valid YAML" in line


def test_a_full_disk_under_the_cache(tiny_copy, capsys, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    assert main(["evaluate", "--root", str(tiny_copy), *TINY, "model=chance", "eval.lengths=[32k]"]) == 3
    assert "the disk is full" in one_line(capsys.readouterr().err)


def test_a_read_only_cache(tiny_copy, capsys, monkeypatch):
    real_mkdir = os.mkdir
    cache = tiny_copy / "ro_cache"
    monkeypatch.setenv("MEMLENS_CACHE", str(cache))

    def read_only(path, *a, **k):
        if str(path).startswith(str(cache)):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_mkdir(path, *a, **k)

    monkeypatch.setattr(os, "mkdir", read_only)
    assert main(["evaluate", "--root", str(tiny_copy), *TINY, "model=chance", "eval.lengths=[32k]"]) == 3
    line = one_line(capsys.readouterr().err)
    assert "read-only" in line and "MEMLENS_CACHE" in line


def test_a_cache_path_that_is_a_file(tiny_copy, capsys, monkeypatch):
    blocker = tiny_copy / "cache_file"
    blocker.write_text("x")
    monkeypatch.setenv("MEMLENS_CACHE", str(blocker))
    assert main(["evaluate", "--root", str(tiny_copy), *TINY, "model=chance", "eval.lengths=[32k]"]) == 3
    line = one_line(capsys.readouterr().err)
    assert "cache_file" in line and "a file is in the way" in line


def test_dry_run_into_a_closed_pipe(tiny_project):
    cmd = f"{sys.executable} -m memlens.cli evaluate --dry-run --root {tiny_project} {' '.join(TINY)} | head -c0"
    r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr[-2000:]
    assert r.returncode == 0
