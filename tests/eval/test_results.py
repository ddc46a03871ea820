"""The results store for many writers (memlens.eval.results): one segment per writer, fsynced per
answer, merged by request key with an order-independent rule; kill -9 anywhere loses nothing;
compaction; stores written by an earlier MemLens (one answers.jsonl per system) are still read."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memlens.core.errors import DataError
from memlens.eval.results import ResultsStore, open_folder, request_key, system_folders

IDENT = {"_target_": "x.Model", "model": "m", "temperature": 0.0}
SRC = str(Path(__file__).resolve().parents[2] / "src")


def rec(ok=True, text="x", created=None):
    out = {"question_id": "q", "ok": ok, "text": text if ok else None, "error": None if ok else "boom"}
    if created is not None:
        out["created"] = created
    return out


def test_each_writer_appends_to_a_segment_of_its_own(tmp_path):
    a, b = ResultsStore(tmp_path, IDENT), ResultsStore(tmp_path, IDENT)
    with a.writer(), b.writer():  # two writers of one system at once: neither waits
        a.put("k1", rec(text="a"))
        b.put("k2", rec(text="b"))
        a.put("k3", rec(ok=False))
    files = a.files()
    assert len(files) == 2 and all(p.parent.name == "segments" for p in files)
    lines = [[json.loads(x) for x in p.read_text().splitlines()] for p in files]
    for seg in lines:  # a header naming the writer, its records, a seal
        assert seg[0]["segment"]["pid"] == os.getpid() and seg[-1]["sealed"] is True
        assert all("key" in r and r["origin"] for r in seg[1:-1])
    fresh = ResultsStore(tmp_path, IDENT)
    assert fresh.get("k1")["text"] == "a" and fresh.get("k2")["text"] == "b"
    assert fresh.get("k3")["error"] == "boom" and not fresh.has_answer("k3")
    assert not (a.dir / "lock").exists()  # no lock file: correctness never depends on one


def test_partial_tail_is_not_a_record_and_a_new_writer_never_appends_to_it(tmp_path):
    st = ResultsStore(tmp_path, IDENT)
    with st.writer():
        st.put("k1", rec())
        st.put("k2", rec(ok=False))
    (seg,) = st.files()
    with open(seg, "ab") as fh:  # a crash in the middle of a write
        fh.write(b'{"key": "k3", "ok": tr')
    st2 = ResultsStore(tmp_path, IDENT)
    assert st2.has_answer("k1") and not st2.has_answer("k2") and st2.get("k3") is None
    assert st2.stats().partial_bytes > 0
    with st2.writer():
        st2.put("k2", rec())
        st2.put("k3", rec())
    assert seg.read_bytes().endswith(b'"ok": tr')  # the other segment is untouched
    assert all(ResultsStore(tmp_path, IDENT).has_answer(k) for k in ("k1", "k2", "k3"))


def test_a_reader_sees_what_a_running_writer_appended_once_the_line_is_complete(tmp_path):
    w, r = ResultsStore(tmp_path, IDENT), ResultsStore(tmp_path, IDENT)
    with w.writer():
        w.put("k1", rec())
        r.refresh()
        assert r.has_answer("k1") and not r.has_answer("k2")
        w.put("k2", rec())
        r.refresh(max_age=3600)  # rate-limited: not read again yet
        assert not r.has_answer("k2")
        r.refresh()
        assert r.has_answer("k2")


def test_merge_rule_is_stable_whatever_order_the_files_are_listed_in(tmp_path):
    """An answer beats a failure; the first answer made wins (so a later duplicate never changes a
    view); the latest failure is the one shown; extra answers are counted as duplicates."""
    st = ResultsStore(tmp_path, IDENT)
    for text, created in (("late", 20.0), ("early", 10.0), ("later", 30.0)):
        with st.writer():
            st.put("k", rec(text=text, created=created))
            st.put("f", rec(ok=False, created=created))
    got = ResultsStore(tmp_path, IDENT)
    assert got.get("k")["text"] == "early" and got.get("f")["created"] == 30.0
    assert got.stats().duplicates == 2 and got.stats().answers == 1 and got.stats().failures == 1
    # rename the segments so that they list in the opposite order: the same winner
    files = st.files()
    for i, p in enumerate(reversed(files)):
        p.rename(p.with_name(f"{chr(ord('a') + i)}-{p.name}"))
    again = ResultsStore(tmp_path, IDENT)
    assert again.get("k")["text"] == "early" and again.get("f")["created"] == 30.0
    with st.writer():  # a failure recorded after the answers never replaces one
        st.put("k", rec(ok=False, created=99.0))
    assert ResultsStore(tmp_path, IDENT).get("k")["text"] == "early"


def test_identity_names_the_folder_and_keys_hash_everything(tmp_path):
    a, b = ResultsStore(tmp_path, IDENT), ResultsStore(tmp_path, {**IDENT, "temperature": 0.7})
    assert a.dir != b.dir and a.key == ResultsStore(tmp_path, dict(reversed(list(IDENT.items())))).key
    base = request_key(a.key, "p1", "standard", "f" * 64)
    variants = {
        base,
        request_key(b.key, "p1", "standard", "f" * 64),
        request_key(a.key, "p2", "standard", "f" * 64),
        request_key(a.key, "p1", "cot", "f" * 64),
        request_key(a.key, "p1", "standard", "e" * 64),
    }
    assert len(variants) == 5


def test_a_store_of_an_earlier_memlens_is_read_and_never_written(tmp_path):
    """Users have GPU hours in answers.jsonl (one file per system, last line maybe partial)."""
    st = ResultsStore(tmp_path, IDENT)
    st.dir.mkdir(parents=True)
    (st.dir / "system.json").write_text(json.dumps({"system_key": st.key, "identity": IDENT}))
    legacy = st.dir / "answers.jsonl"
    lines = [
        {"key": "k1", "ok": False, "error": "boom", "created": 1.0},
        {"key": "k1", "ok": True, "text": "old answer", "created": 2.0},
        {"key": "k2", "ok": True, "text": "two", "created": 3.0},
    ]
    legacy.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines) + b'{"key": "k3", "o')
    before = legacy.read_bytes()
    got = ResultsStore(tmp_path, IDENT)
    assert got.get("k1")["text"] == "old answer" and got.get("k2")["text"] == "two" and got.get("k3") is None
    assert got.stats().legacy and got.stats().duplicates == 0
    with got.writer():
        got.put("k3", rec(text="new"))
    assert legacy.read_bytes() == before
    assert ResultsStore(tmp_path, IDENT).get("k3")["text"] == "new"
    assert open_folder(st.dir).key == st.key and system_folders(tmp_path) == [st.dir]


def test_a_damaged_line_in_the_middle_names_the_file_and_line(tmp_path):
    st = ResultsStore(tmp_path, IDENT)
    with st.writer():
        st.put("k1", rec())
        st.put("k2", rec())
    (seg,) = st.files()
    lines = seg.read_text().splitlines()
    lines[1] = lines[1][:20]
    seg.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=rf"{seg.name}:2: not valid JSON"):
        ResultsStore(tmp_path, IDENT).get("k1")


WRITER = textwrap.dedent(
    """
    import sys, time
    from memlens.eval.results import ResultsStore
    store = ResultsStore(sys.argv[1], {"_target_": "x.Model", "model": "m", "temperature": 0.0})
    start, n = int(sys.argv[2]), int(sys.argv[3])
    with store.writer():
        for i in range(start, start + n):
            store.put(f"k{i}", {"question_id": f"q{i}", "ok": True, "text": "a" * 2000, "created": time.time()})
            print(i, flush=True)  # reported only after put() returned: the answer is fsynced
    """
)


def _writer(root: Path, start: int, n: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), str(start), str(n)], stdout=subprocess.PIPE, text=True, env=env
    )


def test_kill9_of_writers_at_any_moment_loses_no_stored_answer(tmp_path):
    """Three processes write one system at once; two are killed with SIGKILL mid-stream. Every answer
    a writer had reported stored is there; overlapping writers give counted duplicates, not losses."""
    procs = [_writer(tmp_path, 0, 400), _writer(tmp_path, 10, 400), _writer(tmp_path, 1000, 60)]
    reported: list[set[int]] = [set(), set(), set()]
    for i in (0, 1):
        while len(reported[i]) < 30 + 20 * i:
            reported[i].add(int(procs[i].stdout.readline()))
        procs[i].send_signal(signal.SIGKILL)
    for i, p in enumerate(procs):
        out, _ = p.communicate(timeout=60)
        reported[i] |= {int(x) for x in out.split()}
    assert procs[2].returncode == 0 and len(reported[2]) == 60
    got = ResultsStore(tmp_path, IDENT)
    everything = set().union(*reported)
    assert all(got.has_answer(f"k{i}") for i in everything)
    both = len(reported[0] & reported[1])
    assert both > 0  # the two killed writers answered some keys twice: duplicates, counted ...
    # ... exactly, up to the one answer each killed writer may have stored but not yet reported
    assert both <= got.stats().duplicates <= both + 2
    assert len(got.files()) == 3


def test_compaction_merges_finished_writers_and_keeps_open_segments(tmp_path):
    st = ResultsStore(tmp_path, IDENT)
    for i in range(3):  # three finished (sealed) writers, one duplicate answer, a superseded failure
        with st.writer():
            st.put(f"k{i}", rec(text=f"t{i}", created=float(i)))
            st.put("dup", rec(text=f"d{i}", created=10.0 + i))
            st.put("f", rec(ok=False, created=20.0 + i))
    dead = _writer(tmp_path, 100, 5)  # a writer killed without sealing its segment (pid gone, this host)
    assert dead.wait(60) == 0
    seg = max(st.files(), key=lambda p: p.stat().st_mtime)
    seg.write_bytes(seg.read_bytes().rsplit(b'{"closed"', 1)[0])  # as if killed before the seal
    before = {k: ResultsStore(tmp_path, IDENT).get(k) for k in ["dup", "f", *(f"k{i}" for i in (0, 1, 2, 100, 104))]}
    live = ResultsStore(tmp_path, IDENT)
    with live.writer():  # a writer still running: its segment must survive the compaction
        live.put("live", rec(text="open"))
        result = ResultsStore(tmp_path, IDENT).compact()
        assert result["merged"] == 4 and result["kept"] == 1
        assert result["records_in"] == 3 * 3 + 5 and result["records_out"] == 3 + 2 + 5
        live.put("live2", rec(text="still open"))
    names = sorted(p.name for p in st.files())
    assert len(names) == 2 and names[0].startswith("compact-")
    after = ResultsStore(tmp_path, IDENT)
    assert {k: after.get(k) for k in before} == before
    assert after.get("live")["text"] == "open" and after.get("live2")["text"] == "still open"
    assert after.stats().duplicates == 0
    # a crash between the rename and the removals leaves both copies: the same answers, no duplicates
    compacted = next(p for p in st.files() if p.name.startswith("compact-"))
    (st.segments_dir / "zz-copy.jsonl").write_bytes(compacted.read_bytes())
    again = ResultsStore(tmp_path, IDENT)
    assert {k: again.get(k) for k in before} == before and again.stats().duplicates == 0


def test_compaction_takes_over_a_legacy_store_only_when_no_old_writer_holds_it(tmp_path):
    st = ResultsStore(tmp_path, IDENT)
    st.dir.mkdir(parents=True)
    (st.dir / "system.json").write_text(json.dumps({"system_key": st.key, "identity": IDENT}))
    (st.dir / "answers.jsonl").write_text(json.dumps({"key": "k1", "ok": True, "text": "old", "created": 1}) + "\n")
    with open(st.dir / "lock", "a+") as fh:  # an earlier MemLens writing it right now
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        assert ResultsStore(tmp_path, IDENT).compact()["merged"] == 0
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    assert ResultsStore(tmp_path, IDENT).compact()["merged"] == 1
    assert not (st.dir / "answers.jsonl").exists()
    assert ResultsStore(tmp_path, IDENT).get("k1")["text"] == "old"


def test_results_command_shows_and_compacts(tmp_path, capsys):
    from memlens.cli import main

    (tmp_path / "conf").mkdir()
    store = ResultsStore(tmp_path / ".memlens_cache" / "results", IDENT)
    for text in ("a", "b"):
        with store.writer():
            store.put("k", rec(text=text))
    assert main(["results", "--root", str(tmp_path)]) == 0
    assert "m: 1 answers, 0 failed, 1 duplicates, 2 segments (2 sealed)" in capsys.readouterr().out
    assert main(["results", "compact", "--root", str(tmp_path)]) == 0
    assert "merged 2 files (2 records) into 1, dropped 1 superseded" in capsys.readouterr().out
    assert main(["results", "--root", str(tmp_path)]) == 0
    assert "1 answers, 0 failed, 0 duplicates, 1 segments" in capsys.readouterr().out
    assert main(["results", "wipe", "--root", str(tmp_path)]) == 2


def test_writers_do_not_wait_for_each_other(tmp_path):
    """What the old per-system lock forbade: two processes writing one system at the same moment."""
    procs = [_writer(tmp_path, 0, 50), _writer(tmp_path, 50, 50)]
    t0 = time.monotonic()
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs) and time.monotonic() - t0 < 60
    got = ResultsStore(tmp_path, IDENT)
    assert len(got) == 100 and got.stats().duplicates == 0 and sum(len(o.split()) for o in outs) == 100


def test_a_free_systems_segment_is_fsynced_once_when_sealed(tmp_path, monkeypatch):
    """``fsync=False`` (the baselines: ``Model.answers_are_free``): no fsync per answer, one when
    the segment is sealed, and every answer is there for the next reader."""
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    store = ResultsStore(tmp_path / "free", IDENT, fsync=False)
    with store.writer():
        for i in range(20):
            store.put(f"k{i}", rec(text=str(i)))
        during = len(synced)
    assert len(synced) - during == 1  # the seal
    fresh = ResultsStore(tmp_path / "free", IDENT)
    assert all(fresh.get(f"k{i}")["text"] == str(i) for i in range(20))
    synced.clear()
    paid = ResultsStore(tmp_path / "paid", IDENT)
    with paid.writer():
        for i in range(20):
            paid.put(f"k{i}", rec(text=str(i)))
    assert len(synced) >= 20  # every answer of a system that costs something is fsynced


def test_only_the_baselines_answers_are_free():
    from memlens.core.registry import component_names, find_component

    free = {n for n in component_names("model") if find_component("model", n).answers_are_free}
    assert free == {"refuse", "chance"}
