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

Template mini-language: ``[a|b|c]`` picks one alternative (alternatives may be empty); ``{s}`` is the
subtopic with an article where it needs one ("the dairy section", "ice skating"), ``{S}`` the same
capitalized, ``{t}`` the topic title in lower case, ``{a}`` an aspect phrase, ``{ack}`` the
acknowledgement hint, ``{x}`` a filler subject.
"""
from __future__ import annotations

import json
import random
import re
from functools import lru_cache
from importlib import resources

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
]

TRACKS = ("identification", "experience", "document")

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
        parts.append(template[pos:m.start()])
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


_ING_NOUNS = frozenset(
    "building ring evening morning wedding ceiling awning string king spring wing clothing swing thing "
    "pudding icing railing crossing booking meeting landing bedding".split()
)
_MASS_LAST = frozenset(
    "yoga pilates badminton futsal netball kickball tennis rugby frisbee aerobics art coffee tea toast "
    "risotto shakshuka cosplay ski lag bread therapy home work playtime music origami calligraphy gouache "
    "pottery practice parking seating".split()
)
_DETERMINERS = frozenset("the a an my your our their his her this that these those".split())


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
    try:
        path = resources.files("memlens.build.ontology").joinpath("data/ontology_v1.json")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ModuleNotFoundError, json.JSONDecodeError):  # pragma: no cover
        return {}
    index: dict[str, str] = {}
    for track in doc.get("tracks", {}).values():
        for key, sa in track.get("sub_attributes", {}).items():
            for topic in sa.get("topics", []):
                index[topic["title"].lower()] = key
    return index


# --------------------------------------------------------------------------------------------------
# Assistant: acknowledgements
# --------------------------------------------------------------------------------------------------
_ACK_HINT = _C([
    "Thanks for sharing {ack}[; it gives me a much clearer picture of what you're working with|, it really helps to see what you mean|, that's a helpful bit of context|].",
    "I appreciate you sending {ack}[, it makes the question much easier to think through|; having something concrete to look at always helps|].",
    "[Thanks|Thank you] for [including|passing along|showing me] {ack}.",
    "It's nice to see {ack}[, and it ties in well with what you're asking|; it's a good starting point for your question|].",
    "[Got it|Great|Lovely], thanks for [the look at|sharing] {ack}.",
    "Thanks for walking me through {ack} and what's been on your mind.",
    "{Ack} is a [nice|useful|helpful] bit of context, so thanks for sharing it.",
    "[Thanks|Thank you] for [the context|the detail] and for [sharing|including] {ack}[, it helps|].",
    "I'm glad you [shared|included|sent] {ack}[, since it makes your question easier to picture|; it helps a lot|].",
    "That's a [helpful|great|useful] thing to include, and {ack} gives me a good sense of [what you mean|where you're coming from|the situation].",
    "[Thanks|Thank you], {ack} [helps me understand what you're asking|makes the question much more concrete|is a good starting point].",
    "It's always [easier|nicer] to [talk this through|think about this] with something in front of me, so thanks for {ack}.",
])

_ACK_PLAIN = _C([
    "Thanks for sharing that[, it sounds like you've had {s} on your mind|; it's a good question to think through|].",
    "That's a [great|really good|thoughtful|very reasonable] question about {s}.",
    "It's great that you're paying attention to {s}[; a little curiosity goes a long way here| and thinking it through before deciding anything|].",
    "I can see why {s} caught your interest.",
    "Thanks for the context, that helps me understand what you're after.",
    "[Happy|Glad] to help you think through {s}.",
    "That makes a lot of sense, and it's a [very common|really natural] thing to wonder about.",
    "You're asking about something a lot of people [overlook|never stop to think about].",
    "It sounds like you've already given {s} some real thought.",
    "Thanks for explaining where you're coming from[ with {s}|].",
    "[Good|Great] question, and there's plenty to dig into with {s}.",
    "I love that you're curious about {s}.",
    "That's a really practical thing to be thinking about[ when it comes to {t}|].",
    "It's nice to hear you're [getting into|looking into|thinking about] {s}.",
])

_ACK_SECOND = _C([
    "It sounds like you're trying to be thoughtful about it, which is a great instinct.",
    "There's quite a bit worth knowing here, so let me share what tends to matter most.",
    "Let me pull together [some points|a few ideas|some thoughts] that should help.",
    "Here's how I'd think about it.",
    "I'll focus on the parts that usually make the biggest difference.",
    "It's a topic with more depth than people [expect|tend to realize].",
    "Let me share some background that might [help|be useful].",
    "You're definitely not alone in wondering about this.",
    "A bit of background makes it much easier to make sense of.",
    "There are some useful ideas here that are easy to put into practice.",
    "Let me walk through what I think is most relevant.",
    "It's the kind of thing that gets easier once you know what to look for.",
])

# --------------------------------------------------------------------------------------------------
# Assistant: follow-up questions (knowledge-oriented only)
# --------------------------------------------------------------------------------------------------
_FOLLOWUP_FRAMES = _C([
    "Would you like some tips on {a}?",
    "Should I explain {a} in a bit more detail?",
    "Would it help if I outlined {a}?",
    "Would you like me to walk you through {a}?",
    "Shall I go over {a}?",
    "Would you like me to say more about {a}?",
    "Should I break down {a} step by step?",
    "Would it be useful if I covered {a} as well?",
    "Do you want me to share some pointers on {a}?",
    "Would you like a quick overview of {a}?",
    "Should I put together some suggestions on {a}?",
    "Want me to go into {a} a little further?",
    "Would it help to look at {a} more closely?",
    "Shall I share what experienced people usually recommend about {a}?",
    "Would you like me to explain {a}?",
    "Should I go through {a} with you?",
    "Would some practical advice on {a} be helpful?",
    "Would you find it useful if I described {a}?",
])

# --------------------------------------------------------------------------------------------------
# Assistant: substance, by track and angle. Each angle = (leads, supports, aspects).
# --------------------------------------------------------------------------------------------------
_ANGLES_RAW: dict[str, dict[str, tuple[list[str], list[str], list[str]]]] = {
    "identification": {
        "details": (
            [
                "[When it comes to|With] {s}, the small details usually tell you more than the overall impression does.",
                "A good way to get more out of looking at {s} is to slow down and notice how everything is put together.",
                "One thing worth knowing about {s} is that a handful of visual cues do most of the work when you're trying to recognize what you're looking at.",
                "Recognizing what you're looking at with {s} is mostly a matter of knowing which details to trust.",
            ],
            [
                "Labels, logos and small printed marks are worth a closer look, because they usually carry the most specific information in the whole scene.",
                "Colors and materials are rarely accidental, and they often hint at the brand, the era or the purpose behind what you're seeing.",
                "Comparing what you see with a similar setting elsewhere is a quick way to notice what makes this particular example distinctive.",
                "Lighting and camera angle can change how colors read, so it's worth keeping that in mind before drawing firm conclusions.",
                "Many people find it helpful to describe a scene out loud, since naming each element forces you to notice things you would otherwise skim past.",
                "The surroundings often tell you as much as the object itself, from the style of the fittings to the kind of signage nearby.",
                "Wear and tear is informative too: scuffs, fading and repairs show how something has actually been used over time.",
                "If you're unsure what something is, distinctive shapes and proportions are usually more reliable than color alone.",
                "Text in the background, even when it is partly hidden, can confirm a guess that the shapes and colors only suggest.",
                "It also helps to notice what is missing, because the absence of something expected can be just as telling as what is there.",
            ],
            [
                "how to spot the details that matter with {s}",
                "which visual cues are most reliable for recognizing things around {s}",
                "how to read the labels and markings you tend to find around {s}",
            ],
        ),
        "design": (
            [
                "There's usually more thought behind {s} than meets the eye.",
                "It's interesting how much design goes into {s}, even when the result looks effortless.",
                "Part of what makes {s} interesting is how much it reflects the habits and needs of the people who use it.",
            ],
            [
                "Designers and owners tend to arrange things so the most important elements catch the eye [first|straight away].",
                "Practical constraints like space, light and durability shape the final look as much as style does.",
                "Regional traditions often show up in the details, from the materials to the color choices.",
                "Much of what feels natural about a layout comes from long experience of what people actually use.",
                "Trends move slowly in some areas and quickly in others, which is why some things look timeless and others look dated.",
                "Functional details, like handles, hooks and labels, often reveal how something is meant to be used.",
                "A consistent visual language makes a space or object feel trustworthy and easy to understand.",
                "Small personal touches tend to be added over time, and they make each example a little different.",
                "Good design often goes unnoticed precisely because it removes small frustrations before you encounter them.",
            ],
            [
                "the design thinking behind {s}",
                "how the look of {s} has changed over time",
                "why things around {s} are usually arranged the way they are",
            ],
        ),
        "choose": (
            [
                "If you're weighing up options around {s}, it helps to be clear about what you actually need.",
                "Comparing choices related to {s} gets much easier once you know which features really matter.",
                "When it comes to choosing anything connected with {s}, a little comparison goes a long way.",
            ],
            [
                "Build quality and ease of maintenance usually matter more over time than the newest features.",
                "Reading a mix of reviews, especially the more balanced ones, gives a realistic picture of strengths and weaknesses.",
                "Seeing something in person, when possible, reveals things that photos can't, like weight, texture and scale.",
                "It's worth thinking about where and how often you'll use something before deciding how much to invest in it.",
                "Secondhand and refurbished options can offer excellent value if you know what to check.",
                "Asking people who use something every day often gives the most practical advice.",
                "A simple list of must haves and nice to haves keeps you from being swayed by features you'll rarely use.",
                "Return policies and warranties are worth checking before buying, especially for larger items.",
                "Independent shops and specialist sellers can often explain differences that a product page glosses over.",
            ],
            [
                "what to look for when comparing options around {s}",
                "how to weigh quality against convenience with {s}",
                "the questions worth asking before buying anything for {s}",
            ],
        ),
        "care": (
            [
                "Looking after {s} well mostly comes down to a few simple habits.",
                "Keeping {s} in good shape is easier than it sounds once you have a routine.",
                "With {s}, a bit of regular attention does far more than an occasional big effort.",
            ],
            [
                "Regular, gentle cleaning prevents build up that's much harder to deal with later.",
                "Storing things away from direct sunlight, heat and damp protects colors and materials.",
                "A designated place for everything makes it easy to notice when something is missing or damaged.",
                "Small repairs done early, like tightening a screw or touching up a scuff, prevent bigger problems.",
                "Following the manufacturer's care instructions is boring but genuinely worthwhile.",
                "Decluttering every so often makes the things you keep easier to see and enjoy.",
                "Labels and clear containers save time and help everyone in a household put things back.",
                "Rotating the items you use spreads wear more evenly and keeps things looking fresh.",
                "Keeping a small kit of cleaning and repair basics nearby makes quick maintenance much more likely to happen.",
            ],
            [
                "simple ways to keep {s} in good shape",
                "a basic care routine for {s}",
                "how to organize things around {s} so they stay tidy",
            ],
        ),
        "mistakes": (
            [
                "There are some common mistakes people make with {s} that are easy to avoid once you know about them.",
                "A lot of frustration with {s} comes from small, very avoidable missteps.",
                "It's worth knowing where people usually go wrong with {s}.",
            ],
            [
                "Relying on a first impression without checking the details is probably the most common trap.",
                "Overcomplicating things, whether with too many products or too many rules, often backfires.",
                "Ignoring the context around something can lead to confident but wrong conclusions.",
                "Skipping routine checks because everything seems fine is how small issues quietly grow.",
                "Buying for an idealized version of your routine rather than your real one tends to create unused clutter.",
                "Assuming everything works the same way everywhere can cause confusion in an unfamiliar place.",
                "Not asking for help or advice when unsure tends to cost more time than it saves.",
                "Trying to change everything at once makes it hard to tell which adjustment actually helped.",
                "Copying a setup you admired elsewhere without adapting it to your own space rarely works as well as hoped.",
            ],
            [
                "the most common mistakes people make with {s}",
                "how to avoid the usual pitfalls with {s}",
                "what experienced people do differently with {s}",
            ],
        ),
        "background": (
            [
                "It can be fun to learn a little of the background behind {s}.",
                "A bit of context makes {s} much more interesting to look at.",
                "There's more of a story behind {s} than most people assume.",
            ],
            [
                "Many everyday things we take for granted were once novelties that took a long time to catch on.",
                "The way things are made and sold has shifted a great deal, and those shifts leave visible traces.",
                "Local customs and climate shape what becomes common in one place and rare in another.",
                "Specialist enthusiasts and collectors often document the history in surprising detail, which makes for great reading.",
                "Older examples often reveal the techniques and materials that were available when they were made.",
                "Museums, archives and local history groups are good places to see how things have evolved.",
                "Knowing the background makes it easier to recognize what's original and what's a later addition.",
                "Even small design changes usually have a practical reason behind them, such as safety, cost or convenience.",
            ],
            [
                "the history behind {s}",
                "how {s} developed into what we see today",
                "where to learn more about the background of {s}",
            ],
        ),
        "visit": (
            [
                "If you enjoy {s}, there's a lot to be gained from looking at it with a slightly more curious eye.",
                "Visiting {s} with a bit of background in mind makes it far more rewarding.",
                "[With|For] {s}, a little context turns a passing glance into something memorable.",
            ],
            [
                "Going early or late in the day usually means softer light and fewer people, which is ideal for taking it all in.",
                "Walking around to see it from more than one side often reveals details that the usual viewpoint hides.",
                "Local guides and information boards tend to point out features you would otherwise walk straight past.",
                "Photos come out better when you include something for scale, like a person, a doorway or a lamp post.",
                "Looking up is surprisingly rewarding, since carvings, signs and decorations are often placed above eye level.",
                "Coming back in a different season can make a familiar place feel completely new.",
                "Respecting any posted rules, such as quiet zones or restricted areas, keeps places pleasant for everyone.",
                "Nearby cafes and benches make good spots to pause and watch how people actually use the space.",
            ],
            [
                "the best ways to explore {s}",
                "how to photograph {s} well",
                "what to look out for on a visit to {s}",
            ],
        ),
        "use": (
            [
                "Shared places like {s} run much more smoothly when everyone knows the unwritten rules.",
                "Making good use of {s} is mostly about knowing how the space is meant to work.",
                "[With|Around] {s}, a bit of know how saves time and a lot of small frustrations.",
            ],
            [
                "Quieter periods exist almost everywhere, and staff can usually tell you when they are.",
                "Cleaning up after yourself and putting things back where they belong makes a real difference in shared spaces.",
                "Signs and notices usually explain the local conventions, even if they're easy to ignore.",
                "Asking politely before using something that seems reserved avoids awkward moments.",
                "Reporting broken equipment or other problems early helps everyone and usually gets things fixed faster.",
                "Bringing your own small essentials, like a bottle, a pen or a padlock, makes visits smoother.",
                "Booking systems and queues may seem fussy, but they usually exist because demand is uneven.",
                "Getting to know the people who run a place is one of the best ways to learn how it really works.",
            ],
            [
                "the unwritten rules around {s}",
                "how to make the most of {s}",
                "how to find the quieter times for places like {s}",
            ],
        ),
    },
    "experience": {
        "plan": (
            [
                "A little planning goes a long way with {s}, mostly because it frees you up to enjoy the moment itself.",
                "[With|When it comes to] {s}, the preparation beforehand often shapes the experience more than people expect.",
                "One of the most useful things to think about with {s} is how to set things up so everything flows easily.",
            ],
            [
                "Checking the basics ahead of time, such as opening hours, booking requirements and how to get there, removes most of the stress.",
                "It helps to decide in advance what would make the outing feel worthwhile, so you can prioritize that if time runs short.",
                "Going at a quieter time usually means more space, better service and a calmer atmosphere.",
                "Packing some essentials, like water, a snack and a light layer, covers most small surprises.",
                "If you're going with others, agreeing on a rough plan beforehand avoids a lot of back and forth on the day.",
                "Leaving some slack in the schedule makes room for detours, which are often the most memorable part.",
                "Reading recent reviews or asking friends who have been can point you toward the best options.",
                "Having a backup idea in case of bad weather or closures keeps the day from feeling wasted.",
                "Getting anything you need ready the night before makes it much easier to head out without a rush.",
            ],
            [
                "how to plan ahead for {s}",
                "a simple checklist for {s}",
                "how to pick the best time for {s}",
            ],
        ),
        "enjoy": (
            [
                "To get the most out of {s}, it helps to focus on the parts that genuinely make it enjoyable for you.",
                "Part of what makes {s} rewarding is noticing the small details that are easy to rush past.",
                "A lot of people find {s} more satisfying once they approach it with a bit of curiosity.",
            ],
            [
                "Slowing down and paying attention to sounds, smells and textures makes an ordinary day feel much richer.",
                "Trying something slightly outside your usual choices is a simple way to keep things fresh.",
                "Chatting with staff, guides or regulars often leads to tips you wouldn't find anywhere else.",
                "Putting your phone away for a stretch of time helps you actually take in the experience.",
                "Taking a handful of thoughtful photos, rather than lots of quick ones, usually leaves you with better memories.",
                "Reflecting afterward on what you enjoyed most makes it easier to plan the next time around that.",
                "Sharing the experience with someone who's new to it can help you see it through fresh eyes.",
                "It's fine to keep things low key; the most pleasant outings are often the simplest ones.",
                "Learning a little about the craft or tradition behind an activity adds a whole new layer of enjoyment.",
            ],
            [
                "ways to get more out of {s}",
                "some lesser known ideas related to {s}",
                "how to make {s} feel special without much extra effort",
            ],
        ),
        "comfort": (
            [
                "Comfort and safety are worth a bit of thought with {s}, since they quietly shape how much you enjoy it.",
                "[With|For] {s}, some practical precautions make a noticeable difference.",
                "Being comfortable makes {s} far more enjoyable, and it rarely takes much effort.",
            ],
            [
                "Comfortable shoes and clothing suited to the conditions are easy to overlook but make a huge difference.",
                "Staying hydrated and taking short breaks keeps your energy steady, especially on longer outings.",
                "Letting someone know your plans is a sensible habit whenever you're heading somewhere unfamiliar.",
                "Keeping valuables secure and out of sight reduces worry in crowded places.",
                "Sun protection matters even on cloudy days, and a hat or sunscreen is easy to carry.",
                "Listening to your body and stopping when something feels off is always the right call.",
                "Checking accessibility information ahead of time helps if anyone in your group has specific needs.",
                "A small first aid kit with plasters and any personal medication covers most minor mishaps.",
                "Dressing in layers lets you adjust easily when the temperature changes during the day.",
            ],
            [
                "staying comfortable and safe during {s}",
                "what to pack for {s}",
                "how to handle changing conditions during {s}",
            ],
        ),
        "budget": (
            [
                "There are some easy ways to make {s} feel good value without cutting back on the fun.",
                "[If you're keeping an eye on spending|If you're mindful of your budget], there's more flexibility with {s} than it might seem.",
                "Making {s} memorable doesn't have to be expensive.",
            ],
            [
                "Off peak times are often noticeably cheaper than the busiest periods.",
                "Memberships, passes and loyalty programs can pay off quickly if you go regularly.",
                "Bringing your own snacks or drinks, where allowed, keeps the small costs from adding up.",
                "Sharing costs with friends, such as splitting transport or equipment, makes a big difference.",
                "Local and community options are often just as enjoyable as the well known ones, and usually less expensive.",
                "Setting a rough spending limit before you go makes it easier to enjoy the day without second guessing purchases.",
                "Renting or borrowing equipment is a sensible way to try something before buying your own.",
                "Keeping an eye on newsletters and local listings often turns up discounts and free events.",
            ],
            [
                "ways to make {s} more affordable",
                "how passes and memberships usually work for things like {s}",
                "where to find deals related to {s}",
            ],
        ),
        "habit": (
            [
                "If you'd like {s} to become a regular part of life, it helps to think about how it fits into your usual routine.",
                "Building {s} into a routine is mostly about making it easy to start.",
                "Turning {s} into a habit works best when it feels like a treat rather than an obligation.",
            ],
            [
                "Anchoring it to an existing habit, like a weekend walk or the end of the working day, makes it much easier to repeat.",
                "Starting small and building up gradually keeps it enjoyable rather than overwhelming.",
                "Keeping a simple record each time helps you notice progress and patterns over time.",
                "Finding a friend or group to share it with adds accountability and makes it more social.",
                "Varying the details, such as the place or the company, keeps a routine from going stale.",
                "It's normal for enthusiasm to dip occasionally, and a short break often renews your interest.",
                "Learning a little of the background or technique adds a new layer of enjoyment as you go.",
                "Celebrating small milestones keeps motivation up far better than focusing on distant goals.",
            ],
            [
                "how to turn {s} into a regular habit",
                "how to keep track of your progress with {s}",
                "ways to keep {s} from feeling repetitive",
            ],
        ),
        "skill": (
            [
                "There's a real craft to {s}, and a few technique tips can make it feel much smoother.",
                "A little know how makes {s} a lot more satisfying.",
                "As with most things, the basics of {s} become second nature surprisingly quickly.",
            ],
            [
                "Watching someone experienced, either in person or in a good video, is one of the fastest ways to pick up technique.",
                "Focusing on one small improvement at a time works better than trying to fix everything at once.",
                "Asking for feedback from instructors or more experienced friends speeds up progress considerably.",
                "Good basic equipment helps, but technique usually matters far more than expensive gear.",
                "Repetition in a relaxed setting builds confidence before you try anything more ambitious.",
                "It helps to notice what went well each time, not just what went wrong.",
                "Short sessions done regularly tend to beat occasional marathon efforts.",
                "Many clubs and studios run beginner sessions that are a friendly way to learn the fundamentals.",
            ],
            [
                "the basic techniques behind {s}",
                "how beginners usually improve at {s}",
                "the equipment that actually matters for {s}",
            ],
        ),
    },
    "document": {
        "read": (
            [
                "With {s}, most of the useful information sits in a handful of predictable places once you know where to look.",
                "It helps to read {s} with a clear idea of which details actually matter to you.",
                "Documents like {s} tend to follow a standard layout, and learning it makes them much quicker to read.",
            ],
            [
                "The header usually identifies who issued the document and how to contact them, which matters if anything needs correcting.",
                "Reference codes and account identifiers are worth noting, since they're what customer service will ask for first.",
                "Fine print near the bottom often explains conditions, exceptions and what to do if something goes wrong.",
                "Totals, balances and deadlines are usually highlighted, but the lines leading up to them explain how they were reached.",
                "Abbreviations can be confusing, and most issuers publish a short guide explaining what they mean.",
                "Comparing a new document with a previous one from the same source is a quick way to spot changes.",
                "If something is unclear, it's reasonable to ask the issuer to explain it before you rely on it.",
                "Highlighting the key details when you first receive a document saves time whenever you need to look back.",
                "Layout conventions exist for a reason, so the most important information is usually set apart in bold or in a box.",
            ],
            [
                "how to read the key details on {s}",
                "what the usual abbreviations and codes on {s} mean",
                "which parts of {s} are worth checking first",
            ],
        ),
        "organize": (
            [
                "Keeping {s} organized is mostly about having a simple system you'll actually stick with.",
                "A tidy way of storing {s} pays off the moment you need to find something quickly.",
                "The best system for {s} is usually the simplest one you can keep up with.",
            ],
            [
                "A single folder, physical or digital, with some clear categories works better than an elaborate filing scheme.",
                "Naming scanned files consistently, with the type of document and the issuer, makes them easy to search.",
                "Setting aside a moment each week to file new papers keeps the pile from growing out of control.",
                "Photographing paper documents as soon as you receive them creates an instant backup.",
                "Keeping active items separate from archived ones makes your everyday folder much lighter.",
                "Shredding or deleting documents you no longer need reduces clutter and protects your privacy.",
                "Cloud storage with automatic syncing means your records are available wherever you are.",
                "A short index of where things are stored helps anyone else in your household find them too.",
            ],
            [
                "a simple filing system for {s}",
                "how to digitize and back up {s}",
                "how long it's sensible to keep things like {s}",
            ],
        ),
        "check": (
            [
                "It's worth giving {s} a careful once over, because small errors are surprisingly common.",
                "Checking {s} properly doesn't take long, and it can save a lot of hassle later.",
                "With {s}, a quick review is one of the most worthwhile habits you can build.",
            ],
            [
                "Names, addresses and other personal details are the things most often mistyped, and they cause the most trouble later.",
                "Comparing the document with your own notes or confirmation emails helps catch discrepancies.",
                "Duplicate lines and unexpected fees tend to hide in the middle of longer documents.",
                "If something looks wrong, contacting the issuer promptly usually makes it easier to resolve.",
                "Keeping a record of any correspondence about a mistake protects you if the issue comes up again.",
                "Many errors come from automated systems, so politely asking for a manual review often works.",
                "It helps to read the document once for the overall picture and then again for the specific details.",
                "Trusting your instincts is sensible: if an amount looks off, it's worth double checking.",
            ],
            [
                "how to check {s} for common errors",
                "what to do if you find a mistake in {s}",
                "how to dispute a charge or detail related to {s}",
            ],
        ),
        "privacy": (
            [
                "Documents like {s} often contain more personal information than people realize, so a little care goes a long way.",
                "With {s}, it's worth thinking about privacy as well as convenience.",
                "It's easy to forget how much personal detail {s} can reveal.",
            ],
            [
                "Account identifiers, addresses and signatures are worth covering before sharing a photo of any document.",
                "Storing sensitive records in a password protected folder adds an easy layer of protection.",
                "Be wary of unexpected messages asking you to confirm details from a document, since they're a common scam.",
                "Disposing of paper copies properly, for example by shredding, prevents them from being misused.",
                "Sharing only the relevant part of a document, rather than the whole page, limits what others can see.",
                "Turning on multi factor verification for the accounts linked to your documents adds valuable protection.",
                "Reviewing who has access to shared folders every so often keeps things from drifting out of control.",
                "Official organizations rarely ask for sensitive details by email or chat, so it's fine to verify through a known channel.",
            ],
            [
                "how to share {s} safely",
                "keeping the personal details in {s} secure",
                "how to recognize scams that imitate things like {s}",
            ],
        ),
        "remind": (
            [
                "A lot of the value in {s} comes from acting on it at the right moment.",
                "Keeping track of what needs doing with {s}, and when, takes most of the stress out of it.",
                "The trickiest part of {s} is usually remembering the follow up rather than understanding the content.",
            ],
            [
                "Adding key deadlines to your calendar as soon as a document arrives means you won't have to remember them.",
                "Setting a reminder a little ahead of any deadline leaves time to deal with surprises.",
                "Some documents need a reply or confirmation, and noting that at the top of the page makes it hard to forget.",
                "Automatic payments and renewals are convenient, but a periodic review keeps them from running unchecked.",
                "Keeping a simple list of upcoming renewals in one place gives you a clear overview.",
                "If you need more time for something, asking early is usually met with more flexibility.",
                "Marking documents as done once handled makes it obvious what still needs attention.",
                "Reviewing everything at a regular point, such as the start of each season, helps catch anything overlooked.",
            ],
            [
                "setting up reminders around {s}",
                "how to keep track of deadlines related to {s}",
                "a routine for reviewing things like {s}",
            ],
        ),
        "compare": (
            [
                "Looking at {s} over time can tell you a surprising amount.",
                "Records like {s} become much more useful when you compare them with earlier versions.",
                "It's worth treating {s} as a record you can learn from, not just something to file away.",
            ],
            [
                "Patterns only show up when you line records up side by side, so keeping older copies is worthwhile.",
                "A simple spreadsheet or notes app is enough to track the details you care about across documents.",
                "Seasonal changes often explain differences that look alarming at first glance.",
                "Comparing providers or plans using your own past records gives a more realistic picture than advertised examples.",
                "Small changes in terms or wording can matter more than changes in the headline details.",
                "Reviewing records together with anyone who shares the costs or responsibilities avoids surprises.",
                "Noting the reason for any unusual entry at the time saves a lot of head scratching later.",
                "Charts or color coding can make trends obvious that are hard to spot in rows of text.",
            ],
            [
                "how to compare {s} over time",
                "simple ways to track trends in things like {s}",
                "what changes in {s} are worth paying attention to",
            ],
        ),
    },
}

# Domain sentences per ontology sub-attribute (used alongside the track angles).
_DOMAIN_RAW: dict[str, list[str]] = {
    "retail_and_commerce": [
        "Retailers put a lot of thought into placement, so the items at eye level are usually the ones a store most wants you to notice.",
        "Shelf labels often carry more than the price, including unit comparisons, origin details and small codes staff use for restocking.",
        "Seasonal displays rotate quickly, which is why the same corner of a shop can look completely different from visit to visit.",
        "Independent sellers tend to rely on handwritten signs and personal recommendations, while larger chains lean on consistent branding.",
        "Packaging design is a quiet form of communication, using color families and typefaces to signal freshness, luxury or value.",
        "If you're comparing products, the ingredient list or specification panel is usually more revealing than the front of the package.",
        "Store layouts are typically designed to guide you past a wide range of products on the way to everyday staples.",
        "Asking staff about what sells well or what's new is an underrated way to learn how a particular shop is organized.",
        "Loyalty schemes and member pricing can change the real cost of an item, so the fine print on shelf tags is worth reading.",
    ],
    "home_objects_and_belongings": [
        "Objects at home tend to tell a story about routines, since the things we reach for most end up in the most convenient spots.",
        "Good storage usually follows a simple rule: keep everyday items within easy reach and give occasional items a clearly labeled home.",
        "Natural finishes like wood, ceramic and metal usually age more gracefully than glossy plastics.",
        "Rotating what's on display every so often keeps a space feeling fresh without needing to buy anything new.",
        "Grouping similar items together makes it easier to see what you already own, which helps avoid accidental duplicates.",
        "Regular light maintenance, such as dusting, oiling hinges or descaling appliances, tends to prevent bigger problems later.",
        "Sentimental pieces often look best when they're given a little space rather than being crowded onto a busy shelf.",
        "Keeping manuals and receipts together, or saved in an album on your phone, makes repairs and warranty questions much easier.",
        "Daylight changes how colors and textures look at home, so it's worth checking a spot at different times of day before settling on an arrangement.",
    ],
    "vehicles_and_mobility": [
        "Vehicles carry a lot of identifying detail in their proportions, from the shape of the lights to the line of the roof or frame.",
        "Regular checks of tires, brakes and lights are the simplest way to keep any vehicle safe and pleasant to use.",
        "Accessories like racks, baskets and lights are worth choosing for how they fit your routine rather than how they look in a catalog.",
        "Local rules about parking, helmets and registration vary a lot between cities, so the official guidance where you live is worth checking.",
        "A small kit with basic tools, a pump or jumper cables, and a flashlight can turn a stressful breakdown into a minor delay.",
        "Secondhand vehicles and gear can be great value, as long as you inspect them carefully and ask about their maintenance history.",
        "Design details often reveal the era a vehicle comes from, since styling trends change noticeably over the decades.",
        "Cleaning off grit and road salt regularly does a lot to prevent rust and wear on moving parts.",
        "Shared mobility options such as bike share or car clubs are a good way to try a type of vehicle before committing to owning one.",
    ],
    "urban_environment_and_landmarks": [
        "Cities leave clues everywhere, and signage, building materials and street furniture often reveal which neighborhood or era you're looking at.",
        "Landmarks are usually easiest to recognize from their silhouette, which is why postcards tend to show them from the same handful of angles.",
        "Local history groups and walking tours are a great way to learn the stories behind buildings you pass all the time.",
        "Public spaces are designed around how people move, so the placement of benches, lamps and crossings often follows well worn paths.",
        "Many older buildings carry plaques or foundation stones that explain who built them and why.",
        "Murals and street art change over time, so photographing them is often the only way to remember a particular piece.",
        "Facades and skylines usually photograph best when the light is low and soft, which brings out texture and detail.",
        "Maps and wayfinding signs use consistent colors and symbols, and learning them makes an unfamiliar area much easier to navigate.",
        "Waterfronts, squares and parks tend to become the social heart of a city, which is why they are so often redesigned.",
    ],
    "workspace_and_institutions": [
        "Shared spaces work best when there are clear, simple conventions everyone can see, such as labels, sign up sheets or a notice board.",
        "Institutions often follow standard layouts, so once you understand how one library, clinic or office is organized, others feel familiar.",
        "Signage in public buildings is usually designed for accessibility first, with high contrast colors and plain, direct wording.",
        "Equipment in shared spaces lasts longer when people clean up after themselves and report problems early.",
        "Opening hours, booking rules and queue systems are worth checking ahead of time, since they vary a lot between places.",
        "Front desk and service staff are usually the best source of practical tips, especially about quieter times to visit.",
        "Ergonomics make a real difference in any workspace, from the height of a desk to the lighting around it.",
        "A little personal organization, like keeping your own labeled container or locker tidy, makes shared spaces less stressful.",
        "Many institutions publish their guidelines online, so they're worth reading before a first visit.",
    ],
    "dining_and_food_activities": [
        "Restaurants and cafes often reveal their priorities through the menu, since a short, focused menu usually signals a kitchen that cooks most things fresh.",
        "Ordering family style is a great way to sample more flavors without committing to a single plate.",
        "Seasonal ingredients tend to be both tastier and better value, so it's worth asking what's fresh right now.",
        "Keeping a simple food journal, with a photo and a quick note, is a nice way to remember what you loved.",
        "Weighing ingredients rather than using cups makes home cooking and baking much more consistent.",
        "Texture matters as much as flavor, so a dish that combines something crisp with something soft usually feels more satisfying.",
        "Street food is often at its best where there's a queue of locals, since high turnover means everything is freshly made.",
        "Small tweaks, such as toasting spices or resting dough a little longer, can change a recipe more than swapping major ingredients.",
        "Sharing a meal with others tends to make people more adventurous, which is a good reason to order something unfamiliar.",
    ],
    "fitness_and_outdoor_recreation": [
        "Warming up properly and cooling down afterward are the least glamorous parts of any activity, but they do the most to prevent injuries.",
        "Progress usually comes from consistency rather than intensity, so a routine you can keep up matters more than a heroic single session.",
        "Good footwear and well fitted gear make a bigger difference than almost any other purchase when you're starting out.",
        "Checking the weather and conditions before heading outdoors helps you choose the right layers and avoid unpleasant surprises.",
        "Joining a club or group session is a great way to learn technique from more experienced people and stay motivated.",
        "Hydration and a light snack before and after exercise help with both performance and recovery.",
        "The basic etiquette of shared spaces like trails, courts and pools keeps things safe and friendly for everyone.",
        "Rest days are part of training, not a break from it, because muscles and joints adapt during recovery.",
        "Noting how you feel after each session, not just what you did, makes it easier to spot when to push and when to ease off.",
    ],
    "social_and_community_gatherings": [
        "Gatherings tend to feel relaxed when there's a simple structure, such as a shared activity or a loose plan for the evening.",
        "Food and music do a lot of the work in setting the mood, so they're worth a little thought ahead of time.",
        "A mix of familiar faces and new people keeps conversation lively and helps everyone feel welcome.",
        "Community events often depend on volunteers, and even a short shift helps organizers more than people realize.",
        "Clear communication about logistics, like where to meet and what to bring, prevents most last minute confusion.",
        "Group chats and shared lists are handy for coordinating, as long as someone takes responsibility for keeping them up to date.",
        "Small traditions, such as a recurring game or a signature dish, give regular gatherings a sense of identity over time.",
        "It's considerate to plan for quieter corners or breaks, since not everyone enjoys being in a crowd the whole time.",
        "Taking some photos during the event, rather than only at the end, captures the atmosphere much better.",
    ],
    "cultural_and_entertainment_outings": [
        "Cultural venues often have quieter times, and visiting then makes it much easier to actually take things in.",
        "Reading a little about an exhibition, show or performance beforehand tends to make the experience far richer.",
        "Audio guides and printed programs are worth using, since they often point out details you would easily miss on your own.",
        "Booking ahead for popular events usually gets you better seats and saves time in queues.",
        "It's perfectly fine to focus on a handful of highlights instead of trying to see everything in a single visit.",
        "Many venues offer discounted or free entry on certain occasions, so their website is worth checking.",
        "Live performances feel different depending on where you sit, and the acoustics and sightlines can vary a lot.",
        "Writing down your impressions afterward, even briefly, helps you remember what struck you about the experience.",
        "Venue shops and cafes are often curated to match the current program, which makes them surprisingly interesting.",
    ],
    "routines_and_errands": [
        "Routines work best when they're anchored to something you already do, like pairing a new habit with your first coffee of the day.",
        "Batching similar errands together saves a surprising amount of time and mental energy.",
        "A running list on your phone means you can add things the moment you notice them instead of trying to remember later.",
        "Small, regular maintenance tends to be less effort overall than occasional big catch up sessions.",
        "Keeping the supplies for each routine in one spot means getting started takes as little effort as possible.",
        "Checking opening hours and busy periods before heading out can turn a frustrating errand into a quick one.",
        "Many appointments and services now offer online booking or reminders, which takes some of the admin off your plate.",
        "Rewarding yourself after a tedious task, even with something small, makes routines easier to stick with.",
        "Reviewing what you actually use every so often helps you trim routines that have quietly become unnecessary.",
    ],
    "travel_and_mobility_outings": [
        "Leaving some unplanned time in any trip makes room for the spontaneous discoveries that often end up being the highlights.",
        "Packing light makes travel much more flexible, especially when you're changing trains, hotels or ferries.",
        "Tourist offices and station information desks are still some of the best sources of practical, up to date advice.",
        "Booking the key parts of a trip ahead of time and keeping the rest flexible strikes a good balance between security and freedom.",
        "Traveling slightly outside the busiest season usually means fewer crowds and a more relaxed atmosphere.",
        "Keeping digital and paper copies of important bookings means a flat phone battery won't derail your plans.",
        "Trying local food and public transport is one of the quickest ways to get a feel for a new place.",
        "Scenic routes are often worth the extra time, since the journey itself can become part of the experience.",
        "A small daypack with water, snacks and a light layer covers most surprises on a day out.",
    ],
    "home_life_and_indoor_hobbies": [
        "Hobbies at home are easiest to keep up when the materials are set up and ready, rather than packed away in a cupboard.",
        "A small, dedicated corner for a hobby signals to yourself that the time is worth protecting.",
        "Beginners often progress fastest by copying pieces they admire, then gradually adding their own touches.",
        "Good light makes a huge difference for reading, painting and craft work, and daylight is usually the most forgiving.",
        "Online communities and local classes can both be great for feedback, encouragement and fresh ideas.",
        "A simple record of your projects, such as photos in a dedicated album, makes it satisfying to look back on your progress.",
        "It's normal for a new hobby to feel awkward at first, and the early mistakes are usually where the real learning happens.",
        "Comfortable seating and a tidy workspace make it more likely you'll settle in for a longer, relaxed session.",
        "Mixing structured practice with playful experimenting keeps a hobby from starting to feel like a chore.",
    ],
    "receipts_and_bills": [
        "Receipts and bills usually follow a predictable layout, with the merchant details at the top, the itemized lines in the middle and the totals near the bottom.",
        "Checking itemized lines against what you expected is the quickest way to spot double charges or missing discounts.",
        "Thermal paper receipts fade over time, so photographing or scanning the ones you need to keep is a good habit.",
        "Grouping bills by category, such as household, transport and food, makes it much easier to see where money actually goes.",
        "Many providers offer paperless billing, which reduces clutter but makes it important to keep your email organized.",
        "Taxes, service charges and discounts are often listed separately, and it helps to understand which lines affect the final amount.",
        "Keeping receipts for larger purchases together with their warranty information saves a lot of searching later.",
        "Reviewing recurring bills every so often can reveal plans or services that no longer fit your needs.",
    ],
    "tickets_passes_and_itineraries": [
        "Tickets and booking confirmations pack a lot of information into a small space, so it's worth knowing where the key details usually sit.",
        "Reference codes, seat details and entry instructions are the parts people most often need in a hurry, so highlighting them helps.",
        "Keeping all the bookings for a trip in a single folder or app makes it easy to see the whole itinerary at a glance.",
        "Digital tickets are convenient, but a screenshot or printout is a good backup in places with patchy signal.",
        "Reading the terms on a pass or booking, especially around changes and refunds, avoids unpleasant surprises later.",
        "Many passes are tied to a name or a photo, so it's worth double checking that the details match your identification.",
        "Transit passes often have zones or validity rules that aren't obvious from the card itself, so the operator's website is worth a look.",
        "Sharing the itinerary with whoever you're traveling with keeps everyone on the same page.",
    ],
    "schedules_and_calendars": [
        "Schedules are easiest to read when they use consistent colors or symbols for each kind of activity.",
        "Checking whether a timetable has a different version for holidays or special periods can save a wasted trip.",
        "A shared calendar works best when everyone agrees on some simple conventions, such as how to name events and who adds what.",
        "Posting a printed schedule somewhere visible, like the fridge or a notice board, helps the whole household stay on track.",
        "Blocking out buffer time around important commitments makes a busy stretch feel much more manageable.",
        "Menus and class timetables change regularly, so it's worth looking for a note of when they were last updated.",
        "Syncing paper and digital calendars, even roughly, prevents double bookings.",
        "Reviewing what's coming up at a consistent moment gives you a chance to spot clashes before they happen.",
    ],
    "contracts_and_application_forms": [
        "Contracts and forms reward slow reading, since the most important details are often tucked into the clauses near the end.",
        "It's worth keeping a signed copy of any agreement somewhere safe, along with any emails that clarify its terms.",
        "Definitions sections can seem dry, but they determine how the rest of the document is interpreted.",
        "Before signing, it helps to list the obligations on each side in plain language to make sure nothing is unclear.",
        "Renewal, cancellation and notice terms are the parts people most often wish they had read more carefully.",
        "Application forms usually ask for the same core information, so a document with your standard answers saves time.",
        "If a clause is confusing, asking for clarification in writing creates a useful record of what was agreed.",
        "Checking that names, addresses and other personal details are spelled correctly avoids delays later.",
    ],
    "personal_records_and_logs": [
        "Personal logs are most useful when they're simple enough to keep up with, even on busy days.",
        "Consistent categories or headings make it much easier to compare entries over time.",
        "Reviewing a log every so often turns raw notes into insight, since patterns only show up when you look back.",
        "Digital tools are handy for search and backups, while paper often feels more personal and is easier to keep near at hand.",
        "It helps to record not just what happened but a word or so about how it felt or why it mattered.",
        "Lists work best when each item is a concrete next action rather than a vague goal.",
        "Keeping related records together, such as recipes in a binder or workouts in an app, reduces the friction of looking things up.",
        "A quick photo of a handwritten page is an easy way to keep a backup without changing your habits.",
    ],
    "subscriptions_and_digital_records": [
        "Subscriptions are easy to forget once they're set up, so a periodic review of what you're paying for is well worth the time.",
        "Billing emails and app screens usually show the plan name, the renewal terms and the payment method, which are the key things to check.",
        "Screenshots are a practical way to keep a record of orders and confirmations, especially when an app only shows recent history.",
        "Reminders set before free trials end give you time to decide whether a service is actually worth keeping.",
        "Shared accounts and family plans are convenient, but it helps to agree on who manages the payment details.",
        "Organizing emails into folders or labels for receipts and subscriptions makes tidying up at the end of the year much easier.",
        "Price change notices are easy to skim past, yet they're often the most important messages a service sends.",
        "Many services offer cheaper plans with fewer features, and switching can be simpler than people expect.",
    ],
    "health_and_service_records": [
        "Health and service records are most useful when they're easy to find in a hurry, so a single dedicated folder goes a long way.",
        "Prescription labels and appointment cards use a compact layout, and it helps to know where the instructions and contact details usually appear.",
        "Keeping warranty cards with the original receipt makes claims much smoother if something goes wrong.",
        "Repair invoices often list parts and labor separately, which helps you understand what was actually done.",
        "Bringing previous records to a new appointment helps the professional see the full picture more quickly.",
        "Digital copies of important records are a good backup, as long as they're stored somewhere secure.",
        "Asking the pharmacist or technician to explain anything unclear on a record is always reasonable.",
        "A simple log of service visits, with a note of what was done, makes future maintenance much easier to plan.",
    ],
}

# Track-agnostic sentences used to reach the word range.
_GENERIC_SUPPORT = _C([
    "None of this needs to be perfect, and small improvements tend to add up over time.",
    "It's also worth remembering that what works well for one person may need adjusting for another.",
    "If you try any of these ideas, pay attention to what feels natural and build from there.",
    "A little curiosity goes a long way, and asking people with more experience is always worthwhile.",
    "Over time you'll develop your own sense of what matters most with {s}.",
    "Being consistent matters more than getting every detail right from the start.",
    "It can help to jot down what you notice, since patterns are easier to see on paper.",
    "Different sources will offer slightly different advice, so it's fine to experiment and see what suits you.",
    "The most important thing is that the approach fits comfortably into your everyday life.",
    "Taking a moment to reflect afterward often reveals what you'd like to do differently next time.",
    "Plenty of people start out unsure, and it usually becomes second nature surprisingly quickly.",
    "It's worth keeping things simple at first and adding detail only once the basics feel easy.",
    "Most of the benefit comes from the basics, so there's no need to chase every refinement.",
    "Paying attention to how things actually go, rather than how you expected them to go, is the fastest way to learn.",
    "[Interestingly|Funnily enough], the people who enjoy {t} most are often the ones who keep it relaxed.",
    "Little habits like these are easy to overlook, yet they shape the overall experience more than big decisions do.",
])

_CONNECTORS = ("Also, ", "On top of that, ", "Beyond that, ", "In practice, ", "Another thing: ", "Similarly, ",
               "At the same time, ", "Along the same lines, ")
_POINT_OPENERS = ("On a slightly different note, ", "Separately, ", "It's also worth adding that ",
                  "From another angle, ", "Related to that, ")


def _build_angles():
    out = {}
    for track, angles in _ANGLES_RAW.items():
        out[track] = tuple((name, _C(leads), _C(sup), _C(asp)) for name, (leads, sup, asp) in angles.items())
    return out


_ANGLES = _build_angles()

# Which angles read naturally for each sub-attribute (unlisted sub-attributes use every angle of the track).
_ANGLE_MAP: dict[str, tuple[str, ...]] = {
    "retail_and_commerce": ("details", "design", "choose", "background", "mistakes"),
    "home_objects_and_belongings": ("details", "design", "choose", "care", "mistakes", "background"),
    "vehicles_and_mobility": ("details", "choose", "care", "mistakes", "background"),
    "urban_environment_and_landmarks": ("details", "design", "background", "visit"),
    "workspace_and_institutions": ("details", "design", "use", "mistakes", "background"),
    "dining_and_food_activities": ("plan", "enjoy", "budget", "skill", "habit"),
    "social_and_community_gatherings": ("plan", "enjoy", "budget", "comfort", "habit"),
    "cultural_and_entertainment_outings": ("plan", "enjoy", "comfort", "budget"),
    "routines_and_errands": ("plan", "habit", "skill", "budget"),
    "travel_and_mobility_outings": ("plan", "enjoy", "comfort", "budget"),
    "home_life_and_indoor_hobbies": ("enjoy", "habit", "skill", "budget"),
}


def _angles_for(track: str, sub_attr: str | None) -> tuple:
    names = _ANGLE_MAP.get(sub_attr or "")
    angles = _ANGLES[track]
    if names:
        picked = tuple(a for a in angles if a[0] in names)
        if len(picked) >= 2:
            return picked
    return angles
_DOMAIN = {k: _C(v) for k, v in _DOMAIN_RAW.items()}

# --------------------------------------------------------------------------------------------------
# User turns
# --------------------------------------------------------------------------------------------------
_USER_LEADS_RAW: dict[str, list[str]] = {
    "identification": [
        "I've been paying more attention to {s} lately and I'm curious what people usually notice first.",
        "Is there a good way to make sense of {s} when everything looks kind of similar?",
        "Something about {s} always catches my eye, and I've never really known why.",
        "Quick question about {s}: how do people usually keep track of what's what?",
        "I've always wondered how much thought actually goes into {s}.",
        "I keep noticing {s} and wondering whether there's a logic to how things are set up.",
        "I'm trying to get better at noticing details, and {s} seemed like a good place to start.",
        "How can you tell whether someone takes good care of {s}?",
        "Do you know much about {t}? I've been curious about {s} in particular.",
        "I've been comparing some options related to {s} and I'm not sure what matters most.",
        "How would you describe what makes {s} [stand out|distinctive]?",
        "I've started noticing {s} everywhere, [which is funny|and now I can't stop]!",
        "Is it just me, or is there a lot of variety when it comes to {s}?",
        "What should I actually be looking at when it comes to {s}?",
    ],
    "experience": [
        "I've been getting into {s} more [often|lately] and I'd like to make it a regular thing.",
        "Do you have any thoughts on how to make {s} feel a bit less rushed?",
        "I've been thinking about {t} a lot, especially {s}.",
        "What makes {s} actually enjoyable rather than just something to tick off?",
        "I'm trying to plan things a bit better, and I keep coming back to {s}.",
        "Is there a trick to getting more out of {s}?",
        "How do people usually prepare for {s}?",
        "I'm looking for ways to make {s} a bit more relaxing.",
        "Can I ask you something about {t}? I keep going back and forth on it.",
        "Lately I've been wondering how to make the most of {s}.",
        "I'd love to get a bit better at {s} without turning it into a big project.",
        "What do you think makes {s} [worth it|so popular]?",
        "I really enjoyed {s} [recently|lately] and I'm already thinking about next time.",
        "I'm curious how other people approach {s}.",
    ],
    "document": [
        "I'm trying to get a better handle on {s} because the paperwork keeps piling up.",
        "How do people usually keep {s} organized without a complicated system?",
        "I never really know which parts of {s} I'm supposed to pay attention to.",
        "Is there a sensible way to keep track of things like {s}?",
        "I've been meaning to sort out how I deal with {s} for ages.",
        "Do you have any advice on reading {s} properly?",
        "I always end up hunting for {s} when I actually need it.",
        "What's the best way to store {s} so it's easy to find later?",
        "I'd like to get more organized about {t} in general.",
        "Can you help me think through how to handle {s}?",
        "I keep putting off dealing with {s}, and I know that's not ideal.",
        "Is it worth keeping {s}, or is that overkill?",
        "I find {s} [weirdly confusing|harder to read than it should be], honestly.",
        "What's the one thing people usually miss with {s}?",
    ],
}
_USER_LEADS_GENERIC = [
    "I've had {t} on my mind a lot [recently|lately].",
    "Random question, but what do you know about {s}?",
    "I'd love a bit of perspective on {s}.",
    "This might be a silly question, but I've been curious about {s}.",
    "I'm hoping you can help me think through something about {s}.",
    "So I've been thinking about {s} again.",
    "Can I pick your brain about {s} for a second?",
    "I have a [quick|small] question related to {t}.",
]
_USER_QUESTION_LEADS = [  # question-shaped leads, used right after a mention that opens the turn
    "Is there a good way to think about {s}?",
    "What's the best approach to {s}, in your opinion?",
    "How do people usually handle {s}?",
    "What should I keep in mind about {s}?",
    "Any general advice on {s}?",
    "Do people handle {s} the same way everywhere?",
    "What do you think matters most with {s}?",
    "Where would you start with {s}?",
]
_USER_CONTEXT_RAW: dict[str, list[str]] = {
    "generic": [
        "My partner thinks I'm overthinking it, but I'd like to get it right.",
        "I'm usually pretty disorganized about this kind of thing.",
        "A friend suggested I ask around before deciding anything.",
        "It's one of those things I keep meaning to look into properly.",
        "I've read a bit online but the advice is all over the place.",
        "Honestly, I just want something simple that works for me.",
        "I tend to get excited about new things and then lose steam, so I'm trying to be realistic.",
        "My family teases me about how much I care about this stuff.",
        "I don't have a lot of spare time, so practical ideas would be great.",
        "I'm a complete beginner, so please don't assume I know the basics.",
        "I've picked up some habits over time but never really questioned them.",
        "Work has been busy, so I want to keep things low effort.",
        "My roommate and I have completely different opinions about it.",
        "I like to understand the reasoning behind things rather than just following rules.",
        "It came up in conversation with a coworker and I realized I didn't really know.",
        "I'm trying to be a bit more intentional about how I spend my time.",
        "I get a little overwhelmed when there are too many choices.",
        "I want to do it properly this time instead of improvising.",
        "It's a small thing, but it's been bugging me.",
        "I've noticed I enjoy things more when I understand what I'm looking at.",
        "My sister is much better at this than me, so I'm trying to catch up.",
        "I'm not in a rush, I just like learning how these things work.",
        "It feels like everyone else already knows this stuff.",
        "I'd rather ask now than figure it out the hard way.",
    ],
    "identification": [
        "I walk past this kind of thing all the time without really looking.",
        "I like noticing the little details in everyday places.",
        "I've started paying closer attention to how things are arranged.",
        "I'm the kind of person who reads every label.",
        "I've been taking more photos of ordinary things, which has made me notice more.",
        "Some of it looks very similar to me, which is half the problem.",
    ],
    "experience": [
        "It's become one of my favorite ways to unwind.",
        "I'd like it to feel less like an errand and more like a treat.",
        "I usually go with friends, but sometimes I go on my own.",
        "I want to enjoy it more and worry less about the logistics.",
        "It's been a nice way to get out of the house.",
        "I'm trying to do more things that aren't just work and chores.",
    ],
    "document": [
        "I have a drawer full of papers that I keep promising to sort out.",
        "I'm trying to go more paperless, but I'm not sure what to keep.",
        "I've been burned before by missing something in the fine print.",
        "My system right now is basically a pile on the kitchen counter.",
        "Half of it is in my email and half of it is on paper, which doesn't help.",
        "I only ever look at this stuff when something goes wrong.",
    ],
}
_USER_CLOSERS = [
    "What would you focus on first?",
    "Is there anything I should watch out for?",
    "Does that sound like a reasonable approach, or am I missing something?",
    "Any advice would be really appreciated.",
    "How would you approach it?",
    "What do people usually get wrong about it?",
    "Where would you start?",
    "Is there a simple rule of thumb I could follow?",
    "What's the most useful thing to know here?",
    "Do you have any suggestions?",
    "Any tips on {a}?",
    "Could you explain a bit about {a}?",
    "I'd love some pointers on {a}.",
    "What's your take on {a}?",
]
_USER_ASPECTS: dict[str, list[str]] = {
    "identification": ["what to look for", "how to tell things apart", "keeping it organized",
                       "what the details usually mean", "choosing between options", "looking after it properly"],
    "experience": ["planning it better", "making it more relaxing", "keeping it affordable", "making it a habit",
                   "getting better at it", "what to bring along"],
    "document": ["keeping track of it all", "what to keep and what to toss", "reading the fine print",
                 "staying on top of deadlines", "storing it safely", "spotting mistakes"],
}
_USER_SUBQ_RAW: dict[str, list[str]] = {
    "generic": [
        "Is that normal, or am I overthinking it?",
        "Do most people even bother with this?",
        "Should I be paying attention to anything specific?",
        "Does it make a big difference in practice?",
        "Is there a right way to do it, or is it mostly personal preference?",
        "Am I missing something obvious?",
        "Is it worth putting much effort into?",
        "How much does it really matter?",
    ],
    "identification": [
        "How can you tell the good ones from the rest?",
        "Is there a way to tell what's what at a glance?",
        "Why do they all seem to be set up so differently?",
    ],
    "experience": [
        "Is it better to go with a plan or just wing it?",
        "Is it more fun with a group or on your own?",
        "How do people keep it from feeling repetitive?",
    ],
    "document": [
        "How long should I hang on to this kind of thing?",
        "Is a paper copy still worth keeping?",
        "Which parts actually matter if something goes wrong?",
    ],
}
_MENTION_CONNECTORS = ("Oh, and ", "By the way, ", "Also, ", "For context, ", "Funny enough, ", "Anyway, ",
                       "Actually, ", "Side note, ")
_GREETINGS = ("Hi!", "Hey there.", "Hello!", "Hi, hope you can help.", "Hey!", "Hi there!", "Hello again.",
              "Hey, quick one.", "Hi, I could use some advice.", "Good to chat again.")
_OPENING_LEADS = _C([
    "I wanted to ask you about {s}.",
    "I've got a question about {t}, specifically {s}.",
    "Can we talk about {s} for a bit?",
    "I've been meaning to ask someone about {s}.",
    "I'm hoping to learn a bit more about {s}.",
    "I'd like your help with something related to {t}.",
])

_USER_LEADS = {k: _C(v + _USER_LEADS_GENERIC) for k, v in _USER_LEADS_RAW.items()}
_USER_QLEADS = _C(_USER_QUESTION_LEADS)
_USER_CONTEXT = {k: _C(v + _USER_CONTEXT_RAW["generic"]) for k, v in _USER_CONTEXT_RAW.items() if k != "generic"}
_USER_CLOSE = _C(_USER_CLOSERS)
_USER_SUBQ = {k: _C(v + _USER_SUBQ_RAW["generic"]) for k, v in _USER_SUBQ_RAW.items() if k != "generic"}

# --------------------------------------------------------------------------------------------------
# Image mentions (shared by evidence and haystack turns)
# --------------------------------------------------------------------------------------------------
_MENTIONS: dict[str, tuple[str, ...]] = {
    "photo": (
        "I took a picture of {thing} <image>",
        "Here's {thing} <image> from {when}",
        "I snapped {thing} <image>",
        "I grabbed a quick photo of {thing} <image>",
        "Here's a shot of {thing} <image>",
        "I managed to get a photo of {thing} <image> from {when}",
        "Sharing {thing} <image> from {when}",
        "This is what {thing} <image> looked like",
        "I couldn't resist photographing {thing} <image>",
        "I caught {thing} <image> on camera",
        "Here's a photo of {thing} <image> from {when}",
        "I took this shot of {thing} <image>",
    ),
    "screenshot": (
        "I took a screenshot of {thing} <image>",
        "Here's a screenshot of {thing} <image>",
        "I screenshotted {thing} <image> from {when}",
        "This is {thing} <image> on my phone",
        "Here's what {thing} <image> shows",
        "I saved {thing} <image> as a screenshot",
        "Sharing a screenshot of {thing} <image> from {when}",
        "I grabbed a screenshot of {thing} <image>",
    ),
    "document": (
        "Here's {thing} <image>",
        "I scanned {thing} <image>",
        "I kept {thing} <image> from {when}",
        "This is {thing} <image> I've been holding on to",
        "I photographed {thing} <image> so I wouldn't lose it",
        "Here's a photo of {thing} <image> from {when}",
        "I found {thing} <image> in my bag",
        "Attaching {thing} <image> for reference",
        "I snapped {thing} <image> before filing it away",
    ),
}
MENTION_KINDS = tuple(_MENTIONS)

# --------------------------------------------------------------------------------------------------
# Filler (text-only, general assistant) conversations
# --------------------------------------------------------------------------------------------------
_FILLER_RAW: dict[str, dict[str, list[str]]] = {
    "coding": {
        "subjects": [
            "reading a large file in Python", "writing unit tests for a small library",
            "handling errors in a command line script", "using list comprehensions",
            "organizing a small web project", "speeding up a slow loop", "parsing text with regular expressions",
            "using git branches for features", "structuring classes in an object oriented design",
            "naming functions and variables", "querying a database with joins", "tracking down a memory leak",
            "making an HTTP request and handling the response", "refactoring a long function",
        ],
        "open": [
            "Can you help me with {x}? I keep getting stuck and my code ends up messy.",
            "I'm learning to program and I'm confused about {x}. What's the right way to think about it?",
            "What are the best practices for {x}?",
            "I'm working on a side project and need some advice on {x}.",
            "My code works but feels clumsy. Any guidance on {x}?",
        ],
        "body": [
            "The most reliable starting point for {x} is to write the smallest example that does what you want, then grow it step by step.",
            "It helps to separate the part of the code that gathers input from the part that does the actual work, because each becomes much easier to test.",
            "Descriptive names for variables and functions do more for readability than almost any clever trick.",
            "When something behaves unexpectedly, printing intermediate values or stepping through with a debugger usually reveals the problem faster than rereading the code.",
            "Most languages have a standard library function for common tasks, so it's worth checking the documentation before writing your own helper.",
            "Automated tests act like a safety net, letting you change the implementation later with much more confidence.",
            "Avoid optimizing too early; measure with a profiler first, because the slow part is rarely where you expect it to be.",
            "Keeping functions short and focused on a single job makes them easier to reuse and reason about.",
            "Error messages are more helpful than they look, and reading the full traceback from the bottom up often points straight to the cause.",
            "Version control is your friend here, since small, frequent commits make it easy to undo a change that didn't work out.",
            "If you find yourself copying and pasting the same block, that's usually a sign it belongs in its own function.",
            "Comments are most valuable when they explain why the code does something, not what it does line by line.",
            "Handling edge cases such as empty input, missing files or unexpected types early keeps the rest of the logic clean.",
            "Reading well maintained open source projects is a great way to pick up idiomatic patterns for {x}.",
        ],
    },
    "writing": {
        "subjects": [
            "a cover letter for a design job", "the opening of a short story", "a persuasive essay about public transport",
            "a polite email to my landlord", "a toast for a friend's wedding", "a blog post introduction",
            "a product description for handmade candles", "editing a report for clarity",
            "a personal statement for a university application", "a short poem about the sea",
            "a thank you note to a mentor", "a newsletter for a community group",
        ],
        "open": [
            "Could you help me with {x}? I have some ideas but can't get the tone right.",
            "I'm working on {x} and I'm stuck on how to start.",
            "What makes {x} really effective?",
            "Can you give me some advice on {x}? I want it to sound natural.",
            "I need to put together {x} and I'm not much of a writer. Where do I begin?",
        ],
        "body": [
            "The strongest pieces usually start by knowing exactly who the reader is and what you want them to feel or do.",
            "A concrete detail or short anecdote at the beginning tends to draw people in far better than a general statement.",
            "Reading your draft out loud is one of the quickest ways to catch clunky sentences and awkward rhythm.",
            "Cutting words is often more powerful than adding them, so look for sentences that repeat a point already made.",
            "Active verbs make writing feel more direct and energetic than long chains of adjectives.",
            "It helps to write a rough version quickly and then revise, rather than trying to make every sentence perfect the first time.",
            "A clear structure, with each paragraph doing a single job, makes even a complex message easy to follow.",
            "Matching the tone to the situation matters: warm and personal for a toast, crisp and confident for a cover letter.",
            "Ending with a clear takeaway or call to action gives the reader something to hold on to.",
            "Specific examples are more persuasive than broad claims, because they let the reader see the point for themselves.",
            "Varying sentence length keeps the text lively and helps important points stand out.",
            "Asking a friend to read it cold often reveals gaps that are invisible to you as the writer.",
            "For {x}, it's worth brainstorming several possible opening lines and choosing the one with the most energy.",
        ],
    },
    "history": {
        "subjects": [
            "the printing press and its impact", "the Silk Road trade routes", "the fall of the Roman Republic",
            "the Industrial Revolution in Britain", "how the Egyptian pyramids were built", "the Renaissance in Florence",
            "the history of tea", "the Hanseatic League", "the invention of the telegraph", "the Meiji Restoration",
            "the spread of coffeehouses in Europe", "the history of public libraries",
        ],
        "open": [
            "Can you explain {x} in simple terms?",
            "I've always been curious about {x}. What are the main things to understand?",
            "I'm reading about {x} and getting lost in the details. Can you give me the big picture?",
            "Why was {x} so important?",
            "I have a presentation coming up on {x}. What should I definitely include?",
        ],
        "body": [
            "Historians usually approach {x} by looking at economic, political and cultural factors together, since none of them explains everything alone.",
            "It's helpful to remember that people at the time rarely saw events as turning points; that framing usually comes later.",
            "Trade and technology spread ideas as much as goods, which is why changes in a single place could ripple out so far.",
            "Primary sources such as letters, ledgers and official records give a much richer picture than summaries do.",
            "Many popular stories about {x} are simplified, and the real picture involves more gradual change and more people.",
            "Geography played a huge role, shaping which routes were practical and which regions could grow wealthy.",
            "The consequences were uneven, bringing opportunity for some groups and hardship for others.",
            "Looking at everyday life, like food, work and housing, makes big historical shifts feel much more concrete.",
            "Ideas rarely appear out of nowhere, and most breakthroughs built on earlier experiments and traditions.",
            "Debates among historians are still lively, especially about how much credit individual leaders deserve compared with broader forces.",
            "Museums and documentaries are a great complement to reading, since they show objects and places directly.",
            "A good way to remember the key points is to sketch a simple chain of causes and effects.",
        ],
    },
    "science": {
        "subjects": [
            "how photosynthesis works", "what black holes are", "plate tectonics", "how vaccines train the immune system",
            "why rainbows form", "the water cycle", "how DNA is copied", "why the sky looks blue",
            "how batteries store energy", "what causes ocean tides", "the difference between weather and climate",
            "how antibiotics work",
        ],
        "open": [
            "Can you explain {x} like I'm a curious adult with no science background?",
            "I've always wondered about {x}. How does it actually work?",
            "My kid asked me about {x} and I realized I couldn't explain it. Can you help?",
            "What's the simplest accurate explanation of {x}?",
            "I'm revising some basic science. Could you go over {x}?",
        ],
        "body": [
            "At its core, {x} is about energy and matter moving from one form or place to another.",
            "A useful analogy is a busy factory, where each station performs a specific step and passes the result along.",
            "Scientists built up this understanding gradually, through experiments that tested predictions and ruled out alternatives.",
            "Many misconceptions come from everyday language, where words like energy or theory mean something looser than they do in science.",
            "Small effects can add up enormously over long periods, which is why slow processes can reshape entire landscapes.",
            "Models in science are simplifications, useful because they capture the most important behavior rather than every detail.",
            "Careful measurement is central, because it is what allows competing explanations to be tested fairly.",
            "It's still an active field, and new instruments keep refining the picture.",
            "If you want to see it for yourself, there are simple home experiments that illustrate the basic principle.",
            "Understanding the underlying principle makes it easier to see connections with other topics, from cooking to weather.",
            "Good popular science books and university lecture videos can take you much deeper if you're curious.",
            "The key idea to hold on to is cause and effect: each stage sets up the conditions for the next.",
        ],
    },
    "cooking": {
        "subjects": [
            "a hearty vegetarian chili", "roasting vegetables so they get crispy", "homemade pizza dough",
            "a simple lentil soup", "a versatile stir fry sauce", "fluffy pancakes", "quick pickled onions",
            "a basic tomato sauce", "a creamy risotto", "crispy roast potatoes", "a simple curry from scratch",
            "a fruit crumble",
        ],
        "open": [
            "Do you have a good approach for {x}?",
            "I'd like to make {x} soon. Any tips?",
            "My attempts at {x} always turn out a bit bland. What am I doing wrong?",
            "Can you walk me through {x}?",
            "I'm cooking for friends and want to try {x}. How do I make it foolproof?",
        ],
        "body": [
            "The biggest improvement for {x} usually comes from seasoning in stages rather than all at the end.",
            "Getting the pan properly hot before adding ingredients gives better color and flavor.",
            "Giving ingredients enough space, rather than crowding them, helps them brown instead of steam.",
            "A splash of acid, such as lemon juice or vinegar, brightens flavors that taste flat.",
            "Toasting spices briefly in oil releases much more aroma than adding them straight to liquid.",
            "Tasting as you go is the single most useful habit in the kitchen.",
            "Good texture often comes from contrast, so a crunchy topping or fresh herbs at the end make a big difference.",
            "Preparing and measuring everything before you start keeps things calm once the heat is on.",
            "Letting dough or meat rest at the right moments improves the final texture more than people expect.",
            "Delicate herbs are best added at the end, while hardy ones like rosemary and thyme can cook longer.",
            "If a dish turns out too salty, adding more of the unsalted base or a little acid can rescue it.",
            "Leftovers often taste even better the next day, once the flavors have had time to meld.",
        ],
    },
    "study": {
        "subjects": [
            "learning calculus on my own", "preparing for a history exam", "learning Spanish as an adult",
            "studying for a driving theory test", "improving my reading speed", "getting started with statistics",
            "preparing for a technical interview", "memorizing vocabulary", "writing a research paper",
            "learning music theory", "studying while working full time", "getting back into studying after a long break",
        ],
        "open": [
            "Can you help me make a study plan for {x}?",
            "I've been {x} and I feel like I'm not making progress. Any advice?",
            "What's the most effective way to approach {x}?",
            "I keep procrastinating on {x}. How do I structure it so I actually stick with it?",
        ],
        "body": [
            "The most effective study plans combine short, regular sessions with occasional longer reviews.",
            "Active recall, such as testing yourself before looking at the answer, builds much stronger memory than rereading.",
            "Spacing your practice over time, rather than cramming, helps information stick for the long term.",
            "Breaking a big goal into themes for each week makes progress visible and keeps motivation up.",
            "Explaining a concept in your own words, as if teaching it, quickly reveals the gaps in your understanding.",
            "Mixing different types of problems in a single session feels harder but leads to better learning.",
            "A consistent time and place for study reduces the effort needed to get started.",
            "Keeping a short log of what you covered and what confused you makes each session more focused.",
            "Sleep and breaks are part of learning, since the brain consolidates new material during rest.",
            "Practice materials that mirror the real test or task are especially valuable as you get closer to it.",
            "Study groups or a study partner can add accountability and fresh perspectives.",
            "It's normal for progress to feel uneven, and plateaus often come just before a breakthrough.",
        ],
    },
    "travel": {
        "subjects": [
            "a rainy city break", "a hiking holiday in the mountains", "a food focused trip", "traveling on a tight budget",
            "a slow train journey across the country", "visiting the coast in the off season", "traveling with a toddler",
            "a first solo trip", "a long weekend in a new city", "a cycling tour through wine country",
            "a trip to see the northern lights", "a camping road trip",
        ],
        "open": [
            "I'm thinking about {x}. Do you have any ideas?",
            "Can you help me brainstorm {x}?",
            "What should I keep in mind when planning {x}?",
            "I've never done {x} before. Where do I even begin?",
            "My friends and I are considering {x}. What would make it great?",
        ],
        "body": [
            "For {x}, it helps to pick a rough theme or a handful of priorities so the planning doesn't become overwhelming.",
            "Staying in a central, walkable area often saves both time and transport costs.",
            "Local markets, bakeries and neighborhood cafes are great for experiencing a place without spending much.",
            "Booking transport and accommodation early usually gets better prices, while keeping activities flexible.",
            "Building rest into the itinerary keeps the trip enjoyable rather than exhausting.",
            "Museums, covered markets and cozy cafes make excellent plans for a day with bad weather.",
            "Reading a little about local customs and learning some phrases in the local language goes a long way.",
            "Packing versatile layers means you can handle changing weather without overfilling your bag.",
            "Travel insurance and digital copies of important documents are small steps that prevent big headaches.",
            "Talking to locals, whether hosts, shopkeepers or guides, often leads to the best recommendations.",
            "Public transport passes can be good value if you plan to move around a lot.",
            "Leaving some time unplanned makes room for the unexpected discoveries that make a trip memorable.",
        ],
    },
    "career": {
        "subjects": [
            "asking for a raise", "switching careers into data analysis", "preparing for a job interview",
            "writing a resume summary", "negotiating a hybrid work arrangement", "dealing with a difficult manager",
            "building a portfolio", "networking as an introvert", "getting promoted", "starting a freelance business",
            "returning to work after a career break", "giving feedback to a colleague",
        ],
        "open": [
            "I'd love some advice on {x}.",
            "How should I approach {x}?",
            "I'm nervous about {x}. What are some practical steps?",
            "What do people usually get wrong about {x}?",
            "I've been putting off {x} for a while. How do I get started?",
        ],
        "body": [
            "For {x}, preparation is your biggest advantage, so gather concrete examples of your work beforehand.",
            "Framing your case around the value you bring, rather than what you need, tends to land better.",
            "Practicing key points out loud, even alone, makes you sound calmer and more confident.",
            "Researching the organization or person you're dealing with helps you tailor your message.",
            "It's worth anticipating the likely objections and thinking through calm, honest responses.",
            "Small, consistent steps like updating your profile or reaching out to people gradually add up over time.",
            "Asking thoughtful questions shows interest and often reveals useful information.",
            "Following up politely after an important conversation keeps things moving and shows professionalism.",
            "A mentor or trusted colleague can give you honest feedback that's hard to get elsewhere.",
            "Transferable skills, such as communication and problem solving, are often more persuasive than job titles.",
            "Setbacks are common, and treating them as information rather than verdicts makes them easier to handle.",
            "Documenting your achievements as they happen makes future conversations much easier.",
        ],
    },
    "finance": {
        "subjects": [
            "building an emergency fund", "understanding index funds", "choosing a budgeting method",
            "avoiding impulse purchases", "comparing savings accounts", "paying off credit card debt",
            "saving for a big trip", "understanding compound interest", "splitting bills with a partner",
            "setting financial goals",
        ],
        "open": [
            "Can you explain the basics of {x}?",
            "I'm trying to get better with money. Any advice on {x}?",
            "What's a sensible approach to {x}?",
            "I feel a bit clueless about {x}. Where should I start?",
        ],
        "body": [
            "A good first step with {x} is getting a clear picture of where your money currently goes.",
            "Automating savings, so money moves before you have a chance to spend it, makes consistency much easier.",
            "Simple systems tend to last longer than complicated spreadsheets that take ages to maintain.",
            "It's wise to keep short term savings somewhere safe and accessible, separate from everyday spending.",
            "Fees quietly erode returns, so comparing them carefully is worth the effort.",
            "A waiting period before non essential purchases helps separate real needs from passing wants.",
            "Diversification reduces the risk of any single investment having an outsized impact.",
            "Talking openly about money with a partner or family prevents misunderstandings later.",
            "Reviewing your plan periodically keeps it aligned with changes in your life.",
            "Reputable personal finance books and official consumer guidance are better sources than social media tips.",
            "Paying down high interest debt first usually gives the best guaranteed return.",
            "Clear, specific goals make it much easier to stay motivated.",
        ],
    },
    "wellbeing": {
        "subjects": [
            "building a running habit", "improving my sleep", "stretching for desk workers", "drinking more water",
            "starting strength training", "reducing screen time in the evening", "eating more vegetables",
            "managing stress at work", "walking more during the day", "building a calmer start to the day",
        ],
        "open": [
            "I'd like some help with {x}.",
            "Do you have practical tips for {x}?",
            "I keep failing at {x}. How do I make it stick this time?",
            "What's a realistic plan for {x}?",
        ],
        "body": [
            "Habits stick best when they start small enough that skipping them feels silly.",
            "Pairing a new habit with an existing one, like stretching after brushing your teeth, makes it automatic faster.",
            "Tracking consistency rather than intensity keeps the focus on showing up.",
            "Preparing your environment, such as laying out shoes or keeping a water bottle on your desk, removes friction.",
            "Progress is rarely linear, so a missed day is just a blip rather than a failure.",
            "Rest and recovery are as important as effort, especially when you're starting out.",
            "It's sensible to check with a health professional before making big changes, particularly with any existing conditions.",
            "Enjoyment matters, and choosing activities you genuinely like makes them sustainable.",
            "A consistent wind down routine in the evening signals to your body that it's time to rest.",
            "Small swaps, rather than strict rules, usually lead to longer lasting change.",
            "Noticing how you feel after a good day helps reinforce the habit.",
            "Getting a friend involved adds accountability and makes it more fun.",
        ],
    },
    "language": {
        "subjects": [
            "the difference between affect and effect", "using semicolons correctly", "when to use the passive voice",
            "phrasal verbs in English", "the subjunctive mood in Spanish", "writing more concise sentences",
            "when to use who versus whom", "the difference between fewer and less", "common comma mistakes",
            "building a bigger vocabulary",
        ],
        "open": [
            "Can you explain {x}? I always get confused.",
            "I'm an English learner and I struggle with {x}. Could you help?",
            "What's an easy way to remember {x}?",
            "My editor keeps flagging {x}. What's the rule?",
        ],
        "body": [
            "The easiest way to remember {x} is to anchor it to a handful of clear example sentences.",
            "Grammar rules are really descriptions of how careful writers tend to use the language.",
            "Reading widely exposes you to patterns that eventually start to feel natural.",
            "When in doubt, rewriting the sentence to avoid the tricky construction is perfectly acceptable.",
            "Style guides sometimes disagree, so consistency within a piece matters more than any single rule.",
            "Saying a sentence aloud often reveals whether the structure sounds right.",
            "Learners often overthink these distinctions, yet native speakers mix them up too.",
            "Keeping a personal list of confusing words along with examples makes a great reference.",
            "Context usually makes the meaning clear, even when the grammar is informal.",
            "Practicing with short exercises is more effective than memorizing long explanations.",
            "Spoken language tends to be more flexible than formal writing, so the right choice depends on the setting.",
        ],
    },
    "gardening": {
        "subjects": [
            "growing tomatoes on a balcony", "starting a compost bin", "pruning roses",
            "attracting pollinators to a small garden", "keeping a lawn healthy in dry weather", "growing herbs indoors",
            "dealing with slugs naturally", "planning a vegetable bed", "caring for fruit trees",
            "choosing plants for a shady corner",
        ],
        "open": [
            "Do you have advice on {x}?",
            "I'm new to gardening. How do I go about {x}?",
            "What are the basics of {x}?",
            "I tried {x} before and it didn't go well. What should I do differently?",
        ],
        "body": [
            "Healthy soil is the foundation of almost everything in the garden, so adding compost is rarely wasted effort.",
            "Watering deeply but less often encourages roots to grow down rather than staying near the surface.",
            "Choosing plants that suit your light and climate saves a lot of frustration.",
            "Mulch helps keep moisture in, suppresses weeds and protects roots from temperature swings.",
            "Observing your space through the seasons shows you where sun and shade really fall.",
            "Native flowering plants are one of the best ways to support local wildlife.",
            "Removing dead or damaged growth helps plants put their energy into healthy new shoots.",
            "Checking plants regularly makes it easy to catch pests before they become a problem.",
            "Containers dry out faster than beds, so they usually need more frequent attention.",
            "Keeping a simple garden diary helps you learn what worked and what didn't.",
            "Patience is part of gardening, and many plants settle in slowly before they really thrive.",
        ],
    },
    "tech": {
        "subjects": [
            "speeding up an old laptop", "setting up a home network", "backing up family photos",
            "choosing a password manager", "organizing files on my computer", "protecting my accounts from phishing",
            "using spreadsheet formulas", "setting up a new phone", "fixing slow wifi", "cleaning up my email inbox",
        ],
        "open": [
            "Can you help me with {x}?",
            "I'm not very technical. What's the easiest way to handle {x}?",
            "What's the best approach to {x}?",
            "I've been meaning to sort out {x}. Where do I start?",
        ],
        "body": [
            "A good starting point for {x} is to make a backup, so nothing important is at risk while you experiment.",
            "Removing programs that start automatically is one of the simplest ways to make a computer feel faster.",
            "Keeping software updated fixes security holes and often improves performance.",
            "Unique passwords for each account, stored in a manager, are the single biggest security upgrade most people can make.",
            "Multi factor authentication adds strong protection even if a password leaks.",
            "A clear folder structure with consistent names makes files much easier to find later.",
            "Router placement matters, so a central, elevated spot away from thick walls usually improves coverage.",
            "Automatic backups are far more reliable than remembering to copy files manually.",
            "Suspicious messages often create a sense of urgency, which is a good signal to slow down and verify.",
            "Restarting devices occasionally clears out temporary issues that build up over time.",
            "Built in help pages and official support forums usually have step by step guides for common problems.",
        ],
    },
    "philosophy": {
        "subjects": [
            "the basic ideas of Stoicism", "the trolley problem", "utilitarianism", "the debate about free will",
            "what makes a good life according to Aristotle", "the ship of Theseus puzzle", "existentialism",
            "the ethics of eating meat",
        ],
        "open": [
            "Can you give me an introduction to {x}?",
            "I've heard people mention {x}. What's it about?",
            "What are the main arguments around {x}?",
            "I'm reading about {x} and finding it dense. Can you summarize it?",
        ],
        "body": [
            "A helpful way into {x} is to focus on the central question it tries to answer rather than the jargon.",
            "Philosophers often use thought experiments to isolate a single intuition and test it.",
            "Different traditions can reach surprisingly similar practical advice from very different starting points.",
            "It's useful to distinguish between describing how people actually behave and arguing how they should behave.",
            "Many classic arguments have well known objections, and reading both sides sharpens your own view.",
            "Applying the ideas to everyday decisions makes abstract debates feel much more concrete.",
            "There is rarely a single accepted answer, which is part of what keeps these questions alive.",
            "Short introductory books and lecture series are a great way to explore further without getting lost.",
            "Clarifying definitions early avoids a lot of confusion later in the discussion.",
            "Discussing the ideas with others often reveals assumptions you didn't know you held.",
        ],
    },
}
_FILLER_OPENERS = _C([
    "Sure, happy to help with {x}.",
    "Great question.",
    "Good question, and it's one that trips a lot of people up.",
    "Absolutely, let's go through it.",
    "Here's a practical way to think about {x}.",
    "[Of course|Sure thing]. Let me break it down.",
    "That's a great thing to work on.",
    "Happy to help. Here's an overview.",
    "Good thinking to ask about this early.",
    "Let's tackle it piece by piece.",
])
_FILLER_FOLLOW_OPENERS = _C([
    "Sure.", "Good follow up.", "That's a fair question.", "Absolutely.", "Of course.", "Yes, definitely.",
    "Great, let's build on that.", "Happy to expand on it.", "Good point to dig into.", "Certainly.",
])
_FILLER_CLOSERS = _C([
    "If you'd like, I can go through a worked example.",
    "Let me know if you want me to expand on any of these points.",
    "Would you like me to tailor this to your situation?",
    "Happy to go deeper on any part of this.",
    "I can also suggest some resources if that would help.",
    "Feel free to share what you've tried so far and I can give more specific feedback.",
    "Would a short checklist version of this be useful?",
    "Let me know how it goes, and we can adjust from there.",
])
_FILLER_GENERIC = _C([
    "The main thing is to start with something manageable and build from there.",
    "It's completely normal for this to feel confusing at first.",
    "Different people will find different approaches work best, so a bit of experimentation is healthy.",
    "Keeping notes as you go makes it much easier to see what's working.",
    "Consistency tends to matter more than intensity here.",
    "It's worth revisiting the basics every so often, since they're easy to drift away from.",
    "If something feels off, it usually helps to step back and simplify.",
    "Getting feedback from someone experienced can save a lot of trial and error.",
    "Small improvements compound over time, so don't underestimate modest progress.",
    "The best approach is usually the one you'll actually stick with.",
    "It can also help to look at how others have handled {x} and borrow what fits.",
    "Try not to aim for perfection straight away; a solid first version is far more valuable.",
    "Breaking the task into smaller steps makes it much less daunting.",
    "A good rule of thumb is to make changes gradually and watch the effect of each.",
    "When you get stuck, explaining the problem to someone else often reveals the answer.",
    "Setting aside regular time for it, even briefly, helps keep momentum.",
    "Remember that most experts were once beginners who simply kept practicing.",
    "There's no single right answer here, and trade offs are part of the picture.",
    "Reflecting on what went well, not just what went wrong, keeps motivation up.",
    "Over time the process becomes far more intuitive than it seems right now.",
    "It often helps to write down what you want to achieve before deciding how to go about it.",
    "Patience pays off here, since the early stages are usually the slowest.",
    "A quick review after each attempt tells you more than any amount of planning beforehand.",
    "If you only remember one thing, make it the habit of checking your assumptions.",
    "Most of the common pitfalls come from rushing, so giving yourself a little extra time helps.",
    "It's fine to adapt general advice to your own circumstances rather than following it to the letter.",
    "Learning from worked examples is often faster than starting from abstract principles.",
    "Clarity about your goal makes every later decision easier.",
    "Asking why something works, not just how, leads to much deeper understanding.",
    "Being kind to yourself about mistakes keeps the process enjoyable and sustainable.",
    "A fresh look the following day often reveals improvements you couldn't see before.",
    "Comparing a few different sources helps you separate solid advice from personal opinion.",
    "The details matter, but only once the overall structure is in place.",
    "Sharing your progress with someone else is a surprisingly effective motivator.",
    "You don't need special tools to begin; the basics will take you a long way.",
    "It's often the simplest version of an idea that turns out to be the most useful.",
])
_FILLER_USER_FOLLOW = _C([
    "Thanks, that's helpful. Could you give me a concrete example?",
    "That makes sense. What would you change for a complete beginner?",
    "Interesting. How does that compare with other approaches?",
    "What are the most common mistakes people make with {x}?",
    "Could you summarize the main points in a shorter form I can keep as notes?",
    "What resources would you recommend if I want to learn more?",
    "How would this change if I only had a little time to spare?",
    "Okay, I think I get it. Can you go a bit deeper on the first point?",
    "This is great. Is there anything I should avoid?",
    "Could you explain that part again in simpler terms?",
    "Thanks! How would I know if I'm doing it right?",
    "Can you suggest a simple plan for getting started?",
    "That's really useful. What would an expert do differently?",
    "Does this apply in every situation, or are there exceptions?",
    "I tried something like that before and got frustrated. Any advice on sticking with it?",
    "Got it. What should I focus on after that?",
])
_FILLER_USER_FOLLOW_EXPLAIN = _C([
    "Interesting! Could you give me a concrete example?",
    "What's a common misconception about {x}?",
    "How do we actually know this?",
    "Could you explain that part again in simpler terms?",
    "What resources would you recommend if I want to learn more?",
    "How does this connect to things we see today?",
    "Could you summarize the main points in a shorter form I can keep as notes?",
    "Who were the key people or ideas involved?",
    "Is there still debate about any of this?",
    "That's fascinating. What's the part most people get wrong?",
    "Okay, that makes sense. Can you go a bit deeper on the first point?",
    "How would you explain this to a teenager?",
])
_EXPLAIN_DOMAINS = frozenset({"history", "science", "philosophy", "language"})
_FILLER_SWITCH = _C([
    "Thanks, that's really helpful. Switching topics for a second.",
    "Great, thank you! Something unrelated now.",
    "Appreciate it. I have another question on a different subject.",
    "Perfect, thanks. Totally different question.",
    "That helps a lot. Can I ask about something else?",
    "Thanks! While I have you, there's something else I wanted to ask.",
    "Got it, thank you. Changing the subject a bit.",
    "Nice, that's clear now. Different topic though.",
])
_FILLER = {
    name: {
        "subjects": tuple(d["subjects"]),
        "open": _C(d["open"]),
        "body": _C(d["body"]),
        "explain": name in _EXPLAIN_DOMAINS,
    }
    for name, d in _FILLER_RAW.items()
}
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
    toks = text.split()[:max(1, n)]
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
) -> str:
    """Acknowledge (1-2 sentences), substance on 1-2 key points, one knowledge-oriented question.

    The whole reply has between ``words[0]`` and ``words[1]`` whitespace tokens. No digits, no
    ``<image>``: the subtopic, topic and acknowledgement hint are scrubbed of both before use.
    """
    _check_track(track)
    lo, hi = _check_words(words)
    slots = _slots(topic_title, subtopic)
    ack = _clean(acknowledge).strip(" .!?;:,") if acknowledge else ""
    slots["ack"], slots["Ack"] = ack, _cap(ack)
    keep_case = slots["sub"][:1].isupper()

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
    domain = _shuffled(rng, _DOMAIN.get(sub_attr, ()))[:rng.randint(2, 4)]
    cands: list[list] = []
    for i, angle in enumerate(chosen):
        sup = _shuffled(rng, angle[2])
        for d in domain[i::len(chosen)]:
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
    return rng.choices([l for l, _ in layouts], weights=[w for _, w in layouts], k=1)[0]


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
    subq = _shuffled(rng, _USER_SUBQ[track])[:rng.randint(0, 2)]
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
        elif kind in items and items[kind]:
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
    rng: random.Random, *, kind: str, thing: str, when: str | None = None, tail: str | None = None, require_when: bool = False
) -> str:
    """Fill a mention template: ``thing`` (e.g. "the receipt from lunch"), optional ``when`` and
    ``tail`` (a clause appended after the image, e.g. "and I'm trying to keep my spending in check").
    Returns a sentence ending in punctuation."""
    options = [t for t in mention_templates(kind) if (when or "{when}" not in t)
               and (not require_when or "{when}" in t)]
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
        "user_leads": tuple({id(t): t for v in _USER_LEADS.values() for t in v}.values()) + _USER_QLEADS + _OPENING_LEADS,
        "user_context": tuple({id(t): t for v in _USER_CONTEXT.values() for t in v}.values()),
        "user_closers": _USER_CLOSE,
        "mentions": tuple(t for v in _MENTIONS.values() for t in v),
        "filler_user": tuple(t for d in _FILLER.values() for t in d["open"]) + _FILLER_USER_FOLLOW
        + _FILLER_USER_FOLLOW_EXPLAIN + _FILLER_SWITCH,
        "filler_assistant": tuple(t for d in _FILLER.values() for t in d["body"]) + _FILLER_GENERIC
        + _FILLER_OPENERS + _FILLER_FOLLOW_OPENERS + _FILLER_CLOSERS,
    }
    out = {k: len(v) for k, v in banks.items()}
    out.update({k + "_variants": sum(_variants(t) for t in v) for k, v in banks.items()})
    out["total"] = sum(len(v) for v in banks.values())
    out["filler_subjects"] = sum(len(d["subjects"]) for d in _FILLER.values())
    out["filler_domains"] = len(_FILLER)
    return out
