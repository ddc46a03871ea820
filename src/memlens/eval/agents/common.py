"""Pieces several agents share: session documents, token-budget packing, answer-line parsing."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memlens.eval.agents.view import AgentImage, AgentSession

__all__ = ["answer_line", "pack", "session_doc", "session_text"]


def session_text(
    session: AgentSession, texts: dict[str, str], *, max_turns: int | None = None, header: bool = True
) -> str:
    """A session as text: an optional ``Session <id> (<date>)`` header, then one line per turn, each
    image replaced by its adapter text (``[image]`` when there is none)."""

    def image_text(im: AgentImage) -> str:
        return texts.get(im.sha256, "[image]")

    body = session.text(image_text, max_turns=max_turns)
    return f"Session {session.session_id} ({session.date}):\n{body}" if header else body


def session_doc(session: AgentSession, text: str, *, turn_ids: Sequence[int] | None = None):
    """A retrieval document for one session (``memlens.eval.memory.retrieval.Doc``)."""
    from memlens.eval.memory.retrieval import Doc

    return Doc(
        doc_id=session.session_id,
        session_id=session.session_id,
        date=session.date,
        text=text,
        image_shas=tuple(im.sha256 for im in session.images),
        turn_ids=tuple(turn_ids if turn_ids is not None else (t.turn_id for t in session.turns)),
    )


def pack(blocks: Sequence[str], budget: int, count: Callable[[str], int]) -> tuple[list[int], int]:
    """Indices of the leading ``blocks`` that fit together in ``budget`` tokens (in the given order;
    a block that does not fit is skipped, later smaller ones may still fit) and the tokens used."""
    used, kept = 0, []
    for i, b in enumerate(blocks):
        n = count(b)
        if used + n <= budget:
            kept.append(i)
            used += n
    return kept, used


_ANSWER_RE = re.compile(r"^\s*\**\s*answer\s*\**\s*[:：]\s*(.*)$", re.IGNORECASE)


def answer_line(text: str) -> str:
    """The content of the last ``Answer: ...`` line, markdown bold removed (the whole text, stripped,
    when there is none)."""
    for line in reversed((text or "").strip().splitlines()):
        m = _ANSWER_RE.match(line)
        if m:
            return m.group(1).strip().strip("*").strip()
    return (text or "").strip()
