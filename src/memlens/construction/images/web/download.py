"""A safe HTTP(S) downloader for web images and search-result pages.

Every fetch is bounded and checked before anything is kept:

- only ``http``/``https`` URLs, also for every redirect (a redirect to ``file://``, ``ftp://`` ... or
  a loop ends the fetch); redirects are followed by hand, at most ``max_redirects``;
- optionally no private, loopback or link-local addresses (``allow_private=False``, the default for
  a real crawl: a search result cannot make the crawler read an internal service);
- a byte cap: ``Content-Length`` above it is refused before the body is read, and the body is
  streamed and cut at the cap, so a worker never holds more than ``max_bytes`` (+ one chunk);
- a total deadline per fetch besides the connect/read timeouts (a server that trickles bytes is cut);
- retries with exponential backoff on connection errors, timeouts, 429 and 5xx (not on other 4xx);
- a rate limit per host (requests per second, shared by all threads);
- images: the ``Content-Type`` must be an image type and the magic bytes must be JPEG, PNG, GIF or
  WebP; Pillow ``verify()`` must pass; the pixel count read from the header must be at most
  ``max_pixels`` before anything is decoded (decompression-bomb guard), then the image is decoded in
  full (truncated files fail) and its sides checked against ``min_side``/``max_side``. GIF and WebP
  are re-encoded as PNG (the pipeline stores JPEG and PNG).

Memory: a fetch holds at most ``max_bytes`` (+ one 64 KiB chunk) of body, and at most
``decode_slots`` images are decoded at once (up to 4 bytes per pixel, ``max_pixels`` each), so with
``n`` threads the peak is about ``n * max_bytes + decode_slots * 4 * max_pixels``
(``benchmarks/bench_download.py`` measures it).

The result of a fetch is a :class:`Fetched` (ok with the bytes, or the reason it was refused); it
never raises for a bad URL or a bad server, so one bad candidate never ends a crawl.
"""

from __future__ import annotations

import inspect
import io
import ipaddress
import socket
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from PIL import Image

ALLOWED_SCHEMES = ("http", "https")
IMAGE_TYPES = ("image/jpeg", "image/jpg", "image/pjpeg", "image/png", "image/gif", "image/webp")
PAGE_TYPES = ("text/html", "application/json", "text/plain", "text/javascript", "application/javascript")
CHUNK = 64 * 1024
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def sniff(data: bytes) -> str | None:
    """The image format the magic bytes announce (``jpeg``, ``png``, ``gif``, ``webp``) or None."""
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


@dataclass
class Fetched:
    """The outcome of one fetch: ``ok`` with ``data``, or ``reason`` (why it was refused)."""

    url: str
    ok: bool
    reason: str = "ok"
    data: bytes = b""
    final_url: str = ""
    content_type: str = ""
    status: int | None = None
    attempts: int = 0
    redirects: list[str] = field(default_factory=list)
    ext: str = ""  # images: jpg | png
    width: int = 0
    height: int = 0


class RateLimiter:
    """At most ``per_s`` request starts per second per host (0 = no limit), across threads."""

    def __init__(self, per_s: float):
        self.interval = 1.0 / per_s if per_s > 0 else 0.0
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, host: str) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            at = max(now, self._next.get(host, now))
            self._next[host] = at + self.interval
        if at > now:
            time.sleep(at - now)


class _Refused(Exception):
    """A fetch refused for a reason that retrying cannot change."""


class _Transient(Exception):
    """A fetch that failed for a reason a retry may fix."""


def _is_public(host: str, port: int) -> bool:
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError:
        return True  # the connection attempt reports the name error itself
    for info in infos:
        addr = ipaddress.ip_address(info[4][0])
        if addr.is_private or addr.is_loopback or addr.is_link_local or addr.is_reserved or addr.is_multicast:
            return False
    return True


