"""Word lists for procedural content (names, places, shops, products). Fictional, ASCII-safe where it matters.

The words are package data (``data/vocab.yaml``, one key per constant in lower case, see
:mod:`memlens.core.bank`); this module gives them their Python shapes.
"""

from __future__ import annotations

from memlens.core.bank import load_bank

_BANK = load_bank("memlens.construction.images.synthetic", "vocab")
_NUM = (int, float)


def _words(key: str) -> list[str]:
    return list(_BANK.strings(key))


def _pairs(key: str) -> list[tuple[str, list[str]]]:
    """A mapping name -> words, as the list of (name, words) pairs it stands for."""
    return [(name, list(_BANK.strings(key, name))) for name in _BANK.mapping(key)]


FIRST_NAMES = _words("first_names")
LAST_NAMES = _words("last_names")
# (city, IATA code, country)
CITIES = list(_BANK.rows("cities", types=(str, str, str)))
CURRENCY_CITIES = dict(_pairs("currency_cities"))
STREET_NAMES = _words("street_names")
STREET_TYPES = _words("street_types")
STREET_TYPES_LONG = _BANK.string_map("street_types_long")
SHOP_WORDS = _words("shop_words")
# store type -> (suffixes, [(item, lo, hi)])
STORES: dict[str, tuple[list[str], list[tuple[str, float, float]]]] = {
    store: (
        list(_BANK.strings("stores", store, "suffixes")),
        list(_BANK.rows("stores", store, "items", types=(str, _NUM, _NUM))),
    )
    for store in _BANK.mapping("stores")
    if _BANK.mapping("stores", store, keys=("suffixes", "items"))
}
PAYMENT_METHODS = _words("payment_methods")

AIRLINES = list(_BANK.rows("airlines", types=(str, str)))
CABINS = _words("cabins")

EVENTS = _pairs("events")
VENUES = _words("venues")

HOTELS = _words("hotels")
ROOM_TYPES = _words("room_types")
STREAMING = _pairs("streaming")
WEATHER = _words("weather")
ONLINE_SHOPS = _words("online_shops")
ONLINE_ITEMS = list(_BANK.rows("online_items", types=(str, _NUM, _NUM)))

BOOK_WORDS_A = _words("book_words_a")
BOOK_WORDS_B = _words("book_words_b")
PUBLISHERS = _words("publishers")
#: product brands (also the brands of MSR price labels)
BRANDS = _words("brands")
BOX_PRODUCTS = _pairs("box_products")
SHOP_TYPES_SIGN = _words("shop_types_sign")

# chat message templates: plans with a time and a place
PLACES = _words("places")
ACTIVITIES = _words("activities")
