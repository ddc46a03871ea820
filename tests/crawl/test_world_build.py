"""On a real (tiny) build: the images of every history agree with what the conversation says."""

from __future__ import annotations

import re
from datetime import datetime

from memlens.construction.abilities.contexts import DATED_FAMILIES, SIGN_NOUN
from memlens.construction.images.persona import persona_for
from memlens.core.io import iter_jsonl, read_records
from memlens.core.schema import AR, IMAGE_PLACEHOLDER, Question, Session

RELATIVE = re.compile(r"this morning|yesterday evening|the other day|last weekend|last week\b")


def _load(root):
    d = root / "data"
    qs = read_records(d / "generated" / "questions.jsonl", Question)
    ss = {s.session_id: s for s in read_records(d / "generated" / "sessions.jsonl", Session)}
    imgs = {r["image"]["sha256"]: r["image"] for r in iter_jsonl(d / "images" / "index.jsonl")}
    return qs, ss, imgs


def _mentions(s: Session):
    """(the clause that introduces an image, image id) for every image of a session."""
    for t in s.turns:
        parts = t.content.split(IMAGE_PLACEHOLDER)
        for k, iid in enumerate(t.images):
            before = re.split(r"(?<=[.!?])\s", parts[k])[-1]
            after = re.split(r"(?<=[.!?])\s", parts[k + 1])[0]
            yield before, after, iid


def _day(s: str):
    return datetime.strptime(s[:10], "%Y/%m/%d").date()


def test_one_user_and_chats_with_the_named_contact(tiny_project):
    _qs, ss, imgs = _load(tiny_project)
    user = persona_for(42)  # conf/data: seed 42
    names = set()
    for r in imgs.values():
        t = r["truth"]
        if r["family"] == "ticket":
            names.add(t.get("passenger") or t.get("holder"))
        elif r["family"] == "app_screenshot" and t.get("guest_name"):
            names.add(t["guest_name"])
        elif r["family"] == "chat_screenshot":
            assert t["me"] == user.split()[0]
    assert names <= {user}
    chats = 0
    for s in ss.values():
        for before, _after, iid in _mentions(s):
            r = imgs[iid]
            m = re.search(r"my chat with (\w+) about [^<]*$", before)
            if m and r["family"] == "chat_screenshot":
                chats += 1
                assert not r["truth"]["is_group"] and r["truth"]["title"] == m.group(1), (before, r["truth"]["title"])
            if r["family"] == "named_sign" and r["truth"].get("kind") in set(SIGN_NOUN) - {"shop_sign"}:
                # "the place from ..." is a shop front; a book, a box, a car or a street sign has its noun
                assert "the place from" not in before, (before, r["truth"]["kind"])
    assert chats


def test_printed_dates_agree_with_the_sessions(tiny_project):
    qs, ss, imgs = _load(tiny_project)
    ev_of = {}
    for q in qs:
        for e in q.evidence:
            ev_of[e.session_id] = (q, e)
    for sid, s in ss.items():
        for before, after, iid in _mentions(s):
            r = imgs[iid]
            if r["family"] not in DATED_FAMILIES or not isinstance(r["truth"].get("date"), str):
                continue
            q_e = ev_of.get(sid)
            if q_e is None or q_e[0].question_type != "temporal_reasoning":
                # outside temporal questions (which fix session dates against printed ones), a dated
                # image never gets a session-relative time word
                assert not RELATIVE.search(before + after), before + IMAGE_PLACEHOLDER + after
            if q_e is not None and iid in q_e[1].image_ids and q_e[0].question_type != AR:
                q, e = q_e
                if q.question_type == "multi_session_reasoning":
                    # a receipt of the outing was printed before the session that shares it
                    assert _day(r["truth"]["date"]) <= _day(e.date), (q.question_id, r["truth"]["date"], e.date)
    # one outing: the receipts of an MSR question share a date (before every one of its sessions)
    # and a city
    n = 0
    for q in qs:
        if q.question_type != "multi_session_reasoning":
            continue
        recs = [imgs[i]["truth"] for i in q.details["image_ids"] if imgs[i]["family"] == "receipt"]
        if recs:
            n += 1
            assert len({t["date"] for t in recs}) == 1 and len({t["city"] for t in recs}) == 1
            assert _day(recs[0]["date"]) < min(_day(e.date) for e in q.evidence)
    assert n


def test_no_image_is_dated_after_the_session_that_shares_it(tiny_project):
    """In every history, an artifact's printed date is not after the session that shares it (a
    temporal question's ticket for an upcoming show or flight is the one exception: its time line is
    planned that way)."""
    qs, ss, imgs = _load(tiny_project)
    tr_ev = {e.session_id for q in qs if q.question_type == "temporal_reasoning" for e in q.evidence}
    checked = 0
    for inst in iter_jsonl(tiny_project / "data" / "instances" / "32k.jsonl"):
        for sid, date in zip(inst["session_ids"], inst["dates"]):
            if sid in tr_ev:
                continue
            for iid in ss[sid].image_ids:
                t = imgs[iid]["truth"]
                printed = next((t[k] for k in ("date", "order_date", "check_in", "billing_date") if t.get(k)), None)
                if isinstance(printed, str) and re.match(r"\d{4}/\d\d/\d\d$", printed):
                    checked += 1
                    assert _day(printed) <= _day(date), (inst["question_id"], sid, printed, date)
    assert checked > 20


def test_answer_refusal_contexts_are_discussed(tiny_project):
    """An answer-refusal question's context is talked about in its history, its evidence never shown."""
    qs, ss, _imgs = _load(tiny_project)
    ar = [q for q in qs if q.question_type == AR]
    discussed = 0
    for q in ar:
        ctx = q.details["discussed_context"]  # the context the question names, if it names one
        assert len(q.evidence) == (1 if ctx else 0), q.question
        for e in q.evidence:
            assert ctx in q.question and ctx in e.fact and ctx in ss[e.session_id].text
            assert not e.image_ids and IMAGE_PLACEHOLDER not in e.fact
            discussed += 1
    assert ar and discussed
