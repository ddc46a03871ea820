"""Nothing a system under test can see reveals a role or an answer: the release items hold the
official fields only, the answer key is a file of its own that round-trips, and the items and
prompts a system receives carry neutral ids, no evidence flags and no answer key."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from memlens.construction.export import stage as E
from memlens.core.config import Paths
from memlens.core.errors import DataError
from memlens.core.io import iter_jsonl, sha256_file
from memlens.core.items import ANSWER_SPACE_KEYS, BuiltBenchmark
from memlens.core.official import ANSWER_KEY, IMAGE_REF_FIELDS, ITEM_FIELDS, TURN_FIELDS, OfficialRelease
from memlens.core.official import iter_json_array as items_of
from memlens.eval.prompt import build_messages
from memlens.eval.systems.base import Model, ModelOutput
from tests.support.settings import settings

#: words that name a role or the answer key; none may appear in an id, a file name or a URL
ROLE_RE = re.compile(r"needle|haystack|evidence|filler|distract|answer|truth|oracle|derivation|entity", re.I)
SESSION_ID_RE = re.compile(r"^sess_[0-9a-f]{12}$")
IMAGE_ID_RE = re.compile(r"^[0-9a-f]{64}$")
CFG = settings(export={"huggingface": True})


@pytest.fixture(scope="module")
def project(tiny_project, tmp_path_factory):
    root = tmp_path_factory.mktemp("hygiene")
    for d in ("generated", "instances", "images"):
        shutil.copytree(tiny_project / "data" / d, root / "data" / d)
    E.run(CFG, Paths(root))
    return root


@pytest.fixture(scope="module")
def bench(project):
    return BuiltBenchmark(Paths(project))


@pytest.fixture(scope="module")
def release(project, tmp_path_factory):
    return OfficialRelease(project / "data" / "release", neutral_dir=tmp_path_factory.mktemp("neutral"))


def _strings(obj, skip=()):
    """Every string value of a JSON value, except under the keys in ``skip``."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k not in skip:
                yield from _strings(v, skip)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v, skip)


# ---------------------------------------------------------------------------------------------
# the model-facing release
# ---------------------------------------------------------------------------------------------


def test_release_items_hold_the_official_fields_only(project, bench):
    rel = project / "data" / "release"
    official = set(ITEM_FIELDS)
    for ln in bench.lengths():
        for it in items_of(rel / f"dataset_{ln}.json"):
            assert set(it) <= official and set(it) >= official - {"old_answer"}, sorted(set(it) - official)
            for s in it["haystack_sessions"]:
                for t in s:
                    assert set(t) == set(TURN_FIELDS)
                    for ref in t["images"]:
                        assert set(ref) == set(IMAGE_REF_FIELDS)


def test_release_ids_names_and_urls_are_neutral(project, bench):
    """Session ids are content hashes, image files the first 12 hex digits of their SHA-256; the
    only role markers are the official ones (``answer_session_ids``, ``has_answer`` and the
    ``needle_images/`` folder), which the loader never passes to a system."""
    rel = project / "data" / "release"
    for ln in bench.lengths():
        for it in items_of(rel / f"dataset_{ln}.json"):
            assert all(SESSION_ID_RE.match(s) for s in it["haystack_session_ids"]), it["haystack_session_ids"]
            assert not ROLE_RE.search(it["question_id"])
            for s in it["haystack_sessions"]:
                for t in s:
                    for ref in t["images"]:
                        folder, name = ref["file"].split("/")
                        assert folder in ("needle_images", "haystack_images")
                        assert re.fullmatch(r"[0-9a-f]{12}\.(?:jpg|png|webp|gif)", name), name
                        assert not ROLE_RE.search(ref["image_url"]) and not ROLE_RE.search(ref["blip_caption"])
            # nothing but the official fields' values: no derivation, entity map or ground truth
            text = ("content", "question", "answer", "old_answer", "file", "question_type", "question_subtype")
            leftovers = [x for x in _strings(it, skip=text) if ROLE_RE.search(x)]
            assert not leftovers, leftovers
    files = {p.relative_to(rel).parts[0] for p in rel.rglob("*") if p.is_file()}
    assert files <= {"release_images", "hf", "manifest.json", "README.md", "agent_subset_195.json", ANSWER_KEY} | {
        f"dataset_{ln}.json" for ln in bench.lengths()
    }


