"""The environment contract: what a policy worker needs from an environment.

An environment is described by an :class:`EnvSpec` (read from ``envspecs/<family>/<name>.toml``)
and instantiated as a :class:`World` inside a policy worker process. The judge process builds
worlds only to run checks, and to describe the spaces of a run whose first worker's world
cannot describe itself; it never runs policy code.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable


class Turn(NamedTuple):
    """Result of one :meth:`World.step`. ``obs`` is raw (possibly numpy); ``info`` is JSON-safe."""

    obs: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@runtime_checkable
class World(Protocol):
    """One live environment instance. A worker reuses it for many episodes.

    Determinism contract: after ``reset(seed)``, the same sequence of actions yields the same
    observations, rewards and flags, whatever episodes ran on this instance before.

    A world MAY have a method ``advance(action, coerced) -> (obs, reward, ended)``: what
    :meth:`step` does, for hidden evaluation, which records nothing: no info is made, and
    ``ended`` is ``terminated or truncated``; ``coerced`` says that ``action`` comes from
    ``coerce_rows`` (a member of the action space as it is). It MAY have a method
    ``observe_stack(observations) -> numpy array | None``: the observations as one array whose
    rows' ``tolist()`` are what :meth:`observe` gives, or None when they are not such arrays
    (hidden evaluation then sends a round's observations as one block of bytes). It MAY have
    an attribute ``coerce_rows``: None, or a function taking a float64 array whose rows are
    actions in list form and returning, per row, the action as ``step`` would coerce it
    (hidden evaluation receives a round's actions as one block of bytes when they are lists of
    floats). It MAY have a method ``sibling() -> World``: another world of the same spec,
    which may share with this one what neither ever writes (a compiled simulator model);
    hidden evaluation builds its further lock-step slots so, and each world keeps the
    determinism contract. It MAY have a method ``describe() -> SpaceSchemas``: the schemas of
    its spaces, equal to what its adapter's ``describe(spec)`` gives: a run then takes them
    from the world its first worker built instead of building one in the judge.
    """

    def reset(self, seed: int) -> Any:
        """Start an episode. ``seed`` is the case seed reduced mod 2**32. Returns the raw
        observation. The action space is seeded with ``seed + 1`` and the observation space
        with ``seed + 2`` so that :meth:`sample` is reproducible."""
        ...

    def step(self, action: Any) -> Turn:
        """Coerce ``action`` to the action space (setting ``info["action_invalid"] = True``
        when it had to change it) and advance one step. Raises only on environment faults."""
        ...

    def sample(self) -> Any:
        """A JSON-safe random action from the seeded action space (fallback after act errors)."""
        ...

    def observe(self, obs: Any) -> Any:
        """The JSON-safe form of a raw observation, as given to ``Policy.act``."""
        ...

    def close(self) -> None:
        """Release simulator resources."""
        ...


class WorldFactory(Protocol):
    """Builds a :class:`World` for a spec; one adapter per ``EnvSpec.adapter`` value."""

    def __call__(self, spec: Any) -> World: ...


class SpaceSchemas(NamedTuple):
    """Compact JSON schemas of the observation and action spaces (reference §2.4)."""

    obs_space: dict[str, Any]
    action_space: dict[str, Any]
