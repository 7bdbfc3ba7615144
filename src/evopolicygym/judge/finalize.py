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
    """Result of finalize: validation scores, the pick and its held-out evaluation."""

    val_scores: dict[int, float]
    val_errors: dict[int, int]
    best: int | None
    heldout: Evaluation | None
    tampered: list[int] = field(default_factory=list)


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
        submit), and score it on the held-out pool; a pick found tampered is replaced by the
        next best."""
        splits = self.settings.splits
        candidates = self.ledger.ok_submits()
        for number, submit in enumerate(candidates, 1):
            if submit.index in self.ledger.validation:
                continue
            step = FinalizeStep(submit.index, 0, len(splits.valid), number, len(candidates))
            self.ledger.append(
                self._evaluate(
                    "validation", submit.index, submit.cost, splits.valid, step, progress
                )
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
        heldout = self.ledger.heldout
        best = None
        for index in eligible:
            if heldout is not None and heldout.index == index and heldout.mean is not None:
                best = index
                break
            if heldout is not None and heldout.index == index and heldout.failure:
                tampered.append(index)
                continue
            cost = next(s.cost for s in candidates if s.index == index)
            step = FinalizeStep(index, 0, len(splits.heldout))
            heldout = self._evaluate("heldout", index, cost, splits.heldout, step, progress)
            self.ledger.append(heldout)
            if heldout.failure == Verdict.TAMPERED:
                tampered.append(index)
                continue
            best = index
            break
        if best is not None:
            checkpoints.mirror(self.paths.checkpoints / submit_dirname(best), self.paths.system)
        return Selection(
            val_scores,
            val_errors,
            best,
            heldout if best is not None else None,
            sorted(set(tampered)),
        )

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
        index: int,
        cost: int,
        seeds: list[int],
        start: FinalizeStep,
        progress: Progress,
    ) -> Evaluation:
        job = self._verified_job(index, cost)
        if job is None:
            self.events("finalize.tampered", submit_index=index, pool=kind)
            return Evaluation(
                type=kind,
                index=index,
                mean=None,
                errors=-1,
                failure=Verdict.TAMPERED,
                message=f"checkpoints/{submit_dirname(index)} no longer matches the content "
                "journaled when it was submitted: it is not evaluated",
            )
        tasks = [EpisodeTask(i, seed, i) for i, seed in enumerate(seeds)]
        done = [0]
        lock = threading.Lock()
        step = max(1, len(tasks) // 4)

        def tick(_result: EpisodeResult) -> None:
            with lock:
                done[0] += 1
                if done[0] % step == 0 or done[0] == len(tasks):
                    progress(start._replace(done=done[0]))

        outcome = self.pool.run(
            job,
            tasks,
            record=False,
            sealed=True,
            max_steps=self.settings.spec.max_episode_steps,
            on_episode=tick,
        )
        return _evaluation(kind, index, outcome)


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
