"""Stage manifests record the hash of the code that produced them (never the hash of nothing)."""

from __future__ import annotations

import hashlib
import json

import pytest

from memlens.core import codegraph

EMPTY = hashlib.sha256(b"").hexdigest()
STAGE_OF = {
    "ontology": "ontology",
    "images": "crawl",
    "filtered": "filter",
    "generated": "generate",
    "instances": "assemble",
}


def test_code_hash_is_the_closure_of_the_stage_module():
    h = codegraph.code_hash("memlens.construction.generate.stage")
    assert h != EMPTY
    assert h != codegraph.code_hash("memlens.construction.filter.stage")
    files = codegraph.code_files(["memlens.construction.generate.stage"])
    names = {str(f.relative_to(codegraph.PKG)) for f in files}
    # what generate really runs: its question-type modules, the text bank and its data, core
    assert {
        "construction/generate/stage.py",
        "construction/abilities/tr.py",
        "construction/text/textbank.py",
        "core/io.py",
    } <= names
    assert any(n.startswith("construction/text/data/") for n in names)
    assert not any(n.startswith("eval/") for n in names)


def test_unknown_module_is_an_error():
    with pytest.raises(KeyError, match="no_such"):
        codegraph.code_hash("memlens.construction.no_such.stage")


def test_every_build_manifest_records_its_code(tiny_project):
    for d, stage in STAGE_OF.items():
        m = json.loads((tiny_project / "data" / d / "manifest.json").read_text())
        assert m["code_sha256"] == codegraph.code_hash(f"memlens.construction.{stage}.stage"), d
