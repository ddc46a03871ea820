"""Constructed benchmarks for the adversary tests: clean, or with one planted leak.

Every history holds its question's evidence session among haystack sessions drawn from one pool;
sessions are random sentences over a made-up vocabulary (no sentence repeats), images random over
three families, two sizes and random byte counts, session dates random over 200 days. A leak
changes exactly one thing about the evidence (or the answers):

- ``phrase``: evidence sessions say "the twelfth of August" (a telltale phrase);
- ``timing``: evidence sessions are held at 14:00-14:59, haystack sessions at other hours;
- ``image_size``: evidence images are 1000x720, haystack images never are;
- ``answer_prior``: every A/B question is answered "B";
- ``context``: refusal questions name a context that no history mentions, answerable questions
  one that their evidence session mentions (the contexts are made-up words either way; refusal
  questions use the answerable questions' templates in every benchmark);
- ``this_morning``: date questions are answered by the date of the session that shares
  "the ticket from this morning <image>";
- ``recurrence``: evidence sessions appear only in their own question's history (in a clean
  benchmark other questions' evidence sessions are haystack too, each pick the least used session,
  so every session recurs in about as many histories).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from memlens.construction.validate.adversaries.data import Bench
from memlens.core.constants import AR, MSR, REFUSAL_REFERENCE, TR
from memlens.core.schema import Evidence, ImageRecord, Instance, Question, Session, Turn, format_date

START = datetime(2024, 1, 1, 9, 0)
FAMILIES = ("receipt", "named_sign", "object_scene")


def _vocab(rng: random.Random, n: int = 3000) -> list[str]:
    letters = "bcdfghklmnprstvz"
    vowels = "aeiou"
    out = set()
    while len(out) < n:
        out.add("".join(rng.choice(letters) + rng.choice(vowels) for _ in range(rng.randint(2, 4))))
    return sorted(out)


class Factory:
    def __init__(self, seed: int, leak: str | None):
        self.rng = random.Random(seed)
        self.words = _vocab(self.rng)
        self.leak = leak
        self.images: dict[str, ImageRecord] = {}
        self.sizes: dict[str, int] = {}
        self.sessions: dict[str, Session] = {}
        self.hours: dict[str, int] = {}

    def sentence(self) -> str:
        ws = self.rng.sample(self.words, self.rng.randint(7, 12))
        return " ".join(ws).capitalize() + "."

    def image(self, evidence: bool) -> str:
        sha = f"{len(self.images) + 1:064x}"
        w, h = self.rng.choice([(800, 600), (640, 900), (1000, 720)])
        if self.leak == "image_size":
            w, h = (1000, 720) if evidence else self.rng.choice([(800, 600), (640, 900)])
        self.images[sha] = ImageRecord(
            sha256=sha,
            family=self.rng.choice(FAMILIES),
            role="evidence" if evidence else "haystack",
            width=w,
            height=h,
            format="png",
            source="test",
        )
        self.sizes[sha] = self.rng.randint(20_000, 90_000)
        return sha

    def session(self, sid: str, kind: str, extra: str = "") -> Session:
        evidence = kind == "evidence"
        turns = []
        for k in range(self.rng.randint(2, 4)):
            user = " ".join(self.sentence() for _ in range(self.rng.randint(2, 4)))
            imgs = []
            if k == 0:
                imgs = [self.image(evidence) for _ in range(self.rng.randint(1, 2))]
                user += " " + " ".join(f"Here is the ticket {self.rng.choice(self.words)} <image>." for _ in imgs)
                if extra:
                    user += " " + extra
                    imgs += [self.image(evidence) for _ in range(extra.count("<image>"))]
            turns.append(Turn(role="user", content=user, images=imgs))
            turns.append(Turn(role="assistant", content=" ".join(self.sentence() for _ in range(2))))
        s = Session(session_id=sid, kind=kind, topic_id="t", turns=turns)
        self.sessions[sid] = s
        hour = self.rng.choice([h for h in range(8, 22) if h != 14])
        if self.leak == "timing" and evidence:
            hour = 14
        elif self.leak != "timing":
            hour = self.rng.randint(8, 21)
        self.hours[sid] = hour
        return s

    def at(self, day: int, sid: str) -> str:
        return format_date(START + timedelta(days=day, hours=self.hours[sid] - 9, minutes=self.rng.randint(0, 59)))


def make_bench(
    n_questions: int = 60, *, leak: str | None = None, seed: int = 0, pool: int = 120, per_history: int = 8
) -> Bench:
    f = Factory(seed, leak)
    rng = f.rng
    hay = [f.session(f"h{i:03d}", "haystack").session_id for i in range(pool)]
    questions, instances = {}, []
    kinds = ["ab", "count", "date", "ar"]
    plans = []
    for n in range(n_questions):
        kind = kinds[n % len(kinds)]
        context = " ".join(rng.sample(f.words, 3))
        mentions = kind != "ar" or leak != "context"
        extra = f"That was at {context}." if (leak == "context" and mentions) else ""
        if leak == "phrase":
            extra += " It was the twelfth of August."
        if kind == "date" and leak == "this_morning":
            extra += " This is the ticket from this morning <image>."
        ev = f.session(f"e{n:03d}", "evidence", extra) if kind != "ar" else None
        plans.append((kind, context, ev))
    # (other questions' "this morning" sessions would hide the planted date shortcut, which the test
    # of the dates solver needs to see)
    lend = leak not in ("recurrence", "this_morning")
    lendable = [ev.session_id for _, _, ev in plans if ev] if lend else []
    uses = dict.fromkeys(hay, 0) | dict.fromkeys(lendable, 1)
    for n, (kind, context, ev) in enumerate(plans):
        qid = f"q{n:03d}"
        own = ev.session_id if ev else None
        cands = [s for s in hay + lendable if s != own]
        rng.shuffle(cands)
        picked = sorted(cands, key=lambda s: uses[s])[: per_history + (own is None)]
        for s in picked:
            uses[s] += 1
        ids = picked + ([own] if own else [])
        days = sorted(rng.sample(range(200), len(ids)))
        rng.shuffle(ids)
        dates = [f.at(d, s) for d, s in zip(days, ids)]
        ev_date = dates[ids.index(ev.session_id)] if ev else None
        qdate = format_date(START + timedelta(days=205))
        ctx = context if leak == "context" else "the trip"
        if kind == "ab":
            q = Question(
                question_id=qid,
                question_type=TR,
                question_subtype="duration_comparison",
                question=f"Which lasted longer: (A) the time from {ctx} to lunch, or (B) the time from dinner to "
                f"{rng.choice(f.words)}? Answer A or B.",
                answer="B" if leak == "answer_prior" else rng.choice("AB"),
                question_date=qdate,
            )
        elif kind == "count":
            q = Question(
                question_id=qid,
                question_type=MSR,
                question_subtype="counting",
                question=f"How many of the tickets from {ctx} were for {rng.choice(f.words)}?",
                answer=str(rng.randint(1, 6)),
                question_date=qdate,
            )
        elif kind == "date":
            ans = (
                ev_date[:10] if leak == "this_morning" else format_date(START + timedelta(days=rng.randrange(200)))[:10]
            )
            q = Question(
                question_id=qid,
                question_type=TR,
                question_subtype="temporal_info_extraction",
                question=f"When did I get the ticket from {ctx}? Answer in YYYY/MM/DD.",
                answer=ans,
                question_date=qdate,
            )
        else:  # a refusal question reads like an answerable one (same templates), only its answer differs
            q = Question(
                question_id=qid,
                question_type=AR,
                question_subtype="",
                question=rng.choice(
                    [
                        f"How many of the tickets from {ctx} were for {rng.choice(f.words)}?",
                        f"When did I get the ticket from {ctx}? Answer in YYYY/MM/DD.",
                    ]
                ),
                answer=REFUSAL_REFERENCE,
                question_date=qdate,
                image_essential=False,
            )
        if ev:
            q.evidence = [Evidence(session_id=ev.session_id, date=ev_date, fact="", image_ids=ev.image_ids)]
        questions[qid] = q
        imgs = sum(len(f.sessions[s].image_ids) for s in ids)
        instances.append(
            Instance(
                question_id=qid,
                length="32k",
                target_tokens=32768,
                session_ids=ids,
                dates=dates,
                answer_session_ids=[ev.session_id] if ev else [],
                total_tokens=32768,
                text_tokens=32768,
                image_tokens=0,
                n_images=imgs,
            )
        )
    return Bench(questions, f.sessions, f.images, f.sizes, {"32k": instances})
