"""The official MEMLENS release format: the only module that knows its layout and quirks.

Release folder: ``dataset_{32k,64k,128k,256k}.json`` (and ``dataset_512k.json``, ``dataset_1m.json``) (a JSON list of items; a dict with a ``data``
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

A release exported by MemLens also holds ``answer_key.jsonl`` (:data:`ANSWER_KEY`; one row per
question id: ``topic_id``, ``evidence`` [{session_id, date, fact, image_files}], ``ordered_evidence``,
``image_essential``, ``source_question_id``, ``details``), merged into the questions the judge and
the report read; an official release without it works as before.

The items a system receives name no role: in :meth:`OfficialRelease.items` an image id is the
SHA-256 of the image's bytes (as in a built benchmark), never its ``needle_images/`` or
``haystack_images/`` path, and it resolves to a content-addressed copy (a hard link when possible)
``<neutral_dir>/<sha256>.<ext>`` outside those folders.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memlens.core.config import length_tokens
from memlens.core.errors import DataError, ImageError, SchemaError
from memlens.core.io import sha256_bytes, sha256_file
from memlens.core.schema import Evidence, Question, Turn, is_release_date
from memlens.core.store import content_link, safe_join

DATASET_RE = re.compile(r"^dataset_(\d+[km])\.json$")  # dataset_32k.json ... dataset_1m.json
#: the answer key beside the dataset files of a MemLens export
ANSWER_KEY = "answer_key.jsonl"
#: the fields of an official item (facts §1.3): all a release item holds
ITEM_FIELDS = (
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
)
TURN_FIELDS = ("role", "content", "images", "has_answer")
IMAGE_REF_FIELDS = ("file", "image_url", "blip_caption")
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


def _parallel_list(item: dict, field: str, n: int, where: str, *, required: bool = True) -> list | None:
    """A list that runs parallel to ``haystack_sessions``: present (unless optional) and of length ``n``."""
    v = item.get(field)
    if v is None:
        if required:
            raise SchemaError(f"{where}: required field {field!r} is missing")
        return None
    if not isinstance(v, list):
        raise SchemaError(f"{where}: field {field!r} must be a list")
    if len(v) != n:
        raise SchemaError(f"{where}: field {field!r} has {len(v)} entries for {n} haystack_sessions")
    return v


def parse_item(item: Any, where: str) -> tuple[Question, list[tuple[str, str, list[Turn]]]]:
    """One release item -> (Question, [(session_id, date, turns)]). Image ids are the ``file`` paths."""
    if not isinstance(item, dict):
        raise SchemaError(f"{where}: an item must be an object, got {type(item).__name__}")
    qid = item.get("question_id")
    w = f"{where} (question {qid})"
    for k in ("question_id", "question_type", "question", "answer", "question_date"):
        if k not in item:
            raise SchemaError(f"{w}: required field {k!r} is missing")
        if not isinstance(item.get(k), str):
            raise SchemaError(f"{w}: field {k!r} must be a string, got {type(item.get(k)).__name__}")
        if not item[k].strip():
            raise SchemaError(f"{w}: field {k!r} is empty")
    if not is_release_date(item["question_date"]):
        raise SchemaError(
            f"{w}: field 'question_date' is not a 'YYYY/MM/DD (Ddd) HH:MM' date: {item['question_date']!r}"
        )
    sessions = item.get("haystack_sessions")
    if not isinstance(sessions, list):
        raise SchemaError(f"{w}: field 'haystack_sessions' must be a list")
    dated = bool(sessions) and all(isinstance(x, dict) and "date" in x for x in sessions)  # {"date", "session"}
    dates = _parallel_list(item, "haystack_dates", len(sessions), w, required=not dated)
    if dates is None or dated:
        dates = [x["date"] for x in sessions] if dated else dates
    sids = _parallel_list(item, "haystack_session_ids", len(sessions), w, required=False)
    if sids is None:
        sids = [f"{qid}_s{i}" for i in range(len(sessions))]
    elif len(set(map(str, sids))) != len(sids):
        raise SchemaError(f"{w}: field 'haystack_session_ids' lists a session id twice")
    for i, d in enumerate(dates):
        if not isinstance(d, str) or not is_release_date(d):
            raise SchemaError(f"{w}: haystack_dates[{i}] is not a 'YYYY/MM/DD (Ddd) HH:MM' date: {d!r}")
    answer_ids = item.get("answer_session_ids") or []
    if not isinstance(answer_ids, list):
        raise SchemaError(f"{w}: field 'answer_session_ids' must be a list")
    unknown = [a for a in answer_ids if str(a) not in set(map(str, sids))]
    if unknown:
        raise SchemaError(f"{w}: answer_session_ids names sessions not in haystack_session_ids: {unknown[:3]}")
    out = []
    for i, sess in enumerate(sessions):
        date = dates[i]
        if isinstance(sess, dict):  # {"date":..., "session":[turns]}
            sess = sess.get("session", [])
        if not isinstance(sess, list):
            raise SchemaError(f"{w}: haystack_sessions[{i}] must be a list of turns")
        turns = []
        for j, t in enumerate(sess):
            if not isinstance(t, dict):
                raise SchemaError(f"{w}: haystack_sessions[{i}][{j}] must be a turn object")
            if "content" not in t:
                raise SchemaError(f"{w}: haystack_sessions[{i}][{j}]: required field 'content' is missing")
            if not isinstance(t["content"], str):
                raise SchemaError(f"{w}: haystack_sessions[{i}][{j}].content must be a string")
            refs = t.get("images") or []
            if not isinstance(refs, list):
                raise SchemaError(f"{w}: haystack_sessions[{i}][{j}].images must be a list")
            paths = []
            for k, r in enumerate(refs):
                p = image_ref_path(r)
                if p is None:
                    raise SchemaError(f"{w}: haystack_sessions[{i}][{j}].images[{k}] has no file path")
                paths.append(p)
            content = t["content"]
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
        if not turns:
            raise SchemaError(f"{w}: haystack_sessions[{i}] has no turns")
        out.append((str(sids[i]), str(date), turns))
    answer_ids = {str(a) for a in answer_ids}
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
        question_date=item["question_date"],
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


_CORE_FIELDS = set(ITEM_FIELDS)


class OfficialRelease:
    """A MEMLENS release folder, read through the same item interface as a built benchmark."""

    def __init__(self, folder: str | Path, neutral_dir: str | Path | None = None, *, link_images: bool = True):
        """``neutral_dir``: where images are linked under their content hash for systems (default:
        a folder in the system temporary directory; the benchmark passes one in the cache);
        ``link_images=False``: images resolve to their verified release files, nothing is written
        (a dry run, which shows images by hash and sends none)."""
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise DataError(f"{self.folder}: release folder not found")
        self.image_root = self.folder / "release_images"
        self.neutral_dir = (
            Path(neutral_dir) if neutral_dir else Path(tempfile.gettempdir()) / f"memlens-images-{os.getuid()}"
        )
        self.link_images = link_images
        self._questions: dict[str, Question] | None = None
        self._image_digests: dict[str, str] = {}
        self._linked: set[Path] = set()
        self._file_of: dict[str, str] = {}  # image id (content digest) -> release path
        self._answer_key: dict[str, dict] | None = None

    # the answer key -----------------------------------------------------------------------------
    def answer_key(self) -> dict[str, dict]:
        """``answer_key.jsonl`` rows by question id ({} for an official release without one)."""
        if self._answer_key is None:
            from memlens.core.io import iter_jsonl

            path = self.folder / ANSWER_KEY
            key: dict[str, dict] = {}
            if path.is_file():
                for i, row in enumerate(iter_jsonl(path)):
                    qid = row.get("question_id") if isinstance(row, dict) else None
                    if not isinstance(qid, str) or not isinstance(row.get("evidence", []), list):
                        raise SchemaError(f"{path}:{i + 1}: an answer-key row needs a question_id and an evidence list")
                    if qid in key:
                        raise SchemaError(f"{path}:{i + 1}: question {qid} appears twice")
                    key[qid] = row
            self._answer_key = key
        return self._answer_key

    def _with_key(self, q: Question) -> Question:
        """``q`` completed from the answer key (evidence facts and order, labels, details)."""
        row = self.answer_key().get(q.question_id)
        if row is None:
            return q
        where = f"{self.folder / ANSWER_KEY} (question {q.question_id})"
        ev = []
        for e in row.get("evidence") or []:
            if not isinstance(e, dict) or not isinstance(e.get("session_id"), str):
                raise SchemaError(f"{where}: an evidence entry needs a session_id")
            files = e.get("image_files") or []
            ev.append(
                Evidence.unchecked(
                    session_id=e["session_id"],
                    date=str(e.get("date") or ""),
                    fact=str(e.get("fact") or ""),
                    image_ids=[self._neutral_id(f) for f in files],
                )
            )
        if sorted(e.session_id for e in ev) != sorted(q.evidence_session_ids):
            raise DataError(
                f"{where}: evidence sessions {sorted(e.session_id for e in ev)} differ from the item's "
                f"answer_session_ids {sorted(q.evidence_session_ids)} (an answer key of another build?)"
            )
        details = row.get("details") or {}
        if not isinstance(details, dict):
            raise SchemaError(f"{where}: details must be an object")
        q.evidence = ev
        q.topic_id = str(row.get("topic_id") or "")
        q.ordered_evidence = bool(row.get("ordered_evidence", False))
        q.image_essential = bool(row.get("image_essential", True))
        q.source_question_id = row.get("source_question_id")
        q.details = {**q.details, **details}
        return q

    # images -------------------------------------------------------------------------------------
    def _neutral_id(self, rel: str) -> str:
        """The id a system sees for release image ``rel``: its content digest."""
        d = self.image_digest(rel)
        self._file_of.setdefault(d, rel)
        return d

    def image_digest(self, rel: str) -> str:
        """SHA-256 of an image file of the release (read once per path). A missing or unsafe path
        gets a digest naming the problem: the request itself then fails and is recorded as failed."""
        d = self._image_digests.get(rel)
        if d is None:
            try:
                d = sha256_file(self.release_path(rel))
            except ImageError as exc:
                d = "unavailable:" + sha256_bytes(f"{rel}\0{exc.reason}".encode())
            self._image_digests[rel] = d
        return d

    def lengths(self) -> list[str]:
        names = [m.group(1) for p in self.folder.iterdir() if (m := DATASET_RE.match(p.name))]
        return sorted(names, key=length_tokens)

    def dataset_path(self, length: str) -> Path:
        p = self.folder / f"dataset_{length}.json"
        if not p.is_file():
            raise DataError(f"{p}: not found (available lengths: {', '.join(self.lengths()) or 'none'})")
        return p

    def release_path(self, rel: str) -> Path:
        """The file of release image path ``rel`` (inside ``release_images/`` only)."""
        if rel.startswith(("http://", "https://")):
            raise ImageError(rel, "remote image URLs are not fetched; use the local release_images/ folder")
        path = safe_join(self.image_root, rel)
        if not path.is_file():
            raise ImageError(path, "missing file")
        return path

    def resolve_image(self, image_id: str) -> Path:
        """The file of an image id of :meth:`items` (a content digest): a content-addressed link
        ``<neutral_dir>/<sha256>.<ext>`` whose path names no role. A release path is accepted too
        (and resolved inside ``release_images/``)."""
        rel = self._file_of.get(image_id)
        if rel is None:
            return self.release_path(image_id)
        src = self.release_path(rel)  # a missing or unsafe file fails here, naming the release path
        if not self.link_images:
            if sha256_file(src) != image_id:
                raise ImageError(src, f"changed while being read (its content no longer hashes to {image_id[:12]})")
            return src
        return content_link(src, image_id, self.neutral_dir, self._linked)

    def iter_parsed(self, length: str):
        """``(Question, [(session_id, date, turns)])`` per item; questions completed from the answer
        key; image ids are the release paths."""
        path = self.dataset_path(length)
        for i, item in enumerate(iter_json_array(path)):
            q, sessions = parse_item(item, f"{path.name}[{i}]")
            yield self._with_key(q), sessions

    def items(self, length: str):
        from memlens.core.items import EvalItem, HistorySession, session_digest

        for q, sessions in self.iter_parsed(length):
            ev = set(q.evidence_session_ids)
            hist = []
            for sid, d, turns in sessions:
                neutral = [
                    Turn(
                        role=t.role,
                        content=t.content,
                        images=[self._neutral_id(r) for r in t.images],
                        has_answer=t.has_answer,
                    )
                    for t in turns
                ]
                # the digest of the neutral turns equals that of the release turns: image ids are digests
                hist.append(HistorySession(sid, d, neutral, sid in ev, session_digest(neutral, str)))
            for e in q.evidence:
                e.image_ids = [i if i in self._file_of else self._neutral_id(i) for i in e.image_ids]
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
