"""Context phrases that anchor an image in the text without revealing what it shows.

Evidence and haystack mentions draw from the same phrase space (same templates, same vocabulary,
same family mix), so a session cannot be told from its neighbours by wording. Evidence contexts are
reserved: no other mention reuses them, so every question stays unambiguous.
"""
from __future__ import annotations

import random

OWNERS = ["my sister's", "my brother's", "my parents'", "my cousin's", "my neighbour's", "my friend Dana's",
          "my flatmate's", "my aunt's", "my grandmother's", "my colleague's", "our", "my old", "my new",
          "my partner's", "my uncle's", "my friend Omar's", "my landlord's", "my niece's", "my boss's",
          "my friend Priya's", "my godmother's", "my teammate's"]
PLACES = ["kitchen shelf", "hallway shelf", "study bookshelf", "living room sideboard", "dining table",
          "balcony table", "office desk", "garden table", "bedroom dresser", "kitchen counter",
          "workshop bench", "studio shelf", "reading nook shelf", "window sill", "coffee table",
          "breakfast bar", "pantry shelf", "craft table", "entryway console", "bathroom shelf"]
ROOMS = ["kitchen", "hallway", "office", "study", "living room", "bedroom", "workshop", "studio", "dining room",
         "guest room", "waiting room", "classroom", "break room"]
OCCASIONS = ["that bakery run", "the farmers market trip", "lunch with the team", "the late dinner downtown",
             "my sister's birthday shopping", "the hardware store visit", "the weekend grocery haul",
             "the airport stopover", "the bookshop detour", "the pharmacy stop", "the office supplies order",
             "the picnic shopping", "the camping gear run", "the garden centre visit", "the brunch outing",
             "the school supplies trip", "the museum cafe", "the holiday market", "the bike shop repair",
             "the pet store errand", "the night market", "the conference lunch", "the beach kiosk",
             "the train station snack stop", "the street food walk", "the flea market",
             "the antique fair", "the harbour walk", "the ski weekend", "the vineyard tour", "the craft fair",
             "the food hall visit", "the outlet mall trip", "the lake cabin weekend", "the zoo outing",
             "the car boot sale", "the book fair", "the design fair", "the cheese shop stop", "the spice market",
             "the record fair", "the aquarium trip", "the festival weekend", "the college reunion",
             "the cooking class", "the pottery market", "the wine bar evening", "the ferry crossing"]
PEOPLE = ["Maya", "Jonas", "Lena", "Tariq", "Sofia", "Ben", "Aiko", "Marco", "Nadia", "Owen", "Chloe", "Ravi",
          "Ines", "Felix", "Hana", "Leo", "Zara", "Tomás", "Elif", "Sam"]
PLANS = ["the dinner plans", "the weekend hike", "the concert tickets", "the study group", "the moving day",
         "the birthday surprise", "the road trip", "the book club meeting", "the gym schedule",
         "the carpool", "the camping trip", "the museum visit", "the wedding gift", "the garden project"]
APPS = ["my delivery app", "the fitness tracker", "the weather app", "the booking site", "my banking app",
        "the streaming account page", "the grocery app", "the hotel app", "the airline app", "the library app"]

#: family -> textbank mention kind
FAMILY_KIND = {"object_scene": "photo", "named_sign": "photo", "price_tag": "photo", "clock": "photo",
               "receipt": "document", "ticket": "document", "calendar_page": "document",
               "chat_screenshot": "screenshot", "app_screenshot": "screenshot"}
WHEN = ["last weekend", "the other day", "my trip", "this morning", "yesterday evening", "the market",
        "lunch", "my commute", "the holidays", "last week"]


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
        occ = _draw(rng, lambda: rng.choice(OCCASIONS) + rng.choice(["", f" with {rng.choice(PEOPLE)}"])
                    + rng.choice(["", " last month", " in spring", " on Friday", " back in winter"]), reserved)
        noun = {"receipt": "the receipt from", "price_tag": "the price label I saw on", "named_sign": "the place from",
                "ticket": "the ticket for"}[family]
        return f"{noun} {occ}", occ
    if family == "chat_screenshot":
        ctx = _draw(rng, lambda: f"my chat with {rng.choice(PEOPLE)} about {rng.choice(PLANS)}", reserved)
        return ctx, ctx
    if family == "app_screenshot":
        ctx = _draw(rng, lambda: f"{rng.choice(APPS)} page for {rng.choice(PLANS)}", reserved)
        return f"{ctx}", ctx
    if family in ("clock", "calendar_page"):
        ctx = _draw(rng, lambda: f"the {'clock' if family == 'clock' else 'calendar'} in {rng.choice(OWNERS)} {rng.choice(ROOMS)}", reserved)
        return ctx, ctx
    ctx = _draw(rng, lambda: f"{rng.choice(OWNERS)} {rng.choice(PLACES)}", reserved)
    return ctx, ctx


def mention_for(rng: random.Random, family: str, thing: str, tail: str | None = None) -> str:
    """A mention sentence for an image (one ``<image>`` right after the thing it shows)."""
    from memlens.build.text import textbank

    kind = FAMILY_KIND.get(family, "photo")
    return textbank.render_mention(rng, kind=kind, thing=thing, when=rng.choice(WHEN), tail=tail)
