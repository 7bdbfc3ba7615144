"""Run records for report tests, built from the real ``RunRecord`` model (the run.json format)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evopolicygym.protocol import (
    AgentRecord,
    BudgetRecord,
    Outcome,
    RunError,
    RunRecord,
    SubmitRecord,
    Timing,
)


def make_record(
    env: str,
    model: str,
    *,
    status: str = "completed",
    final_score: float | None = 1.0,
    submits: list[tuple[str, int, float | None]] = (("ok", 2, 1.0),),
    budget: int = 4,
) -> RunRecord:
    """A run record; ``submits`` are (status, cost, mean_return) in submit order."""
    history = []
    spent = 0
    for index, (verdict, cost, mean) in enumerate(submits):
        history.append(
            SubmitRecord(
                index=index,
                status=verdict,
                cost=cost,
                n_episodes=cost,
                first_global_episode=spent if cost else None,
                mean_return=mean,
            )
        )
        spent += cost
    ok = [s.index for s in history if s.status == "ok"]
    outcome = Outcome(
        status=status,
        final_score=final_score if status != "error" else None,
        best_submit_index=ok[-1] if ok and status == "completed" else None,
        val_scores={str(i): 1.0 for i in ok} if status == "completed" else None,
        error=RunError(type="AgentError", message="agent exited with code 1")
        if status == "error"
        else None,
    )
    return RunRecord(
        model=model,
        env=env,
        exp_id="exp",
        experiment_dimensions={"episode_budget": budget},
        timing=Timing(
            start_time="2026-12-02T10:00:00.000Z",
            end_time="2026-12-02T10:00:05.000Z",
            wall_time_seconds=5.0,
        ),
        outcome=outcome,
        budget=BudgetRecord(limit=budget, used=spent, n_submits=len(history)),
        submits=history,
        agent=AgentRecord(kind="builtin:random", name=model, reason="done", turns=3),
    )


def write_record(path: Path, record: RunRecord) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.model_dump_json(indent=2), encoding="utf-8")
    return path


@pytest.fixture
def smoke_like_suite(tmp_path: Path) -> Path:
    """A suite file (toy + cartpole x random + hillclimb) rooted in ``tmp_path``."""
    path = tmp_path / "mini-suite.toml"
    path.write_text(
        f"""
[suite]
root = "{tmp_path / "runs"}"
name = "mini"

[[run]]
env = "toy"
budget = 4

[[run]]
env = "gym/cartpole"
budget = 4

[[agent]]
kind = "builtin:random"
name = "random"

[[agent]]
kind = "builtin:hillclimb"
name = "hillclimb"
""",
        encoding="utf-8",
    )
    return path
