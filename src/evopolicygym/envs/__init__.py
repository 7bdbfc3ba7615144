"""Environments: the contract, the registry of envspecs, and the adapters."""

from ._contract import SpaceSchemas, Turn, World, WorldFactory
from ._spec import Anchors, Calibration, EnvSpec, MissingExtraError
from .registry import Registry, UnknownEnvironmentError, default_registry, envspecs_root, get_env

__all__ = [
    "Anchors",
    "Calibration",
    "EnvSpec",
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
