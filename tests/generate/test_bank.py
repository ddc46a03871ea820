"""Tests for the data bank loader (memlens.core.bank) and the YAML banks the build modules ship."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memlens.construction.abilities import contexts
from memlens.construction.images.synthetic import vocab
from memlens.construction.text import abstraction as ab
from memlens.construction.text import textbank as tb
from memlens.core.bank import Bank, bank_files, load_bank, placeholders
from memlens.core.errors import DataError, MemLensError

SRC = Path(tb.__file__).resolve().parents[3]
#: package -> the banks its modules load (every data/*.yaml must be one of them)
SHIPPED = {
    "memlens.construction.text": set(tb.BANKS) | {"abstraction"},
    "memlens.construction.images.synthetic": {"vocab"},
    "memlens.construction.abilities": {"contexts"},
}


@pytest.fixture
def make_bank(tmp_path, monkeypatch):
    """Write ``text`` as data/<name>.yaml of a fresh package and load it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    counter = iter(range(10_000))

    def make(text: str, name: str = "b") -> Bank:
        pkg = f"bankpkg_{tmp_path.name.replace('-', '_')}_{next(counter)}"
        (tmp_path / pkg / "data").mkdir(parents=True)
        (tmp_path / pkg / "__init__.py").write_text("")
        (tmp_path / pkg / "data" / f"{name}.yaml").write_text(text, encoding="utf-8")
        return load_bank(pkg, name)

    return make


# ------------------------------------------------------------------------------------------ loader
def test_loads_in_order_and_interns(make_bank):
    b = make_bank("z: [one, two]\na:\n  k2: ['x {s}', y]\n  k1: [w]\n")
    assert list(b.data) == ["z", "a"] and list(b.mapping("a")) == ["k2", "k1"]
    assert b.strings("z") == ("one", "two")
    assert b.templates("a", "k2", slots={"s"}) == ("x {s}", "y")
    # equal strings are one object, as literals of one module are (textbank's dedup relies on it)
    b2 = make_bank("p: [a long template sentence, other]\nq: [a long template sentence]\n")
    assert b2.strings("p")[0] is b2.strings("q")[0]


def test_cached(make_bank, tmp_path):
    b = make_bank("k: [v]\n")
    pkg = b.where.split(os.sep)[-3]
    assert load_bank(pkg, "b") is b


@pytest.mark.parametrize(
    "text, needle",
    [
        ("k: [a, b\n", "invalid YAML"),
        ("k: [a]\nk: [b]\n", "duplicate key 'k'"),
        ("- a\n- b\n", "expected a mapping of keys at the top level"),
        ("", "expected a mapping of keys at the top level"),
        ("k: [2024-05-01]\n", "key k.0: unsupported value"),
        ("1: [a]\n", "keys must be strings"),
    ],
)
def test_malformed_file(make_bank, text, needle):
    with pytest.raises(DataError) as e:
        make_bank(text)
    msg = str(e.value)
    assert needle in msg and "b.yaml" in msg and "\n" not in msg
    assert isinstance(e.value, MemLensError)  # the CLI prints it as one message


