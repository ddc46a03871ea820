"""The typed config schemas (beside their components, found by memlens.core.schemas) and Hydra
composition of params.yaml + overrides.

Unknown keys fail in every group (with and without ``+``) with the key path and the section's known
keys; wrong types fail naming the key; a group override on params.yaml gives exactly the section of
composing conf/ with that override; every option file validates and is complete; constructors are
strict and take their defaults from their schemas (declared once)."""

from __future__ import annotations

import inspect
import re
import shutil

import pytest
import yaml
from hydra.utils import get_class
from omegaconf import OmegaConf
from pydantic import BaseModel

from memlens.core import schemas as S
from memlens.core.compose import load_config
from memlens.core.errors import ConfigError
from memlens.core.registry import discover, find_component
from tests.conftest import REPO, make_project, run_stage

CONF = REPO / "conf"
MODELS = sorted(p.stem for p in (CONF / "model").glob("*.yaml"))
JUDGES = sorted(p.stem for p in (CONF / "judge").glob("*.yaml"))
PARAMS = "params.yaml"
PATHS = [None, PARAMS]  # conf/ composition, committed params.yaml


def load(overrides, params=None, root=REPO):
    return load_config(list(overrides), params=params, root=root)


def plain(cfg):
    return OmegaConf.to_container(cfg, resolve=False)


def known_in(msg: str) -> list[str]:
    m = re.search(r"\(known: ([^)]*)\)", msg)
    assert m, msg
    return [k.strip() for k in m.group(1).split(",")]


# ------------------------------------------------------------------------------ unknown keys
# (setup overrides, a real key of the section, its misspelling)
MISSPELLED = [
    ([], "data.seed", "data.sede"),
    ([], "data.tokens.patch", "data.tokens.pach"),
    ([], "data.scales.tiny.counts", "data.scales.tiny.countz"),
    ([], "images.workers", "images.wrokers"),
    ([], "filter.max_side", "filter.max_sid"),
    ([], "generator.max_regenerations", "generator.max_regeneration"),
    ([], "model.kind", "model.knd"),
    (["model=chance"], "model.seed", "model.sed"),
    (["model=openai_compatible"], "model.concurrency", "model.concurency"),
    (["model=vllm_server"], "model.gpu_memory_utilization", "model.gpu_memory_utilisation"),
    (["model=vllm_server"], "model.resources.gpus", "model.resources.gpu"),
    (["model=transformers"], "model.device_map", "model.devicemap"),
    ([], "eval.mode", "eval.mod"),
    ([], "validate.max_auc", "validate.max_aux"),
    ([], "judge.tolerance", "judge.tolerence"),
    (["judge=llm"], "judge.max_words", "judge.max_word"),
    ([], "tracking.enabled", "tracking.enable"),
]


@pytest.mark.parametrize("params", PATHS, ids=["conf", "params"])
@pytest.mark.parametrize("plus", ["", "+"], ids=["set", "add"])
@pytest.mark.parametrize("setup,good,bad", MISSPELLED, ids=[m[2] for m in MISSPELLED])
def test_misspelled_key_is_rejected_with_the_known_keys(setup, good, bad, plus, params):
    with pytest.raises(ConfigError) as ei:
        load([*setup, f"{plus}{bad}=1"], params=params)
    msg = str(ei.value)
    assert f"unknown config key {bad} (known: " in msg, msg
    assert good.rsplit(".", 1)[1] in known_in(msg)
    assert bad.rsplit(".", 1)[1] not in known_in(msg)


@pytest.mark.parametrize("params", PATHS, ids=["conf", "params"])
def test_unknown_top_level_section(params):
    with pytest.raises(ConfigError, match=r"unknown config key modle \(known: data, images, filter"):
        load(["+modle.name=x"], params=params)


def test_known_keys_follow_the_target_schema():
    with pytest.raises(ConfigError) as refuse:
        load(["+model.concurency=4"])
    assert known_in(str(refuse.value)) == ["name", "_target_", "kind"]
    with pytest.raises(ConfigError) as oai:
        load(["model=openai_compatible", "+model.concurency=4"])
    keys = known_in(str(oai.value))
    assert keys[:2] == ["name", "_target_"] and {"base_url", "concurrency", "token_param"} <= set(keys)


def test_stale_params_file_with_paths_is_rejected(tmp_path):
    root = make_project(tmp_path)
    text = (REPO / PARAMS).read_text() + "paths:\n  data: data\n  reports: reports\n"
    (root / PARAMS).write_text(text)
    with pytest.raises(ConfigError, match=r"unknown config key paths \(known: "):
        load([], params=PARAMS, root=root)


