"""Knowledge Update (KU): report the current value of a user attribute that changed four times.

A question is a four-fact chain: the user's attribute (the café they go to before work, the book
they read on the commute, the car they drive to work, ...) is set once and updated three times, one
evidence session per fact, in time order (``ordered=True``). Each fact is anchored by a different
image, and the item's identity (its name) is visible ONLY in the image: the fact text says "this
cosy little spot <image>", a short sensory or visual descriptor (at most five words) that fits any
item of the category and shares no word with the item names (paper §3, KU entity abstraction).
The question asks for the current value; ``answer`` is the name in the 4th (latest) image and
``old_answer`` the name in the 3rd (the superseded value).

Finer variants (``details.variant``) are the image kinds carrying the names, cycled over the
question index: shop_sign, book_cover, product_box, license_plate, street_sign (named_sign kinds),
price_tag (brand on a shelf label), app_screenshot (streaming service, online shop, hotel) and
chat_screenshot (the meeting place agreed in a chat). ``details.category`` names the attribute
category (cafe, book, granola, car, ...): 27 categories in all.

Facts read like haystack mentions: ``contexts.mention_for`` templates, and things from the shared
phrase space with the descriptor in it ("this cosy little spot from the bakery run", "the price label
I saw on the night market for this nutty spread", "my chat with Maya about this new hangout", "my
delivery app page for this newer site"); the descriptor's determiner varies (this/that/the). The
update itself is a clause after the image (", and it's the café I go to before work now").

The attribute phrase (e.g. "the café I go to before work") is the question's reserved context: no
two questions share one, and haystack mentions never use it. Occasions come from the shared space
but never one another question reserved.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from functools import lru_cache

from memlens.construction.abilities.base import Ability, Draft, FactDraft, ImageRequest, Plan, pick
from memlens.construction.abilities.contexts import OCCASIONS, PEOPLE, WHEN, mention_for
from memlens.construction.images.synthetic import vocab
from memlens.construction.images.synthetic.named_sign import EU_COUNTRIES, US_STATES
from memlens.construction.images.truth import printed_strings
from memlens.core.registry import component
from memlens.core.schema import KU, Question

CHAIN = 4
MAX_DESCRIPTOR_WORDS = 5

# --------------------------------------------------------------------------------------------------
# Update phrasing (the clause after the image). The first fact sets the attribute, later ones update it.
# --------------------------------------------------------------------------------------------------
FIRST_TAILS = (
    ", and it's {attr} for now",
    ", which has become {attr}",
    ", since that's {attr} these days",
    ", as that's currently {attr}",
    ", and at the moment that's {attr}",
    ", because I've settled on it as {attr}",
    ", and right now this is {attr}",
    ", which I've made {attr}",
)
UPDATE_TAILS = (
    ", and it's {attr} now",
    ", since it has replaced the old one as {attr}",
    ", which has taken over as {attr}",
    ", because that's {attr} from now on",
    ", and that one is officially {attr} these days",
    ", as I've switched and that's {attr} now",
    ", since I changed my mind and went with it as {attr}",
    ", which is {attr} as of this week",
    ", because I've moved on and this is {attr} now",
    ", and these days that's {attr}",
    ", so now that's {attr}",
    ", and that's become {attr} lately",
    ", and I've made it {attr}",
    ", now that this is {attr}",
    ", since I picked it as {attr} recently",
)
OCCASION_SUFFIXES = ("", " last month", " in spring", " on Friday")  # as contexts.thing_for draws them

# --------------------------------------------------------------------------------------------------
# Name pools (the answers). Checked against the fact wording so no name word shows in the text.
# --------------------------------------------------------------------------------------------------
SHOP_WORDS = [
    "Luna",
    "Aurora",
    "Willow",
    "Copper",
    "Blue Door",
    "Red Fox",
    "Maple",
    "Harbor",
    "Juniper",
    "Saffron",
    "Pebble",
    "Lantern",
    "Nordic",
    "Bluebird",
    "Hazel",
    "Ember",
    "Fig & Honey",
    "Wild Thyme",
    "Oak & Iron",
    "Northside",
    "Sparrow",
    "Tidewater",
    "Cobble",
    "Marigold",
    "Ivy",
    "Driftwood",
    "Acorn",
    "Birchwood",
    "Kestrel",
    "Quince",
    "Heron",
    "Foxglove",
    "Bramble",
    "Larkspur",
    "Magpie",
    "Tamarind",
    "Clover",
    "Wren",
    "Cardamom",
    "Thistle",
    "Alder",
    "Rowan",
    "Linden",
    "Saltbox",
    "Mulberry",
    "Hollyhock",
]
BOOK_A = [
    "The Silent",
    "A Winter",
    "The Last",
    "Beneath the",
    "The Glass",
    "Echoes of the",
    "The Hidden",
    "Letters from the",
    "The Salt",
    "A House of",
    "The Copper",
    "Beyond the",
    "Songs of the",
    "The Quiet",
    "The Forgotten",
    "A Season of",
    "The Amber",
    "Under the",
    "The Distant",
    "Children of the",
    "The Velvet",
    "Return to the",
    "The Painted",
    "The Midnight",
]
BOOK_B = [
    "Harbor",
    "Orchard",
    "Lighthouse",
    "River",
    "Archive",
    "Mountain",
    "Cartographer",
    "Meadow",
    "Island",
    "Forest",
    "Observatory",
    "Tides",
    "Kingdom",
    "Lantern",
    "Atlas",
    "Vineyard",
    "Glacier",
    "Cathedral",
    "Marshes",
    "Orchestra",
    "Estuary",
    "Beekeeper",
    "Clockmaker",
    "Ferryman",
    "Saltworks",
]
BRANDS = [
    "Nordhaven",
    "Sunfield",
    "Bramble & Co",
    "Alpina",
    "Crispin's",
    "Verde",
    "Hearthstone",
    "Meadowlark",
    "Brightfield",
    "Oakridge Mills",
    "Wildgrain",
    "Tallgrass",
    "Pinewood Pantry",
    "Riverbend",
    "Kinfolk Foods",
    "Stonebridge",
    "Silver Birch",
    "Cedar Hollow",
    "Fernleaf",
    "Highland Harvest",
    "Amberfield",
    "Larkhill",
    "Saltmeadow",
    "Greystone Farm",
    "Marlow & Finch",
    "Hollowbrook",
]
STREET_BASES = [
    "Larkspur",
    "Kestrel",
    "Sycamore",
    "Hawthorn",
    "Magnolia",
    "Alder",
    "Wisteria",
    "Tamarack",
    "Linden",
    "Briar",
    "Foxglove",
    "Bellflower",
    "Cobblestone",
    "Marigold",
    "Heron",
    "Quarry",
    "Saltmarsh",
    "Thistle",
    "Copperfield",
    "Ashgrove",
    "Fernhill",
    "Harrow",
    "Juniper",
    "Mulberry",
    "Chestnut",
    "Walnut",
    "Lavender",
    "Rowan",
    "Bramble",
    "Primrose",
]
SERVICES = [
    "StreamFlix",
    "CineBox+",
    "Flickstream",
    "ReelHouse",
    "Vidora",
    "Screenly",
    "MovieNest",
    "Lumiflix",
    "PrimeReel",
    "Couchcast",
    "Showtide",
    "Framely",
    "Kinora",
    "Playhaus",
]
ONLINE_SHOPS = [
    "ShopNest",
    "Parcelly",
    "CartWise",
    "Bazaarly",
    "Northmart Online",
    "Pinecone Goods",
    "Boxwise",
    "Dropcart",
    "Crateful",
    "Stockroom Direct",
    "Hollow Tree Market",
    "Baskit",
    "Quickcrate",
    "Oddbasket",
]
HOTELS = [
    "Hotel Aurora",
    "The Harbor Inn",
    "Grand Meridian",
    "Maple Lodge",
    "Hotel Nordlys",
    "Casa Luna",
    "The Copper Kettle Inn",
    "Seaside Suites",
    "Parkview Hotel",
    "The Willow House",
    "Hotel Belvedere",
    "The Kestrel Hotel",
    "Hotel Larkspur",
    "The Linden Rooms",
    "Quayside Lodge",
    "Hotel Saffron",
    "The Alder Inn",
]
MEET_PLACES = [
    "Birchwood Boathouse",
    "The Copper Still",
    "Larkspur Social",
    "The Tin Lantern",
    "Quayside Tap",
    "Wren & Barrel",
    "The Gilded Acorn",
    "Marigold Canteen",
    "Foxglove Hall",
    "The Heron Room",
    "Juniper Yard",
    "Ember & Oak",
    "The Salt Cellar",
    "Thistle & Thyme",
    "The Rowan Tree",
]
LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ"

SHOP_DESC = (
    "this striped-awning place",
    "this cosy little spot",
    "this charming storefront",
    "this spot round the block",
    "this busy little place",
    "this tidy shopfront",
    "this unassuming little place",
    "this newer spot nearby",
)


@dataclass(frozen=True)
class Category:
    key: str
    variant: str  # finer variant (image kind)
    family: str
    roles: tuple  # ((attribute template, question template), ...) with {q}
    quals: tuple  # qualifiers filling {q}
    descriptors: tuple  # at most five words, fit any item, never the category word
    hint: str  # answer-format sentence appended to the question
    path: tuple  # where the name sits in the image's ground truth
    #: how the descriptor {d} becomes the mention's thing, in the shared mention phrase space
    #: ({occ} an occasion, {app} an app, {p} a person, as contexts.thing_for writes them)
    wraps: tuple = ("{d}", "{d} from {occ}", "{d} from {occ}")
    extra: dict = field(default_factory=dict)


def _shop(key, types, roles, quals, extra_desc):
    return Category(
        key,
        "shop_sign",
        "named_sign",
        roles,
        quals,
        SHOP_DESC + tuple(extra_desc),
        "Answer with its name.",
        ("text",),
        extra={"types": tuple(types)},
    )


def _box(key, products, roles, quals, desc):
    return Category(
        key,
        "product_box",
        "named_sign",
        roles,
        quals,
        tuple(desc),
        "Answer with the brand name.",
        ("brand",),
        extra={"products": tuple(products)},
    )


def _tag(key, product, size, lo, hi, roles, quals, desc):
    return Category(
        key,
        "price_tag",
        "price_tag",
        roles,
        quals,
        tuple(desc),
        "Answer with the brand name.",
        ("brand",),
        wraps=("the price label I saw on {occ} for {d}",) * 3 + ("the price label for {d}",),
        extra={"product": product, "size_text": size, "price": (lo, hi)},
    )


CATEGORIES: tuple[Category, ...] = (
    # ---- shop signs
    _shop(
        "cafe",
        ["Cafe", "Coffee House", "Espresso Bar", "Coffee Roasters", "Coffee Co."],
        (("the café I go to {q}", "Which café do I go to {q} now?"),),
        (
            "before work",
            "on Saturday mornings",
            "after my run",
            "on lunch breaks",
            "on remote work days",
            "with my sister",
            "near the office",
            "on the way to the station",
        ),
        ["this snug little hideaway", "this sunny spot"],
    ),
    _shop(
        "bakery",
        ["Bakery", "Bakehouse", "Patisserie", "Bread Co.", "Bake Shop"],
        (("the bakery I buy {q} from", "Which bakery do I buy {q} from now?"),),
        ("my weekend bread", "birthday cakes", "Sunday croissants", "treats for the office", "rye loaves", "sourdough"),
        ["this warm-smelling little shop", "this early-opening spot"],
    ),
    _shop(
        "bookshop",
        ["Books", "Bookshop", "Booksellers", "Book Nook", "Reads"],
        (("the bookshop I go to {q}", "Which bookshop do I go to {q} now?"),),
        ("for gifts", "for new releases", "on rainy Saturdays", "after work", "for secondhand finds", "with my kids"),
        ["this cluttered little shop", "this shop full of nooks"],
    ),
    _shop(
        "barber",
        ["Barber", "Barbers", "Barbershop", "Barber Co.", "Cuts"],
        (("the barber I see {q}", "Which barber do I see {q} now?"),),
        ("for my regular trim", "before big events", "every few weeks", "near the office", "for a beard tidy"),
        ["this old-school shop", "this no-frills shop"],
    ),
    _shop(
        "florist",
        ["Florist", "Flowers", "Florals", "Flower Studio", "Blooms"],
        (("the florist I buy {q} from", "Which florist do I buy {q} from now?"),),
        ("flowers for my mum", "my weekly bouquet", "our table flowers", "anniversary roses", "office flowers"),
        ["this fragrant little shop", "this colourful little shop"],
    ),
    _shop(
        "deli",
        ["Deli", "Delicatessen", "Deli & Grocer", "Sandwich Bar", "Provisions"],
        (("the deli I get {q} from", "Which deli do I get {q} from now?"),),
        (
            "my lunchtime sandwich",
            "weekend picnic supplies",
            "cheese for dinner parties",
            "my Friday lunch",
            "olives and antipasti",
        ),
        ["this well-stocked little shop", "this bustling lunchtime spot"],
    ),
    _shop(
        "ice_cream",
        ["Gelato", "Gelateria", "Ice Cream", "Creamery", "Scoops"],
        (("the ice cream place I go to {q}", "Which ice cream place do I go to {q} now?"),),
        ("after dinner", "on hot days", "with my niece", "after the cinema", "on Sunday walks"),
        ["this sweet little shop", "this summery little spot"],
    ),
    _shop(
        "pharmacy",
        ["Pharmacy", "Chemist", "Apothecary", "Drugstore"],
        (("the pharmacy I use {q}", "Which pharmacy do I use {q} now?"),),
        ("for my prescriptions", "for late-night runs", "near home", "for my allergy meds", "for the kids' medicine"),
        ["this bright little shop", "this late-opening spot"],
    ),
    # ---- book covers
    Category(
        "book",
        "book_cover",
        "named_sign",
        (
            ("the book I'm reading {q}", "What is the title of the book I'm reading {q} now?"),
            ("the novel I'm working through {q}", "What is the title of the novel I'm working through {q} now?"),
        ),
        (
            "on my commute",
            "before bed",
            "on lunch breaks",
            "for book club",
            "at weekends",
            "on the train",
            "over breakfast",
            "in the bath",
            "on holiday",
            "at the gym",
            "in my reading nook",
            "on Sunday afternoons",
            "in the park",
            "on night shifts",
            "while travelling",
            "on the bus",
            "on rainy evenings",
            "in the garden",
            "on the ferry",
            "by the fire",
            "in waiting rooms",
            "on my lunch walk",
            "on long flights",
            "in bed on Sundays",
            "at the allotment",
        ),
        (
            "this chunky paperback",
            "this slim hardback",
            "this dog-eared secondhand copy",
            "this library loan",
            "this moody-looking one",
            "this hefty doorstopper",
            "this pocket-sized edition",
            "this bargain-bin find",
            "this well-thumbed copy",
            "this slow-burning page-turner",
        ),
        "Answer with the title.",
        ("text",),
    ),
    # ---- product boxes (brand is the answer)
    _box(
        "granola",
        ["Crunchy Granola"],
        (("the granola I eat {q}", "Which brand of granola do I eat {q} now?"),),
        (
            "for breakfast",
            "at my desk",
            "after my runs",
            "with yogurt",
            "on weekend mornings",
            "on camping trips",
            "as a late-night snack",
        ),
        (
            "this crunchy morning staple",
            "this big cardboard box",
            "this clustery breakfast pick",
            "this toasty-smelling box",
            "this sweet crunchy stuff",
            "this supermarket find",
        ),
    ),
    _box(
        "tea",
        ["Earl Grey Tea", "Chamomile Tea"],
        (("the tea I drink {q}", "Which brand of tea do I drink {q} now?"),),
        (
            "in the afternoons",
            "at the office",
            "before bed",
            "with breakfast",
            "on rainy days",
            "after dinner",
            "when I'm studying",
        ),
        (
            "this fragrant little box",
            "this soothing afternoon staple",
            "this boxed blend",
            "this calming box",
            "this aromatic pick",
        ),
    ),
    _box(
        "coffee_beans",
        ["Espresso Beans"],
        (("the coffee I buy {q}", "Which brand of coffee do I buy {q} now?"),),
        (
            "for my espresso machine",
            "for the office",
            "for weekend brewing",
            "for my moka pot",
            "for guests",
            "for cold brew",
        ),
        (
            "this dark roasty pick",
            "this rich-smelling box",
            "this bold morning fuel",
            "this punchy roast",
            "this supermarket find",
        ),
    ),
    _box(
        "spaghetti",
        ["Spaghetti No. 5"],
        (("the spaghetti I cook {q}", "Which brand of spaghetti do I cook {q} now?"),),
        ("on weeknights", "for family dinners", "for pasta night", "when friends come over", "for meal prep"),
        (
            "this long skinny stuff",
            "this pantry staple",
            "this cardboard box",
            "this weeknight staple",
            "this supermarket find",
        ),
    ),
    _box(
        "rice",
        ["Jasmine Rice"],
        (("the rice I cook {q}", "Which brand of rice do I cook {q} now?"),),
        ("with curries", "for stir-fries", "for meal prep", "on busy weeknights", "for family dinners"),
        (
            "this fragrant pantry staple",
            "this hefty box",
            "this fluffy-cooking pick",
            "this supermarket find",
            "this weeknight staple",
        ),
    ),
    _box(
        "crackers",
        ["Oat Crackers"],
        (("the crackers I snack on {q}", "Which brand of crackers do I snack on {q} now?"),),
        ("at work", "with cheese", "in the afternoons", "on hikes", "between meetings"),
        (
            "this crunchy snack box",
            "this savoury little box",
            "this snack-drawer staple",
            "this supermarket find",
            "this lunchbox regular",
        ),
    ),
    # ---- price tags (brand on the shelf label)
    _tag(
        "olive_oil",
        "Extra Virgin Olive Oil",
        "750 ml",
        6,
        13,
        (("the olive oil I buy {q}", "Which brand of olive oil do I buy {q} now?"),),
        ("for salads", "for everyday cooking", "for dipping bread", "for roasting vegetables", "for special dinners"),
        (
            "this peppery golden stuff",
            "this grassy-tasting bottle",
            "this smooth golden pour",
            "this fancy-looking bottle",
            "this everyday cooking staple",
        ),
    ),
    _tag(
        "peanut_butter",
        "Peanut Butter",
        "340 g",
        3,
        6,
        (("the nut butter I buy {q}", "Which brand of nut butter do I buy {q} now?"),),
        ("for my toast", "for smoothies", "for the kids' lunches", "for baking", "for post-gym snacks"),
        (
            "this nutty spread",
            "this thick sticky jar",
            "this toast-topping staple",
            "this rich spoonable stuff",
            "this pantry favourite",
        ),
    ),
    _tag(
        "honey",
        "Wildflower Honey",
        "250 g",
        4,
        9,
        (("the honey I buy {q}", "Which brand of honey do I buy {q} now?"),),
        ("for my tea", "for porridge", "for baking", "for salad dressings"),
        (
            "this floral golden jar",
            "this runny sweet stuff",
            "this sticky amber jar",
            "this little sweet treat",
            "this breakfast-table jar",
        ),
    ),
    _tag(
        "yogurt",
        "Greek Yogurt",
        "500 g",
        2,
        5,
        (("the yogurt I buy {q}", "Which brand of yogurt do I buy {q} now?"),),
        ("for breakfast bowls", "for smoothies", "for marinades", "for dips"),
        (
            "this thick tangy tub",
            "this creamy tub",
            "this fridge staple",
            "this protein-packed tub",
            "this tangy breakfast pick",
        ),
    ),
    _tag(
        "almond_milk",
        "Almond Milk",
        "1 L",
        2,
        4,
        (("the plant milk I buy {q}", "Which brand of plant milk do I buy {q} now?"),),
        ("for my coffee", "for cereal", "for baking", "for overnight oats"),
        (
            "this nutty carton",
            "this creamy carton",
            "this dairy-free staple",
            "this fridge-door carton",
            "this mild creamy pour",
        ),
    ),
    _tag(
        "detergent",
        "Laundry Detergent",
        "2 L",
        6,
        14,
        (("the detergent I buy {q}", "Which brand of detergent do I buy {q} now?"),),
        ("for our laundry", "for my gym kit", "for the baby clothes", "for bedding"),
        (
            "this fresh-smelling jug",
            "this big plastic jug",
            "this heavy-duty bottle",
            "this utility-room staple",
            "this laundry-day regular",
        ),
    ),
    # ---- licence plates
    Category(
        "car",
        "license_plate",
        "named_sign",
        (("the car I drive {q}", "What is the licence plate number of the car I drive {q} now?"),),
        (
            "to work",
            "on weekends",
            "for the school run",
            "on road trips",
            "to the coast",
            "to the allotment",
            "to my parents' place",
            "for errands",
            "to band practice",
            "on camping trips",
            "to the climbing gym",
            "to football practice",
            "for the grocery run",
            "on night shifts",
            "to the lake",
            "to my evening class",
            "for my deliveries",
            "to the airport",
            "to the ski hill",
            "to choir practice",
            "to weekend markets",
            "to my night class",
            "to the swimming pool",
            "to the garden centre",
            "to the beach",
            "to the golf course",
            "to the dog park",
            "for the recycling run",
            "to the train station",
            "to the cinema",
            "to my volunteering shift",
            "to my pottery class",
            "for the nursery run",
            "to the farmers market",
            "to my grandmother's",
            "to the office park",
        ),
        (
            "this trusty runabout",
            "this new set of wheels",
            "this zippy little runaround",
            "this roomy family wagon",
            "this practical commuter ride",
            "this secondhand bargain",
            "this sensible little motor",
            "this comfy cruiser",
        ),
        "Answer with the plate exactly as shown.",
        ("text",),
    ),
    # ---- street signs
    Category(
        "street",
        "street_sign",
        "named_sign",
        (("the street where {q} is", "Which street is {q} on now?"),),
        (
            "my flat",
            "my office",
            "my studio",
            "my coworking desk",
            "my band's rehearsal room",
            "my sister's flat",
            "my storage unit",
            "my parking spot",
            "my climbing gym",
            "my pottery studio",
            "my dentist",
            "our team's office",
            "my therapist's practice",
            "my favourite food truck",
            "my piano teacher",
            "my physio",
            "my hairdresser",
            "my vet",
            "my daughter's nursery",
            "my language school",
            "my weekend market stall",
            "my dance class",
            "my accountant",
            "my doctor's surgery",
            "my tailor",
            "my gym",
            "my bank",
            "my favourite bakery",
            "my running club",
            "my book club",
            "my bike repair shop",
            "my optician",
            "my barber",
            "my choir",
            "my yoga studio",
            "my son's school",
            "my allotment",
            "my rehearsal space",
            "my sister's office",
        ),
        (
            "this quiet leafy stretch",
            "this busy stretch downtown",
            "this tucked-away spot",
            "this corner of town",
            "this hilly part of town",
            "this stretch by the shops",
            "this lively neighbourhood",
            "this sleepy residential bit",
        ),
        "Answer with the street name as shown on the sign.",
        ("text",),
    ),
    # ---- app screenshots
    Category(
        "streaming",
        "app_screenshot",
        "app_screenshot",
        (("the streaming service I use {q}", "Which streaming service do I use {q} now?"),),
        (
            "for films",
            "for movie nights",
            "for documentaries",
            "for late-night shows",
            "for watching anime",
            "for catching up on series",
            "for kids' cartoons",
            "for foreign films",
        ),
        (
            "this other subscription",
            "this slick new app",
            "this service everyone recommends",
            "this well-stocked app",
            "this trial I kept",
            "this one my flatmate likes",
        ),
        "Answer with its name.",
        ("service",),
        wraps=("{app} page for {d}",),
        extra={"apps": ("the streaming account", "my streaming app")},
    ),
    Category(
        "online_shop",
        "app_screenshot",
        "app_screenshot",
        (("the online shop I order {q} from", "Which online shop do I order {q} from now?"),),
        (
            "household basics",
            "gifts",
            "kitchen gear",
            "office supplies",
            "pet supplies",
            "cleaning stuff",
            "craft materials",
            "gadgets",
            "toiletries",
        ),
        (
            "this site with quick delivery",
            "this site a colleague recommended",
            "this slick little website",
            "this marketplace app",
            "this newer site",
            "this budget-friendly site",
        ),
        "Answer with its name.",
        ("shop",),
        wraps=("{app} page for {d}",),
        extra={"apps": ("my delivery app", "the shopping app")},
    ),
    Category(
        "hotel",
        "app_screenshot",
        "app_screenshot",
        (("the hotel I book {q}", "Which hotel do I book {q} now?"),),
        (
            "for work trips",
            "for conferences",
            "when visiting my parents",
            "for client visits",
            "for weekend getaways",
            "for layovers",
            "for the annual sales meeting",
            "for trade fairs",
        ),
        (
            "this place near the station",
            "this comfy business spot",
            "this quiet place downtown",
            "this boutique place",
            "this spot with great breakfasts",
            "this modern-looking place",
        ),
        "Answer with its name.",
        ("hotel",),
        wraps=("{app} page for {d}",),
        extra={"apps": ("the booking site", "the hotel app")},
    ),
    # ---- chat screenshots (the place agreed in the chat)
    Category(
        "meetup_venue",
        "chat_screenshot",
        "chat_screenshot",
        (
            ("the place where my friends and I meet {q}", "Where do my friends and I meet {q} now?"),
            ("the place my running club goes {q}", "Where does my running club go {q} now?"),
            ("the place my team heads {q}", "Where does my team head {q} now?"),
            ("the spot my cousins and I pick {q}", "Which spot do my cousins and I pick {q} now?"),
        ),
        (
            "for Friday drinks",
            "for Sunday brunch",
            "for board game nights",
            "for coffee catch-ups",
            "for lunch on Fridays",
            "for dinner once a month",
            "for after-work drinks",
            "for weekend brunch",
            "for a quick coffee",
            "for birthday dinners",
            "for quiz nights",
            "for karaoke nights",
            "for Sunday roasts",
            "for post-run coffee",
            "for monthly catch-ups",
            "for pizza nights",
        ),
        (
            "this new hangout",
            "this spot across town",
            "this lively new haunt",
            "this place with long tables",
            "this cosy little spot",
            "this spot someone suggested",
        ),
        "Answer with the name of the place.",
        ("facts", "place"),
        wraps=("my chat with {p} about {d}",),
    ),
)
#: chat activity (as drawn in the chat) for each qualifier
CHAT_ACTIVITY = {
    "for Friday drinks": "drinks",
    "for Sunday brunch": "brunch",
    "for board game nights": "board games",
    "for coffee catch-ups": "coffee",
    "for lunch on Fridays": "lunch",
    "for dinner once a month": "dinner",
    "for after-work drinks": "drinks",
    "for weekend brunch": "brunch",
    "for a quick coffee": "coffee",
    "for birthday dinners": "dinner",
    "for quiz nights": "drinks",
    "for karaoke nights": "drinks",
    "for Sunday roasts": "lunch",
    "for post-run coffee": "coffee",
    "for monthly catch-ups": "dinner",
    "for pizza nights": "dinner",
}
#: families whose chain images get photo effects (all but one) to stay apart in perceptual hash
PHOTO_FAMILIES = ("named_sign", "price_tag", "app_screenshot")
VARIANTS = (
    "shop_sign",
    "book_cover",
    "product_box",
    "license_plate",
    "street_sign",
    "price_tag",
    "app_screenshot",
    "chat_screenshot",
)
BY_KEY = {c.key: c for c in CATEGORIES}

_STOP = {"the", "a", "an", "of", "and", "from", "to", "in", "on", "for", "by", "at", "no", "co"}
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def tokens(s: str) -> set[str]:
    return {t for t in _TOKEN.findall(s.lower()) if t not in _STOP}


def distinctive(cat: Category, name: str) -> set[str]:
    """The words of a name that identify it (a shop type or street type word does not)."""
    if cat.key == "car":
        return {name.lower()}
    generic: set[str] = set()
    if cat.variant == "shop_sign":
        generic = set().union(*(tokens(t) for t in cat.extra["types"]))
    elif cat.key == "street":
        generic = {t.lower() for t in vocab.STREET_TYPES} | {t.lower() for t in vocab.STREET_TYPES_LONG.values()}
    elif cat.key == "hotel":
        generic = {"hotel", "inn", "lodge", "house", "rooms", "suites"}
    return tokens(name) - generic


def _template_tokens() -> set[str]:
    from memlens.construction.abilities.contexts import FAMILY_KIND
    from memlens.construction.text import textbank

    out: set[str] = set()
    for kind in set(FAMILY_KIND.values()):
        for t in textbank.mention_templates(kind):
            out |= tokens(t.replace("{thing}", " ").replace("{when}", " ").replace("<image>", " "))
    for t in FIRST_TAILS + UPDATE_TAILS + OCCASION_SUFFIXES + tuple(WHEN) + tuple(OCCASIONS) + tuple(PEOPLE):
        out |= tokens(t.replace("{attr}", " "))
    for c in CATEGORIES:
        for w in c.wraps:
            out |= tokens(re.sub(r"\{\w+\}", " ", w))
        for a in c.extra.get("apps", ()):
            out |= tokens(a)
    return out


@lru_cache(maxsize=1)
def _template_tokens_once() -> frozenset[str]:
    return frozenset(_template_tokens())


def banned_tokens(cat: Category, attr: str, question: str, descriptors) -> set[str]:
    """Words of the fact and question wording: no name word may be among them."""
    out = set(_template_tokens_once()) | tokens(attr) | tokens(question) | tokens(cat.hint)
    for d in descriptors:
        out |= tokens(d)
    return out


# --------------------------------------------------------------------------------------------------
# Names and image constraints
# --------------------------------------------------------------------------------------------------
def _plate(rng: random.Random, pattern: str) -> str:
    return "".join(
        rng.choice(LETTERS) if ch == "L" else rng.choice("0123456789") if ch == "D" else ch for ch in pattern
    )


def _chain_setup(rng: random.Random, cat: Category) -> dict:
    """Constants shared by the four images of a chain (same product, region, city, ...)."""
    if cat.variant == "product_box":
        return {"product": pick(rng, list(cat.extra["products"]))}
    if cat.key == "car":
        style = pick(rng, ["us", "us", "eu", "uk"])
        if style == "us":
            st = pick(rng, US_STATES)
            return {"style": style, "region": st[0], "pattern": st[1]}
        if style == "eu":
            ct = pick(rng, EU_COUNTRIES)
            return {"style": style, "region": ct[0], "pattern": ct[2]}
        return {"style": "uk", "region": None, "pattern": "LLDD LLL"}
    if cat.key == "street":
        return {"style": pick(rng, ["us", "eu"])}
    if cat.key == "hotel":
        cur = pick(rng, ["USD", "EUR", "GBP"])
        return {"currency": cur, "city": pick(rng, vocab.CURRENCY_CITIES[cur])}
    if cat.variant == "price_tag":
        return {"currency": pick(rng, ["USD", "EUR", "GBP"])}
    return {}


def _name(rng: random.Random, cat: Category, setup: dict) -> str:
    v = cat.variant
    if v == "shop_sign":
        return f"{pick(rng, SHOP_WORDS)} {pick(rng, list(cat.extra['types']))}"
    if v == "book_cover":
        return f"{pick(rng, BOOK_A)} {pick(rng, BOOK_B)}"
    if v in ("product_box", "price_tag"):
        return pick(rng, BRANDS)
    if cat.key == "car":
        if setup["style"] == "uk":
            return (
                f"{rng.choice(LETTERS)}{rng.choice(LETTERS)}{rng.randint(10, 74)} "
                f"{''.join(rng.choice(LETTERS) for _ in range(3))}"
            )
        return _plate(rng, setup["pattern"])
    if cat.key == "street":
        base, st = pick(rng, STREET_BASES), pick(rng, vocab.STREET_TYPES)
        return f"{base} {st}".upper() if setup["style"] == "us" else f"{base} {vocab.STREET_TYPES_LONG[st]}"
    if cat.key == "streaming":
        return pick(rng, SERVICES)
    if cat.key == "online_shop":
        return pick(rng, ONLINE_SHOPS)
    if cat.key == "hotel":
        return pick(rng, HOTELS)
    if cat.key == "meetup_venue":
        return pick(rng, MEET_PLACES)
    raise ValueError(f"KU: no name pool for category {cat.key!r}")


def _constraints(rng: random.Random, cat: Category, setup: dict, name: str, qual: str) -> dict:
    v = cat.variant
    if v == "shop_sign":
        return {"kind": "shop_sign", "text": name}
    if v == "book_cover":
        return {"kind": "book_cover", "text": name, "subtitle": None}
    if v == "product_box":
        product = setup["product"]
        weights = dict(vocab.BOX_PRODUCTS)[product]
        return {
            "kind": "product_box",
            "text": product,
            "brand": name,
            "weight": pick(rng, weights),
            "badge": pick(rng, [None, None, "ORGANIC"]),
        }
    if v == "price_tag":
        lo, hi = cat.extra["price"]
        price = f"{rng.randint(lo, hi - 1)}.{pick(rng, ['29', '49', '79', '99'])}"
        return {
            "product": cat.extra["product"],
            "brand": name,
            "size_text": cat.extra["size_text"],
            "price": price,
            "currency": setup["currency"],
        }
    if cat.key == "car":
        c = {"kind": "license_plate", "text": name, "style": setup["style"], "vanity": False}
        if setup["region"]:
            c["region"] = setup["region"]
        return c
    if cat.key == "street":
        return {"kind": "street_sign", "text": name, "style": setup["style"]}
    if cat.key == "streaming":
        return {"kind": "streaming_bill", "service": name, "plan": pick(rng, ["Basic", "Standard", "Premium"])}
    if cat.key == "online_shop":
        return {"kind": "order_confirmation", "shop": name}
    if cat.key == "hotel":
        return {"kind": "booking_confirmation", "hotel": name, "city": setup["city"], "currency": setup["currency"]}
    if cat.key == "meetup_venue":
        return {"topic": "reschedule", "place": name, "activity": CHAT_ACTIVITY[qual]}
    raise ValueError(f"KU: no constraints for category {cat.key!r}")


def clashes(c: str, reserved: set[str]) -> bool:
    """``c`` is, contains or is contained in a reserved context (the rule of ``contexts.thing_for``)."""
    return c in reserved or any(c in r or r in c for r in reserved)


def name_of(truth: dict, path) -> str:
    v = truth
    for k in path:
        v = v[k]
    return str(v)


def _bounded(text: str, needle: str) -> bool:
    from memlens.construction.text.validators import contains_token_bounded

    return contains_token_bounded(text, needle)


@component("question_type", "knowledge_update")
class KnowledgeUpdate(Ability):
    question_type = KU
    variants = {"": list(VARIANTS)}
    families = {
        "shop_sign": ["named_sign"],
        "book_cover": ["named_sign"],
        "product_box": ["named_sign"],
        "license_plate": ["named_sign"],
        "street_sign": ["named_sign"],
        "price_tag": ["price_tag"],
        "app_screenshot": ["app_screenshot"],
        "chat_screenshot": ["chat_screenshot"],
    }

    # ------------------------------------------------------------------ plan
    def plan(self, rng, topic, subtype, variant, plan_id, reserved):
        if subtype != "":
            raise ValueError(f"KU: unknown subtype {subtype!r} (the only subtype is '')")
        if variant not in VARIANTS:
            raise ValueError(f"KU: unknown variant {variant!r}; variants: {', '.join(VARIANTS)}")
        cats = [c for c in CATEGORIES if c.variant == variant]
        rng.shuffle(cats)
        for cat in cats:
            free = [(r, q) for r in cat.roles for q in cat.quals if not clashes(r[0].format(q=q), reserved)]
            if free:
                break
        else:
            raise RuntimeError(
                f"KU: every attribute of variant {variant!r} is already used; "
                "add roles or qualifiers to memlens.construction.abilities.ku.CATEGORIES"
            )
        (attr_tpl, q_tpl), qual = pick(rng, free)
        attr, question = attr_tpl.format(q=qual), q_tpl.format(q=qual)
        reserved.add(attr)
        # "this cosy little spot", sometimes "that ..." or "the ..." (haystack things start with "the")
        descriptors = [
            rng.choices(["this", "that", "the"], weights=[5, 2, 3])[0] + d[len("this") :]
            for d in rng.sample(list(cat.descriptors), CHAIN)
        ]
        setup = _chain_setup(rng, cat)
        banned = banned_tokens(cat, attr, question, descriptors)
        names: list[str] = []
        for _ in range(1000):
            n = _name(rng, cat, setup)
            own = distinctive(cat, n)
            if n in names or own & banned or any(own & distinctive(cat, m) for m in names):
                continue
            names.append(n)
            if len(names) == CHAIN:
                break
        else:
            raise RuntimeError(f"KU: could not draw {CHAIN} distinct names for {cat.key!r}")
        images = [ImageRequest(cat.family, _constraints(rng, cat, setup, n, qual)) for n in names]
        if cat.family == "chat_screenshot":
            # four chats that differ only in the place name look alike: distinct (style, script) pairs
            combos = [(st, tp) for st in ("green", "blue", "purple") for tp in ("reschedule", "meetup")]
            for req, (st, tp) in zip(images, rng.sample(combos, CHAIN)):
                req.constraints.update({"style": st, "topic": tp})
        if cat.family in PHOTO_FAMILIES:
            # same-layout renders of one kind can be perceptual near-duplicates (the filter drops them):
            # at most one image of the chain is a flat render, the others are photographed (flat street
            # signs of one style differ only in their lettering: none of them is flat)
            flat = rng.randrange(CHAIN) if cat.key != "street" else -1
            for k, req in enumerate(images):
                req.constraints["photo"] = k != flat
        slots = [self._slots(rng, cat, reserved) for _ in range(CHAIN)]
        if cat.family == "chat_screenshot":  # each chat is with the person its mention names
            for req, slot in zip(images, slots):
                req.constraints.update({"contact": slot["p"], "title": slot["p"]})
        latent = {
            "category": cat.key,
            "attribute": attr,
            "question": f"{question} {cat.hint}",
            "descriptors": descriptors,
            "names": names,
            "context": attr,
            "slots": slots,
        }
        return Plan(
            plan_id, KU, subtype, variant, topic.topic_id, pick(rng, topic.subtopics or [topic.title]), images, latent
        )

    @staticmethod
    def _slots(rng: random.Random, cat: Category, reserved: set[str]) -> dict:
        """Shared-phrase-space pieces of one fact's thing: an occasion (never one another question
        reserved), an app, a person. Occasions are not this question's context (the attribute is),
        so they are not reserved: haystack mentions of them cannot make the question ambiguous."""
        free = [o + sfx for o in OCCASIONS for sfx in OCCASION_SUFFIXES if not clashes(o + sfx, reserved)]
        return {
            "wrap": pick(rng, list(cat.wraps)),
            "occ": pick(rng, free or list(OCCASIONS)),
            "app": pick(rng, list(cat.extra.get("apps", ("the app",)))),
            "p": pick(rng, PEOPLE),
        }

    @staticmethod
    def _thing(rng: random.Random, slot: dict, desc: str, drawn: list[str], retry: int) -> str:
        p = slot["p"]
        if "{p}" in slot["wrap"]:  # the person must not be a name the image shows (a chat contact)
            ok = [x for x in PEOPLE if not any(_bounded(x, v) for v in drawn)]
            if retry or p not in ok:
                p = pick(rng, ok)
        return slot["wrap"].format(d=desc, occ=slot["occ"], app=slot["app"], p=p)

    # ------------------------------------------------------------------ build
    def build(self, rng, plan, truths):
        cat = BY_KEY[plan.latent["category"]]
        if len(truths) != CHAIN:
            raise ValueError(f"KU: expected {CHAIN} images, got {len(truths)}")
        names = [name_of(t, cat.path) for t in truths]
        if len({n.strip().lower() for n in names}) != CHAIN:
            raise ValueError(f"KU: chain values are not distinct: {names}")
        attr = plan.latent["attribute"]
        descriptors = plan.latent["descriptors"]
        question = plan.latent["question"]
        if any(_bounded(question, n) for n in names):
            raise ValueError("KU: the question names a chain value")
        drawn = sorted({v for t in truths for v in printed_strings(t, min_len=2)})
        name_words = set().union(*(distinctive(cat, n) for n in names))
        tails = [pick(rng, FIRST_TAILS)] + rng.sample(UPDATE_TAILS, CHAIN - 1)
        facts = []
        for j in range(CHAIN):
            for attempt in range(40):
                # a chat's person is the contact it shows: never re-drawn
                retry = attempt if cat.family != "chat_screenshot" else 0
                thing = self._thing(rng, plan.latent["slots"][j], descriptors[j], drawn, retry)
                mention = mention_for(rng, cat.family, thing, tail=tails[j].format(attr=attr))
                if (
                    mention.count("<image>") == 1
                    and not tokens(mention.replace("<image>", " ")) & name_words
                    and not any(_bounded(mention, v) for v in drawn + names)
                ):
                    break
                tails[j] = pick(rng, UPDATE_TAILS if j else FIRST_TAILS)
            else:
                raise ValueError(f"KU: no admissible wording for fact {j} of {plan.plan_id}")
            facts.append(FactDraft(mention, [j]))
        derivation = {"op": "last", "args": [{"op": "get", "img": k, "path": list(cat.path)} for k in range(CHAIN)]}
        details = {
            "category": cat.key,
            "family": cat.family,
            "chain_length": CHAIN,
            "descriptors": list(descriptors),
            "attribute": attr,
            "answer_format": "name",
            "ambiguity": list(names),
            "chain_values": list(names),
        }
        if cat.family == "named_sign":
            details["kind"] = truths[0].get("kind")
        return Draft(
            question=question,
            answer=names[-1],
            facts=facts,
            details=details,
            old_answer=names[-2],
            ordered=True,
            forbidden=list(names),
            contexts=[attr],
            derivation=derivation,
        )

    def chance_answer(self, question: Question, rng):
        return ""  # open form: nothing derivable without the images
