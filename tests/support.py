"""Helpers shared by tests (fixtures live in conftest.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
