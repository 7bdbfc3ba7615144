"""The judge: budget, submits and finalization of one run, independent of HTTP.

``Judge.submit`` is the whole submit lifecycle (parse, reject checks, journal, snapshot, scan,
episodes, feedback, commit); ``Judge.finalize`` validates every ok checkpoint, picks the best and
scores it on held-out cases. Both are serialized by one lock, so concurrent requests never
overdraw the budget. Hidden seeds live only in this object and in the run's private state.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evopolicygym.cases import CaseSplits
from evopolicygym.envs import EnvSpec, SpaceSchemas
from evopolicygym.protocol import (
    EnvMeta,
    ErrorLine,
    InfoResponse,
    InstanceSpecError,
    LimitsSection,
    ResourceLimits,
    RunState,
    SubmitSummary,
    TooManyInstances,
    Verdict,
    parse_env_instances,
)
from evopolicygym.rollout import EpisodeResult, EpisodeTask, InitFailure, WorkerJob, WorkerPool

from . import checkpoint as checkpoints
from .feedback import FeedbackDraft, dump_summary, episode_statistics
from .ledger import Ledger, record_from_summary, submit_dirname, utc_now
from .task import task_text

EventLog = Callable[..., None]
# Requests naming more ids than this (and than max per submit) are never expanded.
EXPAND_AT_MOST = 4096


class JudgeError(Exception):
    """A request the judge refuses without judging it (no index, no cost)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


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


@dataclass
class Selection:
    """Result of finalize: validation scores, the pick and its held-out score."""

    val_scores: dict[int, float]
    val_errors: dict[int, int]
    best: int | None
    heldout: dict[str, Any] | None


