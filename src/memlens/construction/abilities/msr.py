"""Multi-Session Reasoning (MSR): aggregate facts spread over 3-8 evidence sessions.

Every question is anchored on one *theme*: an outing shared by all of its evidence sessions
("the farmers market trip with Maya"). Each evidence session shares one image from that outing,
introduced with the shared mention phrasing ("Here's the receipt from <theme> <image>"), so the
sessions are found through the theme while what counts is visible only in the images. Themes
extend the shared occasion space of :mod:`memlens.construction.abilities.contexts` with a companion, are
reserved, and never occur in haystack mentions. Facts are ``ordered`` (their relative order in
time is kept). The outing happened once, in one city, a day or two before its first session: the
plan fixes the question date and session timestamps (:mod:`memlens.construction.abilities.timeline`) and
every receipt of the outing prints that date and a shop of that city; a shop front seen again keeps
its board and awning colours.

Official subtypes and finer variants (``details.variant``):

- ``arithmetic`` (answer ``$260.00`` / ``€15.00`` / ``185.00 DKK``, ``derive.money`` style; one
  currency per question): how much was spent in total on the theme. Operands are receipt totals
  (``receipts``), current prices on shelf price labels (``price_tags``) or both (``mixed``); some
  operands may be stated in the fact text instead ("... the place from <theme> <image> and I spent
  $12.50 there"), at least one is visible only in an image. ``details.operand_sources`` lists
  ``image``/``text`` per evidence session.
- ``counting`` (answer an integer): how many of the theme's items match a criterion visible only
  in their image; the count is balanced over 1-4 per build (:mod:`.balance`; uniform when drawn)
  and the number of sessions (4-8, each sharing an image from the theme) is drawn independently of
  it, so neither the template nor how many sentences match the theme says anything about it. ``on_sale``: price labels showing a
  sale; ``paid_cash``: receipts paid in cash; ``brand`` (price labels of one brand) needs a
  ``count`` op that counts a given value (see ``COUNT_VALUE_OP``) and is enabled only when the
  derivation engine supports it.
- ``entity_resolution``: whether cross-session references denote the same entity, the name being
  readable only in the images (names are ``forbidden`` in any text). ``details.er_form`` is
  ``yes_no`` ("was the last place the same as the first one?", answer Yes/No, balanced per build) or
  ``count_distinct`` ("how many different places ...?", answer 1-4 balanced per build, 4-8 sessions
  drawn independently of it); ``details.entity_kind``
  is ``shop_sign`` (named_sign shop fronts) or ``receipt_store`` (the shop printed on receipts).
"""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

from memlens.construction.abilities import derive as _derive
from memlens.construction.abilities import timeline
from memlens.construction.abilities.base import Ability, Draft, FactDraft, ImageRequest, Plan, pick
from memlens.construction.abilities.contexts import OCCASIONS, PEOPLE, mention_for, thing_for
from memlens.construction.images.synthetic.formats import PRICE_SCALE  # a currency's amounts relative to USD
from memlens.construction.images.synthetic.vocab import BRANDS  # the brands price labels show
from memlens.construction.images.truth import printed_strings
from memlens.construction.text.validators import contains_token_bounded
from memlens.core.registry import component
from memlens.core.schema import Question, format_date

MSR = "multi_session_reasoning"

#: (proposed) count-by-value derivation: ``{"op": "count", "args": [...], "value": "Yes"}`` counts
#: the args whose value equals ``value`` (case-insensitive); without ``value`` count keeps counting
#: truthy values. Predicates such as ``eq`` return "Yes"/"No", both truthy, so counting "items of
#: brand X" needs it.
COUNT_VALUE_OP = "count"


def _engine_counts_values() -> bool:
    """Whether :mod:`memlens.construction.abilities.derive` counts by value (the proposed ``count`` + ``value``)."""
    try:
        prog = {
            "op": "count",
            "value": "Yes",
            "args": [{"op": "const", "value": "No"}, {"op": "const", "value": "Yes"}],
        }
        return _derive.evaluate(prog, None) == "1"
    except Exception:
        return False


