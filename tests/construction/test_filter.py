"""filter stage on a hand-made image index: accepted images, and every rejection with its reason."""

from __future__ import annotations

import io
import random
import shutil
from pathlib import Path

import pytest
from PIL import Image

from memlens.construction.filter import stage as F
from memlens.core.config import Paths
from memlens.core.errors import ConfigError, ImageError
from memlens.core.io import iter_jsonl, read_json, sha256_bytes, write_jsonl
from tests.support.settings import settings

LIMITS = {
    "max_side": 4096,
    "min_side": 64,
    "max_pixels": 16_000_000,
    "max_bytes": 20_000_000,
    "phash_max_distance": 12,
    "channels": ["metadata"],
}


def noise_png(seed: int, size=(120, 90)) -> bytes:
    """A random block pattern: distinct seeds give images far apart in pHash."""
    rng = random.Random(seed)
    small = Image.new("RGB", (12, 9))
    small.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(12 * 9)])
    buf = io.BytesIO()
    small.resize(size, Image.Resampling.NEAREST).save(buf, format="PNG")
    return buf.getvalue()


def png_of(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


class Project:
    """``data/images/{objects,index.jsonl}`` written by hand."""

    def __init__(self, root: Path):
        self.root = root
        self.objects = root / "data" / "images" / "objects"
        self.objects.mkdir(parents=True)
        self.rows: list[dict] = []

    def add(
        self, data: bytes, *, name_bytes: bytes | None = None, size=None, truth=None, request=None, write=True
    ) -> str:
        """Store ``data`` under the SHA-256 of ``name_bytes`` (default: of ``data`` itself)."""
        sha = sha256_bytes(name_bytes if name_bytes is not None else data)
        if size is None:
            try:
                with Image.open(io.BytesIO(data)) as im:
                    size = im.size
            except OSError:
                size = (120, 90)
        if write:
            (self.objects / f"{sha}.png").write_bytes(data)
        self.rows.append(
            {
                "image": {
                    "sha256": sha,
                    "family": "photo",
                    "role": "haystack",
                    "width": size[0],
                    "height": size[1],
                    "format": "png",
                    "source": "test",
                    "truth": truth or {},
                },
                "plan_id": None,
                "request": request or {},
            }
        )
        return sha

    def run(self, **limits) -> dict[str, dict]:
        write_jsonl(self.root / "data" / "images" / "index.jsonl", self.rows)
        cfg = settings(filter={**LIMITS, **limits})
        F.run(cfg, Paths(self.root))
        out = list(iter_jsonl(self.root / "data" / "filtered" / "index.jsonl"))
        # never a silent drop: one row per index row, in index order
        assert [r["sha256"] for r in out] == [r["image"]["sha256"] for r in self.rows]
        return {r["sha256"]: r for r in out}

    @property
    def manifest(self) -> dict:
        return read_json(self.root / "data" / "filtered" / "manifest.json")


@pytest.fixture()
def proj(tmp_path) -> Project:
    p = Project(tmp_path / "proj")
    for seed in range(3):  # three valid, distinct images that every test keeps
        p.add(noise_png(seed))
    return p


def test_valid_images_are_accepted(proj):
    rows = proj.run()
    assert all(r["accepted"] and r["reason"] == "ok" for r in rows.values())
    assert all(r["scores"] == {"metadata": 1.0} and len(r["phash"]) == 64 for r in rows.values())
    m = proj.manifest
    assert (m["accepted"], m["rejected"], m["rejections"]) == (3, 0, {})


def _truncated(p):
    data = noise_png(10)
    return p.add(data[: len(data) // 2])  # named by its own hash: only decoding can tell


def _not_an_image(p):
    return p.add(b"this is not an image at all" * 10)


def _missing(p):
    return p.add(noise_png(11), write=False)


def _hash_mismatch(p):
    return p.add(noise_png(12), name_bytes=b"what the index says was fetched")


def _index_size_differs(p):
    return p.add(noise_png(13), size=(100, 90))


def _too_narrow(p):
    return p.add(noise_png(14, size=(200, 40)))


def _too_wide(p):
    return p.add(noise_png(15, size=(600, 80)))


def _too_many_pixels(p):
    return p.add(noise_png(16, size=(400, 300)))


def _too_many_bytes(p):
    rng = random.Random(17)
    im = Image.frombytes("RGB", (200, 150), bytes(rng.randrange(256) for _ in range(200 * 150 * 3)))
    return p.add(png_of(im))  # incompressible noise: ~90 kB


def _near_duplicate(p):
    with Image.open(io.BytesIO(noise_png(1))) as im:
        im = im.convert("RGB")
    im.putpixel((0, 0), (1, 2, 3))  # different bytes and hash, same picture
    return p.add(png_of(im))


def _irrelevant(p):
    return p.add(
        noise_png(18), truth={"texts": ["Oak Bakery"]}, request={"constraints": {"text": "Luna Bakery", "number": "12"}}
    )


CASES = [
    (_truncated, {}, "does not decode", "truncated"),
    (_not_an_image, {}, "does not decode", "cannot identify"),
    (_missing, {}, "missing file", None),
    (_hash_mismatch, {}, "content hash does not match", None),
    (_index_size_differs, {}, "differs from the index", "120x90"),
    (_too_narrow, {}, "size 200x40 outside", "[64, 4096]"),
    (_too_wide, {"max_side": 500}, "size 600x80 outside", None),
    (_too_many_pixels, {"max_pixels": 100_000}, "too many pixels", "400x300"),
    (_too_many_bytes, {"max_bytes": 60_000}, "file too large", None),
    (_near_duplicate, {}, "near-duplicate of", "pHash distance"),
    (_irrelevant, {}, "metadata relevance 0.0 < 0.999", None),
]


@pytest.mark.parametrize(("plant", "limits", "reason", "detail"), CASES, ids=[c[0].__name__[1:] for c in CASES])
def test_each_defect_is_rejected_with_its_reason(proj, plant, limits, reason, detail):
    bad = plant(proj)
    proj.add(noise_png(99))  # a valid image after the bad one is still judged on its own
    rows = proj.run(**limits)
    assert not rows[bad]["accepted"]
    assert reason in rows[bad]["reason"] and (detail is None or detail in rows[bad]["reason"]), rows[bad]["reason"]
    assert rows[bad]["scores"] == {} or reason.startswith("metadata")
    assert sum(r["accepted"] for r in rows.values()) == len(rows) - 1
    m = proj.manifest
    assert (m["accepted"], m["rejected"]) == (len(rows) - 1, 1)
    assert sum(m["rejections"].values()) == 1
    assert str(proj.root) not in rows[bad]["reason"]  # no absolute path in a data artifact


def test_near_duplicate_names_the_image_kept_first(proj):
    first = proj.rows[1]["image"]["sha256"]
    dup = _near_duplicate(proj)
    rows = proj.run()
    assert rows[first]["accepted"]
    assert rows[dup]["reason"].startswith(f"near-duplicate of {first[:12]}")
    # a zero distance threshold still catches the same picture (pHash distance 0); a negative one,
    # which once switched the check off unvalidated, is a config error naming the key
    assert not proj.run(phash_max_distance=0)[dup]["accepted"]
    with pytest.raises(ConfigError, match=r"filter\.phash_max_distance"):
        proj.run(phash_max_distance=-1)


def test_rejected_images_do_not_shadow_later_duplicates(proj):
    """A rejected image is not 'kept': a later near-copy of it is judged on its own."""
    with Image.open(io.BytesIO(noise_png(20, size=(200, 40)))) as im:
        narrow = im.convert("RGB")
    bad = proj.add(png_of(narrow))
    copy = narrow.resize((200, 80))  # the same picture, now tall enough
    good = proj.add(png_of(copy))
    rows = proj.run()
    assert not rows[bad]["accepted"] and rows[good]["accepted"]


def test_every_image_rejected_is_an_error_after_recording_why(tmp_path):
    p = Project(tmp_path / "proj")
    p.add(noise_png(1), write=False)
    p.add(b"garbage")
    with pytest.raises(ImageError, match="every image was rejected"):
        p.run()
    rows = list(iter_jsonl(p.root / "data" / "filtered" / "index.jsonl"))
    assert [r["accepted"] for r in rows] == [False, False] and all(r["reason"] for r in rows)


def test_same_input_gives_identical_bytes_in_another_folder(proj, tmp_path):
    _not_an_image(proj)
    _near_duplicate(proj)
    proj.run()
    other = tmp_path / "elsewhere" / "proj"
    other.parent.mkdir()
    shutil.copytree(proj.root / "data" / "images", other / "data" / "images")
    F.run(settings(filter=LIMITS), Paths(other))
    for name in ("index.jsonl", "manifest.json"):
        assert (other / "data" / "filtered" / name).read_bytes() == (
            proj.root / "data" / "filtered" / name
        ).read_bytes(), name
