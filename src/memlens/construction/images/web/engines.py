"""Search engines through icrawler's built-in feeders and parsers, without its thread machinery.

icrawler's crawlers are a feeder (builds result-page URLs for a keyword), a parser (turns a
result page into image URLs) and a downloader. MemLens uses the first two as they are and fetches
every page and image itself with :class:`~memlens.construction.images.web.download.SafeDownloader`
(bounded, checked, cached), synchronously and in a fixed order, so a crawl is reproducible.

``base_url`` replaces the scheme and host of the engine's page URLs (a mirror, a proxy, or a local
test server); the path and query the feeder builds are kept.
"""

from __future__ import annotations

import html
import json
import queue
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from memlens.core.errors import ConfigError

#: engine -> (icrawler module, feeder class, parser class)
ENGINES = {
    "bing": ("icrawler.builtin.bing", "BingFeeder", "BingParser"),
    "baidu": ("icrawler.builtin.baidu", "BaiduFeeder", "BaiduParser"),
    "google": ("icrawler.builtin.google", "GoogleFeeder", "GoogleParser"),
    "flickr": ("icrawler.builtin.flickr", "FlickrFeeder", "FlickrParser"),
}


@dataclass
class Hit:
    """One image URL an engine returned, with what the result page said about it."""

    url: str
    page: str | None = None  # the page the image is on, when the engine says
    title: str | None = None
    license: str | None = None
    result_page: str = ""  # the search-result page it came from


class PageResponse:
    """What icrawler's parsers read from a ``requests`` response: ``content``, ``text``, ``url``."""

    def __init__(self, content: bytes, url: str, status_code: int = 200):
        self.content, self.url, self.status_code = content, url, status_code

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.content.decode("utf-8", "replace"))


class PageSession:
    """The ``session`` icrawler's parsers call (Flickr asks for image sizes): every GET goes through
    ``get_page`` (safe, cached) with the base URL rewritten."""

    def __init__(self, get_page: Callable[[str], bytes], rewrite: Callable[[str], str]):
        self._get, self._rewrite = get_page, rewrite
        self.headers: dict = {}

    def get(self, url: str, **_) -> PageResponse:
        u = self._rewrite(url)
        return PageResponse(self._get(u), u)


def rewrite_base(url: str, base_url: str | None) -> str:
    if not base_url:
        return url
    b, p = urlsplit(base_url), urlsplit(url)
    path = b.path.rstrip("/") + p.path
    return urlunsplit((b.scheme, b.netloc, path, p.query, ""))


def _classes(engine: str):
    if engine not in ENGINES:
        raise ConfigError(f"images.engine {engine!r} is not known (known: {', '.join(ENGINES)})")
    import importlib

    mod_name, feeder, parser = ENGINES[engine]
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:  # pragma: no cover - icrawler is part of the crawl extra
        raise ConfigError(f"images=icrawler needs icrawler (pip install memlens[crawl]): {exc}") from None
    return getattr(mod, feeder), getattr(mod, parser)


def page_urls(engine: str, keyword: str, max_num: int, options: dict, api_key: str | None = None) -> list[str]:
    """The result-page URLs icrawler's feeder builds for ``keyword`` (in its order)."""
    from icrawler.utils import Signal

    feeder_cls, _ = _classes(engine)
    sig = Signal()
    sig.set(feeder_exited=False, parser_exited=False, reach_max_num=False)
    feeder = feeder_cls(1, sig, None)
    feeder.out_queue = queue.Queue()
    opts = {k: v for k, v in options.items() if k in ("filters", "language")}
    if engine == "flickr":
        if not api_key:
            raise ConfigError("images.engine=flickr needs an API key: set the variable named by images.api_key_env")
        extra = {k: v for k, v in options.items() if k not in ("filters", "language", "size_preference")}
        per_page = int(extra.get("per_page", 100))
        feeder.feed(apikey=api_key, max_num=max_num, text=keyword, **extra)
        urls = []
        while not feeder.out_queue.empty():
            urls.append(feeder.out_queue.get())
        return urls[: max(1, -(-max_num // per_page))]
    if engine == "google":
        feeder.feed(keyword=keyword, offset=0, max_num=max_num, **opts)
    else:
        feeder.feed(keyword=keyword, offset=0, max_num=max_num, filters=opts.get("filters"))
    urls = []
    while not feeder.out_queue.empty():
        urls.append(feeder.out_queue.get())
    return urls


def _bing_hits(body: bytes, result_page: str) -> list[Hit]:
    """Bing's result tiles: the ``m`` attribute of ``div.imgpt > a`` is JSON with the image URL
    (``murl``), its page (``purl``) and title (``t``). icrawler's BingParser keeps only ``.jpg``
    image URLs and drops the page; this reads the same attribute completely."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body.decode("utf-8", "ignore"), "lxml")
    out = []
    for div in soup.find_all("div", class_="imgpt"):
        a = div.find("a")
        if a is None or not a.get("m"):
            continue
        try:
            m = json.loads(html.unescape(a["m"]))
        except ValueError:
            continue
        if isinstance(m, dict) and isinstance(m.get("murl"), str):
            out.append(Hit(m["murl"], m.get("purl"), m.get("t"), None, result_page))
    return out


def parse_page(
    engine: str,
    body: bytes,
    result_page: str,
    session: PageSession | None = None,
    options: dict | None = None,
    api_key: str | None = None,
) -> list[Hit]:
    """Image URLs on one result page, parsed by icrawler's parser for ``engine``."""
    options = options or {}
    if engine == "bing":
        return _bing_hits(body, result_page)
    from icrawler.utils import Signal

    _, parser_cls = _classes(engine)
    parser = parser_cls(1, Signal(), session)
    resp = PageResponse(body, result_page)
    kwargs = {}
    if engine == "flickr":
        kwargs = {"apikey": api_key, "size_preference": options.get("size_preference") or ["large", "medium"]}
    try:
        tasks = list(parser.parse(resp, **kwargs) or [])
    except (ValueError, KeyError, TypeError, AttributeError):
        return []  # not a result page of this engine: no hits (recorded by the caller)
    out = []
    for t in tasks:
        if not isinstance(t, dict) or not isinstance(t.get("file_url"), str):
            continue
        meta = t.get("meta") if isinstance(t.get("meta"), dict) else {}
        lic = meta.get("license")
        page = None
        if engine == "flickr" and meta.get("owner") and meta.get("id"):
            page = f"https://www.flickr.com/photos/{meta['owner']}/{meta['id']}"
        out.append(
            Hit(t["file_url"], page, meta.get("title"), f"flickr:{lic}" if lic is not None else None, result_page)
        )
    return out


__all__ = ["ENGINES", "Hit", "PageResponse", "PageSession", "page_urls", "parse_page", "rewrite_base"]
