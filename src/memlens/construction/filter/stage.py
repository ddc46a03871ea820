"""filter stage: validate every crawled image, score it per configured channel, keep the best candidate.

Checks (each rejection records its reason): the file exists and its SHA-256 matches its name; it
decodes; its size, pixel count and byte size are within limits; it is not a near-duplicate (256-bit
perceptual hash within ``phash_max_distance``) of an image kept before it. Channels
(:mod:`memlens.construction.filter.channels`): ``metadata`` (offline: the share of the requested constraint
values that the image's ground truth shows), ``clip``/``siglip`` (open_clip, local weights), ``caption``
(a VLM or local BLIP-2 caption against the query, MiniLM cosine) and ``watermark`` (negative content),
combined by ``rule`` (``all`` or ``paper``, see :func:`verdict`). Rows of the image index that are
candidates of one request (a ``candidate`` field, from a crawling source) compete: the best-scoring
passing one is accepted. Writes ``data/filtered/index.jsonl``: one record per image with
``accepted``, ``reason`` and ``scores`` (and ``captions``); the manifest and an MLflow run summarise the
channels when the filter is not the offline default.
"""

from __future__ import annotations

import logging
import warnings

from PIL import Image
from tqdm import tqdm

from memlens.construction.filter.channels import build_channels, passes, score_many
from memlens.construction.filter.settings import FilterSettings
from memlens.construction.filter.tracking import log_filter_run
from memlens.core.config import Paths, section
from memlens.core.errors import ImageError
from memlens.core.io import iter_jsonl, sha256_file, write_jsonl
from memlens.core.schema import ImageRecord
from memlens.core.settings import Settings, as_settings
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


def channel_summary(channels, rows: list[dict]) -> dict:
    """Per channel: how many images it scored, their mean/min/max, and how many passed it."""
    out = {}
    for ch in channels:
        vals = [r["scores"][ch.name] for r in rows if ch.name in r["scores"]]
        out[ch.name] = {
            "role": ch.role,
            "threshold": ch.threshold,
            "scored": len(vals),
            "passed": sum(passes(ch, v) for v in vals),
            "mean": round(sum(vals) / len(vals), 4) if vals else None,
            "min": min(vals) if vals else None,
            "max": max(vals) if vals else None,
        }
    return out


def verdict(channels, scores: dict[str, float], rule: str) -> tuple[bool, str]:
    """Whether an image passes its channels. ``all``: every channel passes. ``paper``: every primary
    channel passes, at least one secondary channel passes (when there are any), and every negative
    channel passes (the paper's rule: CLIP >= 0.30 and SigLIP or caption similarity, no watermark)."""
    failed = [ch for ch in channels if not passes(ch, scores[ch.name])]

    def why(ch) -> str:
        if ch.role == "negative":
            return f"{ch.name} negative content {scores[ch.name]} >= {ch.threshold}"
        return f"{ch.name} relevance {scores[ch.name]} < {ch.threshold}"

    if rule == "all":
        return (False, why(failed[0])) if failed else (True, "ok")
    for ch in failed:
        if ch.role in ("primary", "negative"):
            return False, why(ch)
    secondary = [ch for ch in channels if ch.role == "secondary"]
    if secondary and all(ch in failed for ch in secondary):
        return False, "no secondary channel passes: " + "; ".join(why(ch) for ch in secondary)
    return True, "ok"


