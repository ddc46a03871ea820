"""Retrieval on hand-built histories with known answers: BM25, temporal filter, turn granularity,
fusion, dense (bundled MiniLM) and image (a random-weight open_clip checkpoint saved here)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from memlens.core.errors import ConfigError
from memlens.eval.memory.retrieval import Doc, build_retriever, session_docs, session_ranking

SHA_A = "a" * 64
SHA_B = "b" * 64


@dataclass
class T:
    role: str
    content: str
    images: list = field(default_factory=list)


@dataclass
class S:
    session_id: str
    date: str
    turns: list


HISTORY = [
    S(
        "s1",
        "2024/01/05 (Fri) 09:00",
        [T("user", "We adopted a puppy named Biscuit."), T("assistant", "Congratulations!")],
    ),
    S(
        "s2",
        "2024/02/10 (Sat) 12:30",
        [T("user", "Here is my receipt <image> from the bakery."), T("assistant", "Nice.")],
    ),
    S("s3", "2024/03/01 (Fri) 18:45", [T("user", "My boarding pass <image>"), T("assistant", "Have a good flight.")]),
    S("s4", "2024/04/20 (Sat) 08:15", [T("user", "The weather was rainy all week."), T("assistant", "Stay dry.")]),
]
HISTORY[1].turns[0].images = [SHA_A]
HISTORY[2].turns[0].images = [SHA_B]
TEXTS = {
    SHA_A: "[image; text read: CAFE LUNA | Croissant 3.25 | TOTAL 7.75]",
    SHA_B: "[image; text read: GATE A35 | SEAT 10F]",
}


def test_session_docs_replace_placeholders_in_order_and_keep_dates():
    docs = session_docs(HISTORY, TEXTS)
    assert [d.doc_id for d in docs] == ["s1", "s2", "s3", "s4"]
    assert docs[1].text.startswith("user: Here is my receipt [image; text read: CAFE LUNA")
    assert docs[1].image_shas == (SHA_A,) and docs[1].date == HISTORY[1].date
    assert "<image>" not in " ".join(d.text for d in docs)
    markers = session_docs(HISTORY, None)
    assert "[image]" in markers[2].text and "GATE" not in markers[2].text
    first = session_docs(HISTORY, TEXTS, first_turns=1)
    assert all("assistant:" not in d.text for d in first) and first[0].turn_ids == (0,)
    turns = session_docs(HISTORY, TEXTS, granularity="turn")
    assert len(turns) == 8 and turns[5].doc_id == "s3:1" and turns[5].session_id == "s3"
    with pytest.raises(ConfigError, match="granularity"):
        session_docs(HISTORY, TEXTS, granularity="page")


def test_bm25_finds_the_session_whose_image_text_holds_the_answer():
    r = build_retriever("bm25")
    r.index(session_docs(HISTORY, TEXTS))
    hits = r.search("Which gate did my flight leave from?", 3)
    assert hits[0].session_id == "s3" and hits[0].rank == 1
    assert session_ranking(r.search("what was the TOTAL at CAFE LUNA", 2))[0] == "s2"
    # with markers only, the image text is gone: the gate question finds nothing in s3's image
    m = build_retriever("bm25")
    m.index(session_docs(HISTORY, None))
    assert "s3" not in [h.session_id for h in m.search("gate A35", 4)]


def test_temporal_filter_keeps_sessions_at_or_before_the_date():
    r = build_retriever("bm25")
    r.index(session_docs(HISTORY, TEXTS))
    assert r.search("gate A35", 4, before="2024/02/28 (Wed) 00:00") == []
    assert [h.session_id for h in r.search("gate A35", 4, before="2024/03/01 (Fri) 18:45")] == ["s3"]


def test_turn_granularity_collapses_to_sessions():
    r = build_retriever("bm25")
    r.index(session_docs(HISTORY, TEXTS, granularity="turn"))
    hits = r.search("puppy Biscuit", 5)
    assert hits[0].doc_id == "s1:0"
    assert session_ranking(hits)[0] == "s1"


def test_duplicate_doc_ids_and_unknown_kinds_are_errors():
    r = build_retriever("bm25")
    with pytest.raises(ValueError, match="duplicate doc_id"):
        r.index([Doc("x", "x", "2024/01/01 (Mon) 00:00", "a"), Doc("x", "x", "2024/01/01 (Mon) 00:00", "b")])
    with pytest.raises(ConfigError, match="unknown retriever"):
        build_retriever("tfidf")


def test_fusion_is_reciprocal_rank_fusion_of_its_parts():
    a, b = build_retriever("bm25"), build_retriever("bm25", k1=0.9, b=0.4)
    f = build_retriever("fusion", retrievers=[a, b], k_rrf=60)
    f.index(session_docs(HISTORY, TEXTS))
    hits = f.search("receipt bakery croissant", 4)
    assert hits[0].session_id == "s2"
    assert hits[0].score == pytest.approx(2 / 61)  # rank 1 in both parts
    assert "bm25" in f.id and f.id.startswith("fusion/rrf60")


def test_empty_history_and_empty_query_return_nothing():
    r = build_retriever("bm25")
    r.index([])
    assert r.search("anything", 5) == []
    r.index(session_docs(HISTORY, TEXTS))
    assert r.search("", 5) == [] and r.search("the and of", 5) == []


def test_dense_minilm_ranks_the_semantic_match_first():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    d = build_retriever("dense")
    d.index(session_docs(HISTORY, TEXTS))
    hits = d.search("What is the name of our new dog?", 4)
    assert hits[0].session_id == "s1"
    assert len(hits) == 4 and hits[0].score > hits[-1].score
    assert [h.session_id for h in d.search("dog", 4, before="2023/12/31 (Sun) 00:00")] == []
    assert d.id.startswith("dense/st-all-MiniLM-L6-v2")


def test_the_embedding_cache_returns_the_same_bytes_and_is_keyed_by_the_model_folder(tmp_path):
    pytest.importorskip("sentence_transformers")
    import shutil

    import numpy as np

    from memlens.eval.memory.retrieval import TextEncoder, minilm_path

    texts = ["our new dog is called Biscuit", "the receipt total was 7.75", "our new dog is called Biscuit"]
    cache = tmp_path / "emb"
    first = TextEncoder(cache_dir=cache)
    v1 = first.encode(texts)
    assert (first.encoded, first.cache_hits) == (2, 0) and first.cache_path.is_file()
    again = TextEncoder(cache_dir=cache)  # a later run: read from disk, nothing through the model
    v2 = again.encode(texts)
    assert (again.encoded, again.cache_hits) == (0, 2) and again._model is None
    assert v1.tobytes() == v2.tobytes()
    assert np.array_equal(TextEncoder().encode(texts[:2]), v1[:2])  # no cache: the same vectors
    # another model folder (same config, one file changed) gets a cache of its own
    other = tmp_path / "other"
    shutil.copytree(minilm_path(), other)
    (other / "README.md").write_text("changed")
    moved = TextEncoder(other, cache_dir=cache)
    assert moved.cache_path != first.cache_path
    moved.encode(texts[:1])
    assert (moved.encoded, moved.cache_hits) == (1, 0)
    # a corrupt cache file is a clear error naming it, and is not overwritten
    bad = TextEncoder(cache_dir=tmp_path / "bad")
    bad.cache_path.parent.mkdir(parents=True)
    bad.cache_path.write_bytes(b"not a database" * 100)
    with pytest.raises(ConfigError, match="embedding cache"):
        bad.encode(["x"])
    assert bad.cache_path.read_bytes() == b"not a database" * 100


def test_texts_the_model_cannot_tell_apart_are_encoded_once(tmp_path):
    """The dense encoder keys a text by the word pieces the model reads (truncated to its
    max_seq_length): two sessions that differ only after that window get one encoding, the
    prefix it hands the model tokenizes to exactly what the whole text does, and a difference
    inside the window is still a different vector."""
    pytest.importorskip("sentence_transformers")
    import numpy as np

    from memlens.eval.memory.retrieval import TextEncoder

    enc = TextEncoder(cache_dir=tmp_path / "emb")
    body = " ".join(f"we walked past shop number {i} near the old harbour" for i in range(200))  # > 2,048 chars
    late_a = body + " [image; text read: Total 7.75]"
    late_b = body + " [image; text read: Total 9.10]"
    early = "[image; text read: Total 9.10] " + body
    v = enc.encode([late_a, late_b, early])
    assert enc.encoded == 2 and v[0].tobytes() == v[1].tobytes() and not np.allclose(v[0], v[2])
    tok, n = enc.tokenizer, enc.max_seq_length
    for text in (late_a, early, "a short text"):
        _key, head = enc.model_input(text)
        assert len(head) <= len(text) and text.startswith(head)
        full = tok(text, truncation=True, max_length=n)["input_ids"]
        assert tok(head, truncation=True, max_length=n)["input_ids"] == full  # what the model reads
        assert enc.model.tokenize([head])["input_ids"][0].tolist() == full  # as sentence-transformers tokenizes
    assert len(enc.model_input(late_a)[1]) < len(late_a)  # the long text was cut
    # a text whose first 2,048 characters hold fewer word pieces than the window is read whole
    dense = "x" * 3000
    assert enc.model_input(dense)[1] == dense
    # the same vectors as encoding each text on its own, without the cache
    alone = TextEncoder()
    assert np.allclose(alone.encode([late_b])[0], v[1], atol=1e-6)


def test_the_openvino_encoder_gives_the_torch_vectors():
    """The default dense backend (the transformer converted to OpenVINO, mean pooling and
    normalisation done here) gives sentence-transformers' own vectors, for texts of different
    lengths padded into one batch, and names itself in the encoder id (the cache key)."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("openvino")
    import numpy as np

    from memlens.eval.memory.retrieval import TextEncoder

    texts = ["dog", "the receipt total was 7.75 at the corner shop", "we met " * 300, "a b c d e f"]
    ov, pt = TextEncoder(), TextEncoder(backend="torch")
    assert ov.backend == "openvino" and ov.id.endswith("-ov") and ov.id != pt.id
    a, b = ov.encode(texts), pt.encode(texts)
    assert a.shape == b.shape == (4, 384) and np.allclose(a, b, atol=1e-5)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    with pytest.raises(ConfigError, match="backend must be"):
        TextEncoder(backend="onnx")