# ------------------------------------------------------------------------------ wrong types and values
WRONG = [
    (["model=openai_compatible", "model.concurrency=abc"], "model.concurrency", "valid integer"),
    (["model=vllm_server", "model.trust_remote_code=maybe"], "model.trust_remote_code", "valid boolean"),
    (["model=vllm_server", "model.extra_args=--flag"], "model.extra_args", "valid list"),
    (["data.seed=1.5"], "data.seed", "valid integer"),
    (["eval.mode=fast"], "eval.mode", "'standard'"),
    (["eval.max_items=abc"], "eval.max_items", "valid integer"),
    (["images.photo_effect_rate=2"], "images.photo_effect_rate", "less than or equal to 1"),
    (["generator.user_words=[90,25]"], "generator.user_words", "low <= high"),
    (["judge=llm", "judge.layout=flat"], "judge.layout", "'system' or 'single'"),
    (["tracking.enabled=yes_please"], "tracking.enabled", "valid boolean"),
]


@pytest.mark.parametrize("params", PATHS, ids=["conf", "params"])
@pytest.mark.parametrize("overrides,key,why", WRONG, ids=[w[1] for w in WRONG])
def test_wrong_type_fails_naming_the_key(overrides, key, why, params):
    with pytest.raises(ConfigError) as ei:
        load(overrides, params=params)
    msg = str(ei.value)
    assert key in msg and why in msg, msg


def test_cross_section_rules():
    with pytest.raises(ConfigError, match=r"unknown data.scale 'huge'"):
        load(["data.scale=huge"])
    with pytest.raises(ConfigError, match=r"eval.lengths: unknown length 'big'"):
        load(["eval.lengths=[big]"])
    with pytest.raises(ConfigError, match="hf_id or model_path"):
        load(["model=vllm_server", "model.hf_id=null"])
    with pytest.raises(ConfigError, match=r"disagrees with resources.tensor_parallel_size"):
        load(["model=vllm_server", "model.tensor_parallel_size=2"])
    with pytest.raises(ConfigError, match="derives base_url/model"):
        load(["model=vllm_server", "+model.base_url=http://x/v1"])
    with pytest.raises(ConfigError, match="clip channel needs model and pretrained"):
        load(["filter.channels=[clip]"])


@pytest.mark.parametrize("section,setup", [("model", "model=openai_compatible"), ("judge", "judge=llm")])
def test_literal_api_keys_are_refused(section, setup):
    with pytest.raises(ConfigError, match=rf"{section}.api_key is not accepted.*{section}.api_key_env"):
        load([setup, f"+{section}.api_key=sk-secret"])


# ------------------------------------------------------------------------------ params.yaml + overrides
@pytest.mark.parametrize("group,option", [("model", m) for m in MODELS] + [("judge", j) for j in JUDGES])
def test_every_model_and_judge_option_validates_and_params_override_equals_conf(group, option):
    """Every conf/model/*.yaml and conf/judge/*.yaml validates against the schema of its _target_, and
    `--params params.yaml group=option` gives exactly the composition of conf/ with `group=option`."""
    cfg = load([f"{group}={option}"])
    data = OmegaConf.to_container(cfg, resolve=True)
    schema = S.schema_for(group, data[group])
    assert schema is get_class(data[group]["_target_"]).Config  # the schema beside the class
    schema.model_validate(data[group])
    from_params = plain(load([f"{group}={option}"], params=PARAMS))
    assert from_params == plain(cfg)
    assert list(from_params) == list(yaml.safe_load((REPO / PARAMS).read_text()))  # the file's order


def test_group_override_honours_the_option_defaults_list(tmp_path):
    root = make_project(tmp_path)
    (root / "conf" / "model" / "my-vllm.yaml").write_text(
        "defaults:\n  - vllm_server\n  - _self_\nname: my-vllm\nhf_id: org/my-model\nserved_model_name: my-vllm\n"
    )
    composed = load(["data.seed=7"], root=root)
    (root / PARAMS).write_text(OmegaConf.to_yaml(composed))
    cfg = load(["model=my-vllm"], params=PARAMS, root=root)
    ref = load(["model=my-vllm"], root=root)
    assert plain(cfg.model) == plain(ref.model)
    assert cfg.model.hf_id == "org/my-model" and cfg.model.host == "127.0.0.1"  # from vllm_server.yaml
    assert "defaults" not in cfg.model
    assert cfg.data.seed == 7  # the rest of the params file is kept
    assert plain(cfg)["data"] == plain(composed)["data"]


