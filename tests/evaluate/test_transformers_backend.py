"""The transformers backend on a tiny random-weight Qwen2-VL built from a config in a temp dir
(nothing is downloaded). Skipped when the optional ML stack (requirements-ml.lock) is missing."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="optional ML stack not installed (pip install -r requirements-ml.lock)")
transformers = pytest.importorskip(
    "transformers", reason="optional ML stack not installed (pip install -r requirements-ml.lock)"
)

from memlens.core.config import Paths  # noqa: E402
from memlens.core.items import BuiltBenchmark  # noqa: E402
from memlens.eval.prompt import build_messages  # noqa: E402
from memlens.eval.systems.hf_transformers import TransformersModel  # noqa: E402
from tests.conftest import run_stage  # noqa: E402
from tests.evaluate.eval_support import TINY, predictions  # noqa: E402
from tests.support.tiny_models import build_tiny_qwen2vl  # noqa: E402


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-qwen2vl"))


def _model(path, **kw):
    kw = {"max_new_tokens": 5, "max_image_side": 64, "device": "cpu", "dtype": "float32", **kw}
    return TransformersModel("tiny-vlm", model_path=str(path), **kw)


def test_prompt_rendered_with_the_chat_template(tiny_vlm, tiny_project):
    bench = BuiltBenchmark(Paths(tiny_project))
    item = next(
        i
        for i in bench.items("32k")
        if any(s.is_evidence and s.turns for s in i.sessions)
        and any(im for s in i.sessions if s.is_evidence for t in s.turns for im in t.images)
    )
    model = _model(tiny_vlm)
    enc = model.inputs(item, "oracle_evidence")
    tok = model.processor.tokenizer
    text = tok.decode(enc["input_ids"][0])
    msgs = build_messages(item, "oracle_evidence")
    n_images = sum(1 for m in msgs for b in m["content"] if b["type"] == "image_url")
    assert n_images > 0
    assert text.count("<|vision_start|>") == n_images == int(enc["image_grid_thw"].shape[0])
    assert text.count("<|im_start|>") == len(msgs) + 1  # every message plus the generation prompt
    assert text.startswith("<|im_start|>system\nProvide answers based on the given conversation history.")
    assert "=== Session 1 (Date: " in text and text.endswith("<|im_start|>assistant\n")
    # each image is expanded to grid/merge^2 pad tokens by the processor
    merge = model.model.config.vision_config.spatial_merge_size
    pads = int(enc["image_grid_thw"].prod(dim=1).sum()) // merge**2
    assert text.count("<|image_pad|>") == pads


def test_generate_is_greedy_and_records_usage(tiny_vlm, tiny_project):
    bench = BuiltBenchmark(Paths(tiny_project))
    item = next(bench.items("32k"))
    model = _model(tiny_vlm)
    a, b = model.generate(item, "no_context"), model.generate(item, "no_context")
    assert a.ok and a.text == b.text  # greedy: deterministic
    assert a.prompt_tokens > 0 and 0 < a.completion_tokens <= 5
    assert a.meta["finish_reason"] in ("stop", "length")
    model.close()


def test_stage_with_transformers_backend(tiny_vlm, tiny_copy):
    ov = [
        "model=transformers",
        f"model.model_path={tiny_vlm}",
        "model.name=tiny-vlm",
        "model.max_new_tokens=4",
        "model.max_image_side=64",
        "model.device=cpu",
        "model.dtype=float32",
        "eval.mode=oracle_evidence",
        "eval.lengths=[32k]",
        "eval.max_items=3",
    ]
    assert run_stage(tiny_copy, "evaluate", *TINY, *ov) == 0
    rows = predictions(tiny_copy, "tiny-vlm", "oracle_evidence")["32k"]
    assert len(rows) == 3 and all(r["ok"] and r["prompt_tokens"] > 0 for r in rows.values())


def test_missing_image_is_a_failed_item(tiny_vlm, tiny_project, tmp_path):
    from memlens.core.errors import ImageError

    bench = BuiltBenchmark(Paths(tiny_project))
    item = next(i for i in bench.items("32k") if i.image_ids)

    def gone(image_id):
        raise ImageError(tmp_path / "x.png", "missing file")

    item.resolve_image = gone
    outs = []
    _model(tiny_vlm).run([item], "standard", lambda it, o: outs.append(o))
    assert len(outs) == 1 and not outs[0].ok and "missing" in outs[0].error
