"""Family bookkeeping: which family a registered id belongs to, which adapter its bulk spec
uses, and the DM Control family through the plain Gymnasium adapter (its tests run in
.venv-heavy and are skipped elsewhere)."""

import importlib
import typing
from typing import get_args

import gymnasium
import pytest

from evopolicygym.envs import get_env
from evopolicygym.envs._runtime import ADAPTERS, SELF_DESCRIBING_ADAPTERS
from evopolicygym.envs._spec import AdapterName
from evopolicygym.envs.bulk import FAMILY_ADAPTERS, env_step_limit
from evopolicygym.envs.families import FAMILIES, NON_ENVIRONMENT_IDS, family_of
from family_support import needs_family

needs_heavy = needs_family("heavy")
SWINGUP = "dmc/cartpole-swingup"


def test_every_family_adapter_and_extra_is_declared():
    assert set(FAMILY_ADAPTERS) <= set(FAMILIES)
    assert FAMILIES["dm_control"].extra == "heavy"
    assert FAMILIES["mario"].extra == "mario" and FAMILIES["miniworld"].extra == "visual"
    assert FAMILIES["multi_objective"].extra == "multi" and FAMILIES["jax"].extra == "jax"


@pytest.mark.parametrize(
    ("upstream", "family"),
    [
        ("phys2d/CartPole-v1", "jax"),
        ("tabular/Blackjack-v0", "jax"),
        ("CartPole-v1", "classic_control"),
    ],
)
def test_family_of_gymnasium_ids(upstream, family):
    assert family_of(upstream) == family


def test_namespaced_ids_registered_with_callables_get_their_family():
    gymnasium.register("dm_control/evopolicygym-probe-v0", entry_point=lambda: None)
    try:
        assert family_of("dm_control/evopolicygym-probe-v0") == "dm_control"
    finally:
        del gymnasium.registry["dm_control/evopolicygym-probe-v0"]
    assert "dm_control/compatibility-env-v0" in NON_ENVIRONMENT_IDS


def test_an_env_that_keeps_its_own_episode_limit_is_read_for_bulk_specs():
    class Room(gymnasium.Env):
        max_episode_steps = 180

    class Grid(gymnasium.Env):
        max_steps = 7

    assert env_step_limit(Room()) == (180, "env.unwrapped.max_episode_steps = 180")
    assert env_step_limit(Grid()) == (7, "env.unwrapped.max_steps = 7")
    assert env_step_limit(gymnasium.Env()) is None


@needs_heavy
def test_dm_control_swingup_observes_a_dict_and_runs_its_time_limit():
    world = get_env(SWINGUP).make_world()
    try:
        obs = world.observe(world.reset(0))
        assert sorted(obs) == ["position", "velocity"]
        assert len(obs["position"]) == 3 and len(obs["velocity"]) == 2
        steps, turn = 0, None
        while steps < 1000:
            turn = world.step([0.0])
            steps += 1
            assert 0.0 <= turn.reward <= 1.0
            if turn.terminated or turn.truncated:
                break
        assert steps == get_env(SWINGUP).max_episode_steps and turn.truncated
    finally:
        world.close()


def test_every_adapter_name_an_envspec_accepts_has_a_module():
    assert set(get_args(AdapterName)) == set(ADAPTERS)


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_the_adapters_whose_worlds_describe_themselves_are_the_ones_named(adapter):
    # A run waits for its first worker's world to describe itself only for these adapters; for
    # the others the judge describes the environment while the lanes boot.
    module = importlib.import_module(ADAPTERS[adapter])
    world = typing.get_type_hints(module.make_world)["return"]
    assert callable(getattr(world, "describe", None)) == (adapter in SELF_DESCRIBING_ADAPTERS)
