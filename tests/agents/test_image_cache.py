"""The agents' image cache verifies what it finds: a corrupt cached image is written anew from the
benchmark's verified bytes; a corrupt benchmark image is an error naming it."""

from __future__ import annotations

import hashlib

import pytest

from memlens.core.errors import ImageError
from memlens.eval.agents.view import ImageStore


def _image(tmp_path, data: bytes = b"\x89PNG fake image bytes"):
    sha = hashlib.sha256(data).hexdigest()
    src = tmp_path / "objects" / f"{sha}.png"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(data)
    return sha, src, data


def test_a_corrupt_cached_image_is_repaired_and_never_a_link(tmp_path):
    sha, src, data = _image(tmp_path)
    cache = tmp_path / "cache"
    first = ImageStore(cache).image(sha, lambda _: src)
    assert first.path.read_bytes() == data and first.path.stat().st_ino != src.stat().st_ino
    first.path.write_bytes(data[:5])  # truncated in the cache (a crash, a bad disk, a damaged link)
    again = ImageStore(cache).image(sha, lambda _: src)  # a new run
    assert again.path == first.path and again.path.read_bytes() == data


def test_damage_to_the_benchmark_file_does_not_reach_the_cache_and_is_reported(tmp_path):
    sha, src, data = _image(tmp_path)
    cached = ImageStore(tmp_path / "cache").image(sha, lambda _: src).path
    src.write_bytes(b"garbage")  # in place: a hard link would have carried this into the cache
    assert cached.read_bytes() == data
    with pytest.raises(ImageError, match="does not match its image id"):
        ImageStore(tmp_path / "cache").image(sha, lambda _: src)


def test_built_benchmark_images_are_checked_against_their_ids(tiny_copy):
    from memlens.core.config import Paths
    from memlens.core.items import BuiltBenchmark

    bench = BuiltBenchmark(Paths(tiny_copy))
    sha = next(iter(bench.images))
    path = bench.resolve_image(sha)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ImageError, match="does not match its id"):
        BuiltBenchmark(Paths(tiny_copy)).resolve_image(sha)


def test_the_object_store_rewrites_a_corrupt_object(tmp_path):
    from memlens.core.store import ObjectStore

    store = ObjectStore(tmp_path)
    sha = store.put(b"content", "png")
    store.path(sha, "png").write_bytes(b"rot")
    assert store.put(b"content", "png") == sha and store.path(sha, "png").read_bytes() == b"content"
    with pytest.raises(ImageError):
        store.path("../../etc/passwd", "png")
