"""assemble stage on a hand-made session pool: lengths, evidence, dates, nesting across lengths, seeds."""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta

import pytest
from omegaconf import OmegaConf

from memlens.construction.assemble import stage as A
from memlens.construction.assemble.tokens import TokenCounter
from memlens.core.config import Paths, length_tokens
from memlens.core.errors import MemLensError
from memlens.core.io import read_json, read_records, write_jsonl
from memlens.core.schema import (
    IMAGE_PLACEHOLDER,
    Evidence,
    ImageRecord,
    Instance,
    Question,
    Session,
    Topic,
    Turn,
    format_date,
    parse_date,
)
from tests.support.settings import settings

TOKENS = {"tokenizer": "minilm", "image_rule": "mmlongbench", "patch": 28, "max_side": 896, "fixed_per_image": 2000}
TOL = 0.01
LENGTHS = ("8k", "16k")
WORDS = [
    "the",
    "a",
    "we",
    "garden",
    "trip",
    "kitchen",
    "recipe",
    "market",
    "weekend",
    "friend",
    "bicycle",
    "coffee",
    "train",
    "river",
    "museum",
    "morning",
    "evening",
    "plan",
    "budget",
    "paint",
    "window",
    "shelf",
    "lamp",
    "rain",
    "summer",
    "winter",
    "jacket",
    "ticket",
    "phone",
    "camera",
    "dinner",
    "lunch",
    "story",
    "book",
    "song",
    "movie",
    "walk",
    "bus",
    "street",
    "house",
    "city",
    "village",
]
QDATE = datetime(2024, 9, 1, 10, 0)


def _cfg(cross_evidence: dict):
    """The settings of a stage run on the hand-built inputs (no history shape: token length only)."""
    data = {"seed": 42, "length_tolerance": TOL, "lengths": list(LENGTHS), "tokens": TOKENS, "shape": {}}
    return settings(data={**data, "cross_evidence": cross_evidence})


def sha(i: int) -> str:
    return f"{i:064x}"


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def make_session(rng, sid: str, kind: str, topic: str, images: list[str], n_turns: int) -> Session:
    turns = []
    for k in range(n_turns):
        imgs = images if k == 0 else []
        body = text(rng, rng.randint(30, 220))
        if imgs:
            body += " Look: " + " ".join([IMAGE_PLACEHOLDER] * len(imgs))
        turns.append(Turn(role="user" if k % 2 == 0 else "assistant", content=body, images=imgs))
    return Session(session_id=sid, kind=kind, topic_id=topic, turns=turns)


def build_inputs():
    """Topics on two tracks, 6 questions (IE, MSR and KU ordered, TR), 110 haystack and 60 filler sessions."""
    rng = random.Random(1)
    topics = [
        Topic(
            topic_id=f"t{i}",
            track=("identification", "experience", "document")[i % 3],
            sub_attribute=f"sub{i % 4}",
            title=f"topic {i}",
        )
        for i in range(8)
    ]
    images, sessions, n_img = {}, {}, 0

    def new_images(k):
        nonlocal n_img
        out = []
        for _ in range(k):
            w, h = rng.choice([(280, 280), (560, 420), (1200, 900)])
            images[sha(n_img)] = ImageRecord(
                sha256=sha(n_img), family="photo", role="haystack", width=w, height=h, format="png", source="test"
            )
            out.append(sha(n_img))
            n_img += 1
        return out

    for i in range(110):
        s = make_session(rng, f"h{i:03d}", "haystack", f"t{i % 8}", new_images(rng.randint(0, 2)), rng.randint(2, 6))
        sessions[s.session_id] = s
    for i in range(60):
        s = make_session(rng, f"f{i:03d}", "filler", f"t{i % 8}", [], rng.randint(1, 6))
        sessions[s.session_id] = s
    spec = [
        ("information_extraction", "entity", 1, False, "t1"),
        ("multi_session_reasoning", "counting", 3, True, "t2"),
        ("knowledge_update", "", 2, True, "t3"),
        ("temporal_reasoning", "order_ranking", 3, True, "t4"),
        ("temporal_reasoning", "duration_comparison", 2, False, "t5"),
        ("answer_refusal", "", 0, False, "t6"),
    ]
    questions = []
    for qi, (qt, st, n_ev, ordered, topic) in enumerate(spec):
        ev = []
        for j in range(n_ev):
            s = make_session(rng, f"e{qi}_{j}", "evidence", topic, new_images(1), 4)
            sessions[s.session_id] = s
            # ordered evidence: earliest first; unordered: listed out of time order
            days = 200 - 60 * j if ordered else 30 + 50 * j
            ev.append(
                Evidence(
                    session_id=s.session_id,
                    date=format_date(QDATE - timedelta(days=days, minutes=7 * qi)),
                    fact=f"fact {j}",
                    image_ids=s.image_ids,
                )
            )
        questions.append(
            Question(
                question_id=f"q{qi}",
                question_type=qt,
                question_subtype=st,
                question=f"question {qi}?",
                answer="x",
                question_date=format_date(QDATE + timedelta(hours=qi)),
                topic_id=topic,
                evidence=ev,
                ordered_evidence=ordered,
            )
        )
    return topics, images, sessions, questions