def test_a_bf16_encoder_names_its_precision_and_stays_close_to_f32(monkeypatch, tmp_path):
    """``precision``: bf16 (where the CPU has bfloat16 units) gives vectors within cosine 0.999 of
    the f32 ones under an id of its own, so the two are never cached or reported under one key;
    ``auto`` is bf16 exactly where the CPU has it; bf16 on a CPU without it, an unknown value and
    bf16 on the torch backend are configuration errors."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("openvino")
    import numpy as np

    from memlens.eval.memory import precision
    from memlens.eval.memory.retrieval import TextEncoder

    texts = ["dog", "the receipt total was 7.75 at the corner shop", "we met " * 300, "a b c d e f"]
    f32 = TextEncoder(cache_dir=tmp_path)
    auto = TextEncoder(precision="auto")
    assert auto.precision == ("bf16" if precision.cpu_has_bf16() else "f32")
    if precision.cpu_has_bf16():
        bf16 = TextEncoder(precision="bf16", cache_dir=tmp_path)
        assert bf16.id == f32.id + "-bf16" and bf16.cache_path != f32.cache_path
        a, b = f32.encode(texts), bf16.encode(texts)
        assert not np.array_equal(a, b)  # it did run at bf16
        assert (a * b).sum(1).min() >= 0.999
    monkeypatch.setattr(precision, "cpu_has_bf16", lambda: False)
    assert TextEncoder(precision="auto").id == f32.id
    with pytest.raises(ConfigError, match="bf16 needs a CPU with bfloat16 units"):
        TextEncoder(precision="bf16")
    with pytest.raises(ConfigError, match="must be one of"):
        TextEncoder(precision="fp16")
    with pytest.raises(ConfigError, match="needs the openvino backend"):
        TextEncoder(backend="torch", precision="bf16")


def test_one_encoder_serves_threads():
    """Agents answer in threads sharing one encoder: concurrent calls (the fast tokenizer is one
    object) give the vectors a single thread gives."""
    pytest.importorskip("sentence_transformers")
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from memlens.eval.memory.retrieval import TextEncoder

    texts = [f"session {i}: " + "we bought bread and milk at the corner shop " * (5 + 40 * (i % 3)) for i in range(24)]
    shared = TextEncoder()
    with ThreadPoolExecutor(6) as pool:
        got = list(pool.map(lambda t: shared.encode([t])[0], texts))
    want = TextEncoder().encode(texts)
    assert np.allclose(np.stack(got), want, atol=1e-5)
