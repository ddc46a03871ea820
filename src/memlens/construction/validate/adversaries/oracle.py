"""Oracle-evidence text-only solvers: the question plus its TRUE evidence sessions, no pixels.

The attacker is handed what a perfect retriever would hand a blind reader: the question text and
date and the text of every evidence session with its timestamp, in time order (as a history shows
them), with ``<image>`` markers but no image, no image metadata and no ``details``. Where the design
lets text carry the answer (written dates tracking the order, an option's wording naming its
session, counts of matching sentences, a skewed letter), these solvers find it; where only the
pixels do, they sit at chance.

Each question is an :class:`Item` (a real question at one length, or a probe of :mod:`.probe`).
Solvers, all held out on folds grouped by the question's source item (an answer-refusal
question's answerable source, a probe's own plan): no item is in its own training fold.

- ``prior``: the most frequent training answer of the subtype and answer format;
- ``rules``: per question a set of candidate answers from the evidence text (:func:`candidates`:
  each listed event or option matched to the evidence session whose text shares most words with
  it, then ordered by its written date, the session's date or its position; the longer span; the
  earlier, longer or more-mentioned option; counts of sessions, images and sentences matching the
  question's context; written and session dates), the best candidate rule per subtype chosen on
  the training folds;
- ``learned``: per subtype, for closed answers, logistic regression over the question and evidence
  words (TF-IDF) and the candidates' numeric features; for orders a pairwise model (which of two
  events comes first, from the differences of their matched dates, positions and overlaps) whose
  votes order the events.

Chance is :func:`.textonly.chance_by_subtype` (1/2 for A/B and Yes/No, 1/n! for an order of n,
else the better of the best held-out constant and a guess drawn like the other answers). The gate (validate stage) is the best solver's accuracy minus
chance per subtype at every length (and on the probe set), decided on the Wilson lower bound.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, datetime

import numpy as np

from memlens.construction.validate.adversaries.data import Bench, is_refusal
from memlens.construction.validate.adversaries.textonly import (
    AB,
    CLOSED,
    ORDER_ITEM,
    SENT,
    STOP,
    answer_format,
    chance_by_subtype,
    majority,
    norm,
    subtype_of,
    tokens,
)
from memlens.construction.validate.adversaries.timewords import resolve, sentence_anchor
from memlens.core.constants import IMAGE_PLACEHOLDER
from memlens.core.schema import Question, parse_date

SOLVERS = ("prior", "rules", "learned")
AB_OPTIONS = re.compile(r"\(A\)\s*(?P<a>.+?),?\s*(?:or\s*)?\(B\)\s*(?P<b>.+?)(?:\?|$)", re.S)
#: clock times written in words or digits ("half past seven", "a quarter to nine", "7:30")
_HOURS = {
    w: i
    for i, w in enumerate(
        ("twelve", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven")
    )
}
_H = "|".join(_HOURS)
CLOCK = re.compile(
    rf"\b(?:(?P<half>half past)|(?P<qp>a quarter past)|(?P<qt>a quarter to)|(?P<min>\w+(?:-\w+)?) (?P<rel>past|to))?"
    rf"\s*(?P<h>{_H})(?: o'clock)?(?: in the (?P<pm>afternoon|evening)| at night)?\b"
    r"|\b(?P<dh>\d{1,2}):(?P<dm>\d{2})\b",
    re.I,
)


@dataclass(frozen=True)
class Item:
    """One question as the oracle attacker sees it, plus what scoring needs (answer, subtype, group)."""

    question_id: str
    subtype: str
    question: str
    answer: str
    question_date: datetime
    evidence: tuple[tuple[datetime, str], ...]  # (session date, session text), in time order
    group: str  # the source item: folds never split a group

    @property
    def fmt(self) -> str:
        return answer_format(self.answer)


def group_of(q: Question) -> str:
    return q.source_question_id or q.details.get("plan_id") or q.question_id


def bench_items(bench: Bench, length: str) -> list[Item]:
    """The answerable questions of one length with their evidence sessions as that length's history
    places them (session and date from the instance; the question's evidence when absent)."""
    out = []
    for q in bench.answerable():
        inst = bench.instance(length, q.question_id)
        if inst is None:
            continue
        dated = dict(zip(inst.session_ids, inst.dates))
        ev = []
        for e in q.evidence:
            if e.session_id in bench.sessions:
                ev.append((parse_date(dated.get(e.session_id, e.date)), bench.sessions[e.session_id].text))
        out.append(item_of(q, ev))
    return out


def item_of(q: Question, evidence: list[tuple[datetime, str]]) -> Item:
    ev = tuple(sorted(evidence, key=lambda x: (x[0], x[1])))
    return Item(q.question_id, subtype_of(q), q.question, q.answer, parse_date(q.question_date), ev, group_of(q))


# -------------------------------------------------------------------------------------------- parsing
@dataclass
class Sent:
    text: str
    words: frozenset[str]
    image: bool
    day: date  # the date it names (its time words read at the session's date), else the session's
    dated: bool  # whether it names a date


@dataclass
class Ev:
    day: date
    pos: int
    sents: list[Sent]
    words: Counter
    n_images: int
    n_chars: int


def content(text: str) -> list[str]:
    return [w for w in tokens(text) if w not in STOP]


def parse_evidence(item: Item) -> list[Ev]:
    """The evidence sessions, sentence by sentence; time words are read in the sentences that show
    an image or share a word with the question (what a fact is; chat around it is drawn apart)."""
    out = []
    qwords = set(content(item.question))
    for pos, (dt, text) in enumerate(item.evidence):
        sents = []
        for s in SENT.split(text):
            if not s.strip():
                continue
            words = frozenset(content(s))
            image = IMAGE_PLACEHOLDER in s
            anchor = sentence_anchor(s) if image or words & qwords else None
            sents.append(Sent(s, words, image, resolve(anchor, dt.date()), anchor is not None))
        words = Counter(w for st in sents for w in st.words)  # sentences holding each word
        out.append(Ev(dt.date(), pos, sents, words, text.count(IMAGE_PLACEHOLDER), len(text)))
    return out


def _idf(evs: list[Ev]) -> dict[str, float]:
    """Weight of a word by how few of the question's evidence sessions hold it (shared chat words weigh little)."""
    df = Counter(w for e in evs for w in e.words)
    n = len(evs)
    return {w: float(np.log((n + 1) / (c + 0.5))) for w, c in df.items()}


def match(phrase_words: list[str], evs: list[Ev], idf: dict[str, float]) -> list[tuple[float, Sent | None]]:
    """Per evidence session, its best sentence's weighted overlap with the phrase (and the sentence)."""
    want = set(phrase_words)
    out = []
    for e in evs:
        best, bs = 0.0, None
        for s in e.sents:
            sc = sum(idf.get(w, 0.0) for w in want & s.words) + (0.01 if s.image else 0.0)
            if sc > best:
                best, bs = sc, s
        out.append((best, bs))
    return out


def assign(scores: np.ndarray) -> list[int]:
    """Each phrase (row) its session (column): the assignment with the most overlap, sessions
    distinct while there are enough of them."""
    from scipy.optimize import linear_sum_assignment

    n, m = scores.shape
    if m == 0:
        return [-1] * n
    if m >= n:
        r, c = linear_sum_assignment(-scores)
        out = [-1] * n
        for i, j in zip(r, c):
            out[i] = int(j)
        return out
    return [int(np.argmax(scores[i])) for i in range(n)]


def clock_minutes(text: str) -> int | None:
    m = CLOCK.search(text)
    if not m:
        return None
    if m["dh"]:
        return int(m["dh"]) * 60 + int(m["dm"])
    h = _HOURS[m["h"].lower()]
    h += 12 if m["pm"] else 0
    mins = 30 if m["half"] else 15 if m["qp"] else -15 if m["qt"] else 0
    if m["rel"]:
        from memlens.construction.validate.adversaries.timewords import NUMBER_NO

        k = NUMBER_NO.get((m["min"] or "").lower().replace("-", " "), None)
        if k is None and m["min"] and m["min"].lower() == "twenty-five":
            k = 25
        mins = (k or 0) * (1 if m["rel"].lower() == "past" else -1)
    return h * 60 + mins


# -------------------------------------------------------------------------------------------- candidates
def _fmt_day(d: date | None) -> str | None:
    return None if d is None else d.strftime("%Y/%m/%d")


def _order(keys: list[tuple], nums: list[int]) -> str:
    return "".join(f"({n})" for _k, n in sorted(zip(keys, nums)))


def _option_feats(words: list[str], evs: list[Ev], idf) -> dict[str, float]:
    """What the evidence says of one option: its best session's date and position, how many
    sessions match it, the span between its two best-matching ones (written dates), its words."""
    sc = match(words, evs, idf)
    if not evs:
        return {}
    ranked = sorted(range(len(evs)), key=lambda j: -sc[j][0])
    j0 = ranked[0]
    s0 = sc[j0][1]
    j1 = ranked[1] if len(ranked) > 1 else j0
    s1 = sc[j1][1]
    d0 = s0.day if s0 else evs[j0].day
    d1 = s1.day if s1 else evs[j1].day
    clock = [clock_minutes(s.text) for e in evs for s in e.sents if s.words & set(words)]
    clock = [c for c in clock if c is not None]
    return {
        "score": sc[j0][0],
        "pos": float(j0),
        "day": float(d0.toordinal()),
        "session_day": float(evs[j0].day.toordinal()),
        "span": float(abs((d1 - d0).days)),
        "session_span": float(abs((evs[j1].day - evs[j0].day).days)),
        "n_match": float(sum(1 for s, _ in sc if s > 0)),
        "chars": float(evs[j0].n_chars),
        "images": float(evs[j0].n_images),
        "words": float(len(words)),
        "clock": float(clock[0]) if clock else -1.0,
    }


def candidates(item: Item) -> tuple[dict[str, str | None], list[float], list[list[float]], str]:
    """(rule -> candidate answer or None, numeric features of the question, pairwise rows for
    orders, the words the learned model reads)."""
    evs = parse_evidence(item)
    out, feats, pairs = _candidates(item, evs)
    return out, feats, pairs, _doc(item.question, evs)


#: what kind of image an event's wording implies, as the words a mention of that image uses (a
#: concert is shown by a ticket, a shop by a place, sign or receipt): the attacker's own lexicon
KIND_WORDS = (
    (re.compile(r"\b(?:concert|match|play|exhibition|festival|film|show|game|gig|fair)\b", re.I), ("ticket",)),
    (
        re.compile(r"\b(?:visiting|shopping at|shop|store|bistro|cafe|gelato|barbers|tailors|florist)\b", re.I),
        ("place", "receipt", "storefront", "shop", "spot"),
    ),
    (re.compile(r"\bbook\b", re.I), ("book", "hardback", "paperback", "novel")),
    (re.compile(r"\bfl(?:y|ew|ight|ying)\b", re.I), ("ticket", "boarding", "pass", "flight")),
    (re.compile(r"\bcalendar\b", re.I), ("calendar",)),
)


def event_words(phrase: str) -> list[str]:
    """An event's words plus the words a mention of its kind of image uses."""
    extra = [w for rx, ws in KIND_WORDS if rx.search(phrase) for w in ws]
    return content(phrase) + extra


def _candidates(item: Item, evs: list[Ev]) -> tuple[dict[str, str | None], list[float], list[list[float]]]:
    idf = _idf(evs)
    q = item.question
    out: dict[str, str | None] = {}
    pairs: list[list[float]] = []
    items = ORDER_ITEM.findall(q)
    qwords = content(q)
    n_ev, n_img = len(evs), sum(e.n_images for e in evs)
    feats = [float(n_ev), float(n_img)]
    if len(items) >= 2:
        nums = [int(n) for n, _ in items]
        words = [event_words(p) for _, p in items]
        mats = [match(w, evs, idf) for w in words]
        scores = np.asarray([[s for s, _ in m] for m in mats]) if evs else np.zeros((len(items), 0))
        a = assign(scores)
        sess = [evs[j].day if j >= 0 else date.max for j in a]
        written = [(mats[i][j][1].day if j >= 0 and mats[i][j][1] else sess[i]) for i, j in enumerate(a)]
        best_any = []
        for m_ in mats:
            k = max(range(len(m_)), key=lambda j: m_[j][0]) if m_ else -1
            best_any.append(m_[k][1].day if k >= 0 and m_[k][1] else date.max)
        out["order_session"] = _order([(d, i) for i, d in enumerate(sess)], nums)
        out["order_written"] = _order([(d, i) for i, d in enumerate(written)], nums)
        out["order_best_sentence"] = _order([(d, i) for i, d in enumerate(best_any)], nums)
        out["order_listed"] = "".join(f"({n})" for n in nums)
        out["order_reversed"] = "".join(f"({n})" for n in reversed(nums))
        for i, k in itertools.permutations(range(len(items)), 2):
            pairs.append(
                [
                    float((written[i] - written[k]).days) if written[i] != date.max and written[k] != date.max else 0.0,
                    float((sess[i] - sess[k]).days) if sess[i] != date.max and sess[k] != date.max else 0.0,
                    float(a[i] - a[k]),
                    float(i - k),
                    float(len(words[i]) - len(words[k])),
                    float((scores[i].max() if scores.size else 0) - (scores[k].max() if scores.size else 0)),
                ]
            )
        return out, feats, pairs
    m = AB_OPTIONS.search(q) if AB.search(q) else None
    if m:
        fa, fb = _option_feats(event_words(m["a"]), evs, idf), _option_feats(event_words(m["b"]), evs, idf)
        spans = {}
        for name, phrase in (("a", m["a"]), ("b", m["b"])):
            spans[name] = _span(phrase, evs, idf)
        if fa and fb:
            for key, bigger in (
                ("span", True),
                ("session_span", True),
                ("day", False),
                ("session_day", False),
                ("n_match", True),
                ("chars", True),
                ("images", True),
                ("words", True),
                ("score", True),
            ):
                x, y = fa[key], fb[key]
                out[f"ab_{key}_{'more' if bigger else 'less'}"] = (
                    None if x == y else ("A" if (x > y) == bigger else "B")
                )
            if fa["clock"] >= 0 and fb["clock"] >= 0 and fa["clock"] != fb["clock"]:
                out["ab_earlier_clock"] = "A" if fa["clock"] < fb["clock"] else "B"
            feats += [fa[k] - fb[k] for k in sorted(fa)]
        sa, sb = spans["a"], spans["b"]
        if sa is not None and sb is not None and sa != sb:
            out["ab_split_span"] = "A" if sa > sb else "B"
        feats += [float(sa or 0) - float(sb or 0)]
        return out, feats, pairs
    ctx = set(qwords)
    img_sents = [s for e in evs for s in e.sents if s.image]
    hit_imgs = sum(s.text.count(IMAGE_PLACEHOLDER) for s in img_sents if s.words & ctx)
    hit_sess = sum(1 for e in evs if any(s.words & ctx for s in e.sents if s.image))
    hit_sents = sum(1 for e in evs for s in e.sents if s.words & ctx)
    feats += [float(hit_imgs), float(hit_sess), float(hit_sents), float(len(img_sents))]
    # the image sentences that name the question's context (most of its words): in time order
    ov = [len(s.words & ctx) for s in img_sents]
    strong = [s for s, k in zip(img_sents, ov) if k and k >= max(2, 0.6 * max(ov))]
    descs = [descriptor(s.text, ctx) for s in strong]
    if strong:
        out["count_strong_images"] = str(sum(s.text.count(IMAGE_PLACEHOLDER) for s in strong))
        out["count_distinct_descriptors"] = str(len(set(descs)))
        same = descs[0] == descs[-1]
        out["yesno_first_last_same"] = "Yes" if same else "No"
        out["yesno_all_same"] = "Yes" if len(set(descs)) == 1 else "No"
        feats += [float(len(strong)), float(len(set(descs))), float(same), float(len(set(descs)) == 1)]
    else:
        feats += [0.0, 0.0, 0.0, 0.0]
    for name, v in (
        ("count_sessions", n_ev),
        ("count_images", n_img),
        ("count_image_sentences", len(img_sents)),
        ("count_matching_images", hit_imgs),
        ("count_matching_sessions", hit_sess),
        ("count_matching_sentences", hit_sents),
        ("count_distinct_days", len({e.day for e in evs})),
    ):
        out[name] = str(v)
    sc = match(qwords, evs, idf)
    if evs:
        j = max(range(len(evs)), key=lambda k: (sc[k][0], k))
        s = sc[j][1]
        out["date_best_sentence"] = _fmt_day(s.day if s else evs[j].day)
        out["date_best_session"] = _fmt_day(evs[j].day)
        out["date_latest"] = _fmt_day(evs[-1].day)
        out["date_earliest"] = _fmt_day(evs[0].day)
        dated = [s_ for e in evs for s_ in e.sents if s_.dated and s_.image]
        out["date_written"] = _fmt_day(dated[-1].day) if dated else None
        best_score = sc[j][0]
        out["yesno_match"] = "Yes" if best_score > 0 else "No"
        out["yesno_multi"] = "Yes" if n_ev > 1 else "No"
        feats += [best_score, float(sum(1 for x, _ in sc if x > 0))]
    else:
        feats += [0.0, 0.0]
    return out, feats, pairs


DESCRIPTOR = re.compile(
    r"\b(?:the|this|that|my)\s+((?:[\w'-]+\s+){0,3}?[\w'-]+)\s+(?:in this photo|from|<image>)", re.I
)


def descriptor(text: str, ctx: set[str]) -> str:
    """How a mention names what its image shows ("the place", "this little bookshop", "the tailor in
    this photo"): the first noun phrase before ``<image>`` or "from" that is not the question's own words."""
    for m in DESCRIPTOR.finditer(text):
        words = [w for w in tokens(m.group(1)) if w not in ctx]
        if words:
            return " ".join(words)
    return ""


def _span(phrase: str, evs: list[Ev], idf) -> int | None:
    """Days of "X to Y" / "from X to Y" (the cut whose two ends match the evidence best)."""
    parts = re.sub(r"^\s*the time from\s+", "", phrase, flags=re.I).split(" to ")
    best = None
    for cut in range(1, len(parts)):
        ends = []
        for half in (" to ".join(parts[:cut]), " to ".join(parts[cut:])):
            sc = match(content(half), evs, idf)
            j = max(range(len(evs)), key=lambda k: sc[k][0]) if evs else -1
            ends.append((sc[j][0], sc[j][1].day if j >= 0 and sc[j][1] else None) if j >= 0 else (0.0, None))
        (ka, da), (kb, db) = ends
        if da is not None and db is not None and (best is None or ka + kb > best[0]):
            best = (ka + kb, abs((db - da).days))
    return None if best is None else best[1]


# -------------------------------------------------------------------------------------------- solvers
class Rules:
    """The candidate rule with the most training questions right, per (subtype, answer format)."""

    def __init__(self, train: list[tuple[Item, dict]], prior: dict):
        score: dict[tuple, Counter] = defaultdict(Counter)
        for it, cands in train:
            c = score[(it.subtype, it.fmt)]
            for name, ans in cands.items():
                c[name] += ans is not None and norm(ans) == norm(it.answer)
            c["prior"] += norm(prior.get((it.subtype, it.fmt), "")) == norm(it.answer)
        self.choice = {k: max(sorted(c), key=lambda r: (c[r], r == "prior")) for k, c in score.items()}
        self.prior = prior

    def predict(self, it: Item, cands: dict, fmt: str) -> str:
        prior = self.prior.get((it.subtype, fmt), "")
        rule = self.choice.get((it.subtype, fmt), "prior")
        got = cands.get(rule) if rule != "prior" else None
        return prior if got is None else got


class Learned:
    """Per subtype: logistic regression over question and evidence words plus the numeric features
    (closed answers); orders from a pairwise model."""

    def __init__(self, train: list[tuple[Item, list[float], list[list[float]], str]], seed: int):
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier

        self.models, self.pairwise = {}, {}
        by = defaultdict(list)
        docs = {it.question_id: doc for it, _f, _p, doc in train}
        for it, f, pr, _d in train:
            if it.fmt in CLOSED:
                by[(it.subtype, it.fmt)].append((it, f, pr))
        for key, rows in by.items():
            if key[1] == "order":
                xs, ys = [], []
                for it, _f, pr in rows:
                    rank = {int(n): r for r, n in enumerate(re.findall(r"\d+", it.answer))}
                    nums = [int(n) for n, _ in ORDER_ITEM.findall(it.question)]
                    for (i, k), row in zip(itertools.permutations(range(len(nums)), 2), pr):
                        if nums[i] in rank and nums[k] in rank:
                            xs.append(row)
                            ys.append(rank[nums[i]] < rank[nums[k]])
                if len(set(ys)) == 2:
                    self.pairwise[key[0]] = LogisticRegression(max_iter=2000, random_state=seed).fit(
                        _signed_log(np.asarray(xs)), ys
                    )
                continue
            ys = [it.answer for it, _, _ in rows]
            if len(set(ys)) < 2:
                continue
            width = max(len(f) for _, f, _ in rows)
            vec = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=5000)
            x = self._x(vec.fit_transform([docs[it.question_id] for it, _, _ in rows]), [f for _, f, _ in rows], width)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = LogisticRegression(solver="liblinear", C=1.0, random_state=seed)
                clf = (OneVsRestClassifier(clf) if len(set(ys)) > 2 else clf).fit(x, ys)
            self.models[key] = (vec, clf, width)

    @staticmethod
    def _x(tf, feats, width):
        from scipy.sparse import csr_matrix, hstack

        num = np.zeros((len(feats), width))
        for i, f in enumerate(feats):
            num[i, : min(width, len(f))] = f[:width]
        return hstack([tf, csr_matrix(_signed_log(num))]).tocsr()

    def predict_many(self, rows: list[tuple]) -> list[str]:
        """:meth:`predict` of every ``(item, fmt, feats, pairs, doc, fallback)`` row, with one model call
        per subtype and format (a row's prediction does not depend on the others it is batched with)."""
        out: list[str | None] = [None] * len(rows)
        batches: dict[tuple, list[int]] = defaultdict(list)
        for i, (it, fmt, _feats, pairs, _doc, fallback) in enumerate(rows):
            if fmt == "order":
                if self.pairwise.get(it.subtype) is None or not pairs:
                    out[i] = fallback
                else:
                    batches[("order", it.subtype)].append(i)
            elif (it.subtype, fmt) not in self.models:
                out[i] = fallback
            else:
                batches[("closed", it.subtype, fmt)].append(i)
        for key, idx in batches.items():
            if key[0] == "order":
                clf = self.pairwise[key[1]]
                stacked = np.concatenate([np.asarray(rows[i][3], dtype=float) for i in idx])
                p = clf.predict_proba(_signed_log(stacked))[:, list(clf.classes_).index(True)]
                at = 0
                for i in idx:
                    n = len(rows[i][3])
                    out[i] = self._ranked(rows[i][0], p[at : at + n])
                    at += n
            else:
                vec, clf, width = self.models[(key[1], key[2])]
                x = self._x(vec.transform([rows[i][4] for i in idx]), [rows[i][2] for i in idx], width)
                for i, pred in zip(idx, clf.predict(x)):
                    out[i] = str(pred)
        return out  # type: ignore[return-value]

    @staticmethod
    def _ranked(it: Item, p) -> str:
        nums = [int(n) for n, _ in ORDER_ITEM.findall(it.question)]
        votes = Counter()
        for (i, _k), pi in zip(itertools.permutations(range(len(nums)), 2), p):
            votes[i] += pi
        return "".join(f"({nums[i]})" for i in sorted(range(len(nums)), key=lambda i: (-votes[i], i)))

    def predict(self, it: Item, fmt: str, feats: list[float], pairs: list[list[float]], doc: str, fallback: str) -> str:
        """The answer for one question (``fallback`` where no model of its subtype and format was fitted)."""
        return self.predict_many([(it, fmt, feats, pairs, doc, fallback)])[0]


