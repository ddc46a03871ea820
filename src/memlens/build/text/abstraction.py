"""Entity abstraction (paper §3, step 3) and background paragraphs (step 1), template version.

The surface form of an entity is masked and replaced by an under-specified anaphor that refers to
the evidence image ("the bakery in this photo <image>"): only the image resolves which bakery.

1. :func:`classify` maps an entity (its name plus an optional kind hint: a named_sign kind such as
   ``shop_sign``/``book_cover``/``product_box``/``license_plate``/``street_sign``, a ticket's event
   type, a store type, ``airline``...) to one of :data:`CATEGORIES` (about 55 semantic categories:
   places, organizations, objects, events, and generic fallbacks) by keyword rules.
2. :func:`anaphor` samples one of the 3-4 paraphrase templates of the category (:data:`ANAPHORS`,
   about 170 in all). Every template is a noun phrase followed by exactly one ``<image>``; none names
   an item, holds a digit or a colour word (answers are often colours or numbers).
3. :func:`abstract` replaces an entity's surface form in a sentence (token-bounded,
   case-insensitive) by a sampled anaphor.
4. :func:`mention` embeds an anaphor in a user-turn sentence tied to an occasion context; evidence
   mentions (IE, MSR, TR) and a share of haystack mentions (generate stage) use it alike, so the
   phrasing never tells evidence from haystack.
5. :func:`descriptor` writes KU-style sensory descriptors of at most five words that do not name the
   category and fit several of its items ("this tangy round thing <image>").
6. :func:`background` writes a 3-5 sentence background paragraph around the (abstracted) facts.
"""
from __future__ import annotations

import random
import re

IMAGE = "<image>"

