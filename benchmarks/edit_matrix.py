"""Which DVC stages an edit invalidates: the edit-to-stage matrix (docs/edit-matrix.md).

    .venv/bin/python benchmarks/edit_matrix.py                  # print the matrix (markdown)
    .venv/bin/python benchmarks/edit_matrix.py --write          # write docs/edit-matrix.md
    .venv/bin/python benchmarks/edit_matrix.py --root /old/tree # the matrix of another checkout

In a temporary copy of the project (``src/``, ``conf/``, ``docs/``, ``dvc.yaml``, ``README.md``) it
records each stage's code identity the way DVC sees it: the MD5 of the files under the ``src/`` deps
that ``memlens deps`` prints for the stage. Then, for every file in turn, it appends a comment
(``# edit-matrix``; ``<!-- -->`` for Markdown, a YAML comment for YAML) and lists the stages whose
identity changed; the file is restored before the next. A comment changes no import, so the deps
are computed once per tree; the identity is re-hashed after every edit.

It also *adds* one throwaway component of each kind (the files ``docs/architecture.md`` names for
it) and lists the stages whose deps or identity changed (these runs recompute ``memlens deps``,
since an addition can change the import graph). The kinds come from ``memlens list kinds`` when the
tree has it, else a fixed set of additions that the tree's documented routes allow.

The result is deterministic: it depends on the tree only, not on the machine or the time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COPY = (
    "src",
    "conf",
    "docs",
    "dvc.yaml",
    "README.md",
    "pyproject.toml",
    "benchmarks",
    "tests/support",
    "tests/conftest.py",
)
#: groups of files (the matrix's rows are summarised per group; the full table follows)
LAYERS = (
    ("entry points (cli, help, sweep)", ("src/memlens/cli.py", "src/memlens/clihelp.py", "src/memlens/sweep.py")),
    (
        "config composition, validation, dependency tool",
        ("src/memlens/core/compose.py", "src/memlens/core/schemas.py", "src/memlens/core/codegraph.py"),
    ),
    ("core", ("src/memlens/core/",)),
    ("construction", ("src/memlens/construction/",)),
    ("evaluation", ("src/memlens/eval/",)),
    ("conf/ (tracked through params.yaml, not code)", ("conf/",)),
    ("docs, README", ("docs/", "README.md")),
)
CONSTRUCTION = ("ontology", "crawl", "filter", "generate", "assemble", "validate", "export")


def copy_tree(src: Path, dst: Path) -> None:
    for name in COPY:
        p = src / name
        if p.is_dir():
            shutil.copytree(p, dst / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif p.is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dst / name)


def env_for(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root / "src")
    env["MEMLENS_ROOT"] = str(root)
    return env


def memlens(root: Path, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from memlens.cli import main; sys.exit(main())", *args],
        cwd=root,
        env=env_for(root),
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise RuntimeError(f"memlens {' '.join(args)} in {root}: exit {out.returncode}\n{out.stderr[-3000:]}")
    return out.stdout


def stage_deps(root: Path) -> dict[str, list[str]]:
    """stage -> its ``src/`` deps as ``memlens deps`` prints them."""
    deps: dict[str, list[str]] = {}
    stage = None
    for line in memlens(root, "deps", "--root", str(root)).splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            stage = line[:-1]
            deps[stage] = []
        elif line.strip().startswith("- ") and stage:
            deps[stage].append(line.strip()[2:])
    return deps


def files_of(root: Path, paths: list[str]) -> list[Path]:
    out = []
    for p in paths:
        q = root / p
        if q.is_dir():
            out += [f for f in sorted(q.rglob("*")) if f.is_file() and "__pycache__" not in f.parts]
        elif q.is_file():
            out.append(q)
    return out


def identity(root: Path, paths: list[str]) -> str:
    h = hashlib.md5()
    for f in files_of(root, paths):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def identities(root: Path, deps: dict[str, list[str]]) -> dict[str, str]:
    return {s: identity(root, ps) for s, ps in deps.items()}


def comment_for(path: Path) -> str:
    if path.suffix == ".md":
        return "\n<!-- edit-matrix -->\n"
    if path.suffix in (".py", ".yaml", ".yml", ".txt", ".toml") or path.name == "dvc.yaml":
        return "\n# edit-matrix\n"
    if path.suffix == ".json":
        return "\n"
    return "\n"


def edited_files(root: Path) -> list[Path]:
    out = []
    for base in ("src", "conf", "docs"):
        out += [
            f
            for f in sorted((root / base).rglob("*"))
            if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".yaml", ".md", ".json", ".txt")
        ]
    out.append(root / "README.md")
    return out


def edit_rows(root: Path) -> dict[str, list[str]]:
    """file -> the stages an appended comment invalidates."""
    deps = stage_deps(root)
    base = identities(root, deps)
    rows: dict[str, list[str]] = {}
    for f in edited_files(root):
        before = f.read_bytes()
        f.write_bytes(before + comment_for(f).encode())
        try:
            now = identities(root, deps)
        finally:
            f.write_bytes(before)
        rows[str(f.relative_to(root))] = [s for s in deps if now[s] != base[s]]
    return rows


# ------------------------------------------------------------------------------------ additions
def _scaffold(root: Path):
    """The tree's scaffold of throwaway components (tests/support/scaffold.py), or None."""
    import importlib.util

    path = root / "tests" / "support" / "scaffold.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("edit_matrix_scaffold", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def legacy_additions() -> dict[str, dict[str, str]]:
    """The routes the old docs/architecture.md gave (a tree without tests/support/scaffold.py):
    kind -> {relative path: text appended (or the new file)}."""
    return {
        "model": {"conf/model/zz-new.yaml": "_target_: memlens.eval.systems.openai_model.OpenAICompatibleModel\n"},
        "agent": {
            "src/memlens/eval/agents/zz_new.py": "from memlens.eval.agents.runtime import MemoryAgent\n",
            "src/memlens/core/settings.py": "\n# a schema for the new agent\n",
        },
        "judge": {"src/memlens/eval/judge/zz_new.py": "X = 1\n"},
        "image_source": {"src/memlens/construction/images/sources.py": "\n# a new source class\n"},
        "adapter": {"src/memlens/eval/memory/adapters.py": "\n# a new adapter, named in build_adapter\n"},
        "retriever": {"src/memlens/eval/memory/retrieval.py": "\n# a new retriever, named in build_retriever\n"},
        "filter_channel": {
            "src/memlens/construction/filter/channels.py": "\n# a new channel named in build_channels\n",
            "src/memlens/core/settings.py": "\n# and in ChannelSettings\n",
        },
        "generator": {"src/memlens/construction/generate/backends.py": "\n# a new generator\n"},
        "question_type": {
            "src/memlens/construction/abilities/zz_new.py": "X = 1\n",
            "src/memlens/construction/abilities/__init__.py": "\n# listed in ANSWERABLE\n",
            "src/memlens/core/constants.py": "\n# its official strings\n",
            "src/memlens/core/tasks.py": "\n# its judge routing\n",
        },
    }


