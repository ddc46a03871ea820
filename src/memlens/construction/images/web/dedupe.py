"""Global dedupe of web images: by normalised URL, by content hash and by perceptual hash.

One :class:`Deduper` lives for a whole crawl: an image is taken only if its URL, its bytes and
its 256-bit pHash (within ``max_distance``) were not taken before, whatever query found it.
"""

from __future__ import annotations

import io
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from PIL import Image

#: query parameters that only track the visitor and never change the image
TRACKING_PARAMS = frozenset({"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "fbclid", "gclid"})


def normalize_url(url: str) -> str:
    """Scheme and host lower-cased, default port and fragment dropped, tracking parameters removed,
    the remaining query sorted: two spellings of one address compare equal."""
    p = urlsplit(url.strip())
    scheme = p.scheme.lower()
    host = (p.hostname or "").lower()
    port = p.port
    if port and not ((scheme == "http" and port == 80) or (scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    query = urlencode(sorted((k, v) for k, v in parse_qsl(p.query, keep_blank_values=True) if k not in TRACKING_PARAMS))
    return urlunsplit((scheme, host, p.path or "/", query, ""))


def phash_of(data: bytes):
    """The 256-bit perceptual hash (``imagehash.phash``, hash_size 16, as the filter stage uses)."""
    import imagehash

    with Image.open(io.BytesIO(data)) as im:
        return imagehash.phash(im.convert("RGB"), hash_size=16)


class Deduper:
    """What a crawl has taken so far; :meth:`why_not` says why a candidate would be a duplicate."""

    def __init__(self, max_distance: int = 12):
        self.max_distance = int(max_distance)
        self.urls: dict[str, str] = {}
        self.contents: dict[str, str] = {}
        self.hashes: list[tuple[object, str]] = []

    def why_not(self, url: str, sha: str, phash) -> str | None:
        nu = normalize_url(url)
        if nu in self.urls:
            return f"duplicate URL (taken for {self.urls[nu]})"
        if sha in self.contents:
            return f"duplicate content (taken for {self.contents[sha]})"
        for other, who in self.hashes:
            if phash - other <= self.max_distance:
                return f"near-duplicate (pHash distance {int(phash - other)} to the image taken for {who})"
        return None

    def take(self, url: str, sha: str, phash, who: str) -> None:
        self.urls[normalize_url(url)] = who
        self.contents[sha] = who
        self.hashes.append((phash, who))


__all__ = ["Deduper", "normalize_url", "phash_of"]
