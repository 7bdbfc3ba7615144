"""When an environment family can run here: its extra is installed (and, for mario, the
interpreter is new enough; for visual, OpenGL is there). Family tests are skipped, with the
reason, elsewhere; .ci/families runs each family's tests in its own virtual environment."""

from __future__ import annotations

import importlib.util
import sys

import pytest

# family (= extra) -> (a module its extra installs, the curated environment)
FAMILY_MODULES = {
    "jax": "jax",
    "mario": "gym_super_mario_bros",
    "visual": "miniworld",
    "multi": "mo_gymnasium",
    "heavy": "dm_control",
}
CREATE = "UV_PROJECT_ENVIRONMENT=.venv-{0} uv sync --extra {0} --extra dev (docs/envs/{0}.md)"


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def family_unavailable(family: str) -> str | None:
    """Why ``family`` cannot run in this environment, or None when it can."""
    if family == "mario" and sys.version_info < (3, 13):
        return "the mario family needs Python 3.13 (.venv-mario, docs/envs/mario.md)"
    if not _installed(FAMILY_MODULES[family]):
        return f"the {family} extra is not installed: {CREATE.format(family)}"
    if family == "visual":
        from evopolicygym.envs.miniworld_headless import missing_libraries

        missing = missing_libraries()
        if missing:
            return f"no OpenGL libraries ({', '.join(missing)}): see docs/envs/visual.md"
    return None


def needs_family(family: str):
    """Skip the test, with the reason, unless ``family`` can run here."""
    reason = family_unavailable(family)
    return pytest.mark.skipif(reason is not None, reason=f"{family} family unavailable: {reason}")
