"""The JAX family: Gymnasium's functional JAX CartPole behind JaxToNumpy (runs in .venv-jax;
the tests that need JAX are skipped elsewhere)."""

import json

import numpy as np
import pytest

from evopolicygym.envs import MissingExtraError, get_env
from family_support import needs_family

needs_jax = needs_family("jax")


def test_a_missing_package_names_the_jax_extra():
    spec = get_env("jax/cartpole").model_copy(update={"imports": ["evopolicygym_missing_jax"]})
    with pytest.raises(MissingExtraError, match="uv sync --inexact --extra jax"):
        spec.make_world()


@needs_jax
def test_observations_and_infos_reach_the_policy_as_numpy_not_jax(monkeypatch):
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    world = get_env("jax/cartpole").make_world()
    try:
        import os

        assert os.environ["JAX_PLATFORMS"] == "cpu"
        obs = world.reset(7)
        assert type(obs) is np.ndarray and obs.dtype == np.float32 and obs.shape == (4,)
        visible = world.observe(obs)
        assert all(type(value) is float for value in visible)
        turn = world.step(1)  # a plain int action, as a policy returns it
        assert type(turn.obs) is np.ndarray and type(turn.reward) is float
        assert turn.reward == 1.0 and json.dumps(turn.info) is not None
        assert not turn.info.get("action_invalid")
        assert world.observe(world.reset(7)) == visible, "the same seed gives the same start"
        assert world.observe(world.reset(8)) != visible
    finally:
        world.close()
