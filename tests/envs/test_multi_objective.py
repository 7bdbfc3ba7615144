"""The multi-objective family: MO-Gymnasium's vector rewards scalarised with the envspec's
weights, the vector kept in info (runs in .venv-multi; skipped where mo-gymnasium is missing)."""

import pytest

from evopolicygym.envs import MissingExtraError, get_env
from family_support import needs_family

needs_multi = needs_family("multi")
DST = "mo/deep-sea-treasure"


def test_a_missing_package_names_the_multi_extra():
    spec = get_env(DST).model_copy(update={"imports": ["evopolicygym_missing_mo"]})
    with pytest.raises(MissingExtraError, match="uv sync --inexact --extra multi"):
        spec.make_world()


@needs_multi
def test_the_reward_is_the_weighted_sum_and_info_keeps_the_vector():
    spec = get_env(DST).model_copy(update={"reward_weights": [2.0, 0.5]})
    world = spec.make_world()
    try:
        world.reset(0)
        first = world.step(3)  # right: open water, one step of time
        assert first.info["vector_reward"] == [0.0, -1.0]
        assert first.info["reward_weights"] == [2.0, 0.5]
        assert first.reward == pytest.approx(-0.5)
        world.reset(0)
        found = world.step(1)  # down from the start: the 0.7 treasure
        assert found.terminated and found.reward == pytest.approx(2 * 0.7 - 0.5)
    finally:
        world.close()


@needs_multi
def test_the_curated_weights_are_the_sum_and_the_optimum_is_7_1():
    world = get_env(DST).make_world()
    try:
        world.reset(0)
        total, turn = 0.0, None
        # right x5 along the surface, down x4: the 16.1 treasure after 9 steps, the best
        # trade-off at weights (1, 1) (15.1 after 8 steps ties it)
        for action in [3, 3, 3, 3, 3, 1, 1, 1, 1]:
            turn = world.step(action)
            total += turn.reward
        assert turn.terminated
        assert total == pytest.approx(16.1 - 9, abs=1e-5)
    finally:
        world.close()


@needs_multi
def test_weights_of_the_wrong_length_and_single_objective_envs_are_refused():
    spec = get_env(DST).model_copy(update={"reward_weights": [1.0, 1.0, 1.0]})
    with pytest.raises(ValueError, match=r"reward_weights has shape \[3\].*shape \[2\]"):
        spec.make_world()
    cartpole = spec.model_copy(update={"upstream": "CartPole-v1", "reward_weights": None})
    with pytest.raises(ValueError, match="no reward_space"):
        cartpole.make_world()
