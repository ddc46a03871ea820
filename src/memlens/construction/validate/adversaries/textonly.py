"""Text-only solvers: everything a system sees but the pixels and the image ground truth.

Each solver answers every question from its :class:`~.data.TextView` (question text and date, the
history's texts with their dates and ``<image>`` markers) plus what it learned from the reference
answers of *other* questions (k-fold over questions; a question is never in its own training fold).
A solver without an opinion on a question falls back to the answer prior, so every solver is a
complete answerer and their accuracies compare.

- ``prior``: the most frequent training answer per (type, subtype, template). The template is the
  question with every word outside a learned vocabulary (words in >= ``vocab_min`` training
  questions) replaced by ``*``; backs off to the question's frame (its first and last words of the
  template), then to (type, subtype).
- ``option_types``: for A/B questions, the most frequent answer per pair of option types (each
  option's template words).
- ``dates``: dates from session timestamps and time words (:mod:`.timewords`): the sentence that
  best matches the question (or each listed event) dates it; a date question gets that date, an
  order question the order of its events' dates, an A/B duration question the longer span.
  Without any match: the latest session that shares an image with a time word.
- ``learned``: logistic regression over the question's word n-grams and history features (how many
  sessions and images the question's own phrases point to) for closed answers (A/B, Yes/No,
  counts, orders).
- ``ar_context``: answer refusal detection: logistic regression over how much of the question's
  own phrasing (its rare word trigrams) occurs in the history; scored by balanced accuracy
  between refusal and answerable questions (chance 0.5).

Chance per question comes from its answer format: 1/2 for A/B and Yes/No, 1/n! for an order of n
events, else the better, over the subtype's questions of that format, of two held-out guessers: the
best constant (whether the most frequent reference answer of that format in the subtype, among the
other questions (leave-one-out) or among the other folds' questions (the solvers' folds), is this
question's answer, the better of the two) and a guess drawn from the other questions' answers as
often as each occurs (a balanced count of 1-4: about 1/4, where every held-out constant loses its
own vote). A subtype's chance is the mean over its questions.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date

import numpy as np

from memlens.construction.validate.adversaries.data import Bench, TextView, is_refusal
from memlens.construction.validate.adversaries.timewords import resolve, sentence_anchor
from memlens.core.constants import AR, IMAGE_PLACEHOLDER, REFUSAL_REFERENCE
from memlens.core.schema import Question

SOLVERS = ("prior", "option_types", "dates", "learned")
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
QUOTED = re.compile(r'"[^"]*"|“[^”]*”')
SENT = re.compile(r"(?<=[.!?])\s+|\n+")
STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "from",
        "with",
        "and",
        "or",
        "but",
        "my",
        "our",
        "your",
        "his",
        "her",
        "their",
        "its",
        "i",
        "me",
        "we",
        "you",
        "it",
        "this",
        "that",
        "these",
        "those",
        "is",
        "was",
        "were",
        "are",
        "be",
        "been",
        "did",
        "do",
        "does",
        "had",
        "have",
        "has",
        "what",
        "which",
        "who",
        "when",
        "where",
        "how",
        "many",
        "much",
        "than",
        "then",
        "there",
        "here",
        "as",
        "by",
        "about",
        "into",
        "after",
        "before",
        "over",
        "all",
        "any",
        "each",
        "one",
        "some",
        "so",
        "if",
        "not",
        "no",
        "up",
        "out",
        "shared",
        "showed",
        "sent",
        "photo",
        "picture",
        "image",
        "screenshot",
        "answer",
        "give",
    ]
)
ORDER_ITEM = re.compile(r"\((\d+)\)\s*([^;?]+)")
AB_SPANS = re.compile(r"\(A\)\s*the time from (?P<a>.+?),? or \(B\)\s*the time from (?P<b>.+?)\?", re.I | re.S)
AB = re.compile(r"\(A\).*\(B\)", re.S)


def tokens(text: str) -> list[str]:
    return WORD.findall(text.lower())


def answer_format(ans: str) -> str:
    a = ans.strip()
    if a in ("A", "B"):
        return "ab"
    if a in ("Yes", "No"):
        return "yesno"
    if re.fullmatch(r"(\(\d+\))+", a):
        return "order"
    if re.fullmatch(r"\d+", a):
        return "count"
    if re.fullmatch(r"\d{4}/\d{2}/\d{2}", a):
        return "date"
    if re.fullmatch(r"\d{1,2}:\d{2}", a):
        return "time"
    if re.search(r"\d", a):
        return "amount"
    return "open"


CLOSED = frozenset({"ab", "yesno", "count", "order"})


def norm(ans: str) -> str:
    return " ".join(ans.strip().lower().split())


def subtype_of(q: Question) -> str:
    return f"{q.question_type}/{q.question_subtype}"


def chance_by_subtype(questions: list[Question], parts: list[set[str]] | None = None) -> dict[str, float]:
    """Mean chance per subtype from the answer formats (see the module docstring). The best
    constant is held out, two ways: on every other question (leave-one-out) and, with ``parts``,
    on the other folds the solvers train on; a question's chance is the better of the two. Either
    alone can fail a constant guesser: leave-one-out scores a balanced design's top answers 0 (each
    loses its own vote), a small fold's constant is a noisy draw."""
    groups: dict[tuple[str, str], list[Question]] = defaultdict(list)
    for q in questions:
        groups[(subtype_of(q), answer_format(q.answer))].append(q)
    fold_of = {qid: i for i, part in enumerate(parts or []) for qid in part}
    by: dict[str, list[float]] = defaultdict(list)
    for (sub, fmt), qs in sorted(groups.items()):
        counts = Counter(norm(q.answer) for q in qs)
        per_fold: dict[int, Counter] = defaultdict(Counter)
        for q in qs:
            per_fold[fold_of.get(q.question_id, -1)][norm(q.answer)] += 1
        if fmt in ("ab", "yesno"):
            by[sub] += [0.5] * len(qs)
            continue
        if fmt == "order":
            by[sub] += [1 / math.factorial(q.answer.count("(")) for q in qs]
            continue
        constant, drawn = [], []
        for q in qs:
            loo = counts.copy()
            loo[norm(q.answer)] -= 1
            rests = [loo]
            if parts is not None and q.question_id in fold_of:
                rests.append(counts - per_fold[fold_of[q.question_id]])
            constant.append(max(constant_right(r, norm(q.answer)) for r in rests))
            drawn.append(drawn_right(loo, norm(q.answer)))
        # the better of the two guessers for the whole group (a balanced count's constant is
        # anti-correlated with the held-out answer; a guess drawn like the answers is not)
        best = constant if np.mean(constant) >= np.mean(drawn) else drawn
        by[sub] += best
    return {s: float(np.mean(v)) for s, v in sorted(by.items())}


