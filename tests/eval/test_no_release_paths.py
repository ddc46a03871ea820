"""No path reaches a system: the official layout marks evidence by folder (``needle_images/`` vs
``haystack_images/``), as it marks turns with ``has_answer`` and sessions with
``answer_session_ids``; a detector on the path alone reaches AUC 0.82-0.86. These are labels of the
format, and no surface a system sees may carry them: the request bodies the evaluation client sends
(direct prompts, caption mode, memory agents), what a memory agent and an input adapter are given,
and the MemOS/M2A exchange exports. Each surface is scanned, for items of a built benchmark and of
its exported release, for the folder names, the label fields, the release folder, every release
image file name and any ``data/`` path; :func:`test_the_scan_catches_a_planted_path` shows that the
scan finds a path planted in a surface."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

from memlens.construction.export import stage as E
from memlens.core.config import Paths
from memlens.core.items import BuiltBenchmark
from memlens.core.official import OfficialRelease, iter_json_array
from memlens.eval.agents.exchange import export_inputs
from memlens.eval.agents.view import ImageStore, build_view
from memlens.eval.memory.adapters import MarkersAdapter
from memlens.eval.prompt import build_messages
from memlens.eval.systems.base import MODES
from tests.conftest import TINY, run_stage
from tests.evaluate.eval_support import openai_overrides
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.settings import settings

LABELS = ("needle_images", "haystack_images", "has_answer", "answer_session_ids")
DATA_DIRS = ("release", "images", "generated", "instances", "filtered", "ontology", "predictions", "verdicts")
#: a ``data/<stage output>`` path, relative or absolute
DATA_PATH = re.compile(r"(?<![\w.-])data/(?:" + "|".join(DATA_DIRS) + r")\b")
#: the payload of an inline image (image bytes, not text: the scan reads what is text)
DATA_URL = re.compile(r"data:image/[\w.+-]+;base64,[A-Za-z0-9+/=]+")
LENGTH = "32k"


class Forbidden:
    """What no system-facing string may contain, for one exported project."""

    def __init__(self, root: Path):
        self.root = root
        self.release = root / "data" / "release"
        names = set()
        for p in self.release.glob("dataset_*.json"):
            for it in iter_json_array(p):
                names |= {i["file"].rsplit("/", 1)[-1] for s in it["haystack_sessions"] for t in s for i in t["images"]}
        assert names, "the release names image files"
        self.fixed = (*LABELS, str(self.release), str(root / "data") + "/", *sorted(names))

    def leaks(self, text: str) -> list[str]:
        text = DATA_URL.sub("data:image/<bytes>", text)
        found = [f for f in self.fixed if f in text]
        found += [m.group(0) for m in DATA_PATH.finditer(text)]
        return found


def strings(obj, skip: frozenset[str] = frozenset()):
    """Every string in ``obj`` (JSON values, dataclasses, paths), keys included; ``skip``: field or
    key names left out (what the runtime keeps and never hands on)."""
    if isinstance(obj, (str, Path)):
        yield str(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k not in skip:
                yield str(k)
                yield from strings(v, skip)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            yield from strings(v, skip)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            if f.name not in skip:
                yield from strings(getattr(obj, f.name), skip)


def assert_clean(forbidden: Forbidden, surface: str, obj, skip: frozenset[str] = frozenset()) -> int:
    n = 0
    for s in strings(obj, skip):
        n += 1
        bad = forbidden.leaks(s)
        assert not bad, f"{surface}: {bad[:3]} in {s[:200]!r}"
    return n


# ------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def project(tiny_project, tmp_path_factory):
    """A copy of the tiny build with its release exported (the official layout)."""
    root = tmp_path_factory.mktemp("paths") / "proj"
    shutil.copytree(tiny_project, root)
    E.run(settings(export={"huggingface": False}), Paths(root))
    return root


@pytest.fixture(scope="module")
def forbidden(project):
    return Forbidden(project)


@pytest.fixture(scope="module")
def sources(project, tmp_path_factory):
    """The two item sources a system is evaluated on: the build and its release."""
    return {
        "built": BuiltBenchmark(Paths(project)),
        "release": OfficialRelease(project / "data" / "release", neutral_dir=project / ".memlens_cache" / "neutral"),
    }


def _items(source):
    return list(source.items(LENGTH))


# ------------------------------------------------------------------------------------ surfaces
def check_items_and_prompts(sources, forbidden) -> None:
    """``EvalItem.for_system`` (every field but the image resolver) and the text of every prompt
    mode's messages; image blocks hold resolved paths the client encodes (scanned as sent, below)."""
    for name, src in sources.items():
        for item in _items(src):
            for mode in MODES:
                if mode == "caption":
                    continue  # needs an adapter's texts: test_caption_mode_requests
                view = item.for_system(mode)
                assert_clean(forbidden, f"{name} for_system({mode})", view, skip=frozenset({"resolve_image"}))
                msgs = build_messages(view, mode)
                texts = [b["text"] for m in msgs for b in m["content"] if b.get("type") == "text"]
                assert_clean(forbidden, f"{name} prompt text ({mode})", texts)


