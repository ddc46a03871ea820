"""What ``memlens <stage> --help`` and ``memlens list ...`` print, generated from the project itself.

Nothing here is a hand-written list that could drift:

* the config keys of a stage are the ``params:`` DVC tracks for it in ``dvc.yaml`` (plus the optional
  sections, not in ``conf/``, that its stage module reads), expanded into leaves along the typed
  schemas beside the components (found by :mod:`memlens.core.schemas`); each value is the one the
  current composition gives (so ``memlens evaluate model=gpt-5.4 --help`` shows that model's
  values) and each description is the ``# comment`` of the key in the selected ``conf/`` option
  file, else of the same key in another option with the same ``_target_``, else the schema's
  ``Field(description=...)`` or the comment beside the field in the schema's source, else the
  allowed values of a ``Literal`` or the component names a field takes;
* ``memlens list models|agents|judges|images`` reads ``conf/<group>/*.yaml`` (the file's first
  comment line is its description); ``memlens list types`` reads the official vocabulary
  (:data:`memlens.core.constants.SUBTYPES`) and the judge routing (:func:`memlens.core.tasks.task_key`);
  ``memlens list kinds`` and ``memlens list adapters|retrievers|channels|generators`` read the
  component registry (:mod:`memlens.core.registry`, from the source: nothing is imported).

The CLI reaches this module by name (like ``leaderboard``), so it is not part of any stage's code
closure: editing help text never invalidates a DVC stage.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from memlens.core.errors import MemLensError
from memlens.core.schemas import is_schema, unwrap_type

__all__ = [
    "LIST_KINDS",
    "LIST_WHAT",
    "UsageError",
    "dvc_params",
    "first_comment",
    "list_text",
    "optional_sections",
    "run_list",
    "stage_help",
    "yaml_comments",
]

#: what ``memlens list`` can list -> the component kind it shows (models, judges, images: with the
#: options of their conf/ group)
LIST_KINDS = {
    "kinds": None,
    "models": "model",
    "agents": "agent",
    "judges": "judge",
    "images": "image_source",
    "types": "question_type",
    "adapters": "adapter",
    "retrievers": "retriever",
    "channels": "filter_channel",
    "generators": "generator",
}
LIST_WHAT = tuple(LIST_KINDS)
#: config group -> the ``memlens list`` argument that lists its options
LIST_OF_GROUP = {"model": "models", "judge": "judges", "images": "images"}
#: widest key column before values stop being aligned
KEY_WIDTH = 44
#: longest value printed in full; longer mappings show their keys only
VALUE_WIDTH = 100


class UsageError(MemLensError):
    """The command line asks for something that does not exist."""


# ------------------------------------------------------------------------------------ conf/ comments
def _inline_comment(rest: str) -> str | None:
    """The ``# comment`` of a YAML line's value part (a ``#`` inside quotes is not one)."""
    quote = None
    prev = " "
    for i, ch in enumerate(rest):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and prev.isspace():
            return rest[i + 1 :].strip() or None
        prev = ch
    return None


_KEY = re.compile(r"""^("[^"]*"|'[^']*'|[^\s:#"'][^:#]*?):(\s|$)""")