def _doc(question: str, evs: list[Ev]) -> str:
    """The question and the evidence sentences that show an image or name a date (the rest of a
    session is chat drawn independently of the question)."""
    ev = [s.text.replace(IMAGE_PLACEHOLDER, " imagemarker ") for e in evs for s in e.sents if s.image or s.dated]
    return " ".join([question, *ev])


def _signed_log(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))


def format_key(question: str) -> tuple:
    """What a question's wording says of its answer format (the training questions map it to one)."""
    low = question.lower()
    return (
        bool(AB.search(question)),
        len(ORDER_ITEM.findall(question)) >= 2,
        "yyyy/mm/dd" in low,
        "how many" in low,
        bool(re.search(r"(?:^|[,;:]\s*)(?:is|was|were|did|do|does|are|has|have|had|can|could)\b", low)),
    )


def grouped_folds(items: list[Item], k: int, seed: int) -> list[set[str]]:
    """Folds of question ids, whole groups each (a group's items share a fold)."""
    groups = sorted({it.group for it in items})
    rng = np.random.default_rng(seed)
    rng.shuffle(groups)
    k = max(2, min(k, len(groups)))
    fold_of = {g: i % k for i, g in enumerate(groups)}
    parts = [set() for _ in range(k)]
    for it in items:
        parts[fold_of[it.group]].add(it.question_id)
    return parts


