"""The policy files the built-in agents write: imported and called directly."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evopolicygym.agents.builtin import policy_linear, policy_random

CARTPOLE_OBS = {
    "type": "Box",
    "shape": [4],
    "dtype": "float32",
    "low": [-4.8, "-inf", -0.418, "-inf"],
    "high": [4.8, "inf", 0.418, "inf"],
}
NESTED_ACTION = {
    "type": "Dict",
    "spaces": {
        "move": {"type": "Discrete", "n": 3, "start": -1},
        "torque": {"type": "Box", "shape": [2, 2], "dtype": "float32", "low": -2.0, "high": 2.0},
        "wheels": {"type": "MultiDiscrete", "nvec": [4, 5], "dtype": "int64"},
        "lights": {"type": "MultiBinary", "n": 3},
        "pair": {
            "type": "Tuple",
            "spaces": [
                {"type": "Box", "shape": [], "dtype": "float64", "low": "-inf", "high": "inf"},
                {"type": "Discrete", "n": 2},
            ],
        },
    },
}


def check_nested(action):
    assert set(action) == set(NESTED_ACTION["spaces"])
    assert action["move"] in (-1, 0, 1)
    torque = np.asarray(action["torque"])
    assert torque.shape == (2, 2) and np.all(np.abs(torque) <= 2.0)
    assert 0 <= action["wheels"][0] < 4 and 0 <= action["wheels"][1] < 5
    assert len(action["lights"]) == 3 and set(action["lights"]) <= {0, 1}
    scalar, flag = action["pair"]
    assert isinstance(scalar, float) and math.isfinite(scalar) and flag in (0, 1)
    json.dumps(action)  # JSON-safe


def test_random_policy_samples_every_schema_type_within_bounds():
    policy = policy_random.Policy({}, NESTED_ACTION, {"submit_index": 3})
    policy.reset(0)
    actions = [policy.act(None) for _ in range(200)]
    for action in actions:
        check_nested(action)
    assert {a["move"] for a in actions} == {-1, 0, 1}
    assert {tuple(a["lights"]) for a in actions} != {(0, 0, 0)}


def test_random_policy_is_seeded_per_episode_and_submit():
    space = {"type": "Discrete", "n": 1000}

    def episode(submit, index):
        policy = policy_random.Policy({}, space, {"submit_index": submit})
        policy.reset(index)
        return [policy.act(0) for _ in range(5)]

    assert episode(0, 1) == episode(0, 1)
    assert episode(0, 1) != episode(0, 2)
    assert episode(0, 1) != episode(1, 1)


def test_random_policy_box_summary_bounds_and_integers():
    summary = {
        "type": "Box",
        "shape": [6, 7],
        "dtype": "int64",
        "low": {"shape": [6, 7], "min": -3, "max": -1},
        "high": {"shape": [6, 7], "min": 4, "max": 9},
    }
    policy = policy_random.Policy({}, summary, {})
    policy.reset(0)
    values = np.asarray(policy.act(None))
    assert values.shape == (6, 7) and values.dtype.kind == "i"
    assert values.min() >= -1 and values.max() <= 4


def test_random_policy_refuses_unknown_action_types_at_start():
    with pytest.raises(ValueError, match="cannot sample actions of type 'Graph'"):
        policy_random.Policy({}, {"type": "Graph", "repr": "Graph()"}, {})


def write_params(tmp_path, monkeypatch, weights, bias):
    path = tmp_path / "params.json"
    path.write_text(json.dumps({"weights": weights, "bias": bias}))
    monkeypatch.setattr(policy_linear, "PARAMS_FILE", path)


def test_linear_policy_on_cartpole_features(tmp_path, monkeypatch):
    features = policy_linear.Features(CARTPOLE_OBS)
    vector = features([2.4, 3.0, -0.209, 100.0])
    # Finite bounds scale to [-1, 1]; infinite ones keep the raw value, clipped to +-5.
    np.testing.assert_allclose(vector, [0.5, 3.0, -0.5, 5.0])
    write_params(tmp_path, monkeypatch, [[0, 0, -1, 0], [0, 0, 1, 0]], [0, 0])
    policy = policy_linear.Policy(CARTPOLE_OBS, {"type": "Discrete", "n": 2}, {})
    policy.reset(0)
    assert policy.act([0.0, 0.0, 0.1, 0.0]) == 1  # pole leans right: push right
    assert policy.act([0.0, 0.0, -0.1, 0.0]) == 0


def test_linear_policy_decodes_nested_actions_and_flattens_nested_obs(tmp_path, monkeypatch):
    obs_space = {
        "type": "Dict",
        "spaces": {
            "position": {"type": "Discrete", "n": 8},
            "grid": {"type": "MultiBinary", "n": [2, 2]},
            "goal": {"type": "Tuple", "spaces": [{"type": "MultiDiscrete", "nvec": [3, 3]}]},
            "mission": {"type": "Text", "min_length": 1, "max_length": 9},
        },
    }
    features = policy_linear.Features(obs_space)
    actions = policy_linear.Actions(NESTED_ACTION)
    assert (features.size, actions.size) == (1 + 4 + 2, 3 + 4 + 2 + 3 + 1 + 2)
    rng = np.random.default_rng(0)
    write_params(
        tmp_path,
        monkeypatch,
        rng.normal(0, 3, (actions.size, features.size)).tolist(),
        rng.normal(0, 3, actions.size).tolist(),
    )
    policy = policy_linear.Policy(obs_space, NESTED_ACTION, {})
    obs = {"position": 7, "grid": [[0, 1], [1, 1]], "goal": [[2, 0]], "mission": "go"}
    check_nested(policy.act(obs))


def test_linear_policy_pools_images_to_a_fixed_size():
    image = {
        "type": "Image",
        "shape": [10, 10, 3],
        "dtype": "uint8",
        "layout": "height_width_channels",
        "value_range": [0, 255],
    }
    features = policy_linear.Features(image)
    assert features.size == policy_linear.MAX_FEATURES
    white = features(np.full((10, 10, 3), 255).tolist())
    np.testing.assert_allclose(white, np.ones(policy_linear.MAX_FEATURES))


def test_linear_policy_rejects_params_of_the_wrong_shape(tmp_path, monkeypatch):
    write_params(tmp_path, monkeypatch, [[1.0]], [0.0, 0.0])
    with pytest.raises(ValueError, match="needs weights"):
        policy_linear.Policy(CARTPOLE_OBS, {"type": "Discrete", "n": 2}, {})


def test_the_exploration_policy_tries_every_action_before_repeating_one(tmp_path, monkeypatch):
    import importlib.util
    import json
    from importlib import resources

    source = resources.files("evopolicygym.agents.builtin").joinpath("policy_explore.py")
    (tmp_path / "policy.py").write_text(source.read_text())
    (tmp_path / "params.json").write_text(
        json.dumps({"preference": [0.0, 0.0, 0.0, 0.0], "beta": 1.0, "jitter": 0.1})
    )
    spec = importlib.util.spec_from_file_location("explore_policy", tmp_path / "policy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    policy = module.Policy({"type": "Discrete", "n": 2}, {"type": "Discrete", "n": 4}, {})
    policy.reset(0)
    assert sorted(policy.act(1) for _ in range(4)) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="Discrete action space"):
        module.Policy({"type": "Discrete", "n": 2}, {"type": "Box", "shape": [1]}, {})


def test_linear_features_pool_images_onto_a_grid_per_channel():
    image = {"type": "Box", "shape": [32, 32, 3], "low": 0, "high": 255, "dtype": "uint8"}
    pooled = policy_linear.Features(image, image_grid=4)
    assert pooled.size == 4 * 4 * 3
    frame = np.zeros((32, 32, 3))
    frame[:8, :8, 0] = 255  # the top-left cell of the red channel is white
    vector = pooled(frame.tolist())
    assert vector[0] == pytest.approx(1.0) and vector[1] == pytest.approx(-1.0)
    assert policy_linear.Features(image).size == policy_linear.MAX_FEATURES  # default unchanged


def test_a_linear_population_plays_member_episode_index_mod_size(tmp_path, monkeypatch):
    params = {
        "population": [
            {"weights": [[0.0], [0.0]], "bias": [1.0, 0.0]},
            {"weights": [[0.0], [0.0]], "bias": [0.0, 1.0]},
        ]
    }
    path = tmp_path / "params.json"
    path.write_text(json.dumps(params))
    monkeypatch.setattr(policy_linear, "PARAMS_FILE", path)
    policy = policy_linear.Policy({"type": "Discrete", "n": 3}, {"type": "Discrete", "n": 2}, {})
    actions = []
    for episode in range(4):
        policy.reset(episode)
        actions.append(policy.act(1))
    assert actions == [0, 1, 0, 1]