def test_params_overrides_use_hydra_semantics(tmp_path):
    root = make_project(tmp_path)
    (root / PARAMS).write_text(OmegaConf.to_yaml(load([], root=root)))
    cfg = load(["data.seed=7", "model=chance", "model.seed=3", "+report.alpha=0.1"], params=PARAMS, root=root)
    assert cfg.data.seed == 7 and cfg.model.seed == 3 and cfg.report.alpha == 0.1
    assert "seed" not in load(["model=chance", "~model.seed"], params=PARAMS, root=root).model
    with pytest.raises(ConfigError, match="missing config key validate"):  # its values live in conf/ only
        load(["~validate"], params=PARAMS, root=root)
    with pytest.raises(ConfigError, match=r"add it with \+report.alpha=0.1"):
        load(["report.alpha=0.1"], params=PARAMS, root=root)  # a key the schema knows, not in the config
    with pytest.raises(ConfigError) as ei:
        load(["model=nope"], params=PARAMS, root=root)
    msg = str(ei.value)
    assert "Could not find 'model/nope'" in msg and "Available options in 'model'" in msg and "chance" in msg
    with pytest.raises(ConfigError, match="bad override"):
        load(["data.seed=[1"], params=PARAMS, root=root)


def test_interpolations_in_the_params_file_resolve(tmp_path):
    root = make_project(tmp_path)
    (root / PARAMS).write_text(OmegaConf.to_yaml(load(["model=vllm_server", "model.served_model_name=vx"], root=root)))
    assert "${oc.select:eval.layout,messages}" in (root / PARAMS).read_text()  # kept unresolved in the file
    cfg = load(["eval.layout=legacy"], params=PARAMS, root=root)
    assert cfg.model.name == "vx" and cfg.model.layout == "legacy"


@pytest.mark.parametrize("params", PATHS, ids=["conf", "params"])
def test_interpolations_resolve(params):
    generic = load(["model=openai_compatible", "model.model=served-x"], params=params)
    assert generic.model.name == "served-x"  # ${.model}
    served = load(["model=vllm_server", "model.served_model_name=vx", "eval.layout=legacy"], params=params)
    assert served.model.name == "vx" and served.model.layout == "legacy"  # ${oc.select:eval.layout,messages}


def test_validation_runs_before_any_work(tmp_path):
    root = make_project(tmp_path)
    assert run_stage(root, "compose", "+model.concurency=4") == 2
    assert not (root / PARAMS).exists()
    assert run_stage(root, "ontology", "data.sede=1") == 2
    assert not (root / "data").exists()
    (root / PARAMS).write_text((REPO / PARAMS).read_text())
    assert run_stage(root, "ontology", "--params", PARAMS, "+data.sede=1") == 2
    assert not (root / "data").exists()


# ------------------------------------------------------------------------------ option files
#: groups whose schema is one plain section (the others name their class with a ``_target_``)
PLAIN = {"data", "filter", "generator", "eval", "validate", "tracking", "memory"}
#: option files that are templates to copy: they list every key of their schema (so that
#: ``key=value`` overrides every one of them, in memlens and in ``dvc exp run -S``)
COMPLETE = {
    "model": {"openai_compatible", "vllm_server", "transformers", "refuse", "chance"},
    "judge": set(JUDGES),
    "images": {"synthetic", "directory"},
}


def _option_files():
    for d in sorted(p for p in CONF.iterdir() if p.is_dir() and p.name != "hydra"):
        for f in sorted(d.glob("*.yaml")):
            yield d.name, f


@pytest.mark.parametrize("group,path", list(_option_files()), ids=lambda x: getattr(x, "stem", x))
def test_option_files_are_complete_or_rely_on_documented_defaults(group, path):
    raw = yaml.safe_load(path.read_text())
    assert "defaults" not in raw
    # an optional section with a conf/ file (export) lists every key: conf/ holds the values DVC tracks
    plain = group in PLAIN or group in S.OPTIONAL
    schema = S.section_schema(group) if plain else S.schema_for(group, raw)
    keys = set(S.known_keys(schema))
    assert set(raw) <= keys, set(raw) - keys
    if plain or path.stem in COMPLETE.get(group, ()):
        assert set(raw) == keys, f"{path.name} lacks {sorted(keys - set(raw))}"
    # keys left out take the schema default (the constructor takes it from there)
    for k in keys - set(raw):
        field = next(f for n, f in schema.model_fields.items() if (f.alias or n) == k)
        assert not field.is_required(), f"{path.name}: {k} is required"


