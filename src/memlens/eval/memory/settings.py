"""The ``memory`` section's schema: the offline retrieval and storage-fidelity diagnostics of
``memlens diagnose`` (every key has its value in ``conf/memory/default.yaml``; ``adapters`` and
``retrievers`` name components: ``memlens list adapters``, ``memlens list retrievers``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from memlens.core.registry import named
from memlens.core.settings import NonNegInt, PositiveInt, Section

__all__ = ["MemorySettings"]


class MemorySettings(Section):
    """``memory``: the offline retrieval and storage-fidelity diagnostics (``memlens diagnose``)."""

    # text adapters whose stored texts are diagnosed (oracle_caption = ground truth: an upper bound)
    adapters: Annotated[list[str], named("adapter")]
    # retrievers: bm25, dense (bundled MiniLM + faiss), image (needs image_checkpoint), fusion (RRF)
    retrievers: Annotated[list[str], named("retriever")]
    granularity: Literal["session", "turn"]  # one document per session or per turn
    temporal_filter: bool  # only sessions at or before the question date
    subset: Literal["agent", "all"]  # the 195-question agent subset (scaled) or every question
    sample: NonNegInt  # 0: the whole set; N: a seeded draw of N of its questions, types in turn
    lengths: list[str]  # empty: every built length
    ks: list[PositiveInt]  # recall@k cut-offs
    depth: PositiveInt  # sessions retrieved per question (MRR looks this deep)
    caption: dict[str, Any] | None  # options of the caption adapter (backend: blip2 | openai, ...)
    image_checkpoint: str | None  # a LOCAL open_clip checkpoint (image and fusion retrieval)
    image_model: str  # its open_clip architecture
