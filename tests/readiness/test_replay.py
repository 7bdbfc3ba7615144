"""Level L3's replay, with real workers: hidden evaluation plays what train plays."""

from evopolicygym.envs import get_env
from evopolicygym.readiness.checks import check_spec
from evopolicygym.readiness.replay import REPLAY_SEEDS, replay_differences

# Counts episodes in its instance: a train worker plays every episode on one instance, hidden
# evaluation gives each slot its own, so episodes after the first are played differently.
CARRIES_STATE = """
class Policy:
    def __init__(self, *args): self.episodes = 0
    def reset(self, i): self.episodes += 1
    def act(self, obs): return self.episodes % 3
"""


def test_the_random_policy_replays_on_the_toy_env():
    toy = get_env("toy")
    assert replay_differences(toy, toy.describe()) == []


def test_a_policy_that_carries_state_across_episodes_is_told_apart():
    toy = get_env("toy")
    differences = replay_differences(toy, toy.describe(), CARRIES_STATE)
    assert len(differences) == len(REPLAY_SEEDS) - 1
    assert differences[0].startswith("episode 1: train return ")
    assert "hidden return " in differences[0]


def test_level_l3_includes_the_replay():
    cartpole = get_env("gym/cartpole")
    result = check_spec(cartpole, up_to="L3")
    replay = next(c for c in result.checks if c.name == "hidden_replays_train")
    assert result.ok and replay.ok and replay.level == "L3"
    assert "hidden = train" in replay.message