def test_parquet_items_hold_the_official_fields_only(project):
    import pyarrow.parquet as pq

    for p in (project / "data" / "release" / "hf").glob("dataset_*.parquet"):
        assert set(pq.read_schema(p).names) == set(ITEM_FIELDS)


# ---------------------------------------------------------------------------------------------
# the answer key
# ---------------------------------------------------------------------------------------------


def test_answer_key_round_trips(project, bench, release):
    rows = list(iter_jsonl(project / "data" / "release" / ANSWER_KEY))
    assert [r["question_id"] for r in rows] == sorted(bench.questions)
    got = release.questions
    for qid, q in bench.questions.items():
        r = got[qid]
        assert [(e.session_id, e.date, e.fact) for e in r.evidence] == [
            (e.session_id, e.date, e.fact) for e in q.evidence
        ], qid
        assert (r.topic_id, r.ordered_evidence, r.image_essential, r.source_question_id) == (
            q.topic_id,
            q.ordered_evidence,
            q.image_essential,
            q.source_question_id,
        )
        assert r.details == {k: v for k, v in q.details.items() if k != "forbidden"}
    # evidence images come back as the same content ids as in the built benchmark
    ln = bench.lengths()[0]
    loaded = {it.question_id: it.question for it in release.items(ln)}
    for qid, q in loaded.items():
        assert [e.image_ids for e in q.evidence] == [e.image_ids for e in bench.questions[qid].evidence]


def test_release_without_answer_key_still_works(project, tmp_path):
    rel = tmp_path / "rel"
    shutil.copytree(project / "data" / "release", rel, ignore=shutil.ignore_patterns("hf"))
    (rel / ANSWER_KEY).unlink()
    r = OfficialRelease(rel, neutral_dir=tmp_path / "n")
    items = list(r.items(r.lengths()[0]))
    assert all(it.question.details == {} for it in items)
    assert all(e.fact == "" for it in items for e in it.question.evidence)
    # the evidence still comes from answer_session_ids
    assert any(it.evidence_sessions for it in items) and set(r.questions) == {it.question_id for it in items}


def test_answer_key_of_another_build_is_a_clear_error(project, tmp_path):
    rel = tmp_path / "rel"
    shutil.copytree(project / "data" / "release", rel, ignore=shutil.ignore_patterns("hf", "release_images"))
    rows = list(iter_jsonl(rel / ANSWER_KEY))
    rows[0]["evidence"] = [{"session_id": "sess_000000000000", "date": "", "fact": "", "image_files": []}]
    (rel / ANSWER_KEY).write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=rf"{ANSWER_KEY}.*{rows[0]['question_id']}.*another build"):
        _ = OfficialRelease(rel).questions


# ---------------------------------------------------------------------------------------------
# what a system receives
# ---------------------------------------------------------------------------------------------


def _assert_neutral(view, full, mode):
    q = view.question
    assert (q.answer, q.old_answer, q.evidence, q.details, q.question_type, q.question_subtype) == (
        "",
        None,
        [],
        {},
        "",
        "",
    )
    assert (q.question_id, q.question, q.question_date) == (
        full.question_id,
        full.question.question,
        full.question.question_date,
    )
    if mode == "oracle_evidence":
        assert [s.session_id for s in view.sessions] == [s.session_id for s in full.evidence_sessions]
        assert all(s.is_evidence for s in view.sessions)
    else:
        assert [s.session_id for s in view.sessions] == [s.session_id for s in full.sessions]
        assert not any(s.is_evidence for s in view.sessions)
    for s in view.sessions:
        assert SESSION_ID_RE.match(s.session_id), s.session_id
        for t in s.turns:
            assert not t.has_answer
            for i in t.images:
                assert IMAGE_ID_RE.match(i), i
                path = view.resolve_image(i)
                assert not ROLE_RE.search(str(path)), path
                assert sha256_file(path) == i


