"""What the family adapters that wrap a Gymnasium environment share (``jax``, ``mario``,
``miniworld``, ``multi_objective``): a :class:`~evopolicygym.envs.World` around an environment
that is already built and wrapped, and its schemas with the names of its discrete actions.

Each family module builds its environment (``make_env(spec)``, raising
:class:`~evopolicygym.envs.MissingExtraError` or a family error that says what to install) and
hands that function to :func:`adapter_functions`; the world builds every environment it needs
with it (a sealed worker's sibling worlds too); stepping, seeding, action coercion and JSON
conversion are the Gymnasium adapter's, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

import gymnasium

from ._contract import SpaceSchemas
from ._runtime import RuntimeSpec
from .gymnasium_adapter import GymnasiumWorld, action_labels
from .spaces import space_schema

__all__ = ["action_names", "adapter_functions", "wrapped_schemas"]


def action_names(env: gymnasium.Env) -> list[str] | None:
    """Names of the discrete actions, or None: the environment's ``get_action_meanings()``
    (nes-py's joypad), else what the Gymnasium adapter finds (MiniGrid, HighwayEnv), else the
    members of an ``actions`` enum by value when the space uses only the first of them
    (MiniWorld's tasks use 3 of its 8 actions)."""
    count = getattr(env.action_space, "n", None)
    if count is None:
        return None
    meanings = getattr(env, "get_action_meanings", None)
    names = list(meanings()) if callable(meanings) else action_labels(env)
    if names is not None and len(names) == int(count):
        return [str(name) for name in names]
    actions = getattr(env.unwrapped, "actions", None)
    if isinstance(actions, type) and issubclass(actions, Enum):
        by_value = {member.value: member.name for member in actions}
        if all(index in by_value for index in range(int(count))):
            return [by_value[index] for index in range(int(count))]
    return None


def wrapped_schemas(env: gymnasium.Env) -> SpaceSchemas:
    """The observation and action schemas of a (wrapped) environment."""
    return SpaceSchemas(
        space_schema(env.observation_space),
        space_schema(env.action_space, labels=action_names(env)),
    )


def adapter_functions(
    make_env: Callable[[RuntimeSpec], gymnasium.Env],
) -> tuple[Callable[[RuntimeSpec], GymnasiumWorld], Callable[[RuntimeSpec], SpaceSchemas]]:
    """``make_world`` and ``describe`` of a family module whose environments ``make_env``
    builds (both raise what ``make_env`` raises)."""

    def make_world(spec: RuntimeSpec) -> GymnasiumWorld:
        return GymnasiumWorld(spec, make=make_env, schemas=wrapped_schemas)

    def describe(spec: RuntimeSpec) -> SpaceSchemas:
        env = make_env(spec)
        try:
            return wrapped_schemas(env)
        finally:
            env.close()

    return make_world, describe
