"""Multi-Session Reasoning (MSR): plans, drafts, derivations, leakage and chance answers."""

from __future__ import annotations

import dataclasses
import io
import itertools
import random
import re
from datetime import datetime

import pytest

from memlens.construction.abilities import ability_for, registry
from memlens.construction.abilities import msr as msr_mod
from memlens.construction.abilities.derive import derive
from memlens.construction.images.synthetic import get_family, render_bytes
from memlens.construction.text.validators import contains_token_bounded
from memlens.core.schema import Question, parse_date

MSR = "multi_session_reasoning"
CLOSED = re.compile(r"^(A|B|Yes|No|(\(\d+\))+)$")
SEEDS = range(40)
MONEY = {
    "USD": r"^\$[\d,]+\.\d\d$",
    "EUR": r"^€[\d,]+\.\d\d$",
    "GBP": r"^£[\d,]+\.\d\d$",
    "JPY": r"^¥[\d,]+$",
    "DKK": r"^[\d,]+\.\d\d DKK$",
    "CHF": r"^[\d,]+\.\d\d CHF$",
}


@pytest.fixture(scope="module")
def topics():
    from memlens.construction.ontology.stage import build_topics, load_ontology_file

    return build_topics(load_ontology_file(), 42)


@pytest.fixture(scope="module")
def ab():
    return ability_for(MSR)


def _cases(ab):
    return [(sub, v) for sub, vs in ab.variants.items() for v in vs]


def _make(ab, topics, sub, variant, seed, reserved=None):
    rng = random.Random(f"msr-test:{sub}:{variant}:{seed}")
    topic = topics[rng.randrange(len(topics))]
    reserved = set() if reserved is None else reserved
    plan = ab.plan(rng, topic, sub, variant, f"p_{seed}", reserved)
    srng = random.Random(f"truth:{seed}")
    truths = [get_family(r.family).sample(srng, **r.constraints) for r in plan.images]
    draft = ab.build(random.Random(f"build:{seed}"), plan, truths)
    return plan, truths, draft


def _values(truth):
    return [str(t) for t in truth.get("texts", []) if len(str(t).strip()) > 1]


def test_registered_with_official_subtypes(ab):
    assert MSR in registry()
    assert ab.question_type == MSR
    assert set(ab.variants) == {"arithmetic", "counting", "entity_resolution"}
    assert {"receipts", "price_tags", "mixed"} <= set(ab.variants["arithmetic"])
    assert {"on_sale", "paid_cash"} <= set(ab.variants["counting"])
    assert set(ab.variants["entity_resolution"]) == {
        "yes_no_sign",
        "count_distinct_sign",
        "yes_no_receipt",
        "count_distinct_receipt",
    }
    for vs in ab.variants.values():
        for v in vs:
            assert ab.families[v], v


