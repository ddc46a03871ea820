"""assemble stage: one history per (question, length), as references to sessions.

For each question the evidence sessions keep their fixed timestamps; haystack sessions (preferring
the question's sub-attribute and track, so the haystack is topically related) and text-only filler
sessions are added in one seeded order per question, so a longer history extends the shorter one:
same evidence and question at every length, more haystack at longer lengths. Fillers are taken so
that the running text-per-image ratio stays at the pool's ratio (evidence images do not cluster).
The last session is chosen to land within ``data.length_tolerance`` of the target under the
cross-modal token count (:mod:`memlens.build.assemble.tokens`). Sessions get timestamps uniformly at
random in the question's time window and the history is sorted by time.
Writes ``data/instances/<length>.jsonl`` and a manifest with the length/session/image table.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from tqdm import tqdm

from memlens.build.assemble.tokens import TokenCounter
from memlens.build.ontology.stage import load_topics
from memlens.core.config import Paths, length_tokens, resolved_lengths, section
from memlens.core.constants import HISTORY_SPAN_DAYS, INSTRUCTIONS, QUESTION_TEMPLATE, SESSION_HEADER, SYSTEM_PROMPT
from memlens.core.errors import MemLensError
from memlens.core.io import iter_jsonl, read_records, write_jsonl
from memlens.core.schema import ImageRecord, Instance, Question, Session, format_date, parse_date
from memlens.core.store import derive_rng, hash_tree, write_manifest

log = logging.getLogger(__name__)


def question_overhead_text(question_date: str, question: str) -> str:
    """The fixed prompt text around a question (system message, instruction, question lines), as
    the standard prompt mode sends it: its tokens count towards the target length."""
    return (
        SYSTEM_PROMPT
        + "\n"
        + QUESTION_TEMPLATE.format(
            instruction=INSTRUCTIONS["standard"], question_date=question_date, question=question
        ).rstrip("\n")
    )


class Pool:
    def __init__(
        self, sessions: dict[str, Session], images: dict[str, ImageRecord], counter: TokenCounter, topics: dict
    ):
        self.sessions = sessions
        self.tokens: dict[str, tuple[int, int, int]] = {}
        ids = sorted(sessions)
        texts = [[t.content for t in sessions[i].turns] for i in ids]
        flat = [x for ts in texts for x in ts]
        counts = counter.texts(flat) if flat else []
        pos = 0
        for sid, ts in zip(ids, texts):
            ttok = sum(counts[pos : pos + len(ts)])
            pos += len(ts)
            img_ids = sessions[sid].image_ids
            itok = sum(counter.image(images[i].width, images[i].height) for i in img_ids)
            self.tokens[sid] = (ttok, itok, len(img_ids))
        self.haystack = [i for i in ids if sessions[i].kind == "haystack"]
        self.filler = [i for i in ids if sessions[i].kind == "filler"]
        self.topics = topics
        tt = sum(self.tokens[i][0] for i in self.haystack + self.filler)
        ni = sum(self.tokens[i][2] for i in self.haystack)
        self.text_per_image = tt / ni if ni else float("inf")

    def total(self, sid: str) -> int:
        t, i, _ = self.tokens[sid]
        return t + i


def candidate_order(rng, q: Question, pool: Pool) -> list[str]:
    """Haystack sessions ordered for this question: related topics tend to come first."""
    qt = pool.topics.get(q.topic_id)
    ev = set(q.evidence_session_ids)

    def score(sid: str) -> float:
        t = pool.topics.get(pool.sessions[sid].topic_id)
        rel = 0.0
        if qt is not None and t is not None:
            rel = 2.0 if t.sub_attribute == qt.sub_attribute else (1.0 if t.track == qt.track else 0.0)
        return rel + rng.random() * 2.5

    return sorted((s for s in pool.haystack if s not in ev), key=score, reverse=True)


def assemble_one(
    q: Question, length: str, pool: Pool, counter: TokenCounter, seed: int, tol: float, header_tokens: int
) -> Instance:
    target = length_tokens(length)
    rng = derive_rng(seed, "assemble-order", q.question_id)  # same order at every length
    hay = candidate_order(rng, q, pool)
    fill = sorted(pool.filler, key=lambda s: rng.random())
    qtok = counter.text(question_overhead_text(q.question_date, q.question))
    chosen = list(q.evidence_session_ids)
    total = qtok + sum(pool.total(s) + header_tokens for s in chosen)
    text_t = sum(pool.tokens[s][0] for s in chosen)
    n_img = sum(pool.tokens[s][2] for s in chosen)
    hi_i = fi_i = 0
    aim = tol / 2  # aim at half the tolerance, so every instance lands well inside it
    lo_bound = target * (1 - aim)
    while True:
        # prefer haystack unless the history is image-richer than the pool's text-per-image ratio
        want_filler = n_img > 0 and text_t / n_img < pool.text_per_image and fi_i < len(fill)
        nxt = None
        if want_filler:
            nxt, fi_i = fill[fi_i], fi_i + 1
        elif hi_i < len(hay):
            nxt, hi_i = hay[hi_i], hi_i + 1
        elif fi_i < len(fill):
            nxt, fi_i = fill[fi_i], fi_i + 1
        if nxt is None:
            break
        add = pool.total(nxt) + header_tokens
        if total + add > target * (1 + aim):
            # the next session overshoots: finish with the best-fitting unused session
            gap = target - total
            rest = [s for s in fill[fi_i:] + hay[hi_i:] + [nxt]]
            best = min(rest, key=lambda s: abs(pool.total(s) + header_tokens - gap))
            if abs(total + pool.total(best) + header_tokens - target) < abs(total - target):
                chosen.append(best)
                total += pool.total(best) + header_tokens
                text_t += pool.tokens[best][0]
                n_img += pool.tokens[best][2]
            if total >= lo_bound:
                break
            # still short: drop the finisher search and keep filling with smaller sessions
            smaller = [
                s for s in rest if s not in chosen and total + pool.total(s) + header_tokens <= target * (1 + aim)
            ]
            if not smaller:
                break
            s = max(smaller, key=lambda s: pool.total(s))
            chosen.append(s)
            total += pool.total(s) + header_tokens
            text_t += pool.tokens[s][0]
            n_img += pool.tokens[s][2]
            if s in fill:
                fill.remove(s)
            if s in hay:
                hay.remove(s)
            continue
        chosen.append(nxt)
        total += add
        text_t += pool.tokens[nxt][0]
        n_img += pool.tokens[nxt][2]
        if total >= lo_bound:
            break
    if abs(total - target) > tol * target:
        raise MemLensError(
            f"assemble: question {q.question_id} at {length}: reached {total} tokens, target "
            f"{target} ±{tol:.0%}; the session pool is too small (raise data.scales.<scale>."
            f"haystack_sessions / filler_sessions)"
        )
    # timestamps: evidence fixed; others uniform in the window, seeded per (question, session)
    qdate = parse_date(q.question_date)
    ev_dates = {e.session_id: e.date for e in q.evidence}
    dated = []
    for sid in chosen:
        if sid in ev_dates:
            d = ev_dates[sid]
        else:
            r = derive_rng(seed, "session-date", q.question_id, sid)
            d = format_date(qdate - timedelta(minutes=r.randrange(60, HISTORY_SPAN_DAYS * 24 * 60)))
        dated.append((parse_date(d), sid, d))
    dated.sort()
    itok = sum(pool.tokens[s][1] for s in chosen)
    return Instance(
        question_id=q.question_id,
        length=length,
        target_tokens=target,
        session_ids=[s for _, s, _ in dated],
        dates=[d for _, _, d in dated],
        answer_session_ids=[s for s in q.evidence_session_ids],
        total_tokens=int(total),
        text_tokens=int(total - itok),
        image_tokens=int(itok),
        n_images=int(sum(pool.tokens[s][2] for s in chosen)),
    )


def run(cfg, paths: Paths) -> None:
    seed = int(cfg.data.seed)
    counter = TokenCounter(cfg.data.tokens)
    tol = float(cfg.data.length_tolerance)
    questions = read_records(paths.generated / "questions.jsonl", Question)
    sessions = {s.session_id: s for s in read_records(paths.generated / "sessions.jsonl", Session)}
    images = {}
    for row in iter_jsonl(paths.images / "index.jsonl"):
        rec = ImageRecord.from_dict(row["image"])
        images[rec.sha256] = rec
    topics = {t.topic_id: t for t in load_topics(paths)}
    pool = Pool(sessions, images, counter, topics)
    header_tokens = counter.text(SESSION_HEADER.format(i=12, date="2024/05/31 (Fri) 07:58"))
    out = paths.instances
    out.mkdir(parents=True, exist_ok=True)
    table = {}
    for length in resolved_lengths(cfg):
        insts = [
            assemble_one(q, length, pool, counter, seed, tol, header_tokens)
            for q in tqdm(questions, desc=f"assemble@{length}", unit="q", leave=False)
        ]
        write_jsonl(out / f"{length}.jsonl", sorted(insts, key=lambda i: i.question_id))
        n = len(insts)
        table[length] = {
            "instances": n,
            "target_tokens": length_tokens(length),
            "mean_tokens": round(sum(i.total_tokens for i in insts) / n, 1),
            "max_rel_error": round(max(abs(i.total_tokens - i.target_tokens) / i.target_tokens for i in insts), 5),
            "mean_sessions": round(sum(len(i.session_ids) for i in insts) / n, 2),
            "mean_images": round(sum(i.n_images for i in insts) / n, 2),
            "mean_image_tokens": round(sum(i.image_tokens for i in insts) / n, 1),
        }
        log.info("assemble %s: %s", length, table[length])
    write_manifest(
        out,
        "assemble",
        {**section(cfg, "data")["data"], "seed": seed},
        hash_tree(out),
        code=(__name__,),
        extra={
            "token_counting": counter.describe(),
            "table": table,
            "pool_text_tokens_per_image": round(pool.text_per_image, 1),
        },
    )
