"""Temporal Reasoning (TR) question type: plans, drafts, derivations, leakage and chance answers."""

from __future__ import annotations

import random
import re
from datetime import datetime

import pytest

from memlens.construction.abilities import ability_for
from memlens.construction.abilities import tr as T
from memlens.construction.abilities.base import Plan
from memlens.construction.abilities.derive import derive
from memlens.construction.images.synthetic import get_family, render_bytes
from memlens.construction.ontology.stage import build_topics, load_ontology_file
from memlens.construction.text.validators import contains_token_bounded
from memlens.core.schema import AR, IMAGE_PLACEHOLDER, REFUSAL_REFERENCE, TR, Question, parse_date

OFFICIAL = {"duration_comparison", "order_ranking", "temporal_info_extraction"}
ALL_VARIANTS = {
    "duration_comparison": ["mode_B", "mode_C", "mode_D", "mode_B_clock"],
    "order_ranking": ["mode_B_show", "mode_B_flight", "mode_B_receipt", "mode_B_calendar"],
    "temporal_info_extraction": ["B_calendar", "B_ticket", "B_receipt"],
}
SEEDS = range(12)
MONTH_RE = re.compile(r"\b(" + "|".join(T.MONTHS) + r")\b")


@pytest.fixture(scope="module")
def topics():
    return build_topics(load_ontology_file(), 42)


@pytest.fixture(scope="module")
def ability():
    return ability_for(TR)


def make(ability, topics, sub, variant, seed, reserved=None):
    rng = random.Random(f"tr-test-{sub}-{variant}-{seed}")
    topic = topics[rng.randrange(len(topics))]
    plan = ability.plan(rng, topic, sub, variant, f"p_{seed}", set() if reserved is None else reserved)
    trng = random.Random(seed * 7919 + 1)
    truths = [get_family(r.family).sample(trng, **r.constraints) for r in plan.images]
    draft = ability.build(random.Random(seed), plan, truths)
    return plan, truths, draft


@pytest.fixture(scope="module")
def built(ability, topics):
    out = []
    reserved: set[str] = set()
    for sub, vs in ALL_VARIANTS.items():
        for v in vs:
            for s in SEEDS:
                out.append((sub, v, s, *make(ability, topics, sub, v, s, reserved)))
    return out


def test_registry_and_variants(ability):
    assert ability.question_type == TR == "temporal_reasoning"
    assert type(ability).__name__ == "TemporalReasoning"
    assert set(ability.variants) == OFFICIAL
    for sub, vs in ability.variants.items():
        assert set(vs) <= set(ALL_VARIANTS[sub])
        for v in vs:
            assert ability.families[v]
    # date extraction reads printed dates only: a session-anchored date is one of the few evidence
    # sessions' dates (see the module docstring)
    assert ability.variants["temporal_info_extraction"] == ["B_calendar", "B_ticket", "B_receipt"]


def test_derivation_and_formats(built):
    for sub, v, s, plan, truths, d in built:
        ctx = {"evidence_dates": [f.at for f in d.facts]}
        assert derive(d.derivation, truths, ctx) == d.answer, (sub, v, s)
        assert plan.question_subtype == sub and plan.question_type == TR
        fmt = d.details["answer_format"]
        if sub == "duration_comparison":
            assert fmt == "ab" and d.answer in ("A", "B") and d.derivation["op"] == "longer"
            assert "(A)" in d.question and "(B)" in d.question
            a, b = d.details["durations"]
            assert abs(a - b) >= max(2, 0.2 * max(a, b)) and min(a, b) > 0
        elif sub == "order_ranking":
            assert fmt == "order" and d.derivation["op"] == "order"
            labels = re.findall(r"\((\d+)\)", d.question)
            n = len(labels)
            assert 3 <= n <= 5 and labels == [str(i) for i in range(1, n + 1)]
            got = re.findall(r"\((\d+)\)", d.answer)
            assert sorted(got) == labels and re.fullmatch(r"(\(\d\))+", d.answer)
            # the listing is a uniform permutation: the listed order may itself be the answer
        else:
            assert fmt == "date" and re.fullmatch(r"\d{4}/\d{2}/\d{2}", d.answer)
            assert d.question.endswith("Answer in YYYY/MM/DD.")
            assert d.answer < d.question_date[:10]