def test_drafts_for_every_variant(ab, topics):
    stats: dict = {}
    for sub, v in _cases(ab):
        for seed in SEEDS:
            plan, truths, d = _make(ab, topics, sub, v, seed)
            n = len(plan.images)
            assert plan.question_type == MSR and plan.question_subtype == sub and plan.variant == v
            assert 3 <= n <= 8 and len(d.facts) == n
            assert d.ordered and d.image_essential
            theme = plan.latent["theme"]
            assert d.contexts == [theme]
            # derivation: exact with images, impossible without them
            ctx = {"evidence_dates": ["2024/05/01 (Wed) 10:00"] * n}
            assert msr_mod.evaluate_local(d.derivation, truths, ctx) == d.answer
            if v != "brand":
                assert derive(d.derivation, truths, ctx) == d.answer
            text_only = msr_mod.evaluate_local(d.derivation, [None] * n, ctx)
            assert text_only is None or text_only != d.answer
            # facts: one session per image, <image> right after the shared-style mention of the theme
            assert sorted(i for f in d.facts for i in f.image_idx) == list(range(n))
            # the plan fixed the time line: sessions 1.5-5 days apart (minus a 10-hour jitter), in
            # order, inside the history window, before the question date
            qd = parse_date(d.question_date)
            ats = [parse_date(f.at) for f in d.facts]
            assert all(f.days_before is None for f in d.facts)
            assert all((b - a).total_seconds() >= (1.5 * 24 - 10) * 3600 for a, b in itertools.pairwise(ats)), ats
            assert (qd - ats[-1]).total_seconds() >= 14 * 3600 and (qd - ats[0]).days <= 200
            # one outing: every receipt prints one date (a day or two before the first session) and
            # one city
            rec = [t for t in truths if t["family"] == "receipt"]
            if rec:
                assert {t["date"] for t in rec} == {plan.latent["outing_day"]}
                outing = datetime.strptime(plan.latent["outing_day"], "%Y/%m/%d").date()
                assert 1 <= (ats[0].date() - outing).days <= 2
                assert len({t["city"] for t in rec}) == 1
            for f in d.facts:
                assert f.mention.count("<image>") == len(f.image_idx) == 1
                assert theme in f.mention and f.mention.rstrip()[-1] in ".!?"
                for k in f.image_idx:
                    for val in _values(truths[k]):
                        assert not contains_token_bounded(f.mention, val), (f.mention, val)
            # leakage: neither the answer nor any abstracted name occurs in the text
            forb = [x for x in d.forbidden if not CLOSED.match(x)]
            if not CLOSED.match(d.answer):
                assert d.answer in forb
            for f in d.facts:
                for x in forb:
                    assert not contains_token_bounded(f.mention, x), (f.mention, x)
            for x in forb:
                if x != d.answer:
                    assert not contains_token_bounded(d.question, x), (d.question, x)
            assert theme in d.question
            det = d.details
            assert det["n_sessions"] == n and det["theme"] == theme
            key = (sub, v)
            stats.setdefault(key, []).append(d.answer)
            if sub == "arithmetic":
                _check_arithmetic(plan, truths, d)
            elif sub == "counting":
                assert det["answer_format"] == "integer"
                assert 0 < int(d.answer) <= n and int(d.answer) == det["n_matching"]
            else:
                _check_er(plan, truths, d)
    for (sub, v), answers in stats.items():
        assert len(set(answers)) > 1, (sub, v, answers)  # answers vary
    yn = [a for (sub, v), ans in stats.items() if v.startswith("yes_no") for a in ans]
    assert 0.3 < yn.count("Yes") / len(yn) < 0.7


def _check_arithmetic(plan, truths, d):
    det = d.details
    cur = det["currency"]
    assert det["answer_format"] == "currency"
    assert re.match(MONEY[cur], d.answer), d.answer
    src = det["operand_sources"]
    assert len(src) == len(truths) and "image" in src
    assert src.count("text") == det["n_text_operands"]
    total = 0
    from decimal import Decimal

    stated = []
    for f, s, t in zip(d.facts, src, truths):
        if s == "image":
            assert t["currency"] == cur
            total += Decimal(t["total"] if t["family"] == "receipt" else t["price"])
            assert not re.search(r"\d", f.mention)
        else:
            m = re.search(r"(\S*\d[\d,.]*(?: [A-Z]{3})?)", f.mention)
            assert m, f.mention
            amt = m.group(1).rstrip(".")
            stated.append(amt)
            assert amt != d.answer
            total += Decimal(re.sub(r"[^\d.]", "", amt))
    assert msr_mod._derive.money(total, cur) == d.answer
    assert d.answer not in stated


def _check_er(plan, truths, d):
    det = d.details
    key = "text" if det["entity_kind"] == "shop_sign" else "store"
    names = [t[key] for t in truths]
    assert det["er_form"] in ("yes_no", "count_distinct")
    for nm in names:
        assert nm in d.forbidden
        assert not contains_token_bounded(d.question, nm)
    if det["er_form"] == "yes_no":
        assert det["answer_format"] == "yes_no" and d.answer in ("Yes", "No")
        assert d.answer == ("Yes" if names[0] == names[-1] else "No")
    else:
        assert det["answer_format"] == "integer"
        k = int(d.answer)
        assert k == len(set(names)) and 1 <= k <= len(names)
    if det["entity_kind"] == "shop_sign":
        for i, r in enumerate(plan.images):
            if names.count(names[i]) > 1:
                assert isinstance(r.constraints.get("photo"), dict)
        # a shop seen again keeps its colours; the board and awning are in the truth
        for nm in set(names):
            looks = {(tuple(t["board_color"]), tuple(t["awning_color"])) for t in truths if t["text"] == nm}
            assert len(looks) == 1, (nm, looks)


