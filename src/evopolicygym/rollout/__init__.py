"""Episode execution: policy worker processes and the pool that drives them."""

from ._results import EpisodeError, EpisodeResult, InitFailure
from .pool import EpisodeTask, WorkerJob, WorkerPool

__all__ = ["EpisodeError", "EpisodeResult", "EpisodeTask", "InitFailure", "WorkerJob", "WorkerPool"]
