"""Evidence detectors that never see the question: can a session (or image) be told to be evidence?

Population, per length: every session of a history that shares at least one image (a criterion
any reader can apply; sessions without images are the text-only fillers), each distinct session
once. An evidence session is taken from its own question's history (its date, position and gaps
there), a haystack session from the first history (by question id) that holds it. The label is
"evidence of some question"; folds are grouped by that question, so no question's sessions are in
both a training and a test fold. Three detectors, each scored by out-of-fold ROC-AUC:

- ``metadata``: sklearn ``HistGradientBoostingClassifier`` on session metadata: turns, turn
  lengths, image count and positions, image families, width/height, bytes, format, timestamp
  (hour, minute, weekday), gaps to the neighbouring sessions, position in the history, days to the
  question date. Top features by permutation importance (drop of held-out AUC).
- ``text``: word 1-2-gram and character 3-5-gram TF-IDF with logistic regression over the turns
  (``<image>`` removed). Top features by coefficient (towards evidence and towards haystack).
- ``images``: evidence vs haystack *images* on image metadata alone (family, width, height,
  aspect, bytes, format), each image once; gradient boosting; permutation importance.
- ``recurrence``: what a reader of the whole release can count: in how many histories of the
  length the session recurs, and its images (mean, least, most); gradient boosting.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from memlens.construction.validate.adversaries.data import Bench
from memlens.construction.validate.adversaries.heap import release_freed_memory
from memlens.core.constants import IMAGE_PLACEHOLDER
from memlens.core.schema import parse_date

FORMATS = ("png", "jpeg", "webp", "gif")


@dataclass
class Unit:
    session_id: str
    label: int
    group: str
    length: str
    position: int
    n_sessions: int
    date: str
    prev_date: str | None
    next_date: str | None
    question_date: str


def units(bench: Bench, length: str) -> list[Unit]:
    """The sessions of one length, each once (see the module docstring)."""
    owner = {e.session_id: q.question_id for q in bench.questions.values() for e in q.evidence}
    chosen: dict[str, Unit] = {}
    for inst in sorted(bench.instances[length], key=lambda i: i.question_id):
        q = bench.questions[inst.question_id]
        n = len(inst.session_ids)
        for pos, (sid, d) in enumerate(zip(inst.session_ids, inst.dates)):
            if not bench.sessions[sid].image_ids:
                continue
            own = owner.get(sid)
            if sid in chosen or (own is not None and own != inst.question_id):
                continue  # once; an evidence session only in its own question's history
            chosen[sid] = Unit(
                session_id=sid,
                label=int(own is not None),
                group=own or inst.question_id,
                length=length,
                position=pos,
                n_sessions=n,
                date=d,
                prev_date=inst.dates[pos - 1] if pos else None,
                next_date=inst.dates[pos + 1] if pos + 1 < n else None,
                question_date=q.question_date,
            )
    return [chosen[k] for k in sorted(chosen)]


def _days(a: str | None, b: str) -> float:
    if a is None:
        return np.nan
    return (parse_date(b) - parse_date(a)).total_seconds() / 86400


def metadata_matrix(bench: Bench, us: list[Unit]) -> tuple[np.ndarray, list[str]]:
    families = sorted({r.family for r in bench.images.values()})
    names = [
        "turns",
        "user_turns",
        "chars_total",
        "chars_user_mean",
        "chars_assistant_mean",
        "images",
        "first_image_turn_rel",
        "last_image_turn_rel",
        "image_char_pos_rel",
        "width_mean",
        "height_mean",
        "bytes_mean",
        "hour",
        "minute",
        "weekday",
        "gap_prev_days",
        "gap_next_days",
        "position_rel",
        "position_from_end",
        "days_to_question",
        *[f"family={f}" for f in families],
        *[f"format={f}" for f in FORMATS],
    ]
    rows = []
    for u in us:
        s = bench.sessions[u.session_id]
        turns = s.turns
        user = [t for t in turns if t.role == "user"]
        asst = [t for t in turns if t.role == "assistant"]
        img_turns = [i for i, t in enumerate(turns) if t.images]
        pos = []
        for t in turns:
            at = 0
            while (k := t.content.find(IMAGE_PLACEHOLDER, at)) >= 0:
                pos.append(k / max(len(t.content), 1))
                at = k + 1
        recs = [bench.images[i] for i in s.image_ids if i in bench.images]
        dt = parse_date(u.date)
        fam = [sum(r.family == f for r in recs) for f in families]
        fmt = [sum(r.format == f for r in recs) for f in FORMATS]
        sizes = [bench.image_bytes[r.sha256] for r in recs if r.sha256 in bench.image_bytes]
        rows.append(
            [
                len(turns),
                len(user),
                sum(len(t.content) for t in turns),
                np.mean([len(t.content) for t in user]) if user else 0.0,
                np.mean([len(t.content) for t in asst]) if asst else 0.0,
                len(s.image_ids),
                img_turns[0] / len(turns) if img_turns else np.nan,
                img_turns[-1] / len(turns) if img_turns else np.nan,
                np.mean(pos) if pos else np.nan,
                np.mean([r.width for r in recs]) if recs else np.nan,
                np.mean([r.height for r in recs]) if recs else np.nan,
                np.mean(sizes) if sizes else np.nan,
                dt.hour,
                dt.minute,
                dt.weekday(),
                _days(u.prev_date, u.date),
                -_days(u.next_date, u.date) if u.next_date else np.nan,
                u.position / max(u.n_sessions - 1, 1),
                u.n_sessions - 1 - u.position,
                _days(u.date, u.question_date),
                *fam,
                *fmt,
            ]
        )
    return np.asarray(rows, dtype=float), names


def image_units(bench: Bench, us: list[Unit]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Each image once (first session unit holding it): features, labels, groups."""
    families = sorted({r.family for r in bench.images.values()})
    names = [
        "width",
        "height",
        "aspect",
        "bytes",
        *[f"family={f}" for f in families],
        *[f"format={f}" for f in FORMATS],
    ]
    seen: set[str] = set()
    rows, ys, gs = [], [], []
    for u in sorted(us, key=lambda u: (-u.label, u.session_id)):
        for i in bench.sessions[u.session_id].image_ids:
            if i in seen or i not in bench.images:
                continue
            seen.add(i)
            r = bench.images[i]
            rows.append(
                [
                    r.width,
                    r.height,
                    r.width / max(r.height, 1),
                    bench.image_bytes.get(i, np.nan),
                    *[float(r.family == f) for f in families],
                    *[float(r.format == f) for f in FORMATS],
                ]
            )
            ys.append(u.label)
            gs.append(u.group)
    return np.asarray(rows, dtype=float).reshape(len(rows), len(names)), np.asarray(ys), np.asarray(gs), names