def drawn_right(rest: Counter, answer: str) -> float:
    """The chance that a guess drawn from the answers of ``rest`` (as often as each occurs) is ``answer``."""
    total = sum(c for c in rest.values() if c > 0)
    return rest[answer] / total if total and rest[answer] > 0 else 0.0


def constant_right(rest: Counter, answer: str) -> float:
    """1.0 when the most frequent answer of ``rest`` (ties: the first in order) is ``answer``."""
    top = max(rest.values()) if rest else 0
    winners = sorted(a for a, c in rest.items() if c == top and c > 0)
    return 1.0 if winners and winners[0] == answer else 0.0


# -------------------------------------------------------------------------------------------- templates
class Template:
    """The template of a question: its words outside a vocabulary learned on training questions become ``*``."""

    def __init__(self, train: list[Question], vocab_min: int):
        df = Counter(w for q in train for w in set(tokens(QUOTED.sub(" ", q.question))))
        self.vocab = frozenset(w for w, c in df.items() if c >= vocab_min)

    def words(self, text: str) -> tuple[str, ...]:
        out: list[str] = []
        for w in tokens(QUOTED.sub(" * ", text)):
            w = w if w in self.vocab else "*"
            if not (w == "*" and out and out[-1] == "*"):
                out.append(w)
        return tuple(out)

    def keys(self, q: Question) -> list[tuple]:
        t = self.words(q.question)
        return [("full", t), ("frame", t[:4], t[-6:])]

    def rare(self, text: str) -> list[str]:
        """Words of a text outside the vocabulary and the stop words: what names this question's things."""
        return [w for w in tokens(QUOTED.sub(" ", text)) if w not in self.vocab and w not in STOP]

    def content(self, text: str) -> list[str]:
        return [w for w in tokens(text) if w not in STOP]


