"""Entity abstraction: categories, anaphor dictionary, classification, replacement, background."""

from __future__ import annotations

import random
import re

import pytest

from memlens.construction.text import abstraction as ab
from memlens.construction.text.validators import contains_token_bounded

COLOURS = {"red", "blue", "green", "yellow", "orange", "purple", "white", "black", "grey", "gray", "pink", "brown"}


def test_inventory_sizes():
    inv = ab.inventory()
    assert 50 <= inv["categories"] <= 60
    assert 150 <= inv["templates"] <= 190
    assert all(3 <= n <= 4 for n in inv["per_category"].values())
    assert sum(inv["per_category"].values()) == inv["templates"]
    assert set(inv["groups"]) == {"place", "organization", "object", "event", "generic"}
    for c in (
        "bakery",
        "cafe",
        "bookshop",
        "museum",
        "park",
        "restaurant",
        "bridge",
        "temple",
        "pharmacy",
        "florist",
        "barber",
        "gym",
        "hotel",
        "airport",
        "train_station",
        "street",
        "market",
        "company",
        "foundation",
        "institute",
        "airline",
        "streaming_service",
        "bank",
        "book",
        "painting",
        "vehicle",
        "instrument",
        "cereal_box",
        "tea_brand",
        "car",
        "concert",
        "flight",
        "exhibition",
        "place",
        "thing",
        "item",
        "organization",
    ):
        assert c in ab.CATEGORIES, c


def test_templates_shape():
    seen = set()
    for _cat, tpls in ab.ANAPHORS.items():
        assert len(set(tpls)) == len(tpls)
        for t in tpls:
            assert t.count(ab.IMAGE) == 1 and t.endswith(" " + ab.IMAGE), t
            np = t[: -len(ab.IMAGE)].strip()
            # a noun phrase opened by a determiner, right before the image
            assert re.match(r"^(the|that|this|these) \w", np), t
            assert not re.search(r"\d", t), t
            assert not (set(np.lower().split()) & COLOURS), t
            seen.add(t)
    assert len(seen) == ab.inventory()["templates"]
    for tpls in ab.DESCRIPTORS.values():  # KU descriptors: at most five words, no category noun
        for d in tpls:
            assert len(d.split()) <= 5


@pytest.mark.parametrize(
    "name,hint,cat",
    [
        ("Tamarind Florist", None, "florist"),
        ("Tamarind Florist", "shop_sign", "florist"),
        ("Larkspur Books", "shop_sign", "bookshop"),
        ("Juniper Bakery", "shop_sign", "bakery"),
        ("Maple Tea Room", "shop_sign", "tea_room"),
        ("Wren Cafe", "shop_sign", "cafe"),
        ("Heron Barber", "shop_sign", "barber"),
        ("Corner Gelato", "shop_sign", "ice_cream_shop"),
        ("Quince", "shop_sign", "shop"),
        ("The Velvet Estuary", "book_cover", "book"),
        ("Earl Grey Tea", "product_box", "tea_brand"),
        ("Corn Flakes", "product_box", "cereal_box"),
        ("Espresso Beans", "product_box", "coffee_brand"),
        ("Dishwasher Tablets", "product_box", "item"),
        ("KL 12 345", "license_plate", "car"),
        ("LARKSPUR ST", "street_sign", "street"),
        ("Velvet Static", "concert", "concert"),
        ("Shapes of Water", "exhibition", "exhibition"),
        ("Kestrel Air", "airline", "airline"),
        ("Golden Gate Bridge", None, "bridge"),
        ("Portland Art Museum", None, "museum"),
        ("Ford Foundation", None, "foundation"),
        ("Acme Inc", None, "company"),
        ("Central Station", None, "train_station"),
        ("Zzyzx", None, "thing"),
    ],
)
def test_classify(name, hint, cat):
    assert ab.classify(name, hint) == cat
    assert ab.classify(name, hint) in ab.CATEGORIES


def test_anaphor_from_category():
    rng = random.Random(0)
    for cat in ab.CATEGORIES:
        for _ in range(5):
            assert ab.anaphor(rng, cat) in ab.ANAPHORS[cat]
    assert ab.anaphor(rng, "no-such-category") in ab.ANAPHORS["thing"]


def test_abstract_removes_entity():
    text = "I met Emma at the Golden Gate Bridge at noon; golden gate bridge views are great."
    out = ab.abstract(random.Random(3), text, "Golden Gate Bridge")
    assert not contains_token_bounded(out, "Golden Gate Bridge")
    assert out.count(ab.IMAGE) == 2 and "Emma" in out
    assert any(a in out for a in ab.ANAPHORS["bridge"])
    # token-bounded: a longer word holding the entity is left alone
    assert ab.abstract(random.Random(0), "Bakerysmith sells bread.", "Bakery") == "Bakerysmith sells bread."
    # deterministic in the rng
    assert ab.abstract(random.Random(7), text, "Golden Gate Bridge") == ab.abstract(
        random.Random(7), text, "Golden Gate Bridge"
    )
    # explicit category, sentence start capitalised
    out = ab.abstract(random.Random(1), "Larkspur Books had a sale.", "Larkspur Books", "bookshop")
    assert out[0].isupper() and "Larkspur" not in out and out.count(ab.IMAGE) == 1


def test_mention_frames():
    rng = random.Random(5)
    for _ in range(50):
        a = ab.anaphor(rng, "bakery")
        m = ab.mention(rng, a, "the flea market on Friday")
        assert m.count(ab.IMAGE) == 1 and a in m and "the flea market on Friday" in m and m[-1] in ".!?"
        m = ab.mention(rng, a, "the flea market", when="this morning", force_when=True, tail="— lovely")
        assert "this morning" in m and m.count(ab.IMAGE) == 1


def _sentences(p: str) -> int:
    return len([s for s in re.split(r"(?<=[.!?])\s+", p.strip()) if s])


@pytest.mark.parametrize("n_facts", [0, 1, 2, 3])
def test_background(n_facts):
    facts = [f"I came across the bakery in this photo <image> during trip {k + 1}." for k in range(n_facts)]
    for seed in range(30):
        p = ab.background(random.Random(seed), "Weekend baking 2024", "sourdough starters", "experience", facts)
        assert 3 <= _sentences(p) <= 5, p
        pos = [p.index(f) for f in facts]
        assert pos == sorted(pos)  # verbatim, in order
        rest = p
        for f in facts:
            rest = rest.replace(f, "")
        assert not re.search(r"\d", rest), p
        assert p == ab.background(random.Random(seed), "Weekend baking 2024", "sourdough starters", "experience", facts)