@pytest.fixture(scope="module")
def inputs():
    return build_inputs()


@pytest.fixture(scope="module")
def counter():
    return TokenCounter(OmegaConf.create(TOKENS))


@pytest.fixture(scope="module")
def pool(inputs, counter):
    topics, images, sessions, _ = inputs
    return A.Pool(sessions, images, counter, {t.topic_id: t for t in topics}, inputs[3])


@pytest.fixture(scope="module")
def header(counter):
    return counter.text(A.SESSION_HEADER.format(i=12, date="2024/05/31 (Fri) 07:58"))


def assemble(inputs, pool, counter, header, seed=42, lengths=LENGTHS):
    out = {}
    for q in inputs[3]:
        for ln, inst in A.assemble_lengths(q, list(lengths), pool, counter, seed, TOL, header).items():
            out[(q.question_id, ln)] = inst
    return out


@pytest.fixture(scope="module")
def built(inputs, pool, counter, header):
    return assemble(inputs, pool, counter, header)


def recount(inst: Instance, q: Question, sessions, images, counter, header) -> tuple[int, int, int]:
    """(total, image tokens, images) of a history counted from scratch, session by session."""
    total = counter.text(A.question_overhead_text(q.question_date, q.question))
    itok = n = 0
    for sid in inst.session_ids:
        t, i, k = counter.session(sessions[sid], images)
        total += t + i + header
        itok += i
        n += k
    return total, itok, n


def test_every_instance_is_within_tolerance_of_its_target(inputs, built, counter, header):
    _, images, sessions, questions = inputs
    qs = {q.question_id: q for q in questions}
    for (qid, ln), inst in built.items():
        total, itok, n = recount(inst, qs[qid], sessions, images, counter, header)
        assert (inst.total_tokens, inst.image_tokens, inst.n_images) == (total, itok, n), (qid, ln)
        assert inst.text_tokens == total - itok
        assert inst.target_tokens == length_tokens(ln)
        assert abs(total - inst.target_tokens) <= TOL * inst.target_tokens, (qid, ln, total)
        assert len(set(inst.session_ids)) == len(inst.session_ids)  # no session twice


def test_evidence_sessions_keep_their_dates_and_order(inputs, built):
    for q in inputs[3]:
        fixed = {e.session_id: e.date for e in q.evidence}
        for ln in LENGTHS:
            inst = built[(q.question_id, ln)]
            assert inst.answer_session_ids == q.evidence_session_ids
            dates = dict(zip(inst.session_ids, inst.dates))
            assert all(dates[s] == d for s, d in fixed.items())
            pos = [inst.session_ids.index(s) for s in q.evidence_session_ids]
            if q.ordered_evidence:  # MSR / KU / TR order: the history shows the facts in their order
                assert pos == sorted(pos), (q.question_id, ln)


def test_history_is_sorted_and_before_the_question(inputs, built):
    for q in inputs[3]:
        qdate = parse_date(q.question_date)
        for ln in LENGTHS:
            inst = built[(q.question_id, ln)]
            when = [parse_date(d) for d in inst.dates]
            assert when == sorted(when)
            assert all(w < qdate for w in when), (q.question_id, ln)
            assert qdate - min(when) <= timedelta(days=A.HISTORY_SPAN_DAYS + 1)


