"""generate stage: questions, evidence sessions, haystack sessions and filler sessions.

For every plan whose images passed the filter, the question's type module writes the question,
answer and evidence facts from the images' exact ground truth; each fact is wrapped into a session
by the same writer that writes haystack sessions. Haystack sessions reuse the mention templates
with other contexts and haystack images; filler sessions are text-only general conversations.
Writes ``data/generated/questions.jsonl``, ``sessions.jsonl`` (each session once, keyed by the
hash of its content) and a manifest with rejection counts.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from memlens.construction.abilities import balance
from memlens.construction.abilities.base import Plan
from memlens.construction.abilities.contexts import mention_for, thing_for
from memlens.construction.generate import echoes, frames
from memlens.construction.generate.backends import generator_for
from memlens.construction.generate.draws import EXTRA_MENTIONS, evidence_date, question_date_for, session_subtopic
from memlens.construction.images.truth import drawn_values, find_boilerplate
from memlens.construction.ontology.stage import load_topics
from memlens.construction.text import abstraction
from memlens.construction.text.sessions import Mention, WriterConfig
from memlens.construction.text.validators import RejectionLog, contains_token_bounded
from memlens.core.config import Paths, section
from memlens.core.errors import DataError, MemLensError
from memlens.core.io import enumerate_jsonl, iter_jsonl, write_jsonl
from memlens.core.schema import AR, Evidence, ImageRecord, Question, Session, format_date, parse_date
from memlens.core.settings import Settings, as_settings
from memlens.core.store import derive_rng, hash_tree, short_id, write_manifest

log = logging.getLogger(__name__)


def accepted_images(index: Path) -> set[str]:
    """Hashes of the images the filter accepted; a malformed line is an error naming it."""
    out = set()
    for i, r in enumerate_jsonl(index):
        if not isinstance(r, dict) or not isinstance(r.get("sha256"), str) or not isinstance(r.get("accepted"), bool):
            raise DataError(f"{index}:{i}: a filter record needs a 'sha256' string and an 'accepted' boolean")
        if r["accepted"]:
            out.add(r["sha256"])
    return out


def _plan_contexts(p: Plan) -> list[str]:
    lat = p.latent.get("source", {}).get("latent", {}) if p.question_type == AR else p.latent
    out = []
    for k in ("context", "contexts"):
        v = lat.get(k)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            out += [x for x in v if isinstance(x, str)]
    return out


def _anaphor_mention(seed: int, rec: ImageRecord, ctx: str, boilerplate: frozenset[str]) -> str | None:
    """A haystack mention of a named-entity image phrased with an anaphor (a share
    ``abstraction.ANAPHOR_SHARE`` of them, like evidence mentions), or None for the shared phrasing.
    Drawn from its own rng (keyed by the image), so the session rng and every other draw is unchanged."""
    if rec.family != "named_sign":
        return None
    arng = derive_rng(seed, "anaphor", rec.sha256)
    if arng.random() >= abstraction.ANAPHOR_SHARE:
        return None
    truth = rec.truth or {}
    cat = abstraction.classify(str(truth.get("text", "")), truth.get("kind")) if arng.random() < 0.7 else "thing"
    m = abstraction.mention(arng, abstraction.anaphor(arng, cat), ctx)
    if any(contains_token_bounded(m, v) for v in drawn_values(truth, boilerplate)):
        return None
    return m


def _abstraction_of(d, qtype: str) -> dict:
    """Category per abstracted entity: the ability's ``details["entities"]`` (names, or name -> kind), else
    its forbidden names (not the answer, nor printed values with digits), classified with the
    ability's entity kind hint."""
    if qtype == AR:
        return {}
    det = d.details or {}
    kinds = det.get("entity_kinds") or []
    hint = det.get("entity_kind") or det.get("kind") or (kinds[0] if len(kinds) == 1 else None)
    ents = det.get("entities")
    named: dict[str, str | None] = {}
    if isinstance(ents, dict):
        named.update({str(k): (v if isinstance(v, str) else hint) for k, v in ents.items()})
    elif isinstance(ents, list):
        named.update({str(x): hint for x in ents if isinstance(x, str)})
    answer = (d.answer or "").strip().lower()
    for f in [] if named else d.forbidden:  # the ability's own list, when given, is complete
        if not f or str(f).strip().lower() == answer or any(c.isdigit() for c in str(f)):
            continue
        if not any(c.isalpha() for c in str(f)):
            continue
        named.setdefault(str(f), hint)
    return {n: abstraction.classify(n, h if isinstance(h, str) else None) for n, h in sorted(named.items())}


