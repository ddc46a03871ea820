"""generate stage: questions and sessions from the tiny benchmark's plans and images.

Read-only checks run on the session-wide tiny build; the stage is re-run on a copy of its inputs
(ontology, image index and plans, filter results; no image files) with planted rejections.
"""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from memlens.construction.generate import stage as G
from memlens.construction.text import sessions as S
from memlens.construction.text.leakage import PhraseIndex
from memlens.construction.text.validators import CHECKS
from memlens.core.compose import load_settings
from memlens.core.config import Paths
from memlens.core.errors import DataError
from memlens.core.io import iter_jsonl, read_json, read_records, write_jsonl
from memlens.core.schema import AR, IMAGE_PLACEHOLDER, Question, Session, parse_date


def load(root):
    gen = root / "data" / "generated"
    qs = read_records(gen / "questions.jsonl", Question)
    ss = {s.session_id: s for s in read_records(gen / "sessions.jsonl", Session)}
    return qs, ss, read_json(gen / "manifest.json")


@pytest.fixture(scope="module")
def built(tiny_project):
    return load(tiny_project)


@pytest.fixture(scope="module")
def cfg(tiny_project):
    return load_settings(["data.scale=tiny"], root=tiny_project)


@pytest.fixture(scope="module")
def gen_inputs(tiny_project, tmp_path_factory):
    root = tmp_path_factory.mktemp("generate-inputs")
    for d in ("ontology", "filtered"):
        shutil.copytree(tiny_project / "data" / d, root / "data" / d)
    (root / "data" / "images").mkdir()
    for f in ("index.jsonl", "plans.jsonl"):
        shutil.copy(tiny_project / "data" / "images" / f, root / "data" / "images" / f)
    return root


@pytest.fixture()
def proj(gen_inputs, tmp_path):
    dest = tmp_path / "proj"
    shutil.copytree(gen_inputs, dest)
    return dest


def reject(root, shas: set[str]) -> None:
    path = root / "data" / "filtered" / "index.jsonl"
    rows = list(iter_jsonl(path))
    for r in rows:
        if r["sha256"] in shas:
            r["accepted"], r["reason"] = False, "planted"
    write_jsonl(path, rows)


def plan_images(root) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in iter_jsonl(root / "data" / "images" / "index.jsonl"):
        if r.get("plan_id"):
            out.setdefault(r["plan_id"], []).append(r["image"]["sha256"])
    return out


def test_evidence_images_are_in_their_evidence_sessions(built):
    qs, ss, _ = built
    for q in qs:
        for ev in q.evidence:
            s = ss[ev.session_id]
            assert s.kind == "evidence"
            assert set(ev.image_ids) <= set(s.image_ids), q.question_id
            answer_turns = [t for t in s.turns if t.has_answer]
            if q.question_type == AR:  # its context is talked about there, its evidence never shown
                assert not ev.image_ids and not answer_turns and ev.fact in s.text
                assert parse_date(ev.date) < parse_date(q.question_date)
                continue
            assert answer_turns and set(ev.image_ids) <= {i for t in answer_turns for i in t.images}
            assert parse_date(ev.date) < parse_date(q.question_date)
        assert set(q.evidence_image_ids) == set(q.details["image_ids"]), q.question_id


def test_sessions_only_use_accepted_images(tiny_project, built):
    _, ss, _ = built
    accepted = {r["sha256"] for r in iter_jsonl(tiny_project / "data" / "filtered" / "index.jsonl") if r["accepted"]}
    used = [i for s in ss.values() for i in s.image_ids]
    assert used and set(used) <= accepted
    for s in ss.values():
        for t in s.turns:
            assert t.content.count(IMAGE_PLACEHOLDER) == len(t.images)
        if s.kind == "filler":
            assert not s.image_ids


def test_composition_follows_the_scale(cfg, built):
    qs, _, m = built
    want = {k: int(v) for k, v in cfg.data.scales["tiny"].counts.items()}
    assert Counter(f"{q.question_type}/{q.question_subtype}" for q in qs) == want
    assert m["questions"] == len(qs)


