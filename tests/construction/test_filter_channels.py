"""Filter channels: open_clip from a local random-weight checkpoint, a VLM caption channel and a
VLM/heuristic negative channel, the paper's rule and the best candidate per request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import ImageFilter

from memlens.construction.filter import stage as F
from memlens.construction.filter.channels import MetadataChannel, WatermarkChannel, build_channels
from memlens.core.config import Paths
from memlens.core.errors import ConfigError, DataError
from memlens.core.io import iter_jsonl, read_json, sha256_bytes, write_jsonl
from memlens.core.schema import ImageRecord
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.settings import settings
from tests.support.tiny_models import BLIP2_WORDS, build_tiny_blip2
from tests.web.image_server import encode, pattern_image, watermark

TINY_CLIP = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 4, "layers": 1},
}
LIMITS = {"max_side": 4096, "min_side": 64, "max_pixels": 16_000_000, "max_bytes": 20_000_000}


@pytest.fixture(scope="module")
def clip_ckpt(tmp_path_factory) -> tuple[str, str]:
    """A random-weight open_clip model (tiny ViT config) saved as a local checkpoint."""
    import open_clip
    import torch

    d = tmp_path_factory.mktemp("clip")
    cfg = d / "memlens-tiny-clip.json"
    cfg.write_text(json.dumps(TINY_CLIP))
    open_clip.add_model_config(str(cfg))
    torch.manual_seed(0)
    model = open_clip.create_model("memlens-tiny-clip", pretrained=None)
    ckpt = d / "tiny.pt"
    torch.save(model.state_dict(), ckpt)
    return str(cfg), str(ckpt)


def rec_of(path: Path, family="photo", truth=None) -> ImageRecord:
    return ImageRecord(sha256_bytes(path.read_bytes()), family, "haystack", 160, 120, "png", "t", truth=truth or {})


def test_clip_channel_loads_a_local_checkpoint_and_scores_deterministically(clip_ckpt, tmp_path):
    cfg, ckpt = clip_ckpt
    ch = build_channels([{"name": "clip", "model": "memlens-tiny-clip", "pretrained": ckpt, "model_config": cfg}])[0]
    paths = []
    for n in "abc":
        p = tmp_path / f"{n}.png"
        p.write_bytes(encode(pattern_image(n)))
        paths.append(p)
    items = [(p, rec_of(p, truth={"query": "red car"}), {}) for p in paths]
    s1 = ch.score_many(items)
    assert len(s1) == 3 and all(-1.0 <= s <= 1.0 for s in s1) and len(set(s1)) == 3
    assert ch.score(*items[1]) == pytest.approx(s1[1], abs=1e-5)  # batch or single: the same
    again = build_channels([{"name": "clip", "model": "memlens-tiny-clip", "pretrained": ckpt}])[0]
    assert again.score_many(items) == pytest.approx(s1, abs=1e-6)  # the same weights from the file
    assert ch.threshold == 0.30 and ch.role == "primary"
    with pytest.raises(ConfigError, match="not found"):
        build_channels([{"name": "siglip", "model": "memlens-tiny-clip", "pretrained": str(tmp_path / "no.pt")}])
    bad = tmp_path / "bad.pt"
    __import__("torch").save({"nope": 1}, bad)
    with pytest.raises(ConfigError, match="does not fit model"):
        build_channels([{"name": "clip", "model": "memlens-tiny-clip", "pretrained": str(bad)}])


def test_watermark_heuristic_separates_rendered_watermarks(tmp_path):
    ch = WatermarkChannel()
    plain, marked = [], []
    for n in "abcd":
        base = pattern_image(n, (320, 240)).filter(ImageFilter.GaussianBlur(6))
        (tmp_path / f"{n}.png").write_bytes(encode(base))
        (tmp_path / f"{n}-wm.png").write_bytes(encode(watermark(base)))
        plain.append(ch.periodicity(tmp_path / f"{n}.png"))
        marked.append(ch.periodicity(tmp_path / f"{n}-wm.png"))
    assert max(plain) < ch.threshold < min(marked), (plain, marked)


def test_vlm_caption_and_watermark_channels_through_an_endpoint(tmp_path):
    def responder(body):
        text = body["messages"][-1]["content"][-1]["text"]
        if "watermark" in text:
            return "Yes."
        return "a red car parked on a street"

    p = tmp_path / "a.png"
    p.write_bytes(encode(pattern_image("a")))
    r = rec_of(p, truth={"query": "red car on the street"})
    with FakeOpenAIServer(responder=responder) as srv:
        cap = build_channels([{"name": "caption", "base_url": srv.base_url, "model": "vlm"}])[0]
        far = rec_of(p, truth={"query": "tax form with handwritten numbers"})
        near, away = cap.score_many([(p, r, {}), (p, far, {})])
        assert near > 0.5 > away and cap.captions[r.sha256] == "a red car parked on a street"
        assert cap.role == "secondary" and len(srv.requests) == 2
        wm = build_channels([{"name": "watermark", "backend": "openai", "base_url": srv.base_url, "model": "vlm"}])[0]
        assert wm.score_many([(p, r, {})]) == [1.0] and wm.role == "negative"
    with FakeOpenAIServer(responder=lambda b: "maybe") as srv:
        wm = build_channels([{"name": "watermark", "backend": "openai", "base_url": srv.base_url, "model": "vlm"}])[0]
        with pytest.raises(DataError, match=r"image a.png: answer 'maybe' is not yes/no"):
            wm.score_many([(p, r, {})])
    with FakeOpenAIServer(faults=["400"] * 10) as srv:
        cap = build_channels([{"name": "caption", "base_url": srv.base_url, "model": "vlm", "max_retries": 0}])[0]
        with pytest.raises(DataError, match=r"1 request\(s\) to .* failed \(first: image a.png"):
            cap.score_many([(p, r, {})])


class Scored:
    """A channel with given scores per image family (to test the rules)."""

    def __init__(self, name, role, threshold, by_family):
        self.name, self.role, self.threshold, self.by = name, role, threshold, by_family

    def score(self, path, rec, request):
        return self.by[rec.family]


def test_paper_rule():
    clip = Scored("clip", "primary", 0.3, {})
    sig = Scored("siglip", "secondary", 0.1, {})
    cap = Scored("caption", "secondary", 0.3, {})
    wm = Scored("watermark", "negative", 0.5, {})
    chans = [clip, sig, cap, wm]
    ok = {"clip": 0.31, "siglip": 0.05, "caption": 0.4, "watermark": 0.1}
    assert F.verdict(chans, ok, "paper") == (True, "ok")
    assert F.verdict(chans, ok, "all")[0] is False  # siglip fails
    assert F.verdict(chans, {**ok, "clip": 0.29}, "paper") == (False, "clip relevance 0.29 < 0.3")
    no_sec = F.verdict(chans, {**ok, "caption": 0.2}, "paper")
    assert no_sec[0] is False and no_sec[1].startswith("no secondary channel passes")
    assert F.verdict(chans, {**ok, "watermark": 0.7}, "paper") == (False, "watermark negative content 0.7 >= 0.5")


def test_the_best_passing_candidate_of_each_request_is_accepted(tmp_path, monkeypatch):
    objects = tmp_path / "data" / "images" / "objects"
    objects.mkdir(parents=True)
    rows = []
    fams = {"a": "photo", "b": "receipt", "c": "ticket", "d": "clock"}  # clip: .35 .5 .2 .4
    for idx, names in ((0, "abc"), (1, "d")):
        for cand, n in enumerate(names):
            data = encode(pattern_image(n))
            sha = sha256_bytes(data)
            (objects / f"{sha}.png").write_bytes(data)
            img = ImageRecord(sha, fams[n], "haystack", 160, 120, "png", "icrawler", truth={"query": n})
            rows.append({"image": img.to_dict(), "plan_id": None, "index": idx, "candidate": cand, "request": {}})
    write_jsonl(tmp_path / "data" / "images" / "index.jsonl", rows)
    chans = [
        Scored("clip", "primary", 0.3, {"photo": 0.35, "receipt": 0.5, "ticket": 0.2, "clock": 0.4}),
        Scored("caption", "secondary", 0.3, {"photo": 0.6, "receipt": 0.1, "ticket": 0.9, "clock": 0.5}),
        MetadataChannel(role="secondary"),
    ]
    monkeypatch.setattr(F, "build_channels", lambda spec: chans)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = settings(
        filter={**LIMITS, "phash_max_distance": 12, "channels": [], "rule": "paper"},
        tracking={"enabled": True, "uri": uri},
    )
    F.run(cfg, Paths(tmp_path))
    out = list(iter_jsonl(tmp_path / "data" / "filtered" / "index.jsonl"))
    acc = [(r["candidate"], r["accepted"]) for r in out]
    # request 0: b has the best clip score and passes (metadata is its secondary); c fails clip
    assert acc == [(0, False), (1, True), (2, False), (0, True)]
    assert out[0]["reason"] == "another candidate scored higher (0.3500 < 0.5000)"
    assert out[2]["reason"] == "clip relevance 0.2 < 0.3" and out[0]["scores"]["caption"] == 0.6
    summary = read_json(tmp_path / "data" / "filtered" / "manifest.json")["channels"]
    assert summary["clip"] == {
        "role": "primary",
        "threshold": 0.3,
        "scored": 4,
        "passed": 3,
        "mean": 0.3625,
        "min": 0.2,
        "max": 0.5,
    }
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("memlens-build")
    (run,) = client.search_runs([exp.experiment_id])
    m = run.data.metrics
    assert (m["accepted"], m["rejected"], m["channel.clip.mean"], m["channel.caption.passed"]) == (2, 2, 0.3625, 3)
    assert run.data.params["filter.rule"] == "paper" and run.info.run_name == "filter"
    (art,) = client.list_artifacts(run.info.run_id)
    assert art.path == "index.jsonl"


def test_blip2_caption_channel_in_process_from_a_local_folder(tmp_path):
    build_tiny_blip2(tmp_path / "blip2")
    spec = {"name": "caption", "backend": "transformers", "model_path": str(tmp_path / "blip2"), "max_new_tokens": 5}
    ch = build_channels([spec])[0]
    items = []
    for n in "ab":
        p = tmp_path / f"{n}.png"
        p.write_bytes(encode(pattern_image(n)))
        items.append((p, rec_of(p, truth={"query": "red car"}), {}))
    s1 = ch.score_many(items)
    caps = [ch.captions[r.sha256] for _, r, _ in items]
    assert all(set(c.split()) <= set(BLIP2_WORDS[4:]) | {"<unk>"} for c in caps)
    assert all(-1.0 <= s <= 1.0 for s in s1) and ch.score_many(items) == pytest.approx(s1)  # greedy: repeatable
    assert ch.role == "secondary" and ch.threshold == 0.30
    with pytest.raises(ConfigError, match="not a saved BLIP-2 model folder"):
        build_channels([{**spec, "model_path": str(tmp_path / "none")}])


@pytest.mark.parametrize(
    "spec,why",
    [
        ({"name": "caption"}, "caption channel needs base_url and model"),
        ({"name": "caption", "backend": "transformers"}, "needs model_path"),
        ({"name": "caption", "backend": "heuristic"}, r"backend: Input should be 'openai' or 'transformers'"),
        (
            {"name": "watermark", "pretrained": "x.pt"},
            r"unknown config key filter.channels\[\]\.pretrained \(known: name, ",
        ),
        ({"name": "watermark", "backend": "openai"}, "watermark channel needs base_url and model"),
        ({"name": "clip", "model": "ViT-B-32", "pretrained": "w.pt", "size": 3}, r"channels\[\]\.size \(known: name"),
        ({"name": "caption", "base_url": "http://x/v1", "model": "m", "api_key": "sk"}, "api_key is not accepted"),
        ({"name": "clap"}, r"unknown filter channel 'clap' \(known: caption, clip, metadata, siglip, watermark\)"),
        ({"name": "metadata", "role": "tertiary"}, r"role: Input should be 'primary', 'secondary' or 'negative'"),
    ],
)
def test_channel_settings_name_what_is_wrong(spec, why):
    """Each channel's keys are its own schema's (beside the class); the name picks the schema."""
    from memlens.construction.filter.channels import CaptionSettings, channel_settings

    with pytest.raises(ConfigError, match=why):
        channel_settings(spec)
    ok = {"name": "caption", "backend": "transformers", "model_path": "m/", "role": "secondary", "threshold": 0.2}
    assert isinstance(channel_settings(ok), CaptionSettings) and channel_settings(ok).model_path == "m/"


def test_vlm_channels_share_their_endpoint_options():
    """Caption and watermark channels take the same endpoint options, each with its own token budget."""
    cap = build_channels([{"name": "caption", "base_url": "http://127.0.0.1:9/v1", "model": "vlm"}])[0]
    wm = build_channels(
        [{"name": "watermark", "backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "v"}]
    )[0]
    assert cap.endpoint.config.max_new_tokens == 64 and wm.endpoint.config.max_new_tokens == 8
    assert build_channels([{"name": "watermark"}])[0].endpoint is None  # the heuristic asks nothing
    with pytest.raises(ConfigError, match="needs base_url and model"):
        build_channels([{"name": "caption"}])
    with pytest.raises(ConfigError, match=r"unknown option.*temprature"):
        WatermarkChannel(temprature=0.5)
