"""The Mario family: gym-super-mario-bros 9 behind the joypad, frame skip and sticky actions
(runs in .venv-mario on Python 3.13; the tests that need the game are skipped elsewhere)."""

import itertools
import sys

import numpy as np
import pytest

from evopolicygym.envs import get_env
from evopolicygym.envs.mario import ACTIONS, FRAME_SKIP, MarioPythonError
from family_support import needs_family

needs_mario = needs_family("mario")
LEVEL = "mario/smb-1-1"


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="this interpreter can run Mario")
def test_an_older_python_is_refused_with_the_command_that_creates_the_environment():
    with pytest.raises(MarioPythonError) as error:
        get_env(LEVEL).make_world()
    message = str(error.value)
    assert "needs Python >= 3.13" in message
    assert "UV_PROJECT_ENVIRONMENT=.venv-mario uv sync --python 3.13 --extra mario" in message


@needs_mario
def test_actions_are_the_simple_movement_set_with_their_names():
    schemas = get_env(LEVEL).describe()
    assert schemas.obs_space["type"] == "Image" and schemas.obs_space["shape"] == [240, 256, 3]
    assert schemas.action_space["n"] == len(ACTIONS) == 7
    assert schemas.action_space["labels"][:3] == ["NOOP", "right", "right A"]


def _play(world, seed, actions):
    frames, rewards, infos = [world.reset(seed)], [], []
    for action in actions:
        turn = world.step(action)
        frames.append(turn.obs)
        rewards.append(turn.reward)
        infos.append(turn.info)
        if turn.terminated or turn.truncated:
            break
    return frames, rewards, infos


@needs_mario
def test_frames_are_copies_and_an_episode_depends_only_on_its_seed_and_actions():
    world = get_env(LEVEL).make_world()
    try:
        # Many changes of buttons, so that sticky actions matter (they delay changes).
        actions = [int(a) for a in np.random.default_rng(0).choice([0, 1, 3, 4, 6], 60)]
        frames, rewards, _infos = _play(world, 5, actions)
        # Every step returns its own array (nes-py hands out a view that the next frame
        # overwrites), and Mario moves: the frames differ.
        assert len({id(frame) for frame in frames}) == len(frames)
        assert not np.array_equal(frames[1], frames[-1])
        again = _play(world, 5, actions)
        assert all(np.array_equal(a, b) for a, b in zip(frames, again[0], strict=True))
        assert rewards == again[1]
        # Sticky actions draw from the seed: another seed moves Mario differently.
        other = _play(world, 6, actions)
        assert not all(np.array_equal(a, b) for a, b in zip(frames, other[0], strict=False))
    finally:
        world.close()


@needs_mario
def test_a_step_is_four_frames_of_the_game():
    world = get_env(LEVEL).make_world()
    try:
        world.reset(0)
        ticks = []
        for _ in range(40):  # the timer ticks every 20 frames: every 5 steps of 4 frames
            ticks.append(world.step(0).info["time"])
        changes = [i for i in range(1, len(ticks)) if ticks[i] != ticks[i - 1]]
        assert all(b - a == 20 // FRAME_SKIP for a, b in itertools.pairwise(changes))
        assert len(changes) >= 6
    finally:
        world.close()