def image_kind(rec: ImageRecord) -> str:
    """What the image is, as the assistant can react to it: the renderer's kind for signs and
    tickets (a book cover, a boarding pass), else the family."""
    kind = (rec.truth or {}).get("kind")
    if rec.family in ("named_sign", "ticket") and isinstance(kind, str):
        return kind
    return rec.family


class HaystackImages:
    """The haystack images, each handed out once: first those of the session's own topic, then
    those whose family fits the topic, then any (so images are mentioned in on-topic sessions)."""

    def __init__(self, recs: list[ImageRecord], topics: dict):
        self.recs = recs
        self.used = [False] * len(recs)
        self.by_topic: dict[str, list[int]] = {}
        self.by_family: dict[str, list[int]] = {}
        for i, r in enumerate(recs):
            self.by_topic.setdefault(r.topic_id or "", []).append(i)
            self.by_family.setdefault(r.family, []).append(i)
        self.topics = topics
        self.next_any = 0

    def _first_free(self, idx: list[int]) -> int | None:
        while idx and self.used[idx[0]]:
            idx.pop(0)
        return idx[0] if idx else None

    def has_fitting(self, topic_id: str) -> bool:
        """Whether an image of the topic, or of a family it lists, is still free."""
        if self._first_free(self.by_topic.get(topic_id, [])) is not None:
            return True
        t = self.topics.get(topic_id)
        return t is not None and any(self._first_free(self.by_family.get(f, [])) is not None for f in t.families)

    def take(self, topic_id: str | None) -> ImageRecord | None:
        i = self._first_free(self.by_topic.get(topic_id or "", []))
        t = self.topics.get(topic_id)
        for fam in t.families if t is not None and i is None else ():
            i = self._first_free(self.by_family.get(fam, []))
            if i is not None:
                break
        if i is None:
            while self.next_any < len(self.recs) and self.used[self.next_any]:
                self.next_any += 1
            i = self.next_any if self.next_any < len(self.recs) else None
        if i is None:
            return None
        self.used[i] = True
        return self.recs[i]


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    seed = int(cfg.data.seed)
    topics = {t.topic_id: t for t in load_topics(paths)}
    plans = [Plan.from_dict(d) for d in iter_jsonl(paths.images / "plans.jsonl")]
    images: dict[tuple[str, int], ImageRecord] = {}
    haystack_imgs: list[ImageRecord] = []
    for row in iter_jsonl(paths.images / "index.jsonl"):
        rec = ImageRecord.from_dict(row["image"])
        if row.get("plan_id"):
            images[(row["plan_id"], int(row["index"]))] = rec
        else:
            haystack_imgs.append(rec)
    accepted = accepted_images(paths.filtered / "index.jsonl")
    boilerplate = find_boilerplate(list(images.values()) + haystack_imgs)
    wcfg = WriterConfig.from_cfg(cfg.generator)
    rejections = RejectionLog()
    dropped = {"image_rejected": 0, "build_failed": 0}
    gen = generator_for(cfg, paths)  # template (default) or llm; see build/generate/backends.py
    gen.prepare(plans, images, accepted, boilerplate)

    # 1. questions from plans: the first `target` plans of each (type, subtype) that survive, in
    #    index order (spares fill in for dropped ones, so the composition is exact)
    #    and, for balanced closed answers, of a class still short (abilities.balance)
    drafts = []
    kept: dict[tuple[str, str], int] = {}
    quota = balance.quotas(plans)
    kept_cls: dict[tuple[str, str], Counter] = {}
    for p in sorted(plans, key=lambda p: (p.question_type, p.question_subtype, p.latent.get("_index", 0))):
        key = (p.question_type, p.question_subtype)
        if kept.get(key, 0) >= int(p.latent.get("_target", 1 << 30)):
            continue
        want = p.latent.get("_want")
        if want is not None and kept_cls.get(key, Counter())[want] >= quota.get(key, Counter())[want]:
            continue
        recs = [images.get((p.plan_id, k)) for k in range(len(p.images))]
        if any(r is None or r.sha256 not in accepted for r in recs):
            dropped["image_rejected"] += 1
            continue
        rng = derive_rng(seed, "build", p.plan_id)
        try:
            d = gen.build(rng, p, [r.truth for r in recs])
        except (ValueError, KeyError) as exc:
            log.warning("plan %s (%s/%s) dropped: %s", p.plan_id, p.question_type, p.variant, exc)
            dropped["build_failed"] += 1
            continue
        if want is not None and d.answer != want:
            raise DataError(
                f"generate: plan {p.plan_id} ({p.question_type}/{p.variant}) answers {d.answer!r}, "
                f"its balanced slot planned {want!r}"
            )
        drafts.append((p, recs, d))
        kept[key] = kept.get(key, 0) + 1
        if want is not None:
            kept_cls.setdefault(key, Counter())[want] += 1
    short = {
        f"{t}/{s}": int(p.latent["_target"]) - kept.get((t, s), 0)
        for p in plans
        for (t, s) in [(p.question_type, p.question_subtype)]
        if kept.get((t, s), 0) < int(p.latent.get("_target", 0))
    }
    if short:
        raise DataError(f"generate: not enough valid plans for {short} (raise data.spare_fraction)")
    # every plan's context stays reserved (spares included), so no haystack mention reuses one
    reserved = {c for p in plans for c in _plan_contexts(p)} | {c for _, _, d in drafts for c in d.contexts}
    forbidden_all = sorted({f for _, _, d in drafts for f in d.forbidden if f})
    # Haystack images are consumed once each, by haystack sessions and as distractor mentions
    # inside evidence sessions, so image-bearing sessions look alike whatever they carry.
    sc = cfg.data.scales[cfg.data.scale]
    usable = [r for r in haystack_imgs if r.sha256 in accepted]
    hay_images = HaystackImages(usable, topics)
    # haystack mentions carry the evidence clauses (update, date in words, start time) at the
    # evidence rates per image family, with values no question uses
    ev_mentions = [(recs[f.image_idx[0]].family, f.mention) for _, recs, d in drafts for f in d.facts if f.image_idx]
    taken = echoes.taken_dates([f.mention for _, _, d in drafts for f in d.facts] + [d.question for _, _, d in drafts])
    echo = echoes.Echoes(echoes.measure_rates(ev_mentions), reserved, taken)
    # haystack mentions are evidence frames of the same image family and kind, refilled with
    # values that fit the haystack image and that no question uses (generate/frames.py)
    frame_pools, frame_fillers = frames.measure(
        [
            (recs[f.image_idx[0]].family, recs[f.image_idx[0]].truth, f.mention)
            for _, recs, d in drafts
            for f in d.facts
            if f.image_idx
        ]
    )
    framed = {"frames": 0, "fallback": 0}  # haystack mentions written from an evidence frame or not
    framer = frames.Frames(frame_pools, reserved, taken, forbidden_all, frame_fillers)

    def distractors(rng, k: int, topic_id: str, first: ImageRecord | None = None) -> list[Mention]:
        out = []
        for j in range(k + (first is not None)):
            rec = first if (j == 0 and first is not None) else hay_images.take(topic_id)
            if rec is None:
                break
            vals = drawn_values(rec.truth, boilerplate)
            text = framer.draw(rng, rec.family, rec.truth)
            if text is not None and not any(contains_token_bounded(text, v) for v in vals):
                out.append(Mention(text, [rec.sha256], False, vals, image_kind=image_kind(rec)))
                framed["frames"] += 1
                continue
            framed["fallback"] += 1
            # no evidence frame of this family and kind: the shared phrasing with the evidence clauses
            thing, ctx = thing_for(rng, rec.family, reserved, truth=rec.truth)  # agrees with the image
            tail = echo.tail(rng, rec.family, rec.truth)
            text = mention_for(rng, rec.family, thing, tail=tail)
            if tail and any(contains_token_bounded(text, v) for v in vals):
                text = mention_for(rng, rec.family, thing)
            text = _anaphor_mention(seed, rec, ctx, boilerplate) or text
            out.append(Mention(text, [rec.sha256], False, vals, image_kind=image_kind(rec)))
        return out

    seen: set[str] = set()  # every sentence written so far, so none repeats verbatim in a history
    # 2. haystack sessions: same writer and mention phrasing, each on the topic of its first image
    #    (the crawl drew half of them from the evidence images' topics), so images stay on topic and
    #    the sessions' image mix is the pool's, which mirrors the evidence images'.
    # 3. filler sessions: text-only, varied lengths (fine length control at assembly).
    # Both are written interleaved with the evidence sessions (``progress``), so every kind meets
    # the growing set of sentences already written alike: rewritten repeats are no evidence marker.
    topic_list = sorted(topics.values(), key=lambda t: t.topic_id)
    hay_writer = gen.writer(wcfg, rejections, forbidden_all)
    hay_writer.seen = seen  # one set for every writer of the build
    n_hay, n_fill = int(sc.haystack_sessions), int(sc.filler_sessions)
    done = {"haystack": 0, "filler": 0}

    # haystack sessions come in episodes on one topic and subtopic, as a question's evidence
    # sessions do: episode sizes are drawn from the questions' numbers of facts
    q_subtopics: dict[str, list[str]] = {}
    for p_, _, _ in drafts:
        if p_.subtopic not in q_subtopics.setdefault(p_.topic_id, []):
            q_subtopics[p_.topic_id].append(p_.subtopic)
    episode_sizes = [max(1, len(d.facts)) for _, _, d in drafts] or [1]
    # images per evidence fact (a fact may show several): a haystack session's first mention counts
    # as many images as a fact drawn at random, so image counts per session match the evidence's
    fact_images = [len(f.image_idx) for _, _, d in drafts for f in d.facts if f.image_idx] or [1]
    episode = {"left": 0, "topic": None, "sub": ""}
    # haystack episodes mirror the questions: each takes the topic and number of image sessions of
    # a question, dealt from a shuffled deck (reshuffled when used up); each session draws its own
    # subtopic. A question is dealt with weight (k - 1) / k, k the questions on its topic: the
    # haystack of a topic then matches the evidence the topic's *other* questions have there, so
    # the topic tells nothing about a session of any one question (a topic only one question has
    # is no haystack topic: its words would otherwise mark that question's sessions as haystack)
    ev_topics = [(p_.topic_id, p_.subtopic, n) for p_, _, d in drafts if (n := sum(1 for f in d.facts if f.image_idx))]
    per_topic: dict[str, int] = {}
    for t_, _, _ in ev_topics:
        per_topic[t_] = per_topic.get(t_, 0) + 1
    weight = {t_: (k - 1) / k for t_, k in per_topic.items()}
    # a sparse build (most topics hold one question: tiny, small) keeps every topic at weight 1:
    # there the weights would leave the haystack on a handful of topics, which marks it instead
    shared = sum(k for k in per_topic.values() if k >= 2) / max(1, sum(per_topic.values()))
    if shared < 0.5 or not any(weight.values()):
        weight = dict.fromkeys(weight, 1.0)
    deck = {"cards": [], "rng": derive_rng(seed, "haystack-topics")}

    def write_haystack(i: int) -> None:
        rng = derive_rng(seed, "haystack", i)
        card = None
        if episode["left"] <= 0 or episode["topic"] is None:
            # the next card whose topic still has a fitting image (images stay on topic); none
            # within two decks: the episode follows the next free image's topic instead
            for _ in range(2 * len(ev_topics)):
                while not deck["cards"]:
                    deck["cards"] = [c for c in ev_topics if deck["rng"].random() < weight[c[0]]]
                    deck["rng"].shuffle(deck["cards"])
                c = deck["cards"].pop()
                if hay_images.has_fitting(c[0]):
                    card = c
                    break
        if card is not None:
            tid, _, size = card
            topic = topics[tid]
            first = hay_images.take(tid)
            episode.update(left=size, topic=topic, sub="")
        elif episode["left"] <= 0 or episode["topic"] is None:
            first = hay_images.take(None)
            topic = topics.get(first.topic_id) if first is not None else None
            if topic is None:
                topic = topic_list[rng.randrange(len(topic_list))]
            sub = topic.subtopics[rng.randrange(len(topic.subtopics))] if topic.subtopics else topic.title
            q_subs = q_subtopics.get(topic.topic_id)
            if q_subs and rng.random() < 0.7:  # related: a subtopic the topic's questions talk about
                sub = q_subs[rng.randrange(len(q_subs))]
            episode.update(left=episode_sizes[rng.randrange(len(episode_sizes))], topic=topic, sub=sub)
        else:
            topic, sub = episode["topic"], episode["sub"]
            first = hay_images.take(topic.topic_id)
        episode["left"] -= 1
        if ev_topics:
            sub = session_subtopic(seed, topic, "haystack", i)
        n_first = fact_images[rng.randrange(len(fact_images))]
        mentions = distractors(rng, rng.choice(EXTRA_MENTIONS) + n_first - 1, topic.topic_id, first=first)
        try:
            s = hay_writer.write(rng, "haystack", topic, sub, mentions)
        except MemLensError:  # a mention that cannot be written here: keep the session text-only
            dropped["haystack_mentions"] = dropped.get("haystack_mentions", 0) + len(mentions)
            s = hay_writer.write(rng, "haystack", topic, sub, [])
        sessions[s.session_id] = s

    def write_filler(i: int) -> None:
        rng = derive_rng(seed, "filler", i)
        s = hay_writer.write_filler(rng, n_turns=2 * rng.randint(2, 6))
        sessions[s.session_id] = s

    def progress(n_ev: int) -> None:
        """Write haystack and filler sessions up to their share after ``n_ev`` evidence drafts."""
        share = n_ev / len(drafts) if drafts else 1.0
        while done["haystack"] < round(share * n_hay):
            write_haystack(done["haystack"])
            done["haystack"] += 1
        while done["filler"] < round(share * n_fill):
            write_filler(done["filler"])
            done["filler"] += 1

    writer = gen.writer(wcfg, rejections, [])
    writer.seen = seen
    sessions: dict[str, Session] = {}
    questions: list[Question] = []
    # evidence is written in a shuffled order of the questions (not grouped by type): the sentence
    # pool fills up as the build goes (repeats are rewritten, then dropped), so every type meets it
    # at every stage, as the interleaved haystack does
    write_order = list(drafts)
    derive_rng(seed, "evidence-order").shuffle(write_order)
    for n_ev, (p, recs, d) in enumerate(write_order):
        progress(n_ev)
        topic = topics[p.topic_id]
        rng = derive_rng(seed, "sessions", p.plan_id)
        qdate = question_date_for(rng)
        if d.question_date:
            qdate = parse_date(d.question_date)
        evidence = []
        n = len(d.facts)
        for j, fact in enumerate(d.facts):
            ids = [recs[k].sha256 for k in fact.image_idx]
            vals = [v for k in fact.image_idx for v in drawn_values(recs[k].truth, boilerplate)]
            kind = image_kind(recs[fact.image_idx[0]]) if fact.image_idx else None
            m = Mention(fact.mention, ids, has_answer=True, image_values=vals, image_kind=kind)
            if not ids:  # a context talked about without its evidence (answer refusal): nothing to acknowledge
                m.has_answer, m.acknowledge = False, None
            extra = distractors(rng, rng.choice(EXTRA_MENTIONS), p.topic_id)
            mentions = [m, *extra]
            rng.shuffle(mentions)
            s = writer.write(
                rng,
                "evidence",
                topic,
                session_subtopic(seed, topic, p.plan_id, j),
                mentions,
                extra_forbidden=d.forbidden,
                ambiguity=d.details.get("ambiguity"),
            )
            sessions[s.session_id] = s
            evidence.append(Evidence(s.session_id, evidence_date(rng, fact, j, n, d.ordered, qdate), fact.mention, ids))
        qid = short_id("q", seed, p.plan_id, n=8)
        # the abstracted background paragraph (paper step 1/3) and the categories of the abstracted
        # entities; details only, from their own rng (the history text is unchanged)
        brng = derive_rng(seed, "background", p.plan_id)
        extra_details = {
            "background": abstraction.background(
                brng, topic.title, p.subtopic, topic.track, [f.mention for f in d.facts]
            ),
            "abstraction": _abstraction_of(d, p.question_type),
            **gen.question_details(p.plan_id),
        }
        questions.append(
            Question(
                question_id=qid,
                question_type=p.question_type,
                question_subtype=p.question_subtype,
                question=d.question,
                answer=d.answer,
                question_date=format_date(qdate),
                topic_id=p.topic_id,
                old_answer=d.old_answer,
                evidence=evidence,
                ordered_evidence=d.ordered,
                image_essential=d.image_essential,
                details={
                    **d.details,
                    **extra_details,
                    "variant": p.variant,
                    "plan_id": p.plan_id,
                    "forbidden": d.forbidden,
                    "derivation": d.derivation,
                    "image_ids": [r.sha256 for r in recs],
                },
            )
        )

    # the rest of the haystack and fillers (all of them when there is no question)
    progress(len(drafts))
    if not questions:
        raise DataError("generate: no question survived (all plans dropped); see the filter report")
    sessions = gen.finish(sessions)
    out = paths.generated
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "questions.jsonl", sorted(questions, key=lambda q: q.question_id))
    write_jsonl(out / "sessions.jsonl", [sessions[k] for k in sorted(sessions)])
    kinds = {k: sum(s.kind == k for s in sessions.values()) for k in ("evidence", "haystack", "filler")}
    write_manifest(
        out,
        "generate",
        {**section(cfg, "generator"), "seed": seed, "scale": str(cfg.data.scale)},
        hash_tree(out),
        code=(__name__,),
        extra={
            "questions": len(questions),
            "sessions": kinds,
            "dropped_plans": dropped,
            "validators": rejections.summary(),
            "haystack_mentions": framed,
            "sentence_rewrites": {
                k: writer.repeats[k] + hay_writer.repeats[k] for k in ("rewritten", "dropped", "kept")
            },
            "abstraction": {
                k: v
                for k, v in abstraction.inventory().items()
                if k in ("categories", "templates", "groups", "mention_frames")
            },
            **gen.manifest(),
        },
    )
    log.info(
        "generate: %d questions, sessions %s, dropped %s, regenerated turns %d/%d",
        len(questions),
        kinds,
        dropped,
        rejections.regenerated,
        rejections.turns,
    )
