"""The train episode loop on real Gymnasium worlds: what it records is, step by step, what a
plain Gymnasium loop sees, however the episode ends."""

import io

import gymnasium
import numpy as np
import pytest

from evopolicygym.envs import get_env
from evopolicygym.protocol import EpisodeErrorKind, LimitsSection, Task
from evopolicygym.rollout import EpisodeRecorder, Watchdog, play_episode

LIMITS = LimitsSection().model_dump()


class Lean:
    """CartPole: push toward the pole's lean; falls after a few dozen steps when ``lazy``."""

    def __init__(self, lazy: bool = False, fail_at: int | None = None):
        self.lazy, self.fail_at, self.calls = lazy, fail_at, 0

    def reset(self, episode_index):
        self.calls = 0

    def act(self, obs):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("policy bug")
        return 0 if self.lazy else int(obs[2] + 0.5 * obs[3] > 0)


@pytest.fixture(scope="module")
def watchdog():
    dog = Watchdog()
    yield dog
    Watchdog.stop()


def play(env_id, policy, watchdog, seed=5, max_steps=None):
    spec = get_env(env_id)
    world = spec.make_world()
    recorder = EpisodeRecorder(world.observe, obs_external=False, compress_images=False)
    done = play_episode(
        world,
        policy,
        Task(index=0, seed=seed, episode_index=0),
        max_steps=max_steps or spec.max_episode_steps,
        limits=LIMITS,
        watchdog=watchdog,
        recorder=recorder,
    )
    world.close()
    return done


def plain(env_id, policy, seed=5, max_steps=None):
    """The same episode in a plain loop: per step (obs, action, reward, terminated, truncated)."""
    spec = get_env(env_id)
    env = gymnasium.make(spec.upstream, **spec.kwargs)
    obs, _ = env.reset(seed=seed)
    policy.reset(0)
    rows = []
    for _ in range(max_steps or spec.max_episode_steps):
        action = policy.act(obs.tolist())
        next_obs, reward, terminated, truncated, _ = env.step(action)
        rows.append((obs.tolist(), action, float(reward), terminated, truncated))
        obs = next_obs
        if terminated or truncated:
            break
    env.close()
    return rows


def recorded(done):
    steps = done.steps
    obs = np.load(io.BytesIO(done.observations)).tolist() if done.obs_format else steps.obs
    columns = (obs, steps.actions, steps.rewards, steps.terminated, steps.truncated)
    assert len({len(column) for column in (*columns, steps.infos)}) == 1
    return [tuple(row) for row in zip(*columns, strict=True)]


def test_an_episode_that_terminates_records_what_a_plain_loop_sees(watchdog):
    done = play("gym/cartpole", Lean(lazy=True), watchdog)
    rows = recorded(done)
    assert rows == plain("gym/cartpole", Lean(lazy=True))
    assert done.error is None and done.length == len(rows) < 100
    assert [row[3] for row in rows] == [False] * (len(rows) - 1) + [True]
    assert not any(row[4] for row in rows)


def test_an_episode_truncated_by_its_time_limit_records_the_truncation(watchdog):
    # Balanced to the end: Gymnasium's TimeLimit truncates CartPole at 500 steps, and 500
    # observations go to observations.npy.
    done = play("gym/cartpole", Lean(), watchdog)
    rows = recorded(done)
    assert done.length == len(rows) == 500 and done.obs_format == "npy"
    assert rows == plain("gym/cartpole", Lean())
    assert [row[4] for row in rows] == [False] * 499 + [True]
    assert not any(row[3] for row in rows)


def test_an_episode_cut_by_the_step_cap_ends_with_no_flag(watchdog):
    done = play("gym/cartpole", Lean(), watchdog, max_steps=30)
    rows = recorded(done)
    assert done.length == len(rows) == 30
    assert rows == plain("gym/cartpole", Lean(), max_steps=30)
    assert not any(row[3] or row[4] for row in rows)


def test_a_failing_act_keeps_the_steps_before_it_and_only_those(watchdog):
    done = play("gym/cartpole", Lean(fail_at=12), watchdog)
    rows = recorded(done)
    assert done.error.category is EpisodeErrorKind.ACT_ERROR and done.error.step_index == 11
    assert done.length == len(rows) == 11
    assert rows == plain("gym/cartpole", Lean(), max_steps=11)
    assert "policy bug" in done.error.traceback
