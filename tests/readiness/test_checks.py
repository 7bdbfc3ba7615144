import json
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from evopolicygym.envs import Anchors, Calibration, EnvSpec, Registry, get_env
from evopolicygym.readiness.checks import (
    Target,
    check_env,
    check_envs,
    check_spec,
    parse_level,
    select_targets,
)

CORE16 = [spec.id for spec in Registry.load().specs() if spec.core16]
SLOW = {"gym/racing", "gymnasium/parking-v0", "gymnasium/roundabout-v0"}


def test_core16_is_complete():
    assert len(CORE16) == 16


@pytest.mark.core
@pytest.mark.parametrize(
    "env_id",
    [pytest.param(e, marks=pytest.mark.slow) if e in SLOW else e for e in CORE16],
)
def test_core16_passes_l1_and_l2(env_id):
    result = check_env(env_id, up_to="L2")
    assert result.ok, [c for c in result.checks if not c.ok]
    assert result.reached_level == "L2"
    names = {c.name for c in result.checks}
    assert {"builds", "describes", "resets_and_steps", "seeded_determinism"} <= names


def test_parse_level():
    assert parse_level("l2") == "L2" == parse_level("2")
    with pytest.raises(ValueError, match="unknown level"):
        parse_level("L9")


def _cartpole(**changes) -> EnvSpec:
    return get_env("gym/cartpole").model_copy(update=changes)


def test_incomplete_task_text_fails_l2_with_the_missing_sections():
    text = "# CartPole\n\n## Objective\nBalance for 500 steps.\n"
    result = check_spec(_cartpole(task=text, level="L2"))
    assert not result.ok and result.reached_level == "L1"
    failure = next(c for c in result.checks if not c.ok)
    assert failure.name == "task_sections" and "## Reward" in failure.message


def test_task_text_inconsistent_with_the_schema_fails():
    spec = get_env("gym/cartpole")
    wrong_cap = _cartpole(max_episode_steps=321, level="L2")
    messages = [c.message for c in check_spec(wrong_cap).checks if not c.ok]
    assert any("step cap 321" in m for m in messages)
    wrong_storage = _cartpole(obs_storage="external", level="L2")
    messages = [c.message for c in check_spec(wrong_storage).checks if not c.ok]
    assert any("obs_storage" in m for m in messages)
    assert check_spec(spec.model_copy(update={"level": "L2"})).ok


def test_missing_anchor_fails_l3():
    result = check_spec(_cartpole(level="L3", anchors=Anchors()))
    assert result.reached_level == "L2"
    assert "anchors" in next(c for c in result.checks if not c.ok).message


def test_an_expert_below_random_fails_l3():
    anchors = Anchors(random=22.0, random_source="t", expert=10.0, expert_source="t")
    result = check_spec(_cartpole(level="L3", anchors=anchors))
    assert result.reached_level == "L2"
    assert "does not beat random" in next(c for c in result.checks if not c.ok).message


def _calibration(agent_mean: float, margin_se: float) -> Calibration:
    return Calibration(
        agent="builtin:hillclimb",
        budget=32,
        valid_size=8,
        final_size=32,
        agent_mean=agent_mean,
        agent_se=margin_se,
        random_mean=22.0,
        random_se=1.0,
        margin_se=margin_se,
    )


def test_l4_needs_a_recorded_calibration_that_clearly_beats_random():
    anchors = Anchors(random=22.0, random_source="t")
    missing = check_spec(_cartpole(level="L4", anchors=anchors, calibration=None))
    assert missing.reached_level == "L3" and not missing.ok
    assert "evopolicygym calibrate --env gym/cartpole" in missing.checks[-1].message
    lucky = check_spec(_cartpole(level="L4", anchors=anchors, calibration=_calibration(30, 5)))
    assert lucky.reached_level == "L3"
    assert "within two standard errors" in lucky.checks[-1].message
    clear = _calibration(500, 1)
    calibrated = check_spec(_cartpole(level="L4", anchors=anchors, calibration=clear))
    assert calibrated.ok and calibrated.reached_level == "L4"
    assert calibrated.calibration == clear and "margin +478" in calibrated.checks[-1].message