def _legacy_add(root: Path, files: dict[str, str]) -> list[str]:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes((p.read_bytes() if p.exists() else b"") + text.encode())
    return list(files)


def add_rows(root: Path) -> dict[str, list[str]]:
    """kind -> the stages adding one component of that kind invalidates (code identity: the src/
    deps; a conf/ option changes params.yaml only once it is selected)."""
    deps = stage_deps(root)
    base = identities(root, deps)
    scaffold = _scaffold(root)
    kinds = list(scaffold.FILES) if scaffold else list(legacy_additions())
    rows = {}
    for kind in kinds:
        if scaffold:
            targets = [
                p.replace("<name>", scaffold.name_of(kind)).replace("<option>", scaffold.option_of(kind))
                for p in scaffold.FILES[kind]
            ]
        else:
            targets = list(legacy_additions()[kind])
        saved = {rel: (root / rel).read_bytes() if (root / rel).exists() else None for rel in targets}
        try:
            if scaffold:
                scaffold.add(root, kind)
            else:
                _legacy_add(root, legacy_additions()[kind])
            now_deps = stage_deps(root)
            now = identities(root, now_deps)
            rows[kind] = [s for s in now_deps if now_deps[s] != deps.get(s) or now[s] != base.get(s)]
        finally:
            for rel, content in saved.items():
                if content is None:
                    (root / rel).unlink(missing_ok=True)
                else:
                    (root / rel).write_bytes(content)
    return rows