@pytest.mark.parametrize("mode", ["standard", "oracle_evidence"])
def test_items_a_system_receives_are_neutral(bench, release, mode):
    ln = bench.lengths()[0]
    for source in (bench, release):
        for full in source.items(ln):
            view = full.for_system(mode)
            _assert_neutral(view, full, mode)
            # the prompt is the same as that of the full item, and names no role in any image reference
            msgs = build_messages(view, mode)
            assert json.dumps(msgs) == json.dumps(build_messages(full, mode))
            for m in msgs:
                for b in m["content"]:
                    if b["type"] == "image_url":
                        assert not ROLE_RE.search(str(b["image_url"]["url"])), b


def test_prompts_of_the_release_and_the_build_are_identical(bench, release):
    ln = bench.lengths()[0]
    built = {it.question_id: it for it in bench.items(ln)}
    for it in release.items(ln):
        b = built[it.question_id]
        assert it.fingerprint() == b.fingerprint()  # the same request: stored answers carry over
        a, c = build_messages(it.for_system()), build_messages(b.for_system())
        strip = [[x.get("text") for x in m["content"]] for m in a]
        assert strip == [[x.get("text") for x in m["content"]] for m in c]


def test_chance_baseline_alone_sees_the_answer_space(bench):
    full = next(iter(bench.items(bench.lengths()[0])))
    view = full.for_system(answer_space=True)
    assert view.question.question_type == full.question.question_type
    assert set(view.question.details) <= ANSWER_SPACE_KEYS and view.question.answer == ""
    from memlens.eval.systems.baselines import ChanceBaseline, RefuseBaseline

    assert ChanceBaseline.answer_space and not RefuseBaseline.answer_space and not Model.answer_space


class Recorder(Model):
    def __init__(self):
        super().__init__("recorder")
        self.seen = []

    def generate(self, item, mode="standard"):
        self.seen.append(item)
        return ModelOutput(text="Insufficient information")


def test_the_evaluate_stage_hands_systems_the_neutral_view(project, bench, tmp_path):
    from memlens.eval.benchmark import Benchmark
    from memlens.eval.evaluate.stage import evaluate_length
    from memlens.eval.results import ResultsStore

    ln = bench.lengths()[0]
    model = Recorder()
    store = ResultsStore(tmp_path / "results", {"name": "recorder"}, fsync=False)
    evaluate_length(model, store, Benchmark(bench, "built", Paths(project)), ln, "standard", Paths(project))
    full = {it.question_id: it for it in bench.items(ln)}
    assert len(model.seen) == len(full)
    for view in model.seen:
        _assert_neutral(view, full[view.question_id], "standard")


def test_a_release_opened_to_link_nothing_resolves_verified_release_files_and_writes_nothing(project, tmp_path):
    neutral = tmp_path / "neutral"
    r = OfficialRelease(project / "data" / "release", neutral_dir=neutral, link_images=False)
    item = next(iter(r.items(r.lengths()[0])))
    image_id = item.image_ids[0]
    path = r.resolve_image(image_id)
    assert path.is_relative_to(r.image_root) and sha256_file(path) == image_id
    assert not neutral.exists()  # a dry run writes nothing
    r = OfficialRelease(project / "data" / "release", neutral_dir=neutral)
    linked = next(iter(r.items(r.lengths()[0]))).resolve_image(image_id)
    assert linked.parent == neutral and linked.name.startswith(image_id)


def test_turns_shared_between_items_stay_as_each_item_shows_them(bench):
    """Sessions are shown by many items (another question's evidence becomes history without its
    ``has_answer`` marks, made once per session) and views reuse unmarked turns: building every
    item and every view twice gives the same items, evidence keeps its marks, history has none."""
    ln = bench.lengths()[0]

    def snapshot():
        out = {}
        for full in bench.items(ln):
            ev = {s.session_id for s in full.sessions if s.is_evidence}
            for s in full.sessions:
                marks = [t.has_answer for t in s.turns]
                if s.session_id not in ev:
                    assert not any(marks), (full.question_id, s.session_id)
            view = full.for_system()
            assert not any(t.has_answer for s in view.sessions for t in s.turns)
            out[full.question_id] = (
                full.fingerprint(),
                [(s.session_id, [t.has_answer for t in s.turns]) for s in full.sessions],
            )
        return out

    first = snapshot()
    assert any(any(marks) for _, sessions in first.values() for _, marks in sessions)  # evidence is marked
    assert snapshot() == first
