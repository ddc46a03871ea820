"""The official MEMLENS release format: the only module that knows its layout and quirks.

Release folder: ``dataset_{32k,64k,128k,256k}.json`` (a JSON list of items; a dict with a ``data``
list is accepted too), ``release_images/`` with ``needle_images/`` and ``haystack_images/``, and
``agent_subset_195.json`` (``n_questions``, ``question_ids``). One item::

    question_id, question_type, question_subtype, question, answer, question_date,
    haystack_dates[], haystack_session_ids[], haystack_sessions[[turn]], answer_session_ids[],
    old_answer (KU)

A turn is ``{role, content, images: [{file, image_url, blip_caption}], has_answer}``; ``file`` is
relative to ``release_images/``. Image refs may also be plain strings or dicts keyed ``path``,
``file_path`` or ``img_file`` (as the official resolver accepts). Items are streamed one at a time
so the 778 MB 256K file never sits in memory whole. Image paths are resolved inside
``release_images/`` only: a path that escapes it is an error, never a silent drop.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memlens.core.errors import DataError, ImageError, SchemaError
from memlens.core.io import sha256_bytes
from memlens.core.schema import Evidence, Question, Turn
from memlens.core.store import safe_join

DATASET_RE = re.compile(r"^dataset_(\d+k)\.json$")
_IMAGE_KEYS = ("file", "path", "file_path", "img_file")


def iter_json_array(path: Path, chunk_size: int = 1 << 20) -> Iterator[Any]:
    """Stream the items of a top-level JSON array (or of the ``data`` array of a top-level object)
    without loading the whole file. Raises :class:`DataError` with the byte offset on bad JSON and
    on text that is not UTF-8."""
    try:
        yield from _iter_json_array(path, chunk_size)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} in a block read near character {exc.start})") from None


def _iter_json_array(path: Path, chunk_size: int) -> Iterator[Any]:
    dec = json.JSONDecoder()
    with open(path, encoding="utf-8") as fh:
        buf = fh.read(chunk_size)
        pos = 0
        offset = 0

        def fill() -> bool:
            nonlocal buf, pos, offset
            more = fh.read(chunk_size)
            if not more:
                return False
            offset += pos
            buf = buf[pos:] + more
            pos = 0
            return True

        def skip_ws():
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n":
                    pos += 1
                if pos < len(buf) or not fill():
                    return

        skip_ws()
        if pos >= len(buf):
            raise DataError(f"{path}: empty file")
        if buf[pos] == "{":
            # a dict container: find the "data" key; small files only need this path
            try:
                whole = json.loads(buf[pos:] + fh.read())
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
            data = whole.get("data")
            if not isinstance(data, list):
                raise DataError(f"{path}: a top-level object needs a 'data' list of items")
            yield from data
            return
        if buf[pos] != "[":
            raise DataError(f"{path}: expected a JSON list of items")
        pos += 1
        while True:
            skip_ws()
            if pos >= len(buf):
                raise DataError(f"{path}: truncated JSON (unterminated list)")
            if buf[pos] == "]":
                return
            if buf[pos] == ",":
                pos += 1
                continue
            while True:
                try:
                    obj, end = dec.raw_decode(buf, pos)
                    break
                except json.JSONDecodeError as exc:
                    if not fill():
                        raise DataError(f"{path}: not valid JSON near byte {offset + exc.pos}: {exc.msg}") from None
            pos = end
            yield obj


def image_ref_path(ref: Any) -> str | None:
    if isinstance(ref, str):
        return ref
    if isinstance(ref, dict):
        for k in _IMAGE_KEYS:
            v = ref.get(k)
            if isinstance(v, list):
                v = v[0] if v else None
            if isinstance(v, str) and v:
                return v
    return None


def parse_item(item: Any, where: str) -> tuple[Question, list[tuple[str, str, list[Turn]]]]:
    """One release item -> (Question, [(session_id, date, turns)]). Image ids are the ``file`` paths."""
    if not isinstance(item, dict):
        raise SchemaError(f"{where}: an item must be an object, got {type(item).__name__}")
    qid = item.get("question_id")
    w = f"{where} (question {qid})"
    for k in ("question_id", "question_type", "question", "answer"):
        if not isinstance(item.get(k), str):
            raise SchemaError(f"{w}: field {k!r} must be a string")
    sessions = item.get("haystack_sessions")
    if not isinstance(sessions, list):
        raise SchemaError(f"{w}: field 'haystack_sessions' must be a list")
    dates = item.get("haystack_dates") or []
    sids = item.get("haystack_session_ids") or [f"{qid}_s{i}" for i in range(len(sessions))]
    out = []
    for i, sess in enumerate(sessions):
        date = dates[i] if i < len(dates) else "unknown"
        if isinstance(sess, dict):  # {"date":..., "session":[turns]}
            date = sess.get("date", date)
            sess = sess.get("session", [])
        if not isinstance(sess, list):
            raise SchemaError(f"{w}: haystack_sessions[{i}] must be a list of turns")
        turns = []
        for j, t in enumerate(sess):
            if not isinstance(t, dict) or not isinstance(t.get("content", ""), str):
                raise SchemaError(f"{w}: haystack_sessions[{i}][{j}] must be a turn object with string content")
            refs = t.get("images") or []
            if not isinstance(refs, list):
                raise SchemaError(f"{w}: haystack_sessions[{i}][{j}].images must be a list")
            paths = []
            for k, r in enumerate(refs):
                p = image_ref_path(r)
                if p is None:
                    raise SchemaError(f"{w}: haystack_sessions[{i}][{j}].images[{k}] has no file path")
                paths.append(p)
            content = t.get("content", "")
            role = t.get("role")
            if role not in ("user", "assistant"):  # the official code sends any other value as user
                raise SchemaError(f"{w}: haystack_sessions[{i}][{j}].role must be 'user' or 'assistant', got {role!r}")
            n = content.count("<image>")
            if n == 0 and paths:  # official rule: images without placeholders come before the text
                content = " ".join(["<image>"] * len(paths)) + " " + content
            elif n < len(paths):  # official rule: images beyond the placeholders go after the text
                content = content + " " + " ".join(["<image>"] * (len(paths) - n))
            elif n > len(paths):  # placeholders without an image are dropped
                parts = content.split("<image>")
                content = (
                    "".join(p + ("<image>" if k < len(paths) else "") for k, p in enumerate(parts[:-1])) + parts[-1]
                )
            turns.append(Turn(role=role, content=content, images=paths, has_answer=bool(t.get("has_answer", False))))
        out.append((str(sids[i]) if i < len(sids) else f"{qid}_s{i}", str(date), turns))
    answer_ids = set(item.get("answer_session_ids") or [])
    evidence = [
        Evidence.unchecked(session_id=sid, date=date, fact="", image_ids=[i for t in turns for i in t.images])
        for sid, date, turns in out
        if sid in answer_ids
    ]
    q = Question.unchecked(
        question_id=qid,
        question_type=item["question_type"],
        question_subtype=str(item.get("question_subtype") or ""),
        question=item["question"],
        answer=item["answer"],
        question_date=str(item.get("question_date") or "unknown"),
        topic_id="",
        old_answer=item.get("old_answer"),
        evidence=evidence,
        ordered_evidence=False,
        image_essential=True,
        source_question_id=None,
        details={k: v for k, v in item.items() if k not in _CORE_FIELDS},
    )
    from memlens.core.schema import QUESTION_TYPES

    if q.question_type not in QUESTION_TYPES:
        raise SchemaError(f"{w}: unknown question_type {q.question_type!r}")
    return q, out


_CORE_FIELDS = {
    "question_id",
    "question_type",
    "question_subtype",
    "question",
    "answer",
    "question_date",
    "haystack_dates",
    "haystack_session_ids",
    "haystack_sessions",
    "answer_session_ids",
    "old_answer",
}


class OfficialRelease:
    """A MEMLENS release folder, read through the same item interface as a built benchmark."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise DataError(f"{self.folder}: release folder not found")
        self.image_root = self.folder / "release_images"
        self._questions: dict[str, Question] | None = None
        self._image_digests: dict[str, str] = {}

    def image_digest(self, rel: str) -> str:
        """SHA-256 of an image file of the release (read once per path). A missing or unsafe path
        gets a digest naming the problem: the request itself then fails and is recorded as failed."""
        d = self._image_digests.get(rel)
        if d is None:
            from memlens.core.io import sha256_file

            try:
                d = sha256_file(self.resolve_image(rel))
            except ImageError as exc:
                d = "unavailable:" + sha256_bytes(f"{rel}\0{exc.reason}".encode())
            self._image_digests[rel] = d
        return d

    def lengths(self) -> list[str]:
        names = [m.group(1) for p in self.folder.iterdir() if (m := DATASET_RE.match(p.name))]
        return sorted(names, key=lambda n: int(n[:-1]))

    def dataset_path(self, length: str) -> Path:
        p = self.folder / f"dataset_{length}.json"
        if not p.is_file():
            raise DataError(f"{p}: not found (available lengths: {', '.join(self.lengths()) or 'none'})")
        return p

    def resolve_image(self, rel: str) -> Path:
        if rel.startswith(("http://", "https://")):
            raise ImageError(rel, "remote image URLs are not fetched; use the local release_images/ folder")
        path = safe_join(self.image_root, rel)
        if not path.is_file():
            raise ImageError(path, "missing file")
        return path

    def iter_parsed(self, length: str):
        path = self.dataset_path(length)
        for i, item in enumerate(iter_json_array(path)):
            yield parse_item(item, f"{path.name}[{i}]")

    def items(self, length: str):
        from memlens.core.items import EvalItem, HistorySession, session_digest

        for q, sessions in self.iter_parsed(length):
            ev = set(q.evidence_session_ids)
            hist = [
                HistorySession(sid, d, turns, sid in ev, session_digest(turns, self.image_digest))
                for sid, d, turns in sessions
            ]
            yield EvalItem(q, length, hist, self.resolve_image)

    def count(self, length: str) -> int:
        return sum(1 for _ in iter_json_array(self.dataset_path(length)))

    @property
    def questions(self) -> dict[str, Question]:
        if self._questions is None:
            lengths = self.lengths()
            if not lengths:
                raise DataError(f"{self.folder}: no dataset_*.json files")
            self._questions = {q.question_id: q for q, _ in self.iter_parsed(lengths[0])}
        return self._questions

    def agent_subset(self) -> list[str]:
        p = self.folder / "agent_subset_195.json"
        from memlens.core.io import read_json

        data = read_json(p)
        ids = data.get("question_ids") if isinstance(data, dict) else data
        if not isinstance(ids, list):
            raise DataError(f"{p}: expected 'question_ids' list")
        return [str(x) for x in ids]

    def dataset_hash(self) -> str:
        h = hashlib.sha256()
        for ln in self.lengths():
            p = self.dataset_path(ln)
            h.update(p.name.encode())
            with open(p, "rb") as fh:
                while block := fh.read(1 << 22):
                    h.update(block)
        return h.hexdigest()


def load_release(folder: str | Path) -> OfficialRelease:
    """Open a MEMLENS release folder (``dataset_*.json``, ``release_images/``, ``agent_subset_195.json``)."""
    return OfficialRelease(folder)


def iter_items(path: str | Path):
    """Stream ``(Question, [(session_id, date, turns)])`` from one ``dataset_<length>.json`` file."""
    path = Path(path)
    for i, item in enumerate(iter_json_array(path)):
        yield parse_item(item, f"{path.name}[{i}]")