def test_longer_length_extends_the_shorter(inputs, built):
    sessions = inputs[2]
    for q in inputs[3]:
        short, long = built[(q.question_id, "8k")], built[(q.question_id, "16k")]
        assert (short.question_id, short.answer_session_ids) == (long.question_id, long.answer_session_ids)
        s_dates, l_dates = dict(zip(short.session_ids, short.dates)), dict(zip(long.session_ids, long.dates))
        shared = set(s_dates) & set(l_dates)
        assert all(s_dates[s] == l_dates[s] for s in shared)  # a session keeps its date at every length
        assert set(s_dates) <= set(l_dates), q.question_id  # every session of the shorter history
        extra = [s for s in long.session_ids if s not in s_dates]
        assert extra and all(sessions[s].kind in ("haystack", "filler") for s in extra)


def test_one_length_alone_is_the_same_history_as_in_a_run_of_several(inputs, pool, counter, header, built):
    for q in inputs[3]:
        alone = A.assemble_one(q, "8k", pool, counter, 42, TOL, header)
        assert alone.to_dict() == built[(q.question_id, "8k")].to_dict()


def test_same_seed_same_histories_other_seed_other_histories(inputs, pool, counter, header, built):
    again = assemble(inputs, pool, counter, header, seed=42)
    assert {k: v.to_dict() for k, v in again.items()} == {k: v.to_dict() for k, v in built.items()}
    other = assemble(inputs, pool, counter, header, seed=43)
    changed = [k for k in built if other[k].session_ids != built[k].session_ids]
    assert len(changed) == len(built)  # every history is reshuffled by the seed
    for k in built:  # ... but not what defines the question
        assert other[k].answer_session_ids == built[k].answer_session_ids
        assert abs(other[k].total_tokens - other[k].target_tokens) <= TOL * other[k].target_tokens


def test_haystack_prefers_the_questions_sub_attribute(inputs, pool, built):
    topics = {t.topic_id: t for t in inputs[0]}
    sessions = inputs[2]
    hay = pool.haystack
    for q in inputs[3]:
        qt = topics[q.topic_id]
        related = lambda sid, qt=qt: topics[sessions[sid].topic_id].sub_attribute == qt.sub_attribute  # noqa: E731
        base = sum(map(related, hay)) / len(hay)
        inst = built[(q.question_id, "8k")]
        picked = [s for s in inst.session_ids if sessions[s].kind == "haystack"]
        assert sum(map(related, picked)) / len(picked) > base, q.question_id


def test_pool_too_small_is_a_clear_error(inputs, counter, header):
    topics, images, sessions, questions = inputs
    few = {sid: s for sid, s in sessions.items() if s.kind == "evidence" or sid in ("h000", "h001", "f000")}
    small = A.Pool(few, images, counter, {t.topic_id: t for t in topics})
    q = questions[0]
    with pytest.raises(MemLensError) as exc:
        A.assemble_one(q, "16k", small, counter, 42, TOL, header)
    msg = str(exc.value)
    assert q.question_id in msg and "16k" in msg and "haystack_sessions" in msg and "filler_sessions" in msg


def test_run_writes_sorted_instances_and_manifest_table(tmp_path, inputs, built):
    topics, images, sessions, questions = inputs
    root = tmp_path / "proj"
    d = root / "data"
    write_jsonl(d / "ontology" / "topics.jsonl", topics)
    write_jsonl(d / "generated" / "questions.jsonl", list(reversed(questions)))
    write_jsonl(d / "generated" / "sessions.jsonl", [sessions[k] for k in sorted(sessions)])
    write_jsonl(d / "images" / "index.jsonl", [{"image": r.to_dict()} for r in images.values()])
    cfg = _cfg({"enabled": False})
    A.run(cfg, Paths(root))
    table = read_json(d / "instances" / "manifest.json")["table"]
    for ln in LENGTHS:
        insts = read_records(d / "instances" / f"{ln}.jsonl", Instance)
        assert [i.question_id for i in insts] == sorted(q.question_id for q in questions)
        assert [i.to_dict() for i in insts] == [built[(i.question_id, ln)].to_dict() for i in insts]
        assert table[ln]["instances"] == len(questions) and table[ln]["max_rel_error"] <= TOL
        assert table[ln]["mean_tokens"] == pytest.approx(sum(i.total_tokens for i in insts) / len(insts), abs=0.1)
    first = (d / "instances" / "16k.jsonl").read_bytes()
    A.run(cfg, Paths(root))
    assert (d / "instances" / "16k.jsonl").read_bytes() == first


