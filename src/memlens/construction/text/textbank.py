"""Deterministic template text for MemLens sessions (the offline stand-in for the user/assistant LLMs).

Every random choice comes from the ``random.Random`` passed in, so the same seed always gives the same
text. Nothing here keeps state between calls.

Public API
----------
``assistant_reply``  the paper's three-part assistant turn: acknowledgement (1-2 sentences), substance on
                     1-2 key points about the subtopic, one knowledge-oriented follow-up question. The
                     whole reply lands inside ``words`` (whitespace tokens). It never contains a digit or
                     ``<image>``, and no number words, month or weekday names either.
``user_turn``        a user message about the subtopic. A ``mention`` (the sentence that carries a fact
                     and/or an ``<image>`` token) is embedded verbatim and, most of the time, indirectly:
                     the turn opens with a related question or remark and the mention comes later.
``session_opening``  the first user turn of a session (same generator as ``user_turn``, with a greeting).
``filler_session``   a text-only general-assistant conversation (coding, writing, history, science,
                     cooking, study plans, travel, careers, ...), user first, turns alternating.
``mention_templates`` / ``render_mention``  phrasings that introduce an image (``{thing} <image>``),
                     to be used for evidence and haystack turns alike so that both look the same.

The sentences are package data, one YAML file per bank in ``data/`` beside this module (``BANKS``:
words, assistant, user, mentions, filler; see :mod:`memlens.core.bank`); this module indexes,
compiles and fills them. Loading checks every template's placeholders against the slots the code
fills (``SLOTS``, ``USER_SLOTS``, ...).

Template mini-language: ``[a|b|c]`` picks one alternative (alternatives may be empty); ``{s}`` is the
subtopic with an article where it needs one ("the dairy section", "ice skating"), ``{S}`` the same
capitalized, ``{t}`` the topic title in lower case, ``{a}`` an aspect phrase, ``{ack}`` the
acknowledgement hint, ``{x}`` a filler subject.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache

from memlens.core.bank import load_bank
from memlens.core.constants import TRACKS

__all__ = [
    "TRACKS",
    "FAMILY_KIND",
    "MENTION_KINDS",
    "assistant_reply",
    "user_turn",
    "session_opening",
    "filler_session",
    "mention_templates",
    "render_mention",
    "count_words",
    "template_inventory",
    "image_reaction",
    "IMAGE_KINDS",
    "split_sentences",
    "sentence_key",
    "vary",
]

# Which mention kind reads naturally for each image family.
FAMILY_KIND = {
    "object_scene": "photo",
    "price_tag": "photo",
    "named_sign": "photo",
    "clock": "photo",
    "receipt": "document",
    "ticket": "document",
    "calendar_page": "document",
    "chat_screenshot": "screenshot",
    "app_screenshot": "screenshot",
}


def count_words(text: str) -> int:
    """Whitespace-token count (the unit of every ``words`` range in this module)."""
    return len(text.split())


# --------------------------------------------------------------------------------------------------
# Template mini-language
# --------------------------------------------------------------------------------------------------
_ALT = re.compile(r"\[([^\[\]]*)\]")


def _compile(template: str):
    parts: list = []
    pos = 0
    for m in _ALT.finditer(template):
        parts.append(template[pos : m.start()])
        parts.append(tuple(m.group(1).split("|")))
        pos = m.end()
    if not parts:
        return template
    parts.append(template[pos:])
    return tuple(p for p in parts if p != "")


def _C(templates) -> tuple:
    return tuple(_compile(t) for t in templates)


def _render(rng: random.Random, tpl, slots: dict) -> str:
    if isinstance(tpl, str):
        s = tpl
    else:
        s = "".join(p if isinstance(p, str) else rng.choice(p) for p in tpl)
    if "{" in s:
        s = s.format_map(slots)
    return s


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


def _lower_first(s: str) -> str:
    """Lower-case the first letter unless the first word is an acronym or the pronoun I."""
    if not s:
        return s
    first = s.split(" ", 1)[0]
    if first == "I" or first.startswith("I'") or (len(first) > 1 and first.isupper()):
        return s
    return s[:1].lower() + s[1:]


_DIGIT_TOKEN = re.compile(r"\S*\d\S*")


def _clean(s: str | None) -> str:
    """Slot values must not bring digits or image tokens into generated text."""
    if not s:
        return ""
    s = s.replace("<image>", " ")
    s = _DIGIT_TOKEN.sub(" ", s)
    return " ".join(s.split())


# --------------------------------------------------------------------------------------------------
# Text banks (data/*.yaml): the sentences live there, the code below only indexes and compiles them
# --------------------------------------------------------------------------------------------------
_PKG = "memlens.construction.text"
#: placeholders of topic-session templates (what ``_slots`` fills); user turns add {a}
SLOTS = ("s", "S", "t", "T", "sub", "ack", "Ack")
USER_SLOTS = SLOTS + ("a",)
FOLLOWUP_SLOTS = ("a",)
MENTION_SLOTS = ("thing", "when")
FILLER_SLOTS = ("x",)
#: the text banks of this module (``data/<name>.yaml``)
BANKS = ("words", "assistant", "user", "mentions", "filler", "variation")

_WORDS = load_bank(_PKG, "words")
_ING_NOUNS = frozenset(_WORDS.phrases("ing_nouns"))
_MASS_LAST = frozenset(_WORDS.phrases("mass_last"))
_DETERMINERS = frozenset(_WORDS.phrases("determiners"))


def _the(sub: str) -> str:
    """Noun phrase for a subtopic: "the dairy section", but "ice skating", "French toast"."""
    words = sub.split()
    if not words:
        return sub
    first, last = words[0].lower(), words[-1].lower()
    if first in _DETERMINERS:
        return sub
    if first.endswith("ing") and first not in _ING_NOUNS:
        return sub
    if last.endswith("ing") and last not in _ING_NOUNS:
        return sub
    if last in _MASS_LAST:
        return sub
    return "the " + sub


def _topic_lc(title: str) -> str:
    return _lower_first(title)


# --------------------------------------------------------------------------------------------------
# Ontology lookup (topic title -> sub-attribute), used to pick domain sentences
# --------------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _topic_index() -> dict[str, str]:
    from memlens.construction.ontology.stage import load_ontology_file

    doc = load_ontology_file()
    index: dict[str, str] = {}
    for track in doc.get("tracks", {}).values():
        for key, sa in track.get("sub_attributes", {}).items():
            for topic in sa.get("topics", []):
                index[topic["title"].lower()] = key
    return index


# --------------------------------------------------------------------------------------------------
# Assistant (data/assistant.yaml): acknowledgements, follow-up questions, substance by track and angle
# --------------------------------------------------------------------------------------------------
_ASSISTANT = load_bank(_PKG, "assistant")
_ACK_HINT = _C(_ASSISTANT.templates("ack_hint", slots=SLOTS))
_ACK_PLAIN = _C(_ASSISTANT.templates("ack_plain", slots=SLOTS))
_ACK_SECOND = _C(_ASSISTANT.templates("ack_second", slots=SLOTS))
# follow-up questions (knowledge-oriented only); {a} is an angle aspect
_FOLLOWUP_FRAMES = _C(_ASSISTANT.templates("followup_frames", slots=FOLLOWUP_SLOTS))
# reactions to the kind of image shared: frames over per-kind nouns and remarks
REACTION_SLOTS = ("noun", "remark")
_REACTION_FRAMES = _C(_ASSISTANT.templates("reaction_frames", slots=REACTION_SLOTS))
_REACTIONS = {
    k: (_ASSISTANT.phrases("reactions", k, "nouns"), _C(_ASSISTANT.templates("reactions", k, "remarks")))
    for k in _ASSISTANT.mapping("reactions")
}
if "image" not in _REACTIONS:
    raise _ASSISTANT.error(("reactions",), "needs an 'image' entry (the reaction to an image of any kind)")
IMAGE_KINDS = tuple(_REACTIONS)
# track-agnostic sentences used to reach the word range
_GENERIC_SUPPORT = _C(_ASSISTANT.templates("generic_support", slots=SLOTS))
_CONNECTORS = _ASSISTANT.phrases("connectors")
_POINT_OPENERS = _ASSISTANT.phrases("point_openers")


def _build_angles():
    """track -> ((angle, leads, supports, aspects), ...) in file order."""
    out = {}
    for track in _ASSISTANT.mapping("angles", keys=TRACKS):
        out[track] = tuple(
            (
                name,
                *(
                    _C(_ASSISTANT.templates("angles", track, name, part, slots=SLOTS))
                    for part in ("leads", "supports", "aspects")
                ),
            )
            for name in _ASSISTANT.mapping("angles", track)
        )
    return out


_ANGLES = _build_angles()


def _build_angle_map() -> dict[str, tuple[str, ...]]:
    known = {a[0] for angles in _ANGLES.values() for a in angles}
    out = {}
    for sub_attr in _ASSISTANT.mapping("angle_map"):
        names = _ASSISTANT.phrases("angle_map", sub_attr)
        for i, n in enumerate(names):
            if n not in known:
                raise _ASSISTANT.error(
                    ("angle_map", sub_attr, i), f"unknown angle {n!r} (angles: {', '.join(sorted(known))})"
                )
        out[sub_attr] = names
    return out


# Which angles read naturally for each sub-attribute (unlisted sub-attributes use every angle of the track).
_ANGLE_MAP: dict[str, tuple[str, ...]] = _build_angle_map()


def _angles_for(track: str, sub_attr: str | None) -> tuple:
    names = _ANGLE_MAP.get(sub_attr or "")
    angles = _ANGLES[track]
    if names:
        picked = tuple(a for a in angles if a[0] in names)
        if len(picked) >= 2:
            return picked
    return angles


# domain sentences per ontology sub-attribute (used alongside the track angles)
_DOMAIN = {k: _C(_ASSISTANT.templates("domain", k, slots=SLOTS)) for k in _ASSISTANT.mapping("domain")}

# --------------------------------------------------------------------------------------------------
# User turns (data/user.yaml); "generic" entries are added to every track
# --------------------------------------------------------------------------------------------------
_USER = load_bank(_PKG, "user")


def _per_track(key: str, generic: tuple) -> dict[str, tuple]:
    tracks = [k for k in _USER.mapping(key) if k != "generic"]
    _USER.mapping(key, keys=(["generic"] if "generic" in _USER.mapping(key) else []) + list(TRACKS))
    return {k: _C(_USER.templates(key, k, slots=USER_SLOTS) + generic) for k in tracks}


_USER_LEADS = _per_track("leads", _USER.templates("leads_generic", slots=USER_SLOTS))
# question-shaped leads, used right after a mention that opens the turn
_USER_QLEADS = _C(_USER.templates("question_leads", slots=USER_SLOTS))
_USER_CONTEXT = _per_track("context", _USER.templates("context", "generic", slots=USER_SLOTS))
_USER_CLOSE = _C(_USER.templates("closers", slots=USER_SLOTS))
_USER_ASPECTS: dict[str, list[str]] = {
    k: list(_USER.phrases("aspects", k)) for k in _USER.mapping("aspects", keys=TRACKS)
}
_USER_SUBQ = _per_track("subquestions", _USER.templates("subquestions", "generic", slots=USER_SLOTS))
_MENTION_CONNECTORS = _USER.phrases("mention_connectors")
_GREETINGS = _USER.phrases("greetings")
_OPENING_LEADS = _C(_USER.templates("opening_leads", slots=USER_SLOTS))

# --------------------------------------------------------------------------------------------------
# Image mentions (data/mentions.yaml), shared by evidence and haystack turns
# --------------------------------------------------------------------------------------------------
_MENTION_BANK = load_bank(_PKG, "mentions")


def _build_mentions() -> dict[str, tuple[str, ...]]:
    out = {}
    for kind in _MENTION_BANK.mapping():
        templates = _MENTION_BANK.templates(kind, slots=MENTION_SLOTS)
        for i, t in enumerate(templates):
            if "{thing} <image>" not in t:
                raise _MENTION_BANK.error((kind, i), f"a mention must hold '{{thing}} <image>': {t!r}")
        out[kind] = templates
    return out


_MENTIONS: dict[str, tuple[str, ...]] = _build_mentions()
MENTION_KINDS = tuple(_MENTIONS)

# --------------------------------------------------------------------------------------------------
# Filler (text-only, general assistant) conversations (data/filler.yaml)
# --------------------------------------------------------------------------------------------------
_FILLER_BANK = load_bank(_PKG, "filler")
_FILLER_OPENERS = _C(_FILLER_BANK.templates("openers", slots=FILLER_SLOTS))
_FILLER_FOLLOW_OPENERS = _C(_FILLER_BANK.templates("follow_openers", slots=FILLER_SLOTS))
_FILLER_CLOSERS = _C(_FILLER_BANK.templates("closers", slots=FILLER_SLOTS))
_FILLER_GENERIC = _C(_FILLER_BANK.templates("generic", slots=FILLER_SLOTS))
_FILLER_USER_FOLLOW = _C(_FILLER_BANK.templates("user_follow", slots=FILLER_SLOTS))
_FILLER_USER_FOLLOW_EXPLAIN = _C(_FILLER_BANK.templates("user_follow_explain", slots=FILLER_SLOTS))
_FILLER_SWITCH = _C(_FILLER_BANK.templates("switch", slots=FILLER_SLOTS))


def _build_filler() -> dict[str, dict]:
    domains = _FILLER_BANK.mapping("domains")
    explain = _FILLER_BANK.phrases("explain_domains")
    for i, name in enumerate(explain):
        if name not in domains:
            raise _FILLER_BANK.error(("explain_domains", i), f"unknown domain {name!r}")
    return {
        name: {
            "subjects": _FILLER_BANK.phrases("domains", name, "subjects"),
            "open": _C(_FILLER_BANK.templates("domains", name, "open", slots=FILLER_SLOTS)),
            "body": _C(_FILLER_BANK.templates("domains", name, "body", slots=FILLER_SLOTS)),
            "explain": name in explain,
        }
        for name in _FILLER_BANK.mapping("domains")
        if _FILLER_BANK.mapping("domains", name, keys=("subjects", "open", "body"))
    }


_FILLER = _build_filler()
_FILLER_DOMAINS = tuple(_FILLER)


# --------------------------------------------------------------------------------------------------
# Helpers shared by the generators
# --------------------------------------------------------------------------------------------------
def _check_track(track: str) -> None:
    if track not in TRACKS:
        raise ValueError(f"unknown track {track!r}; expected one of {TRACKS}")


def _check_words(words) -> tuple[int, int]:
    lo, hi = int(words[0]), int(words[1])
    if lo < 1 or hi < lo:
        raise ValueError(f"invalid word range {words!r}")
    return lo, hi


def _slots(topic_title: str, subtopic: str) -> dict:
    sub = _clean(subtopic) or _clean(topic_title) or "this"
    topic = _clean(topic_title) or sub
    s = _the(sub)
    return {"s": s, "S": _cap(s), "t": _topic_lc(topic), "T": topic, "sub": sub, "ack": "", "Ack": ""}


def _shuffled(rng: random.Random, seq) -> list:
    out = list(seq)
    rng.shuffle(out)
    return out


class _Deck:
    """Draw without replacement from a shuffled copy; reshuffle when exhausted."""

    __slots__ = ("rng", "items", "cards")

    def __init__(self, rng: random.Random, items) -> None:
        self.rng, self.items, self.cards = rng, tuple(items), []

    def draw(self):
        if not self.cards:
            self.cards = _shuffled(self.rng, self.items)
        return self.cards.pop()


def _with_connector(rng: random.Random, sentence: str, connectors, keep_case: bool) -> str:
    if keep_case or sentence.startswith(("I ", "I'")):
        return sentence
    return rng.choice(connectors) + _lower_first(sentence)


def _truncate(text: str, n: int, end: str) -> str:
    toks = text.split()[: max(1, n)]
    out = " ".join(toks).rstrip(",;:.!?")
    return out + end


# --------------------------------------------------------------------------------------------------
# Assistant reply
# --------------------------------------------------------------------------------------------------
def assistant_reply(
    rng: random.Random,
    *,
    topic_title: str,
    subtopic: str,
    track: str,
    words: tuple[int, int] = (150, 250),
    acknowledge: str | None = None,
    reaction: str | None = None,
) -> str:
    """Acknowledge (1-2 sentences), substance on 1-2 key points, one knowledge-oriented question.

    ``reaction`` (an image kind, ``IMAGE_KINDS``; unknown kinds read as "image") makes the
    acknowledgement a reaction to that kind of image ("Thanks for sharing the receipt; receipts are
    the easiest way to keep track of spending."), never to what it shows.

    The whole reply has between ``words[0]`` and ``words[1]`` whitespace tokens. No digits, no
    ``<image>``: the subtopic, topic and acknowledgement hint are scrubbed of both before use.
    """
    _check_track(track)
    lo, hi = _check_words(words)
    slots = _slots(topic_title, subtopic)
    ack = _clean(acknowledge).strip(" .!?;:,") if acknowledge else ""
    slots["ack"], slots["Ack"] = ack, _cap(ack)
    keep_case = slots["sub"][:1].isupper()

    if reaction:
        ack_sents = [image_reaction(rng, reaction)]
    else:
        ack_sents = [_render(rng, rng.choice(_ACK_HINT if ack else _ACK_PLAIN), slots)]
    if rng.random() < 0.5:
        ack_sents.append(_render(rng, rng.choice(_ACK_SECOND), slots))

    sub_attr = _topic_index().get(_clean(topic_title).lower())
    angles = _angles_for(track, sub_attr)
    n_points = 1 if rng.random() < 0.35 else 2
    chosen = rng.sample(angles, n_points)
    fu_angle = rng.choice(chosen)
    aspect = _render(rng, rng.choice(fu_angle[3]), slots)
    followup = _render(rng, rng.choice(_FOLLOWUP_FRAMES), {"a": aspect})

    leads = []
    for i, angle in enumerate(chosen):
        lead = _render(rng, rng.choice(angle[1]), slots)
        if i > 0 and rng.random() < 0.35:
            lead = _with_connector(rng, lead, _POINT_OPENERS, keep_case)
        leads.append(lead)

    total = sum(count_words(s) for s in ack_sents) + count_words(followup) + sum(count_words(s) for s in leads)
    if total > hi and len(ack_sents) > 1:
        total -= count_words(ack_sents.pop())
    if total > hi and len(leads) > 1:
        total -= count_words(leads.pop())
        chosen = chosen[:1]
    if total > hi:
        return _minimal_reply(rng, lo, hi, ack_sents[0], followup)

    # Candidate sentences per paragraph: the angle's supports with domain sentences mixed in; the
    # generic pool comes last and is only used to reach the lower bound.
    domain = _shuffled(rng, _DOMAIN.get(sub_attr, ()))[: rng.randint(2, 4)]
    cands: list[list] = []
    for i, angle in enumerate(chosen):
        sup = _shuffled(rng, angle[2])
        for d in domain[i :: len(chosen)]:
            sup.insert(rng.randint(1, len(sup)), d)
        cands.append(sup)
    generic = _shuffled(rng, _GENERIC_SUPPORT)

    target = rng.randint(max(lo, total), hi)
    paras = [[lead] for lead in leads]
    state = {"total": total}

    def fill(pi: int, pool: list, goal: int) -> None:
        while pool and state["total"] < goal:
            sent = _render(rng, pool.pop(0), slots)
            if rng.random() < 0.12:
                sent = _with_connector(rng, sent, _CONNECTORS, keep_case)
            c = count_words(sent)
            if state["total"] + c > hi:
                continue
            paras[pi].append(sent)
            state["total"] += c

    if len(paras) == 2:
        first_goal = total + int((target - total) * rng.uniform(0.4, 0.6))
        fill(0, cands[0], first_goal)
        fill(1, cands[1], target)
    else:
        fill(0, cands[0], target)
    last = len(paras) - 1
    if state["total"] < lo:
        for pool in cands:
            fill(last, pool, lo)
        fill(last, generic, lo)
    if state["total"] < lo:  # tiny sentence budget left: widen the search to every support sentence
        spare = [t for a in angles for t in a[2]] + list(_GENERIC_SUPPORT)
        fill(last, _shuffled(rng, spare), lo)

    body = [" ".join(p) for p in paras]
    ack_text = " ".join(ack_sents)
    if rng.random() < 0.5:
        body[-1] = body[-1] + " " + followup
        tail: list[str] = []
    else:
        tail = [followup]
    if rng.random() < 0.25:
        parts = [ack_text + " " + body[0], *body[1:], *tail]
    else:
        parts = [ack_text, *body, *tail]
    return "\n\n".join(parts)


def image_reaction(rng: random.Random, kind: str) -> str:
    """One sentence reacting to the kind of image shared (``kind`` in ``IMAGE_KINDS``, else "image")."""
    nouns, remarks = _REACTIONS.get(kind) or _REACTIONS["image"]
    slots = {"noun": rng.choice(nouns), "remark": _render(rng, rng.choice(remarks), {})}
    return _cap(_render(rng, rng.choice(_REACTION_FRAMES), slots))


def _minimal_reply(rng: random.Random, lo: int, hi: int, ack: str, followup: str) -> str:
    """Fallback for word ranges too small for the three-part template."""
    if count_words(ack) + count_words(followup) <= hi:
        return ack + " " + followup
    if count_words(followup) <= hi:
        return followup
    return _truncate(followup, hi, "?")


# --------------------------------------------------------------------------------------------------
# User turns
# --------------------------------------------------------------------------------------------------
_LAYOUTS_MENTION = (
    (("lead", "CTX", "M", "close"), 30),
    (("lead", "M", "CTX", "close"), 22),
    (("M", "qlead", "CTX", "close"), 18),
    (("ctx1", "M", "lead", "CTX"), 15),
    (("lead", "CTX", "M"), 15),
)
_LAYOUTS_PLAIN = (
    (("lead", "CTX", "close"), 35),
    (("ctx1", "lead", "CTX", "close"), 20),
    (("qlead", "CTX", "close"), 20),
    (("lead", "CTX"), 25),
)


def _pick_layout(rng: random.Random, layouts) -> tuple[str, ...]:
    return rng.choices([lay for lay, _ in layouts], weights=[w for _, w in layouts], k=1)[0]


def _compose_user(
    rng: random.Random,
    slots: dict,
    track: str,
    lo: int,
    hi: int,
    mention: str | None,
    greeting: str | None = None,
    opening: bool = False,
) -> str:
    slots = dict(slots)
    slots["a"] = rng.choice(_USER_ASPECTS[track])
    layout = _pick_layout(rng, _LAYOUTS_MENTION if mention is not None else _LAYOUTS_PLAIN)
    lead_pool = _USER_LEADS[track] + (_OPENING_LEADS if opening else ())

    m_text = None
    if mention is not None:
        m_text = mention.strip()
        if m_text and m_text[-1] not in ".!?":
            m_text += "."
        if layout[0] != "M" and m_text.startswith(("I ", "I'")) and rng.random() < 0.35:
            m_text = rng.choice(_MENTION_CONNECTORS) + m_text

    contexts = _shuffled(rng, _USER_CONTEXT[track])
    items: dict[str, str] = {}
    for kind in layout:
        if kind == "lead":
            items[kind] = _render(rng, rng.choice(lead_pool), slots)
        elif kind == "qlead":
            items[kind] = _render(rng, rng.choice(_USER_QLEADS), slots)
        elif kind == "close":
            items[kind] = _render(rng, rng.choice(_USER_CLOSE), slots)
        elif kind == "ctx1":
            items[kind] = _render(rng, contexts.pop(), slots)
        elif kind == "M":
            items[kind] = m_text or ""
    ctx_fill: list[str] = []
    prefix = (greeting + " ") if greeting else ""

    def total() -> int:
        return count_words(prefix) + sum(count_words(v) for v in items.values()) + sum(count_words(c) for c in ctx_fill)

    # Too long: drop the optional pieces, then look for a shorter lead.
    for optional in ("close", "ctx1"):
        if total() > hi and optional in items:
            del items[optional]
    if total() > hi and prefix:
        prefix = ""
    if total() > hi:
        for kind in ("lead", "qlead"):
            if kind in items:
                pool = lead_pool if kind == "lead" else _USER_QLEADS
                options = [_render(rng, t, slots) for t in rng.sample(pool, min(6, len(pool)))]
                items[kind] = min(options, key=count_words)

    # Lengths skew short, as real user messages do; the range is still covered.
    target = int(round(rng.triangular(lo, hi, lo + 0.3 * (hi - lo))))
    subq = _shuffled(rng, _USER_SUBQ[track])[: rng.randint(0, 2)]
    while (contexts or subq) and total() < target and len(ctx_fill) < 3:
        src = subq if subq and (not contexts or rng.random() < 0.35) else contexts
        sent = _render(rng, src.pop(), slots)
        if total() + count_words(sent) <= hi:
            ctx_fill.append(sent)
    while contexts and total() < lo:
        sent = _render(rng, contexts.pop(), slots)
        if total() + count_words(sent) <= hi:
            ctx_fill.append(sent)

    parts: list[str] = []
    for kind in layout:
        if kind == "CTX":
            parts.extend(ctx_fill)
        elif items.get(kind):
            parts.append(items[kind])
    text = prefix + " ".join(parts)
    return text


def user_turn(
    rng: random.Random,
    *,
    topic_title: str,
    subtopic: str,
    track: str,
    words: tuple[int, int] = (25, 90),
    mention: str | None = None,
) -> str:
    """A user message about ``subtopic``.

    ``mention`` (a sentence carrying a fact, possibly with ``<image>``) is kept verbatim; a final
    period is added when it has no terminal punctuation. In most layouts the turn opens with a
    related question or remark and the mention comes later; sometimes it opens the turn. Without a
    mention the same layouts are filled with small personal context (no numbers).
    The range is met whenever the mention itself leaves room for it.
    """
    _check_track(track)
    lo, hi = _check_words(words)
    return _compose_user(rng, _slots(topic_title, subtopic), track, lo, hi, mention)


def session_opening(rng: random.Random, *, topic_title: str, subtopic: str, track: str) -> str:
    """First user turn of a session: an optional greeting, then a question about ``subtopic``."""
    _check_track(track)
    greeting = rng.choice(_GREETINGS) if rng.random() < 0.55 else None
    return _compose_user(rng, _slots(topic_title, subtopic), track, 20, 80, None, greeting=greeting, opening=True)


# --------------------------------------------------------------------------------------------------
# Filler sessions
# --------------------------------------------------------------------------------------------------
def filler_session(rng: random.Random, *, n_turns: int, words: tuple[int, int] = (150, 250)) -> list[tuple[str, str]]:
    """A text-only general-assistant conversation: ``(role, text)`` pairs, user first, alternating.

    Like real ShareGPT/UltraChat chats, the user follows up on the same subject and now and then
    switches to an unrelated one (always once the current subject's material runs low, so long
    sessions don't repeat themselves). Assistant turns have ``words[0]``-``words[1]`` whitespace
    tokens; no digits anywhere.
    """
    if n_turns < 0:
        raise ValueError("n_turns must be >= 0")
    lo, hi = _check_words(words)
    domains = _shuffled(rng, _FILLER_DOMAINS)
    dom: dict = {}
    slots: dict = {}
    queue: list = []
    generic = _shuffled(rng, _FILLER_GENERIC)
    follows = {False: _Deck(rng, _FILLER_USER_FOLLOW), True: _Deck(rng, _FILLER_USER_FOLLOW_EXPLAIN)}
    closers = _Deck(rng, _FILLER_CLOSERS)
    openers = _Deck(rng, _FILLER_OPENERS)
    follow_openers = _Deck(rng, _FILLER_FOLLOW_OPENERS)
    switches = _Deck(rng, _FILLER_SWITCH)
    fresh = True  # the next assistant turn answers a new subject

    def switch() -> str:
        nonlocal dom, slots, queue
        if not domains:
            domains.extend(_shuffled(rng, _FILLER_DOMAINS))
        dom = _FILLER[domains.pop()]
        slots = {"x": rng.choice(dom["subjects"])}
        queue = _shuffled(rng, dom["body"])
        return _render(rng, rng.choice(dom["open"]), slots)

    turns: list[tuple[str, str]] = []
    for i in range(n_turns):
        if i % 2 == 0:
            if i == 0:
                text = switch()
                fresh = True
            elif len(queue) < 4 or rng.random() < 0.2:
                text = _render(rng, switches.draw(), slots) + " " + switch()
                fresh = True
            else:
                text = _render(rng, follows[dom["explain"]].draw(), slots)
                fresh = False
            turns.append(("user", text))
            continue
        opener = _render(rng, openers.draw() if fresh else follow_openers.draw(), slots)
        closer = _render(rng, closers.draw(), slots) if rng.random() < 0.6 else ""
        total = count_words(opener) + count_words(closer)
        if total > hi:
            closer, total = "", count_words(opener)
        if total > hi:
            turns.append(("assistant", _truncate(opener, hi, ".")))
            continue
        target = rng.randint(max(lo, total), hi)
        body: list[str] = []
        used: set = set()
        skipped: list = []
        tries = 0
        while total < target and tries < 200:
            tries += 1
            if not generic:
                generic = _shuffled(rng, _FILLER_GENERIC)
            src = queue if queue and rng.random() < 0.7 else generic
            tpl = src.pop()
            if id(tpl) in used:
                continue
            sent = _render(rng, tpl, slots)
            if rng.random() < 0.12:
                sent = _with_connector(rng, sent, _CONNECTORS, False)
            c = count_words(sent)
            if total + c > hi:
                skipped.append(tpl)
                if total >= lo:
                    break
                continue
            used.add(id(tpl))
            body.append(sent)
            total += c
        queue[:0] = [t for t in skipped if t in dom["body"]]
        if len(body) > 3 and rng.random() < 0.6:
            cut = rng.randint(2, len(body) - 1)
            parts = [opener + " " + " ".join(body[:cut]), " ".join(body[cut:])]
        else:
            parts = [opener + " " + " ".join(body)] if body else [opener]
        if closer:
            parts.append(closer)
        turns.append(("assistant", "\n\n".join(parts)))
        fresh = False
    return turns


# --------------------------------------------------------------------------------------------------
# Image mentions
# --------------------------------------------------------------------------------------------------
def mention_templates(kind: str) -> list[str]:
    """Phrasings that introduce an image, with ``{thing}`` immediately followed by ``<image>``.

    ``kind`` is "photo", "screenshot" or "document" (see ``FAMILY_KIND``). Some templates also use
    ``{when}``, a noun phrase that reads naturally after "from" ("lunch", "my trip", "the market").
    The templates are clauses without final punctuation, so a fact can follow
    ("... <image> and I'm trying to keep my spending in check.").
    """
    if kind not in _MENTIONS:
        raise ValueError(f"unknown mention kind {kind!r}; expected one of {MENTION_KINDS}")
    return list(_MENTIONS[kind])


def render_mention(
    rng: random.Random,
    *,
    kind: str,
    thing: str,
    when: str | None = None,
    tail: str | None = None,
    require_when: bool = False,
) -> str:
    """Fill a mention template: ``thing`` (e.g. "the receipt from lunch"), optional ``when`` and
    ``tail`` (a clause appended after the image, e.g. "and I'm trying to keep my spending in check").
    Returns a sentence ending in punctuation."""
    options = [
        t for t in mention_templates(kind) if (when or "{when}" not in t) and (not require_when or "{when}" in t)
    ]
    text = rng.choice(options).format(thing=thing, when=when or "")
    return finish_sentence(text, tail)


def finish_sentence(text: str, tail: str | None = None) -> str:
    """Append an optional clause after a mention and close the sentence with punctuation."""
    if tail:
        tail = tail.strip()
        text = text + ("" if tail[:1] in ",;:" else " ") + tail
    if text[-1] not in ".!?":
        text += "."
    return text


# --------------------------------------------------------------------------------------------------
# Introspection (for reports and tests)
# --------------------------------------------------------------------------------------------------
def _variants(tpl) -> int:
    if isinstance(tpl, str):
        return 1
    n = 1
    for p in tpl:
        if not isinstance(p, str):
            n *= len(p)
    return n


def template_inventory() -> dict[str, int]:
    """Number of sentence templates per bank (``*_variants`` counts expanded ``[a|b]`` alternatives)."""
    banks: dict[str, tuple] = {
        "ack": _ACK_HINT + _ACK_PLAIN + _ACK_SECOND,
        "followup_frames": _FOLLOWUP_FRAMES,
        "followup_aspects": tuple(t for a in _ANGLES.values() for x in a for t in x[3]),
        "angle_leads": tuple(t for a in _ANGLES.values() for x in a for t in x[1]),
        "angle_supports": tuple(t for a in _ANGLES.values() for x in a for t in x[2]),
        "domain": tuple(t for v in _DOMAIN.values() for t in v),
        "generic_support": _GENERIC_SUPPORT,
        "user_leads": tuple({id(t): t for v in _USER_LEADS.values() for t in v}.values())
        + _USER_QLEADS
        + _OPENING_LEADS,
        "user_context": tuple({id(t): t for v in _USER_CONTEXT.values() for t in v}.values()),
        "user_closers": _USER_CLOSE,
        "mentions": tuple(t for v in _MENTIONS.values() for t in v),
        "filler_user": tuple(t for d in _FILLER.values() for t in d["open"])
        + _FILLER_USER_FOLLOW
        + _FILLER_USER_FOLLOW_EXPLAIN
        + _FILLER_SWITCH,
        "filler_assistant": tuple(t for d in _FILLER.values() for t in d["body"])
        + _FILLER_GENERIC
        + _FILLER_OPENERS
        + _FILLER_FOLLOW_OPENERS
        + _FILLER_CLOSERS,
    }
    out = {k: len(v) for k, v in banks.items()}
    out.update({k + "_variants": sum(_variants(t) for t in v) for k, v in banks.items()})
    out["total"] = sum(len(v) for v in banks.values())
    out["filler_subjects"] = sum(len(d["subjects"]) for d in _FILLER.values())
    out["filler_domains"] = len(_FILLER)
    return out


# --------------------------------------------------------------------------------------------------
# Sentence variation (data/variation.yaml): no sentence repeats verbatim within a history
# --------------------------------------------------------------------------------------------------
_VARIATION = load_bank(_PKG, "variation")
_SYNONYMS = {k: _VARIATION.phrases("synonyms", k) for k in _VARIATION.mapping("synonyms")}
_SYN_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _SYNONYMS), key=len, reverse=True)) + r")\b", re.I)
_OPENERS = _VARIATION.phrases("openers")
_HEDGES = _VARIATION.phrases("hedges")
_QUESTION_HEDGES = _VARIATION.phrases("question_hedges")
#: a sentence ends at . ! or ? followed by white space (or the end of the text)
_SENTENCE_END = re.compile(r"(?<=[.!?])(\s+)")
#: sentences this short (greetings, "Thanks!") may repeat
SHORT_SENTENCE_WORDS = 4


def split_sentences(text: str) -> list[str]:
    """The text as alternating [sentence, separator, sentence, ...]; ``"".join`` gives it back."""
    return _SENTENCE_END.split(text)


def sentence_key(sentence: str) -> str | None:
    """What two sentences must share to count as a verbatim repeat (None: too short to count)."""
    return key_and_words(sentence)[0]


def key_and_words(sentence: str) -> tuple[str | None, int]:
    """:func:`sentence_key` and :func:`count_words` of ``sentence`` from one split."""
    words = sentence.split()
    return (" ".join(words) if len(words) >= SHORT_SENTENCE_WORDS else None), len(words)


@lru_cache(maxsize=1 << 16)
def _synonym_spans(sentence: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, word) of every word of ``sentence`` that has synonyms. Cached: a repeated
    sentence is rewritten up to 18 times (and the alternation of every synonym is a slow scan)."""
    return tuple((m.start(), m.end(), m.group(0)) for m in _SYN_RE.finditer(sentence))


_ARTICLE_END = re.compile(r"\b([Aa])n? $")


def vary(rng: random.Random, sentence: str, level: int) -> str:
    """A rewrite of ``sentence`` that keeps its sense: ``level`` 0 swaps synonyms only (same
    sentence shape), 1 also adds a discourse opener or a hedge, 2 both."""
    words = list(_synonym_spans(sentence))
    out = sentence
    if words:
        picks = rng.sample(words, min(len(words), rng.randint(1, 3)))
        for start, end, w in sorted(picks, key=lambda m: m[0], reverse=True):
            alt = rng.choice(_SYNONYMS[w.lower()])
            if w[:1].isupper():
                alt = _cap(alt)
            head = out[:start]
            art = _ARTICLE_END.search(head)
            if art:  # keep the article agreeing with the new word
                vowel = alt[:1].lower() in "aeio" or (alt[:1].lower() == "u" and not alt.lower().startswith("us"))
                head = head[: art.start()] + art.group(1) + ("n " if vowel else " ")
            out = head + alt + out[end:]
    if level >= 1:
        body, end = (out[:-1], out[-1]) if out[-1:] in ".!?" else (out, "")
        opener = level >= 2 or rng.random() < 0.5
        if opener and not body.startswith(tuple(_OPENERS)):
            first = body.split(" ", 1)[0]
            keep = first == "I" or first.startswith("I'") or (len(first) > 1 and first.isupper())
            body = rng.choice(_OPENERS) + " " + (body if keep else _lower_first(body))
        hedges = _HEDGES if end == "." else (_QUESTION_HEDGES if end == "?" else ())
        if (level >= 2 or not opener) and hedges and not body.endswith(hedges):
            body = body.rstrip(",;:") + rng.choice(hedges)
        out = body + end
    return out
