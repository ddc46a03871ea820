"""assemble stage: one history per (question, length), as references to sessions.

For each question the evidence sessions keep their fixed timestamps; haystack sessions (preferring
the question's sub-attribute and track, so the haystack is topically related) and text-only filler
sessions are picked in one seeded order per question, shortest length first, and every longer history
continues the shorter one (it holds every session of it). Each pick chooses, among the next few
candidates, the session whose size and image count keep the history on course for ``data.shape``
(the paper's sessions and images per length); the last lands within ``data.length_tolerance`` of the
target under the cross-modal token count (:mod:`memlens.construction.assemble.tokens`). Non-evidence
sessions are dated by the evidence timing law: whole evidence timing patterns of other questions
(days before the question, time of day), each position on a session of its kind (main image family)
and each pattern within one length's new sessions (:func:`haystack_dates`), so episodes, gaps, hours
and distances to the question date are the same for evidence and haystack sessions of the same
content, at every length. The history is sorted by time.

Evidence sessions of other questions serve as haystack too (``data.cross_evidence``), so a session
that recurs across histories is no sign of haystack: a question may take the evidence sessions of
questions asked at most ``window_days`` apart (``window_days_by_length``: wider from a long length
on, e.g. 512K and 1M, whose histories hold 2-4x the sessions of 256K; the shorter histories are
unchanged) that fall inside its own window, keeping their own dates
(their text and images were written for them), unless the session names one of this question's
entities or values (``details.forbidden``) in its text or its images, or the two questions come from
one source question. Every pick also prefers sessions used in fewer histories of the length so far
(``balance``), so evidence and haystack sessions recur equally often.
Writes ``data/instances/<length>.jsonl`` and a manifest with the length/session/image table.
"""

from __future__ import annotations

import bisect
import logging
from collections import Counter
from datetime import datetime, timedelta

from tqdm import tqdm

from memlens.construction.assemble.tokens import TokenCounter
from memlens.construction.ontology.stage import load_topics
from memlens.construction.text.leakage import PhraseIndex
from memlens.core.config import Paths, length_tokens, resolved_lengths, section
from memlens.core.constants import HISTORY_SPAN_DAYS, INSTRUCTIONS, QUESTION_TEMPLATE, SESSION_HEADER, SYSTEM_PROMPT
from memlens.core.errors import MemLensError
from memlens.core.io import iter_jsonl, read_records, write_jsonl
from memlens.core.schema import ImageRecord, Instance, Question, Session, format_date, parse_date
from memlens.core.settings import Settings, as_settings
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
        self,
        sessions: dict[str, Session],
        images: dict[str, ImageRecord],
        counter: TokenCounter,
        topics: dict,
        questions: list[Question] = (),
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
        self.kinds = {sid: session_kind_of(sess, images) for sid, sess in sessions.items()}
        self.patterns = timing_patterns(list(questions), self.kinds)

    def total(self, sid: str) -> int:
        t, i, _ = self.tokens[sid]
        return t + i


def topical_score(rng, q: Question, pool: Pool):
    """A session's place in ``q``'s candidate order: same sub-attribute 2, same track 1, plus noise."""
    qt = pool.topics.get(q.topic_id)

    def score(sid: str) -> float:
        t = pool.topics.get(pool.sessions[sid].topic_id)
        rel = 0.0
        if qt is not None and t is not None:
            rel = 2.0 if t.sub_attribute == qt.sub_attribute else (1.0 if t.track == qt.track else 0.0)
        return rel + rng.random() * 2.5

    return score


def candidate_order(rng, q: Question, pool: Pool, foreign: list[str] = ()) -> list[str]:
    """Haystack sessions (and the ``foreign`` evidence sessions this question may take) ordered for
    this question: related topics tend to come first."""
    ev = set(q.evidence_session_ids)
    score = topical_score(rng, q, pool)
    hay = sorted((s for s in pool.haystack if s not in ev), key=score, reverse=True)
    lent = lent_order(rng, q, pool, foreign, score)
    if not lent:
        return hay
    # interleaved, half and half: about half of the other sessions are other questions' evidence
    # when every session recurs alike (the recurrence balance of the picks does the rest)
    keyed = [((i + 1) / (1 - LENT_SHARE), 0, s) for i, s in enumerate(hay)]
    keyed += [((j + 1) / LENT_SHARE, 1, s) for j, s in enumerate(lent)]
    return [s for _, _, s in sorted(keyed)]