def test_answer_priors_are_flat_and_sessions_independent(ab):
    """The count (counting) and the number of different entities (entity resolution) are uniform
    over 1-4 when drawn, and the number of evidence sessions (every one shares an image from the
    question's theme) is drawn independently of it: the most frequent answer of a variant is no
    likelier than 1/4 + noise, and guessing "as many as the sessions that match the theme" is
    right only as often as the two independent draws agree."""
    from collections import Counter

    for sub in ("counting", "entity_resolution"):
        for v in ab.variants[sub]:
            if v.startswith("yes_no"):
                continue
            answers, by_n = Counter(), {}
            hits = 0
            for i in range(800):
                rng = random.Random(f"prior-{v}-{i}")
                latent: dict = {}
                if sub == "counting":
                    ab._plan_counting(rng, v, 5, latent)
                    k = len(latent["matching"])
                else:
                    ab._plan_er(rng, v, 5, latent)
                    k = len(set(latent["entity_ids"]))
                answers[k] += 1
                by_n.setdefault(latent["n"], Counter())[k] += 1
                hits += k == latent["n"]
            assert set(answers) == set(range(1, msr_mod.COUNT_MAX + 1)), (v, answers)
            assert max(answers.values()) / 800 < 1 / msr_mod.COUNT_MAX + 0.05, (v, answers)
            assert set(by_n) == set(range(msr_mod.COUNT_MAX, msr_mod.MAX_SESSIONS + 1))
            # the count's distribution is the same whatever the number of sessions
            for n, c in by_n.items():
                assert max(c.values()) / sum(c.values()) < 1 / msr_mod.COUNT_MAX + 0.12, (v, n, c)
            assert hits / 800 < 0.1, (v, hits)  # only n = k = 4 can agree


def test_planned_answers_follow_want(ab, topics):
    """A wanted class (balanced per build by the crawl stage) is the answer the draft derives."""
    for sub, v in _cases(ab):
        classes = ab.answer_classes(sub, v)
        if not classes:
            continue
        for j, want in enumerate(classes):
            rng = random.Random(f"want-{v}-{j}")
            p = ab.plan(rng, topics[j], sub, v, f"pw{j}", set(), want=want)
            trng = random.Random(j)
            truths = [get_family(r.family).sample(trng, **r.constraints) for r in p.images]
            d = ab.build(random.Random(j), p, truths)
            assert d.answer == want, (sub, v, want, d.answer)
    with pytest.raises(ValueError, match="cannot be planned"):
        ab.plan(random.Random(0), topics[0], "counting", "on_sale", "px", set(), want="9")


def test_determinism_and_reserved_contexts(ab, topics):
    for sub, v in _cases(ab):
        a = _make(ab, topics, sub, v, 3)
        b = _make(ab, topics, sub, v, 3)
        assert a[0].to_dict() == b[0].to_dict()
        assert dataclasses.asdict(a[2]) == dataclasses.asdict(b[2])
    reserved: set[str] = set()
    themes = []
    for i in range(60):
        sub, v = _cases(ab)[i % len(_cases(ab))]
        rng = random.Random(i)
        p = ab.plan(rng, topics[i], sub, v, f"p{i}", reserved)
        themes.append(p.latent["theme"])
        assert p.latent["theme"] in reserved
    assert len(set(themes)) == len(themes)


