"""filter stage: validate every crawled image and score its relevance per configured channel.

Checks (each rejection records its reason): the file exists and its SHA-256 matches its name; it
decodes; its size, pixel count and byte size are within limits; it is not a near-duplicate (64-bit
perceptual hash within ``phash_max_distance``) of an image kept before it. Relevance channels:
``metadata`` (offline: the share of the requested constraint values that the image's ground truth
shows), and ``clip``/``siglip`` (image-text alignment; need model weights, see
:mod:`memlens.build.filter.channels`). Writes ``data/filtered/index.jsonl``: one record per image with
``accepted``, ``reason`` and ``scores``.
"""

from __future__ import annotations

import logging
import warnings

from PIL import Image
from tqdm import tqdm

from memlens.build.filter.channels import build_channels
from memlens.core.config import Paths, section
from memlens.core.errors import ImageError
from memlens.core.io import iter_jsonl, sha256_file, write_jsonl
from memlens.core.schema import ImageRecord
from memlens.core.store import hash_tree, write_manifest

log = logging.getLogger(__name__)


def check_image(path, rec: ImageRecord, fcfg) -> tuple[bool, str, object]:
    """Return (ok, reason, phash) for one image file."""
    import imagehash

    if not path.is_file():
        return False, "missing file", None
    size = path.stat().st_size
    if size > int(fcfg.max_bytes):
        return False, f"file too large: {size} bytes > {fcfg.max_bytes}", None
    if sha256_file(path) != rec.sha256:
        return False, "content hash does not match (corrupt file)", None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                w, h = im.size
                if w * h > int(fcfg.max_pixels):
                    return False, f"too many pixels: {w}x{h} > {fcfg.max_pixels}", None
                im.load()
                ph = imagehash.phash(im.convert("RGB"), hash_size=16)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
        # Pillow names the file it cannot identify: keep the reason free of the absolute path
        return False, f"does not decode: {str(exc).replace(str(path), path.name)}", None
    if max(w, h) > int(fcfg.max_side) or min(w, h) < int(fcfg.min_side):
        return False, f"size {w}x{h} outside [{fcfg.min_side}, {fcfg.max_side}]", None
    if (w, h) != (rec.width, rec.height):
        return False, f"size {w}x{h} differs from the index ({rec.width}x{rec.height})", None
    return True, "ok", ph


def count_lines(path) -> int | None:
    """Non-empty lines of a file, for the progress bar's total (None when it is missing: the reader
    then reports it)."""
    if not path.is_file():
        return None
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def run(cfg, paths: Paths) -> None:
    fcfg = cfg.filter
    channels = build_channels(list(fcfg.channels))
    index = paths.images / "index.jsonl"
    rows = []
    kept_hashes: list = []
    n_ok = 0
    bar = tqdm(iter_jsonl(index), total=count_lines(index), desc="filter", unit="img", leave=False, mininterval=0.5)
    for i, row in enumerate(bar):
        rec = ImageRecord.from_dict(row["image"], where=f"{index}:{i + 1}")
        path = paths.images / "objects" / rec.filename
        ok, reason, ph = check_image(path, rec, fcfg)
        if ok:
            maxd = int(fcfg.phash_max_distance)
            for other_sha, other in kept_hashes:
                if (ph - other) <= maxd:
                    ok, reason = False, f"near-duplicate of {other_sha[:12]} (pHash distance {int(ph - other)})"
                    break
        scores = (
            {ch.name: round(float(ch.score(path, rec, row.get("request", {}))), 4) for ch in channels} if ok else {}
        )
        if ok:
            for ch in channels:
                if scores[ch.name] < ch.threshold:
                    ok, reason = False, f"{ch.name} relevance {scores[ch.name]} < {ch.threshold}"
                    break
        if ok:
            kept_hashes.append((rec.sha256, ph))
            n_ok += 1
        rows.append(
            {
                "sha256": rec.sha256,
                "plan_id": row.get("plan_id"),
                "accepted": ok,
                "reason": reason,
                "scores": scores,
                "phash": str(ph) if ph is not None else None,
            }
        )
    out = paths.filtered
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "index.jsonl", rows)
    rejected: dict[str, int] = {}
    for r in rows:
        if not r["accepted"]:
            key = r["reason"].split(":")[0].split(" (")[0].split(" of ")[0]
            rejected[key] = rejected.get(key, 0) + 1
    write_manifest(
        out,
        "filter",
        section(cfg, "filter"),
        hash_tree(out),
        code=(__name__,),
        extra={"accepted": n_ok, "rejected": len(rows) - n_ok, "rejections": rejected},
    )
    log.info("filter: %d/%d images accepted %s", n_ok, len(rows), rejected or "")
    if n_ok == 0 and rows:
        raise ImageError(index, "every image was rejected; see data/filtered/index.jsonl")