def test_manifest_counts_sessions_and_validator_outcomes(cfg, built):
    _qs, ss, m = built
    kinds = Counter(s.kind for s in ss.values())
    assert m["sessions"] == {k: kinds[k] for k in ("evidence", "haystack", "filler")}
    assert kinds["haystack"] == cfg.data.scales["tiny"].haystack_sessions
    assert kinds["filler"] == cfg.data.scales["tiny"].filler_sessions
    v = m["validators"]
    assert set(v["failures_by_check"]) == set(CHECKS)
    admitted = sum(len(s.turns) for s in ss.values())
    assert v["turns_checked"] - v["turns_regenerated"] >= admitted
    assert sum(v["failures_by_check"].values()) >= v["turns_regenerated"]
    assert set(m["dropped_plans"]) >= {"image_rejected", "build_failed"}


def test_haystack_and_filler_text_hold_no_question_secret(built):
    qs, ss, _ = built
    index = PhraseIndex(f for q in qs for f in q.details.get("forbidden", []) if f and len(f) > 2)
    for s in ss.values():
        if s.kind != "evidence":
            assert not index.find(s.text.replace(IMAGE_PLACEHOLDER, " ")), s.session_id


def _images(root) -> dict:
    return {r["image"]["sha256"]: r["image"] for r in iter_jsonl(root / "data" / "images" / "index.jsonl")}


def test_haystack_images_are_mentioned_in_sessions_on_their_topic(tiny_project, built):
    """Haystack sessions come in episodes written on the topic of the episode's first image; every
    image a session mentions fits its topic (its own topic, or a family the topic lists) unless the
    pool ran dry."""
    _, ss, _ = built
    images = _images(tiny_project)
    topics = {r["topic_id"]: r for r in iter_jsonl(tiny_project / "data" / "ontology" / "topics.jsonl")}
    hay = [s for s in ss.values() if s.kind == "haystack" and s.image_ids]
    assert len(hay) > 0.9 * len([s for s in ss.values() if s.kind == "haystack"])
    fits = total = 0
    for s in hay:
        for i in s.image_ids:
            total += 1
            fits += images[i]["topic_id"] == s.topic_id or images[i]["family"] in topics[s.topic_id]["families"]
    assert fits / total > 0.95


def test_haystack_image_sessions_talk_about_the_questions_topics(built):
    """Haystack episodes mirror the questions: an image-bearing haystack session is on the topic of
    some question, so a topic no question has never marks a session as haystack."""
    _, ss, _ = built
    ev_topics = {s.topic_id for s in ss.values() if s.kind == "evidence" and s.image_ids}
    hay = [s for s in ss.values() if s.kind == "haystack" and s.image_ids]
    assert hay and {s.topic_id for s in hay} <= ev_topics


def test_haystack_mentions_are_evidence_frames(tiny_project, built):
    """Nearly every haystack image mention has the frame of an evidence mention of its image's
    family and kind (the rest: images of a kind no evidence shows, e.g. group chats)."""
    import re

    from memlens.construction.generate import frames

    qs, ss, _ = built
    images = _images(tiny_project)
    lex = frames.Lexicon.build()
    pools, _ = frames.measure(
        [
            (images[e.image_ids[0]]["family"], images[e.image_ids[0]].get("truth"), e.fact)
            for q in qs
            for e in q.evidence
            if e.image_ids
        ],
        lex,
    )
    sent = re.compile(r"[^.!?]*<image>[^.!?]*[.!?]?")
    hits = total = 0
    for s in ss.values():
        if s.kind != "haystack":
            continue
        for t in s.turns:
            if not t.images:
                continue
            rec = images[t.images[0]]
            kind = str((rec.get("truth") or {}).get("kind") or "")
            pool = {p.lower() for p in pools.get((rec["family"], kind, "*"), [])}
            for m in sent.findall(t.content):
                f = lex.frame_of(m.strip())
                total += 1
                fr = f[0].strip().lower() if f else None
                hits += fr is not None and any(fr.endswith(p) or p.endswith(fr) for p in pool)
    assert total > 20 and hits / total > 0.8, (hits, total)
    counts = built[2]["haystack_mentions"]  # the manifest counts both kinds of haystack mention
    assert counts["frames"] > 4 * counts["fallback"], counts


def test_assistant_reacts_to_the_kind_of_image_shared(built):
    _, ss, _ = built
    n = 0
    for s in ss.values():
        for j, t in enumerate(s.turns):
            if t.role == "user" and t.images:
                reply = s.turns[j + 1].content
                assert "the picture you shared" not in reply
                n += 1
    assert n > 50


