"""Whole benchmark runs through the real CLI with the built-in agents and a fake Codex CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evopolicygym.agents.builtin import policy_linear as linear
from fake_agent_clis import install_fake_cli

pytestmark = pytest.mark.slow


def run_cli(*args: str, env: dict[str, str] | None = None) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "evopolicygym.cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def record_of(summary: dict) -> dict:
    return json.loads((Path(summary["root"]) / "run.json").read_text())


def test_hillclimb_finds_always_two_on_toy(tmp_path):
    summary = run_cli(
        "--env", "toy", "--agent", "builtin:hillclimb", "--budget", "8", "--runs", str(tmp_path)
    )
    record = record_of(summary)
    assert summary["status"] == "completed" and summary["budget_used"] == 8
    assert record["agent"]["reason"] == "done"
    best = Path(summary["root"]) / "checkpoints" / f"submit_{summary['best_submit_index']:03d}"
    weights, bias = linear.load_params(best / "params.json")
    features = linear.Features({"type": "Discrete", "n": 8})
    actions = linear.Actions({"type": "Discrete", "n": 3})
    assert [actions(weights @ features(s) + bias) for s in range(8)] == [2] * 8
    # Always 2 earns s + 2 on every held-out case: the best possible score.
    returns = record["outcome"]["heldout_returns"]
    assert all(2 <= r <= 9 for r in returns)
    assert summary["final_score"] == pytest.approx(sum(returns) / len(returns))
    assert (Path(summary["root"]) / "logs" / "agent.jsonl").exists()


def test_random_agent_run_on_toy(tmp_path):
    summary = run_cli(
        "--env", "toy", "--agent", "builtin:random", "--budget", "4", "--root", str(tmp_path / "r")
    )
    assert summary["status"] == "completed" and summary["submits"] == 1
    assert 0 <= summary["final_score"] <= 9


def test_hillclimb_beats_random_on_cartpole(tmp_path):
    summary = run_cli(
        "--env",
        "gym/cartpole",
        "--agent",
        "builtin:hillclimb",
        "--budget",
        "32",
        # Smaller hidden pools than the defaults (64/256) keep finalize short: it replays
        # every one of the 32 checkpoints on the validation pool.
        "--valid-size",
        "8",
        "--final-size",
        "32",
        "--runs",
        str(tmp_path),
    )
    assert summary["status"] == "completed" and summary["budget_used"] == 32
    # A uniform random policy averages about 22 steps on CartPole-v1.
    assert summary["final_score"] > 100, summary


def test_fake_codex_runs_a_whole_benchmark(tmp_path):
    fake = install_fake_cli("codex", tmp_path / "bin")
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    summary = run_cli(
        "--env",
        "toy",
        "--budget",
        "3",
        "--root",
        str(tmp_path / "run"),
        "--agent",
        "codex",
        "--",
        str(fake),
        env=env,
    )
    record = record_of(summary)
    assert summary["status"] == "completed" and summary["submits"] == 3
    assert record["agent"]["reason"] == "done" and record["agent"]["turns"] == 3
    assert record["agent"]["session"].startswith("codex:th_")
    turns = tmp_path / "run" / "logs" / "codex_turns"
    assert sorted(p.name for p in turns.glob("turn_*.command.json")) == [
        "turn_000.command.json",
        "turn_001.command.json",
        "turn_002.command.json",
    ]
    second = json.loads((turns / "turn_001.command.json").read_text())
    assert "resume" in second and record["agent"]["session"].removeprefix("codex:") in second
    assert "submitted constant action 2: ok" in (turns / "turn_000.txt").read_text()
    # The fake's constant "always 2" policy is the best possible on toy.
    returns = record["outcome"]["heldout_returns"]
    assert summary["final_score"] == pytest.approx(sum(returns) / len(returns))
