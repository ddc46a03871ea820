"""The deterministic judge of another git revision, importable next to the current one.

``load(rev)`` copies ``src/memlens/eval/judge/deterministic.py`` of revision ``rev`` and every
``memlens.eval.judge`` module it imports (recursively) into a temporary package, rewrites those
imports to the package, and returns its ``deterministic`` module. ``benchmarks/bench_judge.py``
and ``benchmarks/bench_judge_selftest.py`` use it to measure the old and the new judge side by side
in one run.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_IMPORT_RE = re.compile(r"memlens\.eval\.judge\.(\w+)")


def _show(rev: str, module: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:src/memlens/eval/judge/{module}.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def load(rev: str):
    """The ``deterministic`` module of revision ``rev`` (a commit, branch or tag)."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
    pkg = f"_judge_{sha}"
    if f"{pkg}.deterministic" in sys.modules:
        return sys.modules[f"{pkg}.deterministic"]
    root = Path(tempfile.mkdtemp(prefix="memlens-judge-"))
    (root / pkg).mkdir()
    (root / pkg / "__init__.py").write_text("")
    todo, done = ["deterministic"], set()
    while todo:
        mod = todo.pop()
        if mod in done:
            continue
        done.add(mod)
        src = _show(rev, mod)
        todo += [m for m in _IMPORT_RE.findall(src) if m not in done]
        (root / pkg / f"{mod}.py").write_text(_IMPORT_RE.sub(lambda m: f"{pkg}.{m.group(1)}", src))
    sys.path.insert(0, str(root))
    return importlib.import_module(f"{pkg}.deterministic")
