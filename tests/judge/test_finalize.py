"""Judge logic with an in-process episode runner: selection, tamper checks and resumption run
in milliseconds (the real worker pool has its own real-process tests in tests/rollout/)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evopolicygym.cases import generate_splits
from evopolicygym.display import FinalizeStep
from evopolicygym.envs import get_env
from evopolicygym.judge import Judge, JudgeSettings, Ledger
from evopolicygym.protocol import (
    EpisodeDone,
    EpisodeError,
    EpisodeErrorKind,
    LimitsSection,
    LoadFailed,
    Verdict,
)
from evopolicygym.rollout import WorkerJob
from evopolicygym.run_session import RunPaths
from support import constant_policy, write_policy


class ScriptedRunner:
    """An :class:`~evopolicygym.judge.EpisodeRunner` that plays no policy: every episode's
    return is ``score(policy source, seed)`` (None: the episode fails with an ``act_error``);
    a source containing ``FAIL`` fails to load."""

    def __init__(self, score: Callable[[str, int], float]):
        self.score = score
        self.calls: list[tuple[bool, int]] = []
        self.prepared = False

    def run(self, job: WorkerJob, tasks, *, record, max_steps, sealed=False, on_episode=None, **_):
        source = next(f.data.decode() for f in job.files if f.path == "policy.py")
        self.calls.append((sealed, len(tasks)))
        if "FAIL" in source:
            return LoadFailed(verdict=Verdict.INIT_ERROR, message="RuntimeError: FAIL")
        results = []
        for task in tasks:
            value = self.score(source, task.seed)
            done = (
                EpisodeDone(index=task.index, episode_return=value, length=1)
                if value is not None
                else EpisodeDone(
                    index=task.index,
                    episode_return=0.0,
                    length=0,
                    error=EpisodeError(EpisodeErrorKind.ACT_ERROR, "RuntimeError: skip"),
                )
            )
            results.append(done)
            if on_episode:
                on_episode(done)
        return results

    def evaluate(self, checkpoints, *, max_steps, on_episode=None, on_outcome=None):
        outcomes = []
        for number, (job, tasks) in enumerate(checkpoints):
            report = (lambda result, n=number: on_episode(n, result)) if on_episode else None
            outcome = self.run(
                job, tasks, record=False, max_steps=max_steps, sealed=True, on_episode=report
            )
            if on_outcome:
                on_outcome(number, outcome)
            outcomes.append(outcome)
        return outcomes

    def prewarm(self) -> None:
        pass

    def prepare_hidden(self) -> None:
        self.prepared = True

    def close(self) -> None:
        pass


def _action(source: str) -> int:
    return int(source.split("self.action = ")[1].split()[0])


@pytest.fixture
def make_judge(tmp_path: Path):
    def make(score=lambda source, seed: seed % 8 + _action(source), budget=6) -> Judge:
        spec = get_env("toy")
        paths = RunPaths(tmp_path / "run")
        paths.create()
        settings = JudgeSettings(
            spec=spec,
            schemas=spec.describe(),
            splits=generate_splits(0, 8, 16, 32),
            budget=budget,
            minimum=1,
            maximum=budget,
            limits=LimitsSection(),
            jobs=1,
        )
        ledger = Ledger.open(
            paths.private / "journal.jsonl",
            budget,
            checkpoints=paths.checkpoints,
            feedback=paths.feedback,
        )
        return Judge(
            settings, paths.judge_paths(), ledger, lambda *a, **k: None, ScriptedRunner(score)
        )

    return make


def _submit(judge: Judge, action: object, ids: list[int]) -> dict:
    write_policy(judge.paths.system, constant_policy(action))
    return judge.submit(ids)[1]


def test_charges_rejects_and_load_failures_exactly(make_judge):
    judge = make_judge()
    assert _submit(judge, 1, [0, 1])["status"] == "ok"
    assert _submit(judge, 1, [9])["status"] == "invalid_env_instance"
    assert _submit(judge, 1, [0, 1, 2, 3, 4])["status"] == "budget_invalid"
    write_policy(judge.paths.system, "FAIL\nclass Policy: pass\n")
    status, body = judge.submit([2])
    assert (status, body["status"]) == (200, "init_error")
    assert judge.ledger.used == 3 and judge.ledger.next_index == 4
    assert [s.cost for s in judge.ledger.submits] == [2, 0, 0, 1]


def test_spending_the_budget_prepares_hidden_evaluation(make_judge):
    judge = make_judge(budget=2)
    _submit(judge, 1, [0, 1])
    assert judge.phase == "finalizing" and judge.pool.prepared


def test_selection_takes_the_best_validation_mean_and_the_latest_on_ties(make_judge):
    judge = make_judge()
    for action in (0, 2, 2, 1):
        _submit(judge, action, [0])
    steps: list[FinalizeStep] = []
    selection = judge.finalize(steps.append)
    assert selection.best == 2 and selection.tampered == []
    # Progress: each validation counts its 16 episodes in quarters, then the held-out its 32.
    assert [tuple(s) for s in steps if s.done == s.total] == [
        *((k, 16, 16, k + 1, 4) for k in range(4)),
        (2, 32, 32, 0, 0),
    ]
    assert [s.done for s in steps if s.checkpoint == 1] == [4, 8, 12, 16]
    assert str(steps[-1]) == "held-out (submit 2): 32/32 episodes"
    valid = judge.settings.splits.valid
    assert selection.val_scores[1] == sum(s % 8 + 2 for s in valid) / len(valid)
    heldout = judge.settings.splits.heldout
    assert selection.heldout.mean == sum(s % 8 + 2 for s in heldout) / len(heldout)
    # Four validations of 16 episodes, then one held-out evaluation of 32, all sealed.
    assert [c for c in judge.pool.calls if c[0]] == [(True, 16)] * 4 + [(True, 32)]


def test_a_changed_checkpoint_is_tampered_and_never_scored(make_judge):
    judge = make_judge()
    _submit(judge, 0, [0])
    _submit(judge, 2, [1])
    policy = judge.paths.checkpoints / "submit_001" / "policy.py"
    policy.write_text(policy.read_text() + "# changed after the submit\n")
    selection = judge.finalize()
    assert selection.tampered == [1] and 1 not in selection.val_scores and selection.best == 0
    assert judge.ledger.validation[1].failure == Verdict.TAMPERED


def test_a_pick_changed_before_held_out_is_replaced_by_the_next_best(make_judge, monkeypatch):
    judge = make_judge()
    _submit(judge, 1, [0])
    _submit(judge, 2, [1])
    finalizer = judge.finalizer
    evaluate = finalizer._evaluate

    def tamper_before_heldout(kind, checkpoints, *args):
        if kind == "heldout" and checkpoints[0][0] == 1:
            policy = judge.paths.checkpoints / "submit_001" / "policy.py"
            policy.write_text(policy.read_text() + "# changed\n")
        return evaluate(kind, checkpoints, *args)

    monkeypatch.setattr(finalizer, "_evaluate", tamper_before_heldout)
    selection = judge.finalize()
    assert selection.tampered == [1] and selection.best == 0
    assert selection.heldout.index == 0 and selection.heldout.mean is not None


def test_finalize_resumes_without_repeating_journaled_evaluations(make_judge):
    judge = make_judge()
    _submit(judge, 0, [0])
    _submit(judge, 2, [1])
    judge.finalize()
    calls = len(judge.pool.calls)
    again = judge.finalize()
    assert len(judge.pool.calls) == calls and again.best == 1


HELD_OUT = set(generate_splits(0, 8, 16, 32).heldout)


def _skips_held_out(source: str, seed: int) -> float | None:
    """Returns below zero (as in Pendulum); the policy of action 5 validates best and then
    fails every held-out case on purpose (a failed episode's partial return, 0, beats
    playing)."""
    action = _action(source)
    if action == 5 and seed in HELD_OUT:
        return None
    return -10.0 - seed % 8 + action


def test_a_pick_failing_a_held_out_episode_is_passed_over_for_the_next_best(make_judge):
    judge = make_judge(score=_skips_held_out)
    _submit(judge, 1, [0])
    _submit(judge, 5, [1])
    selection = judge.finalize()
    assert selection.val_scores[1] > selection.val_scores[0]
    assert selection.heldout_failed == [1] and selection.best == 0
    assert selection.heldout.index == 0 and selection.heldout.errors == 0
    assert selection.heldout.mean < 0
    assert judge.ledger.heldouts[1].errors == len(HELD_OUT)
    # Resumed, it plays neither held-out evaluation again and picks the same.
    calls = len(judge.pool.calls)
    again = judge.finalize()
    assert len(judge.pool.calls) == calls
    assert (again.best, again.heldout_failed) == (0, [1])


def test_a_run_whose_only_pick_fails_held_out_episodes_has_no_score(make_judge):
    judge = make_judge(score=_skips_held_out)
    _submit(judge, 5, [0])
    selection = judge.finalize()
    assert (selection.best, selection.heldout, selection.heldout_failed) == (None, None, [0])
