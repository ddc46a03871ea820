"""The command line users discover MemLens with: --version, --help of every command (a stage's config
keys, generated from dvc.yaml, the schema and conf/ comments), `memlens list ...`, the evaluate dry
run (renders one prompt, sends nothing), quiet HTTP loggers and the filter stage's progress bar."""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest
import yaml
from omegaconf import OmegaConf

import memlens
from memlens.cli import HTTP_LOGGERS, STAGES, HttpLogFilter, main
from memlens.clihelp import first_comment, resolve_param, yaml_comments
from memlens.core.compose import load_config, load_settings
from memlens.core.config import Paths
from memlens.core.constants import QUESTION_TYPES, SUBTYPES
from memlens.core.items import BuiltBenchmark
from memlens.core.tasks import TASK_KEYS
from memlens.core.version import VERSION
from memlens.eval.prompt import build_messages, iter_images
from tests.conftest import REPO, TINY, make_project
from tests.evaluate.eval_support import openai_overrides, predictions
from tests.support.fake_openai import FakeOpenAIServer

ROW = re.compile(r"^  (\+?)([A-Za-z_][\w./-]*)\s+= (.*?)(?:  # (.*))?$")
MISSING = object()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def rows(text: str) -> dict[str, tuple[bool, str, str]]:
    """``key -> (addable, value, comment)`` of the ``key = value  # comment`` lines of a help text."""
    out = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out[m.group(2)] = (bool(m.group(1)), m.group(3), m.group(4) or "")
    return out


def in_config(cfg, key: str) -> bool:
    return OmegaConf.select(cfg, key, default=MISSING) is not MISSING


# ------------------------------------------------------------------------------------ version, help
def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"memlens {VERSION}\n"
    assert memlens.__version__ == VERSION