def test_plain_sections_declare_no_default():
    """A key of a plain section has its value in conf/ (every option lists it): its schema declares
    no default, so the value lives in one place."""
    for group in sorted(PLAIN):
        schema = S.section_schema(group)
        with_default = [k for k, f in schema.model_fields.items() if not f.is_required()]
        assert with_default == [], f"{group}: {with_default} have a schema default and a conf/ value"


def test_generator_has_no_fictional_target():
    raw = yaml.safe_load((CONF / "generator" / "template.yaml").read_text())
    assert "_target_" not in raw and raw["name"] == "template"
    with pytest.raises(ConfigError, match=r"generator.name"):
        load(["generator.name=llm"])
    with pytest.raises(ConfigError, match=r"unknown generator 'nope' \(known: llm, template\)"):
        load(["generator.name=nope"])


def test_config_has_no_paths_section():
    assert "paths" not in yaml.safe_load((CONF / "config.yaml").read_text())
    assert "paths" not in yaml.safe_load((REPO / PARAMS).read_text())


# ------------------------------------------------------------------------------ constructors
def _params(cls) -> dict[str, inspect.Parameter]:
    """Keyword parameters a class accepts; ``**kwargs`` forwarded to a strict base class count as the
    base's parameters (those the class does not declare itself)."""
    sig = inspect.signature(cls.__init__)
    own = {n: p for n, p in sig.parameters.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        base = next(b for b in cls.__mro__[1:] if "__init__" in vars(b))
        if base is object:  # a catch-all of its own (image sources: the keys the crawl stage reads)
            return own
        inherited = _params(base)
        assert not any(p.kind == p.VAR_KEYWORD for p in inspect.signature(base.__init__).parameters.values())
        own.update({n: p for n, p in inherited.items() if n not in own})
    return own


#: constructor parameters that are not configuration keys: (class name) -> names
NOT_CONFIG = {
    "VLLMServerModel": {"base_url", "model"},  # refused with a clear message
    "LLMJudge": {"root"},  # set by the judge stage
}
#: what a class needs beyond its schema defaults to build offline
MINIMAL = {
    "OpenAICompatibleModel": {"base_url": "http://127.0.0.1:1/v1", "model": "m"},
    "VLLMServerModel": {"hf_id": "org/m"},
    "TransformersModel": {"hf_id": "org/m"},
    "DirectorySource": {"root": str(REPO / "conf")},
}
#: the strict ``_target_`` components (conf/ names their class): models, agents, judges
TARGETED = [(kind, name) for kind in ("model", "agent", "judge") for name in discover(kind)]


@pytest.mark.parametrize("kind,name", TARGETED, ids=[f"{k}-{n}" for k, n in TARGETED])
def test_constructor_is_strict_and_takes_its_defaults_from_its_schema(kind, name):
    cls = find_component(kind, name)
    schema = cls.Config
    assert schema.__module__ == cls.__module__ or kind == "agent", "the schema lives beside the class"
    params = _params(cls)
    fields = {(f.alias or n): f for n, f in schema.model_fields.items() if f.alias != "_target_"}
    assert set(fields) == set(params) - NOT_CONFIG.get(cls.__name__, set())
    for key, f in fields.items():
        if not f.is_required():
            assert params[key].default is inspect.Parameter.empty, (
                f"{cls.__name__}({key}=...): the schema declares its default; the constructor repeats it"
            )
    minimal = MINIMAL.get(cls.__name__, {})
    cls(name="x", **minimal)  # builds offline (no server, no weights) from the schema's defaults
    with pytest.raises(TypeError, match="not_a_key"):
        cls(name="x", **minimal, not_a_key=1)


@pytest.mark.parametrize("name", sorted(discover("image_source")))
def test_image_source_takes_its_defaults_from_its_schema(name):
    """An image source's own keyword arguments are keys of its schema without a default of their
    own (the source also receives the keys only the crawl stage reads: haystack_per_session, workers)."""
    cls = find_component("image_source", name)
    assert cls.Config.__module__ == cls.__module__
    fields = {(f.alias or n): f for n, f in cls.Config.model_fields.items()}
    params = {n: p for n, p in inspect.signature(cls.__init__).parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert set(params) <= set(fields)
    for key, p in params.items():
        if not fields[key].is_required():
            assert p.default is inspect.Parameter.empty, f"{cls.__name__}({key}=...) repeats the schema default"
    src = cls(**MINIMAL.get(cls.__name__, {}))
    assert src.families()


def test_defaults_have_one_home():
    """The retry backoff is declared once in src/ (core/http.py); a template shows that value."""
    import re

    src = REPO / "src" / "memlens"
    decl = re.compile(r"^\s*backoff_base_s\b[^#\n]*=\s*[\d.]+|^BACKOFF_BASE_S\s*=", re.M | re.I)
    homes = [p.relative_to(src) for p in src.rglob("*.py") if decl.search(p.read_text())]
    assert [str(p) for p in homes] == ["core/http.py"], homes
    from memlens.eval.judge.llm import LLMJudgeSettings
    from memlens.eval.systems.openai_model import OpenAICompatibleSettings

    for schema in (OpenAICompatibleSettings, LLMJudgeSettings, find_component("agent", "memory_t1").Config):
        assert schema.model_fields["backoff_base_s"].default == 1.0


def test_eval_mode_layout_and_subset_come_from_the_code_that_implements_them():
    from typing import get_args

    from memlens.eval.agents.subset import SUBSETS
    from memlens.eval.evaluate.settings import EvalSettings
    from memlens.eval.prompt import LAYOUTS
    from memlens.eval.systems.base import MODES

    fields = EvalSettings.model_fields
    assert get_args(fields["mode"].annotation) == MODES
    assert get_args(fields["layout"].annotation) == LAYOUTS
    assert get_args(fields["subset"].annotation) == SUBSETS
    with pytest.raises(ConfigError, match=r"eval\.mode"):
        load(["eval.mode=fast"])


# ------------------------------------------------------------------------------ custom targets
class CustomSettings(BaseModel):
    model_config = {"extra": "forbid", "populate_by_name": False}
    name: str
    target: str = __import__("pydantic").Field(alias="_target_")
    depth: int = 1


class CustomModel:
    Config = CustomSettings


class NoSchemaModel:
    pass


def test_a_custom_target_uses_its_config_schema(tmp_path):
    root = make_project(tmp_path)
    t = f"{__name__}.CustomModel"
    cfg = load([f"model._target_={t}", "~model.kind", "+model.depth=3"], root=root)
    assert cfg.model.depth == 3
    with pytest.raises(ConfigError, match=r"unknown config key model.deep \(known: name, _target_, depth\)"):
        load([f"model._target_={t}", "~model.kind", "+model.deep=3"], root=root)
    with pytest.raises(ConfigError, match="declares no config schema"):
        load([f"model._target_={__name__}.NoSchemaModel"], root=root)
    with pytest.raises(ConfigError, match="cannot be imported"):
        load(["model._target_=nowhere.Nothing"], root=root)


def test_validate_settings_returns_typed_sections():
    from memlens.construction.images.sources import SyntheticSourceSettings
    from memlens.construction.ontology.settings import OntologySettings
    from memlens.eval.judge.llm import LLMJudgeSettings
    from memlens.eval.systems.vllm_server import VLLMServerSettings

    data = OmegaConf.to_container(load(["model=vllm_server", "judge=llm"]), resolve=True)
    st = S.validate(data)
    assert isinstance(st.model, VLLMServerSettings) and st.model.port == 0
    assert isinstance(st.judge, LLMJudgeSettings) and isinstance(st.images, SyntheticSourceSettings)
    assert st.validate.max_auc == 0.6
    assert st.ontology == OntologySettings() and "ontology" not in st.composed()  # defaults, not composed
    assert st.composed("model")["model"] == data["model"]  # exactly the composition
    with pytest.raises(AttributeError, match="read-only"):
        st.data = None


def test_params_file_without_conf_dir(tmp_path):
    """A project without conf/ still reads its params file (no group to select)."""
    root = make_project(tmp_path)
    (root / PARAMS).write_text((REPO / PARAMS).read_text())
    shutil.rmtree(root / "conf")
    cfg = load(["data.seed=9"], params=PARAMS, root=root)
    assert cfg.data.seed == 9 and cfg.model.name == "refuse"


def test_a_composed_config_given_to_a_stage_is_validated_into_settings(tmp_path):
    """Callers outside the CLI may give a stage the composition itself (``load_config``): it is
    validated into the same typed settings; a partial one is a clear error, never read by key."""
    from memlens.construction.ontology import stage as O
    from memlens.core.compose import load_settings
    from memlens.core.config import Paths
    from memlens.core.settings import Settings, as_settings

    cfg = load_config(["data.seed=5"])
    st = as_settings(cfg)
    assert isinstance(st, Settings) and st.composed() == load_settings(["data.seed=5"]).composed()
    assert as_settings(st) is st
    O.run(cfg, Paths(tmp_path))
    assert (tmp_path / "data" / "ontology" / "topics.jsonl").is_file()
    with pytest.raises(ConfigError, match="missing config key images"):
        O.run(OmegaConf.create({"data": plain(cfg)["data"]}), Paths(tmp_path))
