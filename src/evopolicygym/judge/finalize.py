"""Finalization: when the budget is spent, every ok checkpoint is validated on the hidden
validation pool, the best is picked and scored on the hidden held-out pool.

Nothing is scored that the judge did not check first: each checkpoint's files are hashed again
and compared with the hash journaled at its submit (a mismatch is the verdict ``tampered``, never
a score), and the files sent to the sealed workers are the ones just checked. Results are
journaled as they come, so an interrupted finalize resumes where it stopped.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evopolicygym.display import FinalizeStep
from evopolicygym.protocol import Evaluation, Verdict
from evopolicygym.rollout import EpisodeResult, EpisodeTask, InitFailure, WorkerJob

from . import checkpoint as checkpoints
from ._settings import EpisodeRunner, EventLog, JudgePaths, JudgeSettings
from .feedback import episode_statistics
from .ledger import Ledger, submit_dirname

# Called a few times per evaluated checkpoint (and once when it is done), from pool threads.
Progress = Callable[[FinalizeStep], None]


@dataclass
class Selection:
    """Result of finalize: validation scores, the pick and its held-out evaluation, and the
    eligible checkpoints passed over (found tampered, or failing on the held-out pool)."""

    val_scores: dict[int, float]
    val_errors: dict[int, int]
    best: int | None
    heldout: Evaluation | None
    tampered: list[int] = field(default_factory=list)
    heldout_failed: list[int] = field(default_factory=list)


class Finalizer:
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

    def finalize(self, progress: Progress = lambda _line: None) -> Selection:
        """Validate every ok checkpoint not yet validated, pick the best (highest validation
        mean among checkpoints with no errored validation episode; ties go to the latest
        submit), and score it on the held-out pool. A pick found tampered, or with an errored
        held-out episode (or that fails to load), is passed over for the next best: a policy
        that fails a hidden episode on purpose (a negative return avoided) never gains by it.
        Held-out evaluations already journaled are not played again."""
        splits = self.settings.splits
        candidates = self.ledger.ok_submits()
        count = len(candidates)
        self._evaluate(
            "validation",
            [
                (
                    submit.index,
                    submit.cost,
                    FinalizeStep(submit.index, 0, len(splits.valid), n, count),
                )
                for n, submit in enumerate(candidates, 1)
                if submit.index not in self.ledger.validation
            ],
            splits.valid,
            progress,
        )
        validation = dict(sorted(self.ledger.validation.items()))
        val_scores = {i: r.mean for i, r in validation.items() if r.mean is not None}
        val_errors = {i: r.errors for i, r in validation.items()}
        tampered = [i for i, r in validation.items() if r.failure == Verdict.TAMPERED]
        eligible = sorted(
            (i for i in val_scores if val_errors[i] == 0),
            key=lambda i: (val_scores[i], i),
            reverse=True,
        )
        best, heldout, failed = None, None, []
        for index in eligible:
            evaluation = self.ledger.heldouts.get(index)
            if evaluation is None:
                cost = next(s.cost for s in candidates if s.index == index)
                step = FinalizeStep(index, 0, len(splits.heldout))
                (evaluation,) = self._evaluate(
                    "heldout", [(index, cost, step)], splits.heldout, progress
                )
            if evaluation.failure == Verdict.TAMPERED:
                tampered.append(index)
            elif evaluation.failure is not None or evaluation.errors:
                failed.append(index)
                self.events(
                    "finalize.heldout_failed",
                    submit_index=index,
                    errors=evaluation.errors,
                    failure=evaluation.failure,
                )
            else:
                best, heldout = index, evaluation
                break
        if best is not None:
            # The copy into system/ is a convenience (the score is journaled already): whatever
            # stops it (an entry planted in the workspace) must not stop the run from closing.
            try:
                checkpoints.mirror(self.paths.checkpoints / submit_dirname(best), self.paths.system)
            except OSError as exc:
                self.events("finalize.mirror_failed", submit_index=best, error=str(exc))
        return Selection(val_scores, val_errors, best, heldout, sorted(set(tampered)), failed)

    def _verified_job(self, index: int, cost: int) -> WorkerJob | None:
        """The checkpoint's files if they still match the hash journaled at its submit."""
        journaled = next(s.tree_hash for s in self.ledger.submits if s.index == index)
        directory = self.paths.checkpoints / submit_dirname(index)
        files = checkpoints.read_files(directory) if directory.is_dir() else []
        actual = checkpoints.files_hash(files)
        if not journaled or not files or not hmac.compare_digest(actual, journaled):
            return None
        s = self.settings
        meta = self.policy_meta(index, cost, 0)
        return WorkerJob(files, actual, s.schemas.obs_space, s.schemas.action_space, meta)

    def _evaluate(
        self,
        kind: str,
        checkpoints: list[tuple[int, int, FinalizeStep]],
        seeds: list[int],
        progress: Progress,
    ) -> list[Evaluation]:
        """Evaluate ``checkpoints`` (``(submit index, cost, first progress step)``) on
        ``seeds``, all in one call of the pool, journaling each evaluation as soon as it is
        done; returns them in the given order. A checkpoint whose files changed since its
        submit is ``tampered`` and never played."""
        evaluations: dict[int, Evaluation] = {}
        played: list[tuple[int, WorkerJob, FinalizeStep]] = []
        for index, cost, step in checkpoints:
            job = self._verified_job(index, cost)
            if job is not None:
                played.append((index, job, step))
                continue
            self.events("finalize.tampered", submit_index=index, pool=kind)
            evaluations[index] = Evaluation(
                type=kind,
                index=index,
                mean=None,
                errors=-1,
                failure=Verdict.TAMPERED,
                message=f"checkpoints/{submit_dirname(index)} no longer matches the content "
                "journaled when it was submitted: it is not evaluated",
            )
            self.ledger.append(evaluations[index])
        tasks = [EpisodeTask(i, seed, i) for i, seed in enumerate(seeds)]
        done = [0] * len(played)
        lock = threading.Lock()
        every = max(1, len(tasks) // 4)

        def tick(number: int, _result: EpisodeResult) -> None:
            with lock:
                done[number] += 1
                if done[number] % every == 0 or done[number] == len(tasks):
                    progress(played[number][2]._replace(done=done[number]))

        def journal(number: int, outcome: list[EpisodeResult] | InitFailure) -> None:
            index = played[number][0]
            evaluations[index] = _evaluation(kind, index, outcome)
            self.ledger.append(evaluations[index])

        if played:
            self.pool.evaluate(
                [(job, tasks) for _, job, _ in played],
                max_steps=self.settings.spec.max_episode_steps,
                on_episode=tick,
                on_outcome=journal,
            )
        return [evaluations[index] for index, _, _ in checkpoints]


def _evaluation(kind: str, index: int, outcome: list[EpisodeResult] | InitFailure) -> Evaluation:
    if isinstance(outcome, InitFailure):
        return Evaluation(
            type=kind,
            index=index,
            mean=None,
            errors=-1,
            failure=outcome.verdict,
            message=outcome.message,
        )
    stats = episode_statistics(outcome)
    return Evaluation(
        type=kind,
        index=index,
        mean=stats["mean_return"],
        std=stats["std_return"],
        returns=stats["returns"],
        errors=len(stats["errors"]),
    )