#: category -> paraphrase templates (each ends in the noun phrase + " <image>")
ANAPHORS: dict[str, tuple[str, ...]] = {
    # ---------------------------------------------------------------- places
    "bakery": ("the bakery in this photo <image>", "that bakery I showed you <image>", "this little bakery <image>",
               "the bakery from my picture <image>"),
    "cafe": ("the café in this photo <image>", "that coffee place I showed you <image>", "this cosy café <image>"),
    "bookshop": ("the bookshop in this photo <image>", "that bookstore I showed you <image>",
                 "this little bookshop <image>", "the bookshop from my picture <image>"),
    "museum": ("the museum in this photo <image>", "that museum I visited <image>",
               "the gallery I went to, shown here <image>"),
    "park": ("the park in this photo <image>", "that park we walked through <image>", "this leafy spot <image>"),
    "restaurant": ("the restaurant in this photo <image>", "that place we ate at <image>", "the eatery from my picture <image>"),
    "bistro": ("the bistro in this photo <image>", "that bistro I showed you <image>", "this small bistro <image>"),
    "bridge": ("the bridge shown here <image>", "that bridge we talked about <image>", "this crossing <image>"),
    "temple": ("the temple in this photo <image>", "that temple I visited <image>", "this old shrine <image>"),
    "pharmacy": ("the pharmacy in this photo <image>", "that chemist I showed you <image>",
                 "this pharmacy <image>"),
    "florist": ("the florist in this photo <image>", "that flower shop I showed you <image>",
                "this little florist <image>", "the flower shop from my picture <image>"),
    "barber": ("the barber in this photo <image>", "that barbershop I showed you <image>",
               "this barbershop <image>"),
    "gym": ("the gym in this photo <image>", "that gym I tried out <image>", "this fitness studio <image>"),
    "hotel": ("the hotel in this photo <image>", "that hotel we stayed at <image>", "this hotel <image>"),
    "airport": ("the airport in this photo <image>", "that airport I flew through <image>",
                "this terminal building <image>"),
    "train_station": ("the station in this photo <image>", "that train station I showed you <image>",
                      "this station <image>"),
    "street": ("the street in this photo <image>", "that street I showed you <image>", "this street corner <image>"),
    "market": ("the market in this photo <image>", "that market I wandered through <image>",
               "this market hall <image>"),
    "deli": ("the deli in this photo <image>", "that deli I showed you <image>", "this corner deli <image>"),
    "tailor": ("the tailor in this photo <image>", "that tailoring shop I showed you <image>",
               "this tailor's shop <image>"),
    "optician": ("the optician in this photo <image>", "that eyewear shop I showed you <image>",
                 "this optician <image>"),
    "record_shop": ("the record shop in this photo <image>", "that vinyl shop I showed you <image>",
                    "this record store <image>"),
    "tea_room": ("the tea room in this photo <image>", "that tea room I showed you <image>",
                 "this quiet tea room <image>"),
    "ice_cream_shop": ("the ice cream shop in this photo <image>", "that gelato place I showed you <image>",
                       "this ice cream parlour <image>"),
    "hardware_store": ("the hardware store in this photo <image>", "that hardware shop I showed you <image>",
                       "this hardware store <image>"),
    "bike_shop": ("the bike shop in this photo <image>", "that bicycle shop I showed you <image>",
                  "this bike shop <image>"),
    "library": ("the library in this photo <image>", "that library I showed you <image>", "this library <image>"),
    "cinema": ("the cinema in this photo <image>", "that movie theatre I showed you <image>",
               "this cinema <image>"),
    "grocery": ("the grocery store in this photo <image>", "that supermarket I showed you <image>",
                "this grocery shop <image>"),
    "shop": ("the shop in this photo <image>", "that shop I showed you <image>", "this little shop <image>",
             "the store from my picture <image>"),
    # ---------------------------------------------------------------- organizations
    "company": ("the company in this picture <image>", "that firm I told you about <image>",
                "this company <image>"),
    "foundation": ("the foundation shown here <image>", "that charity I mentioned <image>",
                   "this foundation <image>"),
    "institute": ("the institute shown here <image>", "that research institute I mentioned <image>",
                  "this institute <image>"),
    "airline": ("the airline on this pass <image>", "that carrier I flew with <image>", "this airline <image>"),
    "streaming_service": ("the streaming service shown here <image>", "that subscription I mentioned <image>",
                          "this streaming platform <image>"),
    "bank": ("the bank shown here <image>", "that bank I mentioned <image>", "this bank <image>"),
    "university": ("the university shown here <image>", "that college I mentioned <image>",
                   "this campus <image>"),
    # ---------------------------------------------------------------- objects
    "book": ("the book in this photo <image>", "that book I showed you <image>", "this novel <image>",
             "the book from my picture <image>"),
    "painting": ("the painting in this photo <image>", "that artwork I showed you <image>",
                 "this painting <image>"),
    "vehicle": ("the vehicle in this photo <image>", "that vehicle I showed you <image>", "this vehicle <image>"),
    "car": ("the car in this photo <image>", "that car I showed you <image>", "this parked car <image>",
            "the car from my picture <image>"),
    "instrument": ("the instrument in this photo <image>", "that instrument I showed you <image>",
                   "this instrument <image>"),
    "cereal_box": ("the cereal box in this photo <image>", "that breakfast box I showed you <image>",
                   "this cereal pack <image>"),
    "tea_brand": ("the tea box in this photo <image>", "that tea I showed you <image>", "this box of tea <image>"),
    "coffee_brand": ("the coffee bag in this photo <image>", "that coffee I showed you <image>",
                     "this pack of beans <image>"),
    "packaged_food": ("the pack in this photo <image>", "that box I showed you <image>",
                      "this pantry staple <image>"),
    # ---------------------------------------------------------------- events
    "concert": ("the concert on this ticket <image>", "that gig I went to <image>", "this concert <image>"),
    "flight": ("the flight on this pass <image>", "that flight I took <image>", "this trip by plane <image>"),
    "exhibition": ("the exhibition on this ticket <image>", "that show I saw <image>", "this exhibition <image>"),
    "festival": ("the festival on this ticket <image>", "that festival I went to <image>",
                 "this festival <image>"),
    "play": ("the play on this ticket <image>", "that performance I saw <image>", "this stage show <image>"),
    "match": ("the match on this ticket <image>", "that game I went to <image>", "this fixture <image>"),
    # ---------------------------------------------------------------- generic fallbacks
    "place": ("the place in this photo <image>", "that spot I showed you <image>", "this place <image>",
              "the place from my picture <image>"),
    "thing": ("the thing in this photo <image>", "that thing I showed you <image>", "this find <image>",
              "the thing from my picture <image>"),
    "item": ("the item in this photo <image>", "that item I showed you <image>", "this item <image>"),
    "organization": ("the organization shown here <image>", "that organization I mentioned <image>",
                     "this organization <image>"),
}
CATEGORIES: tuple[str, ...] = tuple(ANAPHORS)
GENERIC: tuple[str, ...] = ("place", "thing", "item", "organization")
#: coarse group of each category (reports)
GROUPS: dict[str, str] = {
    **{c: "place" for c in CATEGORIES[: CATEGORIES.index("shop") + 1]},
    **{c: "organization" for c in ("company", "foundation", "institute", "airline", "streaming_service", "bank",
                                   "university")},
    **{c: "object" for c in ("book", "painting", "vehicle", "car", "instrument", "cereal_box", "tea_brand",
                             "coffee_brand", "packaged_food")},
    **{c: "event" for c in ("concert", "flight", "exhibition", "festival", "play", "match")},
    **{c: "generic" for c in GENERIC},
}

