"""Tests of memlens.core.images (ImageEncoder, ImageError)."""

from __future__ import annotations

import base64
import io
import os
import pickle
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from memlens.core.images import ImageEncoder, ImageError, resized_size


def _photo(path: Path, size: tuple[int, int], mode: str = "RGB", fmt: str | None = None, seed: int = 0) -> Path:
    w, h = size
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    img = Image.fromarray(arr, "RGB")
    if mode != "RGB":
        img = img.convert(mode)
    img.save(path, format=fmt)
    return path


def _decode(url: str) -> Image.Image:
    prefix = "data:image/png;base64,"
    assert url.startswith(prefix)
    img = Image.open(io.BytesIO(base64.b64decode(url[len(prefix) :])))
    assert img.format == "PNG"
    return img


def test_resize_longest_side_keeps_aspect(tmp_path):
    enc = ImageEncoder(max_side=800)
    img = _decode(enc.encode(_photo(tmp_path / "wide.jpg", (1000, 500))))
    assert img.size == (800, 400) and img.mode == "RGB"
    img = _decode(enc.encode(_photo(tmp_path / "tall.png", (300, 1200))))
    assert img.size == (200, 800)


def test_resize_matches_official_rounding():
    # official: int(max_side / long * short), never larger than max_side, no upscaling
    assert resized_size(1001, 333, 800) == (800, int(800 / 1001 * 333))
    assert resized_size(333, 1001, 800) == (int(800 / 1001 * 333), 800)
    assert resized_size(640, 480, 800) == (640, 480)
    assert resized_size(900, 900, 800) == (800, 800)
    assert resized_size(5000, 10, None) == (5000, 10)


def test_small_image_not_upscaled_and_none_keeps_size(tmp_path):
    p = _photo(tmp_path / "small.jpg", (120, 90))
    assert _decode(ImageEncoder(max_side=800).encode(p)).size == (120, 90)
    big = _photo(tmp_path / "big.jpg", (1200, 900))
    assert _decode(ImageEncoder(max_side=None).encode(big)).size == (1200, 900)


@pytest.mark.parametrize("mode", ["RGBA", "L", "P", "CMYK"])
def test_modes_converted_to_rgb(tmp_path, mode):
    fmt = "JPEG" if mode == "CMYK" else "PNG"
    p = _photo(tmp_path / f"img_{mode}.{fmt.lower()}", (64, 48), mode=mode, fmt=fmt)
    img = _decode(ImageEncoder(max_side=32).encode(p))
    assert img.mode == "RGB" and img.size == (32, 24)


def test_pixels_equal_official_pipeline(tmp_path):
    p = _photo(tmp_path / "x.jpg", (1000, 700))
    official = Image.open(p).convert("RGB").resize(resized_size(1000, 700, 800), Image.Resampling.LANCZOS)
    ours = _decode(ImageEncoder(max_side=800).encode(p)).convert("RGB")
    assert np.array_equal(np.asarray(official), np.asarray(ours))


def test_cache_hit_and_invalidation_on_change(tmp_path):
    p = _photo(tmp_path / "a.jpg", (200, 100))
    enc = ImageEncoder(max_side=100)
    assert enc.lookup_bytes(p) is None
    first = enc.encode_bytes(p)
    assert enc.encode_bytes(p) is first  # the cached object, no copy
    assert enc.lookup_bytes(str(p)) is first
    info = enc.cache_info()
    assert (info.hits, info.misses, info.entries) == (2, 1, 1)
    # same file through another spelling of its path: same cache entry
    assert enc.encode_bytes(str(tmp_path / "." / "a.jpg")) is first
    # rewrite the file: new mtime/size -> re-encoded
    _photo(p, (200, 100), seed=1)
    os.utime(p, ns=(1, 1))
    second = enc.encode_bytes(p)
    assert second != first and enc.cache_info().misses == 2


def test_cache_key_includes_max_side(tmp_path):
    p = _photo(tmp_path / "a.jpg", (400, 200))
    assert _decode(ImageEncoder(max_side=100).encode(p)).size == (100, 50)
    assert _decode(ImageEncoder(max_side=200).encode(p)).size == (200, 100)


def test_lru_eviction_by_entries_and_bytes(tmp_path):
    paths = [_photo(tmp_path / f"{i}.png", (40, 30), seed=i) for i in range(3)]
    enc = ImageEncoder(max_side=None, cache_size=2)
    for p in paths:
        enc.encode(p)
    assert enc.cache_info().entries == 2
    assert enc.lookup_bytes(paths[0]) is None  # least recently used went first
    assert enc.lookup_bytes(paths[2]) is not None
    one = len(enc.encode_bytes(paths[2]))
    small = ImageEncoder(max_side=None, cache_max_bytes=one + 10)
    small.encode(paths[0])
    small.encode(paths[1])
    info = small.cache_info()
    assert info.entries == 1 and info.size_bytes <= one + 10


