"""The evaluation prompt: one :class:`~memlens.core.items.EvalItem` -> chat messages.

This reproduces the official MEMLENS protocol as it is today (``build_messages`` in the official
``data.py``, role-preserving since 2026-06-10), and the older single-message layout as an option.

Layout ``messages`` (default, the current official protocol)
    1. ``system``: :data:`SYSTEM_PROMPT` (answer from the history; otherwise reply with the exact
       phrase ``Insufficient information``), one text block.
    2. The history (skipped in ``no_context``): one message per turn, with the turn's role;
       consecutive turns with the same role are *not* merged. Sessions are numbered from 1 in the
       order they are given; the header ``=== Session {i} (Date: {date}) ===`` goes into the
       session's first turn: prefixed, with a newline, to its first block when that is text,
       otherwise inserted as a separate text block before it. The header therefore sits in
       whatever role the first turn has, which may be ``assistant`` (kept as the official code
       does it; see below).
    3. A turn's blocks: its text is split on ``<image>``; each placeholder becomes the next image
       block (``{"type": "image_url", "image_url": {"url": ImageRef}}``), the text fragments between
       them are kept unstripped, whitespace-only fragments are dropped. A turn without images is
       emitted as its stripped text (if any). With ``label_images`` a text block ``[Image N]``
       precedes each image, ``N`` counting from 1 across the whole item.
    4. ``user``: the question message, three lines and a trailing newline: the instruction,
       ``Question Date: <date>``, ``Question: <question>``.

Layout ``legacy`` (the official prompt before 2026-06-10, the one the paper shows)
    One ``user`` message and no system message: the system sentence, ``Conversation:``, the
    context string (``\\n=== Session i (Date: d) ===\\n`` per session, then ``[User]: `` or
    ``[Assistant]: ``, the stripped turn text with its ``<image>`` placeholders in place, and
    ``\\n`` per turn; with labels each placeholder becomes ``[Image k] <image>``), a blank line, then
    the instruction, ``Question Date:`` and ``Question:`` lines. The text is then split on
    ``<image>`` and the images are paired with the placeholders in order.

Modes (:data:`memlens.eval.systems.base.MODES`)
    ``standard`` (instruction: answer only), ``cot`` (think step by step), ``reasoning``
    (``[REASONING]`` / ``[ANSWER]`` format), ``text_only`` (image ablation: no image blocks,
    ``<image>`` removed from the text, headers kept), ``no_context`` (system + question only),
    ``label_images`` (``[Image N]`` labels, standard instruction) and ``oracle_evidence`` (only
    the evidence sessions, in their history order, numbered 1..k). ``label_images=True`` adds
    labels to any mode. The instruction strings reproduce the official constants verbatim
    (``INSTRUCTION_DEFAULT``, ``INSTRUCTION_COT``, ``INSTRUCTION_REASONING``), as do
    :data:`SYSTEM_PROMPT` and the templates: changing a character changes the benchmark.

Image references
    Image blocks carry an :class:`ImageRef`: a ``str`` holding the absolute local path (so the
    message is valid input for :class:`~memlens.core.http.OpenAICompatibleClient`,
    whose :class:`~memlens.core.images.ImageEncoder` turns it into a cached ``data:`` or
    ``file://`` URL, and for the transformers backend, which loads the file) plus the item's
    ``image_id``. Building messages never reads or encodes image bytes.

Deliberate differences from the official code (its behaviour in brackets)
    * A missing or unresolvable image is an error (:class:`memlens.core.errors.ImageError`) that fails
      the item with a recorded reason. [The image is silently dropped; in the legacy layout the
      remaining images then shift onto the wrong placeholders and ``[Image k]`` labels go wrong.]
    * Images are always local files. [API runs default to the original third-party web URL
      (``image_url``), so results depend on remote hosts.] Resizing (``max_image_side``) is the
      same for every backend, in the encoder. [Applied by some wrappers only; see the facts file.]
    * Roles other than ``user``/``assistant`` are rejected when the data is loaded (the
      :class:`~memlens.core.schema.Turn` schema; the release loader maps non-``assistant`` roles to
      ``user`` as ``build_messages`` does), so the two official builders can no longer disagree.
      [``build_messages`` maps unknown roles to user, ``build_context`` to assistant.]
    * Every turn holds exactly one ``<image>`` per image (the schema guarantees it; the release
      loader normalises turns where the counts differ), so placeholders and images never
      mismatch. [Extra placeholders are dropped, extra images appended, mismatches only warned.]
      Caveat: for a release turn with images but *no* placeholder, the official builder puts the
      images before the (stripped) text, while the release loader currently appends the
      placeholders after it. MemLens exports always carry placeholders, so only third-party
      releases with such turns are affected.
    * The question is never truncated and the history is never cut: the length is chosen by the
      split. An over-long request fails on the server and is recorded as a failed item
      (``ok=False``), never dropped. [``--input_max_length`` is ignored and failed samples vanish
      from the prediction file, shrinking the denominator.]
    * In the legacy layout only the conversation is split on ``<image>``; a literal ``<image>``
      inside the question text stays text. [The whole prompt is split, so such a placeholder
      would take, or lose, an image.]
    * ``oracle_evidence`` and ``text_only`` on the messages layout are MemLens additions
      (``text_only`` exists officially as ``--text_only``); the oracle mode renumbers the kept
      sessions 1..k. For answer-refusal questions (no evidence) it equals ``no_context``.
    * Kept as in the official code, on purpose: a session header inside an assistant message when
      the session starts with an assistant turn, and consecutive same-role turns left unmerged.
      Both are part of the prompt every published number was produced with.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memlens.core.constants import INSTRUCTIONS, QUESTION_TEMPLATE, SESSION_HEADER, SYSTEM_PROMPT
from memlens.core.errors import ImageError
from memlens.core.items import EvalItem, HistorySession
from memlens.core.schema import IMAGE_PLACEHOLDER

__all__ = [
    "HEADER",
    "PROMPT_PROTOCOL",
    "IMAGE_LABEL",
    "INSTRUCTIONS",
    "LAYOUTS",
    "LEGACY_TEMPLATE",
    "QUESTION_TEMPLATE",
    "SYSTEM_PROMPT",
    "ImageRef",
    "build_messages",
    "history_key",
    "instruction_for",
    "iter_images",
    "sessions_for",
]

#: The single user message of the legacy layout (official ``USER_TEMPLATE``).
LEGACY_TEMPLATE = (
    SYSTEM_PROMPT
    + "\nConversation:\n{context}\n\n{instruction}\nQuestion Date: {question_date}\nQuestion: {question}\n"
)

HEADER = SESSION_HEADER

#: Version of the prompt protocol (this module's rendering of an item into messages). It is part of
#: every results-store key: bump it whenever the rendered messages change, so stored answers are
#: never reused for a prompt they were not given (a test pins the rendering to this version).
PROMPT_PROTOCOL = "memlens-prompt-1"
IMAGE_LABEL = "[Image {n}]"
LAYOUTS = ("messages", "legacy")
_LEGACY_ROLE = {"user": "[User]: ", "assistant": "[Assistant]: "}
_KNOWN_MODES = ("standard", "cot", "reasoning", "text_only", "no_context", "label_images", "oracle_evidence")


class ImageRef(str):
    """An image reference inside an image block: the absolute local path (the ``str`` value),
    plus the item's ``image_id`` (the ``sha256`` of the image's bytes, for a built benchmark and an
    official release alike). Backends turn it into a request URL or a loaded image."""

    __slots__ = ("image_id",)

    def __new__(cls, path: str, image_id: str) -> ImageRef:
        obj = super().__new__(cls, path)
        obj.image_id = image_id
        return obj

    def __reduce__(self):  # keep picklable (e.g. across processes)
        return (ImageRef, (str(self), self.image_id))


def instruction_for(mode: str) -> str:
    """The instruction line of ``mode`` (``reasoning`` and ``cot`` have their own)."""
    if mode not in _KNOWN_MODES:
        raise ValueError(f"unknown mode {mode!r} (known: {', '.join(_KNOWN_MODES)})")
    return INSTRUCTIONS.get(mode, INSTRUCTIONS["standard"])


def sessions_for(item: EvalItem, mode: str) -> list[HistorySession]:
    """The sessions shown in ``mode``: none (no_context), the evidence ones (oracle_evidence), or all."""
    if mode == "no_context":
        return []
    if mode == "oracle_evidence":
        return [s for s in item.sessions if s.is_evidence]
    return item.sessions


def history_key(item: EvalItem, mode: str) -> tuple[str, ...]:
    """Session ids of the history shown in ``mode``: requests whose keys share a prefix share a
    prompt prefix (the system message is common to all), which server prefix caches exploit."""
    return tuple(s.session_id for s in sessions_for(item, mode))


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _image(ref: ImageRef) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": ref}}


class _Resolver:
    """Resolves image ids of one item (each id once) and counts images for ``[Image N]`` labels."""

    __slots__ = ("item", "cache", "count")

    def __init__(self, item: EvalItem):
        self.item = item
        self.cache: dict[str, ImageRef] = {}
        self.count = 0

    def __call__(self, image_id: str) -> ImageRef:
        ref = self.cache.get(image_id)
        if ref is None:
            if self.item.resolve_image is None:
                raise ImageError(image_id, f"question {self.item.question_id}: no image resolver")
            path = self.item.resolve_image(image_id)  # raises ImageError for a missing file
            ref = self.cache[image_id] = ImageRef(str(path), image_id)
        return ref


def _check_role(role: str, item: EvalItem) -> str:
    if role not in _LEGACY_ROLE:
        raise ValueError(f"question {item.question_id}: turn role must be 'user' or 'assistant', got {role!r}")
    return role


def _turn_blocks(content: str, images: list[str], resolve: _Resolver, label: bool, text_only: bool) -> list[dict]:
    if text_only or not images:
        text = content.replace(IMAGE_PLACEHOLDER, "").strip()
        return [_text(text)] if text else []
    parts = content.split(IMAGE_PLACEHOLDER)
    if len(parts) - 1 != len(images):  # the schema prevents this; never pair images wrongly
        raise ValueError(f"turn has {len(parts) - 1} <image> placeholders but {len(images)} images")
    blocks: list[dict] = []
    for k, part in enumerate(parts):
        if k:
            ref = resolve(images[k - 1])
            resolve.count += 1
            if label:
                blocks.append(_text(IMAGE_LABEL.format(n=resolve.count)))
            blocks.append(_image(ref))
        if part.strip():
            blocks.append(_text(part))
    return blocks


def _messages_layout(item, sessions, instruction, label, text_only, system_prefix) -> list[dict]:
    system = SYSTEM_PROMPT if not system_prefix else system_prefix + SYSTEM_PROMPT
    messages: list[dict] = [{"role": "system", "content": [_text(system)]}]
    resolve = _Resolver(item)
    for i, session in enumerate(sessions, 1):
        header = HEADER.format(i=i, date=session.date or "unknown")
        for j, turn in enumerate(session.turns):
            role = _check_role(turn.role, item)
            blocks = _turn_blocks(turn.content, turn.images, resolve, label, text_only)
            if j == 0:
                if blocks and blocks[0]["type"] == "text":
                    blocks[0] = _text(f"{header}\n{blocks[0]['text']}")
                else:
                    blocks.insert(0, _text(header))
            if blocks:
                messages.append({"role": role, "content": blocks})
    q = item.question
    messages.append(
        {
            "role": "user",
            "content": [
                _text(
                    QUESTION_TEMPLATE.format(
                        instruction=instruction, question_date=q.question_date or "unknown", question=q.question
                    )
                )
            ],
        }
    )
    return messages


def _legacy_layout(item, sessions, instruction, label, text_only, system_prefix) -> list[dict]:
    parts: list[str] = []
    refs: list[ImageRef] = []
    resolve = _Resolver(item)
    for i, session in enumerate(sessions, 1):
        parts.append("\n" + HEADER.format(i=i, date=session.date or "unknown") + "\n")
        for turn in session.turns:
            parts.append(_LEGACY_ROLE[_check_role(turn.role, item)])
            text = turn.content
            if text_only or not turn.images:
                text = text.replace(IMAGE_PLACEHOLDER, "")
            else:
                pieces = text.split(IMAGE_PLACEHOLDER)
                if len(pieces) - 1 != len(turn.images):
                    raise ValueError(f"turn has {len(pieces) - 1} <image> placeholders but {len(turn.images)} images")
                out = [pieces[0]]
                for image_id, piece in zip(turn.images, pieces[1:]):
                    refs.append(resolve(image_id))
                    resolve.count += 1
                    out.append(
                        f"{IMAGE_LABEL.format(n=resolve.count)} {IMAGE_PLACEHOLDER}" if label else IMAGE_PLACEHOLDER
                    )
                    out.append(piece)
                text = "".join(out)
            text = text.strip()
            if text:
                parts.append(text)
            parts.append("\n")
    head, tail = LEGACY_TEMPLATE.split("{context}")
    q = item.question
    head = (system_prefix or "") + head
    tail = tail.format(instruction=instruction, question_date=q.question_date or "unknown", question=q.question)
    # Split only the conversation on <image>; the question stays literal text.
    segments = (head + "".join(parts)).split(IMAGE_PLACEHOLDER)
    assert len(segments) - 1 == len(refs)
    blocks: list[dict] = []
    for k, seg in enumerate(segments):
        if k:
            blocks.append(_image(refs[k - 1]))
        if k == len(segments) - 1:
            seg += tail
        if seg.strip():
            blocks.append(_text(seg))
    return [{"role": "user", "content": blocks}]


def build_messages(
    item: EvalItem,
    mode: str = "standard",
    *,
    layout: str = "messages",
    label_images: bool = False,
    system_prefix: str | None = None,
) -> list[dict]:
    """Chat messages for ``item`` in ``mode`` (see the module docstring for the exact protocol).

    Args:
        item: the question and its history.
        mode: one of :data:`memlens.eval.systems.base.MODES`.
        layout: ``"messages"`` (role-preserving, current official) or ``"legacy"`` (one user message).
        label_images: put ``[Image N]`` before every image (implied by ``mode="label_images"``).
        system_prefix: text put before the system prompt (e.g. ``"/no_think\\n"`` for Nemotron, as
            its official wrapper does); in the legacy layout, before the user message.

    Raises:
        memlens.core.errors.ImageError: an image of the shown history cannot be resolved.
        ValueError: unknown mode or layout, or a malformed turn.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")
    instruction = instruction_for(mode)
    label = label_images or mode == "label_images"
    text_only = mode == "text_only"
    sessions = sessions_for(item, mode)
    build = _messages_layout if layout == "messages" else _legacy_layout
    return build(item, sessions, instruction, label, text_only, system_prefix)


def iter_images(messages: list[dict]) -> Iterator[str]:
    """The image references of ``messages`` in prompt order."""
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            for b in content:
                if b.get("type") == "image_url":
                    ref = b["image_url"]
                    yield ref["url"] if isinstance(ref, dict) else ref
