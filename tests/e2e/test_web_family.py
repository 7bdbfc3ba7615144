"""A real judge submit on a web environment: policy workers build BrowserGym MiniWoB++ in
Chromium, a simple policy reads the accessibility tree and clicks the button the goal names, and
the feedback holds one trajectory row per step with the observations in observations.npz."""

import json
import subprocess
import sys

import numpy as np
import pytest

from support import write_policy
from web_support import CLICK_BUTTON_SOLVER, needs_web


@needs_web
@pytest.mark.slow
@pytest.mark.judge(env="browsergym/miniwob.click-button", budget=2, jobs=1)
def test_a_submit_runs_a_web_env_in_chromium(live_judge):
    assert live_judge.judge.settings.spec.obs_storage == "external"
    write_policy(live_judge.paths.system, CLICK_BUTTON_SOLVER)
    response = live_judge.submit([0, 1])
    summary = response.body["summary"]
    assert response.status == 200 and summary["status"] == "ok", summary
    assert summary["errors"] == [] and summary["returns"] == [1.0, 1.0]
    assert summary["episode_lengths"] == [1, 1]
    for local in range(2):
        episode = live_judge.paths.feedback / "submit_000" / "episodes" / f"ep_{local:03d}"
        rows = [
            json.loads(line) for line in (episode / "trajectory.jsonl").read_text().splitlines()
        ]
        assert len(rows) == 1
        (row,) = rows
        assert row["obs"] is None and row["reward"] == 1.0 and row["terminated"] is True
        assert row["action"].startswith('click("')
        assert row["info"]["task_info"]["RAW_REWARD_GLOBAL"] == 1
        with np.load(episode / "observations.npz", allow_pickle=False) as stored:
            assert stored["screenshot"].shape == (1, 214, 332, 3)
            assert stored["screenshot"].dtype == np.uint8
            assert str(stored["goal"][0]).startswith("Click on the")
            assert "button" in str(stored["axtree"][0])


@needs_web
@pytest.mark.slow
def test_hillclimb_stops_at_once_where_its_policy_cannot_act(tmp_path):
    # BrowserGym actions are text; the hill climber's linear policy cannot produce them. The
    # agent says so and stops on its first turn instead of failing every turn of the budget.
    root = tmp_path / "run"
    env_id = "browsergym/miniwob.click-button"
    command = [sys.executable, "-m", "evopolicygym.cli", "run", "--env", env_id]
    command += ["--agent", "builtin:hillclimb", "--budget", "4", "--jobs", "1", "--root", str(root)]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1, result.stderr[-2000:]
    record = json.loads((root / "run.json").read_text())
    assert record["agent"]["reason"] == "session_stop" and record["agent"]["turns"] == 1
    error = record["outcome"]["error"]
    assert record["outcome"]["status"] == "error" and error["type"] == "agent_stopped"
    assert "4 of 4 episodes unspent" in error["message"]
    assert "cannot produce actions of type 'Text'" in error["message"]
    assert not list((root / "workspace" / "feedback").glob("submit_*"))
