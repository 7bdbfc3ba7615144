"""Shared fixtures: policies written to disk, and a live judge on loopback."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evopolicygym.cases import generate_splits
from evopolicygym.envs import get_env
from evopolicygym.judge import Judge, JudgeServer, JudgeSettings, Ledger
from evopolicygym.protocol import LimitsSection
from evopolicygym.rollout import WorkerPool
from evopolicygym.runs import EventLog, RunPaths


@dataclass
class Response:
    status: int
    body: dict | str


@dataclass
class LiveJudge:
    """A judge served on loopback for one test, with helpers to call it."""

    judge: Judge
    paths: RunPaths
    url: str

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        *,
        content_type: str = "application/json",
        raw: bytes | None = None,
    ) -> Response:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = {"Content-Type": content_type} if data is not None else {}
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode()
        try:
            return Response(status, json.loads(text))
        except json.JSONDecodeError:
            return Response(status, text)

    def submit(self, env_instances: object) -> Response:
        return self.request("POST", "/submit", {"env_instances": env_instances})


@pytest.fixture
def live_judge(tmp_path: Path, request) -> Iterator[LiveJudge]:
    """A toy judge (budget 6, train 8 / valid 16 / held-out 32) unless the test is marked with
    ``@pytest.mark.judge(env=..., budget=..., limits={...}, jobs=..., compress_images=...)``."""
    options = {
        "env": "toy",
        "budget": 6,
        "limits": {},
        "jobs": 2,
        "maximum": None,
        "compress_images": False,
    }
    marker = request.node.get_closest_marker("judge")
    if marker:
        options.update(marker.kwargs)
    spec = get_env(options["env"])
    paths = RunPaths(tmp_path / "run")
    paths.create()
    budget = options["budget"]
    settings = JudgeSettings(
        spec=spec,
        schemas=spec.describe(),
        splits=generate_splits(0, 8, 16, 32),
        budget=budget,
        minimum=1,
        maximum=options["maximum"] or budget,
        limits=LimitsSection(**options["limits"]),
        jobs=options["jobs"],
        compress_images=options["compress_images"],
    )
    ledger = Ledger.open(
        paths.private / "journal.jsonl",
        budget,
        checkpoints=paths.checkpoints,
        feedback=paths.feedback,
    )
    pool = WorkerPool(
        spec.model_dump(), options["jobs"], settings.limits, paths.logs / "workers.log"
    )
    judge = Judge(
        settings,
        paths.judge_paths(),
        ledger,
        EventLog(paths.logs / "harness.log", lambda line: None, "test"),
        pool,
    )
    try:
        with JudgeServer(judge) as server:
            yield LiveJudge(judge, paths, server.url)
    finally:
        judge.shutdown()


def pytest_configure(config):
    config.addinivalue_line("markers", "judge(**options): settings of the live_judge fixture")
