"""``export.flat_images``: every image in one folder under its content hash, so that no path of the
release tells an evidence image from a haystack image; the release card says what the labels are."""

from __future__ import annotations

import re

import pytest

from memlens.construction.export import stage as E
from memlens.construction.export.card import CARD
from memlens.core.config import Paths
from memlens.core.io import iter_jsonl, read_json, sha256_file
from memlens.core.items import BuiltBenchmark
from memlens.core.official import ANSWER_KEY, OfficialRelease, iter_json_array
from memlens.core.store import hash_tree
from tests.construction.test_export import copy_build
from tests.support.settings import settings

FLAT = settings(export={"huggingface": True, "flat_images": True})
OFFICIAL = settings(export={"huggingface": True})
FLAT_FILE = re.compile(r"images/([0-9a-f]{64})\.(?:jpg|png|webp|gif)")


@pytest.fixture(scope="module")
def both(tiny_project, tmp_path_factory):
    """The same build exported twice: the official layout and the flat one."""
    roots = {}
    for name, cfg in (("official", OFFICIAL), ("flat", FLAT)):
        roots[name] = copy_build(tiny_project, tmp_path_factory.mktemp(name))
        E.run(cfg, Paths(roots[name]))
    return roots


def _files(release):
    """Every image path a release names: items (per length), the answer key, the Parquet images."""
    import pyarrow.parquet as pq

    names = set()
    for p in sorted(release.glob("dataset_*.json")):
        for it in iter_json_array(p):
            names |= {i["file"] for s in it["haystack_sessions"] for t in s for i in t["images"]}
    key = {f for r in iter_jsonl(release / ANSWER_KEY) for e in r["evidence"] for f in e["image_files"]}
    parquet = {r["file"] for r in pq.read_table(release / "hf" / "images.parquet", columns=["file"]).to_pylist()}
    return names, key, parquet


def test_flat_paths_never_tell_evidence_from_haystack(both):
    rel = both["flat"] / "data" / "release"
    bench = BuiltBenchmark(Paths(both["flat"]))
    evidence = {i for q in bench.questions.values() for i in q.evidence_image_ids}
    names, key, parquet = _files(rel)
    assert key <= names and parquet == names
    # one folder, every name the SHA-256 of the file's bytes: nothing in a path but the content
    assert sorted(p.name for p in (rel / "release_images").iterdir()) == ["images"]
    on_disk = {p.relative_to(rel / "release_images").as_posix() for p in (rel / "release_images").rglob("*.*")}
    assert on_disk == names
    shas = set()
    for f in names:
        m = FLAT_FILE.fullmatch(f)
        assert m, f
        assert sha256_file(rel / "release_images" / f) == m.group(1)
        shas.add(m.group(1))
    assert shas & evidence and shas - evidence  # both kinds are there, under the same pattern
    for p in sorted(rel.glob("dataset_*.json")):
        text = p.read_text(encoding="utf-8")
        assert "needle_images" not in text and "haystack_images" not in text


def test_flat_images_are_the_originals_bytes(both):
    rel = both["flat"] / "data" / "release" / "release_images"
    bench = BuiltBenchmark(Paths(both["flat"]))
    names, _, _ = _files(rel.parent)
    for f in sorted(names):
        sha = FLAT_FILE.fullmatch(f).group(1)
        assert (rel / f).read_bytes() == bench.resolve_image(sha).read_bytes(), f
    # the same images as the official layout's, byte for byte
    official = both["official"] / "data" / "release" / "release_images"
    assert sorted(sha256_file(p) for p in official.rglob("*.*")) == sorted(
        FLAT_FILE.fullmatch(f).group(1) for f in names
    )


def test_flat_items_differ_from_the_official_ones_in_file_names_only(both):
    def without_files(root, length):
        out = []
        for it in iter_json_array(root / "data" / "release" / f"dataset_{length}.json"):
            for s in it["haystack_sessions"]:
                for t in s:
                    for i in t["images"]:
                        i["file"] = sha256_file(root / "data" / "release" / "release_images" / i["file"])
            out.append(it)
        return out

    lengths = BuiltBenchmark(Paths(both["flat"])).lengths()
    for ln in lengths:
        assert without_files(both["flat"], ln) == without_files(both["official"], ln)


def test_the_official_loader_reads_the_flat_layout_as_the_same_benchmark(both, tmp_path):
    flat = OfficialRelease(both["flat"] / "data" / "release", neutral_dir=tmp_path / "n1")
    official = OfficialRelease(both["official"] / "data" / "release", neutral_dir=tmp_path / "n2")
    assert flat.lengths() == official.lengths()
    for ln in flat.lengths():
        a = {it.question_id: it for it in flat.items(ln)}
        b = {it.question_id: it for it in official.items(ln)}
        assert a.keys() == b.keys()
        for qid, it in a.items():
            assert it.fingerprint() == b[qid].fingerprint()  # the same requests: stored answers carry over
            assert [e.image_ids for e in it.question.evidence] == [e.image_ids for e in b[qid].question.evidence]
            assert [sha256_file(it.resolve_image(i)) for i in it.image_ids] == it.image_ids


def test_flat_export_is_deterministic(both, tmp_path):
    again = copy_build(both["flat"], tmp_path / "again")
    E.run(FLAT, Paths(again))
    assert hash_tree(again / "data" / "release") == hash_tree(both["flat"] / "data" / "release")
    m = read_json(again / "data" / "release" / "manifest.json")
    assert m["image_layout"] == "flat" and m["images"] == len(
        list((again / "data/release/release_images").rglob("*.*"))
    )


def test_the_card_names_the_labels_and_the_layout(both):
    for name, root in both.items():
        card = (root / "data" / "release" / CARD).read_text(encoding="utf-8")
        for label in ("needle_images/", "has_answer", "answer_session_ids", "answer_key.jsonl"):
            assert f"`{label}`" in card, (name, label)
        assert "never show them to a system" in card and "for scoring and analysis" in card
        assert "0.82-0.86" in card and "export.flat_images=true" in card
        flat = "Flat layout" in card
        assert flat == (name == "flat")


def test_export_flat_images_is_in_conf_and_the_help(capsys):
    from memlens.cli import main
    from tests.conftest import REPO

    assert OFFICIAL.export.flat_images is False and FLAT.export.flat_images is True
    assert "flat_images: false" in (REPO / "conf" / "export" / "default.yaml").read_text()
    assert main(["export", "--root", str(REPO), "--help"]) == 0
    out = capsys.readouterr().out
    assert "export.flat_images = false" in out and "indistinguishable by path" in out


def test_default_layout_is_unchanged_by_the_option(both):
    """``flat_images: false`` (the default) writes the official layout: the folders, 12-hex names."""
    rel = both["official"] / "data" / "release"
    assert sorted(p.name for p in (rel / "release_images").iterdir()) == ["haystack_images", "needle_images"]
    assert read_json(rel / "manifest.json")["image_layout"] == "official"
