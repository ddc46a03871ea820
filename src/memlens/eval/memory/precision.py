"""The arithmetic the diagnostics' OpenVINO models run in (``memory.ocr.precision``,
``memory.dense_precision``): ``f32`` on any CPU; ``bf16`` on a CPU with bfloat16 units (AVX512-BF16 or
AMX), 1.8x faster for the OCR models and the MiniLM encoder on an AMD EPYC with AVX512-BF16 (more with
AMX), with slightly different outputs; ``auto``: bf16 where the CPU has it, else f32. The precision that
runs is named in the component's id (its cache key and the report), so outputs computed at different
precisions never share a key.
"""

from __future__ import annotations

from functools import lru_cache

from memlens.core.errors import ConfigError

#: the values of a precision setting
PRECISIONS = ("auto", "f32", "bf16")


@lru_cache(maxsize=1)
def cpu_has_bf16() -> bool:
    """Whether OpenVINO can run bfloat16 on this CPU (AVX512-BF16 or AMX); asked once per process."""
    try:
        import openvino as ov
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError("the diagnostics' openvino models need openvino (make install-agents)") from exc
    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def resolve(asked: str, key: str, has_bf16=None) -> str:
    """``f32`` or ``bf16`` for the setting ``key`` asking ``asked`` on this CPU: a :class:`ConfigError`
    for an unknown value, or for bf16 on a CPU without bfloat16 units (OpenVINO would run it at f32
    under a bf16 name). ``has_bf16``: the CPU check (:func:`cpu_has_bf16`)."""
    if asked not in PRECISIONS:
        raise ConfigError(f"{key} must be one of {list(PRECISIONS)}, got {asked!r}")
    if asked == "f32":
        return asked
    has = (has_bf16 or cpu_has_bf16)()
    if asked == "auto":
        return "bf16" if has else "f32"
    if not has:
        raise ConfigError(
            f"{key}: bf16 needs a CPU with bfloat16 units (AVX512-BF16 or AMX); this one has none: set {key} to f32 or auto"
        )
    return asked
