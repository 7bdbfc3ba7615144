"""Episode execution: sandboxed workers, the episode loop, and the pool that drives them."""

from ._capture import CappedWriter, PolicyTimeout, Watchdog
from ._episode import play_episode, seed_policy_randomness
from ._exits import describe_exit
from ._recorder import EXTERNALIZE_BYTES, EpisodeRecorder, externalize
from .pool import (
    EpisodeResult,
    EpisodeTask,
    InitFailure,
    WorkerJob,
    WorkerPool,
)

__all__ = [
    "EXTERNALIZE_BYTES",
    "CappedWriter",
    "EpisodeRecorder",
    "EpisodeResult",
    "EpisodeTask",
    "InitFailure",
    "PolicyTimeout",
    "Watchdog",
    "WorkerJob",
    "WorkerPool",
    "describe_exit",
    "externalize",
    "play_episode",
    "seed_policy_randomness",
]
