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
    with pytest.raises(ConfigError, match="model.nonexistent"):
        load_config(["model.nonexistent=1"], root=REPO)


def test_unknown_scale():
    with pytest.raises(ConfigError, match="data.scale"):
        load_config(["data.scale=huge"], root=REPO)


def test_params_file_with_overrides(tmp_path):
    root = make_project(tmp_path)
    cfg = load_config([], root=root)
    (root / "params.yaml").write_text(OmegaConf.to_yaml(cfg))
    c2 = load_config(["model=chance", "data.seed=7"], params="params.yaml", root=root)
    assert c2.model.name == "chance" and c2.data.seed == 7
    with pytest.raises(ConfigError, match="unknown option"):
        load_config(["model=nope"], params="params.yaml", root=root)
    with pytest.raises(ConfigError, match="unknown config key"):
        load_config(["data.nope=1"], params="params.yaml", root=root)


def test_committed_params_yaml_is_the_composition_of_conf():
    composed = OmegaConf.to_container(load_config([], root=REPO))
    committed = OmegaConf.to_container(OmegaConf.load(REPO / "params.yaml"))
    assert committed == composed, "params.yaml is stale: run `make params` and commit it"


def test_length_names():
    assert length_tokens("32k") == 32768 and length_tokens("256K") == 262144
    with pytest.raises(ConfigError):
        length_tokens("big")
