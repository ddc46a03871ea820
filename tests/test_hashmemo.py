"""The persistent file-hash memo (``memlens.core.hashmemo``) behind ``io.sha256_file_memo``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlens.core import hashmemo, io

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_memo_from_outside(monkeypatch):
    monkeypatch.delenv(hashmemo.ENV, raising=False)
    hashmemo._memo_at.cache_clear()


@pytest.fixture
def memo(tmp_path, monkeypatch):
    monkeypatch.setattr(hashmemo, "SETTLE_S", 0.0)  # files made by the test are young
    io._sha256_of_version.cache_clear()
    m = hashmemo.use_memo(tmp_path / "cache" / "file_hashes.sqlite")
    yield m
    hashmemo.use_memo(None)
    io._sha256_of_version.cache_clear()


def _new_process_memo(memo: hashmemo.FileHashMemo) -> hashmemo.FileHashMemo:
    """What another process sees: the entries written so far, no in-process memo."""
    memo.close()
    io._sha256_of_version.cache_clear()
    hashmemo.use_memo(None)
    hashmemo._memo_at.cache_clear()
    return hashmemo.use_memo(memo.path)


def _count_reads(monkeypatch) -> list[str]:
    reads: list[str] = []
    real = io.sha256_file

    def counting(path, *a, **k):
        reads.append(str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(io, "sha256_file", counting)
    return reads


def test_a_second_process_reads_the_hash_instead_of_the_file(memo, tmp_path, monkeypatch):
    f = tmp_path / "a.bin"
    f.write_bytes(b"image bytes" * 1000)
    reads = _count_reads(monkeypatch)
    digest = io.sha256_file_memo(f)
    assert digest == io.sha256_bytes(f.read_bytes()) and len(reads) == 1
    again = _new_process_memo(memo)
    assert io.sha256_file_memo(f) == digest and len(reads) == 1 and again.hits == 1
    link = tmp_path / "link.bin"  # another name of the same file: the same entry
    os.link(f, link)
    io._sha256_of_version.cache_clear()
    assert io.sha256_file_memo(link) == digest


def test_an_edited_or_replaced_file_is_hashed_again(memo, tmp_path, monkeypatch):
    f = tmp_path / "a.bin"
    f.write_bytes(b"first version")
    first = io.sha256_file_memo(f)
    st = f.stat()
    f.write_bytes(b"other version")  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back: ctime still moves on
    _new_process_memo(memo)
    reads = _count_reads(monkeypatch)
    assert io.sha256_file_memo(f) == io.sha256_bytes(b"other version") != first and len(reads) == 1
    f.unlink()
    f.write_bytes(b"third version")  # a new file under the old name (maybe the old inode)
    _new_process_memo(memo)
    assert io.sha256_file_memo(f) == io.sha256_bytes(b"third version")


def test_young_files_and_files_changed_while_hashed_are_not_stored(tmp_path, monkeypatch):
    io._sha256_of_version.cache_clear()
    memo = hashmemo.use_memo(tmp_path / "m.sqlite")
    try:
        f = tmp_path / "young.bin"
        f.write_bytes(b"just written")
        io.sha256_file_memo(f)  # SETTLE_S (2 s) not passed: not stored
        memo.flush()
        assert memo.stored == 0
        monkeypatch.setattr(hashmemo, "SETTLE_S", 0.0)
        g = tmp_path / "moving.bin"
        g.write_bytes(b"before")
        real = io.sha256_file

        def edit_while_reading(path, *a, **k):
            out = real(path, *a, **k)
            time.sleep(0.01)
            Path(path).write_bytes(b"after!")
            return out

        monkeypatch.setattr(io, "sha256_file", edit_while_reading)
        io._sha256_of_version.cache_clear()
        io.sha256_file_memo(g)
        memo.flush()
        assert memo.stored == 0  # the version read is no longer the file's: nothing remembered
    finally:
        hashmemo.use_memo(None)
        io._sha256_of_version.cache_clear()


def test_a_broken_memo_warns_once_and_files_are_still_hashed(tmp_path, caplog, monkeypatch):
    # another test's logging set-up (hydra's `job_logging=disabled`) may have disabled the logger
    monkeypatch.setattr(hashmemo.log, "disabled", False)
    bad = tmp_path / "not_a_db.sqlite"
    bad.write_bytes(b"this is not an sqlite database" * 100)
    io._sha256_of_version.cache_clear()
    hashmemo.use_memo(bad)
    try:
        f = tmp_path / "a.bin"
        f.write_bytes(b"content")
        with caplog.at_level("WARNING", logger=hashmemo.log.name):
            assert io.sha256_file_memo(f) == io.sha256_bytes(b"content")
            io._sha256_of_version.cache_clear()
            assert io.sha256_file_memo(f) == io.sha256_bytes(b"content")
        warnings = [r for r in caplog.records if "file-hash memo" in r.getMessage()]
        assert len(warnings) == 1 and str(bad) in warnings[0].getMessage()
    finally:
        hashmemo.use_memo(None)
        io._sha256_of_version.cache_clear()


def test_two_processes_share_the_memo(tmp_path):
    """Two real processes: the second answers from the memo the first wrote (at exit)."""
    f = tmp_path / "img.bin"
    f.write_bytes(os.urandom(1 << 16))
    old = time.time() - 60
    os.utime(f, (old, old))
    time.sleep(hashmemo.SETTLE_S + 0.1)  # the ctime (now) must be settled too
    code = (
        "import sys; from memlens.core import hashmemo, io\n"
        "m = hashmemo.use_memo(sys.argv[1])\n"
        "print(io.sha256_file_memo(sys.argv[2]), m.hits)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    db = str(tmp_path / "cache" / "file_hashes.sqlite")
    runs = [
        subprocess.run([sys.executable, "-c", code, db, str(f)], env=env, capture_output=True, text=True) for _ in "ab"
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    (d1, hits1), (d2, hits2) = (r.stdout.split() for r in runs)
    assert d1 == d2 == io.sha256_bytes(f.read_bytes())
    assert (hits1, hits2) == ("0", "1")


def test_a_content_addressed_link_is_remembered_though_it_moved_the_ctime(tmp_path, monkeypatch):
    from memlens.core.store import content_link

    src = tmp_path / "objects" / "a.png"
    src.parent.mkdir()
    src.write_bytes(os.urandom(4096))
    digest = io.sha256_bytes(src.read_bytes())
    old = time.time() - 60
    os.utime(src, (old, old))
    monkeypatch.setattr(hashmemo, "SETTLE_S", 0.0)
    io._sha256_of_version.cache_clear()
    memo = hashmemo.use_memo(tmp_path / "m.sqlite")
    try:
        before = src.stat()
        dest = content_link(src, digest, tmp_path / "neutral")
        assert dest.stat().st_ino == before.st_ino and dest.stat().st_ctime_ns != before.st_ctime_ns
        _new_process_memo(memo)
        reads = _count_reads(monkeypatch)
        assert io.sha256_file_memo(dest) == digest and io.sha256_file_memo(src) == digest
        assert reads == []  # the linked version came from the memo
        # an edit after the link is a new version: read again, and the copy is made anew
        src.write_bytes(b"different bytes")
        _new_process_memo(memo)
        assert io.sha256_file_memo(dest) == io.sha256_bytes(b"different bytes") and len(reads) == 1
    finally:
        hashmemo.use_memo(None)
        io._sha256_of_version.cache_clear()