def test_text_only_fails(built, ability):
    for sub, v, s, _plan, truths, d in built:
        ctx = {"evidence_dates": [f.at for f in d.facts]}
        no_img = derive(d.derivation, [None] * len(truths), ctx)
        assert no_img is None or no_img != d.answer, (sub, v, s)


def test_time_line(built):
    for _sub, _v, _s, plan, truths, d in built:
        q = parse_date(d.question_date)
        ats = [parse_date(f.at) for f in d.facts]
        assert all(a < q for a in ats) and all((q - a).days < T.HISTORY_SPAN_DAYS for a in ats)
        assert len({a.date() for a in ats}) == len(ats)  # one evidence session per day
        for f, t in zip(plan.latent["facts"], truths):
            if f["family"] in ("ticket", "receipt"):  # an artifact's date is never its session's date
                assert t["date"] != f["at"][:10]
        if d.details["answer_format"] == "date":
            assert parse_date(d.question_date).strftime("%Y/%m/%d") > d.answer
            if d.details["mode"] == "B":
                assert all(f.at[:10] != d.answer for f in d.facts)


def test_mentions_and_leakage(built):
    for _sub, _v, _s, plan, truths, d in built:
        assert d.image_essential and d.question_date
        assert len(d.facts) == len(plan.images) == len(truths)
        for k, (f, t) in enumerate(zip(d.facts, truths)):
            assert f.image_idx == [k]
            assert f.mention.count(IMAGE_PLACEHOLDER) == 1
            for bad in d.forbidden:
                assert not contains_token_bounded(f.mention, bad), (f.mention, bad)
            for drawn in t.get("texts", []):
                if len(str(drawn).strip()) > 1:
                    assert not contains_token_bounded(f.mention, str(drawn)), (f.mention, drawn)
            assert not re.search(r"\d", f.mention)  # dates and times are written in words
        # the named things only images show are forbidden everywhere
        for ev in plan.latent["events"]:
            for key in ("entity", "city", "show", "store"):
                if ev.get(key):
                    assert ev[key] in d.forbidden
        if d.details["answer_format"] == "date":
            assert d.answer in d.forbidden
            assert not any(MONTH_RE.search(f.mention) for f in d.facts)  # no textual date at all
        if d.details["mode"] == "C":
            assert any(MONTH_RE.search(f.mention) for f in d.facts)
        else:
            assert not any(MONTH_RE.search(f.mention) for f in d.facts)


def test_details_labels(built):
    for sub, v, _s, plan, _truths, d in built:
        det = d.details
        assert det["mode"] in ("B", "C", "D") and det["mode"] == (v[5] if v.startswith("mode_") else v[0])
        assert det["temporal_sources"] and set(det["temporal_sources"]) <= {
            "ticket",
            "receipt",
            "calendar_page",
            "clock",
            "textual_date",
            "textual_time",
            "session_timestamp",
            "relative_expression",
        }
        fams = {r.family for r in plan.images}
        if sub != "temporal_info_extraction" and not v.endswith("clock"):
            # every comparison or ordering has at least one date printed only on an artifact
            assert fams & {"ticket", "receipt", "calendar_page"}
        if det["mode"] in ("C", "D"):
            assert "named_sign" in fams
            ents = [r.constraints["text"] for r in plan.images if r.family == "named_sign"]
            named = [e for e in ents if e in d.question]
            assert len(set(ents)) == len(ents) and named == ents
            assert sub == "duration_comparison"  # date extraction reads printed dates only
        if det["mode"] == "D":
            assert "session_timestamp" in det["temporal_sources"]
        if v.endswith("clock"):
            assert det["unit"] == "minutes" and fams == {"clock"}