@pytest.mark.parametrize(
    "call, needle",
    [
        (lambda b: b.strings("missing"), "key missing: missing"),
        (lambda b: b.strings("sec", "nope"), "key sec.nope: missing"),
        (lambda b: b.strings("num"), "key num.1: expected a string, found int 3"),
        (lambda b: b.strings("flag"), "key flag.0: expected a string, found bool False"),
        (lambda b: b.strings("empty"), "key empty: expected a non-empty list of strings"),
        (lambda b: b.mapping("num"), "key num: expected a non-empty mapping"),
        (lambda b: b.mapping("sec", keys=("a", "c")), "key sec: expected the keys a, c; missing c; unknown b"),
        (lambda b: b.templates("tpl", slots={"s"}), "key tpl.1: unknown placeholder {subject}"),
        (lambda b: b.templates("open", slots={"s"}), "key open.0: '[' without ']'"),
        (lambda b: b.templates("brace", slots={"s"}), "key brace.0: expected '}' before end of string"),
        (lambda b: b.phrases("tpl"), "key tpl.0: a plain phrase may not hold"),
        (lambda b: b.rows("rows", types=(str, float)), "key rows.1.1: expected float, found str"),
        (lambda b: b.rows("rows", types=(str, (int, float), str)), "key rows.0: expected a list of 3 values"),
        (lambda b: b.string_map("sec"), "key sec.b: expected a string, found list"),
    ],
)
def test_shape_errors_name_file_and_key(make_bank, call, needle):
    b = make_bank(
        "num: [a, 3]\nflag: [no]\nempty: []\nsec:\n  a: x\n  b: [y]\n"
        "tpl: ['{s} ok', 'about {subject}']\nopen: ['[a|b']\nbrace: ['{s']\nrows: [[a, 1.5], [b, c]]\n"
    )
    with pytest.raises(DataError) as e:
        call(b)
    msg = str(e.value)
    assert needle in msg, msg
    assert msg.startswith(b.where + ": ")


def test_missing_bank(make_bank):
    make_bank("k: [v]\n", name="present")
    pkg = next(p for p in sys.modules if p.startswith("bankpkg_"))
    with pytest.raises(DataError, match=r"absent\.yaml: data bank file missing"):
        load_bank(pkg, "absent")
    with pytest.raises(DataError, match="no package 'no_such_pkg_xyz'"):
        load_bank("no_such_pkg_xyz", "b")


def test_placeholders():
    assert placeholders("a {s} [b|{t}] {s}") == {"s", "t"}
    assert placeholders("no fields") == set()


# ------------------------------------------------------------------------------------ shipped banks
@pytest.mark.parametrize("package", sorted(SHIPPED))
def test_every_data_file_loads_and_is_used(package):
    names = bank_files(package)
    assert set(names) == SHIPPED[package]
    for name in names:
        b = load_bank(package, name)
        assert b.data and Path(b.where).parent.name == "data"
        # the files are plain YAML: a generic safe load gives the same data
        assert yaml.safe_load(Path(b.where).read_text(encoding="utf-8")) == b.data


def _strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)


def test_textbank_slots_are_what_the_code_fills():
    """The declared slot names are exactly the keys the generators put into their slot dicts."""
    assert set(tb._slots("Grocery shopping", "the dairy section")) == set(tb.SLOTS)
    assert set(tb.USER_SLOTS) == set(tb.SLOTS) | {"a"}
    # every placeholder of every textbank file is one the code fills somewhere
    known = (
        set(tb.USER_SLOTS)
        | set(tb.FOLLOWUP_SLOTS)
        | set(tb.MENTION_SLOTS)
        | set(tb.FILLER_SLOTS)
        | set(tb.REACTION_SLOTS)
    )
    for name in tb.BANKS:
        for s in _strings(load_bank("memlens.construction.text", name).data):
            assert placeholders(s) <= known, (name, s)
    # abstraction: frames and background sentences are filled by mention() and background()
    for s in _strings(load_bank("memlens.construction.text", "abstraction").get("mention_frames_when")):
        assert placeholders(s) <= {"a", "ctx", "when"}


