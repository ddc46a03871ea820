"""Stage manifests record the hash of the code that produced them (never the hash of nothing)."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from memlens.core import store

EMPTY = hashlib.sha256(b"").hexdigest()


def test_names_resolve_across_the_layers():
    assert store.code_hash("generate") == store.code_hash("build/generate") != EMPTY
    assert store.code_hash("schema") == store.code_hash("core/schema") != EMPTY
    assert store.code_hash("judge") == store.code_hash("eval/judge") != EMPTY
    assert store.code_hash("generate", "abilities") == store.code_hash("abilities", "generate")
    assert store.code_hash("generate", "abilities") not in (store.code_hash("generate"), store.code_hash("abilities"))


@pytest.mark.parametrize("name", ["no_such_stage", "images"])  # unknown; in two layers (core/images.py, build/images/)
def test_unknown_or_ambiguous_name_is_an_error(name):
    with pytest.raises(ValueError, match=name):
        store.code_hash(name)


def test_hash_follows_the_source(tmp_path, monkeypatch):
    pkg = tmp_path / "memlens"
    shutil.copytree(store.PACKAGE_ROOT / "build" / "filter", pkg / "build" / "filter")
    monkeypatch.setattr(store, "PACKAGE_ROOT", pkg)
    before = store.code_hash("filter")
    (pkg / "build" / "filter" / "stage.py").write_text("# changed\n", encoding="utf-8")
    assert store.code_hash("filter") != before


def test_every_build_manifest_records_its_code(tiny_project):
    for d in ("ontology", "images", "filtered", "generated", "instances"):
        m = json.loads((tiny_project / "data" / d / "manifest.json").read_text())
        assert m["code_sha256"] not in (None, EMPTY), d
