"""The MemLens data model: every stage reads and writes these records.

Field names and value formats follow the official MEMLENS release (``question_type`` and
``question_subtype`` strings, ``YYYY/MM/DD (Ddd) HH:MM`` dates, answer references such as ``A``,
``(2)(3)(1)``, ``YYYY/MM/DD``, ``Yes``/``No``, integers and currency amounts). Conversion to and from
the release layout lives in :mod:`memlens.core.official`; JSON(L) helpers in :mod:`memlens.core.io`.

Records are plain dataclasses with ``to_dict``/``from_dict``. ``from_dict`` validates types and
raises :class:`SchemaError` naming the record, field and offending value, so a malformed file ends a
stage with one clear message instead of a traceback deep inside a stage.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

# --------------------------------------------------------------------------------------------------
# Vocabulary (official strings)
# --------------------------------------------------------------------------------------------------
from memlens.core.constants import (
    AR,
    DATE_FORMAT,
    IE,
    IMAGE_PLACEHOLDER,
    IMAGE_ROLES,
    KU,
    MSR,
    QUESTION_TYPES,
    REFUSAL_REFERENCE,
    ROLES,
    SESSION_KINDS,
    SUBTYPES,
    TR,
    TRACKS,
    TYPE_ABBREV,
)
from memlens.core.errors import SchemaError

_DATE_RE = re.compile(r"^(\d{4})/(\d{2})/(\d{2}) \((Mon|Tue|Wed|Thu|Fri|Sat|Sun)\) (\d{2}):(\d{2})$")
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def format_date(dt: datetime) -> str:
    """Format a timestamp the way the release does: ``2024/05/31 (Fri) 07:58``."""
    return dt.strftime(DATE_FORMAT)


def parse_date(value: str) -> datetime:
    """Parse a release timestamp; raises ``ValueError`` on any other format."""
    m = _DATE_RE.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"not a 'YYYY/MM/DD (Ddd) HH:MM' date: {value!r}")
    year, month, day, weekday, hour, minute = m.groups()
    try:  # what strptime(value, DATE_FORMAT) accepts, without its cost (~25 us a date)
        dt = datetime(int(year), int(month), int(day), int(hour), int(minute))
    except ValueError:
        raise ValueError(f"not a 'YYYY/MM/DD (Ddd) HH:MM' date: {value!r}") from None
    if _WEEKDAYS[dt.weekday()] != weekday:  # weekday must agree with the date
        raise ValueError(f"weekday does not match the date: {value!r}")
    return dt


def is_release_date(value: Any) -> bool:
    try:
        parse_date(value)
        return True
    except ValueError:
        return False


# --------------------------------------------------------------------------------------------------
# Base class: typed (de)serialization with clear errors
# --------------------------------------------------------------------------------------------------
_PRIMS = {"str": str, "int": int, "float": (int, float), "bool": bool}


#: fields that identify a record, named in its errors
_ID_FIELDS = ("question_id", "session_id", "sha256", "topic_id")


class Record:
    """Mixin for dataclass records: ``to_dict`` (sorted, JSON-ready) and validating ``from_dict``."""

    _nested: ClassVar[dict[str, type]] = {}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            out[f.name] = _dump(v)
        return out

    @classmethod
    def from_dict(cls, data: Any, *, where: str = ""):
        name = cls.__name__
        if not isinstance(data, dict):
            raise SchemaError(f"{where}: expected an object for {name}, got {type(data).__name__}")
        ident = next((f"{k} {data[k]}" for k in _ID_FIELDS if isinstance(data.get(k), str) and data[k]), None)
        if ident and ident.split(" ", 1)[1] not in where:
            where = f"{where} ({ident})"
        kwargs: dict[str, Any] = {}
        known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        for fname, f in known.items():
            if fname in data:
                kwargs[fname] = cls._load_field(fname, data[fname], where)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
                raise SchemaError(f"{where}: {name} is missing required field {fname!r}")
        try:
            obj = cls(**kwargs)
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"{where}: invalid {name}: {exc}") from None
        return obj

    @classmethod
    def unchecked(cls, **fields: Any):
        """Build a record without the format checks of ``__post_init__``: for external data (the
        official release) whose optional fields may hold placeholders such as ``unknown`` dates.
        The reader is responsible for the checks it needs."""
        obj = cls.__new__(cls)
        obj.__dict__.update(fields)
        return obj

    @classmethod
    def _load_field(cls, fname: str, value: Any, where: str) -> Any:
        nested = cls._nested.get(fname)
        if nested is not None:
            if not isinstance(value, list):
                raise SchemaError(f"{where}: {cls.__name__}.{fname} must be a list, got {type(value).__name__}")
            return [nested.from_dict(v, where=f"{where}.{fname}[{i}]") for i, v in enumerate(value)]
        return value


def _dump(v: Any) -> Any:
    if isinstance(v, Record):
        return v.to_dict()
    if isinstance(v, (list, tuple)):
        return [_dump(x) for x in v]
    if isinstance(v, dict):
        return {k: _dump(x) for k, x in v.items()}
    return v


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _check_type(obj: Any, fname: str, types: Any, optional: bool = False) -> None:
    v = getattr(obj, fname)
    if optional and v is None:
        return
    if isinstance(v, bool) and types in ((int, float), int):
        raise ValueError(f"field {fname!r} must be {types}, got bool")
    if not isinstance(v, types):
        tn = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise ValueError(f"field {fname!r} must be {tn}, got {type(v).__name__} ({v!r:.60})")


def _check_str_list(obj: Any, fname: str) -> None:
    v = getattr(obj, fname)
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError(f"field {fname!r} must be a list of strings")


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------
@dataclass
class Topic(Record):
    """One ontology topic: a track, one of its sub-attributes, a title and fine-grained subtopics."""

    topic_id: str
    track: str
    sub_attribute: str
    title: str
    subtopics: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)  # image families that fit the topic
    abilities: list[str] = field(default_factory=list)  # which question types draw from this topic

    def __post_init__(self) -> None:
        for f in ("topic_id", "track", "sub_attribute", "title"):
            _check_type(self, f, str)
        _check(self.track in TRACKS, f"unknown track {self.track!r} (known: {', '.join(TRACKS)})")
        _check_str_list(self, "subtopics")
        _check_str_list(self, "families")
        _check_str_list(self, "abilities")


@dataclass
class ImageRecord(Record):
    """One image, stored once by the SHA-256 of its bytes.

    ``truth`` is the exact ground truth of what a generated image shows (family-specific keys, see
    :mod:`memlens.construction.images.synthetic`); for crawled images it holds what is known (query, url, caption).
    """

    sha256: str
    family: str
    role: str
    width: int
    height: int
    format: str
    source: str
    topic_id: str = ""
    truth: dict = field(default_factory=dict)

    @property
    def image_id(self) -> str:
        return self.sha256

    @property
    def filename(self) -> str:
        return f"{self.sha256}.{'jpg' if self.format == 'jpeg' else self.format}"

    def __post_init__(self) -> None:
        _check_type(self, "sha256", str)
        _check(bool(re.fullmatch(r"[0-9a-f]{64}", self.sha256)), f"sha256 must be 64 hex chars: {self.sha256!r}")
        _check(self.role in IMAGE_ROLES, f"image role must be one of {IMAGE_ROLES}, got {self.role!r}")
        for f in ("width", "height"):
            _check_type(self, f, int)
        _check(self.format in ("png", "jpeg", "webp", "gif"), f"unsupported image format {self.format!r}")
        _check_type(self, "truth", dict)


@dataclass
class Turn(Record):
    """A chat turn. ``content`` holds one ``<image>`` placeholder per entry of ``images``, in order;
    ``images`` are image ids (SHA-256 of the image bytes)."""

    role: str
    content: str
    images: list[str] = field(default_factory=list)
    has_answer: bool = False

    def __post_init__(self) -> None:
        _check(self.role in ROLES, f"turn role must be 'user' or 'assistant', got {self.role!r}")
        _check_type(self, "content", str)
        _check_str_list(self, "images")
        _check_type(self, "has_answer", bool)
        n = self.content.count(IMAGE_PLACEHOLDER)
        _check(n == len(self.images), f"turn has {n} <image> placeholders but {len(self.images)} images")


@dataclass
class Session(Record):
    """A multi-turn session. Its date is not part of it: the same session is placed at different
    dates in different histories (evidence sessions carry their fixed date on the question)."""

    session_id: str
    kind: str
    topic_id: str
    turns: list[Turn]

    _nested: ClassVar[dict[str, type]] = {"turns": Turn}

    def __post_init__(self) -> None:
        _check_type(self, "session_id", str)
        _check(bool(self.session_id.strip()), "field 'session_id' is empty")
        _check(self.kind in SESSION_KINDS, f"session kind must be one of {SESSION_KINDS}, got {self.kind!r}")
        _check(isinstance(self.turns, list) and len(self.turns) > 0, "a session needs at least one turn")

    @property
    def image_ids(self) -> list[str]:
        return [i for t in self.turns for i in t.images]

    @property
    def text(self) -> str:
        return "\n".join(t.content for t in self.turns)


@dataclass
class Evidence(Record):
    """An evidence session of a question with its fixed timestamp and the fact it carries."""

    session_id: str
    date: str
    fact: str
    image_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check_type(self, "session_id", str)
        _check(is_release_date(self.date), f"evidence date must be 'YYYY/MM/DD (Ddd) HH:MM', got {self.date!r}")
        _check_str_list(self, "image_ids")


@dataclass
class Question(Record):
    """A benchmark question with its answer and evidence (independent of history length).

    ``details`` holds finer labels that the official loader ignores (visual skill, image source,
    temporal generation mode, count-distinct vs yes/no, ...). ``image_essential`` marks questions
    whose answer cannot be derived without the evidence images.
    """

    question_id: str
    question_type: str
    question_subtype: str
    question: str
    answer: str
    question_date: str
    topic_id: str = ""
    old_answer: str | None = None
    evidence: list[Evidence] = field(default_factory=list)
    ordered_evidence: bool = False
    image_essential: bool = True
    source_question_id: str | None = None
    details: dict = field(default_factory=dict)

    _nested: ClassVar[dict[str, type]] = {"evidence": Evidence}

    def __post_init__(self) -> None:
        for f in ("question_id", "question", "answer", "question_date", "question_subtype"):
            _check_type(self, f, str)
        for f in ("question_id", "question"):  # the answer is empty in what a system sees (for_system)
            _check(bool(getattr(self, f).strip()), f"field {f!r} is empty")
        _check(
            self.question_type in QUESTION_TYPES,
            f"unknown question_type {self.question_type!r} (known: {', '.join(QUESTION_TYPES)})",
        )
        # Subtypes are open: the release may carry strings this version does not generate.
        _check(
            is_release_date(self.question_date),
            f"question_date must be 'YYYY/MM/DD (Ddd) HH:MM', got {self.question_date!r}",
        )
        _check_type(self, "old_answer", str, optional=True)
        _check_type(self, "details", dict)

    @property
    def evidence_session_ids(self) -> list[str]:
        return [e.session_id for e in self.evidence]

    @property
    def evidence_image_ids(self) -> list[str]:
        return [i for e in self.evidence for i in e.image_ids]

    @property
    def type_abbrev(self) -> str:
        return TYPE_ABBREV[self.question_type]

    @property
    def reporting_subtype(self) -> str:
        """``<type>/<subtype>`` with ``unknown`` for an empty subtype (official judge convention)."""
        return f"{self.question_type}/{self.question_subtype or 'unknown'}"


@dataclass
class Instance(Record):
    """A question with its history at one target length: references to sessions, never copies."""

    question_id: str
    length: str
    target_tokens: int
    session_ids: list[str]
    dates: list[str]
    answer_session_ids: list[str]
    total_tokens: int
    text_tokens: int
    image_tokens: int
    n_images: int

    def __post_init__(self) -> None:
        _check_type(self, "question_id", str)
        _check(bool(self.question_id.strip()), "field 'question_id' is empty")
        _check_str_list(self, "session_ids")
        _check_str_list(self, "dates")
        _check_str_list(self, "answer_session_ids")
        _check(
            len(self.session_ids) == len(self.dates),
            f"session_ids ({len(self.session_ids)}) and dates ({len(self.dates)}) differ in length",
        )
        bad = next((d for d in self.dates if not is_release_date(d)), None)
        _check(bad is None, f"field 'dates' holds {bad!r}, not a 'YYYY/MM/DD (Ddd) HH:MM' date")
        _check(set(self.answer_session_ids) <= set(self.session_ids), "answer_session_ids not in session_ids")


@dataclass
class ItemKey(Record):
    """What identifies a scored item: the system, prompt mode, length and question."""

    system: str
    mode: str
    length: str
    question_id: str
    question_type: str
    question_subtype: str


@dataclass
class Prediction(ItemKey):
    """One system output for one (system, mode, length, question). ``ok`` is False for a request
    that failed after its retries: it carries ``error`` and is never scored as an answer."""

    ok: bool
    raw_prediction: str | None = None
    prediction: str | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    meta: dict = field(default_factory=dict)
    #: the results-store key of the request this answers (system identity, protocol, mode, content)
    request_key: str = ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.system, self.mode, self.length, self.question_id)


@dataclass
class Verdict(ItemKey):
    """A judge's decision on one prediction."""

    judge: str
    correct: bool | None  # None: the judge failed (recorded as a failure, not as wrong)
    parsed: str | None = None
    reason: str = ""
    task_key: str = ""
    abstained: bool = False
    auto_zero: bool = False
    truncated: bool = False
    details: dict = field(default_factory=dict)
    #: the results-store key of the answer this verdict scores (see :class:`Prediction`)
    request_key: str = ""


__all__ = [
    "AR",
    "IE",
    "KU",
    "MSR",
    "TR",
    "QUESTION_TYPES",
    "SUBTYPES",
    "TYPE_ABBREV",
    "TRACKS",
    "IMAGE_ROLES",
    "SESSION_KINDS",
    "IMAGE_PLACEHOLDER",
    "REFUSAL_REFERENCE",
    "DATE_FORMAT",
    "format_date",
    "parse_date",
    "is_release_date",
    "Record",
    "Topic",
    "ImageRecord",
    "Turn",
    "Session",
    "Evidence",
    "Question",
    "Instance",
    "Prediction",
    "Verdict",
    "SchemaError",
]
