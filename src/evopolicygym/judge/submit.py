"""The submit pipeline: one ``POST /submit`` from parsed ids to committed feedback.

Steps, in order (``docs/protocol/submit-lifecycle.md``): reject checks (free), journal
``submit_begin``, snapshot ``system/`` into ``checkpoints/submit_NNN``, hash it (the hash goes to
the journal; finalize checks it before scoring), static scan, episodes on a warm train worker
(the files sent are the hashed ones), feedback drafted out of the workspace as episodes
finish, the journal ``submit_commit`` that charges the budget, then one rename that makes the
feedback visible.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from evopolicygym.protocol import ErrorLine, SubmitBegin, SubmitCommit, SubmitSummary, Verdict
from evopolicygym.rollout import EpisodeResult, EpisodeTask, InitFailure, WorkerJob

from . import checkpoint as checkpoints
from ._settings import EpisodeRunner, EventLog, JudgePaths, JudgeSettings
from .feedback import FeedbackDraft, dump_summary, episode_statistics
from .ledger import Ledger, drafts_directory, record_from_summary, submit_dirname, utc_now


class SubmitPipeline:
    """Judges submits against a ledger; the caller serializes calls."""

    def __init__(
        self,
        settings: JudgeSettings,
        paths: JudgePaths,
        ledger: Ledger,
        events: EventLog,
        pool: EpisodeRunner,
        policy_meta: Callable[[int, int, int], dict[str, Any]],
    ):
        self.settings = settings
        self.paths = paths
        self.ledger = ledger
        self.events = events
        self.pool = pool
        self.policy_meta = policy_meta
        self.episode_width = max(3, len(str(settings.budget)))

    def judge(self, ids: list[int], requested: int | None = None) -> tuple[int, dict[str, Any]]:
        """Judge one submit of parsed ``ids``: ``(200, body)`` when charged, ``(400, body)``
        for a reject (which writes a summary and costs nothing). ``requested`` is the count of a
        request too long to expand (``ids`` is then empty): a ``budget_invalid`` reject."""
        started, clock = utc_now(), time.monotonic()
        index = self.ledger.next_index
        reject = self._reject_reason(ids, requested)
        self.ledger.append(SubmitBegin(index=index, n_episodes=len(ids)), durable=False)
        self.events(
            "submit.start",
            submit_index=index,
            n_episodes=len(ids),
            remaining_budget=self.ledger.remaining,
        )
        if reject is not None:
            verdict, message = reject
            summary = self._summary(
                index, ids, verdict, message, started, clock, None, self.ledger.remaining
            )
            self._commit(summary, [_error_line(verdict, message)], None)
            return 400, {"submit_id": index, "status": verdict, "summary": dump_summary(summary)}
        summary = self._run(index, ids, started, clock)
        return 200, {"submit_id": index, "status": summary.status, "summary": dump_summary(summary)}

    def _reject_reason(self, ids: list[int], requested: int | None) -> tuple[Verdict, str] | None:
        n_cases = len(self.settings.splits.train)
        count = len(ids) if requested is None else requested
        bad = next((i for i in ids if i >= n_cases), None)
        if bad is not None:
            return (
                Verdict.INVALID_ENV_INSTANCE,
                f"env instance {bad} is out of range: valid ids are 0..{n_cases - 1}",
            )
        upper = min(self.settings.maximum, self.ledger.remaining)
        if not self.settings.minimum <= count <= upper:
            return (
                Verdict.BUDGET_INVALID,
                f"{count} episodes requested; this submit may ask for "
                f"{self.settings.minimum}..{upper} (remaining budget {self.ledger.remaining}, "
                f"max per submit {self.settings.maximum})",
            )
        return None

    def _run(self, index: int, ids: list[int], started: str, clock: float) -> SubmitSummary:
        first_global = self.ledger.used
        remaining_after = self.ledger.remaining - len(ids)
        target = self.paths.checkpoints / submit_dirname(index)
        try:
            checkpoints.snapshot(self.paths.system, target)
        except checkpoints.SnapshotRefused as refused:
            # Charged like any failure after the reject checks, with no checkpoint.
            verdict, message = refused.verdict, refused.message
            summary = self._summary(
                index, ids, verdict, message, started, clock, None, remaining_after, first_global
            )
            error = _error_line(verdict, message)
            self._commit(summary, [error], self._draft(index, first_global))
            return summary
        files = checkpoints.read_files(target)
        tree_hash = checkpoints.files_hash(files)
        metrics = checkpoints.write_metrics(target)
        self.events(
            "submit.snapshot",
            submit_index=index,
            checkpoint=f"checkpoints/{target.name}",
            tree_hash=tree_hash,
            source_lines=metrics["source_lines"],
        )
        draft = self._draft(index, first_global)

        def finish(verdict, message, results=None, traceback=None) -> SubmitSummary:
            summary = self._summary(
                index, ids, verdict, message, started, clock, results, remaining_after, first_global
            )
            errors = [] if verdict is Verdict.OK else [_error_line(verdict, message, traceback)]
            self._commit(summary, errors, draft, tree_hash)
            return summary

        problem = checkpoints.scan(target)
        if problem is not None:
            return finish(problem.verdict, problem.message, traceback=problem.traceback)
        seeds = self.settings.splits.train
        tasks = [EpisodeTask(i, seeds[case], i) for i, case in enumerate(ids)]
        s = self.settings
        job = WorkerJob(
            files,
            tree_hash,
            s.schemas.obs_space,
            s.schemas.action_space,
            self.policy_meta(index, len(ids), remaining_after),
        )
        outcome = self.pool.run(
            job,
            tasks,
            record=True,
            obs_external=s.spec.obs_storage == "external",
            compress_images=s.compress_images,
            max_steps=s.spec.max_episode_steps,
            on_episode=draft.add_episode,
        )
        if isinstance(outcome, InitFailure):
            return finish(outcome.verdict, outcome.message, traceback=outcome.traceback)
        return finish(Verdict.OK, None, outcome)

    def _draft(self, index: int, first_global: int | None) -> FeedbackDraft:
        return FeedbackDraft(
            drafts_directory(self.paths.private),
            self.paths.feedback,
            index,
            first_global=first_global or 0,
            episode_width=self.episode_width,
        )

    def _commit(
        self,
        summary: SubmitSummary,
        errors: list[ErrorLine],
        draft: FeedbackDraft | None,
        tree_hash: str | None = None,
    ) -> None:
        """Journal the submit's charge, then make its feedback visible (see ledger.py)."""
        draft = draft or self._draft(summary.submit_index, summary.first_global_episode)
        draft.seal(summary, errors)
        record = record_from_summary(dump_summary(summary), tree_hash)
        self.ledger.append(SubmitCommit(index=summary.submit_index, submit=record))
        try:
            draft.publish()
        except OSError as exc:
            self.events(
                "submit.publish_failed",
                submit_index=summary.submit_index,
                error=f"{type(exc).__name__}: {exc}",
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
        self,
        index: int,
        ids: list[int],
        status: Verdict,
        message: str | None,
        started: str,
        clock: float,
        results: list[EpisodeResult] | None,
        remaining: int,
        first_global: int | None = None,
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


def _error_line(category: str, message: str | None, traceback: str | None = None) -> ErrorLine:
    return ErrorLine(
        timestamp=utc_now(), category=str(category), message=message or "", traceback=traceback
    )
