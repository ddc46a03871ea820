"""The ``ocr`` adapter: the text drawn on an image, read by rapidocr 3.10 with its bundled ONNX
models (PP-OCRv6 det/rec small + the mobile angle classifier), on CPU, offline.

rapidocr returns one box per text segment ("Coffee" and "4.50" separately); segments are grouped
into lines by their vertical position and ordered left to right, lines top to bottom. The text an
agent stores is ``[image; text read: line 1 | line 2 | ...]`` (``[image; no text read]`` when nothing
was found). Only the default models are used: any other model would be downloaded at first use.

Reading (``memory.ocr``, :data:`READING`; :func:`engine_params`): per image about 60% of the CPU
goes to the detector, 30% to recognition, 2% to the angle classifier (profile of 72 rendered
images, one onnxruntime thread). rapidocr's default detector input (``limit_type`` min,
``limit_side_len`` 736) scales an image's SHORTER side UP to 736: a 540x960 screenshot is detected
at 736x1312 (1.9x its pixels), a 1000x400 ticket at 1840x736 (3.4x). The rendered families are
540-1080 px with text drawn large enough to read at that size, so they are detected at (about) their
own size: longer side scaled down to 960 at most, never up. The 0/180 degree angle classifier is
off (rendered images are upright). Recognition keeps rapidocr's 6 lines per call: lines are sorted
by width and each batch is padded to its widest, so 32 per call cost 35% MORE recognition CPU.
These change the text a little (different box edges), so each is in the adapter id
(:func:`reading_id`), the cache key; ``benchmarks/bench_ocr.py --fidelity`` weighs the change by
storage fidelity. Measured so against the previous reading (112 evidence images of a
small build, one run each, load 12-19 on 2 cores): 1.71 -> 1.28 CPU-s per image (-25%), the text
identical on 75 of the 112 images, storage fidelity the same (85 of 113 facts, 75.2%).

Engine (``engine``): rapidocr runs its bundled ONNX files on OpenVINO by default (onnxruntime is
rapidocr's own default): 0.24 vs 0.34 CPU-s per image, 8.3 vs 5.8 images/s with two workers (240
paper-scale images), the text identical on 271 of 300 evidence images and storage fidelity the same
(254 of 313 facts); the engine is in the adapter id, so the texts of the two are cached apart.

Precision (``precision``, :func:`resolve_precision`): OpenVINO runs these models at bf16 by default on
a CPU with bfloat16 units (AVX512-BF16 / AMX) and at f32 elsewhere, so one config read different texts
on different machines under one cache key. The models are now compiled at an explicit precision and
an openvino id names it: ``auto`` (the default: bf16 where the CPU has it, else f32), ``f32`` (one
text on every CPU) or ``bf16``. On a Xeon with AMX (300 evidence images, two workers): bf16 8.4 vs
f32 4.7 images/s, texts identical on 272 of 300, storage fidelity the same (254 of 313 facts).

Speed (:func:`worker_threads`): each worker process runs its engine on one thread (onnxruntime's
default, one thread per core, spends most of a second core spinning in thread barriers for these
small models: 1.78 vs 1.07 CPU-s per image), not pinned to a core (OpenVINO pins by default, and
two workers pinned to the same first core run at the speed of one), with onnxruntime's memory
arena on; a batch of images is spread over a pool of worker processes (``workers``, one per core
by default), each building its engine once; a few images (an agent's question) are read
in-process. The text does not depend on the number of threads, workers or the arena (checked on
160 paper-scale images).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from memlens.core.errors import ConfigError, ImageError
from memlens.core.registry import component
from memlens.eval.memory import precision as _precision
from memlens.eval.memory.cache import CachedAdapter, ImageInput
from memlens.eval.memory.precision import cpu_has_bf16

log = logging.getLogger(__name__)

#: version of the text format this adapter produces (part of its id and cache key)
OCR_FORMAT_VERSION = "v1"


def rapidocr_version() -> str:
    from importlib.metadata import version

    return version("rapidocr")


#: the reading parameters (``memory.ocr``, :class:`memlens.eval.memory.settings.OCRSettings`) and
#: their defaults here, which are also the values in ``conf/memory/default.yaml``
READING = {
    "engine": "openvino",
    "precision": "auto",
    "det_limit_type": "max",
    "det_limit_side_len": 960,
    "rec_batch_num": 6,
    "use_cls": False,
}
#: rapidocr 3.10's own values of them (its config.yaml): an adapter id names each parameter that
#: differs from these, so entries cached with rapidocr's defaults keep their key
RAPIDOCR_READING = {
    "engine": "onnxruntime",
    "precision": "f32",
    "det_limit_type": "min",
    "det_limit_side_len": 736,
    "rec_batch_num": 6,
    "use_cls": True,
}
_ID_PART = {
    "engine": "-{}",
    "precision": "-{}",
    "det_limit_type": "det-{}",
    "det_limit_side_len": "{}",
    "rec_batch_num": "-rb{}",
    "use_cls": "-cls{}",
}
#: the inference engines rapidocr runs its bundled ONNX models with (``memory.ocr.engine``) and the
#: short name an adapter id gives each (onnxruntime, rapidocr's default, has none)
ENGINES = {"onnxruntime": "", "openvino": "ov"}
#: the arithmetic an engine's models run in (``memory.ocr.precision``): f32 on any CPU; bf16 on openvino
#: and a CPU with bfloat16 units (AVX512-BF16 / AMX), about 1.8x faster there with a slightly different
#: text; auto: bf16 where the CPU has it, else f32 (:func:`resolve_precision`; OpenVINO's own default,
#: which was used unnamed before). The models are always compiled at the resolved precision and an
#: openvino id names it, so texts read at different precisions are never cached under one key
PRECISIONS = _precision.PRECISIONS
#: the bundled model files (rapidocr's package data), handed to an engine by path so that nothing
#: is looked up or downloaded (rapidocr's openvino engine would otherwise fetch them by URL)
MODEL_FILES = {
    "Det": "PP-OCRv6_det_small.onnx",
    "Rec": "PP-OCRv6_rec_small.onnx",
    "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
}


def worker_threads(engine: str) -> tuple[tuple[str, object], ...]:
    """The engine's threads in a worker process (one process per core): one, not pinned to a core
    (openvino pins its threads by default, and every worker would pin to the same first core)."""
    if engine == "openvino":
        return (
            ("EngineConfig.openvino.inference_num_threads", 1),
            ("EngineConfig.openvino.num_streams", 1),
            ("EngineConfig.openvino.enable_cpu_pinning", "NO"),
        )
    return (("EngineConfig.onnxruntime.intra_op_num_threads", 1), ("EngineConfig.onnxruntime.inter_op_num_threads", 1))


def engine_params(reading: dict, min_score: float) -> tuple[tuple[str, object], ...]:
    """rapidocr's parameters for ``reading`` (other than threads). rapidocr drops segments below
    ``Global.text_score`` itself, so it is ``min_score``. onnxruntime's memory arena (rapidocr turns
    it off) saves ~10% of the CPU per image and changes no output. The openvino engine runs the same
    bundled ONNX files (given by path)."""
    params: tuple[tuple[str, object], ...] = (
        ("Global.log_level", "error"),
        ("Global.text_score", float(min_score)),
        ("Global.use_cls", bool(reading["use_cls"])),
        ("Det.limit_type", str(reading["det_limit_type"])),
        ("Det.limit_side_len", int(reading["det_limit_side_len"])),
        ("Rec.rec_batch_num", int(reading["rec_batch_num"])),
        ("EngineConfig.onnxruntime.enable_cpu_mem_arena", True),
    )
    if reading["engine"] == "openvino":
        try:
            import rapidocr
            from rapidocr import EngineType
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ImportError("the ocr adapter needs rapidocr and openvino (make install-agents)") from exc
        models = Path(rapidocr.__file__).parent / "models"
        for part, name in MODEL_FILES.items():
            params += ((f"{part}.engine_type", EngineType.OPENVINO), (f"{part}.model_path", str(models / name)))
        params += ((PRECISION_PARAM, str(reading["precision"])),)
    return params


#: our own key in an engine's parameters (rapidocr has no precision setting: :func:`engine_for`
#: compiles the openvino models again at it)
PRECISION_PARAM = "memlens.openvino.precision"
_OPENVINO_THREADS = {
    "EngineConfig.openvino.inference_num_threads": "INFERENCE_NUM_THREADS",
    "EngineConfig.openvino.num_streams": "NUM_STREAMS",
    "EngineConfig.openvino.enable_cpu_pinning": "ENABLE_CPU_PINNING",
}


def resolve_precision(reading: dict) -> str:
    """The precision ``reading`` runs at on this CPU: ``f32`` or ``bf16`` (a :class:`ConfigError` for
    bf16 on a CPU without bfloat16 units, which OpenVINO would run at f32 under a bf16 key)."""
    if reading["engine"] != "openvino":
        return "f32"
    return _precision.resolve(reading["precision"], "memory.ocr.precision", has_bf16=lambda: cpu_has_bf16())


def _compile_at_precision(ocr, params: dict) -> None:
    """Compile ``ocr``'s openvino models again at ``params[PRECISION_PARAM]`` (with the same threads),
    checking that OpenVINO runs them at it."""
    import openvino as ov

    precision = params[PRECISION_PARAM]
    config = {ov_key: str(params[k]) for k, ov_key in _OPENVINO_THREADS.items() if k in params}
    config["INFERENCE_PRECISION_HINT"] = precision
    core = ov.Core()
    loaders = [ocr._load_det_model, ocr._load_rec_model] + (
        [ocr._load_cls_model] if params.get("Global.use_cls") else []
    )
    for load in loaders:  # rapidocr 3.10 loads each model on first use; loaded here, once
        session = load().session  # rapidocr's OpenVINOInferSession: .model (read) and .session (request)
        compiled = core.compile_model(session.model, "CPU", config)
        got = compiled.get_property("INFERENCE_PRECISION_HINT")
        if got != {"f32": ov.Type.f32, "bf16": ov.Type.bf16}[precision]:
            raise ConfigError(f"memory.ocr.precision: openvino runs the OCR models at {got}, not {precision}")
        session.session = compiled.create_infer_request()


def reading_id(reading: dict, min_score: float) -> str:
    """The part of the adapter id naming the text-changing parameters that differ from rapidocr's
    defaults (``""`` for rapidocr's defaults and score 0.5, the id entries were cached under before)."""
    det = ("det_limit_type", "det_limit_side_len")
    part = _ID_PART["engine"].format(ENGINES[reading["engine"]]) if ENGINES[reading["engine"]] else ""
    if reading["engine"] == "openvino":  # its ids before the precision was set name none (machine-dependent)
        part += _ID_PART["precision"].format(reading["precision"])
    if any(reading[k] != RAPIDOCR_READING[k] for k in det):
        part += "-" + "".join(_ID_PART[k].format(reading[k]) for k in det)
    for k in ("rec_batch_num", "use_cls"):
        if reading[k] != RAPIDOCR_READING[k]:
            part += _ID_PART[k].format(int(reading[k]) if k == "use_cls" else reading[k])
    if float(min_score) != 0.5:
        part += f"-s{float(min_score):g}"
    return part


@lru_cache(maxsize=2)
def engine_for(params: tuple[tuple[str, object], ...]):
    """A rapidocr engine with ``params``, built once per process (its models take about a second to load)."""
    engine = "openvino" if any(k == "Det.engine_type" for k, _ in params) else "onnxruntime"
    try:
        import importlib

        from rapidocr import RapidOCR

        importlib.import_module(engine)
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(f"the ocr adapter needs rapidocr and {engine} (make install-agents)") from exc
    given = dict(params)
    ocr = RapidOCR(params={k: v for k, v in given.items() if k != PRECISION_PARAM})
    if engine == "openvino":
        _compile_at_precision(ocr, given)
    return ocr


def read_image_lines(path: str | Path, params: tuple[tuple[str, object], ...], min_score: float) -> list[str]:
    """The lines rapidocr reads on one image file (a worker process's task; the engine is reused)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            rgb = im.convert("RGB")
    except (OSError, UnidentifiedImageError) as exc:
        raise ImageError(path, f"cannot be read for OCR: {exc}") from None
    import numpy as np

    out = engine_for(params)(np.asarray(rgb)[:, :, ::-1])  # rapidocr takes BGR arrays (OpenCV order)
    if out is None or out.boxes is None or out.txts is None:
        return []
    return group_lines(out.boxes, out.txts, out.scores, min_score=min_score)


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


def _check_reading(r: dict) -> None:
    if r["engine"] not in ENGINES:
        raise ConfigError(f"ocr adapter: engine must be one of {sorted(ENGINES)}, got {r['engine']!r}")
    if r["precision"] not in PRECISIONS:
        raise ConfigError(f"ocr adapter: precision must be one of {list(PRECISIONS)}, got {r['precision']!r}")
    if r["precision"] == "bf16" and r["engine"] != "openvino":
        raise ConfigError("ocr adapter: precision bf16 needs engine openvino (onnxruntime runs the models at f32)")
    if r["det_limit_type"] not in ("min", "max"):
        raise ConfigError(f"ocr adapter: det_limit_type must be min or max, got {r['det_limit_type']!r}")
    for k in ("det_limit_side_len", "rec_batch_num"):
        if isinstance(r[k], bool) or not isinstance(r[k], int) or r[k] < 1:
            raise ConfigError(f"ocr adapter: {k} must be a positive integer, got {r[k]!r}")
    if not isinstance(r["use_cls"], bool):
        raise ConfigError(f"ocr adapter: use_cls must be true or false, got {r['use_cls']!r}")


def default_workers() -> int:
    """One OCR worker process per core this process may use (at most 8)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    return max(1, min(8, n))


@component("adapter", "ocr")
class OCRAdapter(CachedAdapter):
    """rapidocr over each image (cached by image hash and adapter id); ``images_per_s`` after a run.

    ``workers``: processes a batch of images is spread over (0: one per core; 1: in-process only).
    Batches smaller than ``2 x workers`` images are read in-process (starting the pool costs more)."""

    #: images per stored chunk: a few per worker, so a crash loses little and the workers stay busy
    chunk_size = 32

    @classmethod
    def create(cls, *, cache_dir: Path | None = None, fallback_dirs: Sequence[Path] = (), **options):
        return cls(cache_dir, fallback_dirs=fallback_dirs, **options)

    def __init__(
        self,
        cache_dir: Path | None,
        *,
        min_score: float = 0.5,
        progress: bool = True,
        workers: int = 0,
        fallback_dirs: Sequence[Path] = (),
        **reading,
    ):
        unknown = sorted(set(reading) - set(READING))
        if unknown:
            raise ConfigError(f"ocr adapter: unknown options {unknown} (known: {sorted(READING)})")
        self.reading = {**READING, **reading}
        _check_reading(self.reading)
        #: the precision the models run at here (``auto`` resolved): named in the id, compiled at
        self.precision = resolve_precision(self.reading)
        self.reading["precision"] = self.precision
        # parameters that change the text are in the id, so in the cache key: other text, other entry
        self.id = f"ocr/rapidocr-{rapidocr_version()}{reading_id(self.reading, min_score)}/{OCR_FORMAT_VERSION}"
        super().__init__(cache_dir, fallback_dirs)
        self.min_score = float(min_score)
        self.params = engine_params(self.reading, self.min_score)
        self.progress = progress
        self.workers = int(workers) if int(workers) > 0 else default_workers()
        self._engine = None
        self._pool = None
        self.seconds = 0.0

    @property
    def engine(self):
        """The in-process engine (onnxruntime's default threads: a few images at a time)."""
        if self._engine is None:
            self._engine = engine_for(self.params)
        return self._engine

    def read_lines(self, path: Path) -> list[str]:
        self.engine  # noqa: B018 - loaded here, so `_engine` tells whether anything was read in-process
        return read_image_lines(path, self.params, self.min_score)

    def _pool_for(self, n_images: int):
        if self.workers <= 1 or n_images < 2 * self.workers:
            return None
        if self._pool is None:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            # spawn: the caller may run threads (an agent's event loop), which fork would copy mid-state
            self._pool = ProcessPoolExecutor(self.workers, mp_context=mp.get_context("spawn"))
        return self._pool

    def _describe(self, images: Sequence[ImageInput]) -> list[str]:
        import time
        from functools import partial

        t0 = time.perf_counter()
        pool = self._pool_for(len(images))
        if pool is None:
            lines = [self.read_lines(im.path) for im in images]
        else:
            threads = worker_threads(self.reading["engine"])
            task = partial(read_image_lines, params=self.params + threads, min_score=self.min_score)
            lines = list(pool.map(task, [str(im.path) for im in images]))
        self.seconds += time.perf_counter() - t0
        return [format_ocr(x) for x in lines]

    def close(self) -> None:
        """Stop the worker processes (started again if more images come)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    @property
    def images_per_s(self) -> float | None:
        return self.stats["calls"] / self.seconds if self.seconds > 0 else None
