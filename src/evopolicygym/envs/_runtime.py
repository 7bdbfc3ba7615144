"""What building an environment needs of its envspec, without the envspec's pydantic model.

The judge validates envspec files into :class:`~evopolicygym.envs.EnvSpec` models; lane hosts
and workers only build worlds from a spec the judge already validated, and importing pydantic
and defining the models took a third of a lane host's start (0.24 s of 0.65 s on a slow
machine, on the path to a run's first submit). They get a :class:`RuntimeSpec` instead, and so
do the adapters in the judge (``EnvSpec.make_world`` and ``describe`` convert): one type for
both.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._contract import SpaceSchemas, World

__all__ = [
    "ADAPTERS",
    "SELF_DESCRIBING_ADAPTERS",
    "MissingExtraError",
    "RuntimeSpec",
    "adapter_module",
]

# adapter name -> module implementing ``make_world(spec)`` and ``describe(spec)``
ADAPTERS = {
    "toy": "evopolicygym.envs.toy",
    "gymnasium": "evopolicygym.envs.gymnasium_adapter",
    "web": "evopolicygym.envs.web",
    "jax": "evopolicygym.envs.jax_functional",
    "mario": "evopolicygym.envs.mario",
    "miniworld": "evopolicygym.envs.miniworld_headless",
    "multi_objective": "evopolicygym.envs.multi_objective",
}

# Adapters whose worlds have ``describe()`` (see ``World``): a run takes its schemas from the
# world its first worker built. A web page's screenshot shape is known only once a page has
# been rendered, so the judge describes a web environment itself, while the lanes boot (waiting
# for a worker's browser first, then starting its own, would put both on the run's start).
SELF_DESCRIBING_ADAPTERS = frozenset(ADAPTERS) - {"web"}


class MissingExtraError(RuntimeError):
    """An environment needs an optional dependency that is not installed."""

    def __init__(self, env_id: str, extra: str, cause: BaseException):
        # --inexact keeps the packages of the extras already installed.
        hint = f"uv sync --inexact --extra {extra}" if extra else "uv sync --inexact"
        super().__init__(
            f"environment {env_id!r} needs the '{extra or 'base'}' dependencies, which are not "
            f"installed ({type(cause).__name__}: {cause}). Install them with: {hint}"
        )
        self.env_id = env_id
        self.extra = extra


def adapter_module(spec: Any):
    """The module of ``spec.adapter`` (an :class:`EnvSpec` or a :class:`RuntimeSpec`)."""
    return importlib.import_module(ADAPTERS[spec.adapter])


class RuntimeSpec:
    """A validated envspec as plain attributes: ``RuntimeSpec(spec.model_dump())`` has every
    field of the :class:`~evopolicygym.envs.EnvSpec` it came from, with nested sections as
    dicts. Nothing is checked: only what the judge validated may be passed."""

    def __init__(self, data: dict[str, Any]):
        self.__dict__.update(data)

    def replace(self, **changes: Any) -> RuntimeSpec:
        """A copy with ``changes`` applied."""
        return RuntimeSpec({**self.__dict__, **changes})

    def runtime_modules(self) -> list[str]:
        """Modules a worker imports to build this environment (lane hosts import them ahead,
        so that a worker costs a fork). Never raises: a missing extra shows when building."""
        try:
            module = adapter_module(self)
            extra = getattr(module, "runtime_modules", lambda spec: [])(self)
        except Exception:
            extra = []
        return [ADAPTERS[self.adapter], *self.imports, *extra]

    def make_world(self) -> World:
        """Instantiate the environment. Raises :class:`MissingExtraError` naming the extra to
        install when an optional dependency is absent."""
        return adapter_module(self).make_world(self)

    def describe(self) -> SpaceSchemas:
        """The observation and action schemas (builds one world, then closes it)."""
        return adapter_module(self).describe(self)
