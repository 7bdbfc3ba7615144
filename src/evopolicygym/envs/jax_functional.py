"""The JAX family: Gymnasium's functional JAX ports (``phys2d/CartPole-v1``,
``phys2d/Pendulum-v0``, ``tabular/...``) on the CPU (adapter ``jax``).

These environments compute with JAX and return ``jax.Array`` observations and infos. Gymnasium's
own ``JaxToNumpy`` wrapper turns them into numpy arrays (and the policy's actions into JAX
arrays) at the boundary, so everything after it, JSON conversion, schemas, external storage,
treats them exactly like numpy environments.

JAX runs on the CPU: ``JAX_PLATFORMS`` defaults to ``cpu`` (set before JAX is imported), so a
machine with an accelerator plugin installed does not probe it in every policy worker. An
explicit ``JAX_PLATFORMS`` in the environment wins.

Needs the ``jax`` extra (``gymnasium[jax]``: jax, jaxlib, flax); without it building raises
:class:`~evopolicygym.envs.MissingExtraError` naming the extra.
"""

from __future__ import annotations

import os

import gymnasium

from ._runtime import MissingExtraError, RuntimeSpec
from ._wrapped import adapter_functions
from .gymnasium_adapter import make_env as make_gymnasium_env

__all__ = ["JAX_PLATFORM", "describe", "make_env", "make_world"]

JAX_PLATFORM = "cpu"


def make_env(spec: RuntimeSpec) -> gymnasium.Env:
    """The registered JAX environment wrapped in ``JaxToNumpy``."""
    os.environ.setdefault("JAX_PLATFORMS", JAX_PLATFORM)
    env = make_gymnasium_env(spec)
    try:
        from gymnasium.wrappers import JaxToNumpy

        return JaxToNumpy(env)
    except (ImportError, gymnasium.error.DependencyNotInstalled) as exc:
        env.close()
        raise MissingExtraError(spec.id, spec.extra or "jax", exc) from exc


make_world, describe = adapter_functions(make_env)
