"""When the web family can run here: the ``web`` extra and a Chromium (see envs/web.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from evopolicygym.envs.web import MissingBrowserError, find_chromium

WEB_MODULES = ("playwright", "browsergym.miniwob", "miniwob")


def _module_missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except ImportError:  # the parent package is missing
        return True


def web_unavailable() -> str | None:
    """Why web environments cannot run on this machine, or None when they can."""
    missing = [name for name in WEB_MODULES if _module_missing(name)]
    if missing:
        return (
            f"the web extra is not installed (no {', '.join(missing)}): "
            "uv sync --inexact --extra web"
        )
    try:
        if find_chromium() is not None:
            return None
    except MissingBrowserError as exc:
        return str(exc)
    # A browser that `playwright install chromium` downloaded also works.
    downloads = Path(
        os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache/ms-playwright"
    )
    if any(downloads.glob("chromium-*/chrome-linux/chrome")):
        return None
    return "no Chromium browser: apt-get install chromium (or set EVOPOLICYGYM_CHROMIUM)"


REASON = web_unavailable()


def needs_web(test):
    """Mark ``test`` as running a real BrowserGym environment in Chromium (marker ``web``);
    it is skipped, with the reason, only when the web extra or a Chromium is missing."""
    skip = pytest.mark.skipif(REASON is not None, reason=f"web family unavailable: {REASON}")
    return pytest.mark.web(skip(test))


# Reads the accessibility tree and clicks the button the goal names (MiniWoB++ click-button).
CLICK_BUTTON_SOLVER = """
import re


class Policy:
    def __init__(self, obs_space, action_space, env_meta):
        assert action_space["type"] == "Text" and "click" in action_space["functions"]
        self.keys = sorted(obs_space["spaces"])

    def reset(self, episode_index):
        pass

    def act(self, obs):
        label = re.search(r'"(.*)"', obs["goal"]).group(1)
        found = re.search(r"\\[(\\d+)\\] button '" + re.escape(label) + "'", obs["axtree"])
        return f'click("{found.group(1)}")' if found else "noop(0)"
"""
