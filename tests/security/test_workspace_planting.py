"""What a hostile agent plants in its workspace, through a real run (agent jailed where this
machine allows): the judge never writes through it, never trips over it, and the run closes
with a history `verify` accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evopolicygym.sandbox import remove_path

PLANTER = Path(__file__).parent / "agents" / "plant_workspace_agent.py"
CLI = [sys.executable, "-m", "evopolicygym.cli"]


@pytest.fixture
def tmp_path(tmp_path):
    """pytest's own temporary directory, emptied without recursion after the test: the deep
    trees these tests plant would crash pytest's recursive clean-up of old directories."""
    yield tmp_path
    remove_path(tmp_path)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_links_and_deep_trees_planted_in_the_workspace_change_nothing_outside_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("another run's file\n")
    root = tmp_path / "run"
    done = _cli(
        "run", "--env", "toy", "--root", str(root), "--budget", "3", "--jobs", "1",
        "--agent", "command", "--", sys.executable, str(PLANTER), str(victim),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "another run's file\n"
    outcome = json.loads((root / "run.json").read_text())["outcome"]
    assert outcome["status"] == "completed", outcome
    verified = _cli("verify", str(root))
    assert verified.returncode == 0 and "FAIL" not in verified.stdout, verified.stdout
    # Every submit was charged, answered and published, the one over the deep tree too.
    feedback = root / "workspace" / "feedback"
    summaries = [
        json.loads((feedback / f"submit_{i:03d}" / "summary.json").read_text()) for i in range(3)
    ]
    assert [s["status"] for s in summaries] == ["ok", "ok", "ok"]
    assert not (feedback / "submit_002" / "d").exists()
    # The best checkpoint was mirrored over the deep .system.mirror, which is gone.
    workspace = root / "workspace"
    assert not (workspace / ".system.mirror").exists()
    assert (workspace / "system" / "policy.py").exists()
    assert not (workspace / "system" / "metrics.json").exists()
    for index in range(3):
        metrics = root / "checkpoints" / f"submit_{index:03d}" / "metrics.json"
        assert not metrics.is_symlink() and json.loads(metrics.read_text())["files"] == 1