def lent_order(rng, q: Question, pool: Pool, foreign, score=None) -> list[str]:
    """Other questions' evidence sessions ``q`` may take, related topics first (as the haystack)."""
    score = score or topical_score(rng, q, pool)
    return sorted(sorted(set(foreign) - set(q.evidence_session_ids)), key=score, reverse=True)


def _strings(x) -> list[str]:
    """Every string leaf of an image's ground truth (names, prices, dates, texts)."""
    if isinstance(x, str):
        return [x]
    if isinstance(x, dict):
        return [s for v in x.values() for s in _strings(v)]
    if isinstance(x, (list, tuple)):
        return [s for v in x for s in _strings(v)]
    return []


def _anchors(q: Question) -> list[str]:
    """The entities and values a question turns on (``details.forbidden``) that another question's
    session must not show: names, dates, multi-word values; bare numbers and single lowercase words
    (a count, a colour) are left out, they pin nothing down outside the question's own context."""
    out = []
    for f in q.details.get("forbidden") or []:
        if not isinstance(f, str) or len(f) < 3 or f.replace(".", "").replace(",", "").isdigit():
            continue
        if len(f.split()) >= 2 or any(c.isupper() for c in f) or any(c.isdigit() for c in f):
            out.append(f)
    return out


def cross_evidence(
    questions: list[Question],
    sessions: dict[str, Session],
    images: dict[str, ImageRecord],
    window_days: int,
    min_lenders: int = 0,
) -> dict[str, list[str]]:
    """Per question, the evidence sessions of other questions it may take as haystack: from a
    question asked at most ``window_days`` apart (or from the ``min_lenders`` questions nearest in
    time when fewer are that close), dated inside this question's window and before it,
    showing none of this question's anchors in text or images, and not sharing a source question."""
    return lenders_by_window(questions, sessions, images, [window_days], min_lenders)[window_days]


def lenders_by_window(
    questions: list[Question],
    sessions: dict[str, Session],
    images: dict[str, ImageRecord],
    windows: list[int],
    min_lenders: int = 0,
) -> dict[int, dict[str, list[str]]]:
    """:func:`cross_evidence` for several lender windows at once (the anchors are searched once)."""
    by_anchor: dict[str, set[str]] = {}
    for q in questions:
        for a in _anchors(q):
            by_anchor.setdefault(a, set()).add(q.question_id)
    index = PhraseIndex(by_anchor)
    banned: dict[str, set[str]] = {}  # session -> questions it names an anchor of
    for q in questions:
        for e in q.evidence:
            s = sessions[e.session_id]
            parts = [t.content for t in s.turns]
            parts += [x for i in s.image_ids if i in images for x in _strings(images[i].truth)]
            found = index.find("\n".join(parts)) if index else set()
            banned[e.session_id] = {qid for a in found for qid in by_anchor[a]}
    lenders = sorted(
        ((parse_date(q.question_date), q) for q in questions if q.evidence), key=lambda x: (x[0], x[1].question_id)
    )
    return {w: _lends(questions, lenders, banned, w, min_lenders) for w in sorted(set(windows))}


def _lends(questions, lenders, banned, window_days: int, min_lenders: int) -> dict[str, list[str]]:
    keys = [d for d, _ in lenders]
    out: dict[str, list[str]] = {}
    span = timedelta(days=window_days)
    for q in questions:
        qd = parse_date(q.question_date)
        lo = bisect.bisect_left(keys, qd - span)
        hi = bisect.bisect_right(keys, qd + span)
        near = lenders[lo:hi]
        if len(near) < min_lenders:  # a sparse benchmark: the nearest questions in time, however far
            near = sorted(lenders, key=lambda x: (abs((x[0] - qd).total_seconds()), x[1].question_id))[:min_lenders]
        src = q.source_question_id
        picks = []
        for _, x in near:
            if x.question_id == q.question_id or src == x.question_id or x.source_question_id == q.question_id:
                continue
            if src is not None and x.source_question_id == src:
                continue
            for e in x.evidence:
                d = parse_date(e.date)
                if qd - timedelta(days=HISTORY_SPAN_DAYS) <= d < qd and q.question_id not in banned[e.session_id]:
                    picks.append(e.session_id)
        out[q.question_id] = picks
    return out