def test_chance_answers(ab, topics):
    rng = random.Random(0)
    for sub, v in _cases(ab):
        _, _, d = _make(ab, topics, sub, v, 1)
        q = Question(
            question_id="q_test",
            question_type=MSR,
            question_subtype=sub,
            question=d.question,
            answer=d.answer,
            question_date="2024/05/31 (Fri) 07:58",
            details=dict(d.details),
        )
        seen = set()
        for _ in range(60):
            g = ab.chance_answer(q, rng)
            seen.add(g)
            fmt = d.details["answer_format"]
            if fmt == "currency":
                assert re.match(MONEY[d.details["currency"]], g), g
            elif fmt == "integer":
                assert g.isdigit() and 0 <= int(g) <= 8
            else:
                assert g in ("Yes", "No")
        assert len(seen) > 1


def test_constraints_render_and_pass_metadata(ab, topics):
    import imagehash
    from PIL import Image

    from memlens.construction.filter.channels import MetadataChannel

    chan = MetadataChannel()

    class Rec:
        def __init__(self, truth):
            self.truth = truth

    for sub, v in _cases(ab):
        plan, truths, _ = _make(ab, topics, sub, v, 7)
        for r, t in list(zip(plan.images, truths))[:2]:
            data, ext = render_bytes(t)
            assert data and ext in ("jpg", "png")
            assert chan.score(None, Rec(t), {"constraints": r.constraints}) >= chan.threshold
    # a shop front seen twice: the two shots stay apart for the near-duplicate filter (pHash > 12)
    checked = 0
    for seed in range(40):
        plan, truths, _d = _make(ab, topics, "entity_resolution", "count_distinct_sign", seed)
        names = [t["text"] for t in truths]
        rep = next((nm for nm in names if names.count(nm) > 1), None)
        if rep is None:  # every place different: nothing seen twice
            continue
        checked += 1
        i, j = [k for k, nm in enumerate(names) if nm == rep][:2]
        h = [
            imagehash.phash(Image.open(io.BytesIO(render_bytes(truths[k])[0])).convert("RGB"), hash_size=16)
            for k in (i, j)
        ]
        assert h[0] - h[1] > 12
        if checked >= 3:
            break
    assert checked >= 3


def test_brand_counting_fallback(ab, topics):
    """Counting by brand needs count-by-value; the local evaluator implements the proposed op."""
    rng = random.Random(5)
    latent = {"theme": "the flea market with Maya", "n": 5}
    images = ab._plan_counting(rng, "brand", 5, latent)
    ab._plan_outing(rng, images, latent)
    n = len(images)
    latent["mention_seeds"] = list(range(1, n + 1))
    plan = msr_mod.Plan("p_b", MSR, "counting", "brand", topics[0].topic_id, "x", images, latent)
    truths = [get_family(r.family).sample(random.Random(k), **r.constraints) for k, r in enumerate(images)]
    d = ab.build(random.Random(1), plan, truths)
    assert d.derivation["op"] == "count" and d.derivation["value"] == "Yes"
    assert msr_mod.evaluate_local(d.derivation, truths) == d.answer == str(len(latent["matching"]))
    assert msr_mod.evaluate_local(d.derivation, [None] * n) is None
    assert ("brand" in ab.variants["counting"]) == msr_mod.COUNT_BY_VALUE


def test_answer_refusal_wraps_msr(topics):
    ar = registry()["answer_refusal"]
    srcs = [(a, s, v) for a, s, v in ar.sources if a.question_type == MSR]
    assert srcs
    for _, sub, v in srcs[:4]:
        rng = random.Random(v)
        inner = ability_for(MSR).plan(rng, topics[0], sub, v, "p_ar", set())
        plan = msr_mod.Plan(
            "p_ar",
            "answer_refusal",
            "",
            f"{MSR}/{sub}/{v}",
            inner.topic_id,
            inner.subtopic,
            [],
            {"source": inner.to_dict()},
        )
        d = ar.build(random.Random(2), plan, [])
        assert d.contexts == [inner.latent["theme"]]
        assert [f.image_idx for f in d.facts] == [[]] and inner.latent["theme"] in d.facts[0].mention
