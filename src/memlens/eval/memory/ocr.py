"""The ``ocr`` adapter: the text drawn on an image, read by rapidocr 3.10 with its bundled ONNX
models (PP-OCRv6 det/rec small + the mobile angle classifier), on CPU, offline.

rapidocr returns one box per text segment ("Coffee" and "4.50" separately); segments are grouped
into lines by their vertical position and ordered left to right, lines top to bottom. The text an
agent stores is ``[image; text read: line 1 | line 2 | ...]`` (``[image; no text read]`` when nothing
was found). Only the default models are used: any other model would be downloaded at first use.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from memlens.core.errors import ImageError
from memlens.core.registry import component
from memlens.eval.memory.cache import CachedAdapter, ImageInput

log = logging.getLogger(__name__)

#: version of the text format this adapter produces (part of its id and cache key)
OCR_FORMAT_VERSION = "v1"


def rapidocr_version() -> str:
    from importlib.metadata import version

    return version("rapidocr")


def group_lines(boxes, texts, scores=None, *, min_score: float = 0.5) -> list[str]:
    """Text segments grouped into lines: a segment joins the line whose vertical centre is within
    half a line height of its own; lines top to bottom, segments left to right."""
    segs = []
    for i, (box, text) in enumerate(zip(boxes, texts)):
        text = str(text).strip()
        if not text or (scores is not None and float(scores[i]) < min_score):
            continue
        ys = [float(p[1]) for p in box]
        xs = [float(p[0]) for p in box]
        segs.append(((min(ys) + max(ys)) / 2, max(1.0, max(ys) - min(ys)), min(xs), text))
    segs.sort(key=lambda s: (s[0], s[2]))
    lines: list[list[tuple]] = []
    for seg in segs:
        if lines:
            cy = sum(s[0] for s in lines[-1]) / len(lines[-1])
            h = sum(s[1] for s in lines[-1]) / len(lines[-1])
            if abs(seg[0] - cy) <= 0.5 * max(h, seg[1]):
                lines[-1].append(seg)
                continue
        lines.append([seg])
    return [" ".join(s[3] for s in sorted(line, key=lambda s: s[2])) for line in lines]


def format_ocr(lines: Sequence[str]) -> str:
    return f"[image; text read: {' | '.join(lines)}]" if lines else "[image; no text read]"


@component("adapter", "ocr")
class OCRAdapter(CachedAdapter):
    """rapidocr over each image (cached by image hash and adapter id); ``images_per_s`` after a run."""

    @classmethod
    def create(cls, *, cache_dir: Path | None = None, fallback_dirs: Sequence[Path] = (), **options):
        return cls(cache_dir, fallback_dirs=fallback_dirs, **options)

    def __init__(
        self,
        cache_dir: Path | None,
        *,
        min_score: float = 0.5,
        progress: bool = True,
        fallback_dirs: Sequence[Path] = (),
    ):
        # a non-default score threshold reads other text: another id, so another cache entry
        score = "" if float(min_score) == 0.5 else f"-s{float(min_score):g}"
        self.id = f"ocr/rapidocr-{rapidocr_version()}{score}/{OCR_FORMAT_VERSION}"
        super().__init__(cache_dir, fallback_dirs)
        self.min_score = min_score
        self.progress = progress
        self._engine = None
        self.seconds = 0.0

    @property
    def engine(self):
        if self._engine is None:
            try:
                from rapidocr import RapidOCR
            except ImportError as exc:  # pragma: no cover - depends on the installed extras
                raise ImportError("the ocr adapter needs rapidocr and onnxruntime (make install-agents)") from exc
            self._engine = RapidOCR(params={"Global.log_level": "error"})
        return self._engine

    def read_lines(self, path: Path) -> list[str]:
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(path) as im:
                rgb = im.convert("RGB")
        except (OSError, UnidentifiedImageError) as exc:
            raise ImageError(path, f"cannot be read for OCR: {exc}") from None
        import numpy as np

        out = self.engine(np.asarray(rgb)[:, :, ::-1])  # rapidocr takes BGR arrays (OpenCV order)
        if out is None or out.boxes is None or out.txts is None:
            return []
        return group_lines(out.boxes, out.txts, out.scores, min_score=self.min_score)

    def _describe(self, images: Sequence[ImageInput]) -> list[str]:
        import time

        t0 = time.perf_counter()
        texts = [format_ocr(self.read_lines(im.path)) for im in images]
        self.seconds += time.perf_counter() - t0
        return texts

    @property
    def images_per_s(self) -> float | None:
        return self.stats["calls"] / self.seconds if self.seconds > 0 else None