#: how much a candidate's image count off the wanted one weighs against its size off the wanted one
IMAGE_WEIGHT = 0.6
#: the share of other questions' evidence sessions among the candidates of each pick
LENT_SHARE = 0.6
#: sessions and images per history when ``data.shape`` names neither the length nor any other one
DEFAULT_TOKENS_PER_SESSION = 2300.0
DEFAULT_IMAGES_PER_SESSION = 1.45
#: how many of the next candidates (in the question's seeded order) each pick chooses among
WINDOW = 24
#: how many sessions nearest the wanted size each pick also considers, and the rank they count as
NEAR = 6
NEAR_RANK = 5


def balanced_share(n_questions: int, other_slots: float, n_lendable: int, n_haystack: int) -> float:
    """The share of lent candidates at which an evidence session (its own history plus its
    borrowers') and a haystack session are expected in as many histories: with ``S`` other-session
    slots over all histories of a length, ``1 + f S / n_lendable = (1 - f) S / n_haystack``."""
    slots = n_questions * other_slots
    if slots <= 0 or n_lendable <= 0 or n_haystack <= 0:
        return LENT_SHARE
    f = (slots / n_haystack - 1) / (slots / n_lendable + slots / n_haystack)
    return min(0.9, max(0.1, f))


def shape_targets(shape: dict, length: str) -> tuple[float, float]:
    """(sessions, images) a history of ``length`` aims at: ``data.shape[length]``, else the entry
    nearest in tokens scaled to this length, else the defaults above."""
    if length in shape:
        s, i = shape[length]
        return float(s), float(i)
    target = length_tokens(length)
    if shape:
        near = min(shape, key=lambda k: abs(length_tokens(k) - target))
        s, i = shape[near]
        f = target / length_tokens(near)
        return float(s) * f, float(i) * f
    s = target / DEFAULT_TOKENS_PER_SESSION
    return s, s * DEFAULT_IMAGES_PER_SESSION


