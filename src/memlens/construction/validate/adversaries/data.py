"""What the adversaries read: a built benchmark loaded once, and the views a system under test has.

:class:`Bench` holds the records of a data folder (``images/index.jsonl``, ``generated/``,
``instances/``). :meth:`Bench.view` gives the text-only view of one question at one length: the
question text and date and the history as (date, text) pairs, ``<image>`` markers in place. It
holds no image truth, no session ids or kinds, no ``details``: what a text-only solver may use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memlens.core.config import length_tokens
from memlens.core.constants import AR, REFUSAL_REFERENCE
from memlens.core.errors import MemLensError
from memlens.core.io import iter_jsonl, read_records
from memlens.core.schema import ImageRecord, Instance, Question, Session, parse_date


@dataclass(frozen=True)
class TextView:
    """A question as a text-only solver sees it at one length."""

    question_id: str
    question: str
    question_date: datetime
    history: tuple[tuple[datetime, str], ...]  # (session date, session text with <image> markers), in order


@dataclass
class Bench:
    questions: dict[str, Question]
    sessions: dict[str, Session]
    images: dict[str, ImageRecord]
    image_bytes: dict[str, int]  # sha256 -> file size (absent when the object file is missing)
    instances: dict[str, list[Instance]]  # length -> instances, lengths in increasing order
    _by_q: dict[str, dict[str, Instance]] = field(default_factory=dict, repr=False)
    _texts: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def lengths(self) -> list[str]:
        return list(self.instances)

    def instance(self, length: str, qid: str) -> Instance | None:
        if length not in self._by_q:
            self._by_q[length] = {i.question_id: i for i in self.instances[length]}
        return self._by_q[length].get(qid)

    def text(self, session_id: str) -> str:
        """A session's text, made once: every view of every length shares the one string (a 256K
        history joined afresh per view is about a megabyte, and a length's views are held together)."""
        t = self._texts.get(session_id)
        if t is None:
            t = self._texts[session_id] = self.sessions[session_id].text
        return t

    def view(self, inst: Instance) -> TextView:
        q = self.questions[inst.question_id]
        hist = tuple((parse_date(d), self.text(s)) for s, d in zip(inst.session_ids, inst.dates))
        return TextView(q.question_id, q.question, parse_date(q.question_date), hist)

    def answerable(self) -> list[Question]:
        return [q for q in self.sorted_questions() if q.question_type != AR]

    def sorted_questions(self) -> list[Question]:
        return [self.questions[k] for k in sorted(self.questions)]


def is_refusal(q: Question) -> bool:
    return q.question_type == AR or q.answer.strip() == REFUSAL_REFERENCE


def load(data: str | Path, lengths: list[str] | None = None) -> Bench:
    """Load a built benchmark's data folder (the folder holding ``images/``, ``generated/``, ``instances/``)."""
    data = Path(data)
    need = [
        data / "generated" / "questions.jsonl",
        data / "generated" / "sessions.jsonl",
        data / "images" / "index.jsonl",
    ]
    for p in need:
        if not p.is_file():
            raise MemLensError(f"{p}: missing (is {data} the data folder of a built benchmark?)")
    questions = {q.question_id: q for q in read_records(need[0], Question)}
    sessions = {s.session_id: s for s in read_records(need[1], Session)}
    images, sizes = {}, {}
    for row in iter_jsonl(need[2]):
        rec = ImageRecord.from_dict(row["image"], where=str(need[2]))
        images[rec.sha256] = rec
        f = data / "images" / "objects" / rec.filename
        if f.is_file():
            sizes[rec.sha256] = f.stat().st_size
    files = sorted((data / "instances").glob("*.jsonl"), key=lambda p: length_tokens(p.stem))
    if lengths:
        files = [p for p in files if p.stem in set(lengths)]
        missing = set(lengths) - {p.stem for p in files}
        if missing:
            raise MemLensError(f"{data / 'instances'}: no instances for {', '.join(sorted(missing))}")
    if not files:
        raise MemLensError(f"{data / 'instances'}: no <length>.jsonl instance files")
    instances = {p.stem: read_records(p, Instance) for p in files}
    for ln, insts in instances.items():
        for i in insts:
            bad = [s for s in i.session_ids if s not in sessions]
            if i.question_id not in questions or bad:
                raise MemLensError(
                    f"{data / 'instances' / (ln + '.jsonl')}: question {i.question_id} refers to an unknown "
                    f"{'session ' + bad[0] if bad else 'question'}"
                )
    return Bench(questions, sessions, images, sizes, instances)
