import os

import pytest

from memlens.core.errors import ImageError
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
