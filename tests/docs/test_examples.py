"""docs/examples/: every run config is valid and is run here, through the real CLI, judge,
policy workers and agent, exactly as its header comment tells a user to run it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from evopolicygym.envs import get_env
from evopolicygym.protocol import RunConfig, RunRecord
from evopolicygym.runs import run_root

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"
CONFIGS = sorted(EXAMPLES.glob("*.toml"))


def evopolicygym(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evopolicygym.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_example(name: str, workdir: Path, *extra: str) -> tuple[RunRecord, Path]:
    """Run ``evopolicygym run --config docs/examples/<name>`` exactly as its header says, with
    relative paths, from a directory laid out like the repository (so ``runs/`` lands there)."""
    shutil.copytree(EXAMPLES, workdir / "docs" / "examples")
    proc = evopolicygym("run", "--config", f"docs/examples/{name}", *extra, cwd=workdir)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stderr[-4000:]}"
    config = RunConfig.model_validate(tomllib.loads((EXAMPLES / name).read_text()))
    root = workdir / run_root(config)
    return RunRecord.model_validate_json((root / "run.json").read_text()), root


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_example_config_is_valid_and_names_a_known_environment(path):
    config = RunConfig.model_validate(tomllib.loads(path.read_text()))
    assert get_env(config.run.env, bulk=config.run.bulk).id == config.run.env
    assert "uv run evopolicygym run --config docs/examples/" + path.name in path.read_text()


@pytest.mark.slow
def test_toy_command_agent_finds_the_best_constant_action(tmp_path):
    agent = tmp_path / "docs" / "examples" / "agent.py"  # "$PWD/docs/examples/agent.py"
    record, root = run_example("toy-command.toml", tmp_path, "--", sys.executable, str(agent))
    assert record.outcome.status == "completed"
    assert record.budget.used == record.budget.limit == 8
    # One submit per constant action (0, 1, 2), then the rest of the budget on the best.
    assert [s.status for s in record.submits] == ["ok"] * 4
    assert [s.cost for s in record.submits] == [2, 2, 2, 2]
    policies = [
        (root / "checkpoints" / f"submit_{i:03d}" / "policy.py").read_text() for i in range(4)
    ]
    assert [p.count(f"self.action = {a}") for p, a in zip(policies, [0, 1, 2, 2], strict=True)] == [
        1
    ] * 4
    # Reward is start state + action: the two checkpoints playing action 2 tie on validation,
    # and ties go to the latest submit.
    assert record.outcome.best_submit_index == 3
    assert record.outcome.val_scores["3"] == record.outcome.val_scores["2"]
    assert record.outcome.val_scores["2"] == record.outcome.val_scores["0"] + 2
    assert record.outcome.final_score == pytest.approx(record.outcome.heldout_mean_return)
    mirrored = (root / "workspace" / "system" / "policy.py").read_text()
    assert mirrored == policies[3]
    transcript = (root / "logs" / "agent.jsonl").read_text()
    assert "submit 3: action 2 x2 -> ok" in transcript


@pytest.mark.slow
def test_cartpole_hillclimb_example_completes_and_selects_by_validation(tmp_path):
    record, _ = run_example("cartpole-hillclimb.toml", tmp_path)
    assert record.outcome.status == "completed"
    assert record.budget.used == 16
    assert record.experiment_dimensions["valid_size"] == 8
    assert len(record.outcome.heldout_returns) == 16
    scores = {int(k): v for k, v in record.outcome.val_scores.items()}
    best = record.outcome.best_submit_index
    assert scores[best] == max(scores.values())
    assert best == max(i for i, v in scores.items() if v == scores[best])  # ties to the latest
    assert record.outcome.final_score == pytest.approx(record.outcome.heldout_mean_return)


def test_acrobot_example_data_command_reproduces_the_published_seeds(tmp_path):
    """The `data make` line of acrobot-codex.toml, into a temporary root."""
    root = tmp_path / "data" / "main-128" / "gym" / "acrobot"
    proc = evopolicygym(
        "data", "make", "--env", "gym/acrobot", "--root", str(root), "--seed", "0",
        "--train-size", "1024", "--valid-size", "64", "--heldout-size", "256",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first = {
        split: json.loads((root / f"{split}.json").read_text())["cases"][0]["seed"]
        for split in ("train", "valid", "heldout")
    }
    # The values docs/protocol/seeds-and-isolation.md quotes.
    assert first == {"train": 1654615998, "valid": 1106378843, "heldout": 47113601}
