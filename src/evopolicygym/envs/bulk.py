"""Bulk mode: any installed Gymnasium registration as ``gymnasium/<id>``, with a generated spec.

Step cap, in order of preference: the registry's ``max_episode_steps``; else the limit the
environment enforces itself when it can be read (MiniGrid ``max_steps``, HighwayEnv
``duration x policy_frequency``); else :data:`DEFAULT_STEP_CAP`. The chosen source is written
into ``step_cap_source``, so no cap is ever silent.

This is the runtime half of bulk mode (one id to one spec, for runs and checks); the catalogue
of every installed id is :func:`evopolicygym.readiness.discover.bulk_ids`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import gymnasium

from ._ids import BULK_PREFIX, UnknownEnvironmentError
from ._runtime import adapter_module
from ._spec import EnvSpec
from ._wrapped import wrapped_schemas
from .families import FAMILIES, NON_ENVIRONMENT_IDS, PLUGINS, family_of, register_plugins
from .spaces import schema_has_image
from .tasktext import template_task
from .web import (
    BROWSER_HIDDEN_SLOTS,
    BROWSER_TASKS,
    MINIWOB_COMMIT,
    MINIWOB_MAX_STEPS,
    MINIWOB_STEPS_SOURCE,
    miniwob_url,
)

__all__ = [
    "DEFAULT_STEP_CAP",
    "MINIWOB_COMMIT",
    "bulk_spec",
    "env_step_limit",
    "miniwob_url",
    "registered_plugins",
]

DEFAULT_STEP_CAP = 1000
# Families whose environments need their own adapter (wrappers, rendering set-up); the others
# run through the plain Gymnasium adapter.
FAMILY_ADAPTERS = {
    "web": "web",
    "jax": "jax",
    "mario": "mario",
    "miniworld": "miniworld",
    "multi_objective": "multi_objective",
}


@cache
def registered_plugins() -> dict[str, str | None]:
    """:func:`~evopolicygym.envs.families.register_plugins`, once per process."""
    return register_plugins()


def env_step_limit(env: gymnasium.Env) -> tuple[int, str] | None:
    """The step limit an environment enforces itself, with how it was read; None if unknown."""
    inner = env.unwrapped
    for attribute in ("max_steps", "max_episode_steps"):  # MiniGrid, MiniWorld
        value = getattr(inner, attribute, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, f"env.unwrapped.{attribute} = {value}"
    config = getattr(inner, "config", None)
    if isinstance(config, dict) and "duration" in config and "policy_frequency" in config:
        duration, frequency = config["duration"], config["policy_frequency"]
        steps = round(duration * frequency)
        return steps, f"duration x policy_frequency = {duration} x {frequency} = {steps}"
    return None


def _kwargs_for(upstream_id: str) -> dict[str, Any]:
    if not upstream_id.startswith("browsergym/miniwob."):
        return {}
    # MiniWoB++ pages: $MINIWOB_URL, a checkout, or the miniwob wheel's (see envs/web.py).
    return {"task_kwargs": {"base_url": miniwob_url()}}


@cache
def bulk_spec(upstream_id: str) -> EnvSpec:
    """A generated :class:`EnvSpec` for a registered Gymnasium id. Builds the environment once
    to read its spaces and, when the registry has no limit, its own step limit. Raises
    :class:`UnknownEnvironmentError` for ids that are not registered (listing plugin packages
    that failed to import) and :class:`MissingExtraError` when a dependency is missing."""
    failures = {module: error for module, error in registered_plugins().items() if error}
    if upstream_id not in gymnasium.registry or upstream_id in NON_ENVIRONMENT_IDS:
        hint = "; ".join(f"{module}: {error}" for module, error in failures.items())
        raise UnknownEnvironmentError(
            f"{upstream_id!r} is not a registered Gymnasium environment"
            + (f" (plugins that did not import: {hint})" if hint else "")
        )
    family = family_of(upstream_id)
    plugin_modules = [plugin.module for plugin in PLUGINS if plugin.family == family]
    if family == "miniworld":  # its adapter imports MiniWorld itself, after setting up EGL
        plugin_modules = []
    draft = EnvSpec(
        id=BULK_PREFIX + upstream_id,
        upstream=upstream_id,
        family=family,
        adapter=FAMILY_ADAPTERS.get(family, "gymnasium"),
        extra=FAMILIES[family].extra,
        imports=plugin_modules,
        kwargs=_kwargs_for(upstream_id),
        helper_tasks=BROWSER_TASKS if family == "web" else 0,
        hidden_slots=BROWSER_HIDDEN_SLOTS if family == "web" else None,
        max_episode_steps=DEFAULT_STEP_CAP,
        step_cap_source="draft",
        reward="sum of the Gymnasium rewards over the episode (see the upstream documentation)",
    )
    registered = gymnasium.spec(upstream_id).max_episode_steps
    if draft.adapter == "web":
        # BrowserGym: compact observations and action strings (envs/web.py); no own limit.
        obs_schema, action_schema = draft.describe()
        own = None
    else:
        # The family's own environment (wrappers included), so the schemas are what runs.
        runtime = draft.runtime()
        env = adapter_module(runtime).make_env(runtime)
        try:
            obs_schema, action_schema = wrapped_schemas(env)
            own = env_step_limit(env)
        finally:
            env.close()
    if isinstance(registered, int) and registered > 0:
        steps, source = registered, f"Gymnasium registry: max_episode_steps = {registered}"
    elif upstream_id.startswith("browsergym/miniwob."):
        steps, source = MINIWOB_MAX_STEPS, MINIWOB_STEPS_SOURCE
    elif own is not None:
        steps, source = own[0], f"no registry limit; the env's own limit: {own[1]}"
    else:
        steps = DEFAULT_STEP_CAP
        source = (
            f"no registry limit and no readable env limit: default cap {DEFAULT_STEP_CAP} "
            "(the env may still end episodes earlier itself)"
        )
    spec = draft.model_copy(
        update={
            "max_episode_steps": steps,
            "step_cap_source": source,
            "obs_storage": "external" if schema_has_image(obs_schema) else "inline",
        }
    )
    return spec.model_copy(update={"task": template_task(spec, obs_schema, action_schema)})