def test_url_transport_and_pass_through(tmp_path, monkeypatch):
    p = _photo(tmp_path / "my pic.jpg", (50, 50))
    enc = ImageEncoder(transport="url")
    url = enc.encode(p)
    assert url == p.resolve().as_uri() and url.startswith("file:///") and "%20" in url
    monkeypatch.chdir(tmp_path)
    assert enc.encode("my pic.jpg") == url  # relative path resolved to absolute
    assert enc.encode(url) == url  # file:// input
    for remote in ("https://example.org/a.png", "http://h/b.jpg", "data:image/png;base64,AAAA"):
        assert enc.encode(remote) == remote
        assert ImageEncoder().encode(remote) == remote


def test_file_url_input_base64(tmp_path):
    p = _photo(tmp_path / "a b.jpg", (20, 10))
    enc = ImageEncoder()
    assert enc.encode(p.as_uri()) == enc.encode(p)


def test_missing_and_directory(tmp_path):
    enc = ImageEncoder()
    with pytest.raises(ImageError) as err:
        enc.encode(tmp_path / "nope.jpg")
    assert err.value.path.endswith("nope.jpg") and "not found" in err.value.reason
    with pytest.raises(ImageError, match="not found"):
        ImageEncoder(transport="url").encode(tmp_path / "nope.jpg")
    with pytest.raises(ImageError, match="not a regular file"):
        enc.encode(tmp_path)


def test_corrupt_and_truncated(tmp_path):
    junk = tmp_path / "junk.jpg"
    junk.write_bytes(os.urandom(2000))
    with pytest.raises(ImageError, match="not a decodable image"):
        ImageEncoder().encode(junk)
    good = _photo(tmp_path / "good.jpg", (300, 200))
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 3])
    with pytest.raises(ImageError, match="corrupt or truncated"):
        ImageEncoder().encode(cut)
    # a failure is not cached as a success, and it is raised again
    with pytest.raises(ImageError):
        ImageEncoder().encode(cut)


def test_pixel_limit(tmp_path):
    p = _photo(tmp_path / "big.png", (100, 100))
    with pytest.raises(ImageError, match="megapixels"):
        ImageEncoder(max_pixels=5_000).encode(p)
    assert ImageEncoder(max_pixels=10_000).encode(p).startswith("data:image/png;base64,")
    assert ImageEncoder(max_pixels=None).encode(p)


def test_concurrent_requests_encode_once(tmp_path):
    p = _photo(tmp_path / "shared.jpg", (1200, 900))
    enc = ImageEncoder()
    results: list[bytes] = []
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        results.append(enc.encode_bytes(p))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r is results[0] for r in results)
    assert enc.cache_info().misses == 1


def test_image_error_is_picklable_and_readable():
    err = pickle.loads(pickle.dumps(ImageError("/x/y.jpg", "image file not found")))
    assert err.path == "/x/y.jpg" and err.reason == "image file not found"
    assert str(err) == "image /x/y.jpg: image file not found"


def test_invalid_arguments():
    with pytest.raises(ValueError):
        ImageEncoder(transport="ftp")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ImageEncoder(max_side=0)


def test_relative_paths_follow_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _photo(tmp_path / "a" / "x.png", (10, 10), seed=1)
    _photo(tmp_path / "b" / "x.png", (12, 12), seed=2)
    enc = ImageEncoder(max_side=None)
    monkeypatch.chdir(tmp_path / "a")
    first = enc.encode("x.png")
    monkeypatch.chdir(tmp_path / "b")
    assert _decode(enc.encode("x.png")).size == (12, 12)
    assert _decode(first).size == (10, 10)


# ------------------------------------------------------------------ the persistent encoded-image cache
def test_disk_cache_serves_a_new_encoder_without_encoding(tmp_path):
    from memlens.core.images import EncodedImageCache

    p = _photo(tmp_path / "a.jpg", (1000, 500))
    first = ImageEncoder(max_side=800, disk_cache=EncodedImageCache(tmp_path / "enc"))
    url = first.encode(p)
    assert first.cache_info().encoded == 1 and first.cache_info().disk_hits == 0
    # a new process (a new encoder and cache object) reads the stored encoding: same bytes, nothing encoded
    second = ImageEncoder(max_side=800, disk_cache=EncodedImageCache(tmp_path / "enc"))
    assert second.encode(p) == url
    info = second.cache_info()
    assert info.encoded == 0 and info.disk_hits == 1
    # the key is the content: a copy of the file elsewhere, under another name, is a hit too
    copy = tmp_path / "elsewhere" / "b.jpg"
    copy.parent.mkdir()
    copy.write_bytes(p.read_bytes())
    assert second.encode(copy) == url and second.cache_info().encoded == 0


