"""Balanced closed answers: the answer a closed-form question gets (A/B, Yes/No, a small count)
is assigned per build and subtype from a seeded balanced sequence, so the majority answer of a
subtype is right no more often than chance.

An ability lists the answer classes of a variant (:meth:`Ability.answer_classes`); the crawl
stage deals each plan slot of a subtype a wanted class (:func:`wants`) and the plan makes that the
answer (``want=``). Slots whose variants share one class set form a group; the first ``target``
slots of a group hold each class equally often (within one: ``target`` may not be a multiple of
the number of classes), and so do the spare slots among themselves. The generate stage keeps,
per class, exactly as many questions as the first ``target`` slots planned (:func:`quotas`):
a spare replaces a dropped plan only with a question of a class still short.
"""

from __future__ import annotations

import random
from collections import Counter

from memlens.core.store import derive_rng

__all__ = ["balanced", "wants", "quotas"]


def balanced(rng: random.Random, classes: tuple[str, ...], n: int) -> list[str]:
    """``n`` classes, each ``n // len(classes)`` or one more times (which get one more is drawn),
    in a random order."""
    k = len(classes)
    extra = rng.sample(list(classes), n % k)
    seq = [c for c in classes for _ in range(n // k)] + extra
    rng.shuffle(seq)
    return seq


def wants(seed: int, qtype: str, sub: str, slot_classes: list[tuple[str, ...] | None], target: int) -> list[str | None]:
    """Per plan slot (``slot_classes[i]``: the classes of slot i's variant, None for an open
    answer), its wanted class; slots ``< target`` are balanced per class set, and so are the spares."""
    out: list[str | None] = [None] * len(slot_classes)
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, cls in enumerate(slot_classes):
        if cls:
            groups.setdefault(tuple(cls), []).append(i)
    for cls, slots in sorted(groups.items()):
        rng = derive_rng(seed, "balance", qtype, sub, "|".join(cls))
        main = [i for i in slots if i < target]
        spare = [i for i in slots if i >= target]
        for part in (main, spare):
            for i, c in zip(part, balanced(rng, cls, len(part))):
                out[i] = c
    return out


def quotas(plans) -> dict[tuple[str, str], Counter]:
    """(type, subtype) -> how many questions of each wanted class the first ``target`` slots planned."""
    out: dict[tuple[str, str], Counter] = {}
    for p in plans:
        want = p.latent.get("_want")
        if want is None or int(p.latent.get("_index", 0)) >= int(p.latent.get("_target", 0)):
            continue
        out.setdefault((p.question_type, p.question_subtype), Counter())[want] += 1
    return out