def majority(answers: list[str]) -> str:
    c = Counter(answers)
    top = max(c.values())
    return min(a for a, k in c.items() if k == top)


class Prior:
    def __init__(self, train: list[Question], tpl: Template, min_support: int):
        self.tpl = tpl
        table: dict[tuple, list[str]] = defaultdict(list)
        for q in train:
            sub = subtype_of(q)
            for k in tpl.keys(q):
                table[(sub, *k)].append(q.answer)
            table[(sub,)].append(q.answer)
        self.table = {k: majority(v) for k, v in table.items() if len(v) >= min_support or len(k) == 1}
        self.global_ = majority([q.answer for q in train]) if train else ""

    def predict(self, q: Question) -> str:
        sub = subtype_of(q)
        for k in self.tpl.keys(q):
            if (sub, *k) in self.table:
                return self.table[(sub, *k)]
        return self.table.get((sub,), self.global_)


class OptionTypes:
    """Most frequent answer per pair of option types, from fine to coarse: the options' template
    words, their first two, their first template word (a level is used from ``min_support`` up)."""

    LEVELS = (None, 2, 1)

    def __init__(self, train: list[Question], tpl: Template, prior: Prior, min_support: int = 3):
        self.tpl, self.prior = tpl, prior
        table: dict[tuple, list[str]] = defaultdict(list)
        for q in train:
            for k in self.keys(q):
                table[k].append(q.answer)
        self.table = {k: majority(v) for k, v in table.items() if len(v) >= min_support}

    def keys(self, q: Question) -> list[tuple]:
        m = re.search(r"\(A\)(.*?)\(B\)(.*)$", q.question, re.S)
        if not m:
            return []
        a, b = self.tpl.words(m.group(1)), self.tpl.words(m.group(2))
        return [(subtype_of(q), lv, a[:lv], b[:lv]) for lv in self.LEVELS]

    def predict(self, q: Question) -> str:
        for k in self.keys(q):
            if k in self.table:
                return self.table[k]
        return self.prior.predict(q)