# keyword rules: (regex over the lower-cased name (+ hint), category); first match wins
_NAME_RULES: tuple[tuple[str, str], ...] = (
    (r"\bbak(ery|eries|ehouse)\b|\bpatisserie\b|\bboulangerie\b", "bakery"),
    (r"\btea room\b|\btearoom\b|\bteahouse\b", "tea_room"),
    (r"\bcaf[eé]s?\b|\bcoffee (house|shop|bar)\b|\bespresso bar\b|\broaster(s|y)\b", "cafe"),
    (r"\bbook(s|shop|store|sellers?)\b", "bookshop"),
    (r"\bmuseum\b|\bgallery\b|\bkunsthalle\b", "museum"),
    (r"\bpark\b|\bgardens?\b|\bcommons?\b", "park"),
    (r"\bbistro\b|\bbrasserie\b", "bistro"),
    (r"\brestaurant\b|\bkitchen\b|\bdiner\b|\btrattoria\b|\bosteria\b|\beatery\b|\bgrill\b|\btaverna\b", "restaurant"),
    (r"\bbridge\b|\bviaduct\b", "bridge"),
    (r"\btemple\b|\bshrine\b|\bpagoda\b|\bcathedral\b|\bchurch\b|\bmosque\b", "temple"),
    (r"\bpharmac(y|ies)\b|\bchemists?\b|\bapotek\b|\bdrugstore\b", "pharmacy"),
    (r"\bflorists?\b|\bflowers?\b|\bblooms?\b", "florist"),
    (r"\bbarbers?\b|\bbarbershop\b|\bhair\b|\bsalon\b", "barber"),
    (r"\bgym\b|\bfitness\b|\bclimbing\b|\byoga\b", "gym"),
    (r"\bhotel\b|\binn\b|\bhostel\b|\bmotel\b|\blodge\b", "hotel"),
    (r"\bairport\b|\bterminal\b", "airport"),
    (r"\bstation\b|\brailway\b", "train_station"),
    (r"\bmarket\b|\bbazaar\b|\bsouk\b", "market"),
    (r"\bdeli(catessen)?\b", "deli"),
    (r"\btailors?\b|\bcobblers?\b|\balterations\b", "tailor"),
    (r"\bopticians?\b|\beyewear\b|\bspectacles\b", "optician"),
    (r"\brecords?\b|\bvinyl\b", "record_shop"),
    (r"\bgelato\b|\bice cream\b|\bcreamery\b", "ice_cream_shop"),
    (r"\bhardware\b|\bhome improvement\b", "hardware_store"),
    (r"\bbikes?\b|\bbike shop\b|\bcycles?\b|\bcycling\b", "bike_shop"),
    (r"\blibrary\b", "library"),
    (r"\bcinema\b|\bmovies?\b|\bpicturehouse\b", "cinema"),
    (r"\bgrocer(y|s)?\b|\bsupermarket\b|\bfoods?\b|\bmart\b", "grocery"),
    (r"\bairlines?\b|\bairways\b|\bair\b|\baviation\b", "airline"),
    (r"\bfoundation\b|\bcharity\b|\btrust\b", "foundation"),
    (r"\binstitute\b|\blaborator(y|ies)\b|\bobservatory\b", "institute"),
    (r"\bstream(ing)?\b|\b\w*flix\b|\btv\+?\b|\bplus\b", "streaming_service"),
    (r"\bbank\b|\bcredit union\b|\bsavings\b", "bank"),
    (r"\buniversity\b|\bcollege\b|\bacademy\b|\bschool\b", "university"),
    (r"\b(inc|ltd|llc|corp|gmbh|co)\b\.?|\bcompany\b|\bgroup\b|\bindustries\b", "company"),
    (r"\bstreet\b|\bst\b|\bavenue\b|\bave\b|\broad\b|\brd\b|\blane\b|\bway\b|\bdrive\b|\bdr\b|\bboulevard\b", "street"),
    (r"\bcereal\b|\bgranola\b|\bflakes\b|\boats\b|\bmuesli\b", "cereal_box"),
    (r"\btea\b|\bearl grey\b|\bchamomile\b|\bmatcha\b", "tea_brand"),
    (r"\bcoffee\b|\bespresso\b|\bbeans\b", "coffee_brand"),
    (r"\bcrackers\b|\bpancake\b|\brice\b|\bpasta\b|\bsoup\b", "packaged_food"),
    (r"\bpainting\b|\bportrait\b|\bcanvas\b", "painting"),
    (r"\bguitar\b|\bpiano\b|\bviolin\b|\bcello\b|\bdrums?\b|\bukulele\b|\bflute\b", "instrument"),
    (r"\bconcert\b|\bquartet\b|\bchoir\b|\bband\b|\bgig\b|\borchestra\b", "concert"),
    (r"\bexhibition\b|\bexpo\b", "exhibition"),
    (r"\bfestival\b|\bfair\b|\bweekend\b", "festival"),
    (r"\btheat(re|er)\b|\bplay\b|\bmusical\b|\bopera\b|\bballet\b", "play"),
    (r"\bvs\.?\b|\bmatch\b|\bsports?\b|\bgame\b|\bderby\b", "match"),
    (r"\bflight\b|\bboarding\b", "flight"),
)
#: kind hints (families, named_sign kinds, ticket/app kinds, store types) -> category or None (use name)
_HINTS: dict[str, str | None] = {
    "shop_sign": None, "named_sign": None, "receipt": None, "receipt_store": None, "price_tag": "item",
    "book_cover": "book", "book": "book", "product_box": None, "license_plate": "car", "car": "car",
    "vehicle": "vehicle", "street_sign": "street", "street": "street", "boarding_pass": "flight",
    "flight": "flight", "airline": "airline", "event_ticket": None, "ticket": None,
    "concert": "concert", "theatre": "play", "sports": "match", "exhibition": "exhibition",
    "festival": "festival", "bookstore": "bookshop", "bakery": "bakery", "cafe": "cafe", "grocery": "grocery",
    "pharmacy": "pharmacy", "hardware": "hardware_store", "restaurant": "restaurant",
    "streaming": "streaming_service", "streaming_bill": "streaming_service", "painting": "painting",
    "instrument": "instrument", "company": "company", "organization": "organization", "foundation": "foundation",
    "institute": "institute", "bank": "bank", "object_scene": None,
}
#: fallback by hint when no keyword of the name matches
_HINT_FALLBACK = {"shop_sign": "shop", "named_sign": "place", "receipt": "shop", "receipt_store": "shop",
                  "product_box": "item", "event_ticket": "thing", "ticket": "thing", "object_scene": "thing"}