def held_out(
    items: list[Item], *, k_folds: int = 5, seed: int = 0, repeats: int = 1
) -> tuple[dict, dict, list[list[set[str]]]]:
    """Every solver's held-out verdict per question (``{solver: {qid: share right}}``), each rule's
    (``{qid: {rule: right}}``) and the fold draws. With ``repeats`` > 1 the folds are drawn that many
    times (seeds ``seed + 7919 r``, for the folds and the learned solver) and a question's verdict is the share of draws its held-out
    prediction was right in: one draw of folds moves a small subtype's figure by a few points.
    Candidates are computed once per distinct question and evidence (a question's copies at several
    lengths share them), and do not depend on the folds."""
    items = sorted(items, key=lambda it: it.question_id)
    memo: dict[tuple, tuple] = {}
    cache = {}
    for it in items:
        key = (it.question, it.evidence)
        if key not in memo:
            memo[key] = candidates(it)
        cache[it.question_id] = memo[key]
    seeds = [seed + 7919 * r for r in range(max(1, repeats))]
    draws = [grouped_folds(items, k_folds, s) for s in seeds]
    verdicts = [_one_draw(items, cache, parts, s) for parts, s in zip(draws, seeds)]
    right = {
        s: {it.question_id: float(np.mean([v[s][it.question_id] for v in verdicts])) for it in items} for s in SOLVERS
    }
    rule_hits = {
        it.question_id: {
            name: ans is not None and norm(ans) == norm(it.answer) for name, ans in cache[it.question_id][0].items()
        }
        for it in items
    }
    return right, rule_hits, draws