# -------------------------------------------------------------------------------------------- history
@dataclass
class Parsed:
    """One session's text, parsed once, compactly (a paper-scale build has thousands of sessions):
    per sentence whether it shows an image and its time anchor; which sentences hold each word
    (``occ_words`` sorted, ``occ_sents`` aligned: a word's sentences in order); its word trigrams
    and words as sorted numbers of the :class:`HistoryIndex` vocabulary."""

    sentences: list[tuple[bool, tuple | None]]
    occ_words: np.ndarray
    occ_sents: np.ndarray
    trigrams: np.ndarray
    words: np.ndarray
    n_images: int

    def sentences_with(self, word_id: int) -> np.ndarray:
        lo, hi = np.searchsorted(self.occ_words, [word_id, word_id + 1])
        return self.occ_sents[lo:hi]

    def has_trigrams(self, codes: np.ndarray) -> np.ndarray:
        return _member(codes, self.trigrams)

    def count_words(self, word_ids: np.ndarray) -> int:
        return int(_member(word_ids, self.words).sum())


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is in the sorted unique array ``sorted_set`` (a binary search each:
    cheaper than ``np.isin`` for the few values of one question)."""
    if not len(sorted_set) or not len(values):
        return np.zeros(len(values), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[pos] == values


#: bits of a word number in a trigram code (three numbers in one int64)
_BITS = 21


class HistoryIndex:
    """Parses of session texts, keyed by the text itself (a history shares sessions with others);
    words are numbered once for every session (``vocab``)."""

    def __init__(self) -> None:
        self.cache: dict[str, Parsed] = {}
        self.vocab: dict[str, int] = {}

    def _ids(self, words) -> list[int]:
        vocab, out = self.vocab, []
        for w in words:
            i = vocab.get(w)
            if i is None:
                i = vocab[w] = len(vocab)
            out.append(i)
        if len(vocab) > 1 << _BITS:  # pragma: no cover - millions of distinct words
            raise ValueError(f"more than {1 << _BITS} distinct history words")
        return out

    def word_ids(self, words) -> np.ndarray:
        """Numbers of the ``words`` some parsed text holds (the others match no parsed text)."""
        return np.asarray([self.vocab[w] for w in words if w in self.vocab], dtype=np.int64)

    def trigram_codes(self, trigrams) -> np.ndarray:
        """The code of each trigram, -1 when a word of it is in no parsed text."""
        out = []
        for a, b, c in trigrams:
            ia, ib, ic = self.vocab.get(a), self.vocab.get(b), self.vocab.get(c)
            out.append(-1 if ia is None or ib is None or ic is None else (ia << 2 * _BITS) | (ib << _BITS) | ic)
        return np.asarray(out, dtype=np.int64)

    def parse(self, text: str) -> Parsed:
        p = self.cache.get(text)
        if p is None:
            sents: list[tuple[bool, tuple | None]] = []
            occ_w: list[int] = []
            occ_s: list[int] = []
            for s in SENT.split(text):
                if not s.strip():
                    continue
                i = len(sents)
                sents.append((IMAGE_PLACEHOLDER in s, sentence_anchor(s)))
                ws = self._ids(set(tokens(s)))
                occ_w += ws
                occ_s += [i] * len(ws)
            words = self._ids(tokens(text.replace(IMAGE_PLACEHOLDER, " ")))
            order = np.lexsort((np.asarray(occ_s, dtype=np.int32), np.asarray(occ_w, dtype=np.int32)))
            ids = np.asarray(words, dtype=np.int64)
            tri = (ids[:-2] << 2 * _BITS) | (ids[1:-1] << _BITS) | ids[2:] if len(ids) >= 3 else ids[:0]
            p = Parsed(
                sents,
                np.asarray(occ_w, dtype=np.int32)[order],
                np.asarray(occ_s, dtype=np.int32)[order],
                np.unique(tri),
                np.unique(ids).astype(np.int32),
                text.count(IMAGE_PLACEHOLDER),
            )
            self.cache[text] = p
        return p


def question_trigrams(q: Question, tpl: Template) -> list[tuple[str, str, str]]:
    w = tokens(QUOTED.sub(" ", q.question))
    return [t for t in zip(w, w[1:], w[2:]) if any(x not in tpl.vocab and x not in STOP for x in t)]


def history_features(q: Question, view: TextView, tpl: Template, hx: HistoryIndex) -> list[float]:
    """How much of the question's own phrasing the history holds, and where."""
    tri = question_trigrams(q, tpl)
    rare = set(tpl.rare(q.question))
    parsed = [hx.parse(t) for _, t in view.history]
    codes, rare_ids = hx.trigram_codes(tri), hx.word_ids(rare)  # after parsing: the history's words
    found = set()
    m_sessions = m_images = 0
    best_rare = 0.0
    for p in parsed:
        hit = [t for t, m in zip(tri, p.has_trigrams(codes)) if m]
        found.update(hit)
        if hit:
            m_sessions += 1
            m_images += p.n_images
        if rare:
            best_rare = max(best_rare, p.count_words(rare_ids) / len(rare))
    frac = len(found) / len(tri) if tri else 1.0
    return [frac, float(m_sessions), float(m_images), best_rare, float(len(tri) > 0)]