class _History:
    """One question's growing history: the chosen sessions (evidence first, then in pick order) and
    their running token and image counts. Every length continues the previous one's history, so a
    longer history holds every session of a shorter one."""

    def __init__(
        self,
        q: Question,
        pool: Pool,
        hay: list[str],
        fill: list[str],
        base: int,
        header: int,
        uses: dict[str, Counter] | None = None,
        balance: float = 0.0,
        mean_uses: dict[str, float] | None = None,
    ):
        self.pool, self.header = pool, header
        # histories of each length that hold each session so far (this one's own evidence counted)
        self.uses, self.balance, self.mean_uses = uses or {}, balance, mean_uses or {}
        self.cur: Counter | None = None
        self.cur_mean = 1.0
        self.chosen = list(q.evidence_session_ids)
        self.total = base + sum(pool.total(s) + header for s in self.chosen)
        self.n_img = sum(pool.tokens[s][2] for s in self.chosen)
        self.left = [hay, fill]  # unused candidates, each list in the question's seeded order
        # the unused haystack sessions by size too: a pick may also take one of the sessions nearest
        # the size wanted from anywhere in the order (long histories need the pool's large sessions)
        self.by_size = sorted(hay, key=lambda s: (self.size(s), s))
        self.sizes = [self.size(s) for s in self.by_size]
        self.avail = set(hay)

    def size(self, sid: str) -> int:
        return self.pool.total(sid) + self.header

    def near(self, goal: float, hi: float) -> list[tuple[int, str]]:
        """Up to ``NEAR`` unused haystack sessions nearest ``goal`` tokens that keep the total <= ``hi``
        (ranked as the ``NEAR_RANK``-th candidate of the order)."""
        i = bisect.bisect_left(self.sizes, goal)
        lo_i, hi_i, out = i - 1, i, []
        while len(out) < NEAR and (lo_i >= 0 or hi_i < len(self.by_size)):
            d_lo = goal - self.sizes[lo_i] if lo_i >= 0 else float("inf")
            d_hi = self.sizes[hi_i] - goal if hi_i < len(self.by_size) else float("inf")
            if d_lo <= d_hi:
                s, lo_i = self.by_size[lo_i], lo_i - 1
            else:
                s, hi_i = self.by_size[hi_i], hi_i + 1
            if s in self.avail and self.total + self.size(s) <= hi:
                out.append((NEAR_RANK, s))
        return out

    def extend(self, extra: list[str], lent: set[str], share: float) -> None:
        """More candidates from this length on (sessions lent under a wider window): the unused
        candidates are interleaved anew, the lent ones (unused earlier ones first, then ``extra``)
        making ``share`` of them, as in :func:`candidate_order`; the histories already grown are
        unchanged."""
        new = [s for s in extra if s not in self.avail and s not in self.chosen]
        if not new:
            return
        rest = self.left[0]
        hay = [s for s in rest if s not in lent]
        borrowed = [s for s in rest if s in lent] + new
        keyed = [((i + 1) / (1 - share), 0, s) for i, s in enumerate(hay)]
        keyed += [((j + 1) / share, 1, s) for j, s in enumerate(borrowed)]
        self.left[0] = [s for _, _, s in sorted(keyed)]
        self.avail.update(new)
        self.by_size = sorted(self.avail, key=lambda s: (self.size(s), s))
        self.sizes = [self.size(s) for s in self.by_size]

    def add(self, sid: str) -> None:
        self.avail.discard(sid)
        for lst in self.left:
            if sid in lst:
                lst.remove(sid)
        self.chosen.append(sid)
        self.total += self.size(sid)
        self.n_img += self.pool.tokens[sid][2]

    def unused(self) -> list[str]:
        return [s for lst in self.left for s in lst]

    def cost(self, ks: tuple[int, str], size_goal: float, img_goal: float) -> float:
        """How far candidate ``s`` (``k``-th in its list) is from the size and image count wanted."""
        k, s = ks
        used = self.balance * self.cur[s] / self.cur_mean if self.cur is not None and self.balance else 0.0
        return (
            abs(self.size(s) - size_goal) / max(size_goal, 1.0)
            + IMAGE_WEIGHT * abs(self.pool.tokens[s][2] - img_goal)
            + 0.03 * k
            + used
        )

    def grow(self, q: Question, length: str, target: int, want: tuple[float, float], tol: float) -> None:
        """Add sessions until the history is within half the tolerance of ``target``, each pick the
        one among the next ``WINDOW`` candidates of each list whose size and image count keep the
        history on course for ``want`` (sessions, images)."""
        aim = tol / 2  # aim at half the tolerance, so every instance lands well inside it
        lo, hi = target * (1 - aim), target * (1 + aim)
        self.cur = self.uses.get(length)
        self.cur_mean = max(float(self.mean_uses.get(length, 1.0)), 1.0)
        while self.total < lo:
            rest_s = max(1.0, want[0] - len(self.chosen))
            size_goal = (target - self.total) / rest_s
            img_goal = max(0.0, want[1] - self.n_img) / rest_s
            # haystack first: text-only fillers only when no haystack session fits (an evidence
            # session always has an image, so text-only sessions would mark the haystack)
            fits: list[tuple[int, str]] = []
            for j, lst in enumerate(self.left):
                fits = [(k, s) for k, s in enumerate(lst[:WINDOW]) if self.total + self.size(s) <= hi]
                if j == 0:
                    fits += self.near(size_goal, hi)
                if fits:
                    break
            if not fits:
                # every near candidate overshoots: finish with the best-fitting unused session
                for lst in self.left:
                    rest = [s for s in lst if self.total + self.size(s) <= hi]
                    if rest:
                        self.add(max(rest, key=self.size))
                        break
                else:
                    break
                continue

            self.add(min(fits, key=lambda ks: self.cost(ks, size_goal, img_goal))[1])
        if abs(self.total - target) > tol * target:
            raise MemLensError(
                f"assemble: question {q.question_id} at {length}: reached {self.total} tokens, target "
                f"{target} ±{tol:.0%}; the session pool is too small (raise data.scales.<scale>."
                f"haystack_sessions / filler_sessions)"
            )


def session_kind_of(session: Session, images: dict[str, ImageRecord]) -> str:
    """What a session's content says of the question it could serve: the most frequent family of
    its images (ties: the first in name order), ``""`` without images."""
    fams = Counter(images[i].family for i in session.image_ids if i in images)
    if not fams:
        return ""
    top = max(fams.values())
    return min(f for f, c in fams.items() if c == top)


