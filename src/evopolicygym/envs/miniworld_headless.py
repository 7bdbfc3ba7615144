"""The MiniWorld family: 3-D first-person tasks rendered headless with OpenGL (adapter
``miniworld``).

MiniWorld draws every observation with OpenGL through pyglet. On a machine without a display
the adapter switches pyglet to headless EGL before MiniWorld is imported
(``pyglet.options["headless"]``), which renders off-screen through ``libEGL``; with Debian's
Mesa (``libegl-mesa0``, ``libgl1-mesa-dri``) that is the llvmpipe software renderer, so no GPU
is needed. Missing OpenGL libraries raise :class:`MissingOpenGLError` naming the Debian
packages (:data:`DEBIAN_PACKAGES`).

The adapter imports ``miniworld`` itself, after that switch: envspecs of this family list no
``imports``. A policy worker host preloads an envspec's imports before it forks workers, and
importing MiniWorld there would choose pyglet's X11 display before the switch (and open a GL
context, whose renderer threads do not survive a fork).

Needs the ``visual`` extra (``miniworld``, which pins ``pyglet < 2``); it cannot share an
environment with the ``mario`` extra (nes-py pins ``pyglet <= 1.5.21``).
"""

from __future__ import annotations

import ctypes.util
import importlib

import gymnasium

from ._runtime import MissingExtraError, RuntimeSpec
from ._wrapped import adapter_functions
from .gymnasium_adapter import make_env as make_gymnasium_env

__all__ = [
    "DEBIAN_PACKAGES",
    "MissingOpenGLError",
    "describe",
    "make_env",
    "make_world",
    "missing_libraries",
]

# libEGL (the GLVND loader), libGL, Mesa's EGL and DRI drivers (llvmpipe), and GLU for pyglet.
DEBIAN_PACKAGES = ("libegl1", "libgl1", "libegl-mesa0", "libgl1-mesa-dri", "libglu1-mesa")
LIBRARIES = ("EGL", "GL")


class MissingOpenGLError(RuntimeError):
    """The OpenGL libraries headless rendering needs are not installed."""


def missing_libraries(names=LIBRARIES) -> list[str]:
    """The shared libraries among ``names`` (``EGL``, ``GL``) that the loader cannot find."""
    return [name for name in names if ctypes.util.find_library(name) is None]


def _headless(spec: RuntimeSpec) -> None:
    missing = missing_libraries()
    if missing:
        raise MissingOpenGLError(
            f"environment {spec.id!r} renders with OpenGL and the libraries "
            f"{', '.join('lib' + name for name in missing)} were not found. On Debian/Ubuntu: "
            f"apt-get install {' '.join(DEBIAN_PACKAGES)} (see docs/envs/visual.md)"
        )
    try:
        import pyglet
    except ImportError as exc:
        raise MissingExtraError(spec.id, spec.extra or "visual", exc) from exc
    pyglet.options["headless"] = True


def make_env(spec: RuntimeSpec) -> gymnasium.Env:
    """The MiniWorld environment, rendering through headless EGL."""
    _headless(spec)
    try:
        importlib.import_module("miniworld")  # registers the MiniWorld ids
    except ImportError as exc:
        raise MissingExtraError(spec.id, spec.extra or "visual", exc) from exc
    return make_gymnasium_env(spec)


make_world, describe = adapter_functions(make_env)
