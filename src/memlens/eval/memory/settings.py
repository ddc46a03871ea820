"""The ``memory`` section's schema: the offline retrieval and storage-fidelity diagnostics of
``memlens diagnose`` (every key has its value in ``conf/memory/default.yaml``; ``adapters`` and
``retrievers`` name components: ``memlens list adapters``, ``memlens list retrievers``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from memlens.core.registry import named
from memlens.core.settings import Fraction, NonNegFloat, NonNegInt, PositiveInt, Section

__all__ = ["MemorySettings", "OCRSettings"]


class OCRSettings(Section):
    """``memory.ocr``: how the ``ocr`` adapter reads (:mod:`memlens.eval.memory.ocr`). The first seven
    change the text, so the adapter's id (its cache key) names each that differs from rapidocr's own
    default; ``workers`` does not (threads, processes and the memory arena read the same text)."""

    # what runs rapidocr's bundled ONNX models: openvino (about 25% less CPU per image than
    # onnxruntime on these models, one thread per worker) or onnxruntime (rapidocr's default)
    engine: Literal["openvino", "onnxruntime"]
    # the models' arithmetic: auto (bf16 where the CPU has bfloat16 units, AVX512-BF16 / AMX, else
    # f32), f32 (one text on every CPU) or bf16 (openvino only: ~1.8x faster, a slightly different
    # text); the precision that ran is in the adapter id, so in the cache key and the report
    precision: Literal["auto", "f32", "bf16"]
    # the detector's input: limit_type max scales the longer side down to limit_side_len (never up);
    # min scales the shorter side UP to it (rapidocr's default, min 736: a 540x960 screenshot is
    # detected at 736x1312, 1.9x the pixels, for text rendered large enough at its own size)
    det_limit_type: Literal["min", "max"]
    det_limit_side_len: PositiveInt
    rec_batch_num: PositiveInt  # text lines per recognition call (sorted by width, padded per batch)
    use_cls: bool  # the 0/180 degree angle classifier (rendered images are upright)
    min_score: Fraction  # recognised segments below this confidence are dropped
    workers: NonNegInt  # processes a batch of images is spread over (0: one per core; 1: in-process)


class MemorySettings(Section):
    """``memory``: the offline retrieval and storage-fidelity diagnostics (``memlens diagnose``)."""

    # text adapters whose stored texts are diagnosed (oracle_caption = ground truth: an upper bound)
    adapters: Annotated[list[str], named("adapter")]
    # retrievers: bm25, dense (bundled MiniLM + faiss), image (needs image_checkpoint), fusion (RRF)
    retrievers: Annotated[list[str], named("retriever")]
    granularity: Literal["session", "turn"]  # one document per session or per turn
    temporal_filter: bool  # only sessions at or before the question date
    subset: Literal["agent", "all"]  # the 195-question agent subset (scaled) or every question
    # auto: stratified by type, sized for a ±margin interval on each type's recall@10; all or 0: the
    # whole set; N: a seeded draw of N of its questions, types in turn (memlens.eval.memory.sampling)
    sample: Literal["auto", "all"] | NonNegInt
    margin: Fraction  # auto: target half-width of a type's recall@10 interval
    confidence: Fraction  # confidence level of the intervals
    # auto: the largest per-question SD of recall@10 the sample is sized for (0.5, the most a score
    # in [0, 1] can have, makes the ±margin a guarantee for every cell)
    planning_sd: NonNegFloat
    lengths: list[str]  # empty: every built length
    ks: list[PositiveInt]  # recall@k cut-offs
    depth: PositiveInt  # sessions retrieved per question (MRR looks this deep)
    # the dense retriever's encoder arithmetic: auto (bf16 where the CPU has bfloat16 units, else
    # f32), f32 (the same vectors on every CPU) or bf16 (1.8x faster, cosine >= 0.9999 to f32);
    # named in the encoder's id, so in the embedding cache's key and the report
    dense_precision: Literal["auto", "f32", "bf16"]
    ocr: OCRSettings  # options of the ocr adapter
    caption: dict[str, Any] | None  # options of the caption adapter (backend: blip2 | openai, ...)
    image_checkpoint: str | None  # a LOCAL open_clip checkpoint (image and fusion retrieval)
    image_model: str  # its open_clip architecture