def recurrence_matrix(bench: Bench, length: str, us: list[Unit]) -> tuple[np.ndarray, list[str]]:
    """Per unit: the histories of ``length`` holding the session, and holding each of its images."""
    held: dict[str, int] = defaultdict(int)
    img_held: dict[str, int] = defaultdict(int)
    for inst in bench.instances[length]:
        imgs = set()
        for sid in inst.session_ids:
            held[sid] += 1
            imgs.update(bench.sessions[sid].image_ids)
        for i in imgs:
            img_held[i] += 1
    names = ["histories", "image_histories_mean", "image_histories_min", "image_histories_max"]
    rows = []
    for u in us:
        n_img = [img_held[i] for i in bench.sessions[u.session_id].image_ids] or [0]
        rows.append([held[u.session_id], float(np.mean(n_img)), min(n_img), max(n_img)])
    return np.asarray(rows, dtype=float).reshape(len(rows), len(names)), names


def _splits(y: np.ndarray, groups: np.ndarray, k: int, seed: int):
    from sklearn.model_selection import GroupKFold

    n = min(k, len(set(groups.tolist())))
    return list(GroupKFold(n_splits=n, shuffle=True, random_state=seed).split(np.zeros(len(y)), y, groups)), n


def _empty(y, reason: str) -> dict:
    return {"n": int(len(y)), "n_evidence": int(np.sum(y)) if len(y) else 0, "skipped": reason}


