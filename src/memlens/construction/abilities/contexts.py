"""Context phrases that anchor an image in the text without revealing what it shows.

Evidence and haystack mentions draw from the same phrase space (same templates, same vocabulary,
same family mix), so a session cannot be told from its neighbours by wording. Evidence contexts are
reserved: no other mention reuses them, so every question stays unambiguous. The phrase lists are
package data (``data/contexts.yaml``).
"""

from __future__ import annotations

import random

from memlens.construction.text import textbank
from memlens.core.bank import load_bank

_BANK = load_bank("memlens.construction.abilities", "contexts")  # data/contexts.yaml
OWNERS = list(_BANK.phrases("owners"))
PLACES = list(_BANK.phrases("places"))
ROOMS = list(_BANK.phrases("rooms"))
OCCASIONS = list(_BANK.phrases("occasions"))
PEOPLE = list(_BANK.phrases("people"))
PLANS = list(_BANK.phrases("plans"))
APPS = list(_BANK.phrases("apps"))
WHEN = list(_BANK.phrases("when"))
DISCUSSED = list(_BANK.templates("discussed", slots=("ctx",)))
#: family -> textbank mention kind
FAMILY_KIND = textbank.FAMILY_KIND
#: families whose images print a date or a time of day: a "when" that places them relative to the
#: session ("this morning", "the other day") could contradict what they print, so their mentions
#: take an occasion-like "when" ("my trip", "lunch") and their occasions no time suffix, unless the
#: question type fixed the session date against the printed one (temporal reasoning does)
DATED_FAMILIES = frozenset({"receipt", "ticket", "chat_screenshot", "app_screenshot", "clock", "calendar_page"})
#: "when" phrases that place the image relative to the session that shares it
RELATIVE_WHEN = frozenset({"this morning", "yesterday evening", "the other day", "last weekend", "last week"})
#: undated families whose mentions often say when the image was taken relative to the session
#: (share of their mentions); temporal questions anchor named things the same way
SESSION_DATED = {"named_sign": 0.5, "object_scene": 0.3, "price_tag": 0.3}
#: the noun a named_sign mention uses for its kind ("the place from ..." is a shop front only)
SIGN_NOUN = {
    "shop_sign": "the place from",
    "book_cover": "the book from",
    "product_box": "the box from",
    "street_sign": "the street sign from",
    "license_plate": "the car from",
}
OCCASION_NOUN = {
    "receipt": "the receipt from",
    "price_tag": "the price label I saw on",
    "named_sign": "the place from",
    "ticket": "the ticket for",
}
TIME_SUFFIXES = (" last month", " in spring", " on Friday", " back in winter")


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
    raise RuntimeError("context space exhausted: enlarge the phrase lists in memlens.construction.abilities.contexts")


def scene_context(rng: random.Random, reserved: set[str] | None = None) -> str:
    return _draw(rng, lambda: f"{rng.choice(OWNERS)} {rng.choice(PLACES)}", reserved)


def occasion_noun(family: str, kind: str | None = None) -> str:
    """The noun phrase before an occasion ("the receipt from", "the book from")."""
    if family == "named_sign" and kind in SIGN_NOUN:
        return SIGN_NOUN[kind]
    return OCCASION_NOUN[family]


def thing_for(
    rng: random.Random, family: str, reserved: set[str] | None = None, truth: dict | None = None
) -> tuple[str, str]:
    """(thing phrase used in the mention, context key) for an image of ``family``; ``truth`` (the
    image's ground truth, when it is known) makes the phrase agree with the image: a named_sign's
    noun fits its kind (a book is not "the place from ..."), a chat is with the contact it shows."""
    truth = truth or {}
    if family == "object_scene":
        ctx = scene_context(rng, reserved)
        return ctx, ctx
    if family in OCCASION_NOUN:
        suffixes = [""] + ([] if family in DATED_FAMILIES else list(TIME_SUFFIXES))
        occ = _draw(
            rng,
            lambda: rng.choice(OCCASIONS) + rng.choice(["", f" with {rng.choice(PEOPLE)}"]) + rng.choice(suffixes),
            reserved,
        )
        return f"{occasion_noun(family, truth.get('kind'))} {occ}", occ
    if family == "chat_screenshot":
        contact = None if truth.get("is_group", False) else truth.get("title")
        if truth and contact is None:  # a group chat: no one person to name
            ctx = _draw(rng, lambda: f"the group chat about {rng.choice(PLANS)}", reserved)
        else:
            ctx = _draw(
                rng, lambda: f"my chat with {contact or rng.choice(PEOPLE)} about {rng.choice(PLANS)}", reserved
            )
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


def when_for(rng: random.Random, family: str) -> str:
    """A "when" phrase true of any image of ``family`` (see :data:`DATED_FAMILIES`)."""
    if family in DATED_FAMILIES:
        return rng.choice([w for w in WHEN if w not in RELATIVE_WHEN])
    return rng.choice(WHEN)


#: families whose images are photographed where they are, whatever ``FAMILY_KIND`` files them
#: under (a wall calendar is not "found in my bag" or "filed away" like a receipt)
PHOTOGRAPHED = frozenset({"calendar_page"})


def mention_kind(family: str) -> str:
    """The textbank mention kind whose phrasings fit an image of ``family``."""
    return "photo" if family in PHOTOGRAPHED else FAMILY_KIND.get(family, "photo")


def mention_for(rng: random.Random, family: str, thing: str, tail: str | None = None) -> str:
    """A mention sentence for an image (one ``<image>`` right after the thing it shows)."""
    kind = mention_kind(family)
    if family in SESSION_DATED and rng.random() < SESSION_DATED[family]:
        # places and things seen "this morning" / "yesterday evening" are everyday in any session,
        # as in the temporal questions that date them by their session: the phrase points at none
        when = rng.choice(["this morning", "yesterday evening"])
        return textbank.render_mention(rng, kind=kind, thing=thing, when=when, tail=tail, require_when=True)
    return textbank.render_mention(rng, kind=kind, thing=thing, when=when_for(rng, family), tail=tail)


def discussed_mention(rng: random.Random, ctx: str) -> str:
    """A sentence that talks about ``ctx`` without sharing any image of it (no ``<image>``)."""
    return rng.choice(DISCUSSED).format(ctx=ctx) + "."
