"""Environments, the runtime layer: the contract, the registry of envspecs, bulk specs for
``gymnasium/<id>`` ids, and the adapters. Readiness tooling (checks, anchors, calibration,
discovery) builds on this layer from :mod:`evopolicygym.readiness`."""

from ._contract import SpaceSchemas, Turn, World, WorldFactory
from ._ids import BULK_PREFIX, UnknownEnvironmentError
from ._spec import Anchors, Calibration, EnvSpec, Level, MissingExtraError
from .registry import Registry, default_registry, envspecs_root, get_env

__all__ = [
    "BULK_PREFIX",
    "Anchors",
    "Calibration",
    "EnvSpec",
    "Level",
    "MissingExtraError",
    "Registry",
    "SpaceSchemas",
    "Turn",
    "UnknownEnvironmentError",
    "World",
    "WorldFactory",
    "default_registry",
    "envspecs_root",
    "get_env",
]
