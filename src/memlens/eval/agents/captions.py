"""LVLM mode ``caption``: every image of the history replaced by the text of an input adapter.

``memlens evaluate eval.mode=caption eval.caption_adapter=ocr`` (or ``caption``, ``oracle_caption``
...) asks a model the same questions with the adapter text (``[image; text read: ...]``) where each image was. Comparing it
with the ``standard`` run of the same model isolates visual grounding from model capacity: what
the model loses when it sees an adapter's text instead of the pixels is what a text-memory agent
using that adapter can at best keep. The adapter id is part of the system identity, so captions of
different adapters never share answers. Images are given to the adapter by content hash
(:class:`~memlens.eval.agents.view.ImageStore`), as for the agents.
"""

from __future__ import annotations

import logging
from pathlib import Path

from memlens.core.errors import MemLensError
from memlens.core.items import EvalItem
from memlens.eval.agents.view import ImageStore
from memlens.eval.prompt import CaptionedItem

__all__ = ["CaptionMode"]

log = logging.getLogger(__name__)


class CaptionMode:
    """Turns items into :class:`~memlens.eval.prompt.CaptionedItem` (``eval`` = the eval config)."""

    def __init__(self, eval_cfg, paths, benchmark):
        from memlens.eval.agents.runtime import family_lookup, make_adapter

        name = str(eval_cfg.caption_adapter)
        options = dict(eval_cfg.caption_adapter_options)
        self.adapter = make_adapter(name, options, Path(paths.cache), benchmark)
        self.adapter_id = str(self.adapter.id)
        self.images = ImageStore(Path(paths.cache) / "agents" / "images", family_lookup(benchmark))

    def prepare(self, item: EvalItem) -> CaptionedItem:
        """The item with its image texts; an image the adapter cannot read leaves the item without
        texts, so its prompt fails and the item is recorded as failed with the reason."""
        ids = list(dict.fromkeys(item.image_ids))
        try:
            inputs = [self.images.image(i, item.resolve_image) for i in ids]
            texts = self.adapter.describe_images(inputs) if inputs else []
            by_id = {i: str(t) for i, t in zip(ids, texts)}
        except (MemLensError, OSError, ValueError) as exc:
            log.warning("caption mode: question %s: %s", item.question_id, exc)
            by_id = {}
        return CaptionedItem(
            item.question, item.length, item.sessions, item.resolve_image, image_texts=by_id, adapter_id=self.adapter_id
        )
