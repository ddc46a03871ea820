"""JSON schemas of the construction LLM tasks and a small validator for them.

The schemas are sent as structured output (``response_format: json_schema``) where the server
supports it and are always checked on the answer (servers without structured output, or that
ignore it, are repaired by a follow-up request naming the errors). The validator covers the
subset the schemas use: ``type`` (object, array, string, integer, number, boolean), ``properties``,
``required``, ``additionalProperties: false``, ``items``, ``enum``, ``minLength``, ``minItems``,
``maxItems``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["LEAK_CHECK", "QA", "TEXT_ONLY_ANSWER", "parse_json", "validate"]


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict:
    return {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
        "additionalProperties": False,
    }


_STR = {"type": "string", "minLength": 1}

#: question writer: abstracted background, entities with their image-dependent anaphora, and the
#: (question, answer, evidence facts) triple
QA = _obj(
    {
        "background": _STR,
        "entities": {"type": "array", "items": _obj({"name": _STR, "category": _STR, "anaphor": _STR})},
        "question": _STR,
        "answer": _STR,
        "evidence_facts": {"type": "array", "items": _STR},
    }
)

#: the semantic-leakage check of one turn
LEAK_CHECK = _obj({"reveals": {"type": "boolean"}, "reason": {"type": "string"}})

#: the text-only solver of a question (paper: a separate model answers from the question alone)
TEXT_ONLY_ANSWER = _obj({"answer": {"type": "string"}, "confident": {"type": "boolean"}})

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": (int, float)}


def validate(value: Any, schema: dict, path: str = "$") -> list[str]:
    """Every violation of ``schema`` in ``value`` as ``"<json path>: <problem>"`` (empty: valid)."""
    errs: list[str] = []
    t = schema.get("type")
    if t is not None:
        py = _TYPES[t]
        bad_bool = t in ("integer", "number") and isinstance(value, bool)
        if not isinstance(value, py) or bad_bool:
            return [f"{path}: expected {t}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str) and len(value) < int(schema.get("minLength", 0)):
        errs.append(f"{path}: empty string")
    if isinstance(value, list):
        if len(value) < int(schema.get("minItems", 0)):
            errs.append(f"{path}: needs at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > int(schema["maxItems"]):
            errs.append(f"{path}: at most {schema['maxItems']} items")
        if "items" in schema:
            for i, v in enumerate(value):
                errs += validate(v, schema["items"], f"{path}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in value:
                errs.append(f"{path}: missing '{k}'")
        for k, v in value.items():
            if k in props:
                errs += validate(v, props[k], f"{path}.{k}")
            elif schema.get("additionalProperties", True) is False:
                errs.append(f"{path}: unexpected key '{k}'")
    return errs


def parse_json(text: str) -> Any:
    """The JSON value of a completion: the whole text, else its first fenced block, else the span
    from the first ``{`` to the last ``}``; raises ``ValueError`` naming what was wrong."""
    s = (text or "").strip()
    if not s:
        raise ValueError("the completion is empty")
    candidates = [s]
    if "```" in s:
        parts = s.split("```")
        if len(parts) >= 3:
            block = parts[1]
            candidates.append(block.split("\n", 1)[1] if block.lstrip().startswith("json") else block)
    if "{" in s and "}" in s:
        candidates.append(s[s.index("{") : s.rindex("}") + 1])
    last = None
    for c in candidates:
        try:
            return json.loads(c)
        except json.JSONDecodeError as exc:
            last = exc
    raise ValueError(f"the completion is not JSON ({last})")
