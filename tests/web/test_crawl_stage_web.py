"""`memlens crawl images=icrawler` on a tiny benchmark: haystack images from the local web, evidence
rendered, every candidate row in the index, a re-run sends no request and writes the same index."""

from __future__ import annotations

import shutil

import pytest

from memlens.core.io import iter_jsonl
from tests.conftest import make_project, run_stage
from tests.web.image_server import ImageServer


@pytest.mark.slow
def test_tiny_crawl_from_the_local_web_and_a_cached_rerun(tmp_path):
    root = make_project(tmp_path / "proj")
    with ImageServer(per_page=12, bad_first=True) as server:
        ov = (
            "data.scale=tiny",
            "data.scales.tiny.haystack_sessions=4",
            "images=icrawler",
            f"images.engine_base_url={server.base}",
            "images.allow_private=true",
            "images.rate_per_host=0",
            "images.workers=1",
            "images.candidates_per_request=2",
        )
        assert run_stage(root, "ontology", *ov) == 0
        assert run_stage(root, "crawl", *ov) == 0
        first = len(server.requests)
        index = (root / "data" / "images" / "index.jsonl").read_bytes()
        rows = list(iter_jsonl(root / "data" / "images" / "index.jsonl"))
        web = [r for r in rows if r["image"]["source"] == "icrawler"]
        rendered = [r for r in rows if r["image"]["source"] == "synthetic"]
        assert web and rendered and first > 0
        assert {r["image"]["role"] for r in web} == {"haystack"} and {r["request"]["role"] for r in rendered} == {
            "evidence"
        }
        assert {r["candidate"] for r in web} == {0, 1} and {r["candidate"] for r in rendered} == {0}
        assert all(r["image"]["truth"]["url"].startswith(server.base + "/img/") for r in web)
        assert len({r["image"]["sha256"] for r in web}) == len(web)  # global dedupe
        shutil.rmtree(root / "data" / "images")
        assert run_stage(root, "crawl", *ov) == 0
        assert len(server.requests) == first  # 0 requests: everything from the candidate cache
        assert (root / "data" / "images" / "index.jsonl").read_bytes() == index
        assert run_stage(root, "filter", *ov) == 0
    filt = {(r["sha256"], r["accepted"]) for r in iter_jsonl(root / "data" / "filtered" / "index.jsonl")}
    by_request: dict = {}
    for r in web:
        by_request.setdefault(r["index"], []).append((r["image"]["sha256"], True) in filt)
    assert all(sum(v) == 1 for v in by_request.values()), by_request  # one accepted candidate per request