#: categories a product box may take (a box is never a bakery, whatever its brand says)
_PRODUCT_CATS = {"cereal_box", "tea_brand", "coffee_brand", "packaged_food"}


def classify(name: str, hint: str | None = None) -> str:
    """The semantic category of an entity, from keyword rules over its name and kind hint."""
    h = (hint or "").strip().lower()
    fixed = _HINTS.get(h)
    if fixed:
        return fixed
    low = " ".join(str(name or "").lower().replace("&", " and ").split())
    for pat, cat in _NAME_RULES:
        if h == "product_box" and cat not in _PRODUCT_CATS:
            continue
        if h in ("shop_sign", "receipt", "receipt_store") and GROUPS.get(cat) != "place":
            continue
        if re.search(pat, low):
            return cat
    if h and h not in _HINTS:  # a free-form hint ("bakery", "a concert"): classify the hint itself
        sub = classify(h)
        if sub not in GENERIC:
            return sub
    return _HINT_FALLBACK.get(h, "thing")


def anaphor(rng: random.Random, category: str) -> str:
    """One paraphrase template of ``category`` (generic ``thing`` for an unknown category)."""
    opts = ANAPHORS.get(category) or ANAPHORS["thing"]
    return opts[rng.randrange(len(opts))]


def _pattern(entity: str) -> re.Pattern:
    return re.compile(r"(?<![\w])" + re.escape(entity.strip()) + r"(?![\w])", re.IGNORECASE)