class SafeDownloader:
    """Bounded, checked HTTP(S) fetches (see the module docstring); thread-safe."""

    @classmethod
    def options_of(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of this class among ``values`` (an image-source config)."""
        names = [n for n, p in inspect.signature(cls.__init__).parameters.items() if p.kind is p.KEYWORD_ONLY]
        return {n: values[n] for n in names if n in values}

    def __init__(
        self,
        *,
        max_bytes: int = 10_000_000,
        max_page_bytes: int = 5_000_000,
        max_pixels: int = 16_000_000,
        min_side: int = 64,
        max_side: int = 8192,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 10.0,
        total_timeout_s: float = 30.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        rate_per_host: float = 0.0,
        max_redirects: int = 5,
        allow_private: bool = False,
        user_agent: str = "memlens-crawler/1 (+https://github.com/memlens)",
        decode_slots: int = 2,
    ):
        import requests
        import urllib3

        self._requests = requests
        self._urllib3_error = urllib3.exceptions.HTTPError
        self.max_bytes, self.max_page_bytes = int(max_bytes), int(max_page_bytes)
        self.max_pixels, self.min_side, self.max_side = int(max_pixels), int(min_side), int(max_side)
        self.timeout = (float(connect_timeout_s), float(read_timeout_s))
        self.total_timeout_s = float(total_timeout_s)
        self.retries, self.backoff_s = int(retries), float(backoff_s)
        self.max_redirects = int(max_redirects)
        self.allow_private = bool(allow_private)
        self.user_agent = user_agent
        self.limiter = RateLimiter(float(rate_per_host))
        self._local = threading.local()
        self.requests_made = 0  # HTTP requests sent (every attempt and redirect hop)
        # decoding holds up to 4 bytes per pixel: at most ``decode_slots`` images are decoded at once
        self._decode = threading.BoundedSemaphore(max(1, int(decode_slots)))
        self._count_lock = threading.Lock()

    # ------------------------------------------------------------------ plumbing
    def _session(self):
        s = getattr(self._local, "session", None)
        if s is None:
            s = self._requests.Session()
            s.headers["User-Agent"] = self.user_agent
            s.trust_env = False  # no proxies or .netrc from the environment
            self._local.session = s
        return s

    def _check_url(self, url: str) -> tuple[str, int]:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ALLOWED_SCHEMES:
            raise _Refused(f"scheme {parts.scheme or '(none)'!r} is not http(s)")
        if not parts.hostname:
            raise _Refused("URL has no host")
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        if not self.allow_private and not _is_public(parts.hostname, port):
            raise _Refused(f"host {parts.hostname} is a private/loopback address (allow_private is off)")
        return parts.hostname, port

    def _get_once(self, url: str, cap: int, types: tuple[str, ...], out: Fetched) -> bytes:
        """One GET with redirects followed by hand; the body, at most ``cap`` bytes."""
        deadline = time.monotonic() + self.total_timeout_s
        seen = {url}
        current = url
        for _hop in range(self.max_redirects + 1):
            host, _ = self._check_url(current)
            self.limiter.wait(host)
            with self._count_lock:
                self.requests_made += 1
            try:
                resp = self._session().get(current, timeout=self.timeout, allow_redirects=False, stream=True)
            except self._requests.exceptions.InvalidSchema as exc:
                raise _Refused(f"invalid URL: {exc}") from None
            except self._requests.exceptions.RequestException as exc:
                raise _Transient(f"{type(exc).__name__}: {exc}") from None
            with resp:
                out.status = resp.status_code
                if resp.is_redirect or resp.status_code in (301, 302, 303, 307, 308):
                    loc = resp.headers.get("Location")
                    if not loc:
                        raise _Refused(f"redirect {resp.status_code} without a Location")
                    nxt = urljoin(current, loc)
                    if urlsplit(nxt).scheme.lower() not in ALLOWED_SCHEMES:
                        raise _Refused(f"redirect to a non-http(s) URL: {nxt[:200]}")
                    if nxt in seen:
                        raise _Refused(f"redirect loop at {nxt[:200]}")
                    seen.add(nxt)
                    out.redirects.append(nxt)
                    current = nxt
                    continue
                if resp.status_code in RETRY_STATUS:
                    raise _Transient(f"HTTP {resp.status_code}")
                if resp.status_code != 200:
                    raise _Refused(f"HTTP {resp.status_code}")
                ctype = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
                out.content_type = ctype
                if types and ctype not in types:
                    raise _Refused(f"content type {ctype or '(none)'!r} is not one of {', '.join(types)}")
                length = resp.headers.get("Content-Length")
                if length and length.isdigit() and int(length) > cap:
                    raise _Refused(f"too large: Content-Length {length} > {cap} bytes")
                buf = bytearray()
                try:
                    # read1: what has arrived (up to CHUNK), so a trickling server meets the deadline
                    while chunk := resp.raw.read1(CHUNK, decode_content=True):
                        buf += chunk
                        if len(buf) > cap:
                            raise _Refused(f"too large: more than {cap} bytes")
                        if time.monotonic() > deadline:
                            raise _Transient(f"too slow: not done within {self.total_timeout_s:g} s")
                except (self._requests.exceptions.RequestException, self._urllib3_error, OSError, ValueError) as exc:
                    raise _Transient(f"{type(exc).__name__}: {exc}") from None
                out.final_url = current
                return bytes(buf)
        raise _Refused(f"more than {self.max_redirects} redirects")

    def _get(self, url: str, cap: int, types: tuple[str, ...]) -> tuple[Fetched, bytes | None]:
        out = Fetched(url=url, ok=False)
        for attempt in range(self.retries + 1):
            out.attempts = attempt + 1
            out.redirects = []
            try:
                return out, self._get_once(url, cap, types, out)
            except _Refused as exc:
                out.reason = str(exc)
                return out, None
            except _Transient as exc:
                out.reason = str(exc)
                if attempt < self.retries:
                    time.sleep(self.backoff_s * (2**attempt))
        out.reason = f"{out.reason} (after {out.attempts} attempts)"
        return out, None

    # ------------------------------------------------------------------ public
    def fetch_page(self, url: str) -> Fetched:
        """A search-result page (HTML/JSON), at most ``max_page_bytes``."""
        out, body = self._get(url, self.max_page_bytes, PAGE_TYPES)
        if body is not None:
            out.ok, out.reason, out.data = True, "ok", body
        return out

    def fetch_image(self, url: str) -> Fetched:
        """An image, checked (type, magic bytes, Pillow verify, pixel cap, full decode, sides)."""
        out, body = self._get(url, self.max_bytes, IMAGE_TYPES)
        if body is None:
            return out
        try:
            with self._decode:
                data, ext, w, h = self.check_image(body)
        except _Refused as exc:
            out.reason = str(exc)
            return out
        out.ok, out.reason, out.data, out.ext, out.width, out.height = True, "ok", data, ext, w, h
        return out

    def check_image(self, body: bytes) -> tuple[bytes, str, int, int]:
        """(bytes to store, ext, width, height) of a downloaded image, or :class:`_Refused`."""
        kind = sniff(body)
        if kind is None:
            raise _Refused("not an image: the bytes are no JPEG, PNG, GIF or WebP")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(body)) as im:
                    im.verify()
                with Image.open(io.BytesIO(body)) as im:
                    w, h = im.size
                    if w * h > self.max_pixels:
                        raise _Refused(f"too many pixels: {w}x{h} > {self.max_pixels} (decompression bomb guard)")
                    im.load()
                    if max(w, h) > self.max_side or min(w, h) < self.min_side:
                        raise _Refused(f"size {w}x{h} outside [{self.min_side}, {self.max_side}]")
                    if kind in ("jpeg", "png"):
                        return body, "jpg" if kind == "jpeg" else "png", w, h
                    buf = io.BytesIO()
                    frame = im.convert("RGBA" if "A" in im.getbands() or "transparency" in im.info else "RGB")
                    frame.save(buf, format="PNG")
                    return buf.getvalue(), "png", w, h
        except _Refused:
            raise
        except (Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
            raise _Refused(f"decompression bomb: {exc}") from None
        except (OSError, SyntaxError, ValueError) as exc:
            raise _Refused(f"does not decode: {exc}") from None


__all__ = ["Fetched", "RateLimiter", "SafeDownloader", "sniff"]
