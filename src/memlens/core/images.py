"""Image preparation for OpenAI-compatible chat requests.

:class:`ImageEncoder` turns an image reference into the URL that goes into an
``{"type": "image_url", "image_url": {"url": ...}}`` block:

* transport ``"base64"``: the file is opened, converted to RGB, downscaled so that its
  longest side is at most ``max_side`` (LANCZOS, aspect ratio kept, never upscaled) and
  sent as ``data:image/png;base64,...``.  This matches the official harness's
  OpenAI-compatible/vLLM path (open, ``convert("RGB")``, resize, PNG), including its
  rounding of the resized size; PNG is written with ``compress_level=1`` for speed,
  which changes the bytes but not the pixels.
* transport ``"url"``: local files become absolute ``file://`` URLs (the server must be
  able to read them, e.g. vLLM with ``--allowed-local-media-path``); no resizing.

In both modes ``http(s)://`` URLs and ``data:`` URLs are passed through unchanged.

Encoded results are kept in a thread-safe LRU cache keyed by
``(resolved path, mtime_ns, size, max_side, transport)``, bounded both by entry count
and by total bytes, so a long conversation history that is reused by many
questions is encoded once.  Concurrent requests for the same uncached image wait for a
single encoding instead of encoding it several times.

Below it, an optional :class:`EncodedImageCache` keeps encoded images on disk across processes,
content-addressed: keyed by the SHA-256 of the image file's bytes and every setting that shapes the
encoding (size limit, format, PNG level, pixel limit, encoding version, Pillow version), so every
system, length and run that sends the same image at the same size reads it instead of encoding it
again (an evaluation encodes ~30 ms of CPU per distinct image; a cache hit costs a file read and a
hash check). Entries are written atomically, verified on read (a damaged entry is dropped and
re-encoded) and evicted oldest-first beyond the cache's size limit.

Problems raise :class:`ImageError` with the path and a reason: missing files, files that
are not decodable images (or are truncated/corrupt), and images above ``max_pixels``
(a decompression-bomb guard, checked from the header before any pixel is decoded).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import os
import stat
import threading
import uuid
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

import PIL
from PIL import Image, UnidentifiedImageError

from memlens.core.errors import ImageError
from memlens.core.io import sha256_file_memo

__all__ = ["EncodedImageCache", "ImageEncoder", "ImageError", "ImageCacheInfo", "resized_size"]

Transport = Literal["base64", "url"]

_PASS_THROUGH_PREFIXES = ("http://", "https://", "data:")
_RESOLVE_MEMO_SIZE = 1 << 16
#: version of what :meth:`ImageEncoder._encode_data` produces (part of every disk-cache key)
ENCODING_VERSION = "png-rgb-lanczos-v1"


@dataclass(frozen=True)
class ImageCacheInfo:
    """Counters of an :class:`ImageEncoder` cache."""

    hits: int
    misses: int
    entries: int
    size_bytes: int
    max_entries: int
    max_size_bytes: int | None
    #: encodings read from the disk cache (:class:`EncodedImageCache`) instead of encoded
    disk_hits: int = 0
    #: images actually encoded (decode, resize, PNG, base64)
    encoded: int = 0


def resized_size(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    """Size after downscaling the longest side to ``max_side``.

    Images that already fit are left alone (no upscaling).  The arithmetic mirrors the
    official harness (``int(max_side / long_side * short_side)``) so resized images have
    exactly the same dimensions.
    """
    if not max_side or (width <= max_side and height <= max_side):
        return width, height
    if width > height:
        return max_side, min(int(max_side / width * height), max_side)
    return min(int(max_side / height * width), max_side), max_side


class EncodedImageCache:
    """Encoded request images on disk, content-addressed and shared by processes.

    An entry is the data URL of one image at one encoding, under ``<root>/<key[:2]>/<key>``, where
    the key is the SHA-256 of :data:`ENCODING_VERSION`, the Pillow version, the SHA-256 of the
    image file's bytes and the encoder settings (:meth:`key`). The file holds a header with the
    payload's length and CRC-32, then the payload: a read checks both, so a damaged or truncated
    entry is a miss (and is removed), never a wrong image. (CRC-32 catches every error burst of up
    to 32 bits and any other damage but one in 2**32, at a third of SHA-256's cost: about 0.1 ms per
    500 KB entry, paid by every process for every image it sends. Entries written with a SHA-256
    header, ``MLENC1``, are still read.) Writes go to a unique temporary file
    renamed into place (concurrent writers of one key write the same bytes; the last rename wins).
    Beyond ``max_bytes`` the least recently used entries (file mtime; a hit refreshes it) are
    removed until the cache is at 80% of the limit.
    """

    MAGIC = b"MLENC2"
    #: the header of entries written before 2026-12-04 (payload SHA-256 instead of CRC-32)
    MAGIC_SHA256 = b"MLENC1"
    #: header: magic, space, payload length (decimal), space, payload CRC-32 (8 hex digits; SHA-256
    #: for ``MLENC1``), newline
    _HEADER_MAX = 100

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = 2 << 30) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.root = Path(root)
        self.max_bytes = int(max_bytes)
        self._lock = threading.Lock()
        self._bytes: int | None = None  # written since the last scan (None: not scanned yet)
        self.hits = 0
        self.misses = 0
        self.evicted = 0

    def __repr__(self) -> str:
        return f"EncodedImageCache({str(self.root)!r}, max_bytes={self.max_bytes})"

    @staticmethod
    def key(content_sha256: str, **settings: object) -> str:
        """The entry key of an image's bytes (their SHA-256) under encoder ``settings``."""
        parts = [ENCODING_VERSION, f"pillow={PIL.__version__}", content_sha256]
        parts += [f"{k}={settings[k]!r}" for k in sorted(settings)]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or None (absent or damaged: a damaged entry is removed)."""
        p = self.path(key)
        try:
            payload, magic = self._read(p)
        except OSError:
            with self._lock:
                self.misses += 1
            return None
        if payload is None:
            with self._lock:
                self.misses += 1
            with contextlib.suppress(OSError):
                p.unlink()
            return None
        if magic != self.MAGIC:  # an older entry: written again with the current header (once)
            self._write(p, key, payload)
        with contextlib.suppress(OSError):
            os.utime(p)  # recently used: evicted last
        with self._lock:
            self.hits += 1
        return payload

    def _read(self, p: Path) -> tuple[bytes | None, bytes]:
        """The verified payload of the entry file ``p`` (None: damaged), read straight into one
        ``bytes`` (no slice copy of a multi-megabyte payload), and the header's magic."""
        fd = os.open(p, os.O_RDONLY)
        try:
            head = os.pread(fd, self._HEADER_MAX, 0)
            end = head.find(b"\n")
            fields = head[:end].split(b" ") if end > 0 else []
            if len(fields) != 3 or fields[0] not in (self.MAGIC, self.MAGIC_SHA256) or not fields[1].isdigit():
                return None, b""
            length = int(fields[1])
            payload = os.pread(fd, length + 1, end + 1)  # one byte more: a longer file is damaged too
        finally:
            os.close(fd)
        if len(payload) != length or self._check(fields[0], payload) != fields[2]:
            return None, fields[0]
        return payload, fields[0]

    @classmethod
    def _check(cls, magic: bytes, payload: bytes) -> bytes:
        """The header's check value of ``payload`` for header ``magic``."""
        if magic == cls.MAGIC_SHA256:
            return hashlib.sha256(payload).hexdigest().encode()
        return b"%08x" % zlib.crc32(payload)

    def put(self, key: str, payload: bytes) -> None:
        """Store ``payload`` under ``key`` (atomically); a failure to write is not an error (it
        only costs a later re-encoding)."""
        p = self.path(key)
        size = self._write(p, key, payload)
        if not size:
            return
        with self._lock:
            if self._bytes is None:
                self._bytes = self._scan_size()
            else:
                self._bytes += size
            if self._bytes > self.max_bytes:
                self._evict()

    def _write(self, p: Path, key: str, payload: bytes) -> int:
        """Write the entry file ``p`` atomically; its size, or 0 if it could not be written."""
        header = b"%s %d %s\n" % (self.MAGIC, len(payload), self._check(self.MAGIC, payload))
        tmp = p.with_name(f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                fh.write(header)
                fh.write(payload)
            os.replace(tmp, p)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return 0
        return len(header) + len(payload)

    def _entries(self) -> list[tuple[float, int, Path]]:
        out = []
        if not self.root.is_dir():
            return out
        for sub in os.scandir(self.root):
            if not sub.is_dir(follow_symlinks=False):
                continue
            for e in os.scandir(sub.path):
                if e.name.startswith("."):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out.append((st.st_mtime, st.st_size, Path(e.path)))
        return out

    def _scan_size(self) -> int:
        return sum(size for _, size, _ in self._entries())

    def size_bytes(self) -> int:
        """Total size of the entries on disk now (a scan)."""
        return self._scan_size()

    def _evict(self) -> None:
        """Oldest entries first until the cache holds at most 80% of ``max_bytes`` (caller holds the lock)."""
        entries = sorted(self._entries())
        total = sum(size for _, size, _ in entries)
        target = int(self.max_bytes * 0.8)
        for _, size, path in entries:
            if total <= target:
                break
            try:
                path.unlink()
            except OSError:
                continue
            total -= size
            self.evicted += 1
        self._bytes = total


class _Pending:
    """A single in-progress encoding that other threads can wait for."""

    __slots__ = ("event", "value", "error")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.value: bytes | None = None
        self.error: BaseException | None = None


class ImageEncoder:
    """Encode images for chat requests, with an LRU cache.

    Args:
        max_side: longest side after resizing, ``None`` for no resizing (base64 only).
        transport: ``"base64"`` (data URL) or ``"url"`` (``file://`` URL).
        cache_size: maximum number of cached encodings.
        cache_max_bytes: maximum total size of cached data URLs in bytes;
            ``None`` for no limit.  Default 1 GiB.
        max_pixels: refuse images with more pixels than this (default 64 megapixels);
            ``None`` disables the check (Pillow's own bomb guard still applies).
        compress_level: PNG zlib level (1 = fast).
        disk_cache: an :class:`EncodedImageCache` below the in-memory one (base64 only): an
            image missing from memory is looked up there by the hash of its bytes before it is
            encoded, and every encoding is stored there.
    """

    def __init__(
        self,
        max_side: int | None = 800,
        transport: Transport = "base64",
        cache_size: int = 2048,
        *,
        cache_max_bytes: int | None = 1 << 30,
        max_pixels: int | None = 64_000_000,
        compress_level: int = 1,
        disk_cache: EncodedImageCache | None = None,
    ) -> None:
        if transport not in ("base64", "url"):
            raise ValueError(f"transport must be 'base64' or 'url', not {transport!r}")
        if max_side is not None and max_side <= 0:
            raise ValueError("max_side must be positive or None")
        if cache_size < 0:
            raise ValueError("cache_size must be >= 0")
        self.max_side = max_side
        self.transport: Transport = transport
        self.cache_size = cache_size
        self.cache_max_bytes = cache_max_bytes
        self.max_pixels = max_pixels
        self.compress_level = compress_level
        self.disk_cache = disk_cache if transport == "base64" else None
        self._disk_hits = 0
        self._encoded = 0
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple, bytes] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._pending: dict[tuple, _Pending] = {}
        self._resolved: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"ImageEncoder(max_side={self.max_side!r}, transport={self.transport!r}, cache_size={self.cache_size})"

    # ------------------------------------------------------------------ public API
    def encode(self, path: str | os.PathLike[str]) -> str:
        """Return the request URL for ``path`` (a local path, ``file://``, ``http(s)://`` or ``data:`` URL).

        Raises :class:`ImageError` when the file is missing, not decodable or too large.
        """
        ref = os.fspath(path)
        if isinstance(ref, str) and ref.startswith(_PASS_THROUGH_PREFIXES):
            return ref
        return self.encode_bytes(ref).decode("ascii")

    def encode_bytes(self, path: str | os.PathLike[str]) -> bytes:
        """Like :meth:`encode` but returns the ASCII bytes of the URL.

        For transport ``"base64"`` this is the cached object itself (no copy), which lets
        a request body reference it directly.  ``http(s)``/``data:`` URLs are returned
        UTF-8 encoded.
        """
        return self._get(path, encode=True)  # type: ignore[return-value]

    def lookup_bytes(self, path: str | os.PathLike[str]) -> bytes | None:
        """:meth:`encode_bytes` if that needs no image encoding, else ``None``.

        Cheap (a ``stat`` and a dict look-up), so callers on an event loop can try it first
        and move only cache misses to a worker thread.  Still raises :class:`ImageError`
        for missing files.
        """
        return self._get(path, encode=False)

    def _get(self, path: str | os.PathLike[str], *, encode: bool) -> bytes | None:
        ref = os.fspath(path)
        if isinstance(ref, str) and ref.startswith(_PASS_THROUGH_PREFIXES):
            return ref.encode("utf-8")
        try:
            resolved = self._resolve(ref)
            st = os.stat(resolved)
        except FileNotFoundError:
            raise ImageError(ref, "image file not found") from None
        except OSError as exc:
            raise ImageError(ref, f"cannot access image file ({exc.strerror or exc})") from None
        if not stat.S_ISREG(st.st_mode):
            raise ImageError(ref, "not a regular file")

        key = (resolved, st.st_mtime_ns, st.st_size, self.max_side, self.transport)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                self._hits += 1
                return cached
            if self.transport == "url":  # cheap: no single-flight needed
                value = Path(resolved).as_uri().encode("ascii")
                self._misses += 1
                self._store(key, value)
                return value
            if not encode:
                return None
            pending = self._pending.get(key)
            owner = pending is None
            if owner:
                pending = self._pending[key] = _Pending()
                self._misses += 1
            else:
                self._hits += 1  # reuses an encoding in progress
        assert pending is not None
        if not owner:
            pending.event.wait()
            if pending.error is not None:
                raise pending.error
            assert pending.value is not None
            return pending.value

        try:
            value = self._load_or_encode(resolved, ref)
        except BaseException as exc:
            pending.error = exc
            with self._lock:
                self._pending.pop(key, None)
            pending.event.set()
            raise
        pending.value = value
        with self._lock:
            self._pending.pop(key, None)
            self._store(key, value)
        pending.event.set()
        return value

    def cache_info(self) -> ImageCacheInfo:
        """Current cache counters."""
        with self._lock:
            return ImageCacheInfo(
                hits=self._hits,
                misses=self._misses,
                entries=len(self._cache),
                size_bytes=self._bytes,
                max_entries=self.cache_size,
                max_size_bytes=self.cache_max_bytes,
                disk_hits=self._disk_hits,
                encoded=self._encoded,
            )

    def clear(self) -> None:
        """Drop all cached encodings (counters are kept)."""
        with self._lock:
            self._cache.clear()
            self._bytes = 0

    # ------------------------------------------------------------------ internals
    def _resolve(self, ref: str) -> str:
        """``realpath`` of a reference, memoised (it costs a few ``lstat`` calls per image).

        The memo only maps names to canonical paths; the file itself is ``stat``-ed on every
        call, so edits are always seen (only re-pointing a symlink mid-run is not).
        """
        resolved = self._resolved.get(ref)
        if resolved is None:
            local = self._local_path(ref)
            resolved = os.path.realpath(local)
            if os.path.isabs(local):  # a relative name depends on the working directory
                if len(self._resolved) >= _RESOLVE_MEMO_SIZE:
                    self._resolved.clear()
                self._resolved[ref] = resolved
        return resolved

    @staticmethod
    def _local_path(ref: str) -> str:
        if ref.startswith("file://"):
            parsed = urlparse(ref)
            return unquote(parsed.path)
        return os.path.expanduser(ref)

    def _store(self, key: tuple, value: bytes) -> None:
        if self.cache_size == 0:
            return
        if self.cache_max_bytes is not None and len(value) > self.cache_max_bytes:
            return
        self._cache[key] = value
        self._bytes += len(value)
        while len(self._cache) > self.cache_size or (
            self.cache_max_bytes is not None and self._bytes > self.cache_max_bytes
        ):
            _, old = self._cache.popitem(last=False)
            self._bytes -= len(old)

    def _settings(self) -> dict[str, object]:
        """What shapes an encoding besides the image's bytes (part of the disk-cache key)."""
        return {
            "format": "png",
            "max_side": self.max_side,
            "compress_level": self.compress_level,
            "max_pixels": self.max_pixels,
        }

    def _load_or_encode(self, resolved: str, ref: str) -> bytes:
        """The encoding of one file: from the disk cache by the hash of its bytes, else encoded
        (and stored there). The hash is memoised per process and file version
        (:func:`~memlens.core.io.sha256_file_memo`, shared with the release's own image check), so a
        cache hit reads only the entry."""
        if self.disk_cache is None:
            return self._encode_source(resolved, ref)
        try:
            digest = sha256_file_memo(resolved)
        except FileNotFoundError:
            raise ImageError(ref, "image file not found") from None
        except OSError as exc:
            raise ImageError(ref, f"cannot read image file ({exc.strerror or exc})") from None
        value = self.disk_cache.get(self.disk_cache.key(digest, **self._settings()))
        if value is not None:
            with self._lock:
                self._disk_hits += 1
            return value
        try:
            data = Path(resolved).read_bytes()
        except FileNotFoundError:
            raise ImageError(ref, "image file not found") from None
        except OSError as exc:
            raise ImageError(ref, f"cannot read image file ({exc.strerror or exc})") from None
        value = self._encode_source(io.BytesIO(data), ref)
        # keyed by the bytes encoded (the file may have changed since it was hashed)
        self.disk_cache.put(self.disk_cache.key(hashlib.sha256(data).hexdigest(), **self._settings()), value)
        return value

    def _encode_source(self, source: str | io.BytesIO, ref: str) -> bytes:
        with self._lock:
            self._encoded += 1
        try:
            with Image.open(source) as img:
                width, height = img.size
                if self.max_pixels is not None and width * height > self.max_pixels:
                    raise ImageError(
                        ref,
                        f"image has {width}x{height} = {width * height / 1e6:.1f} megapixels, "
                        f"over the limit of {self.max_pixels / 1e6:g}",
                    )
                rgb = img.convert("RGB")
            new_size = resized_size(width, height, self.max_side)
            if new_size != (width, height):
                rgb = rgb.resize(new_size, Image.Resampling.LANCZOS)
            buf = io.BytesIO()
            rgb.save(buf, format="PNG", compress_level=self.compress_level)
        except ImageError:
            raise
        except Image.DecompressionBombError as exc:
            raise ImageError(ref, f"image exceeds Pillow's decompression-bomb limit ({exc})") from None
        except UnidentifiedImageError:
            raise ImageError(ref, "not a decodable image file") from None
        except FileNotFoundError:
            raise ImageError(ref, "image file not found") from None
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            raise ImageError(ref, f"corrupt or truncated image ({exc})") from None
        return b"data:image/png;base64," + base64.b64encode(buf.getbuffer())
