import os

import pytest

from memlens.core.errors import ImageError
from memlens.core.store import ObjectStore, derive_rng, safe_join, short_id
from memlens.eval.results import ResultsStore, request_key


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


IDENT = {"_target_": "x.Model", "model": "m", "temperature": 0.0}


def rec(ok=True, text="x"):
    return {"question_id": "q", "ok": ok, "text": text if ok else None, "error": None if ok else "boom"}


def test_results_store_resume_and_partial_tail(tmp_path):
    st = ResultsStore(tmp_path, IDENT)
    with st.writer():
        st.put("k1", rec())
        st.put("k2", rec(ok=False))
    with open(st.path, "ab") as fh:  # a crash in the middle of a write
        fh.write(b'{"key": "k3", "ok": tr')
    st2 = ResultsStore(tmp_path, IDENT)
    assert st2.has_answer("k1") and not st2.has_answer("k2") and st2.get("k3") is None  # partial tail skipped
    with st2.writer():  # a writer cuts the partial line off before appending
        st2.put("k2", rec())
        st2.put("k3", rec())
    lines = st2.path.read_text().splitlines()
    assert [line.count('"key"') for line in lines] == [1, 1, 1, 1]
    assert all(ResultsStore(tmp_path, IDENT).has_answer(k) for k in ("k1", "k2", "k3"))


def test_failed_record_never_replaces_an_answer(tmp_path):
    st = ResultsStore(tmp_path, IDENT)
    with st.writer():
        st.put("k1", rec(text="first"))
        st.put("k1", rec(ok=False))
    assert ResultsStore(tmp_path, IDENT).get("k1")["text"] == "first"


def test_identity_names_the_folder_and_keys_hash_everything(tmp_path):
    a, b = ResultsStore(tmp_path, IDENT), ResultsStore(tmp_path, {**IDENT, "temperature": 0.7})
    assert a.dir != b.dir and a.key == ResultsStore(tmp_path, dict(reversed(list(IDENT.items())))).key
    base = request_key(a.key, "p1", "standard", "f" * 64)
    assert (
        len(
            {
                base,
                request_key(b.key, "p1", "standard", "f" * 64),
                request_key(a.key, "p2", "standard", "f" * 64),
                request_key(a.key, "p1", "cot", "f" * 64),
                request_key(a.key, "p1", "standard", "e" * 64),
            }
        )
        == 5
    )


def test_second_writer_stops_at_once_or_waits(tmp_path):
    import threading
    import time

    from memlens.eval.results import StoreBusyError

    st = ResultsStore(tmp_path, IDENT)
    other = ResultsStore(tmp_path, IDENT)
    with st.writer():
        st.put("k1", rec())
        with pytest.raises(StoreBusyError, match="another evaluation"), other.writer():
            pass
        got = []

        def waiter():
            with other.writer(wait=True):
                got.append(other.has_answer("k2"))  # sees what the first writer finished
                other.put("k3", rec())

        th = threading.Thread(target=waiter)
        th.start()
        time.sleep(0.2)
        assert not got  # still waiting
        st.put("k2", rec())
    th.join(5)
    assert got == [True]
    assert all(ResultsStore(tmp_path, IDENT).has_answer(k) for k in ("k1", "k2", "k3"))
