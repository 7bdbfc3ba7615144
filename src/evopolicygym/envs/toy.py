"""The built-in ``toy`` environment: one step, no dependencies, known optimum.

The case seed picks a start state ``s = seed mod 8``; the policy picks an action ``a`` in
{0, 1, 2}; the reward is ``s + a`` and the episode ends. The best policy always plays 2 and
earns ``s + 2``; a uniform random policy earns ``s + 1`` on average.
"""

from __future__ import annotations

import random
from typing import Any

from ._contract import SpaceSchemas, Turn

N_STATES = 8
N_ACTIONS = 3
OBS_SCHEMA = {"type": "Discrete", "n": N_STATES}
ACTION_SCHEMA = {"type": "Discrete", "n": N_ACTIONS}


class ToyWorld:
    """:class:`~evopolicygym.envs.World` for the toy task."""

    def __init__(self) -> None:
        self._state = 0
        self._done = True
        self._rng = random.Random(0)

    def reset(self, seed: int) -> int:
        self._state = seed % N_STATES
        self._done = False
        self._rng = random.Random(seed + 1)
        return self._state

    def step(self, action: Any) -> Turn:
        info: dict[str, Any] = {}
        if self._done:
            return Turn(self._state, 0.0, True, False, {"already_done": True})
        try:
            chosen = int(action)
        except (TypeError, ValueError, OverflowError):
            chosen = 0
        if isinstance(action, bool) or chosen != action or not 0 <= chosen < N_ACTIONS:
            chosen = min(max(chosen, 0), N_ACTIONS - 1)
            info["action_invalid"] = True
        self._done = True
        return Turn(self._state, float(self._state + chosen), True, False, info)

    def sample(self) -> int:
        return self._rng.randrange(N_ACTIONS)

    def describe(self) -> SpaceSchemas:
        return SpaceSchemas(dict(OBS_SCHEMA), dict(ACTION_SCHEMA))

    def observe(self, obs: Any) -> int:
        return int(obs)

    def close(self) -> None:
        pass


def make_world(spec) -> ToyWorld:
    return ToyWorld()


def describe(spec) -> SpaceSchemas:
    return ToyWorld().describe()
