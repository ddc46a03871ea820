"""What the crawl stage's plans draw besides the question types' own choices, in one home (the
stage and the validate stage's probe set draw with them): a question's topic and the request
constraints a haystack image copies from an evidence image."""

from __future__ import annotations

from memlens.core.schema import Topic

#: request constraints that shape an image (renderer variant, layout, size, photo effect) without
#: carrying a question's value; haystack requests copy these from an evidence request
SHAPE_KEYS = ("kind", "style", "photo", "n_items", "setting", "store_type", "event_type", "on_sale", "currency")


def choose_topic(rng, topics: list[Topic], qtype: str, families: list[str]) -> Topic:
    own = [t for t in topics if qtype in t.abilities]
    fit = (
        [t for t in own if set(families) & set(t.families)]
        or [t for t in topics if set(families) & set(t.families)]
        or own
        or topics
    )
    return fit[rng.randrange(len(fit))]
