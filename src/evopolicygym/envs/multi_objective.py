"""The multi-objective family: MO-Gymnasium tasks with a vector reward (adapter
``multi_objective``).

The judge needs one number per step, so the vector reward is scalarised linearly with the
envspec's ``reward_weights`` (all ones, the plain sum, when it sets none) by MO-Gymnasium's own
``LinearReward`` wrapper. The vector and the weights stay in every step's ``info``
(``vector_reward``, ``reward_weights``), so the feedback shows each objective. A weight vector
of the wrong length fails when the environment is built.

Multi-agent environments (PettingZoo) are not part of this family: the policy interface is one
``act(obs) -> action`` per step for a single agent (see docs/envs/multi.md).
"""

from __future__ import annotations

import gymnasium
import numpy as np

from ._runtime import MissingExtraError, RuntimeSpec
from ._wrapped import adapter_functions
from .gymnasium_adapter import make_env as make_gymnasium_env

__all__ = ["describe", "make_env", "make_world", "reward_weights"]


def reward_weights(spec: RuntimeSpec, env: gymnasium.Env) -> np.ndarray:
    """The scalarisation weights for ``env``: the envspec's, or ones. Raises ``ValueError`` when
    the environment has no vector reward or the lengths differ."""
    reward_space = getattr(env.unwrapped, "reward_space", None)
    if reward_space is None:
        raise ValueError(
            f"environment {spec.id!r} ({spec.upstream}) has no reward_space: it is not a "
            "multi-objective environment; use adapter = 'gymnasium'"
        )
    if spec.reward_weights is None:
        return np.ones(reward_space.shape)
    weights = np.asarray(spec.reward_weights, dtype=np.float64)
    if weights.shape != reward_space.shape:
        raise ValueError(
            f"envspec {spec.id!r}: reward_weights has shape {list(weights.shape)} but the reward "
            f"vector has shape {list(reward_space.shape)}"
        )
    return weights


def make_env(spec: RuntimeSpec) -> gymnasium.Env:
    """The MO-Gymnasium environment wrapped in ``LinearReward`` with :func:`reward_weights`."""
    env = make_gymnasium_env(spec)
    try:
        from mo_gymnasium.wrappers import LinearReward
    except ImportError as exc:
        env.close()
        raise MissingExtraError(spec.id, spec.extra or "multi", exc) from exc
    try:
        return LinearReward(env, weight=reward_weights(spec, env))
    except BaseException:
        env.close()
        raise


make_world, describe = adapter_functions(make_env)