class _Leaky(gymnasium.Env):
    """A real environment that keeps state across resets: the start depends on the episode count."""

    observation_space = spaces.Box(-100, 100, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self):
        self.episodes = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episodes += 1
        return np.array([self.episodes], np.float32), {}

    def step(self, action):
        return np.array([self.episodes], np.float32), 0.0, False, False, {}


def test_world_with_state_across_resets_fails_determinism_and_recreation_fixes_it():
    gymnasium.register(id="EvoPolicyGymLeaky-v0", entry_point=_Leaky)
    leaky = _cartpole(upstream="EvoPolicyGymLeaky-v0", max_episode_steps=5)
    result = check_spec(leaky, up_to="L1")
    failure = next(c for c in result.checks if not c.ok)
    assert failure.name == "seeded_determinism"
    assert "recreate_per_episode" in failure.message
    assert check_spec(leaky.model_copy(update={"recreate_per_episode": True}), up_to="L1").ok


def test_unknown_and_unbuildable_envs_are_failed_rows_with_the_error():
    result = check_env("gym/not-an-env")
    assert not result.ok and result.reached_level is None
    assert "unknown environment" in result.error
    broken = _cartpole(imports=["evopolicygym_missing_plugin"], extra="core")
    result = check_spec(broken, up_to="L1")
    failure = next(c for c in result.checks if not c.ok)
    assert failure.name == "builds" and "uv sync --inexact --extra core" in failure.message


def test_select_targets_by_level_and_discover():
    l3 = select_targets(min_level="L3")
    assert [t.env for t in l3] == ["toy"] or all(get_env(t.env).level in ("L3", "L4") for t in l3)
    discovered = select_targets(discover=True, min_level="L0")
    assert any(
        t.env == "gymnasium/LunarLanderContinuous-v3" and t.up_to == "L0" for t in discovered
    )
    # Curated upstream ids are not listed twice.
    assert not any(t.env == "gymnasium/CartPole-v1" for t in discovered)


def test_check_envs_report_counts():
    report = check_envs([Target("toy"), Target("gym/nope")])
    assert (report.total, report.ok, report.failed) == (2, 1, 1)
    assert report.by_level["L4"] == 1 and report.by_level["none"] == 1


@pytest.mark.slow
def test_cli_isolated_run_writes_json_and_exits_1_on_failure(tmp_path):
    output = tmp_path / "report.json"
    command = [
        sys.executable,
        "-m",
        "evopolicygym.cli",
        "check-envs",
        "--env",
        "toy",
        "--env",
        "gym/cartpole",
        "--env",
        "gym/nope",
        "--isolate",
        "--jobs",
        "2",
        "--timeout",
        "120",
        "--output",
        str(output),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 1, done.stderr
    assert "[3/3]" in done.stderr and "gym/nope: FAILED" in done.stderr
    report = json.loads(output.read_text())
    rows = {row["env"]: row for row in report["envs"]}
    assert rows["toy"]["ok"] and rows["gym/cartpole"]["ok"]
    assert not rows["gym/nope"]["ok"]
    assert json.loads(done.stdout.strip().splitlines()[-1])["failed_envs"] == ["gym/nope"]


@pytest.mark.slow
def test_isolated_timeout_is_a_failed_row():
    report = check_envs([Target("gym/racing")], isolate=True, timeout=0.5)
    row = report.envs[0]
    assert not row.ok and row.error.startswith("check_timeout")


@pytest.mark.slow
def test_isolated_check_calibrates_live_in_the_child():
    recorded = get_env("toy").calibration
    report = check_envs([Target("toy", live=True)], isolate=True, timeout=600)
    row = report.envs[0]
    assert row.ok and row.reached_level == "L4", row
    assert row.calibration is not None and row.calibration.improved
    assert row.calibration.measured_at != recorded.measured_at  # measured now, not read
