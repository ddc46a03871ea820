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

The templates, keyword rules and hints are package data (``data/abstraction.yaml``, see
:mod:`memlens.core.bank`); this module holds the logic.
"""

from __future__ import annotations

import random
import re

from memlens.core.bank import load_bank

IMAGE = "<image>"

_BANK = load_bank("memlens.construction.text", "abstraction")


def _build_anaphors() -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    anaphors: dict[str, tuple[str, ...]] = {}
    groups: dict[str, str] = {}
    for group in _BANK.mapping("anaphors"):
        for cat in _BANK.mapping("anaphors", group):
            if cat in anaphors:
                raise _BANK.error(("anaphors", group, cat), f"category already listed under {groups[cat]!r}")
            templates = _BANK.templates("anaphors", group, cat)
            for i, t in enumerate(templates):
                if not t.endswith(" " + IMAGE) or t.count(IMAGE) != 1:
                    raise _BANK.error(("anaphors", group, cat, i), f"must end in ' {IMAGE}' (once): {t!r}")
            anaphors[cat], groups[cat] = templates, group
    _BANK.mapping("anaphors", "generic")
    if "thing" not in anaphors:
        raise _BANK.error(("anaphors", "generic"), "the fallback category 'thing' is missing")
    return anaphors, groups


#: category -> paraphrase templates (each ends in the noun phrase + " <image>"); GROUPS: category ->
#: its coarse group (reports), the group it is listed under in the file
ANAPHORS, GROUPS = _build_anaphors()
CATEGORIES: tuple[str, ...] = tuple(ANAPHORS)
GENERIC: tuple[str, ...] = tuple(_BANK.mapping("anaphors", "generic"))


def _category(path: tuple, value) -> str:
    if value not in ANAPHORS:
        raise _BANK.error(path, f"unknown category {value!r}")
    return value


def _build_rules() -> tuple[tuple[str, str], ...]:
    rules = _BANK.rows("name_rules", types=(str, str))
    for i, (pat, cat) in enumerate(rules):
        try:
            re.compile(pat)
        except re.error as exc:
            raise _BANK.error(("name_rules", i, 0), f"invalid regex {pat!r}: {exc}") from None
        _category(("name_rules", i, 1), cat)
    return rules


# keyword rules: (regex over the lower-cased name (+ hint), category); first match wins
_NAME_RULES: tuple[tuple[str, str], ...] = _build_rules()
#: kind hints (families, named_sign kinds, ticket/app kinds, store types) -> category or None (use name)
_HINTS: dict[str, str | None] = {
    k: v if v is None else _category(("hints", k), v) for k, v in _BANK.mapping("hints").items()
}
#: fallback by hint when no keyword of the name matches
_HINT_FALLBACK = {k: _category(("hint_fallback", k), v) for k, v in _BANK.mapping("hint_fallback").items()}
#: categories a product box may take (a box is never a bakery, whatever its brand says)
_PRODUCT_CATS = {_category(("product_categories", i), c) for i, c in enumerate(_BANK.phrases("product_categories"))}


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
MENTION_FRAMES: tuple[str, ...] = _BANK.templates("mention_frames", slots=("a", "ctx"))
#: frames that also state when ({when}, a ``contexts.WHEN``-style phrase)
MENTION_FRAMES_WHEN: tuple[str, ...] = _BANK.templates("mention_frames_when", slots=("a", "ctx", "when"))
#: share of named-entity image mentions phrased with an anaphor (evidence and haystack alike)
ANAPHOR_SHARE = 0.5


def mention(
    rng: random.Random,
    anaphor_phrase: str,
    ctx: str,
    when: str | None = None,
    tail: str | None = None,
    force_when: bool = False,
) -> str:
    """A user-turn sentence carrying an anaphor (its ``<image>`` right after the noun phrase) tied
    to an occasion context; ``force_when`` picks a frame that states ``when``."""
    frames = (
        list(MENTION_FRAMES_WHEN)
        if (when and force_when)
        else list(MENTION_FRAMES) + (list(MENTION_FRAMES_WHEN) if when else [])
    )
    from memlens.construction.text.textbank import finish_sentence

    return finish_sentence(rng.choice(frames).format(a=anaphor_phrase, ctx=ctx, when=when or ""), tail)


# ---------------------------------------------------------------------------- KU descriptors
#: sensory / visual descriptors (at most five words with the <image>-less phrase) per KU category;
#: each fits several items of the category and never names the category
DESCRIPTORS: dict[str, tuple[str, ...]] = {k: _BANK.phrases("descriptors", k) for k in _BANK.mapping("descriptors")}
if "object" not in DESCRIPTORS:
    raise _BANK.error(("descriptors",), "the fallback category 'object' is missing")


def descriptor(rng: random.Random, category: str) -> str:
    """A KU descriptor (at most five words, ``<image>`` excluded) for an item of ``category``."""
    opts = DESCRIPTORS.get(category) or DESCRIPTORS["object"]
    return f"{opts[rng.randrange(len(opts))]} {IMAGE}"


# ---------------------------------------------------------------------------- background
_OPENERS = _BANK.templates("background", "openers", slots=("topic",))
_SUB = _BANK.templates("background", "sub", slots=("sub",))
_TRACK = {k: _BANK.templates("background", "track", k) for k in _BANK.mapping("background", "track")}
_CLOSERS = _BANK.templates("background", "closers")


def _no_digits(s: str) -> str:
    return " ".join(re.sub(r"\d+", " ", s).split())


def background(rng: random.Random, topic_title: str, subtopic: str | None, track: str | None, facts: list[str]) -> str:
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
    return {
        "categories": len(CATEGORIES),
        "templates": sum(per.values()),
        "per_category": per,
        "groups": groups,
        "mention_frames": len(MENTION_FRAMES) + len(MENTION_FRAMES_WHEN),
        "ku_descriptors": sum(len(v) for v in DESCRIPTORS.values()),
        "anaphor_share": ANAPHOR_SHARE,
    }
