"""Context phrases that anchor an image in the text without revealing what it shows.

Evidence and haystack mentions draw from the same phrase space (same templates, same vocabulary),
so a session cannot be told from its neighbours by wording; evidence contexts are reserved, so no
haystack mention reuses them and every question stays unambiguous.
"""
from __future__ import annotations

import random

OWNERS = ["my sister's", "my brother's", "my parents'", "my cousin's", "my neighbour's", "my friend Dana's",
          "my flatmate's", "my aunt's", "my grandmother's", "my colleague's", "our", "my old", "my new",
          "my partner's", "my uncle's", "my friend Omar's", "my landlord's", "my niece's"]
PLACES = ["kitchen shelf", "hallway shelf", "study bookshelf", "living room sideboard", "dining table",
          "balcony table", "office desk", "garden table", "bedroom dresser", "kitchen counter",
          "workshop bench", "studio shelf", "reading nook shelf", "window sill", "coffee table",
          "breakfast bar", "pantry shelf", "craft table"]

SCENE_MENTIONS = [
    "I finally tidied {ctx} and this is how it looks now <image>",
    "this is {ctx} after the weekend clear-out <image>",
    "I snapped {ctx} this morning <image>",
    "here's a photo of {ctx} <image>",
    "I rearranged {ctx} again <image>",
    "quick picture of {ctx} before guests arrived <image>",
]


def scene_context(rng: random.Random, reserved: set[str] | None = None) -> str:
    reserved = reserved or set()
    for _ in range(200):
        ctx = f"{rng.choice(OWNERS)} {rng.choice(PLACES)}"
        if ctx not in reserved:
            return ctx
    raise RuntimeError("context space exhausted: enlarge OWNERS/PLACES")
