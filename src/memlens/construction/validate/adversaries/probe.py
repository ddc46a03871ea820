"""The probe set: extra questions for the oracle-evidence gate, never released.

A subtype with 24 questions lets a text-only attacker run 10+ points over chance unseen (the gate
decides on a lower confidence bound). The probes are more questions of every answerable subtype,
drawn by the SAME code as the benchmark's (the question types' ``plan`` and ``build``, the image
families' samplers, the generate stage's session writer, distractor mentions and evidence dates) from
a derived seed stream (``derive_rng(seed, "probe", ...)``: no probe shares a draw with the build).
The attacker sees only text, so a probe is made as cheaply as the text allows: the images are
sampled (their ground truth, what ``build`` reads) but never rendered nor filtered, and no history
is assembled: a probe is the question and its evidence sessions' text and timestamps
(an :class:`~.oracle.Item`).

What differs from a built question: the image filter does not run (a probe keeps images the filter
might reject); distractor mentions in evidence sessions show images sampled like the haystack pool's
(family and shape of an evidence request) and are phrased from frames measured on the probes' own
evidence mentions, as the generate stage measures them on the build's; the writer's set of sentences
already written is the probes' own. The template generator writes them whatever ``generator.name``
says (an LLM generator's text is not re-drawn here).

:func:`size_to_see` is the number of questions at which the one-sided ``confidence`` interval of an
accuracy near ``chance`` is ``excess`` wide: ``z^2 p (1 - p) / excess^2`` with ``p = chance + excess``.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable

from memlens.construction.abilities import ability_for, answerable
from memlens.construction.abilities.contexts import mention_for, thing_for
from memlens.construction.crawl.plans import SHAPE_KEYS, choose_topic
from memlens.construction.generate import echoes, frames
from memlens.construction.generate.draws import EXTRA_MENTIONS, evidence_date, question_date_for, session_subtopic
from memlens.construction.images.persona import persona_for, with_user
from memlens.construction.images.synthetic import get_family
from memlens.construction.images.truth import drawn_values
from memlens.construction.text.sessions import Mention, SessionWriter, WriterConfig
from memlens.construction.text.validators import RejectionLog, contains_token_bounded
from memlens.construction.validate.adversaries.oracle import Item, item_of
from memlens.construction.validate.adversaries.stats import z_of
from memlens.core.errors import MemLensError
from memlens.core.schema import Question, Topic, format_date, parse_date
from memlens.core.store import derive_rng, short_id

log = logging.getLogger(__name__)
#: plans tried per probe kept before a subtype is given up (a build may reject a plan's images)
MAX_TRIES = 3
#: probe plans of a subtype that keep their context phrases apart (a build's subtype has fewer; the
#: phrase space would run out over 750)
BATCH = 100


def size_to_see(chance: float, excess: float, confidence: float) -> int:
    """Questions for a one-sided ``confidence`` interval ``excess`` wide at ``chance + excess``."""
    p = min(max(chance + excess, 1e-6), 1 - 1e-6)
    return math.ceil(z_of(confidence) ** 2 * p * (1 - p) / excess**2)


def _truth(seed: int, key: tuple, req, user: str, photo_rate: float) -> dict:
    """An image's ground truth as the synthetic source samples it (the same draws), without pixels."""
    rng = derive_rng(seed, "probe", "image", *key)
    cons = with_user(req.family, req.constraints, user)
    if "photo" not in cons:
        cons["photo"] = rng.random() < photo_rate
    return get_family(req.family).sample(rng, **cons)


def _kind(family: str, truth: dict) -> str:
    """The generate stage's :func:`~memlens.construction.generate.stage.image_kind` of a sampled truth."""
    kind = (truth or {}).get("kind")
    return kind if family in ("named_sign", "ticket") and isinstance(kind, str) else family