def gradient_boosting(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, names: list[str], *, k: int, seed: int, top: int
) -> dict:
    """Out-of-fold ROC-AUC of gradient boosting and each feature's permutation importance: the drop
    of the pooled out-of-fold AUC when the feature is shuffled within each test fold."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    if len(y) == 0 or y.min() == y.max() or len(set(groups.tolist())) < 2:
        return _empty(y, "needs evidence and haystack units from at least two questions")
    known = np.isfinite(x).any(axis=0)  # a feature no unit has (e.g. bytes without image files) is left out
    x, names = x[:, known], [nm for nm, ok in zip(names, known) if ok]
    splits, n = _splits(y, groups, k, seed)
    probs = np.full(len(y), float(y.mean()))
    models = []
    for tr, te in splits:
        if y[tr].min() == y[tr].max():
            continue
        clf = HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1, max_leaf_nodes=15, random_state=seed)
        clf.fit(x[tr], y[tr])
        probs[te] = clf.predict_proba(x[te])[:, 1]
        models.append((clf, te))
    auc = float(roc_auc_score(y, probs))
    rng = np.random.default_rng(seed)
    imp = np.zeros(x.shape[1])
    for j in range(x.shape[1]):
        p = probs.copy()
        for clf, te in models:
            xt = x[te].copy()
            xt[:, j] = xt[rng.permutation(len(te)), j]
            p[te] = clf.predict_proba(xt)[:, 1]
        imp[j] = auc - roc_auc_score(y, p)
    order = [i for i in np.argsort(-imp, kind="stable")[:top] if imp[i] > 0]
    return {
        "n": int(len(y)),
        "n_evidence": int(y.sum()),
        "folds": n,
        "roc_auc": auc,
        "top_features": [{"feature": names[i], "importance": round(float(imp[i]), 4)} for i in order],
        "means": {
            names[i]: {"evidence": _r(np.nanmean(x[y == 1, i])), "haystack": _r(np.nanmean(x[y == 0, i]))}
            for i in order
        },
    }


def _r(v) -> float | None:
    return None if not np.isfinite(v) else round(float(v), 3)


def text_matrix(docs: list[str], max_features: int):
    """Word 1-2-gram and character 3-5-gram TF-IDF of the session texts and the feature names. The
    vectorizers see no labels: they are fitted once on every session's text (test folds included).
    Each vectorizer is dropped once fitted and the two matrices are joined row by row
    (:func:`hstack_rows`): scipy's ``hstack`` goes through COO, about 370 MB of transient copies at
    paper scale."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    word = TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=max_features, sublinear_tf=True)
    xw = word.fit_transform(docs)
    names = [f"w:{t}" for t in word.get_feature_names_out()]
    del word
    char = TfidfVectorizer(
        analyzer="char_wb", ngram_range=(3, 5), min_df=2, max_features=max_features, sublinear_tf=True
    )
    xc = char.fit_transform(docs)
    names += [f"c:{t!r}" for t in char.get_feature_names_out()]
    del char
    return hstack_rows(xw, xc), names


def hstack_rows(a, b):
    """``scipy.sparse.hstack([a, b]).tocsr()`` of two CSR matrices with the same rows, written
    straight into the result's arrays (the same values, indices and row pointers)."""
    import scipy.sparse as sp

    n = a.shape[0]
    if b.shape[0] != n:
        raise ValueError(f"hstack_rows: {n} rows and {b.shape[0]} rows")
    indptr = a.indptr.astype(np.int64) + b.indptr
    nnz = int(indptr[-1])
    data = np.empty(nnz, dtype=np.result_type(a.dtype, b.dtype))
    index_type = np.int32 if max(nnz, a.shape[1] + b.shape[1]) < np.iinfo(np.int32).max else np.int64
    indices = np.empty(nnz, dtype=index_type)
    off = a.shape[1]
    for r in range(n):  # a few thousand rows: one slice copy per row and matrix
        start, a0, a1, b0, b1 = indptr[r], a.indptr[r], a.indptr[r + 1], b.indptr[r], b.indptr[r + 1]
        mid = start + (a1 - a0)
        data[start:mid], indices[start:mid] = a.data[a0:a1], a.indices[a0:a1]
        data[mid : indptr[r + 1]], indices[mid : indptr[r + 1]] = b.data[b0:b1], b.indices[b0:b1] + off
    return sp.csr_matrix((data, indices, indptr.astype(index_type)), shape=(n, a.shape[1] + b.shape[1]))


