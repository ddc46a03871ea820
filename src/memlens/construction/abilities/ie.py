"""Information Extraction (IE): recall one visual detail from one evidence session.

- ``entity`` (two-hop): the first hop resolves which image the question means, the second reads a
  visual detail of it. Finer visual skills in ``details.visual_skill``, cycled evenly:

  * ``counting``: how many objects of a colour and kind a scene shows (object_scene).
  * ``spatial``: which object stood directly left of a reference object (object_scene).
  * ``disambiguation``: several look-alike named things of one kind (shop signs of one shop type,
    street signs, book covers, product boxes of one product, cars) are shared from one outing; the
    question names one of them by a name drawn only in its image ("What number was on the door of
    Larkspur Books?") and asks for a detail of that one.
  * ``alignment``: several images of one family from one outing; the question describes one by a
    visual element ("the label with the discount banner", "the receipt paid by card", "the orange
    car", "the theatre ticket") and asks for a detail of the matching image.
  * ``arithmetic``: a value computed from numbers the image shows (two receipt lines summed, the
    shelf price or ticket price times a quantity), answered in the official currency form.

- ``previnfo``: a detail of an image shared in an earlier session; the session is referred to by
  its context ("the screenshot of my chat with Aiko about the dinner plans"). ``details.image_source``:

  * ``chat_screenshot``: an agreed time, a door code, a flight number, a quoted price...
  * ``app_interface``: an order number, a delivery date, a step count, a check-in date...
  * ``natural_photo``: a count or a colour in an object scene, a car's plate or colour.

Answers are short and exact (integer, currency, ``HH:MM``, ``YYYY/MM/DD``, a code, a colour, a
name); they and every abstracted name are ``forbidden`` in all history text. ``details.answer_format``
(and ``answer_range`` / ``date_range`` / ``choices`` / ``currency`` / ``code_shape``) tell the chance
baseline what a valid guess looks like.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import re
from decimal import Decimal

from memlens.construction.abilities.base import Ability, Draft, FactDraft, ImageRequest, Plan, pick
from memlens.construction.abilities.contexts import PEOPLE, PLANS, mention_for, thing_for
from memlens.construction.abilities.derive import derive, money
from memlens.construction.images.synthetic.object_scene import KIND_PLURALS as PLURAL
from memlens.construction.images.truth import printed_strings
from memlens.core.registry import component
from memlens.core.schema import IE, Question

SCENE_KINDS = ["mug", "book", "candle", "vase", "bottle", "plant pot", "cup", "gift box", "ball"]
SCENE_COLORS = ["red", "blue", "green", "yellow", "orange", "purple", "white", "black"]
#: colours that may be a one-word answer: words that occur in no textbank sentence, filler subject,
#: ontology subtopic or context phrase (red, yellow, blue, black, brown all do somewhere)
SAFE_COLORS = ["green", "orange", "purple", "white", "grey", "pink"]
CAR_COLORS = ["red", "blue", "black", "white", "grey", "green", "yellow", "orange"]

# ---- invented names (disjoint from the synthetic families' own word lists, so no haystack image
# ever shows the same name)
NAME_WORDS = [
    "Larkspur",
    "Thistle",
    "Bramblewood",
    "Kestrel",
    "Wren",
    "Quince",
    "Saltmarsh",
    "Foxglove",
    "Tamarind",
    "Heron",
    "Calloway",
    "Fennel",
    "Mulberry",
    "Partridge",
    "Alder",
    "Cinderfield",
    "Yarrow",
    "Goldcrest",
    "Linden",
    "Sorrel",
    "Peregrine",
    "Hawthorn",
    "Bellwether",
    "Clover Hill",
    "Windmere",
    "Stonechat",
    "Ashgrove",
    "Marram",
    "Lapwing",
    "Rookery",
    "Teasel",
    "Honeysuckle",
]
SIGN_TYPES = ["Books", "Bakery", "Cafe", "Florist", "Deli", "Barber", "Records", "Tailor", "Optician", "Tea Room"]
STREET_TYPES = {"St": "Street", "Ave": "Avenue", "Rd": "Road", "Lane": "Lane", "Way": "Way", "Dr": "Drive"}
BOOK_A = [
    "The Borrowed",
    "The Velvet",
    "A Distant",
    "The Restless",
    "An Unfinished",
    "The Wandering",
    "The Midnight",
    "The Amber",
    "A Hollow",
    "The Patient",
]
BOOK_B = [
    "Estuary",
    "Greenhouse",
    "Aviary",
    "Tapestry",
    "Causeway",
    "Vineyard",
    "Cartwheel",
    "Lagoon",
    "Ferryman",
    "Almanac",
    "Quarry",
    "Belltower",
]
BRAND_WORDS = [
    "Larkspur",
    "Kestrel",
    "Foxglove",
    "Heron",
    "Quince",
    "Wren",
    "Mulberry",
    "Saltmarsh",
    "Yarrow",
    "Linden",
    "Goldcrest",
    "Sorrel",
]
BOX_PRODUCTS = [
    ("Rolled Oats", ["500 g", "1 kg"]),
    ("Crunchy Granola", ["375 g", "500 g"]),
    ("Corn Flakes", ["375 g", "500 g"]),
    ("Earl Grey Tea", ["40 bags", "80 bags"]),
    ("Chamomile Tea", ["20 bags", "40 bags"]),
    ("Espresso Beans", ["250 g", "1 kg"]),
    ("Oat Crackers", ["200 g", "250 g"]),
    ("Pancake Mix", ["500 g", "750 g"]),
    ("Jasmine Rice", ["1 kg", "2 kg"]),
    ("Dishwasher Tablets", ["30 tabs", "60 tabs"]),
]
EVENT_WORDS = {
    "concert": "concert",
    "theatre": "theatre",
    "sports": "sports",
    "exhibition": "exhibition",
    "festival": "festival",
}
CARD_METHODS = ["VISA", "Mastercard", "Amex", "Debit card"]

# ---- occasion contexts (receipt, price_tag, named_sign, ticket): the shared space of
# contexts.thing_for; when it is exhausted (it holds 104 phrases) these extend it
EXTRA_OCCASIONS = [
    "the antique fair",
    "the harbour walk",
    "the ski weekend",
    "the vineyard tour",
    "the craft fair",
    "the city break",
    "the lakeside weekend",
    "the outlet mall trip",
    "the food festival",
    "the college reunion",
    "the seaside day trip",
    "the garage sale",
    "the design market",
    "the spring fair",
    "the book fair",
    "the old town walk",
    "the zoo visit",
    "the aquarium trip",
    "the hot springs weekend",
    "the cooking class",
    "the pottery workshop",
    "the wine tasting",
    "the charity run",
    "the art walk",
    "the country fair",
    "the island ferry trip",
    "the lantern festival",
    "the vintage fair",
    "the harvest festival",
    "the marina stroll",
]
OCC_SUFFIXES = (" last month", " in spring", " on Friday")

# ---- chat screenshots: script -> (plans it fits, activity shown for that plan or None)
CHAT_PLANS = {
    "meetup": [
        "the dinner plans",
        "the weekend hike",
        "the concert tickets",
        "the study group",
        "the book club meeting",
        "the museum visit",
        "the birthday surprise",
    ],
    "reschedule": [
        "the dinner plans",
        "the study group",
        "the book club meeting",
        "the gym schedule",
        "the museum visit",
        "the garden project",
    ],
    "pickup": ["the road trip", "the camping trip", "the wedding gift", "the moving day", "the carpool"],
    "door_code": [
        "the moving day",
        "the birthday surprise",
        "the study group",
        "the garden project",
        "the book club meeting",
    ],
    "price_check": [
        "the wedding gift",
        "the birthday surprise",
        "the garden project",
        "the moving day",
        "the camping trip",
    ],
}
PLAN_ACTIVITY = {
    "the dinner plans": "dinner",
    "the weekend hike": "the hike",
    "the concert tickets": "the concert",
    "the study group": "study group",
    "the book club meeting": "book club",
    "the museum visit": "the museum",
    "the birthday surprise": "the party prep",
    "the gym schedule": "climbing",
    "the garden project": "the garden day",
}
#: (script, fact slot) -> (question tail, answer format)
CHAT_QUESTIONS = {
    ("meetup", "meet_time_24h"): ("what time did we agree to meet? Answer as HH:MM (24-hour).", "time"),
    ("meetup", "n_people"): ("how many people did I say I'd book a table for?", "integer"),
    ("reschedule", "meet_time_24h"): ("what new time was suggested? Answer as HH:MM (24-hour).", "time"),
    ("pickup", "meet_time_24h"): ("what time did I say my flight lands? Answer as HH:MM (24-hour).", "time"),
    ("pickup", "flight"): ("what was my flight number?", "code"),
    ("pickup", "terminal"): ("which terminal number was I told I'd be picked up at?", "integer"),
    ("door_code", "code"): ("what was the door code?", "code"),
    ("door_code", "apt"): ("which apartment was it?", "code"),
    ("price_check", "price"): ("how much did I say the {item} cost?", "currency"),
}
CHAT_RANGES = {"n_people": [2, 6], "terminal": [1, 5]}

# ---- app screenshots: kind -> (apps of contexts.APPS it fits, [(field, question tail, format)])
APP_KINDS = {
    "order_confirmation": (
        ["my delivery app", "the grocery app"],
        [
            ("order_no", "what was the order number?", "code"),
            ("delivery_date", "what was the estimated delivery date? Answer as YYYY/MM/DD.", "date"),
            ("total", "what was the order total?", "currency"),
        ],
    ),
    "fitness_tracker": (
        ["the fitness tracker"],
        [
            ("steps", "how many steps did it show for the day?", "integer"),
            ("calories", "how many calories did it show for the day?", "integer"),
        ],
    ),
    "booking_confirmation": (
        ["the booking site", "the hotel app"],
        [
            ("check_in", "what was the check-in date? Answer as YYYY/MM/DD.", "date"),
            ("check_out", "what was the check-out date? Answer as YYYY/MM/DD.", "date"),
            ("confirmation_no", "what was the confirmation number?", "code"),
            ("nights", "how many nights was the booking for?", "integer"),
        ],
    ),
    "streaming_bill": (
        ["my banking app"],
        [
            ("next_billing_date", "what was the next billing date? Answer as YYYY/MM/DD.", "date"),
            ("amount", "how much was charged?", "currency"),
            ("card_last4", "what were the last four digits of the card?", "code"),
        ],
    ),
}
APP_RANGES = {"steps": [1500, 19000], "calories": [50, 950], "nights": [1, 7]}
DATE_RANGE = ["2019/01/01", "2026/01/31"]
#: receipt store type that fits an occasion (keyword in the context phrase); others draw at random
STORE_FOR = [
    ("bakery", "bakery"),
    ("holiday market", "bakery"),
    ("bookshop", "bookstore"),
    ("school supplies", "bookstore"),
    ("office supplies", "bookstore"),
    ("pharmacy", "pharmacy"),
    ("hardware", "hardware"),
    ("camping gear", "hardware"),
    ("garden centre", "hardware"),
    ("bike shop", "hardware"),
    ("grocery", "grocery"),
    ("farmers market", "grocery"),
    ("picnic", "grocery"),
    ("pet store", "grocery"),
    ("brunch", "cafe"),
    ("museum cafe", "cafe"),
    ("airport", "cafe"),
    ("beach kiosk", "cafe"),
    ("snack stop", "cafe"),
    ("lunch", "restaurant"),
    ("dinner", "restaurant"),
    ("night market", "restaurant"),
    ("street food", "restaurant"),
]


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def _counting_plan(rng: random.Random) -> tuple[dict, dict]:
    kind = pick(rng, SCENE_KINDS)
    c1, c2 = rng.sample(SCENE_COLORS, 2)
    n1 = rng.randint(2, 7)
    n2 = rng.randint(1, 4)
    k2 = pick(rng, [k for k in SCENE_KINDS if k != kind])
    counts = {f"{c1} {kind}": n1, f"{c2} {kind}": n2, f"{pick(rng, SCENE_COLORS)} {k2}": rng.randint(1, 3)}
    return {"counts": counts}, {"kind": kind, "color": c1}


def _turn(reserved: set[str], key: str, options: list) -> list:
    """``options`` rotated by the number of earlier plans of ``key`` in this run, so sub-kinds cycle
    evenly over the plans (the run-wide ``reserved`` set carries one marker per plan; markers are
    never context phrases). The rest of the rotation is the fallback order."""
    prefix = f"ie-turn:{key}:"
    n = sum(1 for r in reserved if r.startswith(prefix))
    reserved.add(f"{prefix}{n}")
    k = n % len(options)
    return list(options[k:]) + list(options[:k])


def _occasion(rng: random.Random, family: str, reserved: set[str], kind: str | None = None) -> tuple[str, str]:
    """(thing, context) for an occasion family (receipt, price_tag, named_sign, ticket).

    Drawn from the shared phrase space of :func:`contexts.thing_for` (an occasion plus a time
    suffix), but never the bare occasion: a bare context ("the flea market") is a token-bounded
    substring of the suffixed phrases other mentions use ("the flea market on Friday"), so an answer
    refusal built on it could never be written around them. Falls back on ``EXTRA_OCCASIONS`` when the
    shared space is used up. Images that print a date (receipts, tickets) take a companion instead
    of a time suffix (a suffix could contradict the printed date); a named_sign's noun fits its
    ``kind`` (:func:`contexts.occasion_noun`)."""
    from memlens.construction.abilities.contexts import DATED_FAMILIES, OCCASIONS, occasion_noun

    sfx = [f" with {p}" for p in PEOPLE] if family in DATED_FAMILIES else list(OCC_SUFFIXES)
    # a ticket's occasion never names an event type (tickets print "FESTIVAL", "CONCERT", ...)
    avoid = [w for w in EVENT_WORDS] if family == "ticket" else []
    for pool in (OCCASIONS, EXTRA_OCCASIONS):
        free = [
            o + s
            for o in pool
            for s in sfx
            if o + s not in reserved
            and o not in reserved
            and not (" with " in o and " with " in s)
            and not any(w in o.lower() for w in avoid)
        ]
        if free:
            ctx = pick(rng, free)
            reserved.add(ctx)
            return f"{occasion_noun(family, kind)} {ctx}", ctx
    raise RuntimeError("IE: occasion context space exhausted (contexts.OCCASIONS + EXTRA_OCCASIONS)")


def _store_type(rng: random.Random, ctx: str) -> str:
    from memlens.construction.images.synthetic import vocab

    return next((st for kw, st in STORE_FOR if kw in ctx), None) or pick(rng, sorted(vocab.STORES))


def _draw_free(rng: random.Random, candidates: list[str], reserved: set[str]) -> str | None:
    free = [c for c in candidates if c not in reserved]
    return pick(rng, free) if free else None


def _money_prog(gets: list[dict], currency: str) -> dict:
    return {"op": "sum", "args": gets, "fmt": "money", "currency": currency}


def _get(img: int, *path) -> dict:
    return {"op": "get", "img": img, "path": list(path)}


def _amount_forms(answer: str) -> list[str]:
    """The answer and the bare numbers the text-only solver would look for."""
    out = [answer]
    m = re.fullmatch(r"[$€£¥]?([\d,]+(?:\.\d+)?)(?:\s*[A-Z]{3})?", answer.strip())
    if m:
        num = m.group(1).replace(",", "")
        out += [num, num.rstrip("0").rstrip(".") if "." in num else num, m.group(1)]
    return list(dict.fromkeys(x for x in out if x))


def _code_shape(s: str) -> str:
    return "".join("D" if c.isdigit() else "L" if c.isalpha() else c for c in s)


def _scaled_range(lo: float, hi: float, currency: str) -> list[float]:
    from memlens.construction.images.synthetic.formats import PRICE_SCALE

    k = PRICE_SCALE.get(currency, 1)
    return [lo * k, hi * k]


def _unique_names(rng: random.Random, n: int, make, reserved: set[str], key=lambda x: x) -> list[str]:
    """``n`` distinct names from ``make()``, none used by an earlier plan (``key(name)``, the full entity
    string, is reserved so no two questions share an entity)."""
    out: list[str] = []
    for _ in range(2000):
        x = make()
        if x not in out and f"name:{key(x).lower()}" not in reserved:
            out.append(x)
            if len(out) == n:
                for y in out:
                    reserved.add(f"name:{key(y).lower()}")
                return out
    raise RuntimeError("IE: invented-name space exhausted; enlarge NAME_WORDS/BOOK_A/BOOK_B")


def _anaphor_mention(rng: random.Random, mention: str, truth: dict, ctx: str, forbidden: list[str]) -> str:
    """The vague mention of a named-entity image, phrased with an anaphor of its category for a
    share ``abstraction.ANAPHOR_SHARE`` of images (haystack mentions of named_sign images use the same
    share and frames), else the plan's shared-style mention. The images of one question share the
    category (same shop type, all books, all cars...), so the anaphor names no distinguishing trait."""
    from memlens.construction.text import abstraction
    from memlens.construction.text.validators import contains_token_bounded

    if rng.random() >= abstraction.ANAPHOR_SHARE:
        return mention
    cat = abstraction.classify(str(truth.get("text", "")), truth.get("kind"))
    m = abstraction.mention(rng, abstraction.anaphor(rng, cat), ctx)
    drawn = printed_strings(truth)
    if m.count("<image>") != 1 or any(contains_token_bounded(m, s) for s in forbidden + drawn):
        return mention
    return m


def _plan_obj(plan_id, subtype, variant, topic, rng, images, latent) -> Plan:
    return Plan(
        plan_id, IE, subtype, variant, topic.topic_id, pick(rng, topic.subtopics or [topic.title]), images, latent
    )


# --------------------------------------------------------------------------------------------------
@component("question_type", "information_extraction")
class InformationExtraction(Ability):
    question_type = IE
    variants = {
        "entity": ["counting", "spatial", "disambiguation", "alignment", "arithmetic"],
        "previnfo": ["chat_screenshot", "app_interface", "natural_photo"],
    }
    families = {
        "counting": ["object_scene"],
        "spatial": ["object_scene"],
        "disambiguation": ["named_sign"],
        "alignment": ["price_tag", "receipt", "named_sign", "ticket"],
        "arithmetic": ["receipt", "price_tag", "ticket"],
        "chat_screenshot": ["chat_screenshot"],
        "app_interface": ["app_screenshot"],
        "natural_photo": ["object_scene", "named_sign"],
    }

    # ============================================================================== plan
    def plan(self, rng, topic, subtype, variant, plan_id, reserved):
        expected = "entity" if variant in self.variants["entity"] else "previnfo"
        if variant not in self.variants["entity"] + self.variants["previnfo"]:
            raise ValueError(f"IE: unknown variant {variant!r}")
        if subtype != expected:
            raise ValueError(f"IE: variant {variant!r} belongs to subtype {expected!r}, not {subtype!r}")
        images, latent = getattr(self, f"_plan_{variant}")(rng, topic, reserved)
        return _plan_obj(plan_id, subtype, variant, topic, rng, images, latent)

    # ---- object scenes (counting, spatial)
    def _scene_ctx(self, rng, reserved):
        thing, ctx = thing_for(rng, "object_scene", reserved)
        reserved.add(ctx)
        return ctx, mention_for(rng, "object_scene", thing)

    def _plan_counting(self, rng, topic, reserved):
        ctx, mention = self._scene_ctx(rng, reserved)
        cons, latent = _counting_plan(rng)
        latent.update({"kind_q": "count", "context": ctx, "mentions": [mention]})
        return [ImageRequest("object_scene", cons)], latent

    def _plan_spatial(self, rng, topic, reserved):
        ctx, mention = self._scene_ctx(rng, reserved)
        kinds = rng.sample(SCENE_KINDS, 4)
        colors = rng.sample(SCENE_COLORS, 4)
        cons = {
            "objects": [{"kind": k, "color": c, "size": "large"} for k, c in zip(kinds, colors)],
            "setting": "shelf",
        }
        return [ImageRequest("object_scene", cons)], {"context": ctx, "mentions": [mention]}

    # ---- disambiguation: look-alike named things from one outing, one named in the question
    def _plan_disambiguation(self, rng, topic, reserved):
        kind = _turn(
            reserved, "disambiguation", ["shop_sign", "book_cover", "license_plate", "street_sign", "product_box"]
        )[0]
        n = 2 if kind == "product_box" else rng.choice([2, 3])
        thing, ctx = _occasion(rng, "named_sign", reserved, kind)
        reqs = []
        if kind == "shop_sign":
            stype = pick(rng, SIGN_TYPES)
            names = _unique_names(rng, n, lambda: f"{pick(rng, NAME_WORDS)} {stype}", reserved)
            nums = rng.sample(range(2, 200), n)
            reqs = [{"kind": kind, "text": nm, "number": str(no)} for nm, no in zip(names, nums)]
        elif kind == "street_sign":
            style = rng.choice(["us", "eu"])
            st = pick(rng, sorted(STREET_TYPES))
            bases = _unique_names(
                rng,
                n,
                lambda: pick(rng, [w for w in NAME_WORDS if " " not in w]),
                reserved,
                key=lambda b: f"{b} {st} {style}",
            )
            if style == "us":
                texts = [f"{b} {st}".upper() for b in bases]
                nums = [str(x) for x in rng.sample(range(100, 9900, 100), n)]
            else:
                texts = [f"{b} {STREET_TYPES[st]}" for b in bases]
                nums = [str(x) for x in rng.sample(range(2, 161), n)]
            reqs = [{"kind": kind, "text": t, "number": no, "style": style} for t, no in zip(texts, nums)]
        elif kind == "book_cover":
            titles = _unique_names(rng, n, lambda: f"{pick(rng, BOOK_A)} {pick(rng, BOOK_B)}", reserved)
            reqs = [{"kind": kind, "text": t} for t in titles]
        elif kind == "product_box":
            product, weights = pick(rng, BOX_PRODUCTS)
            brands = _unique_names(rng, n, lambda: pick(rng, BRAND_WORDS), reserved, key=lambda b: f"{b} {product}")
            ws = rng.sample(weights, n)
            badges = [None, pick(rng, ["ORGANIC", "NEW", "VEGAN", "FAMILY SIZE"])]
            rng.shuffle(badges)  # one box with a badge, one without: look-alikes, yet never near-duplicates
            reqs = [
                {"kind": kind, "text": product, "brand": b, "weight": w, "badge": bd}
                for b, w, bd in zip(brands, ws, badges)
            ]
        else:  # license_plate: plates come from the truth; colours tell the cars apart
            style = rng.choice(["us", "eu", "uk"])
            cols = rng.sample(SAFE_COLORS[:4] + ["grey"], n)
            reqs = [{"kind": kind, "style": style, "car_color": c} for c in cols]
            if style == "us":
                for r in reqs:
                    r["vanity"] = False
        target = rng.randrange(n)
        mentions = [mention_for(rng, "named_sign", thing) for _ in range(n)]
        latent = {
            "kind_q": kind,
            "context": ctx,
            "mentions": mentions,
            "target_image": target,
            "wording": rng.randrange(2),
        }
        return [ImageRequest("named_sign", r) for r in reqs], latent

    # ---- alignment: several images from one outing, the question describes one by an element
    def _plan_alignment(self, rng, topic, reserved):
        kind = _turn(reserved, "alignment", ["price_tag", "receipt", "license_plate", "ticket"])[0]
        family = {"license_plate": "named_sign"}.get(kind, kind)
        n = rng.choice([2, 3])
        thing, ctx = _occasion(rng, family, reserved, kind)
        target = rng.randrange(n)
        latent = {"kind_q": kind, "context": ctx, "target_image": target, "wording": rng.randrange(2)}
        if kind == "price_tag":
            cur = rng.choice(["USD", "EUR", "GBP"])
            reqs = [{"on_sale": i == target, "currency": cur} for i in range(n)]
            latent["ask"] = rng.choice(["price", "was_price"])
        elif kind == "receipt":
            cur = rng.choice(["USD", "EUR", "GBP"])
            by_card = rng.random() < 0.5
            card = pick(rng, CARD_METHODS)
            stype = _store_type(rng, ctx)
            reqs = [
                {
                    "currency": cur,
                    "n_items": rng.randint(2, 5),
                    "store_type": stype,
                    "payment": (card if (i == target) == by_card else "Cash"),
                }
                for i in range(n)
            ]
            latent["by_card"] = by_card
        elif kind == "license_plate":
            style = rng.choice(["us", "eu", "uk"])
            cols = rng.sample(CAR_COLORS, n)
            reqs = [{"kind": "license_plate", "style": style, "car_color": c} for c in cols]
            if style == "us":
                for r in reqs:
                    r["vanity"] = False
        else:  # ticket
            types = rng.sample(sorted(EVENT_WORDS), n)
            cur = rng.choice(["USD", "EUR", "GBP"])
            reqs = [{"kind": "event_ticket", "event_type": t, "currency": cur} for t in types]
        latent["mentions"] = [mention_for(rng, family, thing) for _ in range(n)]
        return [ImageRequest(family, r) for r in reqs], latent

    # ---- arithmetic: a value computed from numbers the image shows
    def _plan_arithmetic(self, rng, topic, reserved):
        kind = _turn(reserved, "arithmetic", ["receipt_pair", "price_multiple", "ticket_multiple"])[0]
        family = {"receipt_pair": "receipt", "price_multiple": "price_tag", "ticket_multiple": "ticket"}[kind]
        thing, ctx = _occasion(rng, family, reserved)
        cur = rng.choice(["USD", "USD", "EUR", "EUR", "GBP", "DKK", "JPY"])
        if kind == "receipt_pair":
            req = {"currency": cur, "n_items": rng.randint(3, 6), "store_type": _store_type(rng, ctx)}
        elif kind == "price_multiple":
            req = {"currency": cur, "on_sale": False}
        else:
            req = {"kind": "event_ticket", "currency": cur}
        latent = {
            "kind_q": kind,
            "context": ctx,
            "mentions": [mention_for(rng, family, thing)],
            "k": rng.randint(2, 4),
            "pick": rng.random(),
        }
        return [ImageRequest(family, req)], latent

    # ---- previnfo: chat screenshots
    def _plan_chat_screenshot(self, rng, topic, reserved):
        # the chat is with the contact the mention names, and shows that contact in its header
        people = list(PEOPLE)
        keys = _turn(reserved, "chat_screenshot", list(CHAT_QUESTIONS))
        ctx = None
        for script, slot in keys:  # noqa: B007 - the pair that fits is used after the loop
            ctx = _draw_free(
                rng, [f"my chat with {p} about {pl}" for p in people for pl in CHAT_PLANS[script]], reserved
            )
            if ctx is not None:
                break
        if ctx is None:  # every fitting context is taken: any plan of the shared space, same contacts
            script, slot = keys[0]
            ctx = _draw_free(rng, [f"my chat with {p} about {pl}" for p in people for pl in PLANS], reserved)
        if ctx is None:
            raise RuntimeError("IE chat_screenshot: context space exhausted (contexts.PEOPLE x PLANS)")
        reserved.add(ctx)
        shown, plan_name = ctx[len("my chat with ") :].split(" about ", 1)
        # a one-to-one chat whose header is the contact (never a group title that could echo the plan)
        req = {"topic": script, "contact": shown, "title": shown}
        if script in ("meetup", "reschedule") and plan_name in PLAN_ACTIVITY:
            req["activity"] = PLAN_ACTIVITY[plan_name]
        latent = {
            "kind_q": f"{script}/{slot}",
            "script": script,
            "slot": slot,
            "context": ctx,
            "mentions": [mention_for(rng, "chat_screenshot", ctx)],
            "wording": rng.randrange(2),
        }
        return [ImageRequest("chat_screenshot", req)], latent

    # ---- previnfo: app / web screenshots
    def _plan_app_interface(self, rng, topic, reserved):
        kinds = _turn(reserved, "app_interface", sorted(APP_KINDS))
        ctx = None
        for kind in kinds:
            cands = [f"{a} page for {pl}" for a in APP_KINDS[kind][0] for pl in PLANS]
            ctx = _draw_free(rng, cands, reserved)
            if ctx is not None:
                break
        if ctx is None:
            raise RuntimeError("IE app_interface: context space exhausted (contexts.APPS x PLANS)")
        reserved.add(ctx)
        field, _, _ = _turn(reserved, f"app_interface/{kind}", APP_KINDS[kind][1])[0]
        latent = {
            "kind_q": f"{kind}/{field}",
            "app_kind": kind,
            "field": field,
            "context": ctx,
            "mentions": [mention_for(rng, "app_screenshot", ctx)],
            "wording": rng.randrange(2),
        }
        return [ImageRequest("app_screenshot", {"kind": kind})], latent

    # ---- previnfo: natural photos
    def _plan_natural_photo(self, rng, topic, reserved):
        kind = _turn(reserved, "natural_photo", ["count", "color", "plate", "count", "car_color"])[0]
        if kind in ("count", "color"):
            ctx, mention = self._scene_ctx(rng, reserved)
            if kind == "count":
                cons, latent = _counting_plan(rng)
            else:
                obj = pick(rng, SCENE_KINDS)
                col = pick(rng, SAFE_COLORS)
                cons = {"counts": {f"{col} {obj}": 1, obj: 1}, "extra": rng.randint(3, 7)}
                latent = {"kind": obj, "color": col}
            latent.update({"kind_q": kind, "context": ctx, "mentions": [mention]})
            return [ImageRequest("object_scene", cons)], latent
        thing, ctx = _occasion(rng, "named_sign", reserved, "license_plate")
        req = {
            "kind": "license_plate",
            "style": rng.choice(["us", "eu", "uk"]),
            "car_color": pick(rng, SAFE_COLORS[:4] + ["grey"]),
        }
        if req["style"] == "us":
            req["vanity"] = False
        latent = {
            "kind_q": kind,
            "context": ctx,
            "mentions": [mention_for(rng, "named_sign", thing)],
            "wording": rng.randrange(2),
        }
        return [ImageRequest("named_sign", req)], latent

    # ============================================================================== build
    def build(self, rng, plan, truths):
        q, prog, fmt, forbidden, extra = getattr(self, f"_build_{plan.variant}")(rng, plan, truths)
        answer = derive(prog, truths, {})
        if answer is None:
            raise ValueError("IE: derivation failed on the images' truth")
        if derive(prog, [None] * len(truths), {}) == answer:
            raise ValueError("IE: answer derivable without the images")
        lat = plan.latent
        key = "visual_skill" if plan.question_subtype == "entity" else "image_source"
        details = {
            key: plan.variant,
            "family": plan.images[0].family,
            "kind": lat.get("kind_q", plan.variant),
            "context": lat["context"],
            "answer_format": fmt,
            "n_images": len(plan.images),
            **extra,
        }
        if fmt == "code":
            details["code_shape"] = _code_shape(answer)
        forb = [answer]
        if fmt == "currency":
            forb += _amount_forms(answer)
        forb += [f for f in forbidden if f]
        mentions = list(lat["mentions"])
        if plan.variant == "disambiguation" or (plan.variant == "alignment" and lat.get("kind_q") == "license_plate"):
            mentions = [
                _anaphor_mention(rng, m, truths[k], lat["context"], forb + [f for f in forbidden if f])
                for k, m in enumerate(mentions)
            ]
        facts = [FactDraft(m, [k]) for k, m in enumerate(mentions)]
        return Draft(
            question=q,
            answer=answer,
            facts=facts,
            details=details,
            forbidden=list(dict.fromkeys(forb)),
            contexts=[lat["context"]],
            derivation=prog,
        )

    # ---- object scenes
    def _build_counting(self, rng, plan, truths):
        kind, color, ctx = plan.latent["kind"], plan.latent["color"], plan.latent["context"]
        q = f"How many {color} {PLURAL[kind]} were on {ctx} in the photo I shared?"
        prog = {"op": "str", "arg": _get(0, "counts", f"{color} {kind}")}
        return q, prog, "integer", [], {"answer_range": [1, 9]}

    def _build_spatial(self, rng, plan, truths):
        t = truths[0]
        ctx = plan.latent["context"]
        objs = {o["id"]: o for o in t["objects"]}
        pairs = []
        for row in t["rows"]:
            ids = row["objects_left_to_right"]
            for a, b in itertools.pairwise(ids):
                pairs.append((objs[a], objs[b]))
        if not pairs:
            raise ValueError("spatial: no adjacent objects")
        left, ref = pick(rng, pairs)
        q = (
            f"In the photo of {ctx} I shared, which object stood directly to the left of the "
            f"{ref['color']} {ref['kind']}? Answer with its colour and kind."
        )
        idx = next(i for i, o in enumerate(t["objects"]) if o["id"] == left["id"])
        prog = {"op": "format", "template": "{color} {kind}", "img": 0, "path": ["objects", idx]}
        return q, prog, "color_kind", [], {}

    # ---- disambiguation
    def _build_disambiguation(self, rng, plan, truths):
        lat = plan.latent
        kind, k, w = lat["kind_q"], lat["target_image"], lat["wording"]
        t = truths[k]
        names = [str(x["brand"] if kind == "product_box" else x["text"]) for x in truths]
        if len(set(n.lower() for n in names)) != len(names):
            raise ValueError("disambiguation: two images show the same name")
        extra: dict = {"target_image": k}
        if kind == "shop_sign":
            name = t["text"]
            q = [
                f"What number was on the door of {name}, the shop I photographed?",
                f"In my photo of {name}, what house number was on its door?",
            ][w]
            prog, fmt, extra["answer_range"] = {"op": "str", "arg": _get(k, "number")}, "integer", [2, 199]
            forb = names
        elif kind == "street_sign":
            street = t["text"].title()
            q = [
                f"What number was shown on the street sign for {street} that I photographed?",
                f"On the {street} street sign in my photo, what number was printed?",
            ][w]
            us = t.get("style") == "us"
            prog, fmt = {"op": "str", "arg": _get(k, "number")}, "integer"
            extra["answer_range"] = [100, 9900] if us else [2, 160]
            forb = names
        elif kind == "book_cover":
            q = [
                f"Who is the author of {t['text']}, the book I showed you?",
                f"Whose name was on the cover of {t['text']} as its author?",
            ][w]
            prog, fmt = _get(k, "author"), "name"
            forb = names + [x["author"] for x in truths]
        elif kind == "product_box":
            product, brand = t["text"], t["brand"]
            q = [
                f"What pack size was printed on the {brand} {product} box I photographed?",
                f"How much did the {brand} {product} box in my photo hold, going by the pack size printed on it?",
            ][w]
            prog, fmt = _get(k, "weight"), "quantity"
            extra["choices"] = sorted({x["weight"] for x in truths} | set(dict(BOX_PRODUCTS).get(product, [])))
            forb = [x["brand"] for x in truths] + [f"{x['brand']} {x['text']}" for x in truths]
        else:  # license_plate
            q = [
                f"What colour was the car with the licence plate {t['text']}?",
                f"The car whose plate read {t['text']}: what colour was it?",
            ][w]
            if t["car_color"] not in SAFE_COLORS:
                raise ValueError("disambiguation: car colour is not a safe one-word answer")
            prog, fmt = _get(k, "car_color"), "color"
            extra["choices"] = SAFE_COLORS[:4] + ["grey"]
            forb = names
        return q, prog, fmt, forb, extra

    # ---- alignment
    def _build_alignment(self, rng, plan, truths):
        lat = plan.latent
        kind, k, w, occ = lat["kind_q"], lat["target_image"], lat["wording"], lat["context"]
        t = truths[k]
        extra: dict = {"target_image": k}
        forb: list[str] = []
        if kind == "price_tag":
            if [bool(x["on_sale"]) for x in truths].count(True) != 1 or not t["on_sale"]:
                raise ValueError("alignment: exactly the target label must be on sale")
            ask = lat["ask"]
            what = "sale price" if ask == "price" else "original price before the discount"
            q = [
                f"Among the price labels I saw on {occ}, what was the {what} on the one with the discount banner?",
                f"Of the price labels I showed you from {occ}, the one with the discount banner: what was its {what}?",
            ][w]
            prog, fmt = _money_prog([_get(k, ask)], t["currency"]), "currency"
            extra.update({"currency": t["currency"], "answer_range": _scaled_range(0.5, 20, t["currency"])})
            forb = [t["price_printed"], t.get("was_printed")]
        elif kind == "receipt":
            by_card = lat["by_card"]
            methods = ["card" if x["payment"]["card_last4"] else "cash" for x in truths]
            want = "card" if by_card else "cash"
            if methods.count(want) != 1 or methods[k] != want:
                raise ValueError("alignment: exactly the target receipt must match the payment description")
            how = "paid by card" if by_card else "paid in cash"
            q = [
                f"Of the receipts from {occ}, what was the total on the one {how}?",
                f"Among the receipts I shared from {occ}, how much was the total on the receipt {how}?",
            ][w]
            prog, fmt = _money_prog([_get(k, "total")], t["currency"]), "currency"
            extra.update({"currency": t["currency"], "answer_range": _scaled_range(5, 150, t["currency"])})
            forb = [t["total_printed"]]
        elif kind == "license_plate":
            cols = [x["car_color"] for x in truths]
            if cols.count(t["car_color"]) != 1:
                raise ValueError("alignment: car colours must differ")
            q = [
                f"Among the photos I shared from {occ}, what was the licence plate of the {t['car_color']} car?",
                f"In my photos from {occ}, what did the plate on the {t['car_color']} car read?",
            ][w]
            prog, fmt = _get(k, "text"), "code"
            forb = [x["text"] for x in truths]
        else:  # ticket
            types = [x["event_type"] for x in truths]
            if types.count(t["event_type"]) != 1:
                raise ValueError("alignment: event types must differ")
            label = EVENT_WORDS[t["event_type"]]
            q = [
                f"Of the tickets for {occ}, what start time was printed on the {label} ticket? Answer as HH:MM (24-hour).",
                f"Among the tickets I shared for {occ}, when did the {label} one start? Answer as HH:MM (24-hour).",
            ][w]
            prog, fmt = _get(k, "start_time"), "time"
            forb = [f"Start {t['start_time']}"]
        return q, prog, fmt, forb, extra

    # ---- arithmetic
    def _build_arithmetic(self, rng, plan, truths):
        lat = plan.latent
        kind, occ, n = lat["kind_q"], lat["context"], lat["k"]
        t = truths[0]
        cur = t["currency"]
        extra: dict = {"currency": cur}
        if kind == "receipt_pair":
            items = t["items"]
            by_name: dict[str, list[int]] = {}
            for i, it in enumerate(items):
                by_name.setdefault(it["name"].lower(), []).append(i)
            uniq = [i for i, it in enumerate(items) if len(by_name[it["name"].lower()]) == 1]
            if len(uniq) < 2:
                raise ValueError("arithmetic: receipt needs two distinct items")
            pairs = list(itertools.combinations(uniq, 2))
            a, b = pairs[int(lat["pick"] * len(pairs))]
            na, nb = items[a]["name"], items[b]["name"]
            q = (
                f"On the receipt from {occ}, how much did the {na} and the {nb} lines come to together? "
                f"Give the amount with its currency."
            )
            prog = _money_prog([_get(0, "items", a, "line_total"), _get(0, "items", b, "line_total")], cur)
            extra["answer_range"] = _scaled_range(3, 40, cur)
            forb = [items[a]["line_total_printed"], items[b]["line_total_printed"]]
        elif kind == "price_multiple":
            q = (
                f"If I bought {n} of the product on the price label I saw on {occ}, at the shelf price shown, "
                f"how much would they cost altogether? Give the amount with its currency."
            )
            prog = _money_prog([_get(0, "price")] * n, cur)
            extra["answer_range"] = _scaled_range(1, 50, cur)
            forb = [t["price_printed"]]
        else:
            q = (
                f"If I bought {n} tickets at the same price as the ticket for {occ}, what would they cost in "
                f"total? Give the amount with its currency."
            )
            prog = _money_prog([_get(0, "price")] * n, cur)
            extra["answer_range"] = _scaled_range(50, 600, cur)
            forb = [t["price_printed"]]
        return q, prog, "currency", forb, extra

    # ---- previnfo: chat
    def _build_chat_screenshot(self, rng, plan, truths):
        lat = plan.latent
        t = truths[0]
        script, slot, ctx = lat["script"], lat["slot"], lat["context"]
        if t.get("topic") != script or slot not in t.get("facts", {}):
            raise ValueError(f"chat: the screenshot does not show {script}/{slot}")
        tail, fmt = CHAT_QUESTIONS[(script, slot)]
        tail = tail.format(item=t["facts"].get("item", "item"))
        lead = [f"In the screenshot of {ctx} that I sent you, ", f"Going back to the screenshot of {ctx} I shared, "][
            lat["wording"]
        ]
        q = lead + tail
        prog = _get(0, "facts", slot)
        extra: dict = {}
        if fmt == "integer":
            extra["answer_range"] = CHAT_RANGES.get(slot, [1, 9])
        if fmt == "currency":
            sym = t["facts"][slot][:1]
            cur = {"$": "USD", "€": "EUR", "£": "GBP"}.get(sym, "USD")
            extra.update({"currency": cur, "answer_range": [12, 240]})
        forb = [t["facts"].get("meet_time")] if slot == "meet_time_24h" else []
        return q, prog, fmt, forb, extra

    # ---- previnfo: app
    def _build_app_interface(self, rng, plan, truths):
        lat = plan.latent
        t = truths[0]
        kind, field, ctx = lat["app_kind"], lat["field"], lat["context"]
        if t.get("kind") != kind:
            raise ValueError(f"app: the screenshot is not a {kind}")
        tail, fmt = next((tl, f) for fl, tl, f in APP_KINDS[kind][1] if fl == field)
        lead = [
            f"In the screenshot of {ctx} that I sent you, ",
            f"Thinking back to the screenshot of {ctx} I shared, ",
        ][lat["wording"]]
        q = lead + tail
        extra: dict = {}
        forb: list[str] = []
        if fmt == "currency":
            cur = t["currency"]
            prog = _money_prog([_get(0, field)], cur)
            extra.update({"currency": cur, "answer_range": _scaled_range(5, 300, cur)})
            from memlens.construction.images.synthetic.formats import fmt_money

            forb = [fmt_money(Decimal(t[field]), cur)]
        else:
            prog = {"op": "str", "arg": _get(0, field)}
            if fmt == "integer":
                extra["answer_range"] = APP_RANGES.get(field, [1, 9])
                forb = [f"{int(t[field]):,}"]
            elif fmt == "date":
                extra["date_range"] = DATE_RANGE
                printed = {
                    "delivery_date": "delivery_printed",
                    "check_in": "check_in_printed",
                    "check_out": "check_out_printed",
                }.get(field)
                if printed:
                    forb = [t[printed]]
        return q, prog, fmt, forb, extra

    # ---- previnfo: natural photos
    def _build_natural_photo(self, rng, plan, truths):
        lat = plan.latent
        kind, ctx = lat["kind_q"], lat["context"]
        t = truths[0]
        if kind == "count":
            k, color = lat["kind"], lat["color"]
            q = f"Thinking back to the photo of {ctx} I sent you a while ago, how many {color} {PLURAL[k]} were in it?"
            prog = {"op": "str", "arg": _get(0, "counts", f"{color} {k}")}
            return q, prog, "integer", [], {"answer_range": [1, 9]}
        if kind == "color":
            k = lat["kind"]
            idx = [i for i, o in enumerate(t["objects"]) if o["kind"] == k]
            if len(idx) != 1:
                raise ValueError("natural_photo: the scene must hold exactly one object of the asked kind")
            q = f"In the photo of {ctx} I sent you a while back, what colour was the {k}?"
            return q, _get(0, "objects", idx[0], "color"), "color", [], {"choices": SAFE_COLORS}
        if kind == "plate":
            q = [
                f"In the photo I shared from {ctx}, what did the car's licence plate read?",
                f"Going back to the photo I sent from {ctx}, what was the licence plate number on the car?",
            ][lat["wording"]]
            return q, _get(0, "text"), "code", [], {}
        if t["car_color"] not in SAFE_COLORS:
            raise ValueError("natural_photo: car colour is not a safe one-word answer")
        q = [
            f"In the photo I shared from {ctx}, what colour was the car?",
            f"Going back to the photo I sent from {ctx}, what colour was the car in it?",
        ][lat["wording"]]
        return q, _get(0, "car_color"), "color", [t["text"]], {"choices": SAFE_COLORS[:4] + ["grey"]}

    # ============================================================================== chance
    def chance_answer(self, question: Question, rng):
        d = question.details or {}
        fmt = d.get("answer_format")
        if fmt == "integer":
            lo, hi = d.get("answer_range") or [1, 9]
            return str(rng.randint(int(lo), int(hi)))
        if fmt == "color_kind":
            return f"{pick(rng, SCENE_COLORS)} {pick(rng, SCENE_KINDS)}"
        if fmt in ("color", "quantity"):
            return pick(rng, d.get("choices") or SAFE_COLORS)
        if fmt == "currency":
            cur = d.get("currency") or "USD"
            lo, hi = d.get("answer_range") or [1, 100]
            if cur == "JPY":
                return money(Decimal(rng.randint(int(lo) // 10, max(int(lo) // 10, int(hi) // 10)) * 10), cur)
            return money(Decimal(rng.randint(int(lo * 100), int(hi * 100))) / 100, cur)
        if fmt == "time":
            return f"{rng.randint(7, 22):02d}:{rng.choice([0, 15, 30, 45]):02d}"
        if fmt == "date":
            a, b = [dt.datetime.strptime(x, "%Y/%m/%d").date() for x in (d.get("date_range") or DATE_RANGE)]
            return (a + dt.timedelta(days=rng.randrange((b - a).days + 1))).strftime("%Y/%m/%d")
        if fmt == "code":
            shape = d.get("code_shape") or "DDDD"
            return "".join(
                rng.choice("0123456789") if c == "D" else rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") if c == "L" else c
                for c in shape
            )
        return ""
