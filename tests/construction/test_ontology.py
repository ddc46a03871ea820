"""ontology stage: topic records follow the ontology file, deterministically; malformed files fail clearly."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from memlens.construction.ontology import stage as O
from memlens.core.config import Paths
from memlens.core.errors import DataError
from memlens.core.io import read_json, read_records
from memlens.core.schema import AR, TRACKS, Topic
from tests.support.settings import settings

ANSWERABLE = {"information_extraction", "multi_session_reasoning", "temporal_reasoning", "knowledge_update"}


def small_ontology() -> dict:
    """Three tracks with uneven sub-attribute and topic counts."""

    def topics(prefix, n):
        return [
            {"title": f"{prefix} {i}", "subtopics": [f"{prefix} {i} a", f"{prefix} {i} b"], "families": ["receipt"]}
            for i in range(n)
        ]

    return {
        "version": "t",
        "tracks": {
            "identification": {
                "share": 0.5,
                "sub_attributes": {
                    "pets": {"title": "Pets", "topics": topics("pet", 5)},
                    "shops": {"title": "Shops", "topics": topics("shop", 3)},
                },
            },
            "experience": {"share": 0.3, "sub_attributes": {"trips": {"title": "Trips", "topics": topics("trip", 4)}}},
            "document": {
                "share": 0.2,
                "sub_attributes": {
                    "bills": {"title": "Bills", "topics": topics("bill", 2)},
                    "tickets": {"title": "Tickets", "topics": topics("ticket", 1)},
                },
            },
        },
    }


def write(tmp_path: Path, obj, name="onto.json") -> Path:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return p


def test_topics_follow_the_file(tmp_path):
    data = small_ontology()
    topics = O.build_topics(O.load_ontology_file(path=write(tmp_path, data)), seed=1)
    want = {
        (tr, sk, t["title"])
        for tr, td in data["tracks"].items()
        for sk, sub in td["sub_attributes"].items()
        for t in sub["topics"]
    }
    assert {(t.track, t.sub_attribute, t.title) for t in topics} == want
    assert len({t.topic_id for t in topics}) == len(topics)  # ids are unique
    by_title = {t.title: t for t in topics}
    assert by_title["pet 3"].subtopics == ["pet 3 a", "pet 3 b"] and by_title["pet 3"].families == ["receipt"]
    counts = Counter(t.track for t in topics)
    assert counts == Counter(
        {tr: sum(len(s["topics"]) for s in td["sub_attributes"].values()) for tr, td in data["tracks"].items()}
    )


def test_each_topic_serves_one_answerable_ability_and_refusal(tmp_path):
    topics = O.build_topics(small_ontology(), seed=3)
    subsets: dict[str, list[Topic]] = {}
    for t in topics:
        answerable = [a for a in t.abilities if a in ANSWERABLE]
        assert len(answerable) == 1 and AR in t.abilities, t
        subsets.setdefault(answerable[0], []).append(t)
    assert set(subsets) == ANSWERABLE
    sizes = [len(v) for v in subsets.values()]
    assert max(sizes) - min(sizes) <= 1  # dealt round-robin: balanced subsets


def test_packaged_ontology_subsets_span_every_track():
    topics = O.build_topics(O.load_ontology_file(), seed=42)
    for ability in ANSWERABLE:
        assert {t.track for t in topics if ability in t.abilities} == set(TRACKS), ability


def test_packaged_ontology_track_shares_match_their_topic_counts():
    data = O.load_ontology_file()
    topics = O.build_topics(data, seed=42)
    counts = Counter(t.track for t in topics)
    shares = {tr: float(td["share"]) for tr, td in data["tracks"].items()}
    assert sum(shares.values()) == pytest.approx(1.0)
    n_sub = sum(len(td["sub_attributes"]) for td in data["tracks"].values())
    for tr in TRACKS:  # declared shares hold up to rounding per sub-attribute
        assert abs(counts[tr] / len(topics) - shares[tr]) <= n_sub / len(topics), tr


def test_deterministic_and_seed_only_changes_the_ability_deal(tmp_path):
    data = small_ontology()
    a, b = O.build_topics(data, seed=7), O.build_topics(data, seed=7)
    assert [t.to_dict() for t in a] == [t.to_dict() for t in b]
    others = [O.build_topics(data, seed=s) for s in (8, 9, 10)]
    for c in others:  # same topics and ids whatever the seed
        assert [(t.topic_id, t.title) for t in c] == [(t.topic_id, t.title) for t in a]
    assert any([t.abilities for t in c] != [t.abilities for t in a] for c in others)


def test_adding_a_topic_keeps_the_other_ids(tmp_path):
    data = small_ontology()
    before = {t.title: t.topic_id for t in O.build_topics(data, seed=1)}
    data["tracks"]["experience"]["sub_attributes"]["trips"]["topics"].append({"title": "trip new"})
    after = {t.title: t.topic_id for t in O.build_topics(data, seed=1)}
    assert set(after) - set(before) == {"trip new"}
    assert all(after[k] == v for k, v in before.items())


def test_run_writes_topics_and_manifest(tmp_path):
    cfg = settings(data={"seed": 5}, ontology={"version": "1"})
    O.run(cfg, Paths(tmp_path))
    topics = read_records(tmp_path / "data" / "ontology" / "topics.jsonl", Topic)
    data = O.load_ontology_file("1")
    assert [t.to_dict() for t in topics] == [t.to_dict() for t in O.build_topics(data, 5)]
    m = read_json(tmp_path / "data" / "ontology" / "manifest.json")
    assert m["topics_per_track"] == {
        tr: sum(len(s["topics"]) for s in data["tracks"][tr]["sub_attributes"].values()) for tr in TRACKS
    }
    assert m["subtopics"] == sum(len(t.subtopics) for t in topics)
    assert m["config"] == {"version": "1", "seed": 5}
    first = (tmp_path / "data" / "ontology" / "topics.jsonl").read_bytes()
    O.run(cfg, Paths(tmp_path))
    assert (tmp_path / "data" / "ontology" / "topics.jsonl").read_bytes() == first


def _drop(d, *keys):
    for k in keys[:-1]:
        d = d[k]
    del d[keys[-1]]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("tracks"), "needs a 'tracks' object"),
        (lambda d: d["tracks"].update(hobbies={"sub_attributes": {}}), "unknown track 'hobbies'"),
        (lambda d: d["tracks"].update(document=[]), "tracks.document needs a 'sub_attributes' object"),
        (
            lambda d: _drop(d, "tracks", "experience", "sub_attributes", "trips", "topics"),
            "tracks.experience.sub_attributes.trips needs a 'topics' list",
        ),
        (
            lambda d: d["tracks"]["document"]["sub_attributes"]["bills"]["topics"][1].pop("title"),
            "tracks.document.sub_attributes.bills.topics[1] needs a non-empty string 'title'",
        ),
        (
            lambda d: d["tracks"]["document"]["sub_attributes"]["bills"]["topics"].append({"title": "bill 0"}),
            "duplicate title 'bill 0'",
        ),
        (
            lambda d: d["tracks"]["identification"]["sub_attributes"]["pets"]["topics"][0].update(subtopics="cats"),
            "'subtopics' must be a list of strings",
        ),
    ],
)
def test_malformed_ontology_names_file_and_place(tmp_path, mutate, message):
    data = small_ontology()
    mutate(data)
    path = write(tmp_path, data)
    with pytest.raises(DataError) as exc:
        O.load_ontology_file(path=path)
    assert str(path) in str(exc.value) and message in str(exc.value)


def test_unreadable_or_incomplete_ontology(tmp_path):
    with pytest.raises(DataError, match="not valid JSON"):
        O.load_ontology_file(path=write(tmp_path, '{"tracks": {'))
    with pytest.raises(DataError, match="file not found"):
        O.load_ontology_file(version="no-such-version")
    data = small_ontology()
    del data["tracks"]["document"]
    with pytest.raises(DataError, match="track 'document' is missing"):
        O.build_topics(O.load_ontology_file(path=write(tmp_path, data)), seed=1)