def _one_draw(items: list[Item], cache: dict, parts: list[set[str]], seed: int) -> dict[str, dict[str, bool]]:
    """Every solver's held-out verdict per question on one draw of folds."""
    right: dict[str, dict[str, bool]] = {s: {} for s in SOLVERS}
    for test in parts:
        train = [it for it in items if it.question_id not in test]
        by = defaultdict(list)
        for it in train:
            by[(it.subtype, it.fmt)].append(it.answer)
        by_sub = defaultdict(list)
        for it in train:
            by_sub[it.subtype].append(it.answer)
        prior = {k: majority(v) for k, v in by.items()}
        sub_prior = {k: majority(v) for k, v in by_sub.items()}
        fmt_of = defaultdict(list)
        for it in train:
            fmt_of[(it.subtype, format_key(it.question))].append(it.fmt)
        fmt_of = {k: majority(v) for k, v in fmt_of.items()}
        rules = Rules([(it, cache[it.question_id][0]) for it in train], prior)
        learned = Learned([(it, *cache[it.question_id][1:]) for it in train], seed)
        rows = []
        for it in items:
            if it.question_id not in test:
                continue
            # the format the question asks for, as the training questions of its kind show it
            fmt = fmt_of.get((it.subtype, format_key(it.question))) or answer_format(sub_prior.get(it.subtype, ""))
            cands, feats, pairs, doc = cache[it.question_id]
            p = prior.get((it.subtype, fmt), sub_prior.get(it.subtype, ""))
            right["prior"][it.question_id] = norm(p) == norm(it.answer)
            right["rules"][it.question_id] = norm(rules.predict(it, cands, fmt)) == norm(it.answer)
            rows.append((it, fmt, feats, pairs, doc, p))
        for row, pred in zip(rows, learned.predict_many(rows)):
            right["learned"][row[0].question_id] = norm(pred) == norm(row[0].answer)
    return right