# ------------------------------------------------------------------------------------ report
def group_of(path: str) -> str:
    for name, prefixes in LAYERS:
        if any(path == p or path.startswith(p) for p in prefixes):
            return name
    return "other"


def summary(rows: dict[str, list[str]], stages: list[str]) -> list[str]:
    by_group: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
    for f, st in rows.items():
        by_group[group_of(f)].append((f, st))
    lines = [
        "| files | n | invalidating no stage | at most one stage | invalidating a construction stage | most stages invalidated |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, _ in (*LAYERS, ("other", ())):
        items = by_group.get(name)
        if not items:
            continue
        none = sum(1 for _, st in items if not st)
        one = sum(1 for _, st in items if len(st) <= 1)
        cons = sum(1 for _, st in items if set(st) & set(CONSTRUCTION))
        worst = max(len(st) for _, st in items)
        lines.append(f"| {name} | {len(items)} | {none} | {one} | {cons} | {worst} of {len(stages)} |")
    return lines


def before_section(before: dict, label: str) -> list[str]:
    """The summary of another tree's matrix (``--json`` of that tree), for comparison."""
    return [
        f"## Before: {label}",
        "",
        *summary(before["edits"], before["stages"]),
        "",
        "| kind added | stages invalidated |",
        "|---|---|",
        *(f"| {k} | {', '.join(v) or 'none'} |" for k, v in before["adds"].items()),
        "",
    ]


def markdown(edits: dict[str, list[str]], adds: dict[str, list[str]], stages: list[str], before: list[str] = ()) -> str:
    lines = [
        "# Which stages an edit invalidates",
        "",
        "Generated by `benchmarks/edit_matrix.py --write` (do not edit by hand): in a temporary copy of the",
        "project, a comment is appended to each file in turn and the stages whose code identity (the files",
        "`memlens deps` lists for them, hashed as DVC does) changed are recorded; then one throwaway",
        "component of each kind is added with the files `docs/architecture.md` names for it (a kind's row",
        "counts code identity; a `conf/` option changes `params.yaml` only once it is selected).",
        "`tests/test_edit_matrix.py` checks the goals below on the current tree.",
        "",
        "Goals: an edit under the evaluation layer invalidates no construction stage; adding a component",
        "invalidates only the stages that can select it; editing the CLI, help, config composition or docs",
        "invalidates none.",
        "",
        "## Summary",
        "",
        *summary(edits, stages),
        "",
        "## Adding a component",
        "",
        "| kind | stages invalidated |",
        "|---|---|",
        *(f"| {k} | {', '.join(v) or 'none'} |" for k, v in adds.items()),
        "",
        *before,
        "## Every file",
        "",
        "| file | stages invalidated |",
        "|---|---|",
        *(f"| `{f}` | {', '.join(v) or 'none'} |" for f, v in edits.items()),
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(REPO), help="the project to measure (default: this checkout)")
    ap.add_argument("--write", action="store_true", help="write docs/edit-matrix.md of --root")
    ap.add_argument("--json", default=None, help="also write the raw rows as JSON to this file")
    ap.add_argument("--before", default=None, help="the --json of another tree: its summary is added")
    ap.add_argument("--before-label", default="an earlier tree", help="how the doc names that tree")
    args = ap.parse_args()
    src = Path(args.root).resolve()
    with tempfile.TemporaryDirectory(prefix="memlens-edit-matrix-") as tmp:
        root = Path(tmp)
        copy_tree(src, root)
        stages = list(stage_deps(root))
        edits = edit_rows(root)
        adds = add_rows(root)
    before = before_section(json.loads(Path(args.before).read_text()), args.before_label) if args.before else []
    text = markdown(edits, adds, stages, before)
    if args.json:
        Path(args.json).write_text(json.dumps({"edits": edits, "adds": adds, "stages": stages}, indent=1))
    if args.write:
        (src / "docs" / "edit-matrix.md").write_text(text)
        print(f"wrote {src / 'docs' / 'edit-matrix.md'}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
