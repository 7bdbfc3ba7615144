"""Episode execution: sandboxed workers, the episode loop, and the pool that drives them.

Names are loaded on first use (PEP 562): the judge needs the pool as early as possible to start
its lanes, and the episode loop's NumPy only in workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evopolicygym._lazy import lazy_exports

_EXPORTS = {
    "CappedWriter": "_capture",
    "PolicyTimeout": "_capture",
    "Watchdog": "_capture",
    "play_episode": "_episode",
    "seed_policy_randomness": "_episode",
    "CpuClaim": "_cpus",
    "claim_cpus": "_cpus",
    "kept_off": "_cpus",
    "describe_exit": "_exits",
    "EXTERNALIZE_BYTES": "_recorder",
    "EpisodeRecorder": "_recorder",
    "externalize": "_recorder",
    "EpisodeResult": "pool",
    "EpisodeTask": "pool",
    "InitFailure": "pool",
    "WorkerJob": "pool",
    "WorkerPool": "pool",
}

__all__ = [
    "EXTERNALIZE_BYTES",
    "CappedWriter",
    "CpuClaim",
    "EpisodeRecorder",
    "EpisodeResult",
    "EpisodeTask",
    "InitFailure",
    "PolicyTimeout",
    "Watchdog",
    "WorkerJob",
    "WorkerPool",
    "claim_cpus",
    "describe_exit",
    "externalize",
    "kept_off",
    "play_episode",
    "seed_policy_randomness",
]

if TYPE_CHECKING:
    from ._capture import CappedWriter, PolicyTimeout, Watchdog
    from ._cpus import CpuClaim, claim_cpus, kept_off
    from ._episode import play_episode, seed_policy_randomness
    from ._exits import describe_exit
    from ._recorder import EXTERNALIZE_BYTES, EpisodeRecorder, externalize
    from .pool import EpisodeResult, EpisodeTask, InitFailure, WorkerJob, WorkerPool


__getattr__ = lazy_exports(__name__, _EXPORTS)