def timing_patterns(
    questions: list[Question], kinds: dict[str, str] | None = None
) -> list[tuple[str, tuple[tuple[int, int, str], ...]]]:
    """The evidence timing law as data: per question with evidence, ``(question id, sessions)``, its
    sessions as (whole days before the question's day, minute of the day, session kind) in time
    order (``kinds``: session id -> :func:`session_kind_of`; ``""`` when not given). Haystack
    sessions are dated by drawing whole patterns of other questions, each position on a session of
    its kind, so they come in the same episodes, gaps, hours and distances to the question date as
    evidence sessions of the same content."""
    kinds = kinds or {}
    out = []
    for q in sorted(questions, key=lambda q: q.question_id):
        if not q.evidence:
            continue
        qd = parse_date(q.question_date).date()
        pat = []
        for e in q.evidence:
            d = parse_date(e.date)
            pat.append(((qd - d.date()).days, d.hour * 60 + d.minute, kinds.get(e.session_id, "")))
        out.append((q.question_id, tuple(sorted(pat, key=lambda x: (-x[0], x[1], x[2])))))
    return out


def haystack_dates(seed: int, q: Question, kinds: list[str], patterns: list, ends: list[int] = ()) -> list[str]:
    """Dates for the non-evidence sessions of ``q``'s history, given their kinds
    (:func:`session_kind_of`) in pick order; ``ends``: how many of them each length holds (shortest
    first; the longer histories extend the shorter ones). Episodes are whole timing patterns of
    other questions (:func:`timing_patterns`), each placed relative to this question's date and
    kept inside one length's new sessions, so a short history holds whole episodes as it holds the
    whole evidence: the first undated session takes a pattern that holds its kind and fits in what
    is left of its length (dealt from a shuffled deck per kind), at a position of that kind; each
    other position goes to an undated session of the same length, of its kind if there is one, else
    a text-only one, else the next one. So the sessions that look like one kind of question's
    evidence come, like it, in its episodes, gaps and hours. A session that would not fall before
    the question moves one day earlier. Without patterns: uniform in the window."""
    qdate = parse_date(q.question_date)
    rng = derive_rng(seed, "session-dates", q.question_id)
    pats = [p for qid, p in patterns if qid != q.question_id]
    n = len(kinds)
    out: list[str | None] = [None] * n
    if not pats:
        for k in range(n):
            out[k] = format_date(qdate - timedelta(minutes=rng.randrange(60, HISTORY_SPAN_DAYS * 24 * 60)))
        return out

    def place(days: int, minute: int) -> str:
        when = datetime.combine(qdate.date() - timedelta(days=days), datetime.min.time()) + timedelta(minutes=minute)
        if when >= qdate:
            when -= timedelta(days=1)
        return format_date(when)

    holding: dict[str | None, list[int]] = {None: list(range(len(pats)))}
    for k, p in enumerate(pats):
        for kind in sorted({x[2] for x in p}):
            holding.setdefault(kind, []).append(k)
    decks: dict[str | None, list[int]] = {}

    def deal(kind: str | None, room: int) -> int | None:
        """The next pattern of the kind's deck that fits in ``room`` sessions (refilled once)."""
        deck = decks.setdefault(kind, [])
        for refill in (False, True):
            if refill:
                deck[:] = holding[kind]
                rng.shuffle(deck)
            for at in range(len(deck) - 1, -1, -1):
                if len(pats[deck[at]]) <= room:
                    return deck.pop(at)
        return None

    bounds = sorted({min(e, n) for e in ends if e > 0} | {n})
    lo = 0
    for hi in bounds:
        for i in range(lo, hi):
            if out[i] is not None:
                continue
            free = [t for t in range(i + 1, hi) if out[t] is None]
            k = deal(kinds[i], len(free) + 1) if kinds[i] in holding else None
            if k is None:
                k = deal(None, len(free) + 1)
            if k is None:  # every pattern is longer than what is left: a single session of one
                pat = pats[rng.randrange(len(pats))]
                out[i] = place(*pat[rng.randrange(len(pat))][:2])
                continue
            pat = pats[k]
            at = [j for j, x in enumerate(pat) if x[2] == kinds[i]] or list(range(len(pat)))
            first = rng.choice(at)
            out[i] = place(*pat[first][:2])
            for j, (days, minute, kind) in enumerate(pat):
                if j == first:
                    continue
                t = next((t for t in free if kinds[t] == kind), None)
                if t is None:
                    t = next((t for t in free if kinds[t] == ""), free[0])
                free.remove(t)
                out[t] = place(days, minute)
        lo = hi
    return out


