"""The isolation probe started ahead (``probe_soon``) gives what ``probe`` would."""

from __future__ import annotations

import pytest

from evopolicygym.sandbox import IsolationUnavailable, probe, probe_soon


def test_probe_started_ahead_gives_the_plan_of_that_level() -> None:
    probe_soon("process")
    plan = probe("process")
    assert plan.level == "process"
    assert plan.requested == "process"
    assert probe("process") is plan


def test_a_refusal_found_ahead_is_raised_by_the_probe_call() -> None:
    probe_soon("nonsense")
    with pytest.raises(IsolationUnavailable, match="unknown isolation level 'nonsense'"):
        probe("nonsense")
