"""One real judge run per environment family, in the family's own environment (.ci/families runs
this file in each of .venv-jax, -mario, -visual, -multi and -heavy; elsewhere the families that
are not installed are skipped): `evopolicygym run --agent builtin:random` spends a budget of 2
(Mario: 1, its episodes are long) on the curated environment, the judge validates and scores the checkpoint on hidden cases, and the
feedback holds what the family promises (inline or compressed observations, vector rewards)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from family_support import needs_family

BUDGETS = {"mario": 1}
RUNS = [
    pytest.param("jax", "jax/cartpole", marks=needs_family("jax")),
    pytest.param("mario", "mario/smb-1-1", marks=needs_family("mario")),
    pytest.param("visual", "miniworld/oneroom", marks=needs_family("visual")),
    pytest.param("multi", "mo/deep-sea-treasure", marks=needs_family("multi")),
    pytest.param("heavy", "dmc/cartpole-swingup", marks=needs_family("heavy")),
]


def _episodes(root):
    episodes = sorted((root / "workspace" / "feedback" / "submit_000" / "episodes").iterdir())
    assert episodes, "the submit wrote no episodes"
    for episode in episodes:
        lines = (episode / "trajectory.jsonl").read_text().splitlines()
        yield episode, [json.loads(line) for line in lines]


@pytest.mark.slow
@pytest.mark.parametrize(("family", "env_id"), RUNS)
def test_a_random_agent_run_completes_with_the_familys_feedback(tmp_path, family, env_id):
    root = tmp_path / "run"
    command = [sys.executable, "-m", "evopolicygym.cli", "run", "--env", env_id]
    budget = str(BUDGETS.get(family, 2))
    command += ["--agent", "builtin:random", "--budget", budget, "--valid-size", "1"]
    command += ["--final-size", "1", "--jobs", "1", "--root", str(root)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((root / "run.json").read_text())
    outcome = record["outcome"]
    assert outcome["status"] == "completed" and outcome["heldout_errors"] == 0, outcome
    assert len(outcome["heldout_returns"]) == 1
    summary = json.loads(
        (root / "workspace" / "feedback" / "submit_000" / "summary.json").read_text()
    )
    assert summary["status"] == "ok" and summary["errors"] == [], summary
    for (episode, rows), length, total in zip(
        _episodes(root), summary["episode_lengths"], summary["returns"], strict=True
    ):
        assert len(rows) == length > 0
        assert sum(row["reward"] for row in rows) == pytest.approx(total)
        stored = sorted(path.name for path in episode.glob("observations.*"))
        # Inline observations move to a file too once an episode's exceed 4 KiB.
        assert (rows[0]["obs"] is None) == bool(stored)
        if family == "heavy" and stored:
            assert stored == ["observations.npz"]
            with np.load(episode / "observations.npz") as archive:
                assert archive["position"].shape == (length, 3)
                assert archive["velocity"].shape == (length, 2)
        elif family in ("jax", "multi", "heavy"):
            pass
        elif family == "visual":
            assert stored == ["observations.npy"] and rows[0]["obs"] is None
            frames = np.load(episode / "observations.npy")
            assert frames.shape == (length, 60, 80, 3) and frames.dtype == np.uint8
        else:  # mario: frames always compressed (envspec compress_images)
            assert stored == ["observations.npz"] and rows[0]["obs"] is None
            with np.load(episode / "observations.npz") as archive:
                frames = archive["obs"]
            assert frames.shape == (length, 240, 256, 3) and frames.dtype == np.uint8
            assert (episode / "observations.npz").stat().st_size * 20 < frames.nbytes
            assert len({frame.tobytes() for frame in frames}) > 1, "frames must be copies"
        if family == "multi":
            for row in rows:
                vector, weights = row["info"]["vector_reward"], row["info"]["reward_weights"]
                assert weights == [1.0, 1.0]
                assert row["reward"] == pytest.approx(float(np.dot(vector, weights)), abs=1e-5)
        if family == "jax" and not stored:
            assert all(isinstance(value, float) for value in rows[0]["obs"])
