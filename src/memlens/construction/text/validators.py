"""The six-check validator chain run on every generated turn (paper, "Evidence session construction").

1. ``length``: the turn's word count is within the configured range.
2. ``photo_directive``: a turn carrying images holds one ``<image>`` per image, placed inside the
   verbatim mention sentence (so the image sits next to the thing it shows).
3. ``ngram_leakage``: no forbidden string (abstracted entity, answer) occurs, token-bounded.
4. ``semantic_leakage``: no value that only the image shows (its drawn strings and numbers) occurs
   in the text (offline stand-in for the paper's LLM text-only check).
5. ``ambiguity``: for KU and MSR, no string that would disambiguate the image (e.g. the item a
   descriptor stands for) occurs.
6. ``end_marker``: user turns end with sentence punctuation; assistant turns end with a question.
A turn failing any check is regenerated; counts of failures per check are reported.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from memlens.construction.text.leakage import PhraseIndex, contains, tokens
from memlens.core.schema import IMAGE_PLACEHOLDER

CHECKS = ("length", "photo_directive", "ngram_leakage", "semantic_leakage", "ambiguity", "end_marker")
_WORD = re.compile(r"\S+")


def word_count(text: str) -> int:
    return len(_WORD.findall(text.replace(IMAGE_PLACEHOLDER, " ")))


def contains_token_bounded(text: str, needle: str) -> bool:
    """Token-bounded, case-insensitive occurrence (see :mod:`memlens.construction.text.leakage`)."""
    return contains(text, needle)


@dataclass
class TurnSpec:
    role: str
    text: str
    n_images: int = 0
    mention: str | None = None
    words: tuple[int, int] = (1, 10_000)
    forbidden: list[str] | PhraseIndex = field(default_factory=list)
    image_values: list[str] = field(default_factory=list)
    ambiguity: list[str] = field(default_factory=list)


def check_turn(t: TurnSpec) -> list[str]:
    """Names of the failed checks (empty list: the turn is admitted)."""
    failed = []
    body = t.text
    scan = body.replace(t.mention, " ") if t.mention and t.mention in body else body
    wc = word_count(body)
    if not (t.words[0] <= wc <= t.words[1]):
        failed.append("length")
    if t.n_images or IMAGE_PLACEHOLDER in body:
        ok = (
            body.count(IMAGE_PLACEHOLDER) == t.n_images
            and t.mention is not None
            and t.mention in body
            and t.mention.count(IMAGE_PLACEHOLDER) == t.n_images
        )
        if not ok:
            failed.append("photo_directive")
    body_toks = tokens(body)
    forb = t.forbidden if isinstance(t.forbidden, PhraseIndex) else PhraseIndex(f for f in t.forbidden if f)
    if forb and forb.find(body_toks):
        failed.append("ngram_leakage")
    vals = [v for v in t.image_values if v and len(v) > 1]
    if vals and PhraseIndex(vals).find(scan):
        failed.append("semantic_leakage")
    amb = [a for a in t.ambiguity if a]
    if amb and PhraseIndex(amb).find(body_toks):
        failed.append("ambiguity")
    end = body.rstrip()
    if t.role == "assistant" and not end.endswith("?"):
        failed.append("end_marker")
    if t.role == "user" and end[-1:] not in (".", "?", "!", ">", ")"):
        failed.append("end_marker")
    return failed


class RejectionLog:
    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.turns = 0
        self.regenerated = 0

    def record(self, failed: list[str]) -> None:
        self.turns += 1
        for f in failed:
            self.counts[f] += 1
        if failed:
            self.regenerated += 1

    def summary(self) -> dict:
        return {
            "turns_checked": self.turns,
            "turns_regenerated": self.regenerated,
            "failures_by_check": {c: int(self.counts.get(c, 0)) for c in CHECKS},
        }