class _Distractors:
    """Distractor mentions of evidence sessions, as the generate stage writes them (frames measured
    on evidence mentions, else the shared phrasing), of images sampled like the haystack pool's."""

    def __init__(self, seed, drafts, user, photo_rate):
        ev = [
            (recs[f.image_idx[0]][0], recs[f.image_idx[0]][1], f.mention)
            for _p, recs, d in drafts
            for f in d.facts
            if f.image_idx
        ]
        self.reserved = {c for _p, _r, d in drafts for c in d.contexts}
        taken = echoes.taken_dates(
            [f.mention for _p, _r, d in drafts for f in d.facts] + [d.question for *_x, d in drafts]
        )
        forbidden = sorted({f for _p, _r, d in drafts for f in d.forbidden if f})
        pools, fillers = frames.measure(ev)
        self.framer = frames.Frames(pools, self.reserved, taken, forbidden, fillers)
        self.echo = echoes.Echoes(echoes.measure_rates([(f, m) for f, _t, m in ev]), self.reserved, taken)
        self.requests = [r for p, _r, _d in drafts for r in p.images]
        self.seed, self.user, self.photo_rate = seed, user, photo_rate
        self.n = 0

    def draw(self, rng, k: int, reserved: set[str]) -> list[Mention]:
        """``k`` distractor mentions that reuse none of ``reserved`` (the probe's own contexts: probes
        share no history, so each needs only its own kept apart)."""
        self.reserved = self.framer.reserved = self.echo.reserved = reserved
        out = []
        for _ in range(k):
            src = self.requests[rng.randrange(len(self.requests))]
            cons = {c: src.constraints[c] for c in SHAPE_KEYS if c in src.constraints}
            if isinstance(cons.get("photo"), dict):
                cons["photo"] = True
            self.n += 1
            req = type(src)(src.family, cons, role="haystack")
            truth = _truth(self.seed, ("distractor", self.n), req, self.user, self.photo_rate)
            vals = drawn_values(truth)
            text = self.framer.draw(rng, req.family, truth)
            if text is None or any(contains_token_bounded(text, v) for v in vals):
                thing, _ctx = thing_for(rng, req.family, self.reserved, truth=truth)
                text = mention_for(rng, req.family, thing, tail=self.echo.tail(rng, req.family, truth))
                if any(contains_token_bounded(text, v) for v in vals):
                    text = mention_for(rng, req.family, thing)
            sha = short_id("img", self.seed, "probe", self.n, n=64)
            out.append(Mention(text, [sha], False, vals, image_kind=_kind(req.family, truth)))
        return out


def sizes_to_see(chance: dict[str, float], excess: float, confidence: float, cap: int) -> dict[str, int]:
    """Probes per subtype (``type/subtype``): :func:`size_to_see` at the subtype's chance, at most ``cap``."""
    return {sub: min(cap, size_to_see(c, excess, confidence)) for sub, c in sorted(chance.items())}


def _drafts(
    seed: int, topics: list[Topic], per_subtype: int | dict[str, int], user: str, photo_rate: float
) -> list[tuple]:
    """(plan, [(family, truth)], draft) for ``per_subtype`` probes of every answerable subtype (a
    number for all, or per ``type/subtype``: a subtype it does not list gets none)."""
    out = []
    reserved: set[str] = set()
    for cls in answerable():
        ability = ability_for(cls.question_type)
        for sub, variants in sorted(ability.variants.items()):
            want_n = (
                per_subtype if isinstance(per_subtype, int) else per_subtype.get(f"{ability.question_type}/{sub}", 0)
            )
            kept = tries = 0
            # closed answers balanced per variant, as a build balances every class of every variant:
            # counted per class set alone, variants that share one (yes_no_sign, yes_no_receipt)
            # would take its classes in turn, and the question's wording would name the answer
            kept_by: Counter = Counter()
            while kept < want_n and tries < MAX_TRIES * want_n:
                i, tries = tries, tries + 1
                if i % BATCH == 0:  # a benchmark's worth of plans keeps its contexts apart, as a build does
                    reserved = set()
                variant = variants[i % len(variants)]
                rng = derive_rng(seed, "probe", "plan", ability.question_type, sub, i)
                topic = choose_topic(rng, topics, ability.question_type, ability.families.get(variant, []))
                pid = short_id("probe", seed, ability.question_type, sub, i, n=10)
                classes = ability.answer_classes(sub, variant)
                want = {"want": classes[kept_by[variant] % len(classes)]} if classes else {}
                try:
                    plan = ability.plan(rng, topic, sub, variant, pid, reserved, **want)
                    truths = [_truth(seed, (pid, k), req, user, photo_rate) for k, req in enumerate(plan.images)]
                    d = ability.build(derive_rng(seed, "probe", "build", pid), plan, truths)
                except (ValueError, KeyError, RuntimeError) as exc:
                    log.debug("probe plan %s dropped: %s", pid, exc)
                    continue
                out.append((plan, [(r.family, t) for r, t in zip(plan.images, truths)], d))
                kept += 1
                if classes:
                    kept_by[variant] += 1
    return out