COUNT_BY_VALUE = _engine_counts_values()

MIN_SESSIONS, MAX_SESSIONS = 3, 8  # evidence sessions of one question
CURRENCY_POOL = ["USD", "USD", "USD", "EUR", "EUR", "GBP", "DKK", "JPY", "CHF"]
NON_CASH = ["VISA", "Mastercard", "Amex", "Debit card", "Apple Pay", "Google Pay", "Contactless"]
SHOP_SIGN_TYPES = [
    "Bakery",
    "Cafe",
    "Florist",
    "Bistro",
    "Deli",
    "Bookshop",
    "Tea Room",
    "Gelato",
    "Records",
    "Tailor",
    "Optician",
    "Barber",
    "Bike Shop",
    "Pharmacy",
    "Hardware",
]
SHOP_WORDS = [
    "Luna",
    "Aurora",
    "Willow",
    "Copper",
    "Golden",
    "Blue Door",
    "Red Fox",
    "Maple",
    "Harbor",
    "Juniper",
    "Olive",
    "Saffron",
    "Pebble",
    "Lantern",
    "Nordic",
    "Sunny",
    "Little",
    "Corner",
    "Old Town",
    "Green Leaf",
    "Silver Spoon",
    "Bluebird",
    "Hazel",
    "Ember",
    "Meadow",
    "Wild Thyme",
    "Northside",
    "Sparrow",
    "Tidewater",
    "Cobble",
    "Marigold",
    "Basil",
    "Ivy",
    "Driftwood",
    "Acorn",
]
TEXT_TAILS = [
    "and I spent {amt} there",
    "and the bill there came to {amt}",
    "and I paid {amt} there",
    "and I ended up spending {amt} there",
    "and I spent {amt} in total there",
]


#: closed answers balanced per build (abilities.balance); a count is at most the fewest sessions a
#: counting question has, so the number of sessions is drawn independently of the count
YES_NO = ("Yes", "No")
COUNT_MAX = 4
COUNTS = tuple(str(k) for k in range(1, COUNT_MAX + 1))


# ----------------------------------------------------------------------------------------- helpers
def _count(rng: random.Random, want: str | None) -> int:
    return int(want) if want is not None else rng.randint(1, COUNT_MAX)


def _sessions_for_count(rng: random.Random) -> int:
    """The sessions of a counting or count-distinct question: uniform over COUNT_MAX..MAX_SESSIONS,
    whatever the count."""
    return rng.randint(max(MIN_SESSIONS, COUNT_MAX), MAX_SESSIONS)


def _noun(family: str) -> str:
    """The shared mention noun of a family ("the receipt from"), as :func:`contexts.thing_for` writes it."""
    r = random.Random(0)
    thing, ctx = thing_for(r, family, set())
    if thing.endswith(ctx) and thing != ctx:
        return thing[: -len(ctx)].rstrip()
    return {"receipt": "the receipt from", "price_tag": "the price label I saw on", "named_sign": "the place from"}.get(
        family, "the photo from"
    )


def _theme(rng: random.Random, reserved: set[str]) -> str:
    """A reserved outing shared by all evidence sessions of a question: an occasion of the shared
    phrase space plus a companion (the companion keeps the space large and apart from haystack contexts)."""
    occasions = [o for o in OCCASIONS if " with " not in o]
    for _ in range(2000):
        t = f"{rng.choice(occasions)} with {rng.choice(PEOPLE)}"
        if t not in reserved:
            return t
    raise RuntimeError("MSR theme space exhausted: enlarge contexts.OCCASIONS or contexts.PEOPLE")


def _money_text(value, currency: str) -> str:
    return _derive.money(value, currency)


def _image_values(truth: dict) -> list[str]:
    return sorted(set(printed_strings(truth)))


def _clashes(text: str, truth: dict) -> bool:
    return any(contains_token_bounded(text, v) for v in _image_values(truth))


