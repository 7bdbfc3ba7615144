"""The judge of one run, independent of HTTP: its public views (``/info``, ``/task``), the
submit pipeline and the finalizer, serialized by one lock so that concurrent requests never
overdraw the budget. Hidden seeds live only in this object and in the run's private state; the
judge never imports policy code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from evopolicygym.protocol import (
    Closed,
    EnvMeta,
    InfoResponse,
    InstanceSpecError,
    ResourceLimits,
    RunState,
    TooManyInstances,
    Verdict,
    parse_env_instances,
)

from ._settings import EpisodeRunner, EventLog, JudgePaths, JudgeSettings
from .finalize import Finalizer, Progress, Selection
from .ledger import Ledger
from .submit import SubmitPipeline
from .task import task_text

# Requests naming more ids than this (and than max per submit) are never expanded.
EXPAND_AT_MOST = 4096


class JudgeError(Exception):
    """A request the judge refuses without judging it (no index, no cost)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class Judge:
    """One run's judge. ``pool`` runs the episodes (it is closed by :meth:`shutdown`)."""

    def __init__(
        self,
        settings: JudgeSettings,
        paths: JudgePaths,
        ledger: Ledger,
        events: EventLog,
        pool: EpisodeRunner,
    ):
        self.settings = settings
        self.paths = paths
        self.ledger = ledger
        self.events = events
        self.pool = pool
        self.submits = SubmitPipeline(settings, paths, ledger, events, pool, self.policy_meta)
        self.finalizer = Finalizer(settings, paths, ledger, events, pool, self.policy_meta)
        self._lock = threading.Lock()
        self._submits_stopped: str | None = None  # why, once stop_submits() was called
        self.phase = (
            "closed" if ledger.closed else ("open" if ledger.remaining > 0 else "finalizing")
        )

    # -- public views -----------------------------------------------------------------------------

    def env_meta(self) -> EnvMeta:
        s = self.settings
        return EnvMeta(
            env=s.spec.id,
            env_version=s.spec.version,
            n_env_instances=len(s.splits.train),
            max_episode_steps=s.spec.max_episode_steps,
            obs_space=s.schemas.obs_space,
            action_space=s.schemas.action_space,
            obs_storage=s.spec.obs_storage,
            reward_components={"return": s.spec.reward},
            artifacts={"observations": True, "video": False},
        )

    def info(self) -> InfoResponse:
        s, lim = self.settings, self.settings.limits
        return InfoResponse(
            state=RunState(
                remaining_budget=self.ledger.remaining,
                n_submits=self.ledger.next_index,
                is_finalized=self.phase != "open",
                phase=self.phase,
            ),
            env_meta=self.env_meta(),
            episode_budget=s.budget,
            min_episodes_per_submit=s.minimum,
            max_episodes_per_submit=s.maximum,
            resource_limits=ResourceLimits(**lim.model_dump()),
            isolation=s.isolation,
        )

    def task(self) -> str:
        s = self.settings
        return task_text(
            s.spec, self.env_meta(), s.minimum, s.maximum, compress_images=s.compress_images
        )

    def policy_meta(
        self, submit_index: int, n_episodes: int, remaining_after: int
    ) -> dict[str, Any]:
        """The ``env_meta`` argument of ``Policy`` (hidden evaluation: the checkpoint's submit
        index and cost, remaining 0, so the pool is not revealed)."""
        meta = self.env_meta()
        return {
            "env": meta.env,
            "submit_index": submit_index,
            "n_episodes_this_submit": n_episodes,
            "remaining_budget_after": remaining_after,
            "max_episode_steps": meta.max_episode_steps,
            "obs_space": meta.obs_space,
            "action_space": meta.action_space,
            "obs_storage": meta.obs_storage,
            "reward_components": meta.reward_components,
        }

    # -- submits and finalization -----------------------------------------------------------------

    def submit(
        self, env_instances: object, *, client_waiting: Callable[[], bool] = lambda: True
    ) -> tuple[int, dict[str, Any]]:
        """Judge one submit. Returns (HTTP status, body): 200 for a charged submit, 400 for a
        reject (with summary). Raises :class:`JudgeError` for requests judged not at all.

        ``client_waiting()`` is asked once the submit holds the lock: False (the client went
        away while queued) refuses it uncharged. A request naming more ids than both
        ``maximum`` and ``EXPAND_AT_MOST`` is rejected by its count, never expanded."""
        with self._lock:
            if self._submits_stopped is not None:
                raise JudgeError(409, "run_closed", self._submits_stopped)
            if not client_waiting():
                self.events("submit.abandoned", reason="client disconnected while queued")
                raise JudgeError(
                    499, "client_gone", "the client disconnected before its submit started"
                )
            if self.phase != "open":
                raise JudgeError(
                    409,
                    "run_closed",
                    f"the run is {self.phase}: the budget is spent and no more submits are accepted",
                )
            limit = max(self.settings.maximum, EXPAND_AT_MOST)
            try:
                answer = self.submits.judge(parse_env_instances(env_instances, limit=limit))
            except TooManyInstances as exc:
                answer = self.submits.judge([], requested=exc.count)
            except InstanceSpecError as exc:
                raise JudgeError(400, Verdict.BUDGET_INVALID, str(exc)) from exc
            if self.ledger.remaining == 0:
                self.phase = "finalizing"
                self.pool.prepare_hidden()
            return answer

    def stop_submits(self, reason: str) -> None:
        """Refuse every later submit (409 ``run_closed``, ``reason`` as its message), and return
        once the submit running now, if any, has committed. From then on the ledger changes only
        through :meth:`finalize` and :meth:`close`. The wait is at most one submit, which its
        episode limits bound."""
        self._submits_stopped = reason
        with self._lock:  # a submit holding the lock finishes; any later one sees the reason
            pass

    def finalize(self, progress: Progress = lambda _line: None) -> Selection:
        """See :meth:`Finalizer.finalize`; resumes from journaled results."""
        with self._lock:
            self.phase = "finalizing"
            return self.finalizer.finalize(progress)

    def close(self, outcome: dict[str, Any]) -> None:
        """Journal the outcome; no submit is accepted afterwards."""
        with self._lock:
            if self.ledger.closed is None:
                self.ledger.append(Closed(outcome=outcome))
            self.phase = "closed"

    def shutdown(self) -> None:
        """Stop the episode runner (call once the judge is no longer used)."""
        self.pool.close()
