"""Helpers shared by tests (fixtures live in conftest.py)."""

from __future__ import annotations

import contextlib
import json
import os
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evopolicygym.cases import generate_splits
from evopolicygym.envs import get_env
from evopolicygym.judge import Judge, JudgeServer, JudgeSettings, Ledger
from evopolicygym.protocol import LimitsSection
from evopolicygym.rollout import WorkerPool
from evopolicygym.run_session import EventLog, RunPaths
from evopolicygym.sandbox import IsolationUnavailable, probe


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


@contextlib.contextmanager
def serve_judge(
    tmp_path: Path,
    *,
    env: str = "toy",
    budget: int = 6,
    limits: dict | None = None,
    jobs: int = 2,
    maximum: int | None = None,
    compress_images: bool = False,
    isolation: str = "auto",
    splits: tuple[int, int, int] = (8, 16, 32),
) -> Iterator[LiveJudge]:
    """A real judge with real sandboxed workers, served on loopback until the block ends."""
    spec = get_env(env)
    paths = RunPaths(tmp_path / "run")
    paths.create()
    plan = probe(isolation)
    settings = JudgeSettings(
        spec=spec,
        schemas=spec.describe(),
        splits=generate_splits(0, *splits),
        budget=budget,
        minimum=1,
        maximum=maximum or budget,
        limits=LimitsSection(**(limits or {})),
        jobs=jobs,
        compress_images=compress_images,
        isolation=plan.level,
    )
    ledger = Ledger.open(
        paths.private / "journal.jsonl",
        budget,
        checkpoints=paths.checkpoints,
        feedback=paths.feedback,
    )
    pool = WorkerPool(
        spec.model_dump(), jobs, settings.limits, paths.logs / "workers.log", plan=plan
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


CONSTANT_POLICY = """
class Policy:
    def __init__(self, obs_space, action_space, env_meta):
        self.action = ACTION

    def reset(self, episode_index):
        pass

    def act(self, obs):
        return self.action
"""


def job_from_dir(checkpoint: Path, spec, env_meta: dict):
    """A :class:`WorkerJob` for the checkpoint directory ``checkpoint`` of ``spec``'s env."""
    from evopolicygym.judge.checkpoint import files_hash, read_files
    from evopolicygym.rollout import WorkerJob

    schemas = spec.describe()
    files = read_files(checkpoint)
    return WorkerJob(files, files_hash(files), schemas.obs_space, schemas.action_space, env_meta)


def write_policy(system: Path, source: str) -> None:
    system.mkdir(parents=True, exist_ok=True)
    (system / "policy.py").write_text(textwrap.dedent(source))


def constant_policy(action: object) -> str:
    return CONSTANT_POLICY.replace("ACTION", repr(action))


def process_exists(token: str) -> bool:
    """Whether any process on this machine has ``token`` in its command line."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def available_levels(*wanted: str) -> list[str]:
    """The isolation levels among ``wanted`` that this machine offers, in that order."""
    levels = []
    for level in wanted:
        try:
            probe(level)
        except IsolationUnavailable:
            continue
        levels.append(level)
    return levels


def nest(directory: Path, depth: int) -> None:
    """``directory/d/d/.../d``, ``depth`` levels deep (``directory`` made first), through
    descriptors: the path is too long to name. Remove it with ``sandbox.remove_path``: pytest's
    recursive clean-up of old directories cannot."""
    directory.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=descriptor)
        below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = below
    os.close(descriptor)