def test_haystack_dates_follow_the_evidence_timing_law(inputs, built):
    """Every non-evidence session is dated by an evidence session of another question: the same
    whole-day distance to the question's day and the same minute of the day (a day earlier only when
    that time would not precede the question)."""
    questions = inputs[3]
    law = {}
    for q in questions:
        qd = parse_date(q.question_date)
        law[q.question_id] = {
            ((qd.date() - parse_date(e.date).date()).days, parse_date(e.date).hour * 60 + parse_date(e.date).minute)
            for e in q.evidence
        }
    for q in questions:
        qd = parse_date(q.question_date)
        others = set().union(*(v for k, v in law.items() if k != q.question_id))
        inst = built[(q.question_id, "16k")]
        ev = set(q.evidence_session_ids)
        for sid, d in zip(inst.session_ids, inst.dates):
            if sid in ev:
                continue
            w = parse_date(d)
            key = ((qd.date() - w.date()).days, w.hour * 60 + w.minute)
            assert key in others or (key[0] - 1, key[1]) in others, (q.question_id, sid, d)


def test_shape_targets_steer_sessions_and_images_per_history(inputs, pool, counter, header):
    """A history aims at data.shape's sessions and images: asking for fewer, larger sessions gives
    fewer sessions at the same token length, and asking for more images gives more images."""

    def mean(shape, what):
        vals = []
        for q in inputs[3]:
            inst = A.assemble_one(q, "16k", pool, counter, 42, TOL, header, shape)
            assert abs(inst.total_tokens - inst.target_tokens) <= TOL * inst.target_tokens
            vals.append(len(inst.session_ids) if what == "sessions" else inst.n_images)
        return sum(vals) / len(vals)

    # the pool's sessions average ~700 tokens: a 16k history holds about 16 to 40 of them
    few, many = mean({"16k": [18, 10]}, "sessions"), mean({"16k": [30, 10]}, "sessions")
    assert few < many - 6, (few, many)
    assert abs(few - 18) <= 5 and abs(many - 30) <= 3, (few, many)  # haystack first: few large fillers
    lo_img, hi_img = mean({"16k": [24, 4]}, "images"), mean({"16k": [24, 30]}, "images")
    assert lo_img < hi_img - 6, (lo_img, hi_img)
    assert A.shape_targets({"32k": [14, 20]}, "64k") == (28.0, 40.0)  # scaled from the nearest entry
    assert A.shape_targets({}, "32k")[0] == pytest.approx(32768 / A.DEFAULT_TOKENS_PER_SESSION)


def test_text_only_fillers_only_when_no_haystack_session_fits(inputs, built):
    """Evidence sessions always carry an image, so text-only sessions are kept rare: a filler is
    taken only when no haystack session of the window fits (at most a few per history)."""
    sessions = inputs[2]
    for (qid, ln), inst in built.items():
        kinds = Counter(sessions[s].kind for s in inst.session_ids)
        assert kinds["filler"] <= max(2, 0.15 * len(inst.session_ids)), (qid, ln, kinds)


