"""The safe downloader against a local server: good images, and every bad case with its reason."""

from __future__ import annotations

import time

import pytest

from memlens.construction.images.web.download import RateLimiter, SafeDownloader, sniff
from tests.web.image_server import ImageServer


@pytest.fixture(scope="module")
def server():
    with ImageServer(slow_s=3.0) as s:
        yield s


def dl(**kw) -> SafeDownloader:
    opts = dict(
        allow_private=True, max_bytes=1_000_000, max_pixels=1_000_000, total_timeout_s=1.0, backoff_s=0.01, retries=1
    )
    return SafeDownloader(**{**opts, **kw})


def test_good_png_and_jpeg(server):
    d = dl()
    f = d.fetch_image(server.url("/img/a.png"))
    assert f.ok and f.ext == "png" and (f.width, f.height) == (160, 120)
    assert f.data == server.image_bytes("a") and f.content_type == "image/png" and f.attempts == 1
    j = d.fetch_image(server.url("/img/a.jpg"))
    assert j.ok and j.ext == "jpg" and sniff(j.data) == "jpeg"


@pytest.mark.parametrize(
    "path,reason",
    [
        ("/bad/html.jpg", "not an image"),
        ("/bad/bomb.png", "too many pixels: 6000x6000 > 1000000"),
        ("/bad/oversized.png", "too large: Content-Length"),
        ("/bad/oversized-chunked.png", "too large: more than 1000000 bytes"),
        ("/bad/truncated.png", "does not decode"),
        ("/bad/tiny.png", "size 16x16 outside"),
        ("/bad/loop", "redirect loop"),
        ("/bad/tofile", "redirect to a non-http(s) URL: file:///etc/passwd"),
        ("/bad/toftp", "redirect to a non-http(s) URL: ftp://"),
        ("/nothing-here.png", "HTTP 404"),
    ],
)
def test_bad_images_are_refused_with_their_reason(server, path, reason):
    f = dl().fetch_image(server.url(path))
    assert not f.ok and f.data == b"" and reason in f.reason, f.reason


def test_a_bomb_is_refused_before_decoding_even_with_a_high_cap(server):
    f = dl(max_pixels=10**12).fetch_image(server.url("/bad/megabomb.png"))  # Pillow's own guard then
    assert not f.ok and "decompression bomb" in f.reason, f.reason


def test_slow_server_is_cut_at_the_total_deadline(server):
    t0 = time.monotonic()
    f = dl(retries=0, total_timeout_s=0.5).fetch_image(server.url("/bad/slow.png"))
    assert not f.ok and "too slow" in f.reason and time.monotonic() - t0 < 2.5, f.reason


def test_redirects_are_followed_by_hand_and_recorded(server):
    f = dl().fetch_image(server.url("/redirect/r1.png"))
    assert f.ok and f.redirects == [server.url("/img/r1.png")] and f.final_url == server.url("/img/r1.png")
    assert dl(max_redirects=0).fetch_image(server.url("/redirect/r1.png")).reason == "more than 0 redirects"


def test_transient_errors_are_retried(server):
    f = dl(retries=2).fetch_image(server.url("/flaky/f1.png"))
    assert f.ok and f.attempts == 2
    g = dl(retries=0).fetch_image(server.url("/flaky/f2.png"))
    assert not g.ok and g.reason == "HTTP 503 (after 1 attempts)"


def test_non_http_schemes_and_private_hosts_are_refused(server):
    for url in ("file:///etc/passwd", "ftp://example.org/x.png", "data:image/png;base64,AAAA", "javascript:x"):
        f = dl().fetch_image(url)
        assert not f.ok and "is not http(s)" in f.reason, (url, f.reason)
    n = len(server.requests)
    f = SafeDownloader().fetch_image(server.url("/img/a.png"))  # allow_private defaults to False
    assert not f.ok and "private/loopback" in f.reason and len(server.requests) == n


def test_pages_need_a_page_type(server):
    d = dl()
    p = d.fetch_page(server.url("/images/async?q=cats&first=0"))
    assert p.ok and b"imgpt" in p.data
    assert "content type 'image/png'" in d.fetch_page(server.url("/img/a.png")).reason


def test_rate_limit_spaces_requests_per_host():
    lim = RateLimiter(20.0)
    t0 = time.monotonic()
    for _ in range(6):
        lim.wait("h")
    assert time.monotonic() - t0 >= 0.24  # 5 intervals of 50 ms
    t1 = time.monotonic()
    lim.wait("other-host")
    assert time.monotonic() - t1 < 0.03
