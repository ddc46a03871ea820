"""The component registry: marks found from the source (nothing imported), a component's module
imported only when it is chosen, unknown names and kinds are errors listing what exists, two
components of one name are an error, and a `_target_` must be a component of its section's kinds."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from memlens.core import registry as R
from memlens.core.errors import ConfigError
from tests.conftest import REPO


def test_every_kind_has_components_and_each_mark_is_its_class():
    for kind in R.KINDS:
        found = R.discover(kind)
        assert found, kind
        for name, (module, cls) in found.items():
            assert R.in_kind(kind, module), (kind, module)
            obj = R.find_component(kind, name)
            assert (obj.__module__, obj.__name__) == (module, cls)
            assert (obj.component_kind, obj.component_name) == (kind, name)


def test_listing_imports_no_component():
    code = textwrap.dedent(
        """
        import sys
        from memlens.core.registry import component_names, find_component
        names = component_names("adapter")
        assert "ocr" in names and "render" in names, names
        assert "memlens.eval.memory.ocr" not in sys.modules
        assert "memlens.eval.memory.render" not in sys.modules
        find_component("adapter", "render")
        assert "memlens.eval.memory.render" in sys.modules and "memlens.eval.memory.ocr" not in sys.modules
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_unknown_names_and_kinds_list_what_exists():
    with pytest.raises(ConfigError, match=r"unknown retriever 'bm26' \(known: bm25, dense, fusion, image\)"):
        R.find_component("retriever", "bm26")
    with pytest.raises(ConfigError, match=r"unknown component kind 'adaptor' \(kinds: model, agent"):
        R.discover("adaptor")
    with pytest.raises(ValueError, match="unknown component kind"):
        R.component("adaptor", "x")


def test_a_target_must_be_a_component_of_its_kinds():
    assert R.class_for_target("judge", "memlens.eval.judge.llm.LLMJudge").__name__ == "LLMJudge"
    with pytest.raises(ConfigError, match=r"model._target_ 'memlens.eval.judge.llm.LLMJudge' is not a model or agent"):
        R.class_for_target(("model", "agent"), "memlens.eval.judge.llm.LLMJudge", section="model")
    with pytest.raises(ConfigError, match="cannot be imported"):
        R.class_for_target("judge", "nowhere.Nothing", section="judge")
    assert R.class_for_target("judge", "collections.OrderedDict").__name__ == "OrderedDict"  # a class of your own


def test_two_components_of_one_name_are_an_error(tmp_path):
    pkg = tmp_path / "memlens"
    folder = pkg / "eval" / "memory"
    folder.mkdir(parents=True)
    for d in (pkg, pkg / "eval", folder):
        (d / "__init__.py").touch()
    mark = "from memlens.core.registry import component\n@component('adapter', 'dup')\nclass {}:\n    pass\n"
    (folder / "a.py").write_text(mark.format("A"))
    assert R.scan("adapter", pkg) == {"dup": ("memlens.eval.memory.a", "A")}
    (folder / "b.py").write_text(mark.format("B"))
    with pytest.raises(ConfigError, match=r"two adapters named 'dup'"):
        R.scan("adapter", pkg)


def test_named_fields_check_the_registry():
    from typing import Annotated

    from pydantic import BaseModel

    class S(BaseModel):
        adapter: Annotated[str, R.named("adapter")]
        retrievers: Annotated[list[str], R.named("retriever")] = []

    assert S(adapter="ocr", retrievers=["bm25"]).adapter == "ocr"
    with pytest.raises(ValueError, match=r"unknown adapter 'orc' \(known: caption, interleaved"):
        S(adapter="orc")
    with pytest.raises(ValueError, match=r"unknown retriever 'tfidf'"):
        S(adapter="ocr", retrievers=["bm25", "tfidf"])


def test_selected_kinds_are_read_from_literal_calls():
    import ast

    tree = ast.parse("find_component('adapter', x)\nclass_for_target(('model', 'agent'), t)\nfind_component(k, x)\n")
    assert R.selected_kinds(tree) == {"adapter", "model", "agent"}
