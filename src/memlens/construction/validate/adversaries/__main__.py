"""Print every adversary's figures for a built data folder:

    python -m memlens.construction.validate.adversaries --data DIR [--lengths 32k 64k] [--json out.json]
        [--only oracle text_only] [--probes N]

DIR holds ``images/index.jsonl``, ``generated/`` and ``instances/`` (a project's ``data/``). The
adversaries' settings are the ``validate`` section of ``--settings`` (default: the project's
``conf/validate/default.yaml``). ``--probes N`` adds N probe questions per answerable subtype to the
oracle-evidence solvers (:mod:`.probe`; the topics of ``DIR/ontology``, the writer of the project's
``conf/generator/template.yaml``, seed ``--seed``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlens.construction.validate.adversaries import load, run_all
from memlens.construction.validate.adversaries.render import figures_md
from memlens.core.config import project_root
from memlens.core.errors import ConfigError, MemLensError
from memlens.core.io import write_json


def load_settings(path: str | Path | None = None) -> dict:
    """The ``validate`` section of a YAML file (default: the project's ``conf/validate/default.yaml``)."""
    import yaml

    p = Path(path) if path else project_root() / "conf" / "validate" / "default.yaml"
    try:
        data = yaml.safe_load(p.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{p}: cannot read the validate section ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: not a validate section (a mapping of its keys)")
    return data


def cli_probes(data: str, n: int, seed: int) -> list:
    """``n`` probes per subtype for the data folder ``data`` (none when ``n`` is 0)."""
    if n <= 0:
        return []
    from types import SimpleNamespace

    import yaml

    from memlens.construction.text.sessions import WriterConfig
    from memlens.construction.validate.adversaries.probe import probe_items
    from memlens.core.io import read_records
    from memlens.core.schema import Topic

    topics = Path(data) / "ontology" / "topics.jsonl"
    if not topics.is_file():
        raise ConfigError(f"{topics}: missing (the probes need the build's ontology)")
    gen = yaml.safe_load((project_root() / "conf" / "generator" / "template.yaml").read_text())
    return probe_items(seed, read_records(topics, Topic), n, WriterConfig.from_cfg(SimpleNamespace(**gen)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m memlens.construction.validate.adversaries", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--data", required=True, help="the data folder of a built benchmark")
    ap.add_argument("--lengths", nargs="*", default=None, help="only these lengths (default: every instances/*.jsonl)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--settings", default=None, help="a validate section (default: conf/validate/default.yaml)")
    ap.add_argument(
        "--only", nargs="*", default=(), help="only these adversaries (text_only, detectors, oracle, repetition)"
    )
    ap.add_argument("--probes", type=int, default=0, help="probe questions per subtype for the oracle solvers")
    args = ap.parse_args(argv)
    try:
        settings = load_settings(args.settings)
        bench = load(args.data, args.lengths)
    except MemLensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        probes = cli_probes(args.data, args.probes, args.seed)
    except MemLensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        figs = run_all(bench, settings, seed=args.seed, progress=True, only=tuple(args.only), probes=probes)
    except KeyError as exc:
        print(f"error: {args.settings or 'conf/validate/default.yaml'}: missing key {exc}", file=sys.stderr)
        return 2
    print("\n".join(figures_md({"text_only": {"lengths": {}}, "detectors": {}, "repetition": None, **figs})))
    print("\nseconds: " + ", ".join(f"{k} {v:.1f}" for k, v in figs["timing"].items()))
    if args.json:
        write_json(args.json, figs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
