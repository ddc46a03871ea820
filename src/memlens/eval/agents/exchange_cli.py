"""``python -m memlens.eval.agents.exchange export ...``: the command that writes an upstream agent
runner's inputs (:mod:`memlens.eval.agents.exchange`). A command, not stage code: it composes the
configuration itself (:mod:`memlens.core.compose`), which no stage does."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlens.core.compose import load_settings
from memlens.core.config import Paths
from memlens.core.errors import MemLensError
from memlens.eval.agents.exchange import FORMATS, export_inputs
from memlens.eval.agents.runtime import family_lookup, make_adapter
from memlens.eval.agents.subset import question_subset
from memlens.eval.agents.view import ImageStore
from memlens.eval.benchmark import open_benchmark, requested_lengths
from memlens.eval.systems.base import Model

__all__ = ["main"]

DESCRIPTION = "Agents run by their own upstream code (MemOS, M2A): export their inputs, import their answers."


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memlens.eval.agents.exchange", description=DESCRIPTION)
    sub = ap.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="write the inputs of an upstream agent runner")
    ex.add_argument("--format", choices=FORMATS, required=True)
    ex.add_argument("--out", required=True, help="output folder (relative to the project root)")
    ex.add_argument("--adapter", default="markers", help="what images become in text (markers, ocr, caption ...)")
    ex.add_argument("--root", default=None)
    ex.add_argument("overrides", nargs="*", help="config overrides (eval.lengths=[32K], eval.subset=all ...)")
    args = ap.parse_args(argv)
    try:
        cfg = load_settings(args.overrides, root=args.root)
        paths = Paths.from_cfg(cfg, root=args.root)
        bench = open_benchmark(cfg, paths)

        class _Agentlike(Model):
            default_subset = "agent_subset_195"

            def generate(self, item, mode="standard"):  # pragma: no cover - never called
                raise NotImplementedError

        subset = question_subset(cfg, bench, _Agentlike("export"))  # auto: the agent subset
        lengths = requested_lengths(cfg, bench)
        adapter = make_adapter(args.adapter, {}, paths.cache, bench)
        images = ImageStore(paths.cache / "agents" / "images", family_lookup(bench))
        items = {ln: (it for it in bench.items(ln) if subset is None or it.question_id in subset) for ln in lengths}
        out = Path(args.out)
        if not out.is_absolute():
            out = paths.root / out
        manifest = export_inputs(items, args.format, out, adapter, images)
    except MemLensError as exc:
        print(f"exchange export: error: {exc}", file=sys.stderr)
        return 2
    n = sum(v["items"] for v in manifest["lengths"].values())
    print(f"wrote {n} {args.format} items for {len(manifest['lengths'])} length(s) to {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
