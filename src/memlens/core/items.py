"""What a system under test is given: an :class:`EvalItem` = a question plus its history at one length.

Two sources produce the same items: a benchmark built by this pipeline (``BuiltBenchmark``: questions,
content-addressed sessions and images, instances) and an official MEMLENS release folder
(:mod:`memlens.core.official`). Models never know which one they are evaluated on.

An item as a source yields it carries the answer key (the question's answer, evidence and details,
evidence flags on sessions and turns) for the request key, the judge and the oracle mode. A system
receives :meth:`EvalItem.for_system` instead: the question's id, text and date, and the history
with neutral ids (content-hash session and image ids), no evidence flag, no ``has_answer``, no
answer, question type or details; the ``oracle_evidence`` mode keeps only the evidence sessions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG

from memlens.core.config import Paths, length_tokens
from memlens.core.errors import DataError, ImageError
from memlens.core.io import canonical_bytes, iter_jsonl, read_records, sha256_bytes
from memlens.core.schema import ImageRecord, Instance, Question, Session, Turn


def session_digest(turns: list[Turn], image_digest: Callable[[str], str]) -> str:
    """SHA-256 of what a session shows a system: each turn's role, text and image contents."""
    return sha256_bytes(canonical_bytes([[t.role, t.content, [image_digest(i) for i in t.images]] for t in turns]))


#: the prompt mode that shows only the evidence sessions (an upper bound, not a benchmark run)
ORACLE_MODE = "oracle_evidence"
#: answer-format hints a calibration baseline may see (:meth:`EvalItem.for_system`): the format
#: and range of the answer space, never the answer, its evidence or how many sessions hold it
_FORMAT_KEYS = ("answer_format", "answer_range", "choices", "currency", "code_shape", "date_range")
ANSWER_SPACE_KEYS = frozenset({*_FORMAT_KEYS, "source_type", "source_subtype", *(f"source_{k}" for k in _FORMAT_KEYS)})


@dataclass
class HistorySession:
    session_id: str
    date: str
    turns: list[Turn]
    is_evidence: bool = False
    #: :func:`session_digest` of the turns (filled by the item source; "" when unknown)
    digest: str = ""


@dataclass
class EvalItem:
    question: Question
    length: str
    sessions: list[HistorySession]
    resolve_image: Callable[[str], Path] = field(repr=False, default=None)  # type: ignore[assignment]

    @property
    def question_id(self) -> str:
        return self.question.question_id

    @property
    def image_ids(self) -> list[str]:
        return [i for s in self.sessions for t in s.turns for i in t.images]

    @property
    def evidence_sessions(self) -> list[HistorySession]:
        return [s for s in self.sessions if s.is_evidence]

    def for_system(self, mode: str = "standard", *, answer_space: bool = False) -> EvalItem:
        """What a system under test sees of this item (see the module docstring).

        ``answer_space=True`` (calibration baselines only, e.g. the chance baseline) also keeps the
        question type and subtype and the answer-format hints of :data:`ANSWER_SPACE_KEYS`."""
        q = self.question
        hints = {}
        if answer_space:
            hints = {k: v for k, v in q.details.items() if k in ANSWER_SPACE_KEYS}
        visible = Question.unchecked(
            question_id=q.question_id,
            question_type=q.question_type if answer_space else "",
            question_subtype=q.question_subtype if answer_space else "",
            question=q.question,
            answer="",
            question_date=q.question_date,
            topic_id="",
            old_answer=None,
            evidence=[],
            ordered_evidence=False,
            image_essential=True,
            source_question_id=None,
            details=hints,
        )
        oracle = mode == ORACLE_MODE
        sessions = [
            HistorySession(
                s.session_id,
                s.date,
                # a turn that is no answer's evidence is shown as it is (nothing in memlens mutates a
                # turn); an evidence turn as a copy without ``has_answer`` (checked when read: not again)
                [
                    t
                    if not t.has_answer
                    else Turn.unchecked(role=t.role, content=t.content, images=list(t.images), has_answer=False)
                    for t in s.turns
                ],
                oracle,
                s.digest,
            )
            for s in self.sessions
            if s.is_evidence or not oracle
        ]
        return EvalItem(visible, self.length, sessions, self.resolve_image)

    def fingerprint(self) -> str:
        """SHA-256 of everything about the item that can reach a system: the question and its date,
        and the history in order (each session's content digest, date and evidence flag, which the
        oracle-evidence mode uses). Equal fingerprints = the same request; any change to the
        question, a session, an image's bytes or the order changes it."""
        missing = [s.session_id for s in self.sessions if not s.digest]
        if missing:
            raise DataError(f"item {self.question_id}: sessions without a content digest: {missing[:3]}")
        return sha256_bytes(
            canonical_bytes(
                {
                    "question": self.question.question,
                    "question_date": self.question.question_date,
                    "history": [[s.digest, s.date, bool(s.is_evidence)] for s in self.sessions],
                }
            )
        )