def assemble_lengths(
    q: Question,
    lengths: list[str],
    pool: Pool,
    counter: TokenCounter,
    seed: int,
    tol: float,
    header_tokens: int,
    shape: dict | None = None,
    *,
    foreign: dict[str, str] | None = None,
    uses: dict[str, Counter] | None = None,
    balance: float = 0.0,
    mean_uses: dict[str, float] | None = None,
    foreign_from: dict[str, dict[str, str]] | None = None,
    lent_share: dict[str, float] | None = None,
) -> dict[str, Instance]:
    """One history per length, shortest first; each longer history extends the shorter one.
    ``foreign``: other questions' evidence sessions this question may take, with their dates;
    ``foreign_from``: per length, more such sessions it may take from that length on (a wider
    lender window for long histories); ``uses``: per length, how many histories hold each session
    so far (updated with this one's); ``lent_share``: per length of ``foreign_from``, the share of
    lent sessions among the candidates from there on (:func:`balanced_share`)."""
    foreign = dict(foreign or {})
    rng = derive_rng(seed, "assemble-order", q.question_id)  # same order at every length
    hay = candidate_order(rng, q, pool, list(foreign))
    fill = sorted(pool.filler, key=lambda s: rng.random())
    qtok = counter.text(question_overhead_text(q.question_date, q.question))
    h = _History(q, pool, hay, fill, qtok, header_tokens, uses, balance, mean_uses)
    n_ev = len(h.chosen)
    out = {}
    for length in sorted(lengths, key=length_tokens):
        extra = {s: d for s, d in (foreign_from or {}).get(length, {}).items() if s not in foreign}
        if extra:
            later = derive_rng(seed, "assemble-order", q.question_id, length)
            share = (lent_share or {}).get(length, LENT_SHARE)
            h.extend(lent_order(later, q, pool, list(extra)), set(foreign) | set(extra), share)
            foreign.update(extra)
        h.grow(q, length, length_tokens(length), shape_targets(shape or {}, length), tol)
        out[length] = h.chosen.copy()
        if uses is not None:
            uses.setdefault(length, Counter()).update(h.chosen[n_ev:])
    # timestamps: evidence fixed (another question's evidence keeps its own date); the others by the
    # evidence timing law, in pick order
    longest = max(out.values(), key=len)
    ev_dates = {e.session_id: e.date for e in q.evidence}
    rest = [s for s in longest[n_ev:] if s not in foreign]
    ends = [sum(1 for s in out[ln][n_ev:] if s not in foreign) for ln in sorted(out, key=length_tokens)]
    dates = dict(zip(rest, haystack_dates(seed, q, [pool.kinds[s] for s in rest], pool.patterns, ends)))
    dates.update({s: foreign[s] for s in longest[n_ev:] if s in foreign})
    dates.update(ev_dates)
    insts = {}
    for length, chosen in out.items():
        dated = sorted((parse_date(dates[s]), s) for s in chosen)
        total = qtok + sum(pool.total(s) + header_tokens for s in chosen)
        itok = sum(pool.tokens[s][1] for s in chosen)
        insts[length] = Instance(
            question_id=q.question_id,
            length=length,
            target_tokens=length_tokens(length),
            session_ids=[s for _, s in dated],
            dates=[dates[s] for _, s in dated],
            answer_session_ids=list(q.evidence_session_ids),
            total_tokens=int(total),
            text_tokens=int(total - itok),
            image_tokens=int(itok),
            n_images=int(sum(pool.tokens[s][2] for s in chosen)),
        )
    return insts


def assemble_one(
    q: Question,
    length: str,
    pool: Pool,
    counter: TokenCounter,
    seed: int,
    tol: float,
    header_tokens: int,
    shape: dict | None = None,
) -> Instance:
    """The history of one question at one length (see :func:`assemble_lengths`)."""
    return assemble_lengths(q, [length], pool, counter, seed, tol, header_tokens, shape)[length]


