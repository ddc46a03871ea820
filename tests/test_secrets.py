"""Nothing that looks like a key reaches params.yaml, dvc.lock, the experiment refs or MLflow, whichever
way it was given; a refused override leaves params.yaml as it was."""

from __future__ import annotations

import shutil

import pytest

from memlens.core.config import load_config
from memlens.core.errors import ConfigError
from memlens.core.secrets import find_secrets, not_a_variable_name
from tests.conftest import REPO

KEY = "sk-proj-AbCdEf0123456789xyzXYZ"


@pytest.mark.parametrize(
    "override",
    [
        f"+model.api_key={KEY}",
        f"model.api_key_env={KEY}",
        "model.api_key_env=3f9a1c2b7d4e5f60718293a4b5c6d7e8",  # a hex key given as the variable's name
        "model.api_key_env='not a name'",
        f"model.base_url=https://user:{KEY}@gateway.example/v1",
        f"model.system_prefix='Bearer {KEY}'",
        f"+model.extra_body={{api_key: {KEY}}}",
        "+model.extra_body={hf_token: hf_AbCdEfGhIjKlMnOpQrStUv}",
        f"judge.api_key_env={KEY}",
    ],
)
def test_keys_are_refused_and_never_echoed(override):
    with pytest.raises(ConfigError) as exc:
        load_config(["model=openai_compatible", override], root=REPO)
    assert KEY not in str(exc.value) and "api_key_env" in str(exc.value)


def test_a_command_line_option_and_the_value_of_a_secret_variable(monkeypatch):
    assert find_secrets({"model": {"extra_args": ["--api-key", "abc123"]}})
    assert not find_secrets({"model": {"extra_args": ["--api-key", "${oc.env:VLLM_KEY}"]}})
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plainbutsecret-value")
    assert find_secrets({"model": {"notes": "uses plainbutsecret-value"}})


def test_names_of_variables_and_ordinary_values_are_accepted():
    for name in ("OPENAI_API_KEY", "MEMLENS_JUDGE_API_KEY", "hf_token_env_x", "GEMINI_API_KEY"):
        assert not_a_variable_name(name) is None, name
    cfg = load_config(["model=openai_compatible", "model.api_key_env=OPENAI_API_KEY"], root=REPO)
    assert cfg.model.api_key_env == "OPENAI_API_KEY"
    ordinary = {"data": {"tokens": {"tokenizer": "minilm"}}, "model": {"token_param": "max_tokens", "seed": 3}}
    assert find_secrets(ordinary) == []


def test_dvc_composition_fails_before_params_yaml_is_written(tmp_path):
    """`dvc exp run -S ...` composes conf/ with DVC's own function (its Hydra plugin discovery loads
    hydra_plugins/memlens_secrets from the repository root): a refused override raises there, so
    params.yaml keeps its bytes (and nothing reaches dvc.lock or an experiment ref)."""
    from dvc.utils.hydra import compose_and_dump

    repo = tmp_path / "repo"
    shutil.copytree(REPO / "conf", repo / "conf")
    shutil.copytree(REPO / "hydra_plugins", repo / "hydra_plugins")
    params = repo / "params.yaml"
    params.write_bytes((REPO / "params.yaml").read_bytes())
    before = params.read_bytes()
    for override in (f"+model.api_key={KEY}", f"model.api_key_env={KEY}"):
        with pytest.raises(Exception, match="api_key"):
            compose_and_dump(params, str(repo / "conf"), None, "config", str(repo), [override])
        assert params.read_bytes() == before
    compose_and_dump(params, str(repo / "conf"), None, "config", str(repo), ["model=chance"])
    text = params.read_text()
    assert "name: chance" in text and "secrets_checked: true" in text


def test_mlflow_params_never_hold_a_key():
    from memlens.eval.tracking import flatten_params

    flat = flatten_params({"model": {"notes": KEY, "api_key_env": "OPENAI_API_KEY", "max_new_tokens": 5}})
    assert KEY not in "".join(flat.values()) and flat["model.api_key_env"] == "OPENAI_API_KEY"