def _names(rng: random.Random, n: int, suffix: str) -> list[str]:
    """n distinct, confusable names sharing a suffix ("Juniper Bakery", "Maple Bakery")."""
    return [f"{w} {suffix}" for w in rng.sample(SHOP_WORDS, n)]


def _spread(rng: random.Random, n: int, d: int) -> list[int]:
    """An assignment of n sessions to d entities, each entity at least once, in random order."""
    ids = list(range(d)) + [rng.randrange(d) for _ in range(n - d)]
    rng.shuffle(ids)
    return ids


def _cluster_days(rng: random.Random, n: int) -> list[float]:
    """Strictly decreasing days-before-question for n sessions that follow one outing: 1.5-5 days
    apart (more than the writer's up-to-10-hour jitter, so the order holds), the last at least a day
    before the question, the first within the 240-day history window."""
    gaps = [rng.uniform(1.5, 5.0) for _ in range(n - 1)]
    last = rng.uniform(1.0, 200.0 - sum(gaps))
    out = [last]
    for g in reversed(gaps):
        out.insert(0, out[0] + g)
    return [round(d, 3) for d in out]


def _store_identity(rng: random.Random, name: str, stype: str, currency: str, city: str) -> dict:
    """Fixed receipt header of a store (same name, address and phone on every receipt from it)."""
    from memlens.construction.images.synthetic.common import phone_number, street_address

    for _ in range(50):
        address = street_address(rng, city)
        if len(address) <= 34:
            break
    return {
        "store": name,
        "store_type": stype,
        "address": address,
        "city": city,
        "phone": phone_number(rng, currency, city),
        "currency": currency,
    }