def test_disk_cache_key_follows_content_and_settings(tmp_path):
    from memlens.core.images import EncodedImageCache

    disk = EncodedImageCache(tmp_path / "enc")
    p = _photo(tmp_path / "a.png", (900, 600), fmt="PNG")
    small = ImageEncoder(max_side=100, disk_cache=disk).encode(p)
    large = ImageEncoder(max_side=400, disk_cache=disk).encode(p)
    assert _decode(small).size == (100, 66) and _decode(large).size == (400, 266)
    # the file's content changes in place: its old encoding is never served
    _photo(p, (900, 600), fmt="PNG", seed=1)
    enc = ImageEncoder(max_side=100, disk_cache=disk)
    again = enc.encode(p)
    assert again != small and enc.cache_info().encoded == 1
    # a pixel limit is part of the key: a stricter encoder still refuses the image
    with pytest.raises(ImageError, match="megapixels"):
        ImageEncoder(max_side=100, max_pixels=1000, disk_cache=disk).encode(p)


def test_disk_cache_damaged_entry_is_reencoded_and_replaced(tmp_path):
    from memlens.core.images import EncodedImageCache

    disk = EncodedImageCache(tmp_path / "enc")
    p = _photo(tmp_path / "a.jpg", (300, 200))
    url = ImageEncoder(disk_cache=disk).encode(p)
    (entry,) = [f for f in (tmp_path / "enc").rglob("*") if f.is_file()]
    raw = entry.read_bytes()
    for damaged in (raw[:-10], raw[:-10] + b"0123456789", b"garbage", b""):
        entry.write_bytes(damaged)
        enc = ImageEncoder(disk_cache=EncodedImageCache(tmp_path / "enc"))
        assert enc.encode(p) == url
        assert enc.cache_info().encoded == 1 and enc.cache_info().disk_hits == 0
        assert entry.read_bytes() == raw  # stored again, whole


def test_disk_cache_evicts_least_recently_used_beyond_its_limit(tmp_path):
    from memlens.core.images import EncodedImageCache

    paths = [_photo(tmp_path / f"{i}.png", (64, 64), fmt="PNG", seed=i) for i in range(6)]
    one = len(ImageEncoder(max_side=None).encode(paths[0]))
    disk = EncodedImageCache(tmp_path / "enc", max_bytes=int(5.5 * (one + 100)))
    enc = ImageEncoder(max_side=None, disk_cache=disk)
    for i, p in enumerate(paths[:3]):
        enc.encode(p)
        os.utime(disk.path(disk.key(_sha(p), **enc._settings())), (i, i))
    enc.encode(paths[0])  # memory hit: the disk entry's age is unchanged
    ImageEncoder(max_side=None, disk_cache=disk).encode(paths[0])  # a disk hit refreshes entry 0
    for p in paths[3:]:
        enc.encode(p)
    assert disk.size_bytes() <= disk.max_bytes and disk.evicted == 2
    kept = {f.name for f in disk.root.rglob("*") if f.is_file()}
    assert disk.key(_sha(paths[0]), **enc._settings()) in kept  # recently used: kept
    assert disk.key(_sha(paths[1]), **enc._settings()) not in kept  # the oldest: evicted


def _sha(p: Path) -> str:
    import hashlib

    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_disk_cache_concurrent_encoders_agree(tmp_path):
    from memlens.core.images import EncodedImageCache

    paths = [_photo(tmp_path / f"{i}.jpg", (400, 300), seed=i) for i in range(4)]
    results: list[list[str]] = []

    def work():
        enc = ImageEncoder(disk_cache=EncodedImageCache(tmp_path / "enc"))
        results.append([enc.encode(p) for p in paths])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r == results[0] for r in results)
    assert not [f for f in (tmp_path / "enc").rglob(".*") if f.is_file()]  # no temporary file left
    assert [_decode(u).size for u in results[0]] == [(400, 300)] * 4


def test_disk_cache_only_for_inline_images_and_missing_files_still_fail(tmp_path):
    from memlens.core.images import EncodedImageCache

    disk = EncodedImageCache(tmp_path / "enc")
    assert ImageEncoder(transport="url", disk_cache=disk).disk_cache is None
    with pytest.raises(ImageError, match="not found"):
        ImageEncoder(disk_cache=disk).encode(tmp_path / "nope.jpg")
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not an image")
    with pytest.raises(ImageError, match="not a decodable image"):
        ImageEncoder(disk_cache=disk).encode(junk)
    assert not [f for f in disk.root.rglob("*") if f.is_file()] if disk.root.exists() else True


