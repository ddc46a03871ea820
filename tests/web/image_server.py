"""A local web of images for tests and benchmarks: search-result pages and images on 127.0.0.1.

Routes (``ImageServer.url(path)``):

* ``/images/async?q=<query>&first=<n>`` : a Bing-format result page (``div.imgpt > a[m]`` tiles with
  ``murl``/``purl``/``t``) listing ``per_page`` images ``/img/<tag>-<k>.png`` of that query, where
  ``<tag>`` is a hash of the query; ``bad_first=True`` puts a non-image (``/bad/html.jpg``) first;
* ``/img/<name>.png`` : a distinct block-pattern PNG per name (far apart in pHash);
* ``/img/<name>.jpg`` : the same as a JPEG;
* ``/bad/html.jpg`` : HTML served as ``image/jpeg``;
* ``/bad/bomb.png`` : a 6000x6000 PNG of a few KB (more pixels than a cap of 16M);
* ``/bad/megabomb.png`` : a 12000x12000 PNG of a few KB (beyond Pillow's own bomb limit);
* ``/bad/oversized.png`` : a valid PNG larger than most caps (``Content-Length`` announced);
* ``/bad/oversized-chunked.png`` : the same without ``Content-Length`` (streamed);
* ``/bad/slow.png`` : a valid PNG trickled a few bytes at a time (``slow_s`` in all);
* ``/bad/loop`` : a redirect loop (``/bad/loop`` -> ``/bad/loop2`` -> ``/bad/loop``);
* ``/bad/tofile`` : a redirect to ``file:///etc/passwd``;
* ``/bad/toftp`` : a redirect to ``ftp://127.0.0.1/x.png``;
* ``/redirect/<name>.png`` : a redirect to ``/img/<name>.png``;
* ``/flaky/<name>.png`` : 503 on the first request for that name, the image afterwards;
* ``/bad/truncated.png`` : the first half of a PNG; ``/bad/tiny.png`` : a 16x16 PNG;
* ``/watermarked/<name>.png`` : the image of ``<name>`` with a tiled text watermark.

``requests`` lists every request path in arrival order (thread-safe), so tests can count what a
crawl sent.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from PIL import Image, ImageDraw


def pattern_image(name: str, size=(160, 120)) -> Image.Image:
    rng = random.Random(hashlib.sha256(name.encode()).digest())
    small = Image.new("RGB", (8, 6))
    small.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(48)])
    return small.resize(size, Image.Resampling.NEAREST)


def encode(im: Image.Image, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buf.getvalue()


def watermark(im: Image.Image, text: str = "(c) STOCKPHOTO") -> Image.Image:
    """A tiled, semi-transparent text watermark across the whole image."""
    base = im.convert("RGBA")
    layer = Image.new("RGBA", base.size, (0, 0, 0, 0))
    d = ImageDraw.Draw(layer)
    step_x, step_y = 70, 22
    for y in range(-step_y, base.size[1] + step_y, step_y):
        for x in range(-step_x, base.size[0] + step_x, step_x):
            d.text((x + (y // step_y % 2) * 35, y), text, fill=(255, 255, 255, 150))
    return Image.alpha_composite(base, layer).convert("RGB")


def bomb_png(side: int) -> bytes:
    return encode(Image.new("1", (side, side)))


class ImageServer:
    def __init__(self, *, per_page: int = 10, bad_first: bool = False, slow_s: float = 3.0, oversize: int = 3_000_000):
        self.per_page, self.bad_first, self.slow_s = per_page, bad_first, slow_s
        self.requests: list[str] = []
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self._cache: dict[str, bytes] = {}
        rng = random.Random(7)
        noise = Image.frombytes("L", (1200, 1000), rng.randbytes(1200 * 1000))
        self.oversized = encode(noise)
        assert len(self.oversized) > oversize // 3
        self.bomb, self.megabomb = bomb_png(6000), bomb_png(12000)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):
                with server._lock:
                    server.requests.append(self.path)
                server.handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ImageServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str) -> str:
        return self.base + path

    # ------------------------------------------------------------------ content
    def image_bytes(self, name: str, fmt: str = "PNG") -> bytes:
        key = f"{name}.{fmt}"
        with self._lock:
            got = self._cache.get(key)
        if got is None:
            got = encode(pattern_image(name), fmt)
            with self._lock:
                self._cache[key] = got
        return got

    @staticmethod
    def tag(query: str) -> str:
        return hashlib.sha256(query.encode()).hexdigest()[:10]

    def result_page(self, query: str, first: int) -> bytes:
        tiles = []
        urls = [f"{self.base}/img/{self.tag(query)}-{first + k}.png" for k in range(self.per_page)]
        if self.bad_first and first == 0:
            urls = [f"{self.base}/bad/html.jpg", *urls[:-1]]
        for k, u in enumerate(urls):
            m = {"murl": u, "purl": f"{self.base}/page/{self.tag(query)}-{first + k}.html", "t": f"{query} {k}"}
            tiles.append(f'<div class="imgpt"><a class="iusc" m="{html.escape(json.dumps(m))}" href="#">x</a></div>')
        return ("<html><body>" + "".join(tiles) + "</body></html>").encode()

    # ------------------------------------------------------------------ handler
    def handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        path = parts.path

        def send(status: int, body: bytes = b"", ctype: str = "text/plain", headers: dict | None = None, length=True):
            h.send_response(status)
            h.send_header("Content-Type", ctype)
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            if length:
                h.send_header("Content-Length", str(len(body)))
            else:
                h.send_header("Connection", "close")
            h.end_headers()
            if body and h.command != "HEAD":
                h.wfile.write(body)

        def redirect(to: str):
            send(302, b"", headers={"Location": to})

        if path == "/images/async":
            q = parse_qs(parts.query)
            send(200, self.result_page(q.get("q", [""])[0], int(q.get("first", ["0"])[0])), "text/html")
        elif path.startswith("/img/") and path.endswith(".png"):
            send(200, self.image_bytes(path[5:-4]), "image/png")
        elif path.startswith("/img/") and path.endswith(".jpg"):
            send(200, self.image_bytes(path[5:-4], "JPEG"), "image/jpeg")
        elif path.startswith("/watermarked/"):
            send(200, encode(watermark(pattern_image(path[13:-4], (320, 240)))), "image/png")
        elif path.startswith("/redirect/"):
            redirect("/img/" + path[len("/redirect/") :])
        elif path.startswith("/flaky/"):
            with self._lock:
                first = path not in self._seen
                self._seen.add(path)
            if first:
                send(503, b"busy")
            else:
                send(200, self.image_bytes(path[7:-4]), "image/png")
        elif path == "/bad/html.jpg":
            send(200, b"<html><body>not an image</body></html>", "image/jpeg")
        elif path == "/bad/bomb.png":
            send(200, self.bomb, "image/png")
        elif path == "/bad/megabomb.png":
            send(200, self.megabomb, "image/png")
        elif path == "/bad/oversized.png":
            send(200, self.oversized, "image/png")
        elif path == "/bad/oversized-chunked.png":
            send(200, self.oversized, "image/png", length=False)
            h.close_connection = True
        elif path == "/bad/truncated.png":
            data = self.image_bytes("truncated")
            send(200, data[: len(data) // 2], "image/png")
        elif path == "/bad/tiny.png":
            send(200, encode(pattern_image("tiny", (16, 16))), "image/png")
        elif path == "/bad/slow.png":
            data = self.image_bytes("slow")
            h.send_response(200)
            h.send_header("Content-Type", "image/png")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            step = max(1, len(data) // 20)
            try:
                for i in range(0, len(data), step):
                    h.wfile.write(data[i : i + step])
                    h.wfile.flush()
                    time.sleep(self.slow_s / 20)
            except OSError:
                pass
        elif path == "/bad/loop":
            redirect("/bad/loop2")
        elif path == "/bad/loop2":
            redirect("/bad/loop")
        elif path == "/bad/tofile":
            redirect("file:///etc/passwd")
        elif path == "/bad/toftp":
            redirect("ftp://127.0.0.1/x.png")
        else:
            send(404, b"not found")