def event_date(view: TextView, words: list[str], hx: HistoryIndex) -> tuple[date | None, int]:
    """The date of the best-matching sentence of the history (overlap with ``words``) and the overlap."""
    want = [w for w in dict.fromkeys(words) if w not in STOP]
    if not want:
        return None, 0
    best, best_key = None, None
    for pos, (dt, text) in enumerate(view.history):
        p = hx.parse(text)
        hits: Counter = Counter()
        for w in want:
            wid = hx.vocab.get(w)
            if wid is not None:
                for i in p.sentences_with(wid).tolist():
                    hits[i] += 1
        for i, k in hits.items():
            has_img, anchor = p.sentences[i]
            key = (k, has_img, anchor is not None, pos)
            if best_key is None or key > best_key:
                best_key, best = key, resolve(anchor, dt.date())
    return best, (best_key[0] if best_key else 0)


def span_days(view: TextView, phrase: str, tpl: Template, hx: HistoryIndex) -> int | None:
    """Days of "X to Y" (the split at the " to " whose two ends match the history best)."""
    parts = phrase.split(" to ")
    best = None
    for cut in range(1, len(parts)):
        a, b = " to ".join(parts[:cut]), " to ".join(parts[cut:])
        (da, ka), (db, kb) = event_date(view, tpl.content(a), hx), event_date(view, tpl.content(b), hx)
        if da is not None and db is not None and (best is None or ka + kb > best[0]):
            best = (ka + kb, abs((db - da).days))
    return None if best is None else best[1]


def latest_timeword_image(view: TextView, hx: HistoryIndex) -> date | None:
    for dt, text in reversed(view.history):
        for has_img, anchor in hx.parse(text).sentences:
            if has_img and anchor is not None:
                return resolve(anchor, dt.date())
    return None


class Dates:
    """Date strategies, the best per question opening (first four template words) chosen on the
    training questions: ``match``
    (the best-matching sentence's date, orders and A/B spans from it), ``latest`` (the latest
    session that shares an image with a time word) and ``prior``."""

    STRATEGIES = ("match", "latest", "prior")

    def __init__(self, tpl: Template, prior: Prior, hx: HistoryIndex, cache: dict | None = None):
        self.tpl, self.prior, self.hx = tpl, prior, hx
        self.choice: dict[tuple, str] = {}
        self.cache = {} if cache is None else cache  # (question id, history) -> raw candidates

    def candidates(self, q: Question, view: TextView) -> dict[str, str]:
        key = (q.question_id, len(view.history), view.history[0][0] if view.history else None)
        raw = self.cache.get(key)
        if raw is None:
            raw = self.cache[key] = self.raw(q, view)
        prior = self.prior.predict(q)
        return {"prior": prior, **{k: prior if v is None else v for k, v in raw.items()}}

    def frame(self, q: Question) -> tuple:
        return (subtype_of(q), self.tpl.words(q.question)[:4])

    def fit(self, train: list[tuple[Question, TextView]]) -> Dates:
        score: dict[tuple, Counter] = defaultdict(Counter)
        for q, view in train:
            cands = self.candidates(q, view)
            for st in self.STRATEGIES:
                score[self.frame(q)][st] += norm(cands[st]) == norm(q.answer)
        for fr, c in score.items():
            self.choice[fr] = max(self.STRATEGIES, key=lambda st: (c[st], -self.STRATEGIES.index(st)))
        return self

    def predict(self, q: Question, view: TextView) -> str:
        st = self.choice.get(self.frame(q), "match")
        return self.candidates(q, view)[st]

    def raw(self, q: Question, view: TextView) -> dict[str, str | None]:
        out: dict[str, str | None] = {"match": None, "latest": None}
        text = q.question
        items = ORDER_ITEM.findall(text)
        if len(items) >= 2 and "order" in text.lower():
            dated = []
            for num, phrase in items:
                d, _k = event_date(view, self.tpl.content(phrase), self.hx)
                dated.append((d or date.max, int(num)))
            out["match"] = "".join(f"({n})" for _d, n in sorted(dated))
            return out
        m = AB_SPANS.search(text)
        if m:
            la, lb = span_days(view, m["a"], self.tpl, self.hx), span_days(view, m["b"], self.tpl, self.hx)
            if la is not None and lb is not None and la != lb:
                out["match"] = "A" if la > lb else "B"
            return out
        if "YYYY/MM/DD" in text:
            head = re.split(r"(?<=[.?])\s+Answer", text)[0]
            d, _k = event_date(view, self.tpl.rare(head) or self.tpl.content(head), self.hx)
            lt = latest_timeword_image(view, self.hx)
            if d:
                out["match"] = d.strftime("%Y/%m/%d")
            if lt:
                out["latest"] = lt.strftime("%Y/%m/%d")
        return out


