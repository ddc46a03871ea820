"""``TransformersModel``: a local model through Hugging Face transformers, for users without a server.

The prompt is the protocol's (:func:`~memlens.eval.prompt.build_messages`), converted to the
processor's chat format (``{"type": "image", "image": <PIL image>}`` blocks) and rendered with the
model's own chat template (``processor.apply_chat_template(..., add_generation_prompt=True)``);
decoding is greedy (``do_sample=False``) with ``max_new_tokens``. Loading:
``AutoProcessor.from_pretrained`` and ``AutoModelForImageTextToText.from_pretrained`` (or
``model_class``, any ``transformers`` class name, for models registered elsewhere), from
``model_path`` or ``hf_id``. With ``HF_HUB_OFFLINE=1`` (set by the ``memlens`` CLI) only local
files or the local Hugging Face cache are used.

Images are opened, converted to RGB and downscaled so the longest side is at most
``max_image_side`` (the same rule as the OpenAI-compatible path); decoded images are kept in a small
LRU cache so a history shared by several questions is decoded once.

Usage: ``memlens evaluate model=transformers model.model_path=/models/Qwen3-VL-8B-Instruct``.
Install the optional stack first (``pip install -r requirements-ml.lock -c requirements.lock``).
This backend is for small models and smoke tests: a 128K-token history on one GPU needs a lot of
memory and time; use ``vllm_server`` for real runs. Recorded per item: prompt tokens (input ids
after image expansion), completion tokens, latency.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import model_validator

from memlens.core.errors import ConfigError
from memlens.core.items import EvalItem
from memlens.core.registry import component
from memlens.core.settings import DeviceMap, PositiveInt, configured, operational
from memlens.eval.prompt import LAYOUTS, build_messages
from memlens.eval.systems.base import DescriptiveSettings, Model, ModelOutput

log = logging.getLogger(__name__)

__all__ = ["TransformersModel", "to_hf_messages"]


def to_hf_messages(messages: list[dict], load_image, image_key: str = "image") -> list[dict]:
    """Protocol messages -> processor chat messages (text blocks kept, image refs loaded)."""
    out = []
    for m in messages:
        content = []
        for b in m["content"]:
            if b.get("type") == "text":
                if b["text"].strip():
                    content.append({"type": "text", "text": b["text"]})
            elif b.get("type") == "image_url":
                ref = b["image_url"]["url"] if isinstance(b["image_url"], dict) else b["image_url"]
                content.append({"type": "image", image_key: load_image(ref)})
        if content:
            out.append({"role": m["role"], "content": content})
    return out


class TransformersSettings(DescriptiveSettings):
    """``model`` with ``_target_: memlens.eval.systems.hf_transformers.TransformersModel``."""

    model_path: str | None = None
    revision: str | None = None
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    device: str = operational("auto")  # auto | cpu | cuda | cuda:N
    device_map: DeviceMap = operational(None)  # e.g. auto (accelerate sharding)
    max_new_tokens: PositiveInt = 2048
    max_image_side: PositiveInt | None = 800
    layout: Literal[LAYOUTS] = "messages"  # type: ignore[valid-type]
    label_images: bool = False
    system_prefix: str | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    model_class: str = "AutoModelForImageTextToText"
    image_key: str = "image"
    trust_remote_code: bool = False
    attn_implementation: str | None = None
    image_cache_size: PositiveInt = 256

    @model_validator(mode="after")
    def _source(self) -> TransformersSettings:
        if not (self.model_path or self.hf_id):
            raise ValueError("transformers needs model_path or hf_id")
        return self


@configured
@component("model", "transformers")
class TransformersModel(Model):
    """A vision-language model run in-process with transformers (greedy decoding).

    Args:
        name: system name.
        model_path: local checkpoint folder (preferred); hf_id: Hub id used when no path is given.
        revision: Hub revision.
        dtype: ``auto`` (checkpoint dtype), ``bfloat16``, ``float16`` or ``float32``.
        device: ``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda``, ``cuda:1`` ...;
            ``device_map`` (e.g. ``auto``) shards a large model with accelerate instead.
        max_new_tokens: generation budget (2048 direct, 16384 thinking).
        max_image_side: longest image side after resizing (None: full resolution).
        layout, label_images, system_prefix: prompt options.
        chat_template_kwargs: passed to the chat template (e.g. ``{enable_thinking: false}``).
        model_class: transformers class used to load the model.
        image_key: key of image blocks in the chat messages (``image``; ``url`` for some templates).
        trust_remote_code, attn_implementation: passed to ``from_pretrained``.
        image_cache_size: decoded images kept in memory.
        kind: overrides the class's ``kind`` (``lvlm``).
        context_window, thinking, resources, notes, params_total_b, params_active_b: descriptive keys
            (logs, sweep planner, the report's system cards).

    The schema is :class:`TransformersSettings` (``TransformersModel.Config``).
    """

    kind = "lvlm"
    Config = TransformersSettings

    def __init__(
        self,
        name: str,
        model_path: str | None,
        hf_id: str | None,
        *,
        revision: str | None,
        dtype: str,
        device: str,
        device_map: str | Mapping | None,
        max_new_tokens: int,
        max_image_side: int | None,
        layout: str,
        label_images: bool,
        system_prefix: str | None,
        chat_template_kwargs: Mapping[str, Any] | None,
        model_class: str,
        image_key: str,
        trust_remote_code: bool,
        attn_implementation: str | None,
        image_cache_size: int,
        kind: str | None,
        context_window: int | None,
        thinking: bool,
        resources: Mapping[str, Any] | None,
        notes: str | None,
        params_total_b: float | None,
        params_active_b: float | None,
    ):
        super().__init__(
            name,
            kind,
            options=dict(
                model_path=model_path,
                hf_id=hf_id,
                revision=revision,
                dtype=dtype,
                device=device,
                max_new_tokens=max_new_tokens,
                max_image_side=max_image_side,
                layout=layout,
                label_images=label_images,
                model_class=model_class,
                context_window=context_window,
                thinking=thinking,
                resources=dict(resources) if resources is not None else None,
                notes=notes,
                params_total_b=params_total_b,
                params_active_b=params_active_b,
            ),
        )
        if not (model_path or hf_id):
            raise ConfigError(f"model {name!r}: transformers needs model_path or hf_id")
        if layout not in LAYOUTS:
            raise ConfigError(f"model {name!r}: layout must be one of {LAYOUTS}")
        if dtype not in ("auto", "bfloat16", "float16", "float32"):
            raise ConfigError(f"model {name!r}: dtype must be auto, bfloat16, float16 or float32")
        self.source = str(model_path or hf_id)
        self.revision = revision
        self.dtype = dtype
        self.device = device
        self.device_map = device_map
        self.max_new_tokens = int(max_new_tokens)
        self.max_image_side = max_image_side
        self.layout = layout
        self.label_images = bool(label_images)
        self.system_prefix = system_prefix
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.model_class = model_class
        self.image_key = image_key
        self.trust_remote_code = bool(trust_remote_code)
        self.attn_implementation = attn_implementation
        self.image_cache_size = int(image_cache_size)
        self._images: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.processor = None
        self.model = None

    # ------------------------------------------------------------------ loading
    def load(self) -> None:
        """Load processor and model (first call only)."""
        if self.model is not None:
            return
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise ConfigError(
                "the transformers backend needs torch and transformers: "
                "pip install -r requirements-ml.lock -c requirements.lock"
            ) from exc
        cls = getattr(transformers, self.model_class, None)
        if cls is None:
            raise ConfigError(f"model {self.name!r}: transformers has no class {self.model_class!r}")
        common = dict(revision=self.revision, trust_remote_code=self.trust_remote_code)
        t0 = time.perf_counter()
        self.processor = transformers.AutoProcessor.from_pretrained(self.source, **common)
        kwargs: dict[str, Any] = dict(common)
        kwargs["dtype"] = self.dtype if self.dtype == "auto" else getattr(torch, self.dtype)
        if self.attn_implementation:
            kwargs["attn_implementation"] = self.attn_implementation
        if self.device_map is not None:
            kwargs["device_map"] = self.device_map
        model = cls.from_pretrained(self.source, **kwargs)
        if self.device_map is None:
            device = self.device
            if device == "auto":
                device = "cuda" if torch.cuda.is_available() else "cpu"
            model = model.to(device)
        self.model = model.eval()
        log.info(
            "%s: loaded %s (%s) in %.1f s on %s",
            self.name,
            self.source,
            type(model).__name__,
            time.perf_counter() - t0,
            getattr(model, "device", "?"),
        )

    def _load_image(self, ref: str):
        with self._lock:
            img = self._images.get(ref)
            if img is not None:
                self._images.move_to_end(ref)
                return img
        from PIL import Image

        from memlens.core.images import resized_size

        with Image.open(ref) as im:
            img = im.convert("RGB")
        size = resized_size(img.width, img.height, self.max_image_side)
        if size != img.size:
            img = img.resize(size, Image.Resampling.LANCZOS)
        with self._lock:
            self._images[ref] = img
            while len(self._images) > self.image_cache_size:
                self._images.popitem(last=False)
        return img

    # ------------------------------------------------------------------ Model API
    def inputs(self, item: EvalItem, mode: str):
        """Tokenised model inputs (``input_ids``, ``pixel_values`` ...) for ``item`` in ``mode``."""
        self.load()
        messages = build_messages(
            item, mode, layout=self.layout, label_images=self.label_images, system_prefix=self.system_prefix
        )
        chat = to_hf_messages(messages, self._load_image, self.image_key)
        return self.processor.apply_chat_template(
            chat,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
            **self.chat_template_kwargs,
        )

    def generate(self, item: EvalItem, mode: str = "standard") -> ModelOutput:
        import torch

        t0 = time.perf_counter()
        enc = self.inputs(item, mode)
        enc = enc.to(self.model.device)
        n_in = int(enc["input_ids"].shape[1])
        with torch.inference_mode():
            out = self.model.generate(
                **enc, max_new_tokens=self.max_new_tokens, do_sample=False, temperature=None, top_p=None, top_k=None
            )
        new = out[0, n_in:]
        tok = getattr(self.processor, "tokenizer", self.processor)
        eos = {t for t in (tok.eos_token_id, tok.pad_token_id) if t is not None}
        n_out = int(new.shape[0])
        hit_eos = n_out > 0 and int(new[-1]) in eos
        text = tok.decode(new, skip_special_tokens=True)
        return ModelOutput(
            text=text,
            prompt_tokens=n_in,
            completion_tokens=n_out,
            latency_s=time.perf_counter() - t0,
            meta={"finish_reason": "stop" if hit_eos or n_out < self.max_new_tokens else "length"},
        )

    def close(self) -> None:
        self.model = None
        self.processor = None
        self._images.clear()