def test_no_sentence_repeats_within_a_history(tiny_project, built):
    """Outside the image mentions and short sentences, no sentence of a history repeats an earlier one."""
    import re

    from memlens.construction.text import textbank

    _, ss, _ = built
    for length in ("32k", "64k"):
        for inst in iter_jsonl(tiny_project / "data" / "instances" / f"{length}.jsonl"):
            seen: set[str] = set()
            for sid in inst["session_ids"]:
                for t in ss[sid].turns:
                    for x in re.split(r"(?<=[.!?])\s+", t.content):
                        k = textbank.sentence_key(x)
                        if k is None or IMAGE_PLACEHOLDER in x:
                            continue
                        assert k not in seen, (inst["question_id"], length, k)
                        seen.add(k)


def test_haystack_mentions_carry_the_evidence_clauses(built):
    """The clauses evidence facts end in (update, date in words) also end haystack mentions, and
    never with a date in words a question or fact uses."""
    from memlens.construction.generate import echoes

    qs, ss, _ = built
    ev_kinds = Counter(k for q in qs for e in q.evidence for k in echoes.kinds_in(e.fact))
    hay_kinds = Counter(
        k for s in ss.values() if s.kind == "haystack" for t in s.turns if t.images for k in echoes.kinds_in(t.content)
    )
    assert ev_kinds["update"] and hay_kinds["update"]
    taken = echoes.taken_dates([e.fact for q in qs for e in q.evidence] + [q.question for q in qs])
    for s in ss.values():
        if s.kind == "haystack":
            assert not echoes.taken_dates([s.text]) & taken, s.session_id


def test_rejected_evidence_image_drops_its_plan_and_a_spare_fills_in(cfg, proj, built):
    qs, _, m0 = built
    q = next(q for q in qs if q.details["image_ids"])
    bad = q.details["image_ids"][0]
    reject(proj, {bad})
    G.run(cfg, Paths(proj))
    qs2, ss2, m = load(proj)
    assert q.details["plan_id"] not in {x.details["plan_id"] for x in qs2}
    assert Counter((x.question_type, x.question_subtype) for x in qs2) == Counter(
        (x.question_type, x.question_subtype) for x in qs
    )
    assert m["dropped_plans"]["image_rejected"] == m0["dropped_plans"]["image_rejected"] + 1
    assert bad not in {i for s in ss2.values() for i in s.image_ids}


def test_too_few_valid_plans_names_the_subtype(cfg, proj, built):
    qs, _, _ = built
    q = next(q for q in qs if q.details["image_ids"])
    key = (q.question_type, q.question_subtype)
    plans = {
        p["plan_id"]
        for p in iter_jsonl(proj / "data" / "images" / "plans.jsonl")
        if (p["question_type"], p["question_subtype"]) == key
    }
    imgs = plan_images(proj)
    reject(proj, {i for p in plans for i in imgs.get(p, [])})
    with pytest.raises(DataError) as exc:
        G.run(cfg, Paths(proj))
    assert f"{key[0]}/{key[1]}" in str(exc.value) and "spare_fraction" in str(exc.value)
    assert not (proj / "data" / "generated" / "questions.jsonl").exists()


def test_regenerated_turns_are_counted_per_check(cfg, proj, monkeypatch):
    real = S.check_turn
    calls = {"n": 0}

    def flaky(spec):
        calls["n"] += 1
        if calls["n"] <= 3:
            return ["end_marker"]
        if calls["n"] <= 5:
            return ["length", "ngram_leakage"]
        return real(spec)

    monkeypatch.setattr(S, "check_turn", flaky)
    G.run(cfg, Paths(proj))
    v = read_json(proj / "data" / "generated" / "manifest.json")["validators"]
    assert v["turns_regenerated"] == 5
    assert (
        v["failures_by_check"]["end_marker"],
        v["failures_by_check"]["length"],
        v["failures_by_check"]["ngram_leakage"],
    ) == (3, 2, 2)
    _, ss, _ = load(proj)
    assert v["turns_checked"] - v["turns_regenerated"] >= sum(len(s.turns) for s in ss.values())
