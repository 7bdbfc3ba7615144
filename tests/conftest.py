"""Shared fixtures: a live judge on loopback (see ``support.serve_judge``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support import LiveJudge, serve_judge


@pytest.fixture
def live_judge(tmp_path: Path, request) -> Iterator[LiveJudge]:
    """A toy judge (budget 6, train 8 / valid 16 / held-out 32) unless the test is marked with
    ``@pytest.mark.judge(env=..., budget=..., limits={...}, jobs=..., compress_images=...)``."""
    marker = request.node.get_closest_marker("judge")
    with serve_judge(tmp_path, **(marker.kwargs if marker else {})) as judge:
        yield judge


def pytest_configure(config):
    config.addinivalue_line("markers", "judge(**options): settings of the live_judge fixture")
    config.addinivalue_line("markers", "limits(**limits): resource limits of a security arena")
