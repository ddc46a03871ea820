import pytest
from omegaconf import OmegaConf

from memlens.core.config import length_tokens, load_config, resolved_lengths
from memlens.core.errors import ConfigError
from tests.conftest import REPO, make_project


def test_compose_defaults_and_group_override():
    cfg = load_config(["model=chance"], root=REPO)
    assert cfg.model.name == "chance"
    assert resolved_lengths(cfg) == ["32k", "64k"]


def test_unknown_group_option_is_a_clear_error():
    with pytest.raises(ConfigError, match="model/nope"):
        load_config(["model=nope"], root=REPO)


def test_unknown_key_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"model.nonexistent"):
        load_config(["model.nonexistent=1"], root=REPO)


def test_unknown_scale():
    with pytest.raises(ConfigError, match=r"data.scale"):
        load_config(["data.scale=huge"], root=REPO)


def test_params_file_with_overrides(tmp_path):
    root = make_project(tmp_path)
    cfg = load_config([], root=root)
    (root / "params.yaml").write_text(OmegaConf.to_yaml(cfg))
    c2 = load_config(["model=chance", "data.seed=7"], params="params.yaml", root=root)
    assert c2.model.name == "chance" and c2.data.seed == 7
    assert c2.model == load_config(["model=chance"], root=root).model  # the option file, as Hydra composes it
    assert c2.judge == cfg.judge and c2.images == cfg.images  # the rest is the file's
    with pytest.raises(ConfigError, match=r"Could not find 'model/nope'(.|\n)*Available options in 'model'"):
        load_config(["model=nope"], params="params.yaml", root=root)
    with pytest.raises(ConfigError, match=r"unknown config key data.nope \(known: scale, seed, "):
        load_config(["data.nope=1"], params="params.yaml", root=root)
    with pytest.raises(ConfigError, match=r"unknown config key data.nope \(known: scale, seed, "):
        load_config(["+data.nope=1"], params="params.yaml", root=root)


def test_params_file_errors(tmp_path):
    root = make_project(tmp_path)
    with pytest.raises(ConfigError, match="params file not found"):
        load_config([], params="params.yaml", root=root)
    (root / "params.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config([], params="params.yaml", root=root)
    (root / "params.yaml").write_text("defaults: [data: default]\n")
    with pytest.raises(ConfigError, match="no defaults list"):
        load_config([], params="params.yaml", root=root)


def test_unknown_key_without_plus_names_the_known_keys():
    with pytest.raises(
        ConfigError,
        match=r"unknown config key eval.mod \(known: mode, layout, lengths, max_items, wait_for_lock, shard, collect, "
        r"max_failure_rate, subset, caption_adapter, caption_adapter_options\)",
    ):
        load_config(["eval.mod=cot"], root=REPO)


def test_committed_params_yaml_is_the_composition_of_conf():
    composed = OmegaConf.to_container(load_config([], root=REPO))
    committed = OmegaConf.to_container(OmegaConf.load(REPO / "params.yaml"))
    assert committed == composed, "params.yaml is stale: run `make params` and commit it"
    assert (REPO / "params.yaml").read_text() == OmegaConf.to_yaml(load_config([], root=REPO))
    assert OmegaConf.to_container(load_config([], params="params.yaml", root=REPO)) == composed


def test_length_names():
    assert length_tokens("32k") == 32768 and length_tokens("256K") == 262144
    with pytest.raises(ConfigError):
        length_tokens("big")


def test_loading_the_settings_imports_no_http_sdk():
    """Every stage process loads the settings; the openai SDK (~1 s to import) is imported only
    where a client is made, so a stage that makes no request never pays for it."""
    import subprocess
    import sys

    code = (
        "import sys; from memlens.core.compose import load_settings; load_settings(['data.scale=small']); "
        "import memlens.core.http, memlens.eval.systems.openai_model, memlens.construction.generate.llm; "
        "print(sorted(m for m in ('openai', 'aiohttp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
