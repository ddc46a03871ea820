"""What a memory agent is given: a role-stripped view of one :class:`~memlens.core.items.EvalItem`.

An agent must not learn which sessions hold the evidence from anything but their content. The
view therefore keeps only what a user of a chat assistant would have: the sessions in date order,
each with a neutral id (``S001``, ``S002`` ... by date), its date and its turns (role, text with
``<image>`` placeholders, the images). It drops the evidence flags, the turns' ``has_answer``
flags, the benchmark's session ids (official ids such as ``answer_...`` encode the role) and the
image ids (official ids are release paths under ``needle_images/``). Images are given by the
SHA-256 of their bytes, as files under a content-addressed folder (``<sha256>.<ext>``), so no path
or folder name tells an agent anything. The question is given only at answer time, with its date.

:class:`AgentView` keeps the mapping back from neutral to benchmark session ids for the runtime,
which translates what an agent retrieved before it is recorded; the agent itself never sees it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memlens.core.errors import ImageError
from memlens.core.io import atomic_write_bytes
from memlens.core.items import EvalItem
from memlens.core.schema import IMAGE_PLACEHOLDER

log = logging.getLogger(__name__)
_SHA256 = re.compile(r"[0-9a-f]{64}")
_EXT = re.compile(r"\.[a-z0-9]{1,8}")

__all__ = ["AgentImage", "AgentSession", "AgentTurn", "AgentView", "ImageStore", "build_view"]


@dataclass(frozen=True)
class AgentImage:
    """An image as an agent sees it (the fields of ``memlens.eval.memory.adapters.ImageInput``)."""

    sha256: str
    path: Path
    family: str | None = None


@dataclass(frozen=True)
class AgentTurn:
    turn_id: int
    role: str
    content: str  # with one <image> placeholder per image, in order
    images: tuple[AgentImage, ...] = ()


@dataclass(frozen=True)
class AgentSession:
    session_id: str  # neutral: S001, S002 ... in date order
    date: str
    turns: tuple[AgentTurn, ...]

    @property
    def images(self) -> list[AgentImage]:
        return [im for t in self.turns for im in t.images]

    def text(self, image_text: Callable[[AgentImage], str] | None = None, *, max_turns: int | None = None) -> str:
        """The session as ``[User]: ...`` / ``[Assistant]: ...`` lines; each ``<image>`` becomes
        ``image_text(image)`` (``[image]`` when none is given)."""
        lines = []
        for t in self.turns[: max_turns or None]:
            lines.append(f"[{t.role.capitalize()}]: {render_turn(t, image_text)}")
        return "\n".join(lines)


def render_turn(turn: AgentTurn, image_text: Callable[[AgentImage], str] | None = None) -> str:
    if not turn.images:
        return turn.content.replace(IMAGE_PLACEHOLDER, "").strip()
    pieces = turn.content.split(IMAGE_PLACEHOLDER)
    out = [pieces[0]]
    for im, piece in zip(turn.images, pieces[1:]):
        out.append(image_text(im) if image_text else "[image]")
        out.append(piece)
    return "".join(out).strip()


@dataclass
class AgentView:
    """One question's role-stripped input: sessions (date order), question text and date."""

    question: str
    question_date: str
    sessions: list[AgentSession]
    #: neutral session id -> benchmark session id (for the runtime; never given to an agent)
    real_ids: dict[str, str] = field(repr=False, default_factory=dict)

    def real(self, neutral_id: str) -> str:
        return self.real_ids.get(neutral_id, neutral_id)


class ImageStore:
    """Content-addressed image files (``<root>/<sha256>.<ext>``) written once from verified bytes.
    Also remembers each benchmark image id's hash within one run.

    A file already at its address is reused only when its content hashes to its name (checked once
    per run); a corrupt or truncated one is written anew, atomically, from the source's bytes. Files
    are copies, never hard links: a link would share the inode of the benchmark's file, so damage
    to one would reach the other (and ``dvc checkout``, which replaces the benchmark's file, would
    leave the damaged copy here). A source whose bytes do not hash to its image id (a built
    benchmark names images by their SHA-256) is an :class:`ImageError` naming it."""

    def __init__(self, root: Path, family_of: Callable[[str], str | None] | None = None):
        self.root = Path(root)
        self.family_of = family_of
        self._by_id: dict[str, AgentImage] = {}
        self._verified: set[Path] = set()
        self._lock = threading.Lock()  # questions run in threads

    def _materialize(self, dst: Path, sha: str, data: bytes) -> None:
        with self._lock:
            self._write_verified(dst, sha, data)

    def _write_verified(self, dst: Path, sha: str, data: bytes) -> None:
        if dst in self._verified:
            return
        try:
            ok = dst.is_file() and hashlib.sha256(dst.read_bytes()).hexdigest() == sha
        except OSError:
            ok = False
        if not ok:
            if dst.exists():
                log.warning("agent image cache: %s does not match its hash (corrupt): written anew", dst)
            atomic_write_bytes(dst, data)
        self._verified.add(dst)

    def image(self, image_id: str, resolve: Callable[[str], Path]) -> AgentImage:
        got = self._by_id.get(image_id)
        if got is not None:
            return got
        src = Path(resolve(image_id))
        try:
            data = src.read_bytes()
        except OSError as exc:
            raise ImageError(src, f"cannot read: {exc}") from None
        sha = hashlib.sha256(data).hexdigest()
        if _SHA256.fullmatch(image_id) and image_id != sha:
            raise ImageError(src, f"content hash {sha[:12]} does not match its image id {image_id[:12]} (corrupt file)")
        ext = src.suffix.lower() if _EXT.fullmatch(src.suffix.lower()) else ".img"
        dst = self.root / f"{sha}{ext}"
        self._materialize(dst, sha, data)
        family = None
        if self.family_of is not None:
            try:
                family = self.family_of(image_id)
            except Exception:
                family = None
        got = self._by_id[image_id] = AgentImage(sha, dst, family)
        return got


def build_view(item: EvalItem, images: ImageStore) -> AgentView:
    """The role-stripped view of ``item`` (sessions sorted by date, stable for equal dates)."""
    order = sorted(range(len(item.sessions)), key=lambda i: (item.sessions[i].date or "", i))
    sessions, real = [], {}
    for rank, i in enumerate(order, 1):
        hs = item.sessions[i]
        sid = f"S{rank:03d}"
        real[sid] = hs.session_id
        turns = tuple(
            AgentTurn(j, t.role, t.content, tuple(images.image(im, item.resolve_image) for im in t.images))
            for j, t in enumerate(hs.turns)
        )
        sessions.append(AgentSession(sid, hs.date or "unknown", turns))
    q = item.question
    return AgentView(q.question, q.question_date or "unknown", sessions, real)
