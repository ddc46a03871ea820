"""Hugging Face ``datasets`` export: Parquet files that ``datasets.load_dataset("parquet", ...)`` reads.

``hf/images.parquet`` holds every image once (``file``: its release path, ``image``: an ``Image``
feature with the encoded bytes); ``hf/dataset_<length>.parquet`` holds the release items with
sessions as nested lists and image references as release paths (so images are not repeated per
item and length): the official fields only, like the JSON (the answer key stays in ``answer_key.jsonl``). Written in row groups, so memory stays bounded at any length.
"""

from __future__ import annotations

from pathlib import Path

ROW_GROUP = 16


def _item_features():
    from datasets import Features, List, Value

    turn = {
        "role": Value("string"),
        "content": Value("string"),
        "images": List(Value("string")),
        "has_answer": Value("bool"),
    }
    return Features(
        {
            "question_id": Value("string"),
            "question_type": Value("string"),
            "question_subtype": Value("string"),
            "question": Value("string"),
            "answer": Value("string"),
            "question_date": Value("string"),
            "old_answer": Value("string"),
            "haystack_dates": List(Value("string")),
            "haystack_session_ids": List(Value("string")),
            "answer_session_ids": List(Value("string")),
            "haystack_sessions": List(List(turn)),
        }
    )


def _flatten_item(item: dict) -> dict:
    return {
        "question_id": item["question_id"],
        "question_type": item["question_type"],
        "question_subtype": item["question_subtype"],
        "question": item["question"],
        "answer": item["answer"],
        "question_date": item["question_date"],
        "old_answer": item.get("old_answer"),
        "haystack_dates": item["haystack_dates"],
        "haystack_session_ids": item["haystack_session_ids"],
        "answer_session_ids": item["answer_session_ids"],
        "haystack_sessions": [
            [
                {
                    "role": t["role"],
                    "content": t["content"],
                    "images": [i["file"] for i in t["images"]],
                    "has_answer": bool(t.get("has_answer")),
                }
                for t in s
            ]
            for s in item["haystack_sessions"]
        ],
    }


def write_items_parquet(items, out: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    feats = _item_features()
    schema = feats.arrow_schema
    n = 0
    batch: list[dict] = []
    with pq.ParquetWriter(out, schema) as w:
        for item in items:
            batch.append(feats.encode_example(_flatten_item(item)))
            if len(batch) >= ROW_GROUP:
                w.write_table(pa.Table.from_pylist(batch, schema=schema))
                n += len(batch)
                batch = []
        if batch:
            w.write_table(pa.Table.from_pylist(batch, schema=schema))
            n += len(batch)
    return n


def write_images_parquet(files: dict[str, Path], out: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import Features, Image, Value

    feats = Features({"file": Value("string"), "image": Image()})
    schema = feats.arrow_schema
    rels = sorted(files)
    with pq.ParquetWriter(out, schema) as w:
        for i in range(0, len(rels), 64):
            rows = [
                {"file": r, "image": {"bytes": files[r].read_bytes(), "path": Path(r).name}} for r in rels[i : i + 64]
            ]
            w.write_table(pa.Table.from_pylist(rows, schema=schema))
    return len(rels)