def probe_items(
    seed: int, topics: Iterable[Topic], per_subtype: int | dict[str, int], wcfg: WriterConfig, photo_rate: float = 0.5
) -> list[Item]:
    """The probe set: ``per_subtype`` questions of every answerable subtype (or per ``type/subtype``),
    as :class:`~.oracle.Item`."""
    if (per_subtype if isinstance(per_subtype, int) else sum(per_subtype.values())) <= 0:
        return []
    topics = sorted(topics, key=lambda t: t.topic_id)
    by_id = {t.topic_id: t for t in topics}
    user = persona_for(seed)
    drafts = _drafts(seed, topics, per_subtype, user, photo_rate)
    if not drafts:
        return []
    dis = _Distractors(seed, drafts, user, photo_rate)
    writer = SessionWriter(wcfg, RejectionLog(), forbidden=[])  # the generate stage's evidence writer
    items = []
    for n_q, (plan, recs, d) in enumerate(drafts):
        if n_q % BATCH == 0:  # the sentences a benchmark's worth of sessions has seen, as a build's writer
            writer.seen = set()
        topic = by_id[plan.topic_id]
        rng = derive_rng(seed, "probe", "sessions", plan.plan_id)
        qdate = parse_date(d.question_date) if d.question_date else question_date_for(rng)
        evidence = []
        for j, fact in enumerate(d.facts):
            ids = [short_id("img", seed, "probe", plan.plan_id, k, n=64) for k in fact.image_idx]
            vals = [v for k in fact.image_idx for v in drawn_values(recs[k][1])]
            kind = _kind(*recs[fact.image_idx[0]]) if fact.image_idx else None
            m = Mention(fact.mention, ids, has_answer=True, image_values=vals, image_kind=kind)
            if not ids:
                m.has_answer, m.acknowledge = False, None
            mentions = [m, *dis.draw(rng, rng.choice(EXTRA_MENTIONS), set(d.contexts))]
            rng.shuffle(mentions)
            sub = session_subtopic(seed, topic, "probe", plan.plan_id, j)
            try:
                s = writer.write(
                    rng,
                    "evidence",
                    topic,
                    sub,
                    mentions,
                    extra_forbidden=d.forbidden,
                    ambiguity=d.details.get("ambiguity"),
                )
            except MemLensError:
                break
            evidence.append((parse_date(evidence_date(rng, fact, j, len(d.facts), d.ordered, qdate)), s.text))
        else:
            q = Question.unchecked(
                question_id=f"probe_{plan.plan_id}",
                question_type=plan.question_type,
                question_subtype=plan.question_subtype,
                question=d.question,
                answer=d.answer,
                question_date=format_date(qdate),
                source_question_id=None,
                details={"plan_id": plan.plan_id},
            )
            items.append(item_of(q, evidence))
        if n_q and n_q % 500 == 0:
            log.info("probe: %d/%d questions written", n_q, len(drafts))
    return items


__all__ = ["probe_items", "size_to_see"]
