"""Context phrases that anchor an image in the text without revealing what it shows.

Evidence and haystack mentions draw from the same phrase space (same templates, same vocabulary,
same family mix), so a session cannot be told from its neighbours by wording. Evidence contexts are
reserved: no other mention reuses them, so every question stays unambiguous. The phrase lists are
package data (``data/contexts.yaml``).
"""

from __future__ import annotations

import random

from memlens.build.text import textbank
from memlens.core.bank import load_bank

_BANK = load_bank("memlens.build.abilities", "contexts")  # data/contexts.yaml
OWNERS = list(_BANK.phrases("owners"))
PLACES = list(_BANK.phrases("places"))
ROOMS = list(_BANK.phrases("rooms"))
OCCASIONS = list(_BANK.phrases("occasions"))
PEOPLE = list(_BANK.phrases("people"))
PLANS = list(_BANK.phrases("plans"))
APPS = list(_BANK.phrases("apps"))
WHEN = list(_BANK.phrases("when"))
#: family -> textbank mention kind
FAMILY_KIND = textbank.FAMILY_KIND


def _clashes(c: str, reserved: set[str]) -> bool:
    """A context clashes with a reserved one when either contains the other ("the flea market"
    vs "the flea market with Leo"): a mention of it would make that question ambiguous."""
    if c in reserved:
        return True
    return any(c in r or r in c for r in reserved)


def _draw(rng: random.Random, make, reserved: set[str] | None) -> str:
    reserved = reserved if reserved is not None else set()
    for _ in range(500):
        c = make()
        if not _clashes(c, reserved):
            return c
    raise RuntimeError("context space exhausted: enlarge the phrase lists in memlens.build.abilities.contexts")


def scene_context(rng: random.Random, reserved: set[str] | None = None) -> str:
    return _draw(rng, lambda: f"{rng.choice(OWNERS)} {rng.choice(PLACES)}", reserved)


def thing_for(rng: random.Random, family: str, reserved: set[str] | None = None) -> tuple[str, str]:
    """(thing phrase used in the mention, context key) for an image of ``family``."""
    if family == "object_scene":
        ctx = scene_context(rng, reserved)
        return ctx, ctx
    if family in ("receipt", "price_tag", "named_sign", "ticket"):
        occ = _draw(
            rng,
            lambda: (
                rng.choice(OCCASIONS)
                + rng.choice(["", f" with {rng.choice(PEOPLE)}"])
                + rng.choice(["", " last month", " in spring", " on Friday", " back in winter"])
            ),
            reserved,
        )
        noun = {
            "receipt": "the receipt from",
            "price_tag": "the price label I saw on",
            "named_sign": "the place from",
            "ticket": "the ticket for",
        }[family]
        return f"{noun} {occ}", occ
    if family == "chat_screenshot":
        ctx = _draw(rng, lambda: f"my chat with {rng.choice(PEOPLE)} about {rng.choice(PLANS)}", reserved)
        return ctx, ctx
    if family == "app_screenshot":
        ctx = _draw(rng, lambda: f"{rng.choice(APPS)} page for {rng.choice(PLANS)}", reserved)
        return f"{ctx}", ctx
    if family in ("clock", "calendar_page"):
        ctx = _draw(
            rng,
            lambda: f"the {'clock' if family == 'clock' else 'calendar'} in {rng.choice(OWNERS)} {rng.choice(ROOMS)}",
            reserved,
        )
        return ctx, ctx
    ctx = _draw(rng, lambda: f"{rng.choice(OWNERS)} {rng.choice(PLACES)}", reserved)
    return ctx, ctx


def mention_for(rng: random.Random, family: str, thing: str, tail: str | None = None) -> str:
    """A mention sentence for an image (one ``<image>`` right after the thing it shows)."""
    kind = FAMILY_KIND.get(family, "photo")
    return textbank.render_mention(rng, kind=kind, thing=thing, when=rng.choice(WHEN), tail=tail)
