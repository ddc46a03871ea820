"""Information Extraction (IE): recall one visual detail from one evidence session.

- ``entity`` (two-hop): the text names a context ("my sister's kitchen shelf"), only the image
  holds the answer; finer visual skills in ``details.visual_skill`` (counting, spatial, ...).
- ``previnfo``: a detail of an image shared in an earlier session; ``details.image_source`` is
  chat_screenshot, app_interface or natural_photo.
"""
from __future__ import annotations

import random

from memlens.abilities.base import Ability, Draft, FactDraft, ImageRequest, Plan, pick
from memlens.abilities.contexts import mention_for, thing_for
from memlens.schema import IE, Question

SCENE_KINDS = ["mug", "book", "candle", "vase", "bottle", "plant pot", "cup", "gift box", "ball"]
SCENE_COLORS = ["red", "blue", "green", "yellow", "orange", "purple", "white", "black"]
PLURAL = {"mug": "mugs", "cup": "cups", "book": "books", "apple": "apples", "ball": "balls", "bottle": "bottles",
          "plant pot": "plant pots", "candle": "candles", "vase": "vases", "gift box": "gift boxes"}


def _counting_plan(rng: random.Random) -> tuple[dict, dict]:
    kind = pick(rng, SCENE_KINDS)
    c1, c2 = rng.sample(SCENE_COLORS, 2)
    n1 = rng.randint(2, 7)
    n2 = rng.randint(1, 4)
    k2 = pick(rng, [k for k in SCENE_KINDS if k != kind])
    counts = {f"{c1} {kind}": n1, f"{c2} {kind}": n2, f"{pick(rng, SCENE_COLORS)} {k2}": rng.randint(1, 3)}
    return {"counts": counts}, {"kind": kind, "color": c1}


class InformationExtraction(Ability):
    question_type = IE
    variants = {"entity": ["counting", "spatial"], "previnfo": ["natural_photo"]}
    families = {"counting": ["object_scene"], "spatial": ["object_scene"], "natural_photo": ["object_scene"]}

    def plan(self, rng, topic, subtype, variant, plan_id, reserved):
        thing, ctx = thing_for(rng, "object_scene", reserved)
        reserved.add(ctx)
        mention = mention_for(rng, "object_scene", thing)
        if variant in ("counting", "natural_photo"):
            cons, latent = _counting_plan(rng)
        elif variant == "spatial":
            kinds = rng.sample(SCENE_KINDS, 4)
            colors = rng.sample(SCENE_COLORS, 4)
            cons = {"objects": [{"kind": k, "color": c, "size": "large"} for k, c in zip(kinds, colors)],
                    "setting": "shelf"}
            latent = {}
        else:
            raise ValueError(f"IE: unknown variant {variant!r}")
        latent.update({"context": ctx, "mention": mention})
        return Plan(plan_id, IE, subtype, variant, topic.topic_id, pick(rng, topic.subtopics or [topic.title]),
                    [ImageRequest("object_scene", cons)], latent)

    def build(self, rng, plan, truths):
        t = truths[0]
        ctx = plan.latent["context"]
        mention = plan.latent["mention"]
        v = plan.variant
        details = {"visual_skill" if plan.question_subtype == "entity" else "image_source": v,
                   "family": "object_scene", "context": ctx}
        if v in ("counting", "natural_photo"):
            kind, color = plan.latent["kind"], plan.latent["color"]
            n = int(t["counts"].get(f"{color} {kind}", 0))
            if v == "counting":
                q = f"How many {color} {PLURAL[kind]} were on {ctx} in the photo I shared?"
            else:
                q = f"Thinking back to the photo of {ctx} I sent you a while ago, how many {color} {PLURAL[kind]} were in it?"
            answer = str(n)
            details["answer_format"] = "integer"
            derivation = {"op": "str", "arg": {"op": "get", "img": 0, "path": ["counts", f"{color} {kind}"]}}
        else:  # spatial: the object immediately left of a reference object in the same row
            objs = {o["id"]: o for o in t["objects"]}
            pairs = []
            for row in t["rows"]:
                ids = row["objects_left_to_right"]
                for a, b in zip(ids, ids[1:]):
                    pairs.append((objs[a], objs[b]))
            if not pairs:
                raise ValueError("spatial: no adjacent objects")
            left, ref = pick(rng, pairs)
            q = (f"In the photo of {ctx} I shared, which object stood directly to the left of the "
                 f"{ref['color']} {ref['kind']}? Answer with its colour and kind.")
            answer = f"{left['color']} {left['kind']}"
            details["answer_format"] = "color_kind"
            idx = next(i for i, o in enumerate(t["objects"]) if o["id"] == left["id"])
            derivation = {"op": "format", "template": "{color} {kind}", "img": 0, "path": ["objects", idx]}
        return Draft(question=q, answer=answer, facts=[FactDraft(mention, [0])], details=details,
                     forbidden=[answer], contexts=[ctx], derivation=derivation)

    def chance_answer(self, question: Question, rng):
        if question.details.get("answer_format") == "integer":
            return str(rng.randint(1, 9))
        if question.details.get("answer_format") == "color_kind":
            return f"{pick(rng, SCENE_COLORS)} {pick(rng, SCENE_KINDS)}"
        return ""
