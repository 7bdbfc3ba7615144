"""The MiniWorld family: OneRoom rendered off-screen through EGL (runs in .venv-visual; the tests
that render are skipped where the visual extra or OpenGL is missing)."""

import ctypes.util

import numpy as np
import pytest

from evopolicygym.envs import get_env
from evopolicygym.envs.miniworld_headless import (
    DEBIAN_PACKAGES,
    MissingOpenGLError,
    missing_libraries,
)
from family_support import needs_family

needs_visual = needs_family("visual")
ROOM = "miniworld/oneroom"


def test_missing_opengl_names_the_debian_packages(monkeypatch):
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    assert missing_libraries() == ["EGL", "GL"]
    with pytest.raises(MissingOpenGLError) as error:
        get_env(ROOM).make_world()
    message = str(error.value)
    assert "libEGL, libGL" in message
    assert "apt-get install " + " ".join(DEBIAN_PACKAGES) in message


@needs_visual
def test_the_room_renders_headless_and_the_seed_places_the_box():
    world = get_env(ROOM).make_world()
    try:
        first = world.reset(3)
        assert first.shape == (60, 80, 3) and first.dtype == np.uint8
        assert first.std() > 5, "a rendered room, not a blank frame"
        assert np.array_equal(world.reset(3), first)
        assert not np.array_equal(world.reset(4), first), "another seed, another room"
        world.reset(3)
        turned = world.step(0).obs  # turn left: the view changes
        assert not np.array_equal(turned, first)
    finally:
        world.close()


@needs_visual
def test_actions_are_named():
    labels = get_env(ROOM).describe().action_space["labels"]
    assert labels == ["turn_left", "turn_right", "move_forward"]
