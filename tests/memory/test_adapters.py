"""Input adapters: markers, oracle captions from ground truth, the crash-safe description cache,
OCR on rendered text (a second run costs zero OCR calls), interleaved paths."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from memlens.construction.images.synthetic.fonts import font
from memlens.core.errors import ConfigError, DataError, ImageError
from memlens.eval.memory.adapters import ImageInput, build_adapter, truth_text
from memlens.eval.memory.cache import CachedAdapter, DescriptionCache


def _image(path: Path, lines: list[str]) -> ImageInput:
    im = Image.new("RGB", (520, 60 + 48 * len(lines)), "white")
    d = ImageDraw.Draw(im)
    for i, line in enumerate(lines):
        d.text((24, 30 + 48 * i), line, fill="black", font=font("mono-bold", 30))
    im.save(path)
    return ImageInput(hashlib.sha256(path.read_bytes()).hexdigest(), path, None)


def test_markers_and_interleaved(tmp_path):
    ims = [ImageInput("0" * 64, tmp_path / "x.png"), ImageInput("1" * 64, tmp_path / "y.png")]
    assert build_adapter("markers").describe_images(ims) == ["[image]", "[image]"]
    assert build_adapter("interleaved").describe_images(ims) == [str(tmp_path / "x.png"), str(tmp_path / "y.png")]
    with pytest.raises(ConfigError, match="unknown adapter"):
        build_adapter("telepathy", cache_dir=tmp_path)


def test_oracle_caption_writes_the_truth_and_is_labelled_an_upper_bound(tmp_path):
    img = _image(tmp_path / "t.png", ["TICKET"])
    truth = {
        "gate": "A35",
        "seat": "10F",
        "photo": {"blur_radius": 0.5},
        "bbox": [1, 2, 3, 4],
        "objects": [{"color": "green", "kind": "ball", "center": [3, 4]}, {"color": "red", "kind": "cup"}],
    }
    a = build_adapter("oracle_caption", cache_dir=tmp_path / "c", truth_of={img.sha256: truth})
    assert a.upper_bound and a.id.startswith("oracle_caption/")
    (text,) = a.describe_images([img])
    assert text.startswith("[image (ground truth): ") and "gate: A35" in text and "seat: 10F" in text
    assert "blur" not in text and "center" not in text and "bbox" not in text
    assert "color: green; kind: ball" in text and text.index("green") < text.index("red")
    assert truth_text({"on_sale": False}) == "on_sale: no"
    with pytest.raises(DataError, match="no ground truth"):
        a.describe_images([ImageInput("f" * 64, img.path)])
    with pytest.raises(ConfigError, match="truth_of"):
        build_adapter("oracle_caption", cache_dir=tmp_path)


def test_cache_is_keyed_by_image_and_adapter_id_and_survives_a_torn_entry(tmp_path):
    c = DescriptionCache(tmp_path, "ocr/x/v1")
    sha = "c" * 64
    assert c.get(sha) is None
    c.put(sha, "hello")
    assert c.get(sha) == "hello"
    assert DescriptionCache(tmp_path, "ocr/x/v2").get(sha) is None  # another version: another entry
    c.path(sha).write_bytes(b'{"id": "ocr/x/v1", "sha')  # torn write (not atomic): recomputed, not trusted
    assert c.get(sha) is None
    with pytest.raises(DataError, match="SHA-256"):
        c.get("../../etc/passwd")


def test_oracle_cache_second_run_costs_no_calls(tmp_path):
    img = _image(tmp_path / "t.png", ["X"])
    calls = []

    def truth_of(sha):
        calls.append(sha)
        return {"text": "Foxglove Optician"}

    a = build_adapter("oracle_caption", cache_dir=tmp_path / "c", truth_of=truth_of)
    first = a.describe_images([img, img])
    assert a.stats["calls"] == 1 and len(calls) == 1  # the duplicate is described once
    b = build_adapter("oracle_caption", cache_dir=tmp_path / "c", truth_of=truth_of)
    assert b.describe_images([img]) == first[:1] and b.stats == {"calls": 0, "hits": 1} and len(calls) == 1


def test_ocr_reads_rendered_lines_and_a_second_run_costs_zero_calls(tmp_path):
    pytest.importorskip("rapidocr")
    pytest.importorskip("onnxruntime")
    img = _image(tmp_path / "r.png", ["CAFE LUNA", "TOTAL 7.75", "GATE A35"])
    a = build_adapter("ocr", cache_dir=tmp_path / "cache")
    assert a.id.startswith("ocr/rapidocr-3.10")
    (text,) = a.describe_images([img])
    flat = text.replace(" ", "")
    assert text.startswith("[image; text read: ")
    assert "TOTAL7.75" in flat and "GATEA35" in flat and "CAFELUNA" in flat
    assert flat.index("CAFE") < flat.index("TOTAL") < flat.index("GATE")  # lines top to bottom
    assert a.stats["calls"] == 1 and a.images_per_s > 0
    again = build_adapter("ocr", cache_dir=tmp_path / "cache")
    assert again.describe_images([img]) == [text]
    assert again.stats["calls"] == 0 and again._engine is None  # not even loaded
    with pytest.raises(ImageError, match="missing file"):
        again.describe_images([ImageInput("d" * 64, tmp_path / "gone.png")])
    blank = tmp_path / "blank.png"
    Image.new("RGB", (200, 100), "white").save(blank)
    sha = hashlib.sha256(blank.read_bytes()).hexdigest()
    assert again.describe_images([ImageInput(sha, blank)]) == ["[image; no text read]"]


class _Flaky(CachedAdapter):
    id = "flaky/v1"
    chunk_size = 2

    def __init__(self, cache_dir, fail_after: int | None):
        super().__init__(cache_dir)
        self.fail_after, self.seen = fail_after, []

    def _describe(self, images):
        if self.fail_after is not None and len(self.seen) >= self.fail_after:
            raise RuntimeError("backend died")
        self.seen += [im.sha256 for im in images]
        return [f"text of {im.sha256[:4]}" for im in images]


def test_a_crashed_run_resumes_after_its_last_stored_chunk(tmp_path):
    ims = [_image(tmp_path / f"i{i}.png", [f"LINE {i}"]) for i in range(5)]
    with pytest.raises(RuntimeError, match="backend died"):
        _Flaky(tmp_path / "c", fail_after=4).describe_images(ims)  # chunks of 2: the third one fails
    again = _Flaky(tmp_path / "c", fail_after=None)
    texts = again.describe_images(ims)
    assert again.seen == [ims[4].sha256] and again.stats == {"calls": 1, "hits": 4}
    assert texts == [f"text of {im.sha256[:4]}" for im in ims]


def test_ocr_worker_pool_reads_the_same_text_and_names_a_corrupt_image(tmp_path):
    """A batch spread over worker processes reads what the in-process engine reads; a corrupt image
    in a pooled batch is one ImageError naming its file, and the pool goes on with the next batch."""
    pytest.importorskip("rapidocr")
    pytest.importorskip("onnxruntime")
    ims = [_image(tmp_path / f"p{i}.png", [f"GATE A{30 + i}", f"SEAT {i}F"]) for i in range(4)]
    alone = build_adapter("ocr", cache_dir=tmp_path / "one", workers=1, progress=False)
    pooled = build_adapter("ocr", cache_dir=tmp_path / "two", workers=2, progress=False)
    try:
        expected = alone.describe_images(ims)
        assert pooled.describe_images(ims) == expected and pooled.stats["calls"] == 4
        assert pooled._pool is not None and pooled._engine is None  # read by the workers, not in-process
        bad = tmp_path / "bad.png"
        bad.write_bytes(b"\x89PNG\r\n\x1a\n not an image")
        batch = [*ims[:3], ImageInput(hashlib.sha256(bad.read_bytes()).hexdigest(), bad)]
        pooled.cache = None  # every image of the batch is read again: four, so by the pool
        with pytest.raises(ImageError, match=r"bad\.png.*cannot be read for OCR"):
            pooled.describe_images(batch)
        assert pooled._engine is None  # the bad image was read by a worker
        assert pooled.describe_images(ims) == expected  # the pool survives a bad image
    finally:
        pooled.close()
    assert pooled._pool is None
    again = build_adapter("ocr", cache_dir=tmp_path / "two", workers=1, progress=False)
    assert again.describe_images(ims) == expected and again.stats == {"calls": 0, "hits": 4}


def test_ocr_reading_parameters_reach_the_engine_and_the_key(tmp_path):
    """memory.ocr's text-changing parameters are rapidocr's parameters (in-process and in the
    workers: one tuple) and each is named in the id (the cache key); workers are not."""
    pytest.importorskip("rapidocr")
    from memlens.eval.memory.ocr import RAPIDOCR_READING, READING, cpu_has_bf16, rapidocr_version

    a = build_adapter(
        "ocr",
        engine="onnxruntime",
        det_limit_type="min",
        det_limit_side_len=640,
        rec_batch_num=8,
        use_cls=True,
        min_score=0.4,
    )
    cfg = a.engine.cfg
    assert (cfg.Det.limit_type, cfg.Det.limit_side_len, cfg.Rec.rec_batch_num) == ("min", 640, 8)
    assert cfg.Global.use_cls is True and cfg.Global.text_score == pytest.approx(0.4)
    assert cfg.EngineConfig.onnxruntime.enable_cpu_mem_arena is True
    assert cfg.Det.engine_type.value == cfg.Rec.engine_type.value == "onnxruntime"
    d = build_adapter("ocr").engine.cfg  # the defaults (READING) reach it too
    engine = d.Det.engine_type.value
    given = (engine, d.Det.limit_type, d.Det.limit_side_len, d.Rec.rec_batch_num, d.Global.use_cls)
    assert given == tuple(v for k, v in READING.items() if k != "precision")
    assert d.Rec.engine_type.value == engine == "openvino"
    assert Path(d.Det.model_path).is_file() and Path(d.Rec.model_path).is_file()  # the bundled models, never a download
    legacy = build_adapter("ocr", **RAPIDOCR_READING)
    assert legacy.id == f"ocr/rapidocr-{rapidocr_version()}/v1"  # the key entries were cached under before
    ids = {legacy.id, build_adapter("ocr").id, a.id}
    changed = {"engine": "openvino", "det_limit_type": "max", "det_limit_side_len": 1024, "rec_batch_num": 16}
    for k, v in {**changed, "use_cls": False}.items():
        ids.add(build_adapter("ocr", **{**RAPIDOCR_READING, k: v}).id)
    f32 = build_adapter("ocr", precision="f32").id
    assert "-ov-f32-" in f32  # an openvino id names its precision
    ids.add(build_adapter("ocr", precision="bf16").id if cpu_has_bf16() else f32.replace("-f32-", "-bf16-"))
    ids.add(f32)  # the default (auto) is one of the two
    assert len(ids) == 9  # every text-changing parameter changes the key
    assert build_adapter("ocr", workers=1).id == build_adapter("ocr", workers=3).id  # same text, same key
    with pytest.raises(ConfigError, match=r"unknown options.*limit_side"):
        build_adapter("ocr", limit_side=3)
    with pytest.raises(ConfigError, match="det_limit_side_len must be a positive integer"):
        build_adapter("ocr", det_limit_side_len=0)
    with pytest.raises(ConfigError, match="engine must be one of"):
        build_adapter("ocr", engine="tensorrt")
    with pytest.raises(ConfigError, match="precision must be one of"):
        build_adapter("ocr", precision="fp8")
    with pytest.raises(ConfigError, match="bf16 needs engine openvino"):
        build_adapter("ocr", engine="onnxruntime", precision="bf16")


def test_ocr_openvino_models_run_at_the_precision_their_id_names(tmp_path, monkeypatch):
    """OpenVINO's own default is bf16 on a CPU with bfloat16 units and f32 elsewhere, which read
    different texts: the models are compiled at the resolved memory.ocr.precision (auto: the CPU's
    best) and the id names it, in-process and in a worker; bf16 on a CPU without bfloat16 units is a
    clear error, not an f32 run under a bf16 key."""
    pytest.importorskip("rapidocr")
    import openvino as ov

    from memlens.eval.memory import ocr as ocr_mod

    types = {"f32": ov.Type.f32, "bf16": ov.Type.bf16}

    def precision_of(engine) -> set:
        return {
            p.session.session.get_compiled_model().get_property("INFERENCE_PRECISION_HINT")
            for p in (engine.text_det, engine.text_rec)
        }

    auto = build_adapter("ocr", workers=1)
    assert auto.precision == ("bf16" if ocr_mod.cpu_has_bf16() else "f32")
    assert f"-ov-{auto.precision}-" in auto.id
    assert precision_of(auto.engine) == {types[auto.precision]}
    f32 = build_adapter("ocr", workers=1, precision="f32")
    assert precision_of(f32.engine) == {ov.Type.f32} and "-ov-f32-" in f32.id
    threads = dict(ocr_mod.worker_threads("openvino"))
    worker = ocr_mod.engine_for(f32.params + tuple(threads.items()))  # a worker's engine: one thread, f32
    assert precision_of(worker) == {ov.Type.f32}
    assert worker.text_det.session.session.get_compiled_model().get_property("INFERENCE_NUM_THREADS") == 1
    monkeypatch.setattr(ocr_mod, "cpu_has_bf16", lambda: False)
    assert build_adapter("ocr").precision == "f32"  # auto on a CPU without bfloat16
    with pytest.raises(ConfigError, match="bf16 needs a CPU with bfloat16"):
        build_adapter("ocr", precision="bf16")
    assert build_adapter("ocr", engine="onnxruntime").precision == "f32"


def test_ocr_defaults_are_the_configured_values():
    """conf/memory/default.yaml's memory.ocr is what an agent's ``ocr`` adapter reads with (no
    options), so diagnose and the agents share one cache entry per image."""
    import yaml

    from memlens.eval.memory.ocr import READING
    from memlens.eval.memory.settings import OCRSettings

    conf = yaml.safe_load((Path(__file__).parents[2] / "conf" / "memory" / "default.yaml").read_text())["ocr"]
    ocr = OCRSettings.model_validate(conf)
    assert {k: getattr(ocr, k) for k in READING} == READING
    assert (ocr.min_score, ocr.workers) == (0.5, 0)


def test_ocr_reads_the_printed_text_of_rendered_images(tmp_path):
    """With the configured parameters, the text a rendered receipt and price tag print is read."""
    pytest.importorskip("rapidocr")
    import random

    from memlens.construction.images.synthetic import get_family, render_bytes

    ims, printed = [], []
    for i, family in enumerate(["receipt", "price_tag", "chat_screenshot"]):
        spec = get_family(family).sample(random.Random(7 + i), photo=False)
        data, ext = render_bytes(spec)
        p = tmp_path / f"{family}.{ext.lstrip('.')}"
        p.write_bytes(data)
        ims.append(ImageInput(hashlib.sha256(data).hexdigest(), p))
        printed.append([t for t in spec["texts"] if any(c.isalnum() for c in t)])
    texts = build_adapter("ocr", cache_dir=tmp_path / "c", workers=1).describe_images(ims)
    for text, lines in zip(texts, printed):
        flat = "".join(text.split()).upper()
        found = [t for t in lines if "".join(t.split()).upper() in flat]
        assert len(found) >= 0.8 * len(lines), (text, sorted(set(lines) - set(found)))