def yaml_comments(path: Path) -> dict[str, str]:
    """Dotted key -> its comment in a ``conf/`` YAML file: the comment on the key's line, else, for a
    nested key, the comment lines right above it (above a top-level key they head a group of keys)."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    block: list[str] = []
    seen_key = False
    for raw in path.read_text().splitlines():
        s = raw.strip()
        if not s:
            block = []
            continue
        if s.startswith("#"):
            block.append(s.lstrip("#").strip())
            continue
        m = _KEY.match(s)
        if s.startswith("- ") or not m:
            block = []
            continue
        indent = len(raw) - len(raw.lstrip())
        key = m.group(1).strip("\"'")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key))
        dotted = ".".join(k for _, k in stack)
        comment = _inline_comment(s[m.end() - 1 :])
        if comment:
            out[dotted] = comment
        elif block and seen_key and indent > 0:
            out[dotted] = " ".join(block)
        seen_key = True
        block = []
    return out


def first_comment(path: Path, width: int = 140) -> str:
    """A file's one-line description: the first sentence of its header comment (the comment lines it
    starts with, up to an indented example line), at most ``width`` characters."""
    parts: list[str] = []
    for line in path.read_text().splitlines():
        s = line.strip()
        if not s.startswith("#"):
            break
        text = s[1:]
        if parts and (text.startswith("   ") or text.strip().startswith("Run:")):
            break
        parts.append(text.strip())
    text = ""
    for part in filter(None, parts):  # a word hyphenated across lines is joined back
        text += part if re.search(r"\w-$", text) else (" " if text else "") + part
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch in "([{") - (ch in ")]}")
        if ch in ".!?" and depth <= 0 and (i + 1 == len(text) or text[i + 1] == " "):
            text = text[: i + 1]
            break
    if len(text) > width:
        text = text[: text.rfind(" ", 0, width - 4)] + " ..."
    return text


def _load_yaml(path: Path) -> dict:
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    return data if isinstance(data, dict) else {}


# ------------------------------------------------------------------------------------ schema comments
def _source_comments(module: types.ModuleType) -> dict[tuple[str, str], str]:
    """(class name, field name) -> the ``# comment`` on the field's line in the module's source."""
    src = Path(module.__file__).read_text()  # type: ignore[arg-type]
    by_line = {
        tok.start[0]: tok.string.lstrip("#").strip()
        for tok in tokenize.generate_tokens(io.StringIO(src).readline)
        if tok.type == tokenize.COMMENT
    }
    out = {}
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    text = by_line.get(stmt.end_lineno or stmt.lineno)
                    if text and not text.startswith(("type:", "noqa")):
                        out[(node.name, stmt.target.id)] = text.split("  # type:")[0]
    return out


def _fields(schema: type[BaseModel]) -> dict[str, tuple[str, Any]]:
    """Key (alias) -> (attribute name, FieldInfo) of a schema, in declaration order."""
    return {(f.alias or name): (name, f) for name, f in schema.model_fields.items()}


class _Schemas:
    """Describes keys of the configuration along the typed schemas."""

    def __init__(self) -> None:
        self._comments: dict[str, dict[tuple[str, str], str]] = {}

    def comment(self, cls: type, attr: str) -> str | None:
        """The ``# comment`` beside a field in the source of the class that declares it."""
        import sys

        mod = sys.modules.get(cls.__module__)
        if mod is None or not getattr(mod, "__file__", None):
            return None
        if cls.__module__ not in self._comments:
            self._comments[cls.__module__] = _source_comments(mod)
        return self._comments[cls.__module__].get((cls.__name__, attr))

    def section_schema(self, section: str, data: Mapping) -> Any:
        from memlens.core.schemas import section_schema

        try:
            return unwrap_type(section_schema(section, data))
        except (MemLensError, KeyError):
            return None

    def child(self, tp: Any, key: str) -> tuple[bool, Any, Any]:
        """(known, child type, FieldInfo or None) of ``key`` below a value of type ``tp``."""
        tp = unwrap_type(tp)
        if is_schema(tp):
            f = _fields(tp).get(key)
            return (False, None, None) if f is None else (True, unwrap_type(f[1].annotation), f[1])
        if get_origin(tp) in (dict, Mapping):
            args = get_args(tp)
            return True, (unwrap_type(args[1]) if len(args) == 2 else None), None
        return True, None, None

    def describe(self, owner: Any, key: str, finfo: Any, annotation: Any) -> str:
        """A field's description from the schema: ``Field(description=...)``, the source comment, or
        the allowed values of a ``Literal``."""
        if finfo is not None and finfo.description:
            return str(finfo.description)
        if is_schema(owner):
            attr = _fields(owner).get(key, (key, None))[0]
            for cls in owner.__mro__:
                text = self.comment(cls, attr)
                if text:
                    return text
        lit = unwrap_type(annotation)
        if get_origin(lit) is Literal:
            return "one of: " + " | ".join(str(a) for a in get_args(lit))
        kind = _named_kind(finfo, annotation)
        if kind:
            from memlens.core.registry import component_names

            return f"{kind.replace('_', ' ')}: one of " + " | ".join(component_names(kind))
        return ""


