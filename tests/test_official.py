"""The official release format: export round-trips through the loader; bad input gets clear errors."""

import json

import pytest

from memlens.core.config import Paths
from memlens.core.errors import DataError, ImageError, SchemaError
from memlens.core.io import sha256_file
from memlens.core.items import BuiltBenchmark
from memlens.core.official import OfficialRelease, iter_json_array
from tests.conftest import TINY, run_stage


@pytest.fixture(scope="module")
def exported(tiny_project, tmp_path_factory):
    import shutil

    root = tmp_path_factory.mktemp("exp") / "proj"
    shutil.copytree(tiny_project, root)
    assert run_stage(root, "export", *TINY) == 0
    return root


@pytest.mark.slow
def test_export_roundtrips_through_loader(exported):
    bench = BuiltBenchmark(Paths(exported))
    rel = OfficialRelease(exported / "data" / "release")
    assert rel.lengths() == bench.lengths()
    for length in bench.lengths():
        built = {i.question_id: i for i in bench.items(length)}
        loaded = {i.question_id: i for i in rel.items(length)}
        assert built.keys() == loaded.keys()
        for qid, b in built.items():
            lo = loaded[qid]
            for f in ("question_type", "question_subtype", "question", "answer", "question_date", "old_answer"):
                assert getattr(lo.question, f) == getattr(b.question, f), f
            assert [s.session_id for s in lo.sessions] == [s.session_id for s in b.sessions]
            assert [s.date for s in lo.sessions] == [s.date for s in b.sessions]
            assert [s.is_evidence for s in lo.sessions] == [s.is_evidence for s in b.sessions]
            for sb, sl in zip(b.sessions, lo.sessions):
                assert [(t.role, t.content, t.has_answer) for t in sb.turns] == [
                    (t.role, t.content, t.has_answer) for t in sl.turns
                ]
                for tb, tl in zip(sb.turns, sl.turns):
                    assert [sha256_file(b.resolve_image(i)) for i in tb.images] == [
                        sha256_file(lo.resolve_image(i)) for i in tl.images
                    ]
                    # image ids are content digests, resolved outside needle_images/ and haystack_images/
                    assert tl.images == tb.images
                    assert all("needle" not in str(lo.resolve_image(i)) for i in tl.images)
    sub = json.loads((exported / "data" / "release" / "agent_subset_195.json").read_text())
    assert sub["n_questions"] == len(sub["question_ids"]) > 0


def _item(**kw):
    base = {
        "question_id": "q_1",
        "question_type": "information_extraction",
        "question_subtype": "previnfo",
        "question": "What?",
        "answer": "3",
        "question_date": "2024/05/31 (Fri) 07:58",
        "haystack_dates": ["2024/05/01 (Wed) 10:00"],
        "haystack_session_ids": ["sess_a"],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "look <image>",
                    "images": [{"file": "needle_images/a.png"}],
                    "has_answer": True,
                },
                {"role": "assistant", "content": "ok"},
            ]
        ],
        "answer_session_ids": ["sess_a"],
    }
    base.update(kw)
    return base


def _release(tmp_path, items, raw=None):
    d = tmp_path / "rel"
    (d / "release_images" / "needle_images").mkdir(parents=True)
    from PIL import Image

    Image.new("RGB", (64, 64), "red").save(d / "release_images" / "needle_images" / "a.png")
    (d / "dataset_32k.json").write_text(raw if raw is not None else json.dumps(items))
    return OfficialRelease(d)


def test_loader_reads_list_and_dict_containers(tmp_path):
    rel = _release(tmp_path, [_item(), _item(question_id="q_2")])
    assert [i.question_id for i in rel.items("32k")] == ["q_1", "q_2"]
    item = next(rel.items("32k"))
    assert item.sessions[0].is_evidence and item.resolve_image(item.image_ids[0]).is_file()
    rel2 = _release(tmp_path / "b", None, raw=json.dumps({"data": [_item()]}))
    assert rel2.count("32k") == 1


def test_streaming_parser_small_chunks(tmp_path):
    p = tmp_path / "x.json"
    items = [_item(question_id=f"q_{i}", question="é" * (i * 7)) for i in range(50)]
    p.write_text(json.dumps(items, ensure_ascii=False, indent=1))
    assert [x["question_id"] for x in iter_json_array(p, chunk_size=97)] == [f"q_{i}" for i in range(50)]