# -------------------------------------------------------------------------------------------- learned
class Learned:
    """Logistic regression per subtype over question n-grams and history features (closed answers)."""

    def __init__(self, train: list[tuple[Question, list[float]]], prior: Prior, seed: int):
        from scipy.sparse import csr_matrix, hstack
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        self.prior, self.models = prior, {}
        by = defaultdict(list)
        for q, f in train:
            if answer_format(q.answer) in CLOSED:
                by[subtype_of(q)].append((q, f))
        self._hstack, self._csr = hstack, csr_matrix
        for sub, rows in by.items():
            ys = [q.answer for q, _ in rows]
            if len(set(ys)) < 2:
                continue
            vec = TfidfVectorizer(ngram_range=(1, 2), min_df=1, sublinear_tf=True)
            x = self._x(vec.fit_transform([q.question for q, _ in rows]), [f for _, f in rows])
            with warnings.catch_warnings():  # many classes for few questions (counts, orders) is expected here
                warnings.simplefilter("ignore", UserWarning)
                clf = LogisticRegression(max_iter=2000, C=1.0, random_state=seed).fit(x, ys)
            self.models[sub] = (vec, clf)

    def _x(self, tf, feats):
        num = np.log1p(np.asarray(feats, dtype=float))
        return self._hstack([tf, self._csr(num)]).tocsr()

    def predict(self, q: Question, feats: list[float]) -> str:
        m = self.models.get(subtype_of(q))
        if m is None or answer_format(self.prior.predict(q)) not in CLOSED:
            return self.prior.predict(q)
        vec, clf = m
        return str(clf.predict(self._x(vec.transform([q.question]), [feats]))[0])


# -------------------------------------------------------------------------------------------- driver
def folds(qids: list[str], k: int, seed: int) -> list[set[str]]:
    rng = np.random.default_rng(seed)
    order = list(qids)
    rng.shuffle(order)
    k = max(2, min(k, len(order)))
    return [set(order[i::k]) for i in range(k)]


def balanced_accuracy(y: list[bool], p: list[bool]) -> float:
    pos = [pi for yi, pi in zip(y, p) if yi]
    neg = [not pi for yi, pi in zip(y, p) if not yi]
    parts = [float(np.mean(x)) for x in (pos, neg) if x]
    return float(np.mean(parts)) if parts else 0.0


