"""The Mario family: Super Mario Bros levels on the nes-py emulator (adapter ``mario``).

gym-super-mario-bros 9.x and nes-py 9.x are Gymnasium-native and work with numpy 2, but publish
only for Python >= 3.13, so this family has its own environment:
``UV_PROJECT_ENVIRONMENT=.venv-mario uv sync --python 3.13 --extra mario --extra dev``. On an
older interpreter building a world raises :class:`MarioPythonError` with that command.

What the adapter adds to the registered environment (:class:`MarioControls`):

- **Actions**: the 7 button combinations of gym-super-mario-bros' ``SIMPLE_MOVEMENT`` set
  (:data:`ACTIONS`), through nes-py's ``JoypadSpace``; their names are the action labels.
- **Frame skip and sticky actions**, as ALE v5 does for Atari: every step holds the action for
  :data:`FRAME_SKIP` frames, and at each frame, with probability
  :data:`STICKY_ACTION_PROBABILITY`, the previous frame's buttons stay pressed instead. The draws
  come from the environment's own ``np_random``, seeded with the case seed at reset, so an
  episode depends only on its seed and the actions, and different seeds differ although the
  game itself is deterministic. The step's reward is the sum over its frames; it ends at the
  first frame that ends the episode.
- **Frames are copied**: nes-py returns a view of the emulator's screen buffer, which the next
  frame overwrites; a recorded episode must keep every frame.

The observation is the 240 x 256 RGB screen; envspecs of this family set ``compress_images``
(a long episode is hundreds of megabytes raw).
"""

from __future__ import annotations

import sys
from typing import Any

import gymnasium
import numpy as np

from ._runtime import MissingExtraError, RuntimeSpec
from ._wrapped import adapter_functions
from .gymnasium_adapter import make_env as make_gymnasium_env

__all__ = [
    "ACTIONS",
    "FRAME_SKIP",
    "MINIMUM_PYTHON",
    "STICKY_ACTION_PROBABILITY",
    "MarioControls",
    "MarioPythonError",
    "describe",
    "make_env",
    "make_world",
]

# gym-super-mario-bros' SIMPLE_MOVEMENT (gym_super_mario_bros.actions), in its order.
ACTIONS: tuple[tuple[str, ...], ...] = (
    ("NOOP",),
    ("right",),
    ("right", "A"),
    ("right", "B"),
    ("right", "A", "B"),
    ("A",),
    ("left",),
)
FRAME_SKIP = 4
STICKY_ACTION_PROBABILITY = 0.25
MINIMUM_PYTHON = (3, 13)
CREATE_COMMAND = (
    "UV_PROJECT_ENVIRONMENT=.venv-mario uv sync --python 3.13 --extra mario --extra dev"
)


class MarioPythonError(RuntimeError):
    """The interpreter is older than the Mario packages support."""


class MarioControls(gymnasium.Wrapper):
    """:data:`ACTIONS` as ``Discrete(7)``, each held for :data:`FRAME_SKIP` frames with sticky
    actions; returns copies of the frames. See the module docstring."""

    def __init__(self, env: gymnasium.Env):
        from nes_py.wrappers import JoypadSpace

        joypad = JoypadSpace(env, [list(buttons) for buttons in ACTIONS])
        super().__init__(joypad)
        self._meanings = joypad.get_action_meanings()
        self._pressed = 0

    def get_action_meanings(self) -> list[str]:
        return list(self._meanings)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._pressed = 0
        return np.array(obs, copy=True), info

    def step(self, action: int):
        total = 0.0
        for _ in range(FRAME_SKIP):
            if self.np_random.random() >= STICKY_ACTION_PROBABILITY:
                self._pressed = int(action)
            obs, reward, terminated, truncated, info = self.env.step(self._pressed)
            total += float(reward)
            if terminated or truncated:
                break
        return np.array(obs, copy=True), total, terminated, truncated, info


def make_env(spec: RuntimeSpec) -> gymnasium.Env:
    """The registered level wrapped in :class:`MarioControls`."""
    if sys.version_info < MINIMUM_PYTHON:
        raise MarioPythonError(
            f"environment {spec.id!r} needs Python >= 3.13: gym-super-mario-bros 9 and nes-py 9 "
            f"publish only for it, and this is Python {sys.version_info.major}."
            f"{sys.version_info.minor}. Create the family's environment with: {CREATE_COMMAND} "
            "(see docs/envs/mario.md)"
        )
    env = make_gymnasium_env(spec)
    try:
        return MarioControls(env)
    except ImportError as exc:
        env.close()
        raise MissingExtraError(spec.id, spec.extra or "mario", exc) from exc


make_world, describe = adapter_functions(make_env)