def check_agent_views(sources, forbidden, store: ImageStore) -> None:
    """The role-stripped view (sessions, turns, images: the ``ImageInput`` every adapter reads) of
    every item; the runtime's neutral-to-benchmark id map is not handed on and is skipped."""
    for name, src in sources.items():
        for item in _items(src):
            view = build_view(item.for_system(), store)
            assert_clean(forbidden, f"{name} agent view", view, skip=frozenset({"real_ids"}))
            for s in view.sessions:
                for im in s.images:  # the adapters' input: a content-addressed file
                    assert im.path.name.startswith(im.sha256) and im.path.parent == store.root, im.path


def check_exchange(sources, forbidden, fmt: str, tmp: Path) -> None:
    """The MemOS/M2A inputs: every file written (names and JSON text)."""
    for name, src in sources.items():
        out = tmp / f"{name}-{fmt}"
        export_inputs({LENGTH: _items(src)}, fmt, out, MarkersAdapter(), ImageStore(tmp / f"images-{name}-{fmt}"))
        files = sorted(p for p in out.rglob("*") if p.is_file())
        assert files
        assert_clean(forbidden, f"{name} {fmt} export file names", [str(p.relative_to(out)) for p in files])
        for p in files:
            if p.suffix == ".json":
                assert_clean(forbidden, f"{name} {fmt} export {p.name}", json.loads(p.read_text(encoding="utf-8")))
        if fmt == "locomo":
            assert any(p.parent.name == "images" for p in files)


def test_the_items_and_prompts_a_system_is_given(sources, forbidden):
    check_items_and_prompts(sources, forbidden)


def test_what_a_memory_agent_and_its_adapters_are_given(project, sources, forbidden):
    check_agent_views(sources, forbidden, ImageStore(project / ".memlens_cache" / "agents" / "images"))


@pytest.mark.parametrize("fmt", ["longmemeval", "locomo"])
def test_the_exchange_exports(sources, forbidden, fmt, tmp_path):
    check_exchange(sources, forbidden, fmt, tmp_path)


def _evaluate(root: Path, server, *extra: str, model: str) -> None:
    ov = openai_overrides(server, *extra, model=model)
    assert run_stage(root, "evaluate", *TINY, f"eval.lengths=[{LENGTH}]", *ov) == 0


@pytest.mark.parametrize("mode", ["standard", "label_images", "oracle_evidence"])
def test_the_request_bodies_the_client_sends(project, forbidden, mode):
    """Every request body of the evaluate stage (the OpenAI-compatible system) on both sources."""
    release = project / "data" / "release"
    runs = {"built": (), "release": ("data.items=official", f"data.official_dir={release}")}
    for name, extra in runs.items():
        with FakeOpenAIServer() as server:
            _evaluate(project, server, f"eval.mode={mode}", *extra, model=f"paths-{name}-{mode}")
            bodies = server.requests
        assert bodies
        n = sum(assert_clean(forbidden, f"{name} request body ({mode})", b) for b in bodies)
        assert n > len(bodies)
        assert any("data:image/" in json.dumps(b) for b in bodies)  # the images went, as bytes


def test_caption_mode_requests(project, forbidden):
    with FakeOpenAIServer() as server:
        _evaluate(project, server, "eval.mode=caption", "eval.caption_adapter=markers", model="paths-caption")
        bodies = server.requests
    assert bodies and all("[image]" in json.dumps(b) for b in bodies[:3])
    for b in bodies:
        assert_clean(forbidden, "caption-mode request body", b)


