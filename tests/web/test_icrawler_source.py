"""The icrawler image source against a local web: engine pages, URL lists, dedupe, cache, provenance."""

from __future__ import annotations

import json

import pytest

from memlens.construction.images.web.dedupe import Deduper, normalize_url, phash_of
from memlens.construction.images.web.engines import page_urls, parse_page, rewrite_base
from memlens.construction.images.web.icrawler_source import IcrawlerSource
from memlens.core.errors import ConfigError, ImageError
from memlens.core.schema import Topic
from tests.web.image_server import ImageServer

TOPICS = [
    Topic("t1", "experience", "travel", "Travel", ["mountain hiking", "city breaks"], ["photo"], ["IE"]),
    Topic("t2", "document", "finance", "Finance", ["grocery receipts"], ["receipt"], ["IE"]),
]


def jobs(n: int, role: str = "haystack") -> list[dict]:
    return [
        {
            "key": (0, "haystack-image", i, "render"),
            "request": {"family": ["photo", "receipt"][i % 2], "constraints": {}, "role": role},
            "topic": TOPICS[i % 2],
            "subtopic": None,
        }
        for i in range(n)
    ]


def source(server: ImageServer, **kw) -> IcrawlerSource:
    opts = dict(engine_base_url=server.base, allow_private=True, rate_per_host=0, retries=0, total_timeout_s=2.0)
    return IcrawlerSource(**{**opts, **kw})


@pytest.fixture(scope="module")
def server():
    with ImageServer(per_page=6, bad_first=True) as s:
        yield s


def test_engine_mode_serves_web_images_with_provenance_and_a_rerun_sends_nothing(server, tmp_path):
    n0 = len(server.requests)
    src = source(server, candidates_per_request=2, overfetch=1.5)
    out = list(src.fetch_all(jobs(4), tmp_path / "web"))
    assert len(out) == 4 and all(len(c) == 2 for c in out)
    urls = [t["url"] for c in out for (_, _, t, _) in c]
    assert len(set(urls)) == 8 and not any("/bad/" in u for u in urls)  # HTML-as-image never taken
    data, ext, truth, name = out[0][0]
    assert name == "icrawler" and ext == "png" and data == server.image_bytes(truth["url"].rsplit("/", 1)[1][:-4])
    assert truth["engine"] == "bing" and truth["license"] == "unknown" and truth["family"] == "photo"
    assert truth["page"].startswith(server.base + "/page/") and truth["result_page"].startswith(server.base)
    assert truth["query"] == "Travel photo" and truth["fetched_at"].endswith("Z")
    assert src.stats["refused"] == {"not an image": 1} and src.stats["requests_made"] == len(server.requests) - n0
    first = len(server.requests)
    again = list(source(server, candidates_per_request=2, overfetch=1.5).fetch_all(jobs(4), tmp_path / "web"))
    assert len(server.requests) == first  # everything from the cache: 0 requests
    assert again == out  # the same bytes and truth (fetch time included)
    assert json.loads((tmp_path / "web" / "last_crawl.json").read_text())["requests_made"] == 0


def test_evidence_is_not_fetched_from_the_web_by_default(server, tmp_path):
    src = source(server)
    assert not src.serves({"role": "evidence"}) and src.serves({"role": "haystack"})
    with pytest.raises(ImageError, match="fetch_all only"):
        from memlens.construction.images.sources import ImageRequest

        src.fetch(ImageRequest("photo", role="haystack"), __import__("random").Random(0))
    assert source(server, web_roles=["evidence", "haystack"]).serves({"role": "evidence"})


def test_url_list_mode_filters_by_family_and_dedupes_globally(server, tmp_path):
    b = server.base
    entries = [
        {"url": f"{b}/img/r1.png", "family": "receipt", "license": "cc-by"},
        {"url": f"{b}/img/r1.png?utm_source=x", "family": "receipt"},  # the same URL, normalised
        {"url": f"{b}/img/r1.jpg", "family": "receipt"},  # the same picture as JPEG: pHash near-duplicate
        {"url": f"{b}/redirect/r2.png", "family": "receipt", "page": f"{b}/about-r2"},
        {"url": f"{b}/bad/bomb.png"},
        {"url": f"{b}/img/p1.png", "family": "photo"},
        {"url": f"{b}/bad/tofile"},
        {"url": f"{b}/img/p2.png"},
    ]
    lst = tmp_path / "urls.jsonl"
    lst.write_text("".join(json.dumps(e) + "\n" for e in entries))
    src = source(server, mode="urls", url_list=str(lst), max_pixels=1_000_000, phash_max_distance=20)
    out = list(src.fetch_all(jobs(4), tmp_path / "web"))
    got = [[t["url"] for (_, _, t, _) in c] for c in out]
    assert got == [[f"{b}/img/p1.png"], [f"{b}/img/r1.png"], [f"{b}/img/p2.png"], [f"{b}/redirect/r2.png"]]
    assert out[1][0][2]["license"] == "cc-by" and out[1][0][2]["engine"] == "url_list"
    assert out[3][0][2]["final_url"] == f"{b}/img/r2.png" and out[3][0][2]["page"] == f"{b}/about-r2"
    refused = src.stats["refused"]
    assert refused["too many pixels"] == 1 and refused["redirect to a non-http(s) URL"] == 1


