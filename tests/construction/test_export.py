"""export stage: the official release layout, read back through OfficialRelease, and an atomic swap."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from memlens.construction.export import stage as E
from memlens.core.config import Paths
from memlens.core.io import read_json, sha256_file
from memlens.core.items import BuiltBenchmark
from memlens.core.official import IMAGE_REF_FIELDS, ITEM_FIELDS, TURN_FIELDS, OfficialRelease, iter_json_array
from memlens.core.schema import KU, QUESTION_TYPES
from memlens.core.store import hash_tree
from tests.support.settings import settings

#: the fields every release item holds (the official format's, ``old_answer`` only on knowledge updates)
REQUIRED_FIELDS = set(ITEM_FIELDS) - {"old_answer"}
E_ITEM_COLUMNS = set(ITEM_FIELDS)
CFG = settings(export={"huggingface": True})


def copy_build(src, dest):
    """What export reads: data/generated, data/instances, data/images (no configuration needed)."""
    for d in ("generated", "instances", "images"):
        shutil.copytree(src / "data" / d, dest / "data" / d)
    return dest


@pytest.fixture(scope="module")
def exported(tiny_project, tmp_path_factory):
    root = copy_build(tiny_project, tmp_path_factory.mktemp("export"))
    E.run(CFG, Paths(root))
    return root


@pytest.fixture(scope="module")
def bench(exported):
    return BuiltBenchmark(Paths(exported))


def items(root, length):
    return list(iter_json_array(root / "data" / "release" / f"dataset_{length}.json"))


def test_official_layout(exported, bench):
    rel = exported / "data" / "release"
    assert sorted(p.name for p in rel.glob("dataset_*.json")) == sorted(f"dataset_{ln}.json" for ln in bench.lengths())
    evidence = {i for q in bench.questions.values() for i in q.evidence_image_ids}
    for ln in bench.lengths():
        its = items(exported, ln)
        assert [it["question_id"] for it in its] == sorted(i.question_id for i in bench.instances(ln))
        for it in its:
            # the official fields and nothing else: the answer key is a file of its own
            assert REQUIRED_FIELDS <= set(it) <= set(ITEM_FIELDS), it["question_id"]
            q = bench.questions[it["question_id"]]
            assert ("old_answer" in it) == (q.old_answer is not None)
            assert len(it["haystack_sessions"]) == len(it["haystack_dates"]) == len(it["haystack_session_ids"])
            assert set(it["answer_session_ids"]) <= set(it["haystack_session_ids"])
            for sess in it["haystack_sessions"]:
                for t in sess:
                    assert set(t) == set(TURN_FIELDS)
                    assert t["content"].count("<image>") == len(t["images"])
                    for ref in t["images"]:
                        assert set(ref) == set(IMAGE_REF_FIELDS)
                        path = rel / "release_images" / ref["file"]
                        sha = sha256_file(path)
                        assert path.name == f"{sha[:12]}{path.suffix}"
                        folder = "needle_images" if sha in evidence else "haystack_images"
                        assert ref["file"].startswith(folder + "/"), ref["file"]
    sub = read_json(rel / "agent_subset_195.json")
    assert sub["n_questions"] == len(sub["question_ids"]) == sum(sub["per_type"].values())
    assert set(sub["question_ids"]) <= set(bench.questions)
    assert set(sub["per_type"]) == {q.question_type for q in bench.questions.values()}
    assert all(n >= 1 for n in sub["per_type"].values())


def test_manifest_lists_every_release_file(exported):
    rel = exported / "data" / "release"
    m = read_json(rel / "manifest.json")
    assert m["artifacts"] == hash_tree(rel)
    needles = list((rel / "release_images" / "needle_images").iterdir())
    assert m["needle_images"] == len(needles) and m["images"] == len(list((rel / "release_images").rglob("*.*")))


def test_reread_through_official_release_gives_the_same_benchmark(exported, bench):
    release = OfficialRelease(exported / "data" / "release")
    assert release.lengths() == sorted(bench.lengths(), key=lambda n: int(n[:-1]))
    got = release.questions
    assert set(got) == set(bench.questions)
    for qid, q in bench.questions.items():
        r = got[qid]
        assert (r.question_type, r.question_subtype, r.question, r.answer, r.question_date, r.old_answer) == (
            q.question_type,
            q.question_subtype,
            q.question,
            q.answer,
            q.question_date,
            q.old_answer,
        ), qid
        # the release lists evidence in history (time) order; ordered evidence is already in time order
        assert sorted(r.evidence_session_ids) == sorted(q.evidence_session_ids)
        if q.ordered_evidence:
            assert r.evidence_session_ids == q.evidence_session_ids, qid
    for ln in bench.lengths():
        built = {it.question_id: it for it in bench.items(ln)}
        seen = 0
        for it in release.items(ln):
            b = built[it.question_id]
            assert [(s.session_id, s.date, s.is_evidence) for s in it.sessions] == [
                (s.session_id, s.date, s.is_evidence) for s in b.sessions
            ]
            assert [[t.content for t in s.turns] for s in it.sessions] == [
                [t.content for t in s.turns] for s in b.sessions
            ]
            # image references resolve to the very same image bytes
            assert [sha256_file(it.resolve_image(i)) for i in it.image_ids] == b.image_ids
            seen += 1
        assert seen == len(built) == release.count(ln)
    assert set(release.agent_subset()) <= set(bench.questions)


def test_hugging_face_parquet_matches_the_json(exported):
    import pyarrow.parquet as pq

    hf = exported / "data" / "release" / "hf"
    files = set()
    for p in sorted((exported / "data" / "release").glob("dataset_*.json")):
        its = list(iter_json_array(p))
        table = pq.read_table(hf / f"{p.stem}.parquet").to_pylist()
        assert [r["question_id"] for r in table] == [it["question_id"] for it in its]
        assert [r["answer"] for r in table] == [it["answer"] for it in its]
        assert set(table[0]) == E_ITEM_COLUMNS  # the official fields only
        for r, it in zip(table, its):
            assert [[t["images"] for t in s] for s in r["haystack_sessions"]] == [
                [[i["file"] for i in t["images"]] for t in s] for s in it["haystack_sessions"]
            ]
            files |= {i for s in r["haystack_sessions"] for t in s for i in t["images"]}
    images = pq.read_table(hf / "images.parquet").to_pylist()
    assert {r["file"] for r in images} == files
    rel = exported / "data" / "release" / "release_images"
    assert all(r["image"]["bytes"] == (rel / r["file"]).read_bytes() for r in images[:20])


def test_export_is_deterministic(exported, tmp_path):
    other = copy_build(exported, tmp_path / "again")
    E.run(CFG, Paths(other))
    assert hash_tree(other / "data" / "release") == hash_tree(exported / "data" / "release")


def test_agent_subset_is_stratified_and_seeded(bench):
    qs = list(bench.questions.values())
    a, b = E.agent_subset(qs), E.agent_subset(list(reversed(qs)))
    assert a == b  # independent of input order
    counts = Counter(q.question_type for q in qs)
    assert all(1 <= a["per_type"][t] <= counts[t] for t in counts)
    assert set(a["per_type"]) <= set(QUESTION_TYPES)


@pytest.fixture()
def released(exported, tmp_path):
    root = copy_build(exported, tmp_path / "proj")
    shutil.copytree(exported / "data" / "release", root / "data" / "release")
    return root


def test_failure_while_building_keeps_the_old_release(released, monkeypatch):
    rel = released / "data" / "release"
    before = hash_tree(rel)

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(E, "write_images_parquet", boom)  # after every dataset file is written
    with pytest.raises(KeyboardInterrupt):
        E.run(CFG, Paths(released))
    assert hash_tree(rel) == before
    monkeypatch.undo()
    E.run(CFG, Paths(released))  # a later run cleans up and completes
    assert hash_tree(rel) == before
    assert sorted(p.name for p in rel.parent.iterdir() if p.name.startswith("release")) == ["release"]


def test_interruption_while_swapping_never_leaves_a_half_deleted_release(released, monkeypatch):
    rel = released / "data" / "release"
    before = hash_tree(rel)
    real_rmtree = shutil.rmtree

    def interrupted_rmtree(path, *a, **k):
        """Delete one file of the folder, then get interrupted."""
        if path.name.endswith(".partial"):
            return real_rmtree(path, *a, **k)
        next(p for p in sorted(path.rglob("*")) if p.is_file()).unlink()
        raise KeyboardInterrupt

    monkeypatch.setattr(E.shutil, "rmtree", interrupted_rmtree)
    with pytest.raises(KeyboardInterrupt):
        E.run(CFG, Paths(released))
    monkeypatch.undo()
    m = read_json(rel / "manifest.json")
    assert hash_tree(rel) == m["artifacts"] == before  # a complete release is in place
    E.run(CFG, Paths(released))
    assert sorted(p.name for p in rel.parent.iterdir() if p.name.startswith("release")) == ["release"]


def test_ku_items_carry_the_old_answer(exported, bench):
    ku = [q for q in bench.questions.values() if q.question_type == KU]
    assert ku
    by_id = {it["question_id"]: it for it in items(exported, bench.lengths()[0])}
    assert all(by_id[q.question_id].get("old_answer") == q.old_answer for q in ku)


@pytest.mark.parametrize("workers", [1, 3])
def test_release_does_not_depend_on_the_writer_processes(exported, tmp_path, workers):
    other = copy_build(exported, tmp_path / "w")
    E.run(settings(export={"huggingface": True, "workers": workers}), Paths(other))
    assert hash_tree(other / "data" / "release") == hash_tree(exported / "data" / "release")


def test_a_writer_process_that_dies_fails_the_export_and_keeps_the_old_release(released, monkeypatch):
    import os

    from memlens.core.errors import MemLensError

    rel = released / "data" / "release"
    before = hash_tree(rel)
    parent = os.getpid()
    real = E.write_items_parquet

    def dies_in_a_child(items, out):
        if os.getpid() != parent:
            os._exit(9)  # the forked writer dies (as the OOM killer would end it): an error, not a hang
        return real(items, out)

    monkeypatch.setattr(E, "write_items_parquet", dies_in_a_child)
    with pytest.raises(MemLensError, match=r"export: the process writing .* died \(exit code 9\).*export.workers=1"):
        E.run(settings(export={"huggingface": True, "workers": 2}), Paths(released))
    assert hash_tree(rel) == before
    monkeypatch.undo()
    E.run(settings(export={"huggingface": True, "workers": 2}), Paths(released))  # a later run completes
    assert hash_tree(rel) == before
