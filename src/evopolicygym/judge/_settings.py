"""What a judge is built from: its settings, its paths, and the episode runner it drives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from evopolicygym.cases import CaseSplits
from evopolicygym.envs import EnvSpec, SpaceSchemas
from evopolicygym.protocol import LimitsSection
from evopolicygym.rollout import EpisodeResult, EpisodeTask, InitFailure, WorkerJob

EventLog = Callable[..., None]


@dataclass(frozen=True)
class JudgePaths:
    system: Path
    feedback: Path
    checkpoints: Path
    private: Path


@dataclass
class JudgeSettings:
    """What the judge is configured with (see ``RunConfig`` for the user-facing fields)."""

    spec: EnvSpec
    schemas: SpaceSchemas
    splits: CaseSplits
    budget: int
    minimum: int
    maximum: int
    limits: LimitsSection
    jobs: int
    compress_images: bool = False
    isolation: str = "process"


class EpisodeRunner(Protocol):
    """Runs checkpoints' episodes (``rollout.WorkerPool``; tests may pass an in-process
    fake): :meth:`run` for a submit's (``sealed`` marks hidden evaluation), :meth:`evaluate`
    for the hidden evaluation of several checkpoints at once."""

    def run(
        self,
        job: WorkerJob,
        tasks: list[EpisodeTask],
        *,
        record: bool,
        obs_external: bool = False,
        compress_images: bool = False,
        max_steps: int,
        sealed: bool = False,
        on_episode: Callable[[EpisodeResult], None] | None = None,
    ) -> list[EpisodeResult] | InitFailure: ...

    def evaluate(
        self,
        checkpoints: list[tuple[WorkerJob, list[EpisodeTask]]],
        *,
        max_steps: int,
        on_episode: Callable[[int, EpisodeResult], None] | None = None,
        on_outcome: Callable[[int, list[EpisodeResult] | InitFailure], None] | None = None,
    ) -> list[list[EpisodeResult] | InitFailure]:
        """The outcome of each checkpoint, in order; ``on_outcome(number, outcome)`` is called
        from the calling thread as each is done, ``on_episode(number, result)`` (from any
        thread) as episodes end."""
        ...

    def prewarm(self) -> None: ...

    def prepare_hidden(self) -> None:
        """Get ready for hidden evaluation (the budget is spent); returns at once."""
        ...

    def close(self) -> None: ...