def test_other_questions_evidence_is_haystack_too_and_sessions_recur_alike(tmp_path, inputs):
    """With ``data.cross_evidence`` a history also holds other questions' evidence sessions, with
    their own dates and never one that shows this question's anchors; evidence sessions then recur
    across the histories of a length about as often as haystack sessions (without it: once)."""
    topics, images, sessions, questions = inputs
    # a smaller haystack pool, so that haystack sessions recur too
    sessions = {k: v for k, v in sessions.items() if v.kind != "haystack" or int(k[1:]) < 40}
    named = sessions["e1_0"]
    turns = [Turn(role=t.role, content=t.content, images=t.images) for t in named.turns]
    turns[1] = Turn(role=turns[1].role, content=turns[1].content + " We met at Basil Hardware.", images=[])
    sessions["e1_0"] = Session(session_id="e1_0", kind="evidence", topic_id=named.topic_id, turns=turns)
    questions = [
        Question.from_dict({**q.to_dict(), "details": {"forbidden": ["Basil Hardware", "7"]}}) if i == 0 else q
        for i, q in enumerate(questions)
    ]
    root = tmp_path / "proj"
    d = root / "data"
    write_jsonl(d / "ontology" / "topics.jsonl", topics)
    write_jsonl(d / "generated" / "questions.jsonl", questions)
    write_jsonl(d / "generated" / "sessions.jsonl", [sessions[k] for k in sorted(sessions)])
    write_jsonl(d / "images" / "index.jsonl", [{"image": r.to_dict()} for r in images.values()])
    owner = {e.session_id: q for q in questions for e in q.evidence}
    ev_date = {e.session_id: e.date for q in questions for e in q.evidence}
    recur = {}
    for enabled in (False, True):
        cfg = _cfg({"enabled": enabled, "window_days": 30, "balance": 0.5})
        A.run(cfg, Paths(root))
        recur[enabled] = read_json(d / "instances" / "manifest.json")["table"]
        lent = 0
        for ln in LENGTHS:
            for inst in read_records(d / "instances" / f"{ln}.jsonl", Instance):
                assert inst.answer_session_ids == [e.session_id for e in owner_q(questions, inst).evidence]
                for sid, date in zip(inst.session_ids, inst.dates):
                    o = owner.get(sid)
                    if o is None or o.question_id == inst.question_id:
                        continue
                    lent += 1
                    assert date == ev_date[sid]  # its own date
                    assert parse_date(date) < parse_date(owner_q(questions, inst).question_date)
                    assert not (inst.question_id == "q0" and sid == "e1_0")  # names q0's anchor
        assert (lent > 0) == enabled
    keys = ("histories_per_evidence_session", "histories_per_other_session")
    for ln in LENGTHS:
        assert recur[False][ln][keys[0]] == 1.0
    ev, other = (recur[True]["16k"][k] for k in keys)
    assert ev > 1.2 and abs(ev - other) < abs(1.0 - recur[False]["16k"][keys[1]]), recur


def owner_q(questions, inst):
    return next(q for q in questions if q.question_id == inst.question_id)


def test_a_wider_lender_window_from_a_long_length_leaves_the_shorter_histories_unchanged(tmp_path, inputs):
    """``window_days_by_length``: from that length on a history may also take the evidence of
    questions asked further away; the histories of the shorter lengths are byte-identical."""
    topics, images, sessions, questions = inputs
    # a smaller haystack pool, so that haystack sessions recur (and lent ones have a share to fill)
    sessions = {k: v for k, v in sessions.items() if v.kind != "haystack" or int(k[1:]) < 30}
    # questions 10 days apart: a 5-day window lends nothing, a 100-day one lends every other question
    questions = [
        Question.from_dict({**q.to_dict(), "question_date": format_date(QDATE + timedelta(days=10 * i))})
        for i, q in enumerate(questions)
    ]
    root = tmp_path / "proj"
    d = root / "data"
    write_jsonl(d / "ontology" / "topics.jsonl", topics)
    write_jsonl(d / "generated" / "questions.jsonl", questions)
    write_jsonl(d / "generated" / "sessions.jsonl", [sessions[k] for k in sorted(sessions)])
    write_jsonl(d / "images" / "index.jsonl", [{"image": r.to_dict()} for r in images.values()])
    owner = {e.session_id: q.question_id for q in questions for e in q.evidence}
    out, lent = {}, {}
    for wide in (False, True):
        xcfg = {"enabled": True, "window_days": 5, "min_lenders": 0, "balance": 0.5}
        if wide:
            xcfg["window_days_by_length"] = {"16k": 100}
        A.run(_cfg(xcfg), Paths(root))
        out[wide] = {ln: (d / "instances" / f"{ln}.jsonl").read_bytes() for ln in LENGTHS}
        lent[wide] = {
            ln: sum(
                1
                for inst in read_records(d / "instances" / f"{ln}.jsonl", Instance)
                for s in inst.session_ids
                if owner.get(s, inst.question_id) != inst.question_id
            )
            for ln in LENGTHS
        }
    assert out[True]["8k"] == out[False]["8k"] and out[True]["16k"] != out[False]["16k"]
    assert lent[False] == {"8k": 0, "16k": 0} and lent[True]["8k"] == 0 and lent[True]["16k"] > 0
    for inst in read_records(d / "instances" / "16k.jsonl", Instance):  # still nested on 8k
        short = next(
            i for i in read_records(d / "instances" / "8k.jsonl", Instance) if i.question_id == inst.question_id
        )
        assert set(short.session_ids) <= set(inst.session_ids)


