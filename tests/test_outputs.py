"""A stage that fails, whatever the cause, leaves its previous outputs byte-identical (one test per
stage); a stage killed outright gets them back on its next run; a successful run replaces them."""

from __future__ import annotations

import errno
import importlib
from pathlib import Path

import pytest

from memlens.cli import STAGES, main
from memlens.core.config import load_config
from memlens.core.errors import DataError
from memlens.core.outputs import STAGE_OUTPUTS, declared_outputs, guard_outputs, stage_outputs
from tests.conftest import REPO, TINY

#: how each stage's run fails (cycled): the exception and the exit status it must end with
FAULTS = [
    (lambda: DataError("bad input"), 2),
    (lambda: OSError(errno.ENOSPC, "No space left on device", "/cache/x"), 3),
    (lambda: KeyboardInterrupt(), 130),
    (lambda: RuntimeError("a bug"), 4),
]


def snapshot(paths: list[Path]) -> dict[str, bytes]:
    out = {}
    for p in paths:
        for f in [p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file()):
            out[str(f)] = f.read_bytes()
    return out


def previous_outputs(outs) -> None:
    """Give every output a previous version (files of the kind the stage writes)."""
    for o in outs:
        if o.path.exists():
            continue
        if o.path.suffix:
            o.path.parent.mkdir(parents=True, exist_ok=True)
            o.path.write_bytes(b"previous " + o.path.name.encode())
        else:
            (o.path / "sub").mkdir(parents=True)
            (o.path / "sub" / "old.jsonl").write_bytes(b'{"old": 1}\n')


def scribble(outs) -> None:
    """What a stage does before it fails: truncate, overwrite, add files."""
    for o in outs:
        if o.path.is_dir():
            for f in o.path.rglob("*"):
                if f.is_file():
                    f.write_bytes(b"")
            (o.path / "new.jsonl").write_text("half a li")
        else:
            o.path.parent.mkdir(parents=True, exist_ok=True)
            o.path.write_text("half")


@pytest.mark.parametrize("stage", list(STAGES))
def test_a_failed_stage_leaves_its_previous_outputs_byte_identical(stage, tiny_copy, monkeypatch):
    root = tiny_copy
    overrides = [*TINY, "model=chance"]
    outs = stage_outputs(stage, root, load_config(overrides, root=root))
    assert outs, stage
    previous_outputs(outs)
    before = snapshot([o.path for o in outs])
    fault, status = FAULTS[list(STAGES).index(stage) % len(FAULTS)]

    def failing_run(cfg, paths):
        scribble(outs)
        raise fault()

    module = importlib.import_module(STAGES[stage].split(":")[0])
    monkeypatch.setattr(module, "run", failing_run)
    assert main([stage, "--root", str(root), *overrides]) == status
    assert snapshot([o.path for o in outs]) == before
    assert not any((root / ".memlens-prev" / "outputs").rglob("*.*")), "nothing is left aside"


def test_a_real_bad_input_assemble_keeps_its_instances(tiny_copy):
    """The issue's case: `memlens assemble` on an empty questions.jsonl truncated 32k.jsonl to 0 bytes."""
    root = tiny_copy
    inst = root / "data" / "instances"
    before = snapshot([inst])
    (root / "data" / "generated" / "questions.jsonl").write_text("")
    assert main(["assemble", "--root", str(root), *TINY]) == 2
    assert snapshot([inst]) == before and (inst / "32k.jsonl").stat().st_size > 0


def test_a_killed_run_gets_its_previous_outputs_back_and_success_replaces_them(tmp_path):
    root = tmp_path
    (root / "data" / "ontology").mkdir(parents=True)
    (root / "data" / "ontology" / "topics.jsonl").write_text("old\n")
    outs = stage_outputs("ontology", root)
    from memlens.core.outputs import _set_aside

    _set_aside(outs[0])  # what a run does first; then it is killed (-9) after writing half an output
    (root / "data" / "ontology").mkdir()
    (root / "data" / "ontology" / "topics.jsonl").write_text("ha")
    with guard_outputs("ontology", root):  # the next run: the previous output is back before it starts
        assert not (root / "data" / "ontology").exists()  # set aside again while this run works
        assert (root / ".memlens-prev" / "outputs" / "data" / "ontology" / "topics.jsonl").read_text() == "old\n"
        (root / "data" / "ontology").mkdir()
        (root / "data" / "ontology" / "topics.jsonl").write_text("new\n")
    assert (root / "data" / "ontology" / "topics.jsonl").read_text() == "new\n"
    assert not (root / ".memlens-prev" / "outputs" / "data" / "ontology").exists()


def test_the_fallback_table_is_dvc_yamls_outputs():
    for stage in STAGES:
        assert sorted(declared_outputs(stage, REPO)) == sorted(STAGE_OUTPUTS[stage]), stage