def abstract(rng: random.Random, text: str, entity: str, category: str | None = None) -> str:
    """``text`` with every token-bounded, case-insensitive occurrence of ``entity`` replaced by a
    sampled anaphor of its category (``classify(entity)`` when not given). A leading article
    ("the Golden Gate Bridge") is absorbed by the anaphor's own determiner."""
    if not entity or not entity.strip():
        return text
    cat = category or classify(entity)
    pat = re.compile(r"(?<![\w])(?:(?:the|a|an)\s+)?" + re.escape(entity.strip()) + r"(?![\w])", re.IGNORECASE)
    phrase = anaphor(rng, cat)

    def rep(m: re.Match) -> str:
        s = phrase
        if m.start() == 0 or re.search(r"[.!?]\s*$", text[: m.start()]):
            s = s[:1].upper() + s[1:]
        return s

    return pat.sub(rep, text)


# ---------------------------------------------------------------------------- anaphor mentions
#: user-turn frames embedding an anaphor ({a}, ends in <image>) and an occasion ({ctx})
MENTION_FRAMES: tuple[str, ...] = (
    "Here's {a} from {ctx}",
    "I came across {a} during {ctx}",
    "I kept going back to {a} during {ctx}",
    "Sharing {a} from {ctx}",
    "I took a picture of {a} during {ctx}",
    "I still think about {a} from {ctx}",
)
#: frames that also state when ({when}, a ``contexts.WHEN``-style phrase)
MENTION_FRAMES_WHEN: tuple[str, ...] = (
    "Here's {a} from {when}, during {ctx}",
    "Sharing {a} from {when}, from {ctx}",
    "I took a picture of {a} from {when}, during {ctx}",
)
#: share of named-entity image mentions phrased with an anaphor (evidence and haystack alike)
ANAPHOR_SHARE = 0.5


def mention(rng: random.Random, anaphor_phrase: str, ctx: str, when: str | None = None, tail: str | None = None,
            force_when: bool = False) -> str:
    """A user-turn sentence carrying an anaphor (its ``<image>`` right after the noun phrase) tied
    to an occasion context; ``force_when`` picks a frame that states ``when``."""
    frames = list(MENTION_FRAMES_WHEN) if (when and force_when) else list(MENTION_FRAMES) + (
        list(MENTION_FRAMES_WHEN) if when else [])
    from memlens.build.text.textbank import finish_sentence

    return finish_sentence(rng.choice(frames).format(a=anaphor_phrase, ctx=ctx, when=when or ""), tail)