def test_disk_cache_payload_damage_anywhere_is_detected(tmp_path):
    from memlens.core.images import EncodedImageCache

    disk = EncodedImageCache(tmp_path / "enc")
    p = _photo(tmp_path / "a.jpg", (300, 200))
    url = ImageEncoder(disk_cache=disk).encode(p)
    (entry,) = [f for f in (tmp_path / "enc").rglob("*") if f.is_file()]
    raw = entry.read_bytes()
    middle = len(raw) // 2
    flipped = raw[:middle] + bytes([raw[middle] ^ 1]) + raw[middle + 1 :]  # same length, one bit
    for damaged in (flipped, raw + b"x", raw.replace(EncodedImageCache.MAGIC, b"MLENC9", 1)):
        entry.write_bytes(damaged)
        key = entry.name
        assert EncodedImageCache(tmp_path / "enc").get(key) is None  # never served
        assert not entry.exists()  # and removed
        enc = ImageEncoder(disk_cache=EncodedImageCache(tmp_path / "enc"))
        assert enc.encode(p) == url and enc.cache_info().encoded == 1
        assert entry.read_bytes() == raw


def test_disk_cache_reads_entries_with_the_older_sha256_header(tmp_path):
    import hashlib

    from memlens.core.images import EncodedImageCache

    disk = EncodedImageCache(tmp_path / "enc")
    p = _photo(tmp_path / "a.jpg", (300, 200))
    url = ImageEncoder(disk_cache=disk).encode(p)
    (entry,) = [f for f in (tmp_path / "enc").rglob("*") if f.is_file()]
    head, payload = entry.read_bytes().split(b"\n", 1)
    assert head == b"MLENC2 %d %08x" % (len(payload), __import__("zlib").crc32(payload))
    old = b"MLENC1 %d %s\n" % (len(payload), hashlib.sha256(payload).hexdigest().encode())
    entry.write_bytes(old + payload)
    enc = ImageEncoder(disk_cache=EncodedImageCache(tmp_path / "enc"))
    assert enc.encode(p) == url and enc.cache_info().encoded == 0  # read, not encoded again
    assert entry.read_bytes().startswith(b"MLENC2 ")  # and written again with the current header
    entry.write_bytes(old + payload)
    entry.write_bytes(old + payload[:-1] + bytes([payload[-1] ^ 1]))  # damaged under the old header
    assert EncodedImageCache(tmp_path / "enc").get(entry.name) is None and not entry.exists()


def test_disk_cache_key_includes_content_size_limit_and_format():
    from memlens.core.images import EncodedImageCache

    base = {"format": "png", "max_side": 800, "compress_level": 1, "max_pixels": 64_000_000}
    key = EncodedImageCache.key("a" * 64, **base)
    assert key != EncodedImageCache.key("b" * 64, **base)
    assert key != EncodedImageCache.key("a" * 64, **{**base, "max_side": 512})
    assert key != EncodedImageCache.key("a" * 64, **{**base, "format": "jpeg"})
    assert key == EncodedImageCache.key("a" * 64, **dict(reversed(base.items())))  # order-free
    assert ImageEncoder(max_side=512)._settings() == {**base, "max_side": 512}


def test_file_hash_memo_sees_an_edit_in_place(tmp_path):
    from memlens.core.io import sha256_file, sha256_file_memo

    p = _photo(tmp_path / "a.png", (64, 64), fmt="PNG")
    first = sha256_file_memo(p)
    assert first == sha256_file(p) == sha256_file_memo(p)
    _photo(p, (64, 64), fmt="PNG", seed=3)
    assert sha256_file_memo(p) == sha256_file(p) != first


def test_disk_cache_hit_sends_the_bytes_of_a_fresh_encoding(tmp_path):
    """A request body built from disk-cache hits is byte-identical to one built by encoding."""
    from memlens.core.http import OpenAICompatibleClient, OpenAICompatibleConfig
    from memlens.core.images import EncodedImageCache

    paths = [_photo(tmp_path / f"{i}.jpg", (900, 500), seed=i) for i in range(3)]
    blocks = [{"type": "image_url", "image_url": {"url": str(q)}} for q in paths]
    messages = [{"role": "user", "content": [*blocks, {"type": "text", "text": "what is shown?"}]}]
    cfg = OpenAICompatibleConfig(base_url="http://127.0.0.1:9/v1", model="m")
    fresh = OpenAICompatibleClient(cfg, image_encoder=ImageEncoder()).build_body(messages).to_bytes()
    ImageEncoder(disk_cache=EncodedImageCache(tmp_path / "enc")).encode(paths[0])  # warm the disk cache
    warm = ImageEncoder(disk_cache=EncodedImageCache(tmp_path / "enc"))
    assert OpenAICompatibleClient(cfg, image_encoder=warm).build_body(messages).to_bytes() == fresh
    assert warm.cache_info().disk_hits == 1 and warm.cache_info().encoded == 2