def figures(items: list[Item], right: dict, rule_hits: dict, draws: list[list[set[str]]]) -> dict:
    """Per subtype of ``items`` (a subset of what :func:`held_out` predicted): accuracies, chance
    (the mean over the fold draws), n and the number of draws."""
    rule_right: dict[str, Counter] = defaultdict(Counter)
    for it in items:
        rule_right[it.subtype].update(k for k, v in rule_hits[it.question_id].items() if v)
    qs = [_as_question(it) for it in items]
    per_draw = [chance_by_subtype(qs, parts) for parts in draws]
    chance = {sub: float(np.mean([c[sub] for c in per_draw])) for sub in per_draw[0]}
    out = summarize(items, right, rule_right, chance)
    for r in out.values():
        r["fold_draws"] = len(draws)
    return out


def solve(items: list[Item], *, k_folds: int = 5, seed: int = 0, repeats: int = 1) -> dict:
    """Held-out accuracy of every solver per subtype, with chance and n (and the best rules)."""
    return figures(items, *held_out(items, k_folds=k_folds, seed=seed, repeats=repeats))


def _as_question(it: Item) -> Question:
    return Question.unchecked(
        question_id=it.question_id,
        question_type=it.subtype.split("/")[0],
        question_subtype=it.subtype.split("/", 1)[1],
        answer=it.answer,
    )