def text_model(
    x, rows: np.ndarray, names: list[str], y: np.ndarray, groups: np.ndarray, *, k: int, seed: int, top: int
) -> dict:
    """The text detector on the rows ``rows`` of ``x`` (unit i is row ``rows[i]``): each fold's
    training rows are taken from ``x`` at once, so no copy of a length's whole matrix is held
    beside a fold's."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    if len(y) == 0 or y.min() == y.max() or len(set(groups.tolist())) < 2:
        return _empty(y, "needs evidence and haystack sessions from at least two questions")
    splits, n = _splits(y, groups, k, seed)
    probs = np.full(len(y), float(y.mean()))
    for tr, te in splits:
        if y[tr].min() == y[tr].max():
            continue
        clf = LogisticRegression(max_iter=2000, class_weight="balanced", random_state=seed).fit(x[rows[tr]], y[tr])
        probs[te] = clf.predict_proba(x[rows[te]])[:, 1]
        del clf
    full = LogisticRegression(max_iter=2000, class_weight="balanced", random_state=seed).fit(x[rows], y)
    coef = full.coef_[0]
    pos, neg = np.argsort(-coef, kind="stable")[:top], np.argsort(coef, kind="stable")[:top]
    return {
        "n": int(len(y)),
        "n_evidence": int(y.sum()),
        "folds": n,
        "roc_auc": float(roc_auc_score(y, probs)),
        "top_features": [{"feature": names[i], "coef": round(float(coef[i]), 3)} for i in pos],
        "top_haystack_features": [{"feature": names[i], "coef": round(float(coef[i]), 3)} for i in neg],
    }


def run(bench: Bench, *, k_folds: int = 5, seed: int = 0, top: int = 8, max_features: int = 20000) -> dict:
    """Every detector at every length: ``{length: {detector: result}}``."""
    out: dict[str, dict] = defaultdict(dict)
    per_len = {ln: units(bench, ln) for ln in bench.lengths}
    sids = sorted({u.session_id for us in per_len.values() for u in us})
    row = {sid: i for i, sid in enumerate(sids)}
    docs = [" ".join(t.content.replace(IMAGE_PLACEHOLDER, " ") for t in bench.sessions[sid].turns) for sid in sids]
    xt, tnames = text_matrix(docs, max_features) if docs else (None, [])
    del docs
    release_freed_memory()  # the vectorizers' vocabularies, before the folds' copies
    # the longest length (the most units, the largest copies) first, while the other process of
    # validate is still small; each length's figures depend on nothing else, and are listed in order
    for ln, us in sorted(per_len.items(), key=lambda kv: -len(kv[1])):
        y = np.asarray([u.label for u in us], dtype=int)
        g = np.asarray([u.group for u in us])
        x, names = metadata_matrix(bench, us)
        out[ln]["metadata"] = gradient_boosting(x, y, g, names, k=k_folds, seed=seed, top=top)
        if xt is None:
            out[ln]["text"] = _empty(y, "no sessions with images")
        else:
            rows = np.asarray([row[u.session_id] for u in us], dtype=np.int64)
            out[ln]["text"] = text_model(xt, rows, tnames, y, g, k=k_folds, seed=seed, top=top)
        xi, yi, gi, ni = image_units(bench, us)
        out[ln]["images"] = gradient_boosting(xi, yi, gi, ni, k=k_folds, seed=seed, top=top)
        xr, nr = recurrence_matrix(bench, ln, us)
        out[ln]["recurrence"] = gradient_boosting(xr, y, g, nr, k=k_folds, seed=seed, top=top)
    return {ln: out[ln] for ln in per_len}