def test_no_weekday_names_the_printed_day(ability, topics):
    """An occasion never carries " on Friday": with the session's date it names the printed day
    (a receipt "from the market on Friday" kept two days later)."""
    seen = 0
    for sub, v in [("temporal_info_extraction", "B_receipt"), ("temporal_info_extraction", "B_ticket")]:
        for s in range(40):
            _plan, _truths, d = make(ability, topics, sub, v, s)
            for f in d.facts:
                seen += 1
                assert not re.search(r"\bon (Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b", f.mention), (v, s, f.mention)
    assert seen >= 80


def test_determinism(ability, topics):
    for sub, vs in ALL_VARIANTS.items():
        for v in vs:
            p1, t1, d1 = make(ability, topics, sub, v, 3)
            p2, _t2, d2 = make(ability, topics, sub, v, 3)
            assert p1.to_dict() == p2.to_dict() and d1 == d2
            # plans survive their JSON round trip
            p3 = Plan.from_dict(p1.to_dict())
            assert ability.build(random.Random(3), p3, t1) == d1


def test_reserved_contexts(ability, topics):
    reserved: set[str] = set()
    seen = []
    for s in range(20):
        _plan, _, d = make(ability, topics, "temporal_info_extraction", "B_calendar", s, reserved)
        assert d.contexts and set(d.contexts) <= reserved
        seen.extend(d.contexts)
    assert len(seen) == len(set(seen))  # calendars the questions name are never shared


def test_chance_answers(built, ability):
    rng = random.Random(0)
    for sub, _v, s, _plan, _truths, d in built:
        q = Question(
            question_id=f"q{s}",
            question_type=TR,
            question_subtype=sub,
            question=d.question,
            answer=d.answer,
            question_date=d.question_date,
            details=d.details,
        )
        for _ in range(3):
            g = ability.chance_answer(q, rng)
            if sub == "duration_comparison":
                assert g in ("A", "B")
            elif sub == "order_ranking":
                assert sorted(re.findall(r"\((\d+)\)", g)) == sorted(re.findall(r"\((\d+)\)", d.question))
            else:
                assert re.fullmatch(r"\d{4}/\d{2}/\d{2}", g)
                days = (parse_date(d.question_date).date() - datetime.strptime(g, "%Y/%m/%d").date()).days
                assert 1 <= days <= T.CHANCE_WINDOW_DAYS
    # official items carry no details: the subtype alone decides the format
    q = Question(
        question_id="q",
        question_type=TR,
        question_subtype="order_ranking",
        question="Order: (1) a (2) b (3) c (4) d",
        answer="(2)(1)(3)(4)",
        question_date="2024/05/31 (Fri) 07:58",
    )
    assert sorted(ability.chance_answer(q, rng)) == sorted("(1)(2)(3)(4)")


def test_answer_refusal_wraps_tr(ability, topics):
    ar = ability_for(AR)
    tr_sources = [x for x in ar.sources if x[0] is ability]
    assert {(sub, v) for _, sub, v in tr_sources} == {(sub, v) for sub, vs in ability.variants.items() for v in vs}
    rng = random.Random(5)
    for i in range(6):
        p = ar.plan(rng, topics[i], "", "from_answerable", f"ar{i}", set())
        d = ar.build(random.Random(i), p, [])
        assert d.answer == REFUSAL_REFERENCE
        # only a named context (a calendar page) is discussed; no fact ever shows an image
        assert all(f.image_idx == [] and "<image>" not in f.mention for f in d.facts)
        assert len(d.facts) == (1 if [c for c in d.contexts if c in d.question] else 0)


def test_images_render(ability, topics):
    """A few requests of every TR family render with their constraints honoured."""
    seen = set()
    for sub, vs in ALL_VARIANTS.items():
        for v in vs:
            plan, truths, _ = make(ability, topics, sub, v, 1)
            for r, t in zip(plan.images, truths):
                key = (r.family, r.constraints.get("kind"))
                if key in seen:
                    continue
                seen.add(key)
                data, ext = render_bytes(t)
                assert len(data) > 1000 and ext in ("png", "jpg")
    assert {f for f, _ in seen} == {"ticket", "receipt", "calendar_page", "named_sign", "clock"}