def summarize(items, right, rule_right, chance) -> dict:
    out = {}
    for sub in sorted({it.subtype for it in items}):
        ids = [it.question_id for it in items if it.subtype == sub]
        accs = {s: float(np.mean([right[s][i] for i in ids])) for s in SOLVERS}
        best = max(SOLVERS, key=lambda s: (accs[s], -SOLVERS.index(s)))
        rr = rule_right[sub]
        top = sorted(((k, v) for k, v in rr.items() if v), key=lambda kv: (-kv[1], kv[0]))[:3]
        out[sub] = {
            "n": len(ids),
            "chance": round(chance.get(sub, 0.0), 4),
            "accuracy": {s: round(a, 4) for s, a in accs.items()},
            "best": best,
            "best_accuracy": round(accs[best], 4),
            "top_rules": {k: round(v / len(ids), 4) for k, v in top},
        }
    return out


def run(bench: Bench, *, k_folds: int = 5, seed: int = 0, probes: list[Item] | None = None, repeats: int = 1) -> dict:
    """The oracle solvers on the real questions of every length and the probe set, held out on one
    pool (a real question at every length and the probes; folds grouped by source item, so no
    question's copy at another length is in its training fold). Per length: the real questions
    (``subtypes``) and, with probes, the real questions plus the probes (``with_probes``: what the
    gate decides on); ``probe``: the probes alone. ``repeats``: draws of folds averaged
    (:func:`held_out`)."""
    per_len = {}
    for ln in bench.lengths:
        per_len[ln] = [
            dataclasses.replace(it, question_id=f"{it.question_id}@{ln}")
            for it in bench_items(bench, ln)
            if not is_refusal(_as_question(it))
        ]
    probes = list(probes or [])
    pool = [it for items in per_len.values() for it in items] + probes
    if not pool:
        return {"lengths": {}, "probe": None}
    right, hits, parts = held_out(pool, k_folds=k_folds, seed=seed, repeats=repeats)
    out: dict = {"lengths": {}, "probe": figures(probes, right, hits, parts) if probes else None}
    for ln, items in per_len.items():
        res = {"subtypes": figures(items, right, hits, parts) if items else {}}
        if probes:
            res["with_probes"] = figures(items + probes, right, hits, parts)
        out["lengths"][ln] = res
    return out


__all__ = [
    "Item",
    "bench_items",
    "item_of",
    "candidates",
    "held_out",
    "figures",
    "solve",
    "run",
    "grouped_folds",
    "SOLVERS",
]