def rank_score(channels, scores: dict[str, float]) -> float:
    """What ranks the passing candidates of one request: the mean of the primary channels' scores."""
    prim = [scores[ch.name] for ch in channels if ch.role == "primary"] or [0.0]
    return sum(prim) / len(prim)


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    fcfg: FilterSettings = cfg.filter
    channels = build_channels(list(fcfg.channels))
    rule = fcfg.rule
    index = paths.images / "index.jsonl"
    entries = []  # (row, rec, path, ok, reason, phash)
    bar = tqdm(iter_jsonl(index), total=count_lines(index), desc="filter", unit="img", leave=False, mininterval=0.5)
    for i, row in enumerate(bar):
        rec = ImageRecord.from_dict(row["image"], where=f"{index}:{i + 1}")
        path = paths.images / "objects" / rec.filename
        ok, reason, ph = check_image(path, rec, fcfg)
        entries.append((row, rec, path, ok, reason, ph))
    # every channel scores every decodable image (a channel may batch: model or endpoint calls)
    valid = [k for k, e in enumerate(entries) if e[3]]
    scored: dict[int, dict[str, float]] = {k: {} for k in valid}
    for ch in channels:
        vals = score_many(ch, [(entries[k][2], entries[k][1], entries[k][0].get("request", {})) for k in valid])
        for k, v in zip(valid, vals):
            scored[k][ch.name] = round(float(v), 4)
    # candidates of one request (rows with a "candidate" field and the same plan and index) compete:
    # the best-scoring one that passes is accepted; a row without the field is its own request
    groups: dict[tuple, list[int]] = {}
    for k, (row, *_rest) in enumerate(entries):
        key = ("req", row.get("plan_id"), row.get("index")) if "candidate" in row else ("row", k)
        groups.setdefault(key, []).append(k)
    result: dict[int, tuple[bool, str, dict]] = {}
    kept_hashes: list = []
    maxd = int(fcfg.phash_max_distance)
    for members in sorted(groups.values(), key=lambda m: m[0]):
        passing = []
        for k in members:
            row, rec, path, ok, reason, ph = entries[k]
            scores: dict = {}
            if ok:
                for other_sha, other in kept_hashes:
                    if (ph - other) <= maxd:
                        ok, reason = False, f"near-duplicate of {other_sha[:12]} (pHash distance {int(ph - other)})"
                        break
            if ok:
                scores = scored[k]
                ok, reason = verdict(channels, scores, rule)
            if ok:
                passing.append(k)
            result[k] = (ok, reason, scores)
        if passing:
            best = max(passing, key=lambda k: (rank_score(channels, scored[k]), -k))
            for k in passing:
                if k != best:
                    b = rank_score(channels, scored[best])
                    result[k] = (
                        False,
                        f"another candidate scored higher ({rank_score(channels, scored[k]):.4f} < {b:.4f})",
                        scored[k],
                    )
            kept_hashes.append((entries[best][1].sha256, entries[best][5]))
    rows = []
    n_ok = 0
    for k, (row, rec, _path, _ok, _reason, ph) in enumerate(entries):
        ok, reason, scores = result[k]
        n_ok += ok
        out_row = {
            "sha256": rec.sha256,
            "plan_id": row.get("plan_id"),
            "accepted": ok,
            "reason": reason,
            "scores": scores,
            "phash": str(ph) if ph is not None else None,
        }
        if "candidate" in row:
            out_row["candidate"] = row["candidate"]
        caps = {ch.name: ch.captions[rec.sha256] for ch in channels if rec.sha256 in getattr(ch, "captions", {})}
        if caps:
            out_row["captions"] = caps
        rows.append(out_row)
    out = paths.filtered
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "index.jsonl", rows)
    rejected: dict[str, int] = {}
    for r in rows:
        if not r["accepted"]:
            key = r["reason"].split(":")[0].split(" (")[0].split(" of ")[0]
            rejected[key] = rejected.get(key, 0) + 1
    offline_default = rule == "all" and [ch.name for ch in channels] == ["metadata"]  # manifest as before
    write_manifest(
        out,
        "filter",
        section(cfg, "filter"),
        hash_tree(out),
        code=(__name__,),
        extra={
            "accepted": n_ok,
            "rejected": len(rows) - n_ok,
            "rejections": rejected,
            **({} if offline_default else {"channels": channel_summary(channels, rows)}),
        },
    )
    log.info("filter: %d/%d images accepted %s", n_ok, len(rows), rejected or "")
    if not offline_default:
        counts = {"accepted": n_ok, "rejected": len(rows) - n_ok}
        log_filter_run(
            cfg.tracking,
            paths.root,
            section(cfg, "filter")["filter"],
            counts,
            channel_summary(channels, rows),
            out / "index.jsonl",
        )
    if n_ok == 0 and rows:
        raise ImageError(index, "every image was rejected; see data/filtered/index.jsonl")