def run(bench: Bench, *, k_folds: int = 5, vocab_min: int = 3, min_support: int = 2, seed: int = 0) -> dict:
    """Every solver's held-out predictions at every length; per-subtype accuracies and chance."""
    from sklearn.linear_model import LogisticRegression

    allq = bench.sorted_questions()
    answerable = [q for q in allq if not is_refusal(q)]
    parts = folds([q.question_id for q in allq], k_folds, seed)
    chance = chance_by_subtype(answerable, parts)
    hx = HistoryIndex()
    correct: dict[str, dict[str, dict[str, list[bool]]]] = {}  # length -> solver -> qid -> [correct]
    examples: dict[str, dict[str, list]] = {}
    ar: dict[str, dict] = {}
    # the vocabulary needs no answers: it is learned on every question's text (as a solver could)
    tpl = Template(allq, vocab_min)
    for ln in bench.lengths:
        per = {s: {} for s in SOLVERS}
        ar_y, ar_p = [], []
        ex = defaultdict(list)
        views = {}
        for q in allq:
            inst = bench.instance(ln, q.question_id)
            if inst is not None:
                views[q.question_id] = bench.view(inst)
        hf = {qid: history_features(bench.questions[qid], v, tpl, hx) for qid, v in views.items()}
        date_cache: dict = {}
        for test in parts:
            train = [q for q in allq if q.question_id not in test and q.question_id in views]
            tr_ans = [q for q in train if not is_refusal(q)]
            prior = Prior(tr_ans, tpl, min_support)
            opt = OptionTypes(tr_ans, tpl, prior)
            dates = Dates(tpl, prior, hx, date_cache).fit([(q, views[q.question_id]) for q in tr_ans])
            learned = Learned([(q, hf[q.question_id]) for q in tr_ans], prior, seed)
            ys = [is_refusal(q) for q in train]
            arclf = None
            if len(set(ys)) == 2:
                arclf = LogisticRegression(max_iter=1000, class_weight="balanced", random_state=seed)
                arclf.fit(np.log1p(np.asarray([hf[q.question_id] for q in train])), ys)
            for q in allq:
                if q.question_id not in test or q.question_id not in views:
                    continue
                view, f = views[q.question_id], hf[q.question_id]
                if arclf is not None:
                    ar_y.append(is_refusal(q))
                    ar_p.append(bool(arclf.predict(np.log1p(np.asarray([f])))[0]))
                if is_refusal(q):
                    continue
                preds = {
                    "prior": prior.predict(q),
                    "option_types": opt.predict(q),
                    "dates": dates.predict(q, view),
                    "learned": learned.predict(q, f),
                }
                for s, pred in preds.items():
                    ok = norm(pred) == norm(q.answer)
                    per[s][q.question_id] = ok
                    if ok and s != "prior" and not per["prior"].get(q.question_id) and len(ex[s]) < 5:
                        ex[s].append({"question_id": q.question_id, "answer": q.answer})
        correct[ln] = per
        examples[ln] = dict(ex)
        n_ar = sum(ar_y)
        ar[ln] = {"n": len(ar_y), "n_refusal": n_ar, "balanced_accuracy": balanced_accuracy(ar_y, ar_p), "chance": 0.5}
    return summarize(bench, answerable, chance, correct, examples, ar)


def summarize(bench, answerable, chance, correct, examples, ar) -> dict:
    subs = sorted({subtype_of(q) for q in answerable})
    by_sub = {s: [q.question_id for q in answerable if subtype_of(q) == s] for s in subs}
    out = {"chance": {s: round(c, 4) for s, c in chance.items()}, "lengths": {}}
    for ln, per in correct.items():
        rows = {}
        tot_best = tot_n = tot_chance = 0.0
        for s in subs:
            ids = [i for i in by_sub[s] if i in per["prior"]]
            if not ids:
                continue
            accs = {sv: float(np.mean([per[sv][i] for i in ids])) for sv in SOLVERS}
            best = max(SOLVERS, key=lambda sv: (accs[sv], -SOLVERS.index(sv)))
            rows[s] = {
                "n": len(ids),
                "chance": round(chance[s], 4),
                "accuracy": {sv: round(a, 4) for sv, a in accs.items()},
                "best": best,
                "best_accuracy": round(accs[best], 4),
            }
            tot_best += accs[best] * len(ids)
            tot_chance += chance[s] * len(ids)
            tot_n += len(ids)
        out["lengths"][ln] = {
            "subtypes": rows,
            "answerable": {
                "n": int(tot_n),
                "best_accuracy": round(tot_best / tot_n, 4) if tot_n else 0.0,
                "chance": round(tot_chance / tot_n, 4) if tot_n else 0.0,
            },
            "refusal_detection": {k: round(v, 4) if isinstance(v, float) else v for k, v in ar[ln].items()},
            "examples": examples[ln],
        }
    return out


__all__ = ["run", "answer_format", "chance_by_subtype", "Template", "Prior", "REFUSAL_REFERENCE", "AR"]
