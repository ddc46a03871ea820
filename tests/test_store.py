import os

import pytest

from memlens.core.errors import ImageError
from memlens.eval.results import PredictionStore
from memlens.core.schema import Prediction
from memlens.core.store import ObjectStore, derive_rng, safe_join, short_id


def test_object_store_content_addressed(tmp_path):
    st = ObjectStore(tmp_path)
    a = st.put(b"hello", "png")
    assert a == st.put(b"hello", "png")
    assert st.path(a, "png").read_bytes() == b"hello"
    st.verify(a, "png")
    st.path(a, "png").write_bytes(b"tampered")
    with pytest.raises(ImageError, match="does not match"):
        st.verify(a, "png")


def test_derived_rng_is_stable_and_independent():
    assert derive_rng(42, "x", 1).random() == derive_rng(42, "x", 1).random()
    assert derive_rng(42, "x", 1).random() != derive_rng(42, "x", 2).random()
    assert short_id("q", 1, "a") == short_id("q", 1, "a")


@pytest.mark.parametrize("rel", ["../etc/passwd", "/etc/passwd", "a/../../b.png", "x\x00.png", ""])
def test_safe_join_refuses_escapes(tmp_path, rel):
    with pytest.raises(ImageError):
        safe_join(tmp_path, rel)


def test_safe_join_refuses_symlink_escape(tmp_path):
    (tmp_path / "root").mkdir()
    os.symlink("/etc", tmp_path / "root" / "link")
    with pytest.raises(ImageError, match="escapes"):
        safe_join(tmp_path / "root", "link/passwd")
    assert safe_join(tmp_path / "root", "sub/a.png") == (tmp_path / "root" / "sub" / "a.png").resolve()


def pred(qid, ok=True, text="x"):
    return Prediction(system="s", mode="standard", length="32k", question_id=qid, question_type="answer_refusal",
                      question_subtype="", ok=ok, raw_prediction=text if ok else None, prediction=text if ok else None,
                      error=None if ok else "boom")


def test_prediction_store_resume_and_partial_tail(tmp_path):
    st = PredictionStore(tmp_path, "s", "standard", "32k")
    st.append(pred("q1"))
    st.append(pred("q2", ok=False))
    st.close()
    with open(st.path, "ab") as fh:  # a crash in the middle of a write
        fh.write(b'{"question_id": "q3", "sys')
    st2 = PredictionStore(tmp_path, "s", "standard", "32k")
    assert st2.done_ids() == {"q1"}  # failed q2 is retried, partial q3 ignored
    st2.append(pred("q2"))
    st2.append(pred("q3"))
    st2.compact()
    lines = st2.path.read_text().splitlines()
    assert [line.count('"question_id"') for line in lines] == [1, 1, 1]
    assert st2.done_ids() == {"q1", "q2", "q3"}


def test_failed_record_never_replaces_success(tmp_path):
    st = PredictionStore(tmp_path, "s", "standard", "32k")
    st.append(pred("q1"))
    st.append(pred("q1", ok=False))
    st.close()
    assert st.load()["q1"].ok
