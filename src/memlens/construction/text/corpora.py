"""Filler sessions from real conversation corpora (the paper pads with ShareGPT and UltraChat).

Formats (one conversation per record; ``.json`` holds a list of records, ``.jsonl`` one per line;
a folder is read file by file in name order):

* **ShareGPT**: ``{"id": ..., "conversations": [{"from": "human"|"gpt"|"system", "value": "..."}]}``
  (``user``/``assistant``/``chatgpt``/``bard`` are accepted as ``from`` too);
* **UltraChat**: ``{"id": ..., "data": ["user text", "assistant text", ...]}`` (the original release)
  or ``{"messages": [{"role": "user"|"assistant"|"system", "content": "..."}]}`` (``ultrachat_200k``).

``format: auto`` recognises each record by its keys. A Hugging Face dataset name is read with
``datasets.load_dataset`` (needs the network or a local HF cache; tests never use it).

Each conversation is normalised to alternating user/assistant turns starting with the user
(system turns dropped, consecutive turns of one role joined, ``<image>`` tags removed, whitespace
collapsed, cut to whole pairs), then kept when it has ``min_turns``..``max_turns`` turns (longer
ones are cut to ``max_turns``), every turn has ``min_words``..``max_words`` words and, with
``language: en``, it reads as English (ASCII letters and common English words); exact duplicates
(after lower-casing and whitespace collapsing) are kept once. The pool is sorted by content hash, so
the filler drawn for a seed does not depend on the order of the files.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import model_validator

from memlens.construction.text.leakage import PhraseIndex
from memlens.construction.text.sessions import session_id_for
from memlens.construction.text.validators import RejectionLog, TurnSpec, check_turn, word_count
from memlens.core.errors import DataError
from memlens.core.io import enumerate_jsonl, sha256_bytes
from memlens.core.schema import IMAGE_PLACEHOLDER, Session, Turn
from memlens.core.settings import NonNegInt, PositiveInt, Section

__all__ = ["CorpusFiller", "FillerCorpus", "filler_for", "normalise", "read_records"]

_USER = {"human", "user", "prompter"}
_ASSISTANT = {"gpt", "assistant", "chatgpt", "bard", "bing", "model"}
_SYSTEM = {"system"}
_WS = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z']+")
#: frequent English function words; an English text of 20+ words has well over 10% of them
_EN = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "this",
        "that",
        "i",
        "you",
        "we",
        "they",
        "he",
        "she",
        "my",
        "your",
        "our",
        "their",
        "not",
        "but",
        "as",
        "at",
        "by",
        "from",
        "have",
        "has",
        "had",
        "do",
        "does",
        "did",
        "can",
        "could",
        "would",
        "should",
        "will",
        "what",
        "how",
        "which",
    ]
)


def _clean(text: str) -> str:
    return _WS.sub(" ", str(text).replace(IMAGE_PLACEHOLDER, " ")).strip()


def _turns_of(rec: Any, where: str, fmt: str) -> list[tuple[str, str]]:
    if not isinstance(rec, dict):
        raise DataError(f"{where}: a conversation record must be a JSON object, got {type(rec).__name__}")
    kind = fmt
    if kind == "auto":
        kind = "sharegpt" if "conversations" in rec else "ultrachat" if ("data" in rec or "messages" in rec) else ""
    if kind == "sharegpt":
        conv = rec.get("conversations")
        if not isinstance(conv, list):
            raise DataError(f"{where}: a ShareGPT record needs a 'conversations' list")
        out = []
        for j, t in enumerate(conv):
            if not isinstance(t, dict) or not isinstance(t.get("value"), str):
                raise DataError(f"{where}: conversations[{j}] needs a 'from' and a string 'value'")
            out.append((str(t.get("from", "")).lower(), t["value"]))
        return out
    if kind == "ultrachat":
        if isinstance(rec.get("data"), list):
            if not all(isinstance(x, str) for x in rec["data"]):
                raise DataError(f"{where}: an UltraChat 'data' list must hold strings")
            return [("user" if j % 2 == 0 else "assistant", x) for j, x in enumerate(rec["data"])]
        msgs = rec.get("messages")
        if not isinstance(msgs, list):
            raise DataError(f"{where}: an UltraChat record needs a 'data' or 'messages' list")
        out = []
        for j, t in enumerate(msgs):
            if not isinstance(t, dict) or not isinstance(t.get("content"), str):
                raise DataError(f"{where}: messages[{j}] needs a 'role' and a string 'content'")
            out.append((str(t.get("role", "")).lower(), t["content"]))
        return out
    raise DataError(f"{where}: not a ShareGPT ('conversations') or UltraChat ('data'/'messages') record")


def normalise(raw: list[tuple[str, str]], where: str = "?") -> list[tuple[str, str]]:
    """Alternating (user, assistant) turns starting with the user, whole pairs only."""
    out: list[tuple[str, str]] = []
    for who, text in raw:
        if who in _SYSTEM:
            continue
        role = "user" if who in _USER else "assistant" if who in _ASSISTANT else None
        if role is None:
            raise DataError(f"{where}: unknown speaker {who!r}")
        t = _clean(text)
        if not t:
            continue
        if out and out[-1][0] == role:
            out[-1] = (role, f"{out[-1][1]} {t}")
        elif out or role == "user":
            out.append((role, t))
    return out[: len(out) // 2 * 2]


def is_english(texts: Iterable[str]) -> bool:
    """ASCII letters make >= 90% of the letters and common English words >= 10% of the words."""
    joined = " ".join(texts)
    letters = [c for c in joined if c.isalpha()]
    if not letters or sum(c.isascii() for c in letters) / len(letters) < 0.9:
        return False
    words = [w.lower() for w in _WORD.findall(joined)]
    return bool(words) and sum(w in _EN for w in words) / len(words) >= 0.10


def _records_in_file(path: Path) -> Iterator[tuple[str, Any]]:
    if path.suffix == ".jsonl":
        for i, rec in enumerate_jsonl(path):
            yield f"{path}:{i}", rec
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read the conversation file ({exc})") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: a .json conversation file must hold a list of records")
    for i, rec in enumerate(data):
        yield f"{path}[{i}]", rec


def read_records(path: str | Path) -> Iterator[tuple[str, Any]]:
    """(location, record) of every record under ``path`` (a .json/.jsonl file or a folder of them)."""
    p = Path(path).expanduser()
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.suffix in (".json", ".jsonl") and f.is_file())
        if not files:
            raise DataError(f"{p}: no .json or .jsonl conversation file in this folder")
    elif p.is_file():
        files = [p]
    else:
        raise DataError(f"{p}: the filler corpus does not exist")
    for f in files:
        yield from _records_in_file(f)


@dataclass
class FillerCorpus:
    """Normalised, filtered and de-duplicated conversations (see the module docstring)."""

    conversations: list[list[tuple[str, str]]]
    stats: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(
        cls,
        *,
        path: str | None = None,
        hf_dataset: str | None = None,
        hf_split: str = "train",
        format: str = "auto",
        min_turns: int = 2,
        max_turns: int = 12,
        min_words: int = 1,
        max_words: int = 600,
        language: str = "en",
        limit: int | None = None,
    ) -> FillerCorpus:
        if bool(path) == bool(hf_dataset):
            raise DataError("generator.filler: give exactly one of 'path' and 'hf_dataset'")
        if hf_dataset:
            records: Iterable[tuple[str, Any]] = _hf_records(hf_dataset, hf_split)
        else:
            records = read_records(str(path))
        stats = {"records": 0, "kept": 0, "too_short": 0, "turn_length": 0, "language": 0, "duplicate": 0}
        seen: set[str] = set()
        kept: dict[str, list[tuple[str, str]]] = {}
        for where, rec in records:
            stats["records"] += 1
            conv = normalise(_turns_of(rec, where, format), where)
            if len(conv) > max_turns:
                conv = conv[: max_turns // 2 * 2]
            if len(conv) < max(2, min_turns):
                stats["too_short"] += 1
                continue
            if not all(min_words <= word_count(t) <= max_words for _, t in conv):
                stats["turn_length"] += 1
                continue
            if language == "en" and not is_english(t for _, t in conv):
                stats["language"] += 1
                continue
            key = sha256_bytes(" ".join(t.lower() for _, t in conv).encode("utf-8"))
            if key in seen:
                stats["duplicate"] += 1
                continue
            seen.add(key)
            kept[key] = conv
            if limit and len(kept) >= limit:
                break
        stats["kept"] = len(kept)
        if not kept:
            raise DataError(f"generator.filler: no usable conversation in {path or hf_dataset} ({stats})")
        return cls([kept[k] for k in sorted(kept)], stats)


def _hf_records(name: str, split: str) -> Iterator[tuple[str, Any]]:
    try:
        import datasets
    except ImportError as exc:
        raise DataError(f"generator.filler.hf_dataset needs the `datasets` package ({exc})") from None
    try:
        ds = datasets.load_dataset(name, split=split)
    except Exception as exc:
        raise DataError(f"generator.filler.hf_dataset {name!r} ({split}): cannot load it ({exc})") from None
    for i, rec in enumerate(ds):
        yield f"{name}[{split}][{i}]", dict(rec)


class CorpusFiller:
    """Draws filler sessions from a :class:`FillerCorpus` without replacement, in a seeded order."""

    def __init__(self, corpus: FillerCorpus, seed: int):
        self.corpus = corpus
        self.order = list(range(len(corpus.conversations)))
        random.Random(f"{seed}:filler-corpus").shuffle(self.order)
        self.next = 0
        self.skipped = 0

    def session(self, rng: random.Random, n_turns: int, forbidden: PhraseIndex, log: RejectionLog) -> Session:
        """The next conversation, cut to ``n_turns`` turns (whole pairs); one that contains a forbidden
        string (an abstracted entity, an answer) is skipped."""
        while self.next < len(self.order):
            conv = self.corpus.conversations[self.order[self.next]]
            self.next += 1
            conv = conv[: max(2, n_turns // 2 * 2)]
            if any(forbidden.find(t) for _, t in conv):
                self.skipped += 1
                continue
            turns = [Turn(role, text, [], False) for role, text in conv]
            for t in turns:
                log.record(check_turn(TurnSpec(role="user", text=t.content, forbidden=forbidden)))
            return Session(session_id_for("filler", "", turns), "filler", "", turns)
        raise DataError(
            f"generator.filler: the corpus has {len(self.order)} usable conversations ({self.skipped} skipped for "
            "forbidden strings); the scale needs more filler sessions (add conversations or lower filler_sessions)"
        )


class FillerSettings(Section):
    """``generator.filler``: filler sessions from a ShareGPT/UltraChat corpus; ``null`` keeps the
    template filler. A key left out (or null) takes :meth:`FillerCorpus.load`'s default."""

    path: str | None = None  # a .json/.jsonl file or a folder of them
    hf_dataset: str | None = None  # or a Hugging Face dataset name (needs the network or its cache)
    hf_split: str | None = None  # default: train
    format: Literal["auto", "sharegpt", "ultrachat"] | None = None  # default: auto
    min_turns: PositiveInt | None = None  # default: 2
    max_turns: PositiveInt | None = None  # default: 12
    min_words: NonNegInt | None = None  # per turn; default: 1
    max_words: PositiveInt | None = None  # per turn; default: 600
    language: Literal["en", "any"] | None = None  # default: en

    @model_validator(mode="after")
    def _one_source(self) -> FillerSettings:
        if bool(self.path) == bool(self.hf_dataset):
            raise ValueError("give exactly one of filler.path and filler.hf_dataset")
        return self


def filler_for(filler: FillerSettings | None, seed: int) -> CorpusFiller | None:
    """The corpus filler of the ``generator.filler`` section (None when it is null: template filler)."""
    if filler is None:
        return None
    corpus = FillerCorpus.load(**filler.model_dump(exclude_none=True))
    return CorpusFiller(corpus, seed)