# ---------------------------------------------------------------------------- KU descriptors
#: sensory / visual descriptors (at most five words with the <image>-less phrase) per KU category;
#: each fits several items of the category and never names the category
DESCRIPTORS: dict[str, tuple[str, ...]] = {
    "fruit": ("this tangy round thing", "these tiny sweet spheres", "this juicy treat", "this sweet bite"),
    "drink": ("this warm mug of something", "this chilled glass", "this fizzy pour", "this fragrant cup"),
    "food": ("this steaming bowl", "this crispy plate", "this savoury dish", "this comforting plate"),
    "plant": ("this leafy little thing", "this little potted friend", "this trailing leafy one"),
    "animal": ("this furry little one", "this feathered friend", "this sleepy companion"),
    "object": ("this handy little thing", "this new favourite thing", "this thing on my desk"),
}


def descriptor(rng: random.Random, category: str) -> str:
    """A KU descriptor (at most five words, ``<image>`` excluded) for an item of ``category``."""
    opts = DESCRIPTORS.get(category) or DESCRIPTORS["object"]
    return f"{opts[rng.randrange(len(opts))]} {IMAGE}"


# ---------------------------------------------------------------------------- background
_OPENERS = (
    "This is a bit of background on {topic}.",
    "Some context about {topic} first.",
    "Here is how {topic} came up lately.",
    "A little background on {topic}, since it keeps coming up.",
)
_SUB = (
    "Most of it has to do with {sub}.",
    "Lately the focus has been on {sub}.",
    "The part that matters here is {sub}.",
)
_TRACK = {
    "identification": ("Telling similar things apart is the tricky part.", "The details in the pictures matter most."),
    "experience": ("It all ties back to things I did and places I went.", "Most of it happened in person."),
    "document": ("Most of the details sit in papers and screens I kept.", "The paperwork holds most of the details."),
}
_CLOSERS = ("That is the gist of it.", "Everything else follows from that.", "That covers the main points.")


def _no_digits(s: str) -> str:
    return " ".join(re.sub(r"\d+", " ", s).split())


def background(rng: random.Random, topic_title: str, subtopic: str | None, track: str | None,
               facts: list[str]) -> str:
    """A 3-5 sentence background paragraph on the topic holding the given (already abstracted) fact
    sentences verbatim, in order. Framing sentences hold no digits. With more than four facts the
    paragraph is one framing sentence plus the facts."""
    topic = _no_digits(topic_title or "") or "this topic"
    sub = _no_digits(subtopic or "")
    facts = [f.strip() for f in facts if f and f.strip()]
    facts = [f if f[-1] in ".!?" else f + "." for f in facts]
    total = max(len(facts) + 1, rng.randint(3, 5))
    n_frame = total - len(facts)
    middle = []
    if sub and sub.lower() != topic.lower():
        middle.append(rng.choice(_SUB).format(sub=sub))
    middle.append(rng.choice(_TRACK.get(track or "", _CLOSERS)))
    closers = [rng.choice(_CLOSERS)]
    pool = middle + closers
    chosen = pool[: n_frame - 1]
    lead = [rng.choice(_OPENERS).format(topic=topic)] + [c for c in chosen if c not in closers]
    tail = [c for c in chosen if c in closers]
    return " ".join(lead + facts + tail)


# ---------------------------------------------------------------------------- reports
def inventory() -> dict:
    """Figures for reports: categories, templates, per-category and per-group counts."""
    per = {c: len(v) for c, v in ANAPHORS.items()}
    groups: dict[str, int] = {}
    for c in CATEGORIES:
        groups[GROUPS[c]] = groups.get(GROUPS[c], 0) + 1
    return {"categories": len(CATEGORIES), "templates": sum(per.values()), "per_category": per,
            "groups": groups, "mention_frames": len(MENTION_FRAMES) + len(MENTION_FRAMES_WHEN),
            "ku_descriptors": sum(len(v) for v in DESCRIPTORS.values()), "anaphor_share": ANAPHOR_SHARE}
