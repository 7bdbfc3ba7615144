"""Environments, the runtime layer: the contract, the registry of envspecs, bulk specs for
``gymnasium/<id>`` ids, and the adapters. Readiness tooling (checks, anchors, calibration,
discovery) builds on this layer from :mod:`evopolicygym.readiness`.

Names are loaded on first use (PEP 562): lane hosts and workers build worlds from a
:class:`RuntimeSpec` and never import the envspec models (pydantic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evopolicygym._lazy import lazy_exports

_EXPORTS = {
    "SpaceSchemas": "_contract",
    "Turn": "_contract",
    "World": "_contract",
    "WorldFactory": "_contract",
    "BULK_PREFIX": "_ids",
    "UnknownEnvironmentError": "_ids",
    "MissingExtraError": "_runtime",
    "RuntimeSpec": "_runtime",
    "SELF_DESCRIBING_ADAPTERS": "_runtime",
    "Anchors": "_spec",
    "Calibration": "_spec",
    "EnvSpec": "_spec",
    "Level": "_spec",
    "Registry": "registry",
    "default_registry": "registry",
    "envspecs_root": "registry",
    "get_env": "registry",
}

__all__ = [
    "BULK_PREFIX",
    "SELF_DESCRIBING_ADAPTERS",
    "Anchors",
    "Calibration",
    "EnvSpec",
    "Level",
    "MissingExtraError",
    "Registry",
    "RuntimeSpec",
    "SpaceSchemas",
    "Turn",
    "UnknownEnvironmentError",
    "World",
    "WorldFactory",
    "default_registry",
    "envspecs_root",
    "get_env",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from ._contract import SpaceSchemas, Turn, World, WorldFactory
    from ._ids import BULK_PREFIX, UnknownEnvironmentError
    from ._runtime import SELF_DESCRIBING_ADAPTERS, MissingExtraError, RuntimeSpec
    from ._spec import Anchors, Calibration, EnvSpec, Level
    from .registry import Registry, default_registry, envspecs_root, get_env
