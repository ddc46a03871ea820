"""crawl.haystack_requests: the haystack image requests mirror the evidence requests' family and
shape (renderer kind, style, photo effect...), never their values; their topics fit the family."""

from __future__ import annotations

from collections import Counter

from omegaconf import OmegaConf

from memlens.construction.abilities.base import ImageRequest, Plan
from memlens.construction.crawl import stage as C
from memlens.core.schema import Topic

TOPICS = [
    Topic("t_shop", "identification", "retail", "Shops", ["bakeries"], families=["named_sign", "receipt"]),
    Topic("t_time", "experience", "routines", "Mornings", ["alarms"], families=["clock"]),
    Topic("t_misc", "document", "papers", "Paperwork", ["bills"], families=["receipt"]),
]


def plans() -> list[Plan]:
    out = []
    for i in range(30):  # evidence: 60% shop signs, 30% receipts, 10% clocks
        if i < 18:
            req = ImageRequest(
                "named_sign", {"kind": "shop_sign", "text": f"Shop {i}", "photo": {"background": [1, 2, 3]}}
            )
        elif i < 27:
            req = ImageRequest(
                "receipt", {"n_items": 2, "store": f"Store {i}", "currency": "EUR", "date": "2024/01/02"}
            )
        else:
            req = ImageRequest("clock", {"style": "analog", "time": "09:15"})
        out.append(Plan(f"p{i}", "information_extraction", "entity", "v", "t_shop", "bakeries", [req]))
    return out


def cfg(n_sessions: int):
    return OmegaConf.create(
        {
            "data": {"seed": 7, "scale": "s", "scales": {"s": {"haystack_sessions": n_sessions}}},
            "images": {"haystack_per_session": 2.0},
        }
    )


def test_haystack_requests_mirror_the_evidence_mix_without_values():
    ps = plans()
    reqs = C.haystack_requests(cfg(470), TOPICS, ["named_sign", "receipt", "clock", "object_scene"], ps)
    assert len(reqs) == 2 * (470 + len(ps))
    fam = Counter(r.family for _, r in reqs)
    n = len(reqs)
    assert abs(fam["named_sign"] / n - 0.6) < 0.05 and abs(fam["receipt"] / n - 0.3) < 0.05
    assert abs(fam["clock"] / n - 0.1) < 0.03 and fam["object_scene"] == 0  # a family no evidence uses
    for tid, r in reqs:
        assert r.role == "haystack" and set(r.constraints) <= set(C.SHAPE_KEYS)
        assert not {"text", "store", "date", "time"} & set(r.constraints)  # values stay with the evidence
        if r.family == "named_sign":
            assert r.constraints == {"kind": "shop_sign", "photo": True}
        if r.family == "receipt":
            assert r.constraints == {"n_items": 2, "currency": "EUR"}
        topic = {t.topic_id: t for t in TOPICS}[tid]
        assert r.family in topic.families or tid == "t_shop"  # a fitting topic, or the evidence image's own
    # half of them on the evidence image's topic, the rest spread over fitting topics
    receipts = Counter(t for t, r in reqs if r.family == "receipt")
    assert receipts["t_shop"] > receipts["t_misc"] > 0.15 * fam["receipt"]
    assert C.haystack_requests(cfg(470), TOPICS, ["named_sign", "receipt", "clock"], ps) == reqs  # seeded


def test_without_evidence_the_topics_families_are_used():
    reqs = C.haystack_requests(cfg(20), TOPICS, ["named_sign", "receipt", "clock"], [])
    assert len(reqs) == 40
    for tid, r in reqs:
        assert r.family in {t.topic_id: t for t in TOPICS}[tid].families and r.constraints == {}