def test_a_plain_text_url_list_and_a_shortage_name_the_query(server, tmp_path):
    lst = tmp_path / "urls.txt"
    lst.write_text(f"# comment\n{server.base}/img/only.png\n\n{server.base}/bad/html.jpg\n")
    src = source(server, mode="urls", url_list=str(lst))
    with pytest.raises(ImageError, match=r"query '.*': no usable web image for 1 request\(s\).*not an image"):
        list(src.fetch_all(jobs(2), tmp_path / "web"))
    n = len(server.requests)
    fallback = source(server, mode="urls", url_list=str(lst), on_shortage="synthetic")
    out = list(fallback.fetch_all(jobs(2), tmp_path / "web"))
    assert [c[0][3] for c in out] == ["icrawler", "synthetic"] and len(server.requests) == n


def test_bad_configuration_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"needs images\.url_list"):
        IcrawlerSource(mode="urls")
    with pytest.raises(ConfigError, match="web_roles"):
        IcrawlerSource(web_roles=["nobody"])
    with pytest.raises(ConfigError, match=r"url_list .* is not a file"):
        list(IcrawlerSource(mode="urls", url_list=str(tmp_path / "none.txt")).fetch_all(jobs(1), tmp_path))
    with pytest.raises(ConfigError, match=r"unknown field 'nope'"):
        IcrawlerSource(haystack_query_template="{nope}").query_for(jobs(1)[0])
    sub = IcrawlerSource(haystack_query_template=None).query_for(jobs(1)[0])
    assert sub in ("mountain hiking photo", "city breaks photo")
    ev = {**jobs(1, "evidence")[0], "subtopic": "city breaks"}
    assert IcrawlerSource().query_for(ev) == "city breaks photo"
    with pytest.raises(ConfigError, match="not known"):
        page_urls("altavista", "x", 10, {})


def test_engine_page_urls_and_parsers(server):
    urls = page_urls("bing", "red car", 45, {})
    assert len(urls) == 3 and urls[0].startswith("https://www.bing.com/images/async?q=red car&first=0")
    assert rewrite_base(urls[1], server.base) == f"{server.base}/images/async?q=red car&first=20"
    g = page_urls("google", "red car", 150, {"language": "en"})
    assert len(g) == 2 and "lr=lang_en" in g[0] and "tbm=isch" in g[0]
    hits = parse_page("bing", server.result_page("red car", 0), "p")
    assert len(hits) == 6 and hits[0].url.endswith("/bad/html.jpg") and hits[1].page.endswith(".html")
    baidu = json.dumps({"data": [{"hoverURL": "http://img.example/a.jpg"}, {}]}).encode()
    assert [h.url for h in parse_page("baidu", baidu, "p")] == ["http://img.example/a.jpg"]
    google = b'<html><script>AF_initDataCallback(["https://img.example/b.png",1])</script></html>'
    assert [h.url for h in parse_page("google", google, "p")] == ["https://img.example/b.png"]
    assert parse_page("baidu", b"not json", "p") == []


def test_dedupe_by_url_content_and_phash(server):
    d = Deduper(20)  # JPEG q90 of these block patterns moves the 256-bit pHash by 10-16 bits
    a = phash_of(server.image_bytes("a"))
    d.take("HTTP://Host:80/x.png?b=2&a=1#f", "sha-a", a, "job 0")
    assert normalize_url("http://host/x.png?a=1&b=2&utm_medium=m") == "http://host/x.png?a=1&b=2"
    assert "duplicate URL" in d.why_not("http://host/x.png?a=1&b=2", "sha-b", phash_of(server.image_bytes("b")))
    assert "duplicate content" in d.why_not("http://h/y.png", "sha-a", a)
    near = phash_of(server.image_bytes("a", "JPEG"))
    assert "near-duplicate" in d.why_not("http://h/z.jpg", "sha-c", near)
    assert d.why_not("http://h/w.png", "sha-d", phash_of(server.image_bytes("b"))) is None


def test_an_interrupted_crawl_resumes_from_what_it_fetched(server, tmp_path):
    b = server.base
    lst = tmp_path / "urls.txt"
    lst.write_text("".join(f"{b}/img/resume{i}.png\n" for i in range(3)))
    list(source(server, mode="urls", url_list=str(lst)).fetch_all(jobs(2), tmp_path / "web"))
    n = len(server.requests)
    lst.write_text("".join(f"{b}/img/resume{i}.png\n" for i in range(6)))  # the crawl goes on with more
    src = source(server, mode="urls", url_list=str(lst))
    out = list(src.fetch_all(jobs(4), tmp_path / "web"))
    assert len(server.requests) - n == 3 and src.stats["cache_hits"] == 3  # only the new URLs
    assert len({c[0][2]["url"] for c in out}) == 4


def test_the_cache_builds_paths_from_hashes_only(tmp_path):
    from memlens.construction.images.web.cache import CandidateCache

    cache = CandidateCache(tmp_path / "web")
    rec = cache.put("image", "http://h/../../x.png", {"ok": True, "ext": "png"}, b"\x89PNG data")
    assert cache.object_path(rec["sha256"], "png").parent == (tmp_path / "web" / "objects").resolve()
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert [str(p).split("/")[1] for p in written] == ["fetches", "objects"]
    for sha, ext in (("../" * 3 + "a" * 55, "png"), ("a" * 64, "png/../../x"), ("A" * 64, "png")):
        with pytest.raises(ValueError, match="not a content hash"):
            cache.object_path(sha, ext)
    assert cache.get("image", "http://h/../../x.png")["sha256"] == rec["sha256"]
    assert cache.get("image", "http://other/") is None
