"""A subtype is one fact in one place each: the ability that makes it, the official vocabulary,
its judge route and its count at every scale; each is checked, so a forgotten one is an error
naming it, never a silent default (an unrouted subtype would go where the official judge sends
unknown ones)."""

from __future__ import annotations

import copy

import pytest
from omegaconf import OmegaConf

from memlens.construction.abilities import check_subtypes, registry
from memlens.core import schemas
from memlens.core.compose import load_config
from memlens.core.constants import SUBTYPES
from memlens.core.errors import ConfigError
from memlens.core.tasks import MSR_YESNO, ROUTES, TASK_KEYS, task_key
from tests.conftest import REPO


def test_every_subtype_an_ability_makes_is_official_and_routed():
    for qtype, ability in registry().items():
        assert set(ability.variants) == set(SUBTYPES[qtype]), qtype
        for sub in ability.variants:
            assert (qtype, sub) in ROUTES, f"{qtype}/{sub} has no judge route in memlens.core.tasks.ROUTES"


def test_routes_are_what_the_judge_uses():
    assert set(ROUTES.values()) | {MSR_YESNO} == set(TASK_KEYS)
    for (qtype, sub), key in ROUTES.items():
        assert task_key(qtype, sub, "3") == key
    assert task_key("multi_session_reasoning", "entity_resolution", "Yes") == MSR_YESNO


def test_a_subtype_outside_the_vocabulary_is_an_error():
    class Stray:
        question_type = "temporal_reasoning"
        variants = {"duration_comparison": ["a"], "temporal_trivia": ["b"]}

    with pytest.raises(ConfigError, match=r"temporal_reasoning subtype 'temporal_trivia' is not in the official"):
        check_subtypes([Stray()])


def _data():
    return OmegaConf.to_container(load_config([], root=REPO), resolve=True)


def test_every_scale_counts_every_subtype():
    data = _data()
    schemas.validate(data)
    missing = copy.deepcopy(data)
    del missing["data"]["scales"]["paper"]["counts"]["temporal_reasoning/order_ranking"]
    with pytest.raises(
        ConfigError, match=r"data.scales.paper.counts has no count for temporal_reasoning/order_ranking"
    ):
        schemas.validate(missing)
    unknown = copy.deepcopy(data)
    unknown["data"]["scales"]["tiny"]["counts"]["temporal_reasoning/order_rank"] = 2
    with pytest.raises(ConfigError, match=r"temporal_reasoning/order_rank is not a known <type>/<subtype>"):
        schemas.validate(unknown)
