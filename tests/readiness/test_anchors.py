import json

from evopolicygym.envs import get_env
from evopolicygym.readiness.anchors import main, measure_random, pool_seeds


def test_pools_are_the_published_seed0_splits():
    valid, heldout = pool_seeds("valid"), pool_seeds("heldout")
    assert (len(valid), len(heldout)) == (64, 256)
    # Draws #1025 and #1089 of Random(0).randrange(0, 2**31), as in the reference splits.
    assert valid[0] == 1106378843
    assert heldout[0] == 47113601
    assert not set(valid) & set(heldout)


def test_random_anchor_is_reproducible_and_plausible():
    spec = get_env("gym/cartpole")
    first = measure_random(spec, "valid", episodes=8)
    again = measure_random(spec, "valid", episodes=8)
    assert first.returns == again.returns
    assert first.episodes == 8 and first.seeds == 64
    # A uniform random CartPole policy survives about 10-40 steps.
    assert 8 <= first.mean_return <= 60
    assert first.mean_length == first.mean_return


def test_step_cap_is_enforced():
    spec = get_env("gym/cartpole").model_copy(update={"max_episode_steps": 5})
    result = measure_random(spec, "heldout", episodes=4)
    assert max(result.returns) <= 5 and result.mean_length <= 5


def test_main_prints_one_json_line(capsys):
    assert main(["--env", "toy", "--pool", "valid", "--episodes", "16"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["env"] == "toy" and result["episodes"] == 16
    assert 1.0 <= result["mean_return"] <= 10.0