def test_global_help_lists_commands_and_no_command_is_an_error(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in [*STAGES, "compose", "deps", "leaderboard", "list", "--dry-run", "--version"]:
        assert name in out, name
    code, out, err = run(capsys)
    assert code == 2 and "name a command" in err and "Traceback" not in err


def test_evaluate_help_keys_exist_in_the_composed_config(capsys):
    code, out, _ = run(capsys, "evaluate", "--root", str(REPO), "--help")
    assert code == 0
    cfg = load_config(root=REPO)
    listed = rows(out)
    present = [k for k, (add, _, _) in listed.items() if not add]
    assert present, out
    missing = [k for k in present if not in_config(cfg, k)]
    assert missing == []
    # every param dvc.yaml tracks for the stage is listed (a key, or a section expanded into keys)
    params = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["evaluate"]["params"]
    data = OmegaConf.to_container(cfg, resolve=True)
    for p in params:
        p = resolve_param(p, data)
        assert any(k == p or k.startswith(p + ".") for k in present), p
    # values are the composition's, comments are conf/'s
    written = {None: "null", False: "false", True: "true"}
    comments = yaml_comments(REPO / "conf" / "eval" / "default.yaml")
    assert set(comments) == set(cfg.eval)
    for key, comment in comments.items():
        if f"eval.{key}" not in listed:  # a key DVC does not track (it changes no output)
            assert not any(resolve_param(p, data) in ("eval", f"eval.{key}") for p in params), key
            continue
        value = OmegaConf.to_container(cfg.eval)[key]
        if value == [] or value == {}:
            expected = str(value)
        else:
            expected = written[value] if isinstance(value, (bool, type(None))) else str(value)
        assert listed[f"eval.{key}"] == (False, expected, comment), key
    assert listed["model.name"][:2] == (False, str(cfg.model.name))


def test_help_follows_overrides_and_added_keys_are_accepted(capsys):
    code, out, _ = run(capsys, "evaluate", "--root", str(REPO), "model=gpt-5.4", "eval.mode=cot", "--help")
    assert code == 0
    listed = rows(out)
    assert listed["model.base_url"][:2] == (False, "https://api.openai.com/v1")
    assert listed["model.temperature"][1] == "null"
    assert listed["eval.mode"][1] == "cot"
    # a comment from another option file of the same class (openai_compatible.yaml) fills the gap
    assert listed["model.concurrency"][2] == "requests in flight"
    added = {k: v for k, (add, v, _) in listed.items() if add}
    assert "model.seed" in added and "model.top_p" in added
    base = load_config(["model=gpt-5.4"], root=REPO)
    for key, value in added.items():
        assert not in_config(base, key), key
        # the printed default is a valid override of a key the schema accepts
        cfg = load_config(["model=gpt-5.4", f"+{key}={value}"], root=REPO)
        assert in_config(cfg, key), key


def test_every_stage_help_lists_the_params_dvc_tracks(capsys):
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    cfg = load_config(root=REPO)
    for stage in STAGES:
        code, out, err = run(capsys, stage, "--root", str(REPO), "-h")
        assert code == 0, (stage, err)
        assert out.startswith(f"memlens {stage}: "), out[:80]
        listed = rows(out)
        data = OmegaConf.to_container(cfg, resolve=True)
        for p in stages[stage].get("params") or []:
            p = resolve_param(p, data)
            assert any(k == p or k.startswith(p + ".") for k in listed), (stage, p)
        for k, (add, _, _) in listed.items():
            assert add or in_config(cfg, k), (stage, k)
    # optional sections (not in conf/) that a stage reads, with their schema defaults
    for stage, key, value in (("report", "report.alpha", "0.05"), ("ontology", "ontology.version", '"1"')):
        _, out, _ = run(capsys, stage, "--root", str(REPO), "--help")
        assert rows(out)[key][:2] == (True, value), (stage, out)
    # export is in conf/ (conf/export/default.yaml): its keys are config keys of the stage, with comments
    _, out, _ = run(capsys, "export", "--root", str(REPO), "--help")
    assert rows(out)["export.flat_images"][:2] == (False, "false") and "optional section export" not in out


def test_stage_help_is_generated_from_dvc_yaml_and_conf(tmp_path, capsys):
    """Change a comment in conf/ and the params of a stage in dvc.yaml: the help follows both."""
    root = make_project(tmp_path / "proj")
    offline = root / "conf" / "filter" / "offline.yaml"
    offline.write_text(offline.read_text().replace("min_side: 64", "min_side: 64   # smallest side accepted, px"))
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    dvc["stages"]["filter"]["params"] = ["filter", "data.seed"]
    (root / "dvc.yaml").write_text(yaml.safe_dump(dvc))
    code, out, _ = run(capsys, "filter", "--root", str(root), "--help")
    assert code == 0
    listed = rows(out)
    assert listed["filter.min_side"] == (False, "64", "smallest side accepted, px")
    assert listed["data.seed"][:2] == (False, "42")
    (root / "dvc.yaml").unlink()
    code, out, _ = run(capsys, "filter", "--root", str(root), "--help")
    assert code == 0 and "dvc.yaml is missing" in out and not rows(out)


def test_extra_command_help_and_bad_stage_config(capsys):
    code, out, _ = run(capsys, "list", "--help")
    assert code == 0 and "models" in out and "agents" in out and "types" in out
    code, out, _ = run(capsys, "deps", "--help")
    assert code == 0 and "--write" in out
    code, _, err = run(capsys, "evaluate", "--root", str(REPO), "model=nope", "--help")
    assert code == 2 and "model/nope" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------ list
def test_list_models_judges_images(capsys):
    code, out, _ = run(capsys, "list", "models", "--root", str(REPO))
    assert code == 0
    lines = out.splitlines()
    files = sorted((REPO / "conf" / "model").glob("*.yaml"))
    assert len(lines) == 2 + len(files)
    for f, line in zip(files, lines[2:]):
        data = yaml.safe_load(f.read_text())
        cells = line.split()
        assert cells[:3] == [f.stem, data["kind"], data["_target_"].rsplit(".", 1)[1]], line
        first = f.read_text().splitlines()[0].lstrip("# ")
        assert first[:30] in line and first_comment(f) in line
    assert any(line.split()[:2] == ["refuse", "baseline"] for line in lines)
    for group, what in (("judge", "judges"), ("images", "images")):
        code, out, _ = run(capsys, "list", what, "--root", str(REPO))
        assert code == 0
        files = sorted((REPO / "conf" / group).glob("*.yaml"))
        body = out.splitlines()[2:]
        assert [line.split()[0] for line in body] == [f.stem for f in files]
        for f, line in zip(files, body):
            assert yaml.safe_load(f.read_text())["_target_"].rsplit(".", 1)[1] in line


def test_list_agents_none_yet_then_one(tmp_path, capsys):
    code, out, _ = run(capsys, "list", "agents", "--root", str(REPO))
    agents = sorted(
        f.stem for f in (REPO / "conf" / "model").glob("*.yaml") if yaml.safe_load(f.read_text()).get("kind") == "agent"
    )
    assert code == 0 and "none yet" not in out and len(agents) >= 7
    assert sorted(line.split()[0] for line in out.splitlines()[2:]) == agents
    root = make_project(tmp_path / "proj")
    for stem in agents:  # a project without agents
        (root / "conf" / "model" / f"{stem}.yaml").unlink()
    code, out, _ = run(capsys, "list", "agents", "--root", str(root))
    assert code == 0 and "none yet" in out
    (root / "conf" / "model" / "my-agent.yaml").write_text(
        "# A retrieval memory agent.\nname: my-agent\n_target_: memlens.eval.systems.baselines.RefuseBaseline\n"
        "kind: agent\n"
    )
    code, out, _ = run(capsys, "list", "agents", "--root", str(root))
    assert code == 0 and "none yet" not in out
    assert [line.split()[:2] for line in out.splitlines()[2:]] == [["my-agent", "agent"]]
    assert "A retrieval memory agent." in out
    # a file without `kind` gets its class's own kind (read from the source)
    (root / "conf" / "model" / "bare.yaml").write_text(
        "name: bare\n_target_: memlens.eval.systems.openai_model.OpenAICompatibleModel\nbase_url: x\nmodel: y\n"
    )
    _, out, _ = run(capsys, "list", "models", "--root", str(root))
    assert any(line.split()[:3] == ["bare", "lvlm", "OpenAICompatibleModel"] for line in out.splitlines())


def test_list_types_has_every_subtype_and_task_key(capsys):
    code, out, _ = run(capsys, "list", "types")
    assert code == 0
    body = out.splitlines()[2:]
    assert len(body) == sum(len(s) for s in SUBTYPES.values())
    for qt in QUESTION_TYPES:
        for st in SUBTYPES[qt]:
            assert any(line.startswith(qt) and (st or '""') in line.split() for line in body), (qt, st)
    for key in TASK_KEYS:
        assert key in out, key
    er = next(line for line in body if "entity_resolution" in line)
    assert "MSR_YesNo" in er and "MSR_Counting" in er


def test_list_errors_are_one_message(capsys):
    for argv in (["list"], ["list", "nothing"], ["list", "models", "--root", "/nonexistent"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.startswith("memlens list: error: ") and "Traceback" not in err, argv


# ------------------------------------------------------------------------------------ dry run
def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the dry run opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_dry_run_prints_the_prompt_and_sends_nothing(tiny_copy, capsys, monkeypatch):
    root = tiny_copy
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    argv = ["evaluate", "--root", str(root), *TINY, "model=openai_compatible", f"model.base_url={url}"]
    before = sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*"))
    with monkeypatch.context() as m:
        _no_network(m)
        code, out, err = run(capsys, *argv, "--dry-run")
    assert code == 0, err
    assert sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*")) == before  # nothing written
    item = next(iter(BuiltBenchmark(Paths(root)).items("32k")))
    messages = build_messages(item, "standard")
    assert f"question     {item.question.question}" in out
    assert f"Question: {item.question.question}" in out  # the last message, in full
    assert f"question {item.question_id}" in out and "32k: 1 of" in out
    shown = re.findall(r"^    <image ([0-9a-f]{12})>$", out, flags=re.M)
    assert shown == [ref.image_id[:12] for ref in iter_images(messages)] and shown
    roles = re.findall(r"^\[\d+\] (\w+)  \(", out, flags=re.M)
    assert roles == [m["role"] for m in messages]
    assert re.search(r"\[\.\.\. \d+ chars \.\.\.\]", out)  # long turns are shortened in the middle
    assert "not yet in the results store" in out
    assert not (root / "data" / "predictions").exists()
    key = re.search(r"^request key  ([0-9a-f]{64}) ", out, flags=re.M).group(1)

    # the key is the one the evaluate stage stores the answer under (base_url is operational)
    with FakeOpenAIServer() as server:
        over = openai_overrides(server, "eval.max_items=1", "eval.lengths=[32k]", model="qwen3-vl-8b")
        assert main(["evaluate", "--root", str(root), *TINY, *over]) == 0
        # pointed at a live server, the dry run connects to nothing
        before = server.connection_count
        code, again, _ = run(capsys, "evaluate", "--root", str(root), *TINY, *over, "--dry-run")
        assert code == 0 and server.connection_count == before
    row = predictions(root, "qwen3-vl-8b")["32k"][item.question_id]
    assert row["request_key"] == key
    assert f"request key  {key} (answered in the results store)" in again


def test_dry_run_full_text_legacy_layout_and_errors(tiny_project, capsys):
    root = str(tiny_project)
    code, out, _ = run(capsys, "evaluate", "--root", root, *TINY, "--dry-run", "--chars", "0")
    assert code == 0 and "[... " not in out
    item = next(iter(BuiltBenchmark(Paths(tiny_project)).items("32k")))
    for turn in item.sessions[0].turns:  # the text around each image is shown in full
        for piece in turn.content.split("<image>"):
            if piece.strip():
                assert piece.strip().split("\n")[0] in out
    code, out, _ = run(capsys, "evaluate", "--root", root, *TINY, "eval.layout=legacy", "--dry-run")
    assert code == 0
    assert len(re.findall(r"^\[\d+\] ", out, flags=re.M)) == 1  # one user message
    assert f"Question: {item.question.question}" in out and re.search(r"\[\.\.\. \d+ chars \.\.\.\]", out)
    assert len(out) < 20_000  # the history is shortened, not printed whole
    code, _, err = run(capsys, "evaluate", "--root", root, *TINY, "eval.lengths=[128k]", "--dry-run")
    assert code == 2 and "not in the benchmark" in err
    code, _, err = run(capsys, "filter", "--root", root, "--dry-run")
    assert code == 2 and "only for: evaluate" in err


# ------------------------------------------------------------------------------------ logs, progress
def test_http_log_filter():
    def record(name: str, level: int) -> logging.LogRecord:
        return logging.LogRecord(name, level, __file__, 1, "HTTP Request: POST /v1/chat/completions", None, None)

    quiet, verbose = HttpLogFilter(False), HttpLogFilter(True)
    for name in HTTP_LOGGERS:
        for sub in (name, f"{name}._client"):
            assert not quiet.filter(record(sub, logging.INFO)) and not quiet.filter(record(sub, logging.DEBUG))
            assert quiet.filter(record(sub, logging.WARNING))
            assert verbose.filter(record(sub, logging.DEBUG)) and verbose.filter(record(sub, logging.INFO))
    assert quiet.filter(record("memlens.eval.evaluate.stage", logging.INFO))
    assert quiet.filter(record("httpx2_unrelated", logging.INFO))


def test_http_request_lines_only_with_verbose(tiny_copy):
    """The real command in a fresh process: an evaluation's HTTP request lines reach stderr only with -v."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with FakeOpenAIServer() as server:
        errs = {}
        for flag, name in (("-v", "fake-a"), ("", "fake-b")):  # another model: asked again, not reused
            over = openai_overrides(server, "eval.max_items=1", "eval.lengths=[32k]", model=name)
            argv = [sys.executable, "-m", "memlens.cli", "evaluate", "--root", str(tiny_copy), *TINY, *over]
            before = server.request_count
            done = subprocess.run(
                [*argv, *([flag] if flag else [])], env=env, capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, done.stderr[-2000:]
            assert server.request_count == before + 1
            errs[flag] = done.stderr
    assert "HTTP Request: POST" in errs["-v"]
    assert "HTTP Request" not in errs[""] and "evaluate done" in errs[""]


def test_filter_progress_bar_leaves_the_output_byte_identical(tiny_copy, monkeypatch):
    from memlens.construction.filter import stage as F

    out = tiny_copy / "data" / "filtered"
    before = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    calls = []
    real = F.tqdm

    def spy(iterable, **kwargs):
        calls.append(kwargs)
        return real(iterable, **kwargs)

    monkeypatch.setattr(F, "tqdm", spy)
    cfg = load_settings(list(TINY), root=tiny_copy)
    F.run(cfg, Paths(tiny_copy))
    assert {p.name: p.read_bytes() for p in sorted(out.iterdir())} == before
    n = sum(1 for line in (tiny_copy / "data" / "images" / "index.jsonl").read_bytes().splitlines() if line.strip())
    assert calls == [{"total": n, "desc": "filter", "unit": "img", "leave": False, "mininterval": 0.5}]
    # without any bar (tqdm a pass-through) the bytes are the same too
    monkeypatch.setattr(F, "tqdm", lambda iterable, **kwargs: iterable)
    shutil.rmtree(out)
    F.run(cfg, Paths(tiny_copy))
    assert {p.name: p.read_bytes() for p in sorted(out.iterdir())} == before
