"""Image source ``icrawler``: web images per ontology topic and subtopic.

Modes:

- ``engine``: one search per query through icrawler's built-in engine feeders and parsers
  (``engine: bing | baidu | google | flickr``, see :mod:`memlens.construction.images.web.engines`);
- ``urls``: a URL list (``url_list``): a text file with one URL per line, or a JSONL file with
  ``{"url", "query"?, "family"?, "topic_id"?, "page"?, "license"?, "title"?}`` per line; an entry
  with ``family``/``topic_id``/``query`` serves only requests that match them.

Queries come from ``query_template`` (fields ``topic``, ``subtopic``, ``family``, ``track``; the
plan's subtopic) for evidence images and ``haystack_query_template`` (default ``{topic} {family}``:
haystack requests of one topic and family share a search; null = ``query_template`` with a subtopic
drawn from (seed, item)) for haystack images. Every page and image goes through :class:`SafeDownloader` and is cached by URL in
``<Paths.cache>/web`` (:class:`CandidateCache`), so a re-run sends no request. Candidates are taken in
the engine's (or the list's) order after a global dedupe by URL, content and pHash
(:class:`Deduper`); ``candidates_per_request`` of them are kept per request and the filter stage keeps
the best-scoring one that passes.

Web images have no exact ground truth: ``truth`` holds their provenance (query, url, page, engine,
fetch time, licence hint). The question-type modules derive answers from exact ground truth only,
so by default only the haystack pool comes from the web (``web_roles: [haystack]``) and evidence
images are rendered by the synthetic source (``photo_effect_rate``) with exact truth. With
``web_roles: [evidence, haystack]`` evidence images come from the web too; the template generator then
drops their plans (no exact truth to derive an answer from) and ``generate`` stops with "not enough
valid plans", which is what a generator that reads images (an LLM/VLM writer) is for.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from tqdm import tqdm

from memlens.construction.images.sources import ImageRequest, SourceSettings, SyntheticSource
from memlens.construction.images.web.cache import CandidateCache
from memlens.construction.images.web.dedupe import Deduper, normalize_url
from memlens.construction.images.web.download import Fetched, SafeDownloader
from memlens.construction.images.web.engines import Hit, PageSession, page_urls, parse_page, rewrite_base
from memlens.core.errors import ConfigError, ImageError
from memlens.core.io import atomic_write_bytes, canonical_bytes, iter_jsonl
from memlens.core.registry import component
from memlens.core.settings import (
    Fraction,
    NonNegFloat,
    NonNegInt,
    PositiveFloat,
    PositiveInt,
    configured,
    reject_api_key,
)
from memlens.core.store import derive_rng

log = logging.getLogger(__name__)

#: what a crawl result is, per request: [(bytes, ext, truth, source name)]
Candidate = tuple[bytes, str, dict, str]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class IcrawlerSourceSettings(SourceSettings):
    """``images`` with ``_target_: memlens.construction.images.web.icrawler_source.IcrawlerSource`` (web images
    through icrawler's engines or a URL list, a safe downloader and a URL-keyed cache; see
    ``conf/images/icrawler.yaml``)."""

    name: str = "icrawler"
    mode: Literal["engine", "urls"] = "engine"
    engine: Literal["bing", "baidu", "google", "flickr"] = "bing"
    engine_base_url: str | None = None  # replaces scheme+host of the engine's page URLs (mirror, local server)
    engine_options: dict[str, Any] | None = None  # filters / language (icrawler feeders), flickr search keys
    api_key_env: str | None = None  # NAME of the variable holding the engine's API key (flickr)
    url_list: str | None = None  # mode=urls: a .txt (one URL a line) or .jsonl file
    query_template: str = "{subtopic} {family}"
    haystack_query_template: str | None = "{topic} {family}"  # null: query_template
    family_words: dict[str, str] | None = None
    web_roles: list[Literal["evidence", "haystack"]] | None = None  # null: [haystack]
    candidates_per_request: PositiveInt = 1
    overfetch: Annotated[float, Field(ge=1)] = 2.0
    on_shortage: Literal["error", "synthetic"] = "error"
    photo_effect_rate: Fraction = 0.5  # the synthetic renderer of the images the web does not serve
    download_workers: PositiveInt = 16
    max_bytes: PositiveInt = 10_000_000
    max_page_bytes: PositiveInt = 5_000_000
    max_pixels: PositiveInt = 16_000_000
    min_side: PositiveInt = 64
    max_side: PositiveInt = 8192
    connect_timeout_s: PositiveFloat = 5.0
    read_timeout_s: PositiveFloat = 10.0
    total_timeout_s: PositiveFloat = 30.0
    retries: NonNegInt = 2
    backoff_s: NonNegFloat = 0.5
    rate_per_host: NonNegFloat = 2.0  # requests per second per host; 0 = no limit
    max_redirects: NonNegInt = 5
    allow_private: bool = False  # loopback/private hosts (a local mirror or test server)
    retry_failed: bool = False  # ask again for URLs whose earlier fetch failed
    phash_max_distance: NonNegInt = 12
    user_agent: str = "memlens-crawler/1"

    @model_validator(mode="before")
    @classmethod
    def _no_api_key(cls, data: Any) -> Any:
        return reject_api_key("images", data)

    @model_validator(mode="after")
    def _mode(self) -> IcrawlerSourceSettings:
        if self.mode == "urls" and not self.url_list:
            raise ValueError("images.mode=urls needs images.url_list (a file of image URLs)")
        return self


@configured
@component("image_source", "icrawler")
class IcrawlerSource:
    """See the module docstring. ``fetch_all`` is the crawl stage's entry point (the whole crawl
    at once: searches, downloads and dedupe need to see every request)."""

    name = "icrawler"
    Config = IcrawlerSourceSettings

    def __init__(
        self,
        *,
        name: str,
        mode: str,
        engine: str,
        engine_base_url: str | None,
        engine_options: dict | None,
        api_key_env: str | None,
        url_list: str | None,
        query_template: str,
        haystack_query_template: str | None,
        family_words: dict | None,
        web_roles: list | None,
        candidates_per_request: int,
        overfetch: float,
        on_shortage: str,
        photo_effect_rate: float,
        download_workers: int,
        retry_failed: bool,
        phash_max_distance: int,
        **options,
    ):
        """The downloader's options (``max_bytes``, timeouts, ``retries``, ``rate_per_host`` ...) are
        :class:`SafeDownloader`'s, with the crawler's defaults of the schema (2 request starts per
        second per host); other keys of the image-source config are not this source's and are left alone."""
        if mode not in ("engine", "urls"):
            raise ConfigError(f"images.mode {mode!r}: expected engine or urls")
        if mode == "urls" and not url_list:
            raise ConfigError("images.mode=urls needs images.url_list (a file of image URLs)")
        if on_shortage not in ("error", "synthetic"):
            raise ConfigError(f"images.on_shortage {on_shortage!r}: expected error or synthetic")
        roles = list(web_roles if web_roles is not None else ["haystack"])
        if not set(roles) <= {"evidence", "haystack"}:
            raise ConfigError(f"images.web_roles {roles}: expected evidence and/or haystack")
        self.mode, self.engine, self.base_url = mode, engine, engine_base_url
        self.engine_options = dict(engine_options or {})
        self.api_key_env, self.url_list = api_key_env, url_list
        self.query_template = query_template
        self.haystack_query_template = haystack_query_template
        self.family_words = dict(family_words or {})
        self.web_roles = roles
        self.k = max(1, int(candidates_per_request))
        self.overfetch = max(1.0, float(overfetch))
        self.on_shortage = on_shortage
        self.workers = max(1, int(download_workers))
        self.retry_failed = bool(retry_failed)
        self.phash_max_distance = int(phash_max_distance)
        self.synthetic = SyntheticSource(photo_effect_rate=photo_effect_rate)
        self.dl = SafeDownloader(**SafeDownloader.options_of(options))
        #: what the last ``fetch_all`` did (requests sent, cache hits, refusals by reason)
        self.stats: dict = {}

    # ------------------------------------------------------------------ protocol
    def families(self) -> list[str]:
        return self.synthetic.families()

    #: the source name of the images this source renders instead of fetching
    rendered_name = "synthetic"

    def serves(self, request: dict) -> bool:
        """Whether the web serves this request (else :meth:`fetch` renders it)."""
        return request["role"] in self.web_roles

    def fetch(self, request: ImageRequest, rng: random.Random) -> tuple[bytes, str, dict]:
        """Single requests are rendered (the web needs the whole crawl at once: :meth:`fetch_all`)."""
        if request.role in self.web_roles:
            raise ImageError(request.family, "the icrawler source fetches web images through fetch_all only")
        return self.synthetic.fetch(request, rng)

    # ------------------------------------------------------------------ queries
    def words(self, family: str) -> str:
        return str(self.family_words.get(family, family.replace("_", " ")))

    def query_for(self, job: dict) -> str:
        """The search query of a job: ``query_template`` for evidence images (the plan's subtopic),
        ``haystack_query_template`` (default: topic-level, so many haystack requests share one search
        and its result pages) for haystack images; a haystack ``{subtopic}`` is drawn from (seed, item)."""
        topic = job["topic"]
        sub = job.get("subtopic")
        if not sub:
            subs = list(topic.subtopics) or [topic.title]
            sub = subs[derive_rng(*job["key"], "subtopic").randrange(len(subs))]
        fields = {"topic": topic.title, "subtopic": sub, "family": self.words(job["request"]["family"])}
        fields["track"] = topic.track
        template = self.query_template
        if job["request"].get("role") == "haystack" and self.haystack_query_template:
            template = self.haystack_query_template
        try:
            q = template.format(**fields)
        except (KeyError, IndexError) as exc:
            raise ConfigError(
                f"images query template {template!r}: unknown field {exc} (known: {', '.join(fields)})"
            ) from None
        return " ".join(q.split())

    # ------------------------------------------------------------------ fetching (cached)
    def _page(self, cache: CandidateCache, url: str) -> bytes:
        return self._pages(cache, [url])[url]

    @staticmethod
    def _record(f: Fetched) -> dict:
        return {
            "url": f.url,
            "ok": f.ok,
            "reason": f.reason,
            "status": f.status,
            "content_type": f.content_type,
            "final_url": f.final_url or None,
            "redirects": f.redirects,
            "ext": f.ext,
            "width": f.width,
            "height": f.height,
            "fetched_at": _now(),
        }

    def _refused(self, reason: str) -> None:
        key = reason.split(":")[0].split(" (")[0][:60]
        rej = self.stats.setdefault("refused", {})
        rej[key] = rej.get(key, 0) + 1

    def _images(self, cache: CandidateCache, urls: list[str]) -> dict[str, dict]:
        """Fetch outcome per URL (cached ones first, the rest in ``download_workers`` threads); the
        cache is written from this thread only."""
        from memlens.construction.images.web.dedupe import phash_of

        out: dict[str, dict] = {}
        todo = []
        for u in urls:
            rec = cache.get("image", u)
            if rec is not None and (rec["ok"] or not self.retry_failed):
                out[u] = rec
            else:
                todo.append(u)
        self.stats["cache_hits"] = self.stats.get("cache_hits", 0) + len(out)
        self.stats["image_requests"] = self.stats.get("image_requests", 0) + len(todo)
        if todo:

            def fetch_hashed(url: str) -> tuple[Fetched, str]:
                f = self.dl.fetch_image(url)
                return f, str(phash_of(f.data)) if f.ok else ""

            for f, ph in tqdm(
                self.fetch_bounded(todo, fetch_hashed),
                total=len(todo),
                desc="download",
                unit="img",
                leave=False,
                mininterval=0.5,
            ):
                rec = self._record(f)
                if f.ok:
                    rec["phash"] = ph
                out[f.url] = cache.put("image", f.url, rec, f.data if f.ok else None)
        return out

    def fetch_bounded(self, urls: list[str], fetch=None) -> Iterator:
        """``fetch(url)`` (default: ``fetch_image``) of each URL in ``download_workers`` threads, in order, with at most
        ``download_workers`` fetches in flight or waiting to be consumed (memory stays bounded by
        ``download_workers * max_bytes`` however slow the consumer is)."""
        window: deque = deque()
        with ThreadPoolExecutor(self.workers) as pool:
            for u in urls:
                if len(window) >= self.workers:
                    yield window.popleft().result()
                window.append(pool.submit(fetch or self.dl.fetch_image, u))
            while window:
                yield window.popleft().result()

    # ------------------------------------------------------------------ candidates per query
    def _pages(self, cache: CandidateCache, urls: list[str]) -> dict[str, bytes]:
        """Bodies of result pages (cached ones first, the rest fetched in threads; b"" = refused)."""
        out: dict[str, bytes] = {}
        todo = []
        for u in dict.fromkeys(urls):
            rec = cache.get("page", u)
            if rec is None or (not rec["ok"] and self.retry_failed):
                todo.append(u)
            else:
                out[u] = cache.read(rec) if rec["ok"] else b""
                if not rec["ok"]:
                    self._refused("page: " + rec["reason"])
        self.stats["page_requests"] = self.stats.get("page_requests", 0) + len(todo)
        if todo:
            with ThreadPoolExecutor(self.workers) as pool:
                done = pool.map(self.dl.fetch_page, todo)
                for f in tqdm(done, total=len(todo), desc="search", unit="page", leave=False, mininterval=0.5):
                    rec = {**self._record(f), "ext": "page"}
                    cache.put("page", f.url, rec, f.data if f.ok else None)
                    out[f.url] = f.data if f.ok else b""
                    if not f.ok:
                        self._refused("page: " + f.reason)
        return out

    def _engine_hits(self, cache: CandidateCache, needs: dict[str, int]) -> dict[str, list[Hit]]:
        """Hits per query: result pages in the feeder's order until ``needs[query]`` distinct URLs."""
        api_key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if self.api_key_env and not api_key:
            raise ConfigError(f"images.api_key_env names {self.api_key_env}, which is not set")
        session = PageSession(lambda u: self._page(cache, u), lambda u: rewrite_base(u, self.base_url))
        plan = {
            q: [rewrite_base(u, self.base_url) for u in page_urls(self.engine, q, n, self.engine_options, api_key)]
            for q, n in needs.items()
        }
        hits: dict[str, list[Hit]] = {q: [] for q in plan}
        seen: dict[str, set[str]] = {q: set() for q in plan}
        depth = 0
        while True:  # one round per result-page depth, all queries that still need hits in parallel
            due = [q for q, urls in plan.items() if depth < len(urls) and len(hits[q]) < needs[q]]
            if not due:
                break
            bodies = self._pages(cache, [plan[q][depth] for q in due])
            for q in due:
                purl = plan[q][depth]
                body = bodies.get(purl, b"")
                for h in parse_page(self.engine, body, purl, session, self.engine_options, api_key) if body else []:
                    nu = normalize_url(h.url)
                    if nu not in seen[q]:
                        seen[q].add(nu)
                        hits[q].append(h)
            depth += 1
        return {q: hs[: needs[q]] for q, hs in hits.items()}

    def _url_entries(self) -> list[dict]:
        path = Path(self.url_list or "")
        if not path.is_file():
            raise ConfigError(f"images.url_list {path} is not a file")
        if path.suffix == ".jsonl":
            rows = []
            for i, r in enumerate(iter_jsonl(path)):
                if not isinstance(r, dict) or not isinstance(r.get("url"), str):
                    raise ConfigError(f"{path}:{i + 1}: each line needs a 'url' string")
                rows.append(r)
            return rows
        lines = path.read_text(encoding="utf-8").splitlines()
        return [{"url": s.strip()} for s in lines if s.strip() and not s.lstrip().startswith("#")]

    # ------------------------------------------------------------------ the crawl
    def fetch_all(self, jobs: list[dict], cache_root: str | Path) -> Iterator[list[Candidate]]:
        """Candidates for every job (``{"key", "request", "topic", "subtopic"}``) that the web serves
        (:meth:`serves`; the others are rendered), in job order."""
        self.stats = {}
        t0 = time.monotonic()
        cache = CandidateCache(cache_root)
        web = [i for i, j in enumerate(jobs) if self.serves(j["request"])]
        queries = {i: self.query_for(jobs[i]) for i in web}
        # 1. candidate hits per web job, in the engine's / list's order
        hits_of: dict[int, list[Hit]] = {}
        if self.mode == "engine":
            per_query: dict[str, list[int]] = {}
            for i in web:
                per_query.setdefault(queries[i], []).append(i)
            needs = {q: int(len(idx) * self.k * self.overfetch + 0.999) for q, idx in per_query.items()}
            found = self._engine_hits(cache, needs)
            for q, idx in per_query.items():
                for i in idx:
                    hits_of[i] = found[q]
        else:
            entries = self._url_entries()
            for i in web:
                j = jobs[i]
                want = {"family": j["request"]["family"], "topic_id": j["topic"].topic_id, "query": queries[i]}
                hits_of[i] = [
                    Hit(e["url"], e.get("page"), e.get("title"), e.get("license"), str(self.url_list))
                    for e in entries
                    if all(e.get(k) in (None, v) for k, v in want.items())
                ]
        # 2. download every candidate URL once (cache first)
        urls = sorted({h.url for hs in hits_of.values() for h in hs})
        fetched = self._images(cache, urls)
        # 3. take candidates in job order, deduped globally
        import imagehash

        dedupe = Deduper(self.phash_max_distance)
        chosen: dict[int, list[tuple[Hit, dict]]] = {}
        shortages = []
        for i in web:
            who = f"{jobs[i]['request']['family']}#{i}"
            got: list[tuple[Hit, dict]] = []
            for h in hits_of[i]:
                rec = fetched[h.url]
                if not rec["ok"]:
                    continue
                ph = imagehash.hex_to_hash(rec["phash"])
                if dedupe.why_not(h.url, rec["sha256"], ph) is not None:
                    continue
                dedupe.take(h.url, rec["sha256"], ph, who)
                got.append((h, rec))
                if len(got) >= self.k:
                    break
            if not got:
                shortages.append((i, queries[i], len(hits_of[i])))
            chosen[i] = got
        for rec in fetched.values():
            if not rec["ok"]:
                self._refused(rec["reason"])
        self.stats.update(
            {"queries": len(set(queries.values())), "candidate_urls": len(urls), "web_requests_total": len(web)}
        )
        self.stats["requests_made"] = self.dl.requests_made
        self.stats["seconds"] = round(time.monotonic() - t0, 3)
        if shortages and self.on_shortage == "error":
            i, q, n = shortages[0]
            raise ImageError(
                f"query {q!r}",
                f"no usable web image for {len(shortages)} request(s) (first: job {i}, {n} candidate URLs; "
                f"refusals {self.stats.get('refused', {})}); raise images.overfetch, check the engine or "
                "url_list, or set images.on_shortage=synthetic",
            )
        log.info("icrawler: %s", self.stats)
        # what this crawl sent over the network: beside the cache, not in the (reproducible) outputs
        atomic_write_bytes(Path(cache_root) / "last_crawl.json", canonical_bytes(self.stats))
        # 4. results in job order (bytes read lazily from the cache)
        for i in web:
            j = jobs[i]
            got = chosen[i]
            if not got:  # on_shortage=synthetic
                req = ImageRequest(**j["request"])
                data, ext, truth = self.synthetic.fetch(req, derive_rng(*j["key"]))
                yield [(data, ext, truth, self.synthetic.name)]
                continue
            out = []
            for h, rec in got:
                truth = {
                    "family": j["request"]["family"],
                    "query": queries[i],
                    "url": h.url,
                    "final_url": rec.get("final_url"),
                    "page": h.page,
                    "title": h.title,
                    "engine": self.engine if self.mode == "engine" else "url_list",
                    "result_page": h.result_page,
                    "fetched_at": rec["fetched_at"],
                    "license": h.license or self._license_hint(),
                    "content_type": rec["content_type"],
                }
                out.append((cache.read(rec), rec["ext"], truth, self.name))
            yield out

    def _license_hint(self) -> str:
        lic = (self.engine_options.get("filters") or {}).get("license") if self.mode == "engine" else None
        return f"{self.engine}-filter:{lic}" if lic else "unknown"


__all__ = ["IcrawlerSource"]