def test_words_helpers():
    from datetime import date

    assert T.date_words(date(2024, 3, 3), date(2024, 3, 20)) == "the third of March"
    assert T.date_words(date(2023, 12, 31), date(2024, 1, 5)) == "the thirty-first of December last year"
    assert T.time_words("09:15") == "a quarter past nine in the morning"
    assert T.time_words("13:40") == "twenty to two in the afternoon"
    assert T.time_words("08:00") == "eight o'clock in the morning"
    assert T.time_words("14:55") == "five to three in the afternoon"
    assert "2024-05-31" in T.answer_forms("2024/05/31") and "May 31, 2024" in T.answer_forms("2024/05/31")


def _pick_evaluate(orig):
    """The proposed ``pick`` op: the value of the first case whose key equals ``match``."""

    def evaluate(prog, truths, context=None):
        if prog.get("op") == "pick":
            want = str(prog["match"]).strip().lower()
            for key, val in prog["cases"]:
                if str(evaluate(key, truths, context)).strip().lower() == want:
                    return evaluate(val, truths, context)
            raise ValueError("pick: no case matches")
        return orig(prog, truths, context)

    return evaluate


def _picks(prog):
    """Every ``pick`` sub-program of a derivation."""
    if isinstance(prog, dict):
        if prog.get("op") == "pick":
            yield prog
        for v in prog.values():
            yield from _picks(v)
    elif isinstance(prog, list):
        for v in prog:
            yield from _picks(v)


def test_entity_anchors_with_pick(monkeypatch, ability, topics):
    """With a ``pick`` op, entity anchors select their image by name and mode C/D durations are not
    derivable from the texts' and sessions' dates alone."""
    import memlens.construction.abilities.derive as dv

    monkeypatch.setattr(dv, "evaluate", _pick_evaluate(dv.evaluate))
    monkeypatch.setattr(T, "HAS_PICK", True)
    assert T._probe_pick()
    swapped = changed = 0
    for sub, v in [("duration_comparison", "mode_C"), ("duration_comparison", "mode_D")]:
        for s in range(6):
            plan, truths, d = make(ability, topics, sub, v, s)
            ctx = {"evidence_dates": [f.at for f in d.facts]}
            assert "pick" in str(d.derivation)
            assert derive(d.derivation, truths, ctx) == d.answer
            assert derive(d.derivation, [None] * len(truths), ctx) is None
            # swapping two entity images changes what the derivation selects: each name now
            # selects the value (session date) tied to the image that shows it after the swap
            ents = [k for k, r in enumerate(plan.images) if r.family == "named_sign"]
            if len(ents) < 2:
                continue
            a, b = ents[0], ents[1]
            sw = list(truths)
            sw[a], sw[b] = sw[b], sw[a]
            moved = {a: b, b: a}
            for pick in _picks(d.derivation):
                value_of = {key["img"]: derive(val, truths, ctx) for key, val in pick["cases"]}
                shows = next(k for k in value_of if truths[k]["text"] == pick["match"])
                assert derive(pick, truths, ctx) == value_of[shows]
                assert derive(pick, sw, ctx) == value_of[moved.get(shows, shows)]
                if shows in moved and value_of[a] != value_of[b]:
                    assert derive(pick, sw, ctx) != derive(pick, truths, ctx)
            swapped += 1
            changed += derive(d.derivation, sw, ctx) != d.answer
    assert swapped and changed  # the answer depends on which image shows which entity


def test_show_phrase():
    assert T.show_phrase("Velvet Static", "concert") == 'the "Velvet Static" concert'
    assert T.show_phrase("The Printmakers' Year", "exhibition") == '"The Printmakers\' Year" exhibition'
    assert T.show_phrase("Lantern River Festival", "festival") == 'the "Lantern River Festival"'


# ---------------------------------------------------------------------------------- issue 19
TIME_PHRASE = re.compile(
    r"\b(yesterday|this morning|tonight|last (night|week|month|year)|the other day|ago|in spring|"
    r"back in winter|on (Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday))\b",
    re.I,
)
ORDINAL_DATE = re.compile(r"\bthe \w+(-\w+)? of (" + "|".join(T.MONTHS) + r")\b")


def _rank(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0] * len(xs)
    for k, i in enumerate(order):
        r[i] = k
    return r


