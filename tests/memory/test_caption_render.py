"""The caption adapter (a tiny random-weight BLIP-2 built from a config here; an OpenAI-compatible
endpoint: the local stand-in server), the render adapter and image-embedding retrieval (a
random-weight open_clip checkpoint saved here)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from PIL import Image

from memlens.eval.memory.adapters import ImageInput, build_adapter
from memlens.eval.memory.caption import CaptionError
from memlens.eval.memory.retrieval import build_retriever, session_docs
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.tiny_models import build_tiny_blip2


def _png(path: Path, color) -> ImageInput:
    Image.new("RGB", (64, 48), color).save(path)
    return ImageInput(hashlib.sha256(path.read_bytes()).hexdigest(), path)


@pytest.fixture(scope="module")
def tiny_blip2(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    return build_tiny_blip2(tmp_path_factory.mktemp("blip2") / "tiny-blip2")


def test_blip2_captions_are_deterministic_cached_and_versioned(tiny_blip2, tmp_path):
    ims = [_png(tmp_path / "r.png", "red"), _png(tmp_path / "b.png", "blue")]
    a = build_adapter("caption", cache_dir=tmp_path / "c", backend="blip2", model_dir=tiny_blip2, max_new_tokens=6)
    assert a.id.startswith("caption/blip2-tiny-blip2-") and a.id.endswith("/p1")
    texts = a.describe_images(ims)
    assert all(t.startswith("[image: ") and t.endswith("]") for t in texts) and a.stats["calls"] == 2
    again = build_adapter("caption", cache_dir=tmp_path / "c", backend="blip2", model_dir=tiny_blip2, max_new_tokens=6)
    assert again.describe_images(ims) == texts and again.stats["calls"] == 0
    fresh = build_adapter(
        "caption", cache_dir=tmp_path / "other", backend="blip2", model_dir=tiny_blip2, max_new_tokens=6
    )
    assert fresh.describe_images(ims) == texts  # greedy: the same captions recomputed
    longer = build_adapter("caption", cache_dir=tmp_path / "c", backend="blip2", model_dir=tiny_blip2, max_new_tokens=7)
    assert longer.id != a.id  # another decoding setting is another cache entry


def test_blip2_needs_a_local_folder(tmp_path):
    from memlens.core.errors import ConfigError

    with pytest.raises(ConfigError, match="local BLIP-2 folder"):
        build_adapter("caption", cache_dir=tmp_path, backend="blip2", model_dir=tmp_path / "nope")
    with pytest.raises(ConfigError, match="unknown caption backend"):
        build_adapter("caption", cache_dir=tmp_path, backend="magic")


def test_endpoint_captions_send_the_image_and_cache_what_succeeded(tmp_path):
    ims = [_png(tmp_path / "r.png", "red"), _png(tmp_path / "g.png", "green")]

    def responder(body):
        blocks = body["messages"][0]["content"]
        assert blocks[0]["image_url"]["url"].startswith("data:image/png;base64,")
        return "A plain   coloured\nrectangle."

    with FakeOpenAIServer(responder=responder) as server:
        opts = dict(backend="openai", base_url=server.base_url, model="tiny-vlm", max_retries=0, progress=False)
        a = build_adapter("caption", cache_dir=tmp_path / "c", **opts)
        assert a.id == "caption/openai-tiny-vlm-s800/p1"
        assert a.describe_images(ims) == ["[image: A plain coloured rectangle.]"] * 2
        assert len(server.requests) == 2 and server.requests[0]["model"] == "tiny-vlm"
        again = build_adapter("caption", cache_dir=tmp_path / "c", **opts)
        assert again.describe_images(ims) == a.describe_images(ims) and len(server.requests) == 2
    third = _png(tmp_path / "k.png", "black")
    with FakeOpenAIServer(responder=lambda b: "ok", faults=["ok", "500"]) as server:
        b = build_adapter("caption", cache_dir=tmp_path / "d", **opts | {"base_url": server.base_url})
        with pytest.raises(CaptionError, match=r"failed on 1 of 2 images; first: endpoint .*(k|r)\.png"):
            b.describe_images([ims[0], third])
        # the one that succeeded is cached: a rerun asks only for the failed one
        c = build_adapter("caption", cache_dir=tmp_path / "d", **opts | {"base_url": server.base_url})
        c.describe_images([ims[0], third])
        assert c.stats == {"calls": 1, "hits": 1} and len(server.requests) == 3


@dataclass
class T:
    role: str
    content: str
    images: list = field(default_factory=list)


def test_render_draws_sessions_as_pages_cached_and_byte_identical(tmp_path):
    img = _png(tmp_path / "r.png", "red")
    turns = [T("user", "Look at this <image> from the cafe.", [img.sha256]), T("assistant", "Nice colour! " * 40)]
    resolve = {img.sha256: img.path}.__getitem__
    a = build_adapter("render", cache_dir=tmp_path / "c", width=640, max_height=300)
    pages = a.render_session("2024/05/31 (Fri) 07:58", turns, resolve, session_id="s1")
    assert len(pages) >= 2 and all(p.is_file() for p in pages) and a.stats["calls"] == 1
    with Image.open(pages[0]) as im:
        assert im.width == 640 and im.getpixel((320, 5)) != (0, 0, 0)
    b = build_adapter("render", cache_dir=tmp_path / "c", width=640, max_height=300)
    assert b.render_session("2024/05/31 (Fri) 07:58", turns, resolve) == pages and b.stats == {"calls": 0, "hits": 1}
    other = build_adapter("render", cache_dir=tmp_path / "other", width=640, max_height=300)
    fresh = other.render_session("2024/05/31 (Fri) 07:58", turns, resolve)
    assert [p.read_bytes() for p in fresh] == [p.read_bytes() for p in pages]
    moved = other.render_session("2024/06/01 (Sat) 07:58", turns, resolve)
    assert moved != fresh  # the date is drawn: another key
    assert a.describe_images([img]) == [str(img.path)]


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    open_clip = pytest.importorskip("open_clip")
    import torch

    d = tmp_path_factory.mktemp("clip")
    cfg = {
        "embed_dim": 16,
        "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
    }
    (d / "memlens-test-clip.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(d / "memlens-test-clip.json")
    torch.manual_seed(0)
    model = open_clip.create_model("memlens-test-clip", pretrained=None)
    torch.save({"state_dict": model.state_dict()}, d / "ckpt.pt")
    return d


@dataclass
class S:
    session_id: str
    date: str
    turns: list


def test_image_retrieval_from_a_local_checkpoint(tiny_clip, tmp_path):
    red, blue = _png(tmp_path / "r.png", "red"), _png(tmp_path / "b.png", "blue")
    hist = [
        S("s1", "2024/01/01 (Mon) 10:00", [T("user", "photo <image>", [red.sha256])]),
        S("s2", "2024/01/02 (Tue) 10:00", [T("user", "a receipt from the bakery")]),
        S("s3", "2024/01/03 (Wed) 10:00", [T("user", "another <image>", [blue.sha256])]),
    ]
    paths = {red.sha256: red.path, blue.sha256: blue.path}.__getitem__
    opts = dict(
        checkpoint=tiny_clip / "ckpt.pt",
        model_name="memlens-test-clip",
        model_config=tiny_clip / "memlens-test-clip.json",
        image_path=paths,
    )
    r = build_retriever("image", **opts)
    r.index(session_docs(hist, None))
    hits = r.search("a red photo", 5)
    assert sorted(h.session_id for h in hits) == ["s1", "s3"]  # a session without images is never returned
    r2 = build_retriever("image", **opts)
    r2.index(session_docs(hist, None))
    assert r2.search("a red photo", 5) == hits  # deterministic from the checkpoint
    assert [h.session_id for h in r.search("a red photo", 5, before="2024/01/02 (Tue) 00:00")] == ["s1"]
    f = build_retriever("fusion", parts=[("bm25", {}), ("image", opts)])
    f.index(session_docs(hist, None))
    hits = {h.session_id: h.score for h in f.search("bakery receipt", 3)}
    assert set(hits) == {"s1", "s2", "s3"}  # text-only s2 from bm25, image sessions from the image part
    assert hits["s2"] == pytest.approx(1 / 61) and max(hits["s1"], hits["s3"]) == pytest.approx(1 / 61)
