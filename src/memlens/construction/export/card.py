"""The release card: ``README.md`` beside the dataset files of an export.

It says what each file is and, above all, which fields and paths are labels of the format:
``needle_images/`` (the folder of evidence images), ``has_answer`` (a turn holds evidence) and
``answer_session_ids`` (the evidence sessions), like ``answer_key.jsonl``, are for scoring and
analysis and never to be shown to a system under test. The text depends only on the layout and
the counts it is given, so the export stays byte-identical from run to run.
"""

from __future__ import annotations

CARD = "README.md"

_HEAD = """\
# MemLens release

A benchmark built by MemLens in the layout of the official MEMLENS release: {n_questions}
questions, each at {n_lengths} history length(s) ({lengths}), {n_images} images.

## Files

| file | what it holds |
|---|---|
| `dataset_<length>.json` | a JSON list, one item per question: `question_id`, `question_type`, `question_subtype`, `question`, `answer`, `question_date`, `haystack_dates`, `haystack_session_ids`, `haystack_sessions` (turns: `role`, `content` with one `<image>` per image, `images` [`file`, `image_url`, `blip_caption`], `has_answer`), `answer_session_ids`, `old_answer` (knowledge updates) |
| `release_images/` | the images; an item's `file` is relative to this folder |
| `agent_subset_195.json` | the stratified question subset for memory agents (`n_questions`, `question_ids`, `per_type`, `seed`) |
| `answer_key.jsonl` | per question: evidence (sessions, dates, facts, image files), derivation details, labels |
{hf_row}| `manifest.json` | the SHA-256 of every file |

## Images

{images}

## Labels of the format: never show them to a system

The format marks where the evidence is, for scoring and analysis:

* `needle_images/`: the folder of the images of evidence sessions (`haystack_images/` holds the rest);
* `has_answer`: true on a turn that holds evidence;
* `answer_session_ids`: the sessions that hold the evidence;
* `answer_key.jsonl`, `answer` and `old_answer`: the answers and how they follow.

These are labels, not features a system may see. A detector that reads nothing but an image's path
tells evidence from haystack images with ROC-AUC 0.82-0.86, so a system that is shown a path (a file
name, a folder, a URL made from one) or any of these fields can find the evidence without reading a
history. Give a system the question, its date and the sessions' dates, roles, text and image bytes,
nothing else. MemLens's own loader does this: a system receives images under the SHA-256 of their
bytes, in a folder of its own, and never a release path or an evidence flag. A release meant to be
handed as files to a system that ingests them should be exported with `export.flat_images=true`.
"""

_OFFICIAL = """\
The official layout: evidence images in `release_images/needle_images/`, the others in
`release_images/haystack_images/`, each named by the first 12 hex digits of the SHA-256 of its bytes.
The folder is a label of the format (below). `memlens export export.flat_images=true` writes
a release whose paths tell nothing."""

_FLAT = """\
Flat layout (`export.flat_images=true`): every image in `release_images/images/`, named by the SHA-256
of its bytes (`images/<sha256>.<ext>`), so no path tells an evidence image from a haystack image. The
official loaders read it as they read the official layout (`file` is relative to `release_images/`)."""


def release_card(*, flat: bool, lengths: list[str], n_questions: int, n_images: int, huggingface: bool) -> str:
    """The text of ``README.md`` for one export."""
    hf_row = (
        "| `hf/` | the same items as Parquet for `datasets.load_dataset`, and `images.parquet` |\n"
        if huggingface
        else ""
    )
    return _HEAD.format(
        n_questions=n_questions,
        n_lengths=len(lengths),
        lengths=", ".join(lengths),
        n_images=n_images,
        hf_row=hf_row,
        images=_FLAT if flat else _OFFICIAL,
    )