class BuiltBenchmark:
    """Reads a benchmark built by the pipeline (``data/generated`` + ``data/instances``)."""

    def __init__(self, paths: Paths):
        self.paths = paths
        gen = paths.generated
        self.questions = {q.question_id: q for q in read_records(gen / "questions.jsonl", Question, nonempty=True)}
        empty = next((q for q in self.questions.values() if not q.answer.strip()), None)
        if empty is not None:
            raise DataError(f"{gen / 'questions.jsonl'}: question {empty.question_id}: field 'answer' is empty")
        self._sessions: dict[str, Session] | None = None
        self._images: dict[str, ImageRecord] | None = None
        self._digests: dict[str, str] = {}
        self._unanswered: dict[str, list[Turn]] = {}  # session id -> its turns with has_answer False
        self._verified: dict[Path, tuple[int, int]] = {}
        self._image_paths: dict[str, Path] = {}  # image id -> its file, once verified

    def session_digest(self, session_id: str) -> str:
        """Content digest of a session (images are named by the SHA-256 of their bytes already)."""
        d = self._digests.get(session_id)
        if d is None:
            d = self._digests[session_id] = session_digest(self.sessions[session_id].turns, str)
        return d

    @property
    def sessions(self) -> dict[str, Session]:
        if self._sessions is None:
            self._sessions = {
                s.session_id: s for s in read_records(self.paths.generated / "sessions.jsonl", Session, nonempty=True)
            }
        return self._sessions

    @property
    def images(self) -> dict[str, ImageRecord]:
        if self._images is None:
            idx = self.paths.images / "index.jsonl"
            self._images = {}
            for i, row in enumerate(iter_jsonl(idx)):
                rec = ImageRecord.from_dict(row["image"], where=f"{idx}:{i + 1}")
                self._images[rec.sha256] = rec
        return self._images

    def lengths(self) -> list[str]:
        d = self.paths.instances
        return sorted((p.stem for p in d.glob("*.jsonl")), key=length_tokens)  # 32k ... 512k, 1m

    def resolve_image(self, image_id: str) -> Path:
        path = self._image_paths.get(image_id)
        if path is not None:  # seen before: one stat says whether it is still the verified file
            try:
                st = os.stat(path)
            except OSError:
                st = None
            if st is not None and S_ISREG(st.st_mode) and self._verified.get(path) == (st.st_size, st.st_mtime_ns):
                return path
        rec = self.images.get(image_id)
        if rec is None:
            raise ImageError(image_id, "not in the image index")
        path = self.paths.images / "objects" / rec.filename
        if not path.is_file():
            raise ImageError(path, "missing file")
        self._verify(path, image_id)
        self._image_paths[image_id] = path
        return path

    def _verify(self, path: Path, sha: str) -> None:
        """The file's bytes hash to its image id (once per process and file version): a corrupt or
        truncated image is an error for its item, never sent under the key of the intact one."""
        from memlens.core.io import sha256_file_memo

        st = path.stat()
        stamp = (st.st_size, st.st_mtime_ns)
        if self._verified.get(path) == stamp:
            return
        actual = sha256_file_memo(path)
        if actual != sha:
            raise ImageError(
                path,
                f"content hash {actual[:12]} does not match its id {sha[:12]} (corrupt file; `dvc checkout` restores it)",
            )
        self._verified[path] = stamp

    def instances(self, length: str) -> list[Instance]:
        path = self.paths.instances / f"{length}.jsonl"
        if not path.is_file():
            raise DataError(f"{path}: no instances for length {length!r} (built: {', '.join(self.lengths())})")
        return read_records(path, Instance)

    def items(self, length: str) -> Iterator[EvalItem]:
        for inst in self.instances(length):
            q = self.questions.get(inst.question_id)
            if q is None:
                raise DataError(f"instances/{length}.jsonl: unknown question {inst.question_id}")
            ev = set(inst.answer_session_ids)
            hist = []
            for sid, date in zip(inst.session_ids, inst.dates):
                s = self.sessions.get(sid)
                if s is None:
                    raise DataError(
                        f"instances/{length}.jsonl: question {q.question_id} references missing session {sid}"
                    )
                turns = s.turns
                if sid not in ev and any(t.has_answer for t in turns):  # another question's evidence
                    turns = self._without_answers(sid, turns)
                hist.append(HistorySession(sid, date, turns, sid in ev, self.session_digest(sid)))
            yield EvalItem(q, length, hist, self.resolve_image)

    def _without_answers(self, session_id: str, turns: list[Turn]) -> list[Turn]:
        """The session's turns marked as no answer's evidence (another question's evidence shown as
        history): made once per session (its turns were checked when read), a new list per item."""
        done = self._unanswered.get(session_id)
        if done is None:
            done = self._unanswered[session_id] = [
                Turn.unchecked(role=t.role, content=t.content, images=t.images, has_answer=False) for t in turns
            ]
        return list(done)

    def count(self, length: str) -> int:
        return len(self.instances(length))
