"""The user of a benchmark: one persona whose name every image that shows the user carries.

Boarding passes and event tickets print the passenger or holder, chat screenshots the phone's owner,
booking confirmations the guest. Haystack sessions and their images are shared by every history
of a build (see the assemble stage), so the persona is one per benchmark seed: whatever history an
image lands in, the user's name on it is the same.
"""

from __future__ import annotations

from memlens.construction.images.synthetic import vocab
from memlens.core.store import derive_rng

#: image families that print the user's own name (they accept the ``user`` constraint)
USER_FAMILIES = ("ticket", "chat_screenshot", "app_screenshot")


def persona_for(seed: int) -> str:
    """The user's full name ("First Last") for a benchmark seed (deterministic)."""
    rng = derive_rng(int(seed), "persona")
    return f"{rng.choice(vocab.FIRST_NAMES)} {rng.choice(vocab.LAST_NAMES)}"


def with_user(family: str, constraints: dict, user: str) -> dict:
    """``constraints`` plus the user's name for the families that print it (a plan's explicit
    passenger, holder or owner is kept: the family gives those precedence)."""
    if family not in USER_FAMILIES:
        return dict(constraints)
    return {**constraints, "user": user}
