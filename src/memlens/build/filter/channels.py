"""Relevance channels of the filter stage (the paper's multi-channel relevance filter).

A channel scores how well an image matches what was requested. ``metadata`` works offline on
generated images; ``clip`` and ``siglip`` score image-text alignment with open_clip models whose
weights must be available locally (they are never downloaded at run time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from memlens.core.errors import ConfigError
from memlens.core.schema import ImageRecord


class RelevanceScorer(Protocol):
    name: str
    threshold: float

    def score(self, path: Path, rec: ImageRecord, request: dict) -> float: ...


def _flatten(v) -> list[str]:
    if isinstance(v, dict):
        return [s for x in v.values() for s in _flatten(x)]
    if isinstance(v, (list, tuple)):
        return [s for x in v for s in _flatten(x)]
    return [str(v)]


class MetadataChannel:
    """Share of the requested constraint values (strings, numbers) present in the image's ground
    truth: a rendered image that does not show what its question needs scores below 1."""

    name = "metadata"

    def __init__(self, threshold: float = 0.999):
        self.threshold = threshold

    def score(self, path: Path, rec: ImageRecord, request: dict) -> float:
        wanted = [w for w in _flatten(request.get("constraints", {})) if w not in ("True", "False", "None")]
        if not wanted:
            return 1.0
        truth = " ".join(_flatten(rec.truth)).lower()
        return sum(w.lower() in truth for w in wanted) / len(wanted)


class OpenClipChannel:  # pragma: no cover - needs local weights
    """CLIP/SigLIP image-text alignment (cosine of normalized embeddings) via open_clip, loading a
    local checkpoint only (``pretrained`` must be a file path)."""

    def __init__(self, name: str, model: str, pretrained: str, threshold: float = 0.30):
        self.name, self.threshold = name, threshold
        if not Path(pretrained).is_file():
            raise ConfigError(f"filter channel {name}: weights file {pretrained!r} not found (no downloads)")
        import open_clip
        import torch

        self._torch = torch
        self.model, _, self.preprocess = open_clip.create_model_and_transforms(model, pretrained=pretrained)
        self.tokenizer = open_clip.get_tokenizer(model)
        self.model.eval()

    def score(self, path: Path, rec: ImageRecord, request: dict) -> float:
        from PIL import Image

        query = request.get("query") or rec.truth.get("query") or rec.family
        with self._torch.no_grad(), Image.open(path) as im:
            img = self.preprocess(im.convert("RGB")).unsqueeze(0)
            ie = self.model.encode_image(img)
            te = self.model.encode_text(self.tokenizer([query]))
            ie = ie / ie.norm(dim=-1, keepdim=True)
            te = te / te.norm(dim=-1, keepdim=True)
            return float((ie @ te.T).item())


def build_channels(spec: list) -> list[RelevanceScorer]:
    out: list[RelevanceScorer] = []
    for item in spec:
        if isinstance(item, str):
            item = {"name": item}
        item = dict(item)
        name = item.pop("name")
        if name == "metadata":
            out.append(MetadataChannel(**item))
        elif name in ("clip", "siglip"):
            out.append(OpenClipChannel(name, **item))
        else:
            raise ConfigError(f"unknown filter channel {name!r} (known: metadata, clip, siglip)")
    return out