# ----------------------------------------------------------------------------------------- ability
@component("question_type", "multi_session_reasoning")
class MultiSessionReasoning(Ability):
    question_type = MSR
    variants = {
        "arithmetic": ["receipts", "price_tags", "mixed"],
        "counting": ["on_sale", "paid_cash"] + (["brand"] if COUNT_BY_VALUE else []),
        "entity_resolution": ["yes_no_sign", "count_distinct_sign", "yes_no_receipt", "count_distinct_receipt"],
    }
    families = {
        "receipts": ["receipt", "named_sign"],
        "price_tags": ["price_tag", "named_sign"],
        "mixed": ["receipt", "price_tag", "named_sign"],
        "on_sale": ["price_tag"],
        "paid_cash": ["receipt"],
        "brand": ["price_tag"],
        "yes_no_sign": ["named_sign"],
        "count_distinct_sign": ["named_sign"],
        "yes_no_receipt": ["receipt"],
        "count_distinct_receipt": ["receipt"],
    }

    # ------------------------------------------------------------------------------------- plan
    def answer_classes(self, subtype, variant):
        """Yes/No for the yes/no entity questions, the counts 1-4 for counting and count-distinct."""
        if subtype == "entity_resolution" and variant.startswith("yes_no"):
            return YES_NO
        if subtype == "counting" or (subtype == "entity_resolution" and variant.startswith("count_distinct")):
            return COUNTS
        return None

    def plan(self, rng, topic, subtype, variant, plan_id, reserved, want: str | None = None):
        """``want``: the answer to make (balanced per build: :mod:`memlens.construction.abilities.balance`);
        None draws it."""
        if subtype not in self.variants or variant not in self.variants[subtype]:
            raise ValueError(f"MSR: unknown subtype/variant {subtype!r}/{variant!r}")
        classes = self.answer_classes(subtype, variant)
        if want is not None and (classes is None or want not in classes):
            raise ValueError(f"MSR: {subtype}/{variant} cannot be planned to answer {want!r}")
        theme = _theme(rng, reserved)
        reserved.add(theme)
        n = rng.randint(3, 8)
        latent: dict = {"theme": theme, "context": theme, "n": n, "want": want}
        if subtype == "arithmetic":
            images = self._plan_arithmetic(rng, variant, n, latent)
        elif subtype == "counting":
            images = self._plan_counting(rng, variant, n, latent)
        else:
            images = self._plan_er(rng, variant, n, latent)
        self._plan_outing(rng, images, latent)
        # the mention sentences (drawn now so that plan and build stay independent of the truths)
        latent["mention_seeds"] = [rng.getrandbits(32) for _ in images]
        return Plan(
            plan_id, MSR, subtype, variant, topic.topic_id, pick(rng, topic.subtopics or [topic.title]), images, latent
        )

    @staticmethod
    def _plan_outing(rng, images: list[ImageRequest], latent: dict) -> None:
        """The outing happened once, in one city, a day or two before its first session: every
        receipt of it is printed with that date and a shop of that city, and the sessions that share
        them follow it in order (the question date and session timestamps are fixed here)."""
        from memlens.construction.images.synthetic import vocab

        n = len(images)
        qdate = timeline.question_date(rng)
        at = timeline.sessions_before(rng, qdate, _cluster_days(rng, n))
        outing = timeline.day_of(at[0]) - timedelta(days=rng.randint(1, 2))
        cur = latent.get("currency") or next(
            (r.constraints["currency"] for r in images if r.constraints.get("currency")), "USD"
        )
        city = latent.get("city") or pick(rng, vocab.CURRENCY_CITIES.get(cur) or [c[0] for c in vocab.CITIES])
        for r in images:
            if r.family == "receipt":
                r.constraints.setdefault("city", city)
                r.constraints["date"] = outing.strftime("%Y/%m/%d")
        latent.update({"qdate": format_date(qdate), "at": at, "outing_day": outing.strftime("%Y/%m/%d"), "city": city})

    def _plan_arithmetic(self, rng, variant, n, latent) -> list[ImageRequest]:
        cur = pick(rng, CURRENCY_POOL)
        n_text = min(n - 1, pick(rng, [0, 1, 1, 2]))
        kinds = ["text"] * n_text
        for _ in range(n - n_text):
            kinds.append(
                {"receipts": "receipt", "price_tags": "price_tag"}.get(variant) or pick(rng, ["receipt", "price_tag"])
            )
        if variant == "mixed" and n - n_text >= 2 and len(set(kinds) - {"text"}) < 2:
            kinds[-1] = "price_tag" if kinds[-1] == "receipt" else "receipt"
        rng.shuffle(kinds)
        images = []
        for k in kinds:
            if k == "receipt":
                images.append(ImageRequest("receipt", {"currency": cur, "n_items": rng.randint(1, 3)}))
            elif k == "price_tag":
                images.append(ImageRequest("price_tag", {"currency": cur}))
            else:  # the place where a text-stated amount was spent
                images.append(ImageRequest("named_sign", {"kind": "shop_sign"}))
        latent.update({"currency": cur, "operands": kinds})
        return images

    def _plan_counting(self, rng, variant, n, latent) -> list[ImageRequest]:
        # the count (wanted or uniform over COUNTS) and, independently of it, the number of sessions
        # (every one of them shares an image from the theme): neither the template nor the number
        # of sessions that match the question's context says anything about the count
        k = _count(rng, latent.get("want"))
        n = _sessions_for_count(rng)
        latent["n"] = n
        match = sorted(rng.sample(range(n), k))
        images = []
        if variant == "on_sale":
            cur = pick(rng, CURRENCY_POOL[:6])
            for i in range(n):
                images.append(ImageRequest("price_tag", {"currency": cur, "on_sale": i in match}))
        elif variant == "paid_cash":
            cur = pick(rng, CURRENCY_POOL)
            for i in range(n):
                pay = "Cash" if i in match else pick(rng, NON_CASH)
                images.append(ImageRequest("receipt", {"currency": cur, "n_items": rng.randint(1, 4), "payment": pay}))
        elif variant == "brand":
            cur = pick(rng, CURRENCY_POOL[:6])
            brand, *others = rng.sample(BRANDS, 4)
            latent["brand"] = brand
            for i in range(n):
                images.append(
                    ImageRequest("price_tag", {"currency": cur, "brand": brand if i in match else pick(rng, others)})
                )
        else:
            raise ValueError(f"MSR counting: unknown variant {variant!r}")
        latent.update({"matching": match})
        return images

    def _plan_er(self, rng, variant, n, latent) -> list[ImageRequest]:
        form = variant.rsplit("_", 1)[0]
        kind = "shop_sign" if variant.endswith("_sign") else "receipt_store"
        if form == "yes_no":
            want = latent.get("want")
            same = rng.random() < 0.5 if want is None else want == "Yes"
            n_names = min(n, rng.randint(2, 4))
            ids = [rng.randrange(n_names) for _ in range(n)]
            ids[0] = 0
            ids[-1] = 0 if same else rng.randrange(1, n_names)
            latent["same"] = same
        else:  # the number of different entities and, independently, of sessions (see counting)
            d = _count(rng, latent.get("want"))
            n = _sessions_for_count(rng)
            latent["n"] = n
            ids = _spread(rng, n, d)
            n_names = d
        if kind == "shop_sign":
            stype = pick(rng, SHOP_SIGN_TYPES)
            names = _names(rng, n_names, stype)
            from memlens.construction.images.synthetic.named_sign import AWNINGS, BOARDS

            # a shop front seen again keeps its lettering, door number, board and awning
            looks = [
                {
                    "subtitle": pick(
                        rng, ["FRESH DAILY", "OPEN 7 DAYS", "FAMILY OWNED", f"EST. {rng.randint(1952, 2021)}"]
                    ),
                    "number": str(rng.randint(1, 199)),
                    "board_color": list(pick(rng, BOARDS)),
                    "awning_color": list(pick(rng, AWNINGS)),
                }
                for _ in names
            ]
            from memlens.construction.images.synthetic.photo import sample_photo_effects

            images = []
            for e in ids:
                cons = {"kind": "shop_sign", "text": names[e], **looks[e]}
                if ids.count(e) > 1:
                    # the same shop front photographed again: strong, explicit photo effects keep the
                    # shots apart for the near-duplicate filter (a clean re-render is within its pHash radius)
                    cons["photo"] = sample_photo_effects(rng, mode="scene", strength="strong")
                images.append(ImageRequest("named_sign", cons))
        else:
            from memlens.construction.images.synthetic import vocab

            stype = pick(rng, sorted(vocab.STORES))
            suffix = pick(rng, vocab.STORES[stype][0])
            names = _names(rng, n_names, suffix)
            cur = pick(rng, CURRENCY_POOL)
            city = pick(rng, vocab.CURRENCY_CITIES.get(cur) or [c[0] for c in vocab.CITIES])
            latent.update({"currency": cur, "city": city})
            stores = [_store_identity(rng, nm, stype, cur, city) for nm in names]
            images = [ImageRequest("receipt", {**stores[e], "n_items": rng.randint(1, 3)}) for e in ids]
        latent.update({"er_form": form, "entity_kind": kind, "entity_ids": ids, "names": names})
        return images

    # ------------------------------------------------------------------------------------ build
    def build(self, rng, plan, truths):
        if len(truths) != len(plan.images):
            raise ValueError("MSR: one truth per planned image expected")
        sub = plan.question_subtype
        if sub == "arithmetic":
            return self._build_arithmetic(rng, plan, truths)
        if sub == "counting":
            return self._build_counting(rng, plan, truths)
        if sub == "entity_resolution":
            return self._build_er(rng, plan, truths)
        raise ValueError(f"MSR: unknown subtype {sub!r}")

    def _mentions(
        self, plan, truths, tails: list[str | None], anaphors: bool = False, forbidden: list[str] | None = None
    ) -> list[FactDraft]:
        """``anaphors``: phrase a share of the (named_sign) mentions with an anaphor of the entity's
        category ("that bakery I showed you <image>"), as haystack mentions of such images are."""
        from memlens.construction.text import abstraction

        theme = plan.latent["theme"]
        facts = []
        for i, (req, seed, tail) in enumerate(zip(plan.images, plan.latent["mention_seeds"], tails)):
            mrng = random.Random(seed)
            thing = f"{_noun(req.family)} {theme}"
            m = mention_for(mrng, req.family, thing, tail=tail)
            if anaphors and req.family == "named_sign" and mrng.random() < abstraction.ANAPHOR_SHARE:
                t = truths[i]
                cat = abstraction.classify(str(t.get("text", "")), t.get("kind"))
                a = abstraction.mention(mrng, abstraction.anaphor(mrng, cat), theme, tail=tail)
                if not _clashes(a, t) and not any(contains_token_bounded(a, f) for f in forbidden or []):
                    m = a
            if _clashes(m, truths[i]):
                raise ValueError(f"MSR: mention {m!r} repeats a string drawn in its image")
            facts.append(FactDraft(m, [i]))
        # the outing happened once: its sessions follow it within a few weeks, in order, at the
        # timestamps the plan fixed (its receipts print the outing's date)
        for f, at in zip(facts, plan.latent["at"]):
            f.at = at
        return facts

    def _base_details(self, plan, fmt: str) -> dict:
        return {
            "answer_format": fmt,
            "theme": plan.latent["theme"],
            "n_sessions": len(plan.images),
            "families": [r.family for r in plan.images],
            "context": plan.latent["theme"],
        }

    def _build_arithmetic(self, rng, plan, truths) -> Draft:
        cur = plan.latent["currency"]
        kinds = plan.latent["operands"]
        args, tails, sources = [], [], []
        q = Decimal(1) if cur == "JPY" else Decimal("0.01")
        image_total = Decimal(0)
        for i, k in enumerate(kinds):
            t = truths[i]
            if k == "receipt":
                if t.get("currency") != cur:
                    raise ValueError("MSR arithmetic: receipt in another currency")
                args.append({"op": "get", "img": i, "path": ["total"]})
                image_total += Decimal(str(t["total"]))
            elif k == "price_tag":
                if t.get("currency") != cur:
                    raise ValueError("MSR arithmetic: price label in another currency")
                args.append({"op": "get", "img": i, "path": ["price"]})
                image_total += Decimal(str(t["price"]))
            else:
                args.append(None)
            sources.append("text" if k == "text" else "image")
        text_vals: list[Decimal] = []
        scale = PRICE_SCALE[cur]
        for i, k in enumerate(kinds):
            if k != "text":
                tails.append(None)
                continue
            for _ in range(200):
                v = Decimal(str(rng.uniform(4, 45) * scale)).quantize(q)
                if cur != "JPY":
                    v = v.quantize(Decimal(1)) + Decimal(pick(rng, ["0.00", "0.50", "0.25", "0.75", "0.99", "0.49"]))
                else:
                    v = (v / 10).quantize(Decimal(1)) * 10
                amt = _money_text(v, cur)
                tail = pick(rng, TEXT_TAILS).format(amt=amt)
                if v > 0 and v not in text_vals and not _clashes(tail, truths[i]):
                    break
            else:
                raise ValueError("MSR arithmetic: could not state an amount")
            text_vals.append(v)
            args[i] = {"op": "const", "value": format(v, "f")}
            tails.append(tail)
        prog = {"op": "sum", "args": args, "fmt": "money", "currency": cur}
        answer = _derive.derive(prog, truths)
        total = image_total + sum(text_vals, Decimal(0))
        if answer != _money_text(total, cur):
            raise ValueError(f"MSR arithmetic: derivation {answer!r} != {total}")
        if image_total <= 0:
            raise ValueError("MSR arithmetic: no image operand")
        facts = self._mentions(plan, truths, tails)
        if any(
            contains_token_bounded(f.mention, answer) or _money_text(v, cur) == answer for f in facts for v in text_vals
        ):
            raise ValueError("MSR arithmetic: the sum equals a stated amount")
        theme = plan.latent["theme"]
        parts = []
        if "receipt" in kinds:
            parts.append("each receipt's total")
        if "price_tag" in kinds:
            parts.append("the current price on each price label")
        if "text" in kinds:
            parts.append("the amounts I told you about")
        count = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        question = pick(
            rng,
            [
                f"How much did I spend in total on {theme}? Count {count}.",
                f"Adding everything up, what did {theme} cost me altogether? Count {count}.",
                f"What was my total spending on {theme}? Count {count}.",
            ],
        )
        details = self._base_details(plan, "currency")
        details.update(
            {
                "currency": cur,
                "operand_sources": sources,
                "n_text_operands": len(text_vals),
                "visual_skill": "arithmetic",
            }
        )
        return Draft(
            question=question,
            answer=answer,
            facts=facts,
            details=details,
            ordered=True,
            question_date=plan.latent["qdate"],
            forbidden=[answer],
            contexts=[theme],
            derivation=prog,
        )

    def _build_counting(self, rng, plan, truths) -> Draft:
        v = plan.variant
        theme = plan.latent["theme"]
        if v == "on_sale":
            preds = [{"op": "get", "img": i, "path": ["on_sale"]} for i in range(len(truths))]
            prog = {"op": "count", "args": preds}
            truth_vals = [bool(t["on_sale"]) for t in truths]
            question = pick(
                rng,
                [
                    f"Of the price labels I saw on {theme}, how many showed the item on sale?",
                    f"How many of the price labels I saw on {theme} were for items on sale?",
                ],
            )
            criterion = "on_sale"
        elif v == "paid_cash":
            preds = [{"op": "get", "img": i, "path": ["payment", "tendered"]} for i in range(len(truths))]
            prog = {"op": "count", "args": preds}
            truth_vals = [t["payment"]["method"].lower() == "cash" for t in truths]
            if any(bool(t["payment"]["tendered"]) != m for t, m in zip(truths, truth_vals)):
                raise ValueError("MSR counting: cash receipts must show the cash tendered")
            question = pick(
                rng,
                [
                    f"Of the receipts from {theme}, how many did I pay in cash?",
                    f"How many of my receipts from {theme} were paid in cash?",
                ],
            )
            criterion = "paid_cash"
        elif v == "brand":
            brand = plan.latent["brand"]
            preds = [
                {"op": "eq", "a": {"op": "get", "img": i, "path": ["brand"]}, "b": {"op": "const", "value": brand}}
                for i in range(len(truths))
            ]
            prog = {"op": COUNT_VALUE_OP, "value": "Yes", "args": preds}
            truth_vals = [t["brand"].strip().lower() == brand.lower() for t in truths]
            question = f"Of the price labels I saw on {theme}, how many were for {brand} products?"
            criterion = f"brand={brand}"
        else:
            raise ValueError(f"MSR counting: unknown variant {v!r}")
        k = sum(truth_vals)
        if not 0 < k <= len(truths):
            raise ValueError("MSR counting: the evidence needs at least one matching item")
        answer = str(k)
        got = evaluate_local(prog, truths)
        if got != answer:
            raise ValueError(f"MSR counting: derivation {got!r} != {answer!r}")
        facts = self._mentions(plan, truths, [None] * len(truths))
        details = self._base_details(plan, "integer")
        details.update({"criterion": criterion, "n_matching": k, "visual_skill": "counting"})
        return Draft(
            question=question,
            answer=answer,
            facts=facts,
            details=details,
            ordered=True,
            question_date=plan.latent["qdate"],
            forbidden=[answer],
            contexts=[theme],
            derivation=prog,
        )

    def _build_er(self, rng, plan, truths) -> Draft:
        theme = plan.latent["theme"]
        form, kind = plan.latent["er_form"], plan.latent["entity_kind"]
        key = "text" if kind == "shop_sign" else "store"
        names = [str(t[key]) for t in truths]
        n = len(truths)
        if kind == "shop_sign":
            what, what_pl, noun = "place", "places", "the places from"
        else:
            what, what_pl, noun = "shop", "shops", "the receipts from"
        if form == "yes_no":
            prog = {
                "op": "eq",
                "a": {"op": "get", "img": 0, "path": [key]},
                "b": {"op": "get", "img": n - 1, "path": [key]},
            }
            answer = "Yes" if names[0].strip().lower() == names[-1].strip().lower() else "No"
            if kind == "shop_sign":
                question = pick(
                    rng,
                    [
                        f"Thinking of {noun} {theme} I shared photos of, was the last one the same place as the first one?",
                        f"Of the places from {theme} I showed you, was the last place the same one as the first?",
                    ],
                )
            else:
                question = pick(
                    rng,
                    [
                        f"Looking at {noun} {theme}, was the last receipt from the same shop as the first one?",
                        f"Of my receipts from {theme}, did the last one come from the same shop as the first?",
                    ],
                )
            fmt = "yes_no"
            forbidden = sorted(set(names))
        else:
            prog = {"op": "distinct", "args": [{"op": "get", "img": i, "path": [key]} for i in range(n)]}
            answer = str(len({x.strip().lower() for x in names}))
            if kind == "shop_sign":
                question = pick(
                    rng,
                    [
                        f"How many different places did I share photos of from {theme}?",
                        f"Across my photos of the places from {theme}, how many different places were there?",
                    ],
                )
            else:
                question = pick(
                    rng,
                    [
                        f"How many different shops did my receipts from {theme} come from?",
                        f"My receipts from {theme} came from how many different shops?",
                    ],
                )
            fmt = "integer"
            forbidden = [answer] + sorted(set(names))
        got = evaluate_local(prog, truths)
        if got != answer:
            raise ValueError(f"MSR entity resolution: derivation {got!r} != {answer!r}")
        facts = self._mentions(plan, truths, [None] * n, anaphors=True, forbidden=list(forbidden) + [answer])
        details = self._base_details(plan, fmt)
        details.update(
            {
                "er_form": form,
                "entity_kind": kind,
                "n_entities": len({x.lower() for x in names}),
                "entity_of_session": plan.latent["entity_ids"],
                "visual_skill": "entity_resolution",
                "entity_word": what,
                "entity_word_plural": what_pl,
            }
        )
        return Draft(
            question=question,
            answer=answer,
            facts=facts,
            details=details,
            ordered=True,
            question_date=plan.latent["qdate"],
            forbidden=forbidden,
            contexts=[theme],
            derivation=prog,
        )

    # ---------------------------------------------------------------------------------- chance
    def chance_answer(self, question: Question, rng):
        d = question.details or {}
        fmt = d.get("answer_format")
        if fmt == "currency":
            cur = d.get("currency", "USD")
            n = int(d.get("n_sessions") or rng.randint(3, 8))
            v = Decimal(str(rng.uniform(5, 45) * n * PRICE_SCALE.get(cur, 1)))
            v = v.quantize(Decimal(1)) if cur == "JPY" else v.quantize(Decimal("0.01"))
            return _derive.money(v, cur)
        if fmt == "integer":
            return pick(rng, COUNTS)
        if fmt == "yes_no":
            return pick(rng, ["Yes", "No"])
        return ""


def evaluate_local(prog: dict, truths, context: dict | None = None) -> str | None:
    """:func:`derive.derive` plus the proposed count-by-value op (local fallback until the engine has it)."""
    if prog.get("op") == "count" and "value" in prog and not COUNT_BY_VALUE:
        vals = [_derive.derive(a, truths, context) for a in prog["args"]]
        if any(v is None for v in vals):
            return None
        want = str(prog["value"]).strip().lower()
        return str(sum(1 for v in vals if v.strip().lower() == want))
    return _derive.derive(prog, truths, context)
