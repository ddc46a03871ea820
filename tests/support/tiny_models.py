"""Tiny random-weight vision-language models built from a config in a folder, for tests.

Nothing is downloaded: tokenizers are built or trained locally on a few sentences, the weights are
random (seeded), and each folder loads with ``from_pretrained`` like a real checkpoint
(stack-notes §5).

* :func:`build_tiny_qwen2vl`: Qwen2-VL (model + byte-level BPE tokenizer + processor + a
  hand-written Qwen2-VL-style chat template), for the transformers model backend.
* :func:`build_tiny_blip2`: BLIP-2 with an OPT decoder and a word-level tokenizer (its captions are
  made of :data:`BLIP2_WORDS`), for the caption filter channel and the caption input adapter.
"""

from __future__ import annotations

from pathlib import Path

SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_CORPUS = [
    "Provide answers based on the given conversation history.",
    "Question Date: 2024/05/31 (Fri) 07:58 Question: What was the price?",
    "=== Session 1 (Date: 2024/05/01 (Wed) 10:00) === I snapped a photo of the receipt.",
    "The assistant answered with a short list of tips about cameras, clocks and tickets.",
    "Insufficient information. Directly output the answer with no extra output.",
]


def build_tiny_qwen2vl(folder: str | Path, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessorPil,
    )

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(_CORPUS * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = CHAT_TEMPLATE
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}

    cfg = Qwen2VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=32768,
            rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e4},
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
        ),
        vision_config=dict(
            depth=2,
            embed_dim=32,
            hidden_size=64,
            num_heads=2,
            in_chans=3,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(cfg).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(folder)

    image_processor = Qwen2VLImageProcessorPil(min_pixels=28 * 28, max_pixels=56 * 56)
    try:  # the full processor needs a video processor, which needs torchvision
        from transformers import Qwen2VLProcessor, Qwen2VLVideoProcessor

        processor = Qwen2VLProcessor(
            image_processor=image_processor,
            tokenizer=tokenizer,
            video_processor=Qwen2VLVideoProcessor(),
            chat_template=CHAT_TEMPLATE,
        )
        processor.save_pretrained(folder)
    except (ImportError, TypeError, ValueError):
        tokenizer.save_pretrained(folder)
        image_processor.save_pretrained(folder)
    return folder


#: the BLIP-2 tokenizer's vocabulary (special tokens first): every caption is made of these words
BLIP2_WORDS = ["<pad>", "</s>", "<unk>", "<image>", "a", "photo", "of", "red", "car", "street", "cat", "tree"]


def build_tiny_blip2(folder: str | Path, seed: int = 0) -> Path:
    """A random-weight BLIP-2 (OPT decoder) with a word-level tokenizer, saved like a real model."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        Blip2Config,
        Blip2ForConditionalGeneration,
        Blip2Processor,
        BlipImageProcessor,
        PreTrainedTokenizerFast,
    )

    folder = Path(folder)
    words = BLIP2_WORDS
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    ptok = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>", bos_token="</s>"
    )
    ptok.image_token = "<image>"
    small = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}
    text = {"model_type": "opt", "vocab_size": len(words), "hidden_size": 32, "num_hidden_layers": 1}
    text |= {"ffn_dim": 64, "num_attention_heads": 2, "word_embed_proj_dim": 32, "max_position_embeddings": 64}
    cfg = Blip2Config(
        vision_config={**small, "image_size": 32, "patch_size": 8},
        qformer_config={**small, "encoder_hidden_size": 32, "vocab_size": len(words)},
        text_config={**text, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 1},
        num_query_tokens=4,
        image_token_index=words.index("<image>"),
    )
    torch.manual_seed(seed)
    Blip2ForConditionalGeneration(cfg).save_pretrained(folder)
    ip = BlipImageProcessor(size={"height": 32, "width": 32})
    Blip2Processor(image_processor=ip, tokenizer=ptok, num_query_tokens=4).save_pretrained(folder)
    return folder