def test_every_compiled_template_renders_with_the_code_slots():
    rng = random.Random(0)
    slots = tb._slots("Grocery shopping", "the dairy section")
    slots.update(ack="the photo", Ack="The photo", a="what to look for")
    pools = [
        tb._ACK_HINT,
        tb._ACK_PLAIN,
        tb._ACK_SECOND,
        tb._GENERIC_SUPPORT,
        tb._USER_QLEADS,
        tb._USER_CLOSE,
        tb._OPENING_LEADS,
        *tb._DOMAIN.values(),
        *tb._USER_LEADS.values(),
        *tb._USER_CONTEXT.values(),
        *tb._USER_SUBQ.values(),
    ]
    pools += [p for angles in tb._ANGLES.values() for a in angles for p in a[1:]]
    for pool in pools:
        for t in pool:
            out = tb._render(rng, t, slots)
            assert "{" not in out and "[" not in out, out
    for t in tb._FOLLOWUP_FRAMES:
        assert "{" not in tb._render(rng, t, {"a": "x"})
    filler = [
        tb._FILLER_OPENERS,
        tb._FILLER_FOLLOW_OPENERS,
        tb._FILLER_CLOSERS,
        tb._FILLER_GENERIC,
        tb._FILLER_USER_FOLLOW,
        tb._FILLER_USER_FOLLOW_EXPLAIN,
        tb._FILLER_SWITCH,
    ]
    filler += [d[k] for d in tb._FILLER.values() for k in ("open", "body")]
    for pool in filler:
        for t in pool:
            assert "{" not in tb._render(rng, t, {"x": "a subject"})
    for kind in tb.MENTION_KINDS:
        for t in tb.mention_templates(kind):
            assert "{" not in t.format(thing="the receipt", when="lunch")
    for t in ab.MENTION_FRAMES + ab.MENTION_FRAMES_WHEN:
        assert "{" not in t.format(a="this bakery <image>", ctx="the trip", when="lunch")
    for t in ab._OPENERS:
        assert "{" not in t.format(topic="t")
    for t in ab._SUB:
        assert "{" not in t.format(sub="s")


def test_shapes_the_modules_expect():
    assert all(isinstance(c, tuple) and len(c) == 3 for c in vocab.CITIES)
    assert all(
        isinstance(lo, float) and isinstance(hi, float) for _, items in vocab.STORES.values() for _, lo, hi in items
    )
    assert all(isinstance(lo, int) for _, lo, _ in vocab.ONLINE_ITEMS)
    assert [e for e, _ in vocab.EVENTS] == ["concert", "theatre", "sports", "exhibition", "festival"]
    assert isinstance(contexts.OCCASIONS, list) and "the flea market" in contexts.OCCASIONS
    assert ab.GENERIC == ("place", "thing", "item", "organization")
    assert ab.CATEGORIES[0] == "bakery" and ab.GROUPS["bakery"] == "place" and ab.GROUPS["match"] == "event"


def test_one_home_for_shared_lists():
    from memlens.construction.abilities import ie, msr, tr
    from memlens.construction.images.synthetic import formats, object_scene

    assert msr.BRANDS is vocab.BRANDS
    assert msr.PRICE_SCALE is formats.PRICE_SCALE
    assert tr.MONTHS is formats.MONTHS
    assert ie.PLURAL is object_scene.KIND_PLURALS
    assert contexts.FAMILY_KIND is tb.FAMILY_KIND


def test_broken_shipped_file_ends_the_stage_with_one_message(tmp_path):
    """A data file edited wrongly stops the stage with one line naming the file, key and placeholder."""
    src = tmp_path / "src"
    shutil.copytree(SRC / "memlens", src / "memlens", ignore=shutil.ignore_patterns("__pycache__"))
    path = src / "memlens" / "construction" / "text" / "data" / "user.yaml"
    text = path.read_text(encoding="utf-8")
    old = "    - I've always wondered how much thought actually goes into {s}.\n"
    assert old in text
    path.write_text(text.replace(old, old.replace("{s}", "{subject}")), encoding="utf-8")
    root = tmp_path / "proj"
    shutil.copytree(SRC.parent / "conf", root / "conf")
    code = (
        "import sys; from memlens.cli import main; "
        f"sys.exit(main(['generate', '--root', {str(root)!r}, 'data.scale=tiny']))"
    )
    env = {**os.environ, "PYTHONPATH": str(src)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2, r.stderr
    err = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert len(err) == 1 and "Traceback" not in r.stderr, r.stderr
    assert str(path) in err[0] and "key leads.identification.4" in err[0] and "{subject}" in err[0], err[0]
