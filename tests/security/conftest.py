"""Hostile policies against a real judge at every isolation level this machine offers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import LiveJudge, available_levels, constant_policy, serve_judge, write_policy

LEVELS = available_levels("namespaced", "basic", "process")
# Limits small enough that every attack ends in seconds.
LIMITS = {
    "init_timeout_s": 3.0,
    "act_timeout_s": 1.0,
    "rollout_wall_s": 5.0,
    "memory_bytes": 1 * 2**30,
    "max_processes": 24,
    "output_bytes": 4096,
}


@dataclass
class Episode:
    stdout: str
    stderr: str
    error: dict | None


@dataclass
class Outcome:
    summary: dict
    episodes: list[Episode]

    @property
    def status(self) -> str:
        return self.summary["status"]

    def error(self, number: int = 0) -> dict:
        error = self.episodes[number].error
        assert error is not None, f"episode {number} did not fail: {self.episodes[number]}"
        return error


class Arena:
    """A live judge at one isolation level, with helpers to submit hostile policies."""

    def __init__(self, live: LiveJudge, level: str):
        self.live = live
        self.level = level
        self.paths = live.paths

    def attack(self, source: str, episodes: int = 1) -> Outcome:
        write_policy(self.paths.system, source)
        response = self.live.submit(list(range(episodes)))
        summary = response.body["summary"]
        folder = self.paths.feedback / f"submit_{summary['submit_index']:03d}" / "episodes"
        found = []
        for directory in sorted(folder.glob("ep_*")) if folder.exists() else []:
            error_file = directory / "error.txt"
            found.append(
                Episode(
                    (directory / "stdout.txt").read_text(),
                    (directory / "stderr.txt").read_text(),
                    json.loads(error_file.read_text()) if error_file.exists() else None,
                )
            )
        return Outcome(summary, found)

    def served_normally(self) -> None:
        """The next submit of an honest policy runs and scores as it should."""
        outcome = self.attack(constant_policy(2), episodes=2)
        seeds = self.live.judge.settings.splits.train
        assert outcome.status == "ok" and outcome.summary["errors"] == []
        assert outcome.summary["returns"] == [seeds[i] % 8 + 2.0 for i in range(2)]


@pytest.fixture(params=LEVELS)
def level(request) -> str:
    return request.param


@pytest.fixture
def arena(tmp_path: Path, level: str, request) -> Iterator[Arena]:
    """A judge at ``level``; ``@pytest.mark.limits(...)`` overrides :data:`LIMITS`."""
    marker = request.node.get_closest_marker("limits")
    limits = {**LIMITS, **(marker.kwargs if marker else {})}
    with serve_judge(tmp_path, budget=40, jobs=1, limits=limits, isolation=level) as live:
        yield Arena(live, level)