def _spearman(a, b):
    ra, rb = _rank(a), _rank(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den


def _order_items(ability, n_per_variant=50):
    out = []
    for v in ability.variants["order_ranking"]:
        for i in range(n_per_variant):
            rng = random.Random(f"or-{v}-{i}")
            p = ability.plan(rng, _TOPICS[i % len(_TOPICS)], "order_ranking", v, f"po{i}", set())
            out.append((v, p))
    return out


_TOPICS = build_topics(load_ontology_file(), 42)


def test_order_ranking_sessions_independent_of_event_order(ability):
    """Over many seeded items, the order of the sessions that share the events (and of the facts,
    the evidence list) is uncorrelated with the events' order; every listing is a permutation of
    the events drawn uniformly."""
    rho_time, rho_fact, answers = [], [], []
    for v, p in _order_items(ability):
        lat = p.latent
        evs = lat["events"]
        facts = lat["facts"]
        if v.endswith("calendar"):
            assert len(facts) == 1  # one calendar page, one session: nothing to order by
            continue
        assert len(facts) == len(evs) == lat["n_events"]
        days = [ev["day"] for ev in evs]
        ats = [facts[ev["fact"]]["at"] for ev in evs]
        rho_time.append(_spearman(ats, days))
        rho_fact.append(_spearman([ev["fact"] for ev in evs], days))
        answers.append(lat["planned_answer"])
        # each session is consistent with its turn: receipts and passes after, tickets either side
        for ev in evs:
            sday, eday = ats[evs.index(ev)][:10], ev["day"]
            if v.endswith(("receipt", "flight")):
                assert sday > eday, (v, sday, eday)
    for rhos in (rho_time, rho_fact):
        mean = sum(rhos) / len(rhos)
        assert abs(mean) < 0.12, mean
    # the reference is not always the listed order nor its reverse
    assert len(set(answers)) > 10


def test_order_ranking_turns_carry_no_date(ability):
    """No written date and no time phrase in an order-ranking evidence turn, one artifact kind
    per question, and each event named by what only its image prints."""
    for _v, p in _order_items(ability, 12):
        trng = random.Random(p.plan_id)
        truths = [get_family(r.family).sample(trng, **r.constraints) for r in p.images]
        d = ability.build(random.Random(p.plan_id), p, truths)
        assert len({(f["family"], f["constraints"].get("kind")) for f in p.latent["facts"]}) == 1
        assert {f["family"] for f in p.latent["facts"]} <= {"ticket", "receipt", "calendar_page"}
        for f in d.facts:
            assert not MONTH_RE.search(f.mention) and not ORDINAL_DATE.search(f.mention), f.mention
            assert not TIME_PHRASE.search(f.mention), f.mention
            assert not any(ch.isdigit() for ch in f.mention), f.mention
        for f in p.latent["facts"]:
            assert f["when"] is None and f["tail"] is None and not f["force_when"]
        names = [ev.get("city") or ev.get("show") or ev.get("store") or ev.get("label") for ev in p.latent["events"]]
        assert all(nm and nm in d.question for nm in names), (names, d.question)
        for f in d.facts:
            assert not any(contains_token_bounded(f.mention, nm) for nm in names), f.mention


def test_duration_comparison_letters_follow_want_and_options_match(ability):
    """A wanted letter is the answer; both options are intervals of one kind."""
    for v in ability.variants["duration_comparison"]:
        for j, want in enumerate(("A", "B") * 4):
            rng = random.Random(f"dc-{v}-{j}")
            p = ability.plan(rng, _TOPICS[j], "duration_comparison", v, f"pd{j}", set(), want=want)
            assert p.latent["planned_answer"] == want
            k1, k2 = p.latent["interval_kinds"]
            assert k1 == k2
            arts = {
                f["constraints"].get("kind") or f["family"] for f in p.latent["facts"] if f["family"] != "named_sign"
            }
            assert len(arts) <= 1, arts
    with pytest.raises(ValueError, match="cannot be planned"):
        ability.plan(random.Random(0), _TOPICS[0], "order_ranking", "mode_B_show", "px", set(), want="A")
