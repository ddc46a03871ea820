"""`generator=llm` in the configuration: schema, keys from the environment only, prompt version."""

from __future__ import annotations

import pytest

from memlens.construction.generate.backends import TemplateGenerator, generator_for
from memlens.construction.generate.llm import LLMGenerator
from memlens.core.compose import load_settings
from memlens.core.config import Paths
from memlens.core.errors import ConfigError
from tests.conftest import REPO


def load(*ov):
    return load_settings(list(ov), params=None, root=REPO)


def test_llm_generator_composes_with_the_paper_roles():
    cfg = load("generator=llm")
    g = cfg.generator
    assert g.name == "llm" and g.llm.user.model == "gpt-5.1" and g.llm.assistant.model == "gemini-3-pro-preview"
    assert g.llm.user.api_key_env == "OPENAI_API_KEY" and g.filler is None
    assert load().generator.name == "template" and load().generator.llm is None


@pytest.mark.parametrize(
    "ov,match",
    [
        (["generator.name=llm"], r"generator\.name 'llm' needs the generator\.llm section"),
        (["generator=llm", "+generator.llm.user.api_key=sk-x"], "api_key is not accepted"),
        (["generator=llm", "generator.llm.concurrency=0"], "concurrency"),
        (["+generator.filler.format=sharegpt"], "exactly one of filler.path and filler.hf_dataset"),
        (["generator=llm", "generator.llm.user.temperature=hot"], "temperature"),
    ],
)
def test_bad_llm_settings_fail_clearly(ov, match):
    with pytest.raises(ConfigError, match=match):
        load(*ov)


def test_prompt_version_must_match_the_prompts(tmp_path):
    cfg = load("generator=llm", "generator.llm.prompt_version=llmgen-v0")
    with pytest.raises(ConfigError, match="prompt_version is 'llmgen-v0'"):
        LLMGenerator(cfg, Paths(tmp_path))


def test_generator_for_picks_the_backend(tmp_path):
    assert isinstance(generator_for(load(), Paths(tmp_path)), TemplateGenerator)
    with pytest.raises(Exception, match="ontology"):  # the llm generator reads the built ontology
        generator_for(load("generator=llm"), Paths(tmp_path))