class Judge:
    def __init__(
        self,
        settings: JudgeSettings,
        paths: JudgePaths,
        ledger: Ledger,
        events: EventLog,
        worker_log: Path | None = None,
    ):
        self.settings = settings
        self.paths = paths
        self.ledger = ledger
        self.events = events
        self.pool = WorkerPool(
            settings.spec.model_dump(), settings.jobs, settings.limits, worker_log
        )
        self._lock = threading.Lock()
        self.phase = (
            "closed" if ledger.closed else ("open" if ledger.remaining > 0 else "finalizing")
        )
        self.episode_width = max(3, len(str(settings.budget)))

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
            isolation="process",
        )

    def task(self) -> str:
        s = self.settings
        return task_text(
            s.spec, self.env_meta(), s.minimum, s.maximum, compress_images=s.compress_images
        )

    # -- submit -----------------------------------------------------------------------------------

    def submit(
        self, env_instances: object, *, client_waiting: Callable[[], bool] = lambda: True
    ) -> tuple[int, dict[str, Any]]:
        """Judge one submit. Returns (HTTP status, body): 200 for a charged submit, 400 for a
        reject (with summary). Raises :class:`JudgeError` for requests judged not at all.

        ``client_waiting()`` is asked once the submit holds the lock: False (the client went
        away while queued) refuses it uncharged. A request naming more than ``maximum`` ids is
        rejected by its count alone when that count is also over ``EXPAND_AT_MOST``: nothing is
        expanded and its summary keeps no ids."""
        with self._lock:
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
            oversized = None
            try:
                ids = parse_env_instances(env_instances, limit=self._expansion_limit())
            except TooManyInstances as exc:
                ids, oversized = [], exc.count
            except InstanceSpecError as exc:
                raise JudgeError(400, "budget_invalid", str(exc)) from exc
            started, clock = utc_now(), time.monotonic()
            index = self.ledger.next_index
            reject = self._reject_reason(ids) if oversized is None else self._oversized(oversized)
            self.ledger.append({"type": "submit_begin", "index": index, "env_instances": ids})
            self.events(
                "submit.start",
                submit_index=index,
                n_episodes=len(ids),
                remaining_budget=self.ledger.remaining,
            )
            if reject is not None:
                summary = self._summary(
                    index,
                    ids,
                    reject[0],
                    reject[1],
                    started,
                    clock,
                    None,
                    remaining=self.ledger.remaining,
                )
                self._commit(summary, [self._error_line(reject[0], reject[1])])
                return 400, {
                    "submit_id": index,
                    "status": reject[0],
                    "summary": dump_summary(summary),
                }
            summary = self._run_submit(index, ids, started, clock)
            if self.ledger.remaining == 0:
                self.phase = "finalizing"
            return 200, {
                "submit_id": index,
                "status": summary.status,
                "summary": dump_summary(summary),
            }

    def _reject_reason(self, ids: list[int]) -> tuple[str, str] | None:
        n_cases = len(self.settings.splits.train)
        bad = [i for i in ids if i >= n_cases]
        if bad:
            return (
                Verdict.INVALID_ENV_INSTANCE,
                f"env instance {bad[0]} is out of range: valid ids are 0..{n_cases - 1}",
            )
        upper = min(self.settings.maximum, self.ledger.remaining)
        if not self.settings.minimum <= len(ids) <= upper:
            return (
                Verdict.BUDGET_INVALID,
                f"{len(ids)} episodes requested; this submit may ask for {self.settings.minimum}..{upper} (remaining budget {self.ledger.remaining}, max per submit {self.settings.maximum})",
            )
        return None

    def _expansion_limit(self) -> int:
        """Most ids a request is expanded to (a longer one is a reject by its count alone)."""
        return max(self.settings.maximum, EXPAND_AT_MOST)

    def _oversized(self, count: int) -> tuple[str, str]:
        upper = min(self.settings.maximum, self.ledger.remaining)
        return (
            Verdict.BUDGET_INVALID,
            f"{count} episodes requested; this submit may ask for {self.settings.minimum}..{upper} (remaining budget {self.ledger.remaining}, max per submit {self.settings.maximum})",
        )

    def _run_submit(self, index: int, ids: list[int], started: str, clock: float) -> SubmitSummary:
        first_global = self.ledger.used
        remaining_after = self.ledger.remaining - len(ids)
        target = self.paths.checkpoints / submit_dirname(index)
        checkpoints.snapshot(self.paths.system, target)
        metrics = checkpoints.write_metrics(target)
        self.events(
            "submit.snapshot",
            submit_index=index,
            checkpoint=f"checkpoints/{target.name}",
            tree_hash=metrics["tree_hash"],
            source_lines=metrics["source_lines"],
        )
        problem = checkpoints.scan(target)
        if problem is not None:
            summary = self._summary(
                index,
                ids,
                problem.verdict,
                problem.message,
                started,
                clock,
                None,
                remaining=remaining_after,
                first_global=first_global,
            )
            self._commit(
                summary, [self._error_line(problem.verdict, problem.message, problem.traceback)]
            )
            return summary
        seeds = self.settings.splits.train
        tasks = [EpisodeTask(i, seeds[case], i) for i, case in enumerate(ids)]
        meta = self._policy_meta(index, len(ids), remaining_after)
        draft = self._draft(index, first_global)
        outcome = self.pool.run(
            self._job(target, meta),
            tasks,
            record=True,
            obs_external=self.settings.spec.obs_storage == "external",
            compress_images=self.settings.compress_images,
            max_steps=self.settings.spec.max_episode_steps,
            on_episode=draft.add_episode,
        )
        if isinstance(outcome, InitFailure):
            summary = self._summary(
                index,
                ids,
                outcome.verdict,
                outcome.message,
                started,
                clock,
                None,
                remaining=remaining_after,
                first_global=first_global,
            )
            self._commit(
                summary,
                [self._error_line(outcome.verdict, outcome.message, outcome.traceback)],
                draft,
            )
            return summary
        summary = self._summary(
            index,
            ids,
            Verdict.OK,
            None,
            started,
            clock,
            outcome,
            remaining=remaining_after,
            first_global=first_global,
        )
        self._commit(summary, [], draft)
        return summary

    def _draft(self, index: int, first_global: int | None) -> FeedbackDraft:
        return FeedbackDraft(
            self.paths.feedback,
            index,
            first_global=first_global or 0,
            episode_width=self.episode_width,
        )

    def _commit(
        self, summary: SubmitSummary, errors: list[ErrorLine], draft: FeedbackDraft | None = None
    ) -> None:
        """Make the submit's feedback visible, then journal its charge (see ledger.py)."""
        draft = draft or self._draft(summary.submit_index, summary.first_global_episode)
        draft.commit(summary, errors)
        record = record_from_summary(dump_summary(summary), self.paths.checkpoints)
        self.ledger.append(
            {"type": "submit_commit", "index": summary.submit_index, "submit": record.model_dump()}
        )
        self.events(
            "submit.finish",
            submit_index=summary.submit_index,
            status=summary.status,
            cost=record.cost,
            mean_return=summary.mean_return,
            remaining_budget=summary.remaining_budget,
            wall_time_seconds=summary.wall_time_seconds,
        )

    def _summary(
        self, index, ids, status, message, started, clock, results, *, remaining, first_global=None
    ) -> SubmitSummary:
        fields: dict[str, Any] = {}
        ran = results is not None and len(results) > 0
        if ran:
            fields = episode_statistics(results)
        return SubmitSummary(
            submit_index=index,
            env=self.settings.spec.id,
            status=str(status),
            message=message,
            n_episodes=0 if Verdict(status).is_reject else len(ids),
            first_global_episode=first_global if ran else None,
            env_instances=ids,
            remaining_budget=remaining,
            submit_started_at=started,
            submit_completed_at=utc_now(),
            wall_time_seconds=round(time.monotonic() - clock, 6),
            **fields,
        )

    def _error_line(self, category, message, traceback=None) -> ErrorLine:
        return ErrorLine(
            timestamp=utc_now(), category=str(category), message=message, traceback=traceback
        )

    def _policy_meta(
        self, submit_index: int, n_episodes: int, remaining_after: int
    ) -> dict[str, Any]:
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

    def _job(self, checkpoint: Path, meta: dict[str, Any]) -> WorkerJob:
        s = self.settings
        return WorkerJob(checkpoint, s.schemas.obs_space, s.schemas.action_space, meta)

    # -- finalize ---------------------------------------------------------------------------------

    def _evaluate(
        self, submit_index: int, cost: int, seeds: list[int], progress: Callable[[int], None]
    ) -> list[EpisodeResult] | InitFailure:
        meta = self._policy_meta(submit_index, cost, 0)
        target = self.paths.checkpoints / submit_dirname(submit_index)
        tasks = [EpisodeTask(i, seed, i) for i, seed in enumerate(seeds)]
        done = [0]
        lock = threading.Lock()

        step = max(1, len(tasks) // 4)

        def tick(_result: EpisodeResult) -> None:
            with lock:
                done[0] += 1
                if done[0] % step == 0 or done[0] == len(tasks):
                    progress(done[0])

        return self.pool.run(
            self._job(target, meta),
            tasks,
            record=False,
            sealed=True,
            max_steps=self.settings.spec.max_episode_steps,
            on_episode=tick,
        )

    def finalize(self, progress: Callable[[str], None] = lambda _line: None) -> Selection:
        """Validate every ok checkpoint not yet validated (results are journaled, so this resumes),
        pick the best (highest validation mean among checkpoints with no errored validation
        episode; ties go to the latest submit), and score it on the held-out pool."""
        with self._lock:
            self.phase = "finalizing"
            splits = self.settings.splits
            candidates = self.ledger.ok_submits()
            for number, submit in enumerate(candidates, 1):
                if submit.index in self.ledger.validation:
                    continue
                label = f"validation {number}/{len(candidates)} (submit {submit.index})"
                outcome = self._evaluate(
                    submit.index,
                    submit.cost,
                    splits.valid,
                    lambda n, label=label: progress(f"{label}: {n}/{len(splits.valid)} episodes"),
                )
                self.ledger.append({"type": "validation", "index": submit.index, **_score(outcome)})
            val_scores = {
                i: r["mean"]
                for i, r in sorted(self.ledger.validation.items())
                if r["mean"] is not None
            }
            val_errors = {i: r["errors"] for i, r in sorted(self.ledger.validation.items())}
            eligible = [i for i in val_scores if val_errors[i] == 0]
            best = None
            for index in eligible:
                if best is None or val_scores[index] >= val_scores[best]:
                    best = index
            if best is not None and (
                self.ledger.heldout is None or self.ledger.heldout["index"] != best
            ):
                cost = next(s.cost for s in candidates if s.index == best)
                outcome = self._evaluate(
                    best,
                    cost,
                    splits.heldout,
                    lambda n: progress(
                        f"held-out (submit {best}): {n}/{len(splits.heldout)} episodes"
                    ),
                )
                self.ledger.append({"type": "heldout", "index": best, **_score(outcome)})
            if best is not None:
                checkpoints.mirror(self.paths.checkpoints / submit_dirname(best), self.paths.system)
            return Selection(
                val_scores, val_errors, best, self.ledger.heldout if best is not None else None
            )

    def close(self, outcome: dict[str, Any]) -> None:
        """Journal the outcome; no submit is accepted afterwards."""
        with self._lock:
            if self.ledger.closed is None:
                self.ledger.append({"type": "closed", "outcome": outcome})
            self.phase = "closed"

    def shutdown(self) -> None:
        """Stop idle workers (call once the judge is no longer used)."""
        self.pool.close()


def _score(outcome: list[EpisodeResult] | InitFailure) -> dict[str, Any]:
    """Journal fields of one hidden evaluation."""
    if isinstance(outcome, InitFailure):
        return {
            "mean": None,
            "std": None,
            "returns": [],
            "errors": -1,
            "failure": outcome.verdict,
            "message": outcome.message,
        }
    stats = episode_statistics(outcome)
    return {
        "mean": stats["mean_return"],
        "std": stats["std_return"],
        "returns": stats["returns"],
        "errors": len(stats["errors"]),
    }
