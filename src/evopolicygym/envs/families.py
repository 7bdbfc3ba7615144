"""Environment families: which package provides them, which pyproject extra installs it, and
how to recognise a Gymnasium registration as one of them.

Used by bulk specs (family + extra of any installed id), ``discover-envs`` (grouping the
registry) and ``check-envs``.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import gymnasium

__all__ = [
    "FAMILIES",
    "NON_ENVIRONMENT_IDS",
    "PLUGINS",
    "Family",
    "Plugin",
    "family_of",
    "register_plugins",
]


class Family(NamedTuple):
    key: str
    title: str
    extra: str
    blurb: str


FAMILIES: dict[str, Family] = {
    family.key: family
    for family in (
        Family(
            "builtin", "Built-in", "", "Dependency-free environments shipped with EvoPolicyGym."
        ),
        Family(
            "classic_control",
            "Classic Control",
            "",
            "Low-dimensional physics control problems (pendulums, carts, mountain cars).",
        ),
        Family("toy_text", "Toy Text", "", "Small grid and card games with discrete states."),
        Family("jax", "JAX functional", "jax", "Gymnasium's functional (phys2d/tabular) ports."),
        Family("box2d", "Box2D", "core", "2-D rigid-body physics: walking, landing, racing."),
        Family("mujoco", "MuJoCo", "core", "3-D rigid-body robots: locomotion and manipulation."),
        Family(
            "minigrid", "MiniGrid", "core", "Partially observed grid worlds with keys and doors."
        ),
        Family("highway", "HighwayEnv", "core", "Autonomous driving scenes: highways, parking."),
        Family("robotics", "Gymnasium-Robotics", "core", "Goal-conditioned arms, hands and mazes."),
        Family("atari", "Atari (ALE)", "atari", "Atari 2600 games from pixels or RAM."),
        Family("miniworld", "MiniWorld", "visual", "3-D first-person navigation from pixels."),
        Family("multi_objective", "MO-Gymnasium", "multi", "Tasks with vector-valued rewards."),
        Family("web", "BrowserGym MiniWoB++", "web", "Web page tasks in a real browser."),
        Family("mario", "Super Mario Bros", "mario", "NES Super Mario Bros levels."),
        Family(
            "dm_control", "DM Control (Shimmy)", "heavy", "DeepMind Control Suite through Shimmy."
        ),
        Family("other", "Other", "", "Registered by an unrecognised package."),
    )
}


class Plugin(NamedTuple):
    module: str
    distribution: str
    family: str


# Packages that register extra Gymnasium ids when imported.
PLUGINS: tuple[Plugin, ...] = (
    Plugin("minigrid", "minigrid", "minigrid"),
    Plugin("highway_env", "highway-env", "highway"),
    Plugin("gymnasium_robotics", "gymnasium-robotics", "robotics"),
    Plugin("ale_py", "ale-py", "atari"),
    Plugin("miniworld", "miniworld", "miniworld"),
    Plugin("mo_gymnasium", "mo-gymnasium", "multi_objective"),
    Plugin("browsergym.miniwob", "browsergym-miniwob", "web"),
    Plugin("gym_super_mario_bros", "gym-super-mario-bros", "mario"),
    Plugin("shimmy", "shimmy", "dm_control"),
)

# Registry entries that are adapters needing an ``env_id`` argument, not environments.
NON_ENVIRONMENT_IDS = frozenset(
    {"GymV21Environment-v0", "GymV26Environment-v0", "dm_control/compatibility-env-v0"}
)

_ENTRY_POINT_FAMILIES = (
    ("gymnasium.envs.classic_control", "classic_control"),
    ("gymnasium.envs.toy_text", "toy_text"),
    ("gymnasium.envs.box2d", "box2d"),
    ("gymnasium.envs.mujoco", "mujoco"),
    ("gymnasium.envs.phys2d", "jax"),
    ("gymnasium.envs.tabular", "jax"),
    ("minigrid", "minigrid"),
    ("highway_env", "highway"),
    ("gymnasium_robotics", "robotics"),
    ("ale_py", "atari"),
    ("miniworld", "miniworld"),
    ("mo_gymnasium", "multi_objective"),
    ("browsergym", "web"),
    ("gym_super_mario_bros", "mario"),
)
# Families whose ids are registered with a callable entry point, known by their namespace.
_NAMESPACE_FAMILIES = (("ALE/", "atari"), ("browsergym/", "web"), ("dm_control/", "dm_control"))


def register_plugins() -> dict[str, str | None]:
    """Import every known plugin package so its ids register. Returns module -> None when it
    imported, else the error text (a missing optional package is not an error here)."""
    outcome: dict[str, str | None] = {}
    for plugin in PLUGINS:
        try:
            if plugin.module == "miniworld":
                # Before MiniWorld imports pyglet's window module: render off-screen (EGL).
                importlib.import_module("pyglet").options["headless"] = True
            module = importlib.import_module(plugin.module)
            if plugin.module == "ale_py":
                gymnasium.register_envs(module)
            outcome[plugin.module] = None
        except Exception as exc:  # any import failure is reported, never raised
            outcome[plugin.module] = f"{type(exc).__name__}: {exc}"
    return outcome


def family_of(upstream_id: str) -> str:
    """The family key of a registered Gymnasium id, from its entry point (``other`` if unknown)."""
    spec = gymnasium.spec(upstream_id)
    entry = spec.entry_point if isinstance(spec.entry_point, str) else ""
    for namespace, family in _NAMESPACE_FAMILIES:
        if upstream_id.startswith(namespace):
            return family
    for prefix, family in _ENTRY_POINT_FAMILIES:
        if entry.startswith(prefix):
            return family
    return "other"
