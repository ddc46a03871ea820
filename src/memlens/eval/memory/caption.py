"""The ``caption`` adapter: each image replaced by a caption, ``[image: <caption>]``.

Two backends, both cached by (image hash, adapter id); the id names the backend, the model and
the prompt version, so a changed prompt or model never reuses old captions:

- ``blip2``: BLIP-2 through transformers from a LOCAL folder (``model_dir``; nothing is
  downloaded). Greedy decoding, so captions are deterministic. id:
  ``caption/blip2-<folder name>-<config hash>/<prompt version>``.
- ``openai``: any OpenAI-compatible VLM endpoint (vLLM, an API) through
  :class:`memlens.core.http.OpenAICompatibleClient` (retries, concurrency; the API key only from
  the environment variable named by ``api_key_env``). id:
  ``caption/openai-<model>/<prompt version>``. An image the endpoint fails on after its retries
  raises :class:`CaptionError` naming it; captions already received stay cached.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memlens.core.errors import ConfigError, MemLensError
from memlens.core.http import OpenAICompatibleClient, OpenAICompatibleConfig
from memlens.core.registry import component
from memlens.eval.memory.cache import CachedAdapter, ImageInput

#: the captioning instruction (our words) and its version (part of the adapter id)
CAPTION_PROMPT = (
    "Describe this image for someone who cannot see it. Copy every piece of text, number, date, time, "
    "price and name shown exactly, and list the objects with their colours and positions. Be concise."
)
PROMPT_VERSION = "p1"
CAPTION_BACKENDS = ("blip2", "openai")


class CaptionError(MemLensError):
    """A captioning backend failed on an image."""


def format_caption(text: str) -> str:
    text = " ".join(str(text).split())
    return f"[image: {text}]" if text else "[image: (no caption)]"


@component("adapter", "caption")
class CaptionAdapter(CachedAdapter):
    """Captions from BLIP-2 (transformers) or an OpenAI-compatible endpoint; see the module doc."""

    @classmethod
    def create(cls, *, cache_dir: Path | None = None, fallback_dirs: Sequence[Path] = (), **options: Any):
        return cls.from_options(cache_dir, fallback_dirs=fallback_dirs, **options)

    def __init__(
        self, cache_dir: Path | None, *, backend: str, describe, adapter_id: str, fallback_dirs: Sequence[Path] = ()
    ):
        self.id = adapter_id
        super().__init__(cache_dir, fallback_dirs)
        self.backend = backend
        self._describe_fn = describe

    @classmethod
    def from_options(
        cls, cache_dir: Path | None, *, backend: str = "blip2", fallback_dirs: Sequence[Path] = (), **options: Any
    ) -> CaptionAdapter:
        if backend not in CAPTION_BACKENDS:
            raise ConfigError(f"unknown caption backend {backend!r} (known: {', '.join(CAPTION_BACKENDS)})")
        cap = Blip2Captioner(**options) if backend == "blip2" else EndpointCaptioner(**options)
        return cls(cache_dir, backend=backend, describe=cap, adapter_id=cap.id, fallback_dirs=fallback_dirs)

    def _describe(self, images: Sequence[ImageInput]) -> list[str]:
        got = self._describe_fn(images)
        errors = [(im, t) for im, t in zip(images, got) if isinstance(t, Exception)]
        if errors:  # keep what was captioned, then name the first failure
            for im, t in zip(images, got):
                if not isinstance(t, Exception) and self.cache is not None:
                    self.cache.put(im.sha256, format_caption(t))
            im, exc = errors[0]
            raise CaptionError(f"caption ({self.id}) failed on {len(errors)} of {len(images)} images; first: {exc}")
        return [format_caption(t) for t in got]


class Blip2Captioner:
    """BLIP-2 from a local folder (``save_pretrained`` layout with its processor)."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        prompt: str | None = None,
        max_new_tokens: int = 40,
        batch_size: int = 4,
        device: str = "cpu",
    ):
        self.model_dir = Path(model_dir)
        cfg = self.model_dir / "config.json"
        if not cfg.is_file():
            raise ConfigError(f"caption backend blip2: {cfg} not found (model_dir must be a local BLIP-2 folder)")
        h = hashlib.sha256(cfg.read_bytes()).hexdigest()[:8]
        self.prompt = prompt
        ptag = PROMPT_VERSION if prompt is None else "p-" + hashlib.sha256(prompt.encode()).hexdigest()[:8]
        self.id = f"caption/blip2-{self.model_dir.name}-{h}-t{max_new_tokens}/{ptag}"
        self.max_new_tokens = max_new_tokens
        self.batch_size = max(1, int(batch_size))
        self.device = device
        self._model = None
        self._processor = None

    def _load(self):
        if self._model is None:
            from transformers import Blip2ForConditionalGeneration, Blip2Processor

            self._processor = Blip2Processor.from_pretrained(str(self.model_dir))
            self._model = Blip2ForConditionalGeneration.from_pretrained(str(self.model_dir)).to(self.device).eval()
        return self._model, self._processor

    def __call__(self, images: Sequence[ImageInput]) -> list[str]:
        import torch
        from PIL import Image

        model, proc = self._load()
        out: list[str] = []
        for i in range(0, len(images), self.batch_size):
            batch = images[i : i + self.batch_size]
            pil = []
            for im in batch:
                with Image.open(im.path) as f:
                    pil.append(f.convert("RGB"))
            kwargs = {"images": pil, "return_tensors": "pt"}
            if self.prompt:
                kwargs["text"] = [self.prompt] * len(pil)
            enc = proc(**kwargs).to(self.device)
            with torch.no_grad():
                ids = model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False)
            if self.prompt and "input_ids" in enc:
                ids = ids[:, enc["input_ids"].shape[1] :]
            out += [t.strip() for t in proc.batch_decode(ids, skip_special_tokens=True)]
        return out


class EndpointCaptioner:
    """Captions from an OpenAI-compatible chat endpoint (one request per image, concurrent)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        prompt: str | None = None,
        concurrency: int = 8,
        max_new_tokens: int = 256,
        timeout_s: float = 120,
        max_retries: int = 3,
        max_image_side: int | None = 800,
        progress: bool = True,
    ):
        self.config = OpenAICompatibleConfig(
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            concurrency=concurrency,
            max_new_tokens=max_new_tokens,
            temperature=0.0,
            timeout_s=timeout_s,
            max_retries=max_retries,
            max_image_side=max_image_side,
        )
        self.prompt = prompt or CAPTION_PROMPT
        ptag = PROMPT_VERSION if prompt is None else "p-" + hashlib.sha256(prompt.encode()).hexdigest()[:8]
        self.id = f"caption/openai-{model}-s{max_image_side}/{ptag}"
        self.progress = progress

    def messages(self, im: ImageInput) -> list[dict]:
        return [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": str(im.path)}},
                    {"type": "text", "text": self.prompt},
                ],
            }
        ]

    def __call__(self, images: Sequence[ImageInput]) -> list[str]:
        results: dict[int, Any] = {}
        OpenAICompatibleClient(self.config).run_many(
            [(i, self.messages(im)) for i, im in enumerate(images)],
            lambda k, r: results.__setitem__(k, r),
            progress=self.progress and len(images) > 1,
            desc="caption",
        )
        out: list[str | CaptionError] = []
        for i, im in enumerate(images):
            r = results[i]
            if r.ok:
                out.append(r.text or "")
            else:
                out.append(
                    CaptionError(
                        f"endpoint {self.config.base_url} ({self.config.model}), image {im.path} "
                        f"({im.sha256[:12]}): {r.error}"
                    )
                )
        return out