def recurrence(insts: list[Instance], evidence: set[str]) -> dict:
    """How many histories of one length hold each session, for evidence and other sessions."""
    held = Counter(s for i in insts for s in i.session_ids)
    ev = [n for s, n in held.items() if s in evidence]
    other = [n for s, n in held.items() if s not in evidence]
    return {
        "histories_per_evidence_session": round(sum(ev) / len(ev), 2) if ev else 0.0,
        "histories_per_other_session": round(sum(other) / len(other), 2) if other else 0.0,
    }


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    seed = int(cfg.data.seed)
    counter = TokenCounter(cfg.data.tokens)
    tol = float(cfg.data.length_tolerance)
    questions = read_records(paths.generated / "questions.jsonl", Question, nonempty=True)
    sessions = {s.session_id: s for s in read_records(paths.generated / "sessions.jsonl", Session, nonempty=True)}
    images = {}
    for row in iter_jsonl(paths.images / "index.jsonl"):
        rec = ImageRecord.from_dict(row["image"])
        images[rec.sha256] = rec
    topics = {t.topic_id: t for t in load_topics(paths)}
    pool = Pool(sessions, images, counter, topics, questions)
    header_tokens = counter.text(SESSION_HEADER.format(i=12, date="2024/05/31 (Fri) 07:58"))
    shape = {str(k): list(v) for k, v in cfg.data.shape.items()}
    lengths = resolved_lengths(cfg)
    out = paths.instances
    out.mkdir(parents=True, exist_ok=True)
    table = {}
    xcfg = cfg.data.cross_evidence
    ev_date = {e.session_id: e.date for q in questions for e in q.evidence}
    window = int(xcfg.window_days)
    # a longer history may borrow from further away (every evidence session has only so many
    # borrowers; at 1M a haystack session is in ~90 histories): wider windows from those lengths on
    wider = {str(k): int(v) for k, v in (xcfg.window_days_by_length or {}).items()}
    later = {ln: wider[ln] for ln in lengths if wider.get(ln, 0) > window}
    tables = (
        lenders_by_window(questions, sessions, images, [window, *later.values()], int(xcfg.min_lenders))
        if xcfg.enabled
        else {}
    )
    lends = tables.get(window, {})
    later = later if tables else {}
    n_ev = sum(1 for sid in ev_date if sessions[sid].image_ids)
    ev_per_q = sum(len(q.evidence) for q in questions) / max(1, len(questions))
    shares = {
        ln: balanced_share(len(questions), shape_targets(shape, ln)[0] - ev_per_q, n_ev, len(pool.haystack))
        for ln in later
    }
    balance = float(xcfg.balance) if xcfg.enabled else 0.0
    # every history holds its own evidence; the expected histories per candidate session at a length
    uses = {ln: Counter(dict.fromkeys(ev_date, 1)) for ln in lengths} if balance else None
    n_cand = max(1, len(pool.haystack) + len(ev_date))
    mean_uses = {ln: len(questions) * shape_targets(shape, ln)[0] / n_cand for ln in lengths}
    # questions take their turns in a seeded order unrelated to their ids (the recurrence balance
    # makes a history depend on the ones before it)
    turn = derive_rng(seed, "assemble-turns")
    order = sorted(questions, key=lambda q: q.question_id)
    turn.shuffle(order)
    per_q = [
        assemble_lengths(
            q,
            lengths,
            pool,
            counter,
            seed,
            tol,
            header_tokens,
            shape,
            foreign={s: ev_date[s] for s in lends.get(q.question_id, [])},
            uses=uses,
            balance=balance,
            mean_uses=mean_uses,
            foreign_from={ln: {s: ev_date[s] for s in tables[w].get(q.question_id, [])} for ln, w in later.items()},
            lent_share=shares,
        )
        for q in tqdm(order, desc="assemble", unit="q", leave=False)
    ]
    for stale in sorted(set(out.glob("*.jsonl")) - {out / f"{ln}.jsonl" for ln in lengths}):
        stale.unlink()  # a length not assembled now is not part of this benchmark (its manifest)
    for length in lengths:
        insts = [d[length] for d in per_q]
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
            **recurrence(insts, set(ev_date)),
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