def _named_kind(finfo: Any, annotation: Any) -> str | None:
    """The component kind a field names (its :class:`~memlens.core.registry.Named` marker)."""
    from memlens.core.registry import Named

    metadata = list(getattr(finfo, "metadata", None) or [])
    if get_origin(annotation) is Annotated:
        metadata += list(get_args(annotation)[1:])
    return next((m.kind for m in metadata if isinstance(m, Named)), None)


# ------------------------------------------------------------------------------------ formatting
def fmt(value: Any) -> str:
    """A config value as it is written in an override (``null``, ``true``, ``[32k, 64k]``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        plain = (
            bool(value)
            and value.strip() == value
            and not re.search(r"[\s,\[\]{}'\"=\\]", value)
            and value not in ("null", "true", "false")
            and not re.fullmatch(r"[-+]?[\d.]+(e[-+]?\d+)?", value)
        )
        return value if plain else json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    if isinstance(value, Mapping):
        text = "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in value.items()) + "}"
        if len(text) > VALUE_WIDTH:
            text = "{" + ", ".join(f"{k}: ..." for k in value) + "}"
        return text
    return str(value)


def _line(key: str, value: str, comment: str, width: int) -> str:
    text = f"  {key.ljust(width)} = {value}"
    return f"{text}  # {comment}" if comment else text


def _table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    out = []
    for r in [header, *rows]:
        out.append("  ".join([*(c.ljust(w) for c, w in zip(r, widths)), r[-1]]).rstrip())
    return out


# ------------------------------------------------------------------------------------ stage help
def dvc_params(root: Path, stage: str) -> list[str] | None:
    """The ``params:`` of a stage in ``<root>/dvc.yaml`` (None when there is no dvc.yaml)."""
    import yaml

    path = root / "dvc.yaml"
    if not path.is_file():
        return None
    stages = (yaml.safe_load(path.read_text()) or {}).get("stages") or {}
    out = []
    for p in (stages.get(stage) or {}).get("params") or []:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, Mapping):  # {params-file: [keys]}
            for keys in p.values():
                out.extend(str(k) for k in keys or [])
    return out


def resolve_param(name: str, data: Mapping) -> str:
    """A dvc.yaml param name with its ``${a.b}`` templates filled from the config
    (``data.scales.${data.scale}`` -> ``data.scales.small``)."""

    def value(m: re.Match) -> str:
        node: Any = data
        for part in m.group(1).split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return str(node)

    return re.sub(r"\$\{([^}]+)\}", value, name)


def optional_sections(stage_module: str) -> list[str]:
    """Optional sections (not in ``conf/``, e.g. ``export``) that a stage module reads: an attribute
    ``cfg.<section>`` of the settings it receives."""
    import importlib.util

    from memlens.core.schemas import OPTIONAL, ORDER, VALUES

    spec = importlib.util.find_spec(stage_module)
    if spec is None or not spec.origin:
        return []
    tree = ast.parse(Path(spec.origin).read_text())
    read = {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "cfg"
    }
    return [k for k in ORDER if k in OPTIONAL and k not in VALUES and k in read]


def _selected_options(root: Path, overrides: list[str], params: str | None, data: Mapping) -> dict[str, str]:
    """Config group -> the option the composition used (the override, else conf/config.yaml's default;
    from a params file: the option whose ``name`` is the section's)."""
    from memlens.core.compose import config_groups

    conf = root / "conf"
    groups = config_groups(conf)
    chosen: dict[str, str] = {}
    for o in overrides:
        k, sep, v = str(o).partition("=")
        if sep and k in groups and v:
            chosen[k] = v
    if params is None and (conf / "config.yaml").is_file():
        for d in _load_yaml(conf / "config.yaml").get("defaults") or []:
            if isinstance(d, Mapping):
                for k, v in d.items():
                    if k in groups and isinstance(v, str):
                        chosen.setdefault(k, v)
    for g in groups:
        if g in chosen or not isinstance(data.get(g), Mapping):
            continue
        for f in sorted((conf / g).glob("*.yaml")):
            if _load_yaml(f).get("name") == data[g].get("name"):
                chosen[g] = f.stem
                break
    return chosen


class _Comments:
    """The conf/ comment of a dotted key: in the selected option file, else in the other options of
    the group with the same ``_target_`` (sorted by name)."""

    def __init__(self, root: Path, chosen: Mapping[str, str], data: Mapping):
        self.conf = root / "conf"
        self.chosen = chosen
        self.data = data
        self.cache: dict[str, list[dict[str, str]]] = {}

    def _files(self, group: str) -> list[dict[str, str]]:
        if group not in self.cache:
            folder = self.conf / group
            files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
            target = (self.data.get(group) or {}).get("_target_") if isinstance(self.data.get(group), Mapping) else None
            pick = self.chosen.get(group)

            same = [f for f in files if f.stem == pick]
            if target:  # a key means the same in every option naming the same class
                same += [f for f in files if f.stem != pick and _load_yaml(f).get("_target_") == target]
            self.cache[group] = [yaml_comments(f) for f in same]
        return self.cache[group]

    def get(self, dotted: str) -> str:
        group, _, rest = dotted.partition(".")
        if not rest:
            return ""
        for comments in self._files(group):
            if rest in comments:
                return comments[rest]
        return ""


def _lookup(data: Any, dotted: str) -> tuple[bool, Any]:
    node = data
    for part in dotted.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            return False, None
    return True, node


def _describe_path(schemas: _Schemas, data: Mapping, dotted: str) -> tuple[Any, Any, Any, str]:
    """(type, owner schema, FieldInfo, last key) of a dotted key along the schema (types None when unknown)."""
    parts = dotted.split(".")
    tp = schemas.section_schema(parts[0], data)
    owner, finfo = None, None
    for part in parts[1:]:
        if tp is None:
            return None, None, None, part
        owner = unwrap_type(tp)
        known, tp, finfo = schemas.child(tp, part)
        if not known:
            return None, None, None, part
    return tp, owner, finfo, parts[-1]


def _expand(schemas: _Schemas, comments: _Comments, data: Mapping, dotted: str) -> tuple[list, list]:
    """(present, addable) rows ``(key, value, comment)`` of a dotted key: its leaves when its schema is
    a section, and the schema keys that the composition leaves out (they take the schema default)."""
    tp, owner, finfo, last = _describe_path(schemas, data, dotted)
    found, value = _lookup(data, dotted)

    if not found:
        if finfo is None:
            return [], []
        default = None if finfo.default is PydanticUndefined else finfo.default
        if isinstance(default, BaseModel):
            default = default.model_dump(by_alias=True)
        return [], [(dotted, fmt(default), comments.get(dotted) or schemas.describe(owner, last, finfo, tp))]
    if is_schema(tp) and isinstance(value, Mapping):
        present, addable = [], []
        for k in value:
            p, a = _expand(schemas, comments, data, f"{dotted}.{k}")
            present += p
            addable += a
        for k, (_, f) in _fields(tp).items():
            if k not in value and not f.is_required():
                p, a = _expand(schemas, comments, data, f"{dotted}.{k}")
                addable += a
        return present, addable
    return [(dotted, fmt(value), comments.get(dotted) or schemas.describe(owner, last, finfo, tp))], []


def _stage_doc(module: str, stage: str) -> str:
    """The first line of a stage module's docstring, without its ``<stage> stage:`` prefix."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return ""
    doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text())) or ""
    first = doc.splitlines()[0] if doc else ""
    return re.sub(rf"^{re.escape(stage)} stage:\s*", "", first)


def stage_help(stage: str, args) -> str:
    """The text of ``memlens <stage> --help``: what the stage does, how to run it, and every config
    key it reads with its current value and description (``key = value  # comment``)."""
    from omegaconf import OmegaConf

    from memlens.cli import DRY_RUN, STAGES
    from memlens.core.compose import config_groups, load_config
    from memlens.core.config import project_root

    root = Path(args.root) if args.root else project_root()
    module = STAGES[stage].split(":")[0]
    usage = (
        f"usage: memlens {stage} [--params params.yaml] [--root DIR] [-v] [key=value | group=option | +key=value ...]"
    )
    if stage in DRY_RUN:
        usage += " [--dry-run [--chars N]]"
    lines = [f"memlens {stage}: {_stage_doc(module, stage)}".rstrip(), "", usage, ""]

    overrides = [str(o) for o in args.overrides]
    cfg = load_config(overrides, params=args.params, root=root)
    data = OmegaConf.to_container(cfg, resolve=True)
    tracked = dvc_params(root, stage)
    params = None if tracked is None else [resolve_param(p, data) for p in tracked]
    optional = [sec for sec in optional_sections(module) if sec not in data]  # those conf/ holds are listed above
    schemas = _Schemas()
    chosen = _selected_options(root, overrides, args.params, data)
    comments = _Comments(root, chosen, data)
    groups = config_groups(root / "conf")

    # entries: a str is a line as it is, a tuple a (key, value, comment) row
    entries: list[str | tuple[str, str, str]] = []
    addable: list[tuple[str, str, str]] = []
    if params is None:
        entries.append(f"config keys: unknown ({root / 'dvc.yaml'} is missing; it lists what each stage reads)")
    elif not params:
        entries.append("config keys: none in conf/ (dvc.yaml tracks no params of this stage)")
    else:
        where = "params.yaml" if args.params else "conf/"
        entries.append(f"config keys (what dvc.yaml tracks for {stage}; values: {where} with the overrides given):")
    for p in params or []:
        group = p.split(".")[0]
        if "." not in p and group in groups:
            options = sorted(f.stem for f in (root / "conf" / group).glob("*.yaml"))
            pick = chosen.get(group)
            target = data.get(group, {}).get("_target_") if isinstance(data.get(group), Mapping) else None
            head = f"  [{group}] conf/{group}/{pick}.yaml" if pick else f"  [{group}]"
            head += f" ({target.rsplit('.', 1)[-1]})" if target else ""
            if len(options) <= 1:
                head += " (the only option)"
            elif group in LIST_OF_GROUP:
                head += f"; {len(options)} options (memlens list {LIST_OF_GROUP[group]}), choose with {group}=<name>"
            else:
                head += f"; options: {', '.join(options)} (choose with {group}=<name>)"
            entries.append(head)
        present, extra = _expand(schemas, comments, data, p)
        entries += present or [f"  {p}: not in the composed config"]
        addable += extra
    if addable:
        entries += ["", "also accepted (not in the composed config; add with +key=value; the value is the default):"]
        entries += [("+" + k, v, c) for k, v, c in addable]
    for sec in optional:
        schema = schemas.section_schema(sec, data)
        entries += ["", f"optional section {sec} (not in conf/; set with +{sec}.<key>=value; values are the defaults):"]
        for k in _fields(schema):
            present, extra = _expand(schemas, comments, data, f"{sec}.{k}")
            entries += present + [("+" + key, v, c) for key, v, c in extra]
    rows = [e for e in entries if isinstance(e, tuple)]
    width = min(KEY_WIDTH, max([len(r[0]) for r in rows] + [1]))
    lines += [e if isinstance(e, str) else _line(*e, width) for e in entries]
    lines += ["", f"e.g. memlens {stage} {_example(params or [], rows, groups, chosen, root)}"]
    lines.append("(DVC runs `memlens <stage> --params params.yaml`; `dvc exp run -S key=value` changes params.yaml)")
    return "\n".join(lines) + "\n"


def _example(params: list[str], rows: list[tuple[str, str, str]], groups: list[str], chosen, root: Path) -> str:
    """An override: another option of the stage's first group param, else its first plain key."""
    for p in params:
        if "." not in p and p in groups:
            others = [f.stem for f in sorted((root / "conf" / p).glob("*.yaml")) if f.stem != chosen.get(p)]
            if others:
                return f"{p}={others[0]}"
    for key, value, _ in rows:
        if key.rsplit(".", 1)[-1] not in ("name", "_target_"):
            return f"{key}={value}"
    return "key=value"


# ------------------------------------------------------------------------------------ list
def _class_kind(target: str) -> str:
    """The ``kind`` class attribute of a ``_target_`` class, read from its source (not imported)."""
    from memlens.core.codegraph import module_files

    mod, _, name = target.rpartition(".")
    path = module_files().get(mod)
    if path is None:
        return "?"
    classes = {n.name: n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)}
    seen: set[str] = set()
    todo = [name]
    while todo:
        c = classes.get(todo.pop(0))
        if c is None or c.name in seen:
            continue
        seen.add(c.name)
        for stmt in c.body:
            names = [t.id for t in stmt.targets if isinstance(t, ast.Name)] if isinstance(stmt, ast.Assign) else []
            if "kind" in names and isinstance(stmt.value, ast.Constant):
                return str(stmt.value.value)
        todo += [b.id for b in c.bases if isinstance(b, ast.Name)]
    return "?"


def _options(conf: Path, group: str) -> list[tuple[str, dict, str]]:
    folder = conf / group
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such config group (run memlens from the project folder or pass --root)")
    return [(f.stem, _load_yaml(f), first_comment(f)) for f in sorted(folder.glob("*.yaml"))]


def _systems(conf: Path) -> list[tuple[str, str, str, str]]:
    rows = []
    for stem, data, desc in _options(conf, "model"):
        target = str(data.get("_target_") or "?")
        kind = data.get("kind") or _class_kind(target)
        rows.append((stem, str(kind), target.rsplit(".", 1)[-1], desc))
    return rows


def _class_doc(module: str, cls: str) -> str:
    """The first sentence of a class's docstring, read from the source (nothing is imported)."""
    from memlens.core.codegraph import module_files

    path = module_files().get(module)
    if path is None:
        return ""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            doc = " ".join((ast.get_docstring(node) or "").split())
            end = re.search(r"(?<!\be\.g)(?<!\bi\.e)\.(\s|$)", doc)
            doc = doc[: end.start() + 1] if end else doc
            return doc if len(doc) <= 100 else doc[: doc.rfind(" ", 0, 96)] + " ..."
    return ""


def components_text(kind: str) -> list[str]:
    """The components of one kind: name, class, module and what it is (from the source)."""
    from memlens.core.registry import KINDS, discover

    k = KINDS[kind]
    found = discover(kind)
    rows = [(name, cls, mod, _class_doc(mod, cls)) for name, (mod, cls) in found.items()]
    lines = [f"{len(rows)} {k.label}s ({k.what}; chosen by {k.selected_by}):"]
    return lines + _table(rows, ("name", "class", "module", "description"))


def kinds_text() -> list[str]:
    """Every kind of component: what it is, where its modules live, which key chooses one."""
    from memlens.core.registry import KINDS, discover

    names = {v: k for k, v in LIST_KINDS.items() if v}
    rows = [
        (k.name, f"memlens list {names[k.name]}", ", ".join(k.packages), ", ".join(discover(k.name)))
        for k in KINDS.values()
    ]
    lines = [f"{len(rows)} kinds of component (each a class marked @component(kind, name), its schema beside it):"]
    lines += _table(rows, ("kind", "list", "package", "components"))
    lines += ["", "chosen by:"] + [f"  {k.name:<15} {k.selected_by}" for k in KINDS.values()]
    return lines


def list_text(what: str, root: Path) -> str:
    """The text of ``memlens list <what>``."""
    conf = root / "conf"
    if what not in LIST_KINDS:
        raise UsageError(f"cannot list {what!r} (choose one of: {', '.join(LIST_WHAT)})")
    if what == "kinds":
        lines = kinds_text()
    elif what == "models":
        rows = _systems(conf)
        lines = [f"{len(rows)} systems in conf/model (evaluate one with model=<name>):"]
        lines += _table(rows, ("name", "kind", "backend", "description"))
    elif what == "agents":
        rows = [r for r in _systems(conf) if r[1] == "agent"]
        if rows:
            lines = [f"{len(rows)} memory agents in conf/model (kind: agent):"]
            lines += _table(rows, ("name", "kind", "backend", "description"))
        else:
            lines = [
                "agents: none yet (no file in conf/model has kind: agent).",
                "A memory agent is a MemoryAgent subclass in src/memlens/eval/agents/ marked",
                '@component("agent", name), plus one YAML file in conf/model/ with kind: agent',
                "(see docs/architecture.md, 'Where to add things').",
            ]
    elif what in ("judges", "images"):
        group = "judge" if what == "judges" else "images"
        rows = [
            (stem, str(d.get("_target_") or "?").rsplit(".", 1)[-1], desc) for stem, d, desc in _options(conf, group)
        ]
        lines = [f"{len(rows)} options in conf/{group} (choose with {group}=<name>):"]
        lines += _table(rows, ("name", "class", "description"))
    elif what == "types":
        lines = _types_text()
    else:
        lines = components_text(LIST_KINDS[what])
    return "\n".join(lines) + "\n"


def _types_text() -> list[str]:
    from memlens.core.constants import QUESTION_TYPES, SUBTYPES, TYPE_ABBREV
    from memlens.core.tasks import task_key

    rows = []
    for qt in QUESTION_TYPES:
        for st in SUBTYPES[qt]:
            keys = {ref: task_key(qt, st, ref) for ref in ("Yes", "No", "3", "Insufficient information")}
            distinct = sorted(set(keys.values()))
            if len(distinct) == 1:
                task = distinct[0]
            else:
                yes_no = task_key(qt, st, "Yes")
                other = task_key(qt, st, "3")
                task = f"{yes_no} (reference Yes/No) | {other} (otherwise)"
            rows.append((f"{qt} ({TYPE_ABBREV[qt]})", st or '""', task))
    lines = [f"{len(QUESTION_TYPES)} question types, {len(rows)} (type, subtype) pairs and their judge task keys:"]
    return lines + _table(rows, ("question_type", "question_subtype", "judge task key"))


def run_list(args) -> int:
    """What there is to choose from:

    kinds       every kind of component: its components, where they live, which config key chooses one
    models      the systems of conf/model (name, kind, backend class, description): model=<name>
    agents      the systems whose kind is agent (memory-augmented agents)
    judges      the judges of conf/judge: judge=<name>
    images      the image sources of conf/images: images=<name>
    types       the question types and subtypes with their judge task keys
    adapters    the input adapters of memory agents (model.adapter, eval.caption_adapter, memory.adapters)
    retrievers  the retrievers (memory.retrievers)
    channels    the relevance channels of the filter (filter.channels)
    generators  the question and session generators (generator.name)"""
    from memlens.core.config import project_root

    what = list(args.overrides)
    if len(what) != 1:
        raise UsageError(f"usage: memlens list {{{','.join(LIST_WHAT)}}}")
    root = Path(args.root) if args.root else project_root()
    print(list_text(what[0], root), end="")
    return 0