def test_balanced_share():
    # 1 + f S / E = (1 - f) S / H, by hand for S = 789 * 183.5, E = 2262, H = 1600: f = 0.5792
    f = A.balanced_share(789, 183.5, 2262, 1600)
    slots = 789 * 183.5
    assert 1 + f * slots / 2262 == pytest.approx((1 - f) * slots / 1600)
    assert f == pytest.approx(0.5792, abs=1e-4)
    assert A.balanced_share(0, 10, 5, 5) == A.LENT_SHARE


def _dating_law():
    """Timing patterns of three questions, each position's minute unique (so a date names its pattern
    and position): an outing of receipts 2-3 days apart, a sign chain weeks apart, one ticket."""
    pats = [
        ("q1", ((40, 601, "receipt"), (38, 602, "receipt"), (35, 603, "price_tag"), (33, 604, "receipt"))),
        ("q2", ((120, 611, "named_sign"), (90, 612, "named_sign"), (60, 613, "named_sign"))),
        ("q3", ((15, 621, "ticket"),)),
    ]
    q = Question(
        question_id="q0",
        question_type="information_extraction",
        question_subtype="entity",
        question="What did the sign say?",
        answer="x",
        question_date="2025/03/01 (Sat) 12:00",
        evidence=[],
    )
    return pats, q


def test_haystack_dates_deal_whole_episodes_of_the_sessions_kind_within_each_length():
    """Each length's new sessions hold whole timing patterns (a short history holds whole episodes,
    as it holds the whole evidence), and a session takes a position of its own kind when the
    length's sessions have one: receipts get the outing's dates, signs the chain's."""
    pats, q = _dating_law()
    where = {minute: (qid, j, kind) for qid, p in pats for j, (_d, minute, kind) in enumerate(p)}
    kinds = ["receipt", "named_sign", "", "receipt", "named_sign", "receipt", "price_tag", "named_sign"]
    kinds += ["ticket", "receipt", "", "receipt", "price_tag", "receipt", "named_sign", "named_sign", "named_sign"]
    ends = [8, 17]
    for seed in range(20):
        dates = A.haystack_dates(seed, q, kinds, pats, ends)
        assert len(dates) == len(kinds) and all(dates)
        got = [where[parse_date(d).hour * 60 + parse_date(d).minute] for d in dates]
        for lo, hi in ((0, 8), (8, 17)):
            used = Counter((qid, j) for qid, j, _k in got[lo:hi])
            for qid in {qid for qid, _j, _k in got[lo:hi]}:
                size = len(dict(pats)[qid])
                n_whole, rest = divmod(sum(v for (p, _j), v in used.items() if p == qid), size)
                assert rest == 0 and all(used[(qid, j)] == n_whole for j in range(size)), (seed, lo, qid, used)
        same = sum(k == kind for k, (_qid, _j, kind) in zip(kinds, got) if k)
        assert same >= 0.7 * sum(1 for k in kinds if k), (seed, got)
        # the question's own pattern is never drawn; a later length never changes a shorter one
        assert A.haystack_dates(seed, q, kinds[:8], pats, [8]) == dates[:8]
    own = [("q0", ((5, 700, "receipt"),)), *pats]
    assert all(parse_date(d).minute != 40 or parse_date(d).hour != 11 for d in A.haystack_dates(0, q, kinds, own, ends))


def test_a_large_batch_counts_the_same_tokens_on_every_core_and_leaves_the_default(counter, monkeypatch):
    import os

    from memlens.construction.assemble import tokens as T

    rng = random.Random(3)
    words = ["receipt", "Tuesday", "café", "12.50", "unbelievable", "x", "naïve", "<image>", "über-long"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 40))) for _ in range(T.PARALLEL_BATCH + 7)]
    one_by_one = [counter.text(t) for t in texts]
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    assert counter.texts(texts) == one_by_one  # a batch on every core
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"  # the process default, for later forks
    assert counter.texts(texts[:5]) == one_by_one[:5]  # a small batch on one thread
    monkeypatch.delenv("TOKENIZERS_PARALLELISM")
    counter.texts(texts)
    assert "TOKENIZERS_PARALLELISM" not in os.environ
