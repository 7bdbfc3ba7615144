"""One real judge submit per environment family: the worker builds the environment, a constant
policy plays two train episodes (actions coerced to the action space), and the feedback holds a
trajectory row per step, with observations in .npy/.npz files where they are large."""

import json

import numpy as np
import pytest

from support import constant_policy, write_policy

FAMILY_ENVS = [
    "gym/acrobot",
    "gym/taxi",
    "gym/lunar",
    "gym/reacher5",
    "gymnasium/MiniGrid-FourRooms-v0",
    "gymnasium/roundabout-v0",
    "gymnasium/FetchPush-v4",
    "gym/pong",
]


@pytest.mark.core
@pytest.mark.slow
@pytest.mark.parametrize("env_id", FAMILY_ENVS)
def test_a_submit_runs_on_every_family(tmp_path, request, env_id):
    request.node.add_marker(pytest.mark.judge(env=env_id, budget=2, jobs=2))
    live_judge = request.getfixturevalue("live_judge")
    write_policy(live_judge.paths.system, constant_policy(0))
    response = live_judge.submit([0, 1])
    summary = response.body["summary"]
    assert response.status == 200 and summary["status"] == "ok", summary
    assert summary["errors"] == [] and len(summary["returns"]) == 2
    for local, length in enumerate(summary["episode_lengths"]):
        episode = live_judge.paths.feedback / "submit_000" / "episodes" / f"ep_{local:03d}"
        rows = [
            json.loads(line) for line in (episode / "trajectory.jsonl").read_text().splitlines()
        ]
        assert len(rows) == length > 0
        assert sum(row["reward"] for row in rows) == pytest.approx(summary["returns"][local])
        external = list(episode.glob("observations.np*"))
        assert (rows[0]["obs"] is None) == bool(external)
        if live_judge.judge.settings.spec.obs_storage == "external":
            assert external, "image observations must be stored in observations.npy/.npz"


@pytest.mark.core
@pytest.mark.slow
@pytest.mark.judge(env="gym/pong", budget=1, jobs=1, compress_images=True)
def test_compress_images_stores_pong_frames_in_a_compressed_npz(live_judge):
    assert "compressed `observations.npz` (key `obs`)" in live_judge.request("GET", "/task").body
    write_policy(live_judge.paths.system, constant_policy(0))
    summary = live_judge.submit([0]).body["summary"]
    assert summary["status"] == "ok", summary
    episode = live_judge.paths.feedback / "submit_000" / "episodes" / "ep_000"
    assert sorted(p.name for p in episode.glob("observations.*")) == ["observations.npz"]
    frames = np.load(episode / "observations.npz")["obs"]
    length = summary["episode_lengths"][0]
    assert frames.shape == (length, 210, 160, 3) and frames.dtype == np.uint8
    # Pong frames are mostly background: far smaller than the raw .npy would be.
    assert (episode / "observations.npz").stat().st_size * 20 < frames.nbytes
