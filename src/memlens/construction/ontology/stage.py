"""ontology stage: expand the versioned ontology file into topic records.

Reads ``memlens/ontology/data/ontology_<version>.json`` (three tracks, their sub-attributes, topic
titles with fine-grained subtopics and the image families that fit them) and writes
``data/ontology/topics.jsonl`` with stable topic ids and, for each topic, the question types that
draw from it: each answerable ability gets its own topic subset.
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

from memlens.construction.ontology.settings import OntologySettings
from memlens.core.config import Paths
from memlens.core.constants import QUESTION_TYPES
from memlens.core.errors import DataError
from memlens.core.io import read_json, write_jsonl
from memlens.core.schema import AR, TRACKS, Topic
from memlens.core.settings import Settings, as_settings
from memlens.core.store import derive_rng, hash_tree, short_id, write_manifest

log = logging.getLogger(__name__)
#: the answerable question types, in the paper's order (answer refusal draws from every topic)
ANSWERABLE = tuple(t for t in QUESTION_TYPES if t != AR)


def load_ontology_file(version: str = "1", path: str | Path | None = None) -> dict:
    if path is None:
        ref = resources.files("memlens.construction.ontology") / "data" / f"ontology_v{version}.json"
        path = Path(str(ref))
    data = read_json(path)
    if not isinstance(data, dict) or "tracks" not in data:
        raise DataError(f"{path}: an ontology file needs a 'tracks' object")
    if not isinstance(data["tracks"], dict):
        raise DataError(f"{path}: 'tracks' must be an object of track name -> track")
    for track, tdata in data["tracks"].items():
        if track not in TRACKS:
            raise DataError(f"{path}: unknown track {track!r} (known: {', '.join(TRACKS)})")
        _check_track(path, track, tdata)
    return data


def _check_track(path, track: str, tdata) -> None:
    """Structure of one track, so a malformed file ends with one message naming the place."""
    subs = tdata.get("sub_attributes") if isinstance(tdata, dict) else None
    if not isinstance(subs, dict):
        raise DataError(f"{path}: tracks.{track} needs a 'sub_attributes' object")
    for sub_key, sub in subs.items():
        where = f"tracks.{track}.sub_attributes.{sub_key}"
        topics = sub.get("topics") if isinstance(sub, dict) else None
        if not isinstance(topics, list):
            raise DataError(f"{path}: {where} needs a 'topics' list")
        seen: set[str] = set()
        for i, t in enumerate(topics):
            title = t.get("title") if isinstance(t, dict) else None
            if not isinstance(title, str) or not title:
                raise DataError(f"{path}: {where}.topics[{i}] needs a non-empty string 'title'")
            if title in seen:
                raise DataError(f"{path}: {where}.topics[{i}]: duplicate title {title!r}")
            seen.add(title)
            for key in ("subtopics", "families"):
                v = t.get(key, [])
                if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                    raise DataError(f"{path}: {where}.topics[{i}] ({title}): {key!r} must be a list of strings")


def build_topics(data: dict, seed: int) -> list[Topic]:
    topics: list[Topic] = []
    for track in TRACKS:
        tdata = data["tracks"].get(track)
        if tdata is None:
            raise DataError(f"ontology: track {track!r} is missing")
        for sub_key, sub in sorted(tdata["sub_attributes"].items()):
            for t in sub["topics"]:
                tid = short_id("t", track, sub_key, t["title"], n=8)
                topics.append(
                    Topic(
                        topic_id=tid,
                        track=track,
                        sub_attribute=sub_key,
                        title=t["title"],
                        subtopics=list(t.get("subtopics", [])),
                        families=list(t.get("families", [])),
                    )
                )
    # Each answerable ability draws from its own subset: deal topics of every sub-attribute
    # round-robin over the abilities (after a seeded shuffle), so each subset spans all tracks.
    by_sub: dict[str, list[Topic]] = {}
    for t in topics:
        by_sub.setdefault(f"{t.track}/{t.sub_attribute}", []).append(t)
    k = 0
    for key in sorted(by_sub):
        group = sorted(by_sub[key], key=lambda t: t.topic_id)
        derive_rng(seed, "ontology", key).shuffle(group)
        for t in group:
            t.abilities = [ANSWERABLE[k % len(ANSWERABLE)], AR]
            k += 1
    return sorted(topics, key=lambda t: t.topic_id)


def run(cfg: Settings, paths: Paths) -> None:
    cfg = as_settings(cfg)
    ocfg: OntologySettings = cfg.ontology
    version = ocfg.version
    data = load_ontology_file(version)
    topics = build_topics(data, int(cfg.data.seed))
    out = paths.ontology
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "topics.jsonl", topics)
    counts = {tr: sum(t.track == tr for t in topics) for tr in TRACKS}
    write_manifest(
        out,
        "ontology",
        {"version": version, "seed": int(cfg.data.seed)},
        hash_tree(out),
        code=(__name__,),
        extra={"topics_per_track": counts, "subtopics": sum(len(t.subtopics) for t in topics)},
    )
    log.info("ontology v%s: %d topics %s", version, len(topics), counts)


def load_topics(paths: Paths) -> list[Topic]:
    from memlens.core.io import read_records

    return read_records(paths.ontology / "topics.jsonl", Topic)