@pytest.mark.parametrize("model", ["memory-t1", "memagent-7b"])
def test_memory_agent_request_bodies(project, forbidden, model):
    from tests.agents.agent_support import agent_responder

    extra = ("model.chunk_tokens=800",) if model == "memagent-7b" else ()
    with FakeOpenAIServer(responder=agent_responder) as server:
        args = (*TINY, f"model={model}", f"model.base_url={server.base_url}", "eval.max_items=3", *extra)
        assert run_stage(project, "evaluate", *args, f"eval.lengths=[{LENGTH}]") == 0
        bodies = server.requests
    assert bodies
    for b in bodies:
        assert_clean(forbidden, f"{model} request body", b)


# ------------------------------------------------------------------------------------ the scan can fail
def test_the_scan_catches_a_planted_path(project, sources, forbidden, monkeypatch, tmp_path):
    """Each surface check fails when its surface is made to leak: the item a system is given (a
    release image path in a session date), an agent's images (the release file itself, not a
    content-addressed copy), an exchange export (a label field), a request body (a data/ path)."""
    import memlens.core.items as items_mod
    import memlens.eval.agents.exchange as exchange_mod
    from memlens.eval.agents.view import AgentImage

    release = sources["release"]
    item = _items(release)[0]
    rel = release._file_of[item.image_ids[0]]  # the release path of one of its images
    real_for_system = items_mod.EvalItem.for_system

    def leaky_for_system(self, *a, **k):
        view = real_for_system(self, *a, **k)
        view.sessions[0].date = f"{view.sessions[0].date} ({rel})"
        return view

    with monkeypatch.context() as m:
        m.setattr(items_mod.EvalItem, "for_system", leaky_for_system)
        with pytest.raises(AssertionError, match=re.escape(rel.rsplit("/", 1)[-1])):
            check_items_and_prompts(sources, forbidden)

    class LeakyStore(ImageStore):
        def image(self, image_id, resolve):
            got = super().image(image_id, resolve)
            return AgentImage(got.sha256, release.release_path(release._file_of.get(image_id, rel)), got.family)

    with pytest.raises(AssertionError, match="release"):
        check_agent_views({"release": release}, forbidden, LeakyStore(tmp_path / "leaky"))

    real_item = exchange_mod.longmemeval_item
    with monkeypatch.context() as m:
        m.setattr(exchange_mod, "longmemeval_item", lambda *a: {**real_item(*a), "answer_session_ids": []})
        with pytest.raises(AssertionError, match="answer_session_ids"):
            check_exchange(sources, forbidden, "longmemeval", tmp_path / "x")

    for body in ({"messages": [{"content": "see data/images/objects/x.png"}]}, {"has_answer": True}):
        with pytest.raises(AssertionError):
            assert_clean(forbidden, "planted body", body)
    # inline image bytes are not text: a body whose only "path" is base64 payload passes
    assert assert_clean(forbidden, "clean body", {"url": "data:image/png;base64,ZGF0YS9yZWxlYXNl"}) == 2


def test_url_transport_names_content_hashes_only(project, forbidden):
    """``image_transport: url`` sends ``file://`` URLs of the files the items resolve to: for both
    sources a content-addressed copy ``<cache>/neutral_images/<sha256>.<ext>``, never a release
    path, folder or file name and never a ``data/`` path."""
    release = project / "data" / "release"
    runs = {"built": (), "release": ("data.items=official", f"data.official_dir={release}")}
    for name, extra in runs.items():
        with FakeOpenAIServer() as server:
            _evaluate(project, server, "model.image_transport=url", "eval.max_items=4", *extra, model=f"url-{name}")
            bodies = server.requests
        urls = re.findall(r'"url": ?"(file://[^"]+)"', "".join(json.dumps(b) for b in bodies))
        assert urls
        for u in urls:
            assert re.fullmatch(r"[0-9a-f]{64}\.[a-z0-9]+", u.rsplit("/", 1)[-1]), u
            assert u.rsplit("/", 2)[-2] == "neutral_images", u
        for b in bodies:
            assert_clean(forbidden, f"{name} request body (url transport)", b)