def test_malformed_json_is_a_clear_error(tmp_path):
    rel = _release(tmp_path, None, raw='[{"question_id": "q_1", ')
    with pytest.raises(DataError, match=r"dataset_32k.json"):
        list(rel.items("32k"))


def test_schema_error_names_item_and_field(tmp_path):
    rel = _release(tmp_path, [_item(), _item(question_id="q_2", haystack_sessions="oops")])
    with pytest.raises(SchemaError, match=r"q_2.*haystack_sessions"):
        list(rel.items("32k"))
    rel = _release(tmp_path / "c", [_item(question_type="weird")])
    with pytest.raises(SchemaError, match="question_type"):
        list(rel.items("32k"))


@pytest.mark.parametrize("bad", ["../../etc/passwd", "/etc/passwd", "needle_images/../../x.png"])
def test_image_path_traversal_is_refused(tmp_path, bad):
    rel = _release(
        tmp_path, [_item(haystack_sessions=[[{"role": "user", "content": "x <image>", "images": [{"file": bad}]}]])]
    )
    item = next(rel.items("32k"))
    with pytest.raises(ImageError, match="escapes"):
        item.resolve_image(item.image_ids[0])


def test_missing_image_is_a_clear_error(tmp_path):
    rel = _release(
        tmp_path,
        [
            _item(
                haystack_sessions=[
                    [{"role": "user", "content": "x <image>", "images": [{"file": "needle_images/nope.png"}]}]
                ]
            )
        ],
    )
    item = next(rel.items("32k"))
    with pytest.raises(ImageError, match="missing"):
        item.resolve_image(item.image_ids[0])


def test_lengths_past_256k_are_found_and_ordered_by_tokens(tmp_path):
    """dataset_512k.json and dataset_1m.json are releases too, and "1m" is the longest, not the first."""
    rel = _release(tmp_path, [_item()])
    for name in ("dataset_1m.json", "dataset_512k.json", "dataset_128k.json"):
        (tmp_path / "rel" / name).write_text(json.dumps([_item()]))
    assert rel.lengths() == ["32k", "128k", "512k", "1m"]
    assert rel.count("1m") == 1


def test_built_lengths_are_ordered_by_tokens(tmp_path, tiny_project):
    import shutil

    from memlens.core.config import Paths
    from memlens.core.items import BuiltBenchmark

    gen, inst = tmp_path / "data" / "generated", tmp_path / "data" / "instances"
    gen.mkdir(parents=True)
    inst.mkdir(parents=True)
    shutil.copy(tiny_project / "data" / "generated" / "questions.jsonl", gen / "questions.jsonl")
    for n in ("1m", "256k", "32k", "512k", "64k"):
        (inst / f"{n}.jsonl").write_text("")
    assert BuiltBenchmark(Paths(tmp_path)).lengths() == ["32k", "64k", "256k", "512k", "1m"]


def test_missing_length_lists_available(tmp_path):
    rel = _release(tmp_path, [_item()])
    with pytest.raises(DataError, match="available lengths: 32k"):
        rel.dataset_path("64k")


@pytest.mark.slow
def test_huggingface_parquet_export_loads(exported, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hfcache"))
    import hashlib

    import datasets

    rel = exported / "data" / "release"
    ds = datasets.load_dataset(
        "parquet", data_files={"test": str(rel / "hf" / "dataset_32k.parquet")}, cache_dir=str(tmp_path / "hfcache")
    )["test"]
    items = list(iter_json_array(rel / "dataset_32k.json"))
    assert ds.num_rows == len(items)
    row, item = ds[0], items[0]
    assert row["question_id"] == item["question_id"] and row["answer"] == item["answer"]
    assert row["haystack_sessions"][0][0]["content"] == item["haystack_sessions"][0][0]["content"]
    im = datasets.load_dataset(
        "parquet", data_files={"test": str(rel / "hf" / "images.parquet")}, cache_dir=str(tmp_path / "hfcache")
    )["test"]
    assert isinstance(im.features["image"], datasets.Image)
    raw = im.cast_column("image", datasets.Image(decode=False))[0]
    on_disk = (rel / "release_images" / raw["file"]).read_bytes()
    assert hashlib.sha256(raw["image"]["bytes"]).digest() == hashlib.sha256(on_disk).digest()
