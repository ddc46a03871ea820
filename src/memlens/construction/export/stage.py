"""export stage: the benchmark in the official MEMLENS release layout (``data/release/``).

``dataset_<length>.json`` (a JSON list, one item per question, sessions copied per item: the only
place where sessions are repeated), ``release_images/needle_images/`` and ``haystack_images/``
(files named by the first 12 hex characters of their SHA-256; with ``export.flat_images`` one folder
``release_images/images/`` of files named by their whole SHA-256, so no path tells evidence from
haystack), ``README.md`` (the release card, :mod:`memlens.construction.export.card`: what each file
is, and that the folders, ``has_answer`` and ``answer_session_ids`` are labels never shown to a
system), and ``agent_subset_195.json``
(a stratified subset: 61 IE / 35 MSR / 48 TR / 29 KU / 22 AR at paper scale, proportional below,
seed 42), and ``hf/`` (Parquet for ``datasets.load_dataset``, see :mod:`memlens.construction.export.hf`).

The images are copied first; then the lengths' JSON and Parquet files, and the image Parquet, are
written in ``export.workers`` processes forked from the stage's (one per core by default), split by
size (:func:`memlens.core.forked.balance`: at paper scale the 256K files alone are half the work, so on
2 cores they take one process and the rest the other: 46 -> 25 s). Each file comes from one process
reading the same benchmark, so the release is byte-identical with any number of workers.

The dataset items hold the official fields only (:data:`memlens.core.official.ITEM_FIELDS`, turns
``role, content, images, has_answer``, image refs ``file, image_url, blip_caption``). Everything
else MemLens knows about a question (its evidence facts, derivation, abstraction and entity maps,
generation labels) is in ``answer_key.jsonl``: one row per question id, sorted (see
:func:`answer_key_row`), read back by :class:`memlens.core.official.OfficialRelease` for the judge
and the report, never given to a system under test.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path

from memlens.construction.export.card import CARD, release_card
from memlens.construction.export.hf import write_images_parquet, write_items_parquet
from memlens.construction.export.settings import ExportSettings
from memlens.core.config import Paths, length_tokens
from memlens.core.forked import balance, can_fork, run_split
from memlens.core.io import write_json, write_jsonl
from memlens.core.items import BuiltBenchmark
from memlens.core.official import ANSWER_KEY
from memlens.core.schema import AR, IE, KU, MSR, TR
from memlens.core.settings import Settings, as_settings
from memlens.core.store import hash_tree, write_manifest

log = logging.getLogger(__name__)
AGENT_SUBSET = {IE: 61, MSR: 35, TR: 48, KU: 29, AR: 22}
PAPER_TOTAL = 789


#: the one image folder of the flat layout (``export.flat_images``), under ``release_images/``
FLAT_FOLDER = "images"


def release_file(rec, needle: bool, flat: bool = False) -> str:
    """An image's path relative to ``release_images/``: ``needle_images/`` or ``haystack_images/``
    and the first 12 hex digits of its SHA-256 (official), or ``images/<sha256>`` (``flat``)."""
    ext = "jpg" if rec.format == "jpeg" else rec.format
    if flat:
        return f"{FLAT_FOLDER}/{rec.sha256}.{ext}"
    return f"{'needle_images' if needle else 'haystack_images'}/{rec.sha256[:12]}.{ext}"


def answer_key_row(q, image_file) -> dict:
    """What the release items leave out of question ``q``: evidence (session, date, fact and image
    files as release paths), ``topic_id``, ``ordered_evidence``, ``image_essential``,
    ``source_question_id`` and ``details`` (without the internal leakage list ``forbidden``)."""
    return {
        "question_id": q.question_id,
        "topic_id": q.topic_id,
        "evidence": [
            {
                "session_id": e.session_id,
                "date": e.date,
                "fact": e.fact,
                "image_files": [image_file(i) for i in e.image_ids],
            }
            for e in q.evidence
        ],
        "ordered_evidence": q.ordered_evidence,
        "image_essential": q.image_essential,
        "source_question_id": q.source_question_id,
        "details": {k: v for k, v in q.details.items() if k != "forbidden"},
    }


def agent_subset(questions: list, seed: int = 42) -> dict:
    by_type: dict[str, list[str]] = {}
    for q in sorted(questions, key=lambda q: q.question_id):
        by_type.setdefault(q.question_type, []).append(q.question_id)
    n_total = len(questions)
    rng = random.Random(seed)
    chosen, per_type = [], {}
    for t, ids in sorted(by_type.items()):
        want = (
            AGENT_SUBSET.get(t, 0) if n_total >= PAPER_TOTAL else round(AGENT_SUBSET.get(t, 0) * n_total / PAPER_TOTAL)
        )
        want = min(len(ids), max(1 if ids else 0, want))
        pick = sorted(rng.sample(ids, want))
        per_type[t] = len(pick)
        chosen += pick
    return {
        "n_questions": len(chosen),
        "question_ids": sorted(chosen),
        "per_type": per_type,
        "seed": seed,
        "stratification": "per question_type, sorted ids, random.Random(seed).sample",
    }


def json_array(fh, items):
    """Write ``items`` to ``fh`` as one JSON array (an item per line), yielding each once written."""
    fh.write("[")
    for n, item in enumerate(items):
        fh.write(("" if n == 0 else ",\n") + json.dumps(item, ensure_ascii=False, sort_keys=True))
        yield item
    fh.write("]\n")


def release_files(bench: BuiltBenchmark, lengths: list[str], evidence: set[str], flat: bool) -> dict[str, str]:
    """Every image an item of ``lengths`` shows -> its path under ``release_images/`` (:func:`release_file`)."""
    files: dict[str, str] = {}
    for length in lengths:
        for inst in bench.instances(length):
            for sid in inst.session_ids:
                for turn in bench.sessions[sid].turns:
                    for i in turn.images:
                        if i not in files:
                            files[i] = release_file(bench.images[i], i in evidence, flat)
    return files


def release_items(bench: BuiltBenchmark, length: str, files: dict[str, str]):
    """The release items of ``length`` (official fields only), by question id."""

    def ref(image_id: str) -> dict:
        rec = bench.images[image_id]
        return {
            "file": files[image_id],
            "image_url": f"memlens://synthetic/{rec.family}/{rec.sha256[:12]}",
            "blip_caption": f"a {rec.family.replace('_', ' ')} image",
        }

    for inst in sorted(bench.instances(length), key=lambda i: i.question_id):
        q = bench.questions[inst.question_id]
        own = set(inst.answer_session_ids)  # another question's evidence is haystack here
        sessions = [
            [
                {
                    "role": t.role,
                    "content": t.content,
                    "images": [ref(i) for i in t.images],
                    "has_answer": t.has_answer and sid in own,
                }
                for t in bench.sessions[sid].turns
            ]
            for sid in inst.session_ids
        ]
        item = {
            "question_id": q.question_id,
            "question_type": q.question_type,
            "question_subtype": q.question_subtype,
            "question": q.question,
            "answer": q.answer,
            "question_date": q.question_date,
            "haystack_dates": inst.dates,
            "haystack_session_ids": inst.session_ids,
            "haystack_sessions": sessions,
            "answer_session_ids": inst.answer_session_ids,
        }
        if q.old_answer is not None:
            item["old_answer"] = q.old_answer
        yield item


def write_length(bench: BuiltBenchmark, out: Path, length: str, files: dict[str, str], hf: bool) -> None:
    """``dataset_<length>.json``, streamed item by item (the 256K file never sits in memory whole),
    and its Parquet copy, written from the same items as they go."""
    path = out / f"dataset_{length}.json"
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        written = json_array(fh, release_items(bench, length, files))
        if hf:
            write_items_parquet(written, out / "hf" / f"dataset_{length}.parquet")
        else:
            for _ in written:
                pass
    tmp.replace(path)


def write_files(jobs: dict[str, Callable[[], None]], costs: dict[str, float], workers: int) -> None:
    """Run the file writers ``jobs`` in at most ``workers`` processes forked from this one, split by
    ``costs`` (:func:`~memlens.core.forked.balance`; in this process with one worker or where fork is
    not available). Each file is written by one process from the same data, so the files do not
    depend on ``workers``."""
    groups = balance(list(jobs), costs, workers if can_fork() else 1)

    def run_group(names: list[str]) -> None:
        for name in names:
            jobs[name]()

    run_split(
        [partial(run_group, g) for g in groups],
        what=lambda i: f"export: the process writing {', '.join(groups[i])}",
        hint="rerun with export.workers=1 to write every file in one process",
    )


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    export: ExportSettings = cfg.export
    hf, flat = export.huggingface, export.flat_images
    bench = BuiltBenchmark(paths)
    final = paths.release
    out = final.with_name(final.name + ".partial")  # built aside, swapped in only when complete
    if out.exists():
        shutil.rmtree(out)
    img_root = out / "release_images"
    for folder in (FLAT_FOLDER,) if flat else ("needle_images", "haystack_images"):
        (img_root / folder).mkdir(parents=True)
    if hf:
        (out / "hf").mkdir()
    lengths = sorted(bench.lengths(), key=length_tokens)
    evidence_imgs = {i for q in bench.questions.values() for i in q.evidence_image_ids}
    files = release_files(bench, lengths, evidence_imgs, flat)
    for image_id, rel in files.items():
        shutil.copyfile(bench.resolve_image(image_id), img_root / rel)
    jobs: dict[str, Callable[[], None]] = {ln: partial(write_length, bench, out, ln, files, hf) for ln in lengths}
    costs = {ln: float(length_tokens(ln)) for ln in lengths}  # a length's files grow with its histories
    if hf:
        rels = {rel: img_root / rel for rel in files.values()}
        jobs["images"] = partial(write_images_parquet, rels, out / "hf" / "images.parquet")
        costs["images"] = min(costs.values(), default=1.0) / 4  # a copy of files already written
    write_files(jobs, costs, export.processes())
    write_json(out / "agent_subset_195.json", agent_subset(list(bench.questions.values())))

    def image_file(image_id: str) -> str:
        return files.get(image_id) or release_file(bench.images[image_id], True, flat)

    write_jsonl(out / ANSWER_KEY, [answer_key_row(q, image_file) for _, q in sorted(bench.questions.items())])
    card = release_card(
        flat=flat, lengths=lengths, n_questions=len(bench.questions), n_images=len(files), huggingface=hf
    )
    (out / CARD).write_text(card, encoding="utf-8")
    arts = hash_tree(out)
    write_manifest(
        out,
        "export",
        {"format": "memlens-official-1.0"},
        arts,
        code=(__name__,),
        extra={
            "images": len(files),
            "needle_images": len([i for i in files if i in evidence_imgs]),
            "image_layout": "flat" if flat else "official",
        },
    )
    # swap by renames: deleting the old release (slow at paper scale) happens only once the new one
    # is in place, so an interruption never leaves a half-deleted release
    old = final.with_name(final.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        final.rename(old)
    out.rename(final)
    if old.exists():
        shutil.rmtree(old)
    log.info("export: %d lengths, %d images -> %s", len(bench.lengths()), len(files), final)
