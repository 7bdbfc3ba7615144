"""L4 calibration: a real built-in agent run through the judge against the random policy on the
same held-out cases, and recording the result into an envspec."""

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from evopolicygym.envs import Calibration, EnvSpec, default_registry, envspecs_root
from evopolicygym.readiness.calibration import (
    TABLE_END,
    TABLE_START,
    CalibrationSettings,
    calibrate,
    calibration_table,
    record_calibration,
    render_into,
)
from evopolicygym.readiness.checks import check_spec


@pytest.fixture
def toy_spec(tmp_path) -> EnvSpec:
    """The toy envspec copied out of the checkout (so recording cannot touch the real one), as
    it was before its calibration: level L3, no [calibration] table."""
    shutil.copy(envspecs_root() / "builtin" / "toy.md", tmp_path / "toy.md")
    text = (envspecs_root() / "builtin" / "toy.toml").read_text()
    text = text.split("\n[calibration]\n")[0].replace('level = "L4"', 'level = "L3"')
    (tmp_path / "toy.toml").write_text(text)
    spec = EnvSpec.from_file(tmp_path / "toy.toml")
    assert spec.level == "L3" and spec.calibration is None
    return spec


@pytest.mark.slow
def test_hillclimb_calibrates_toy_and_recording_promotes_it_to_l4(tmp_path, toy_spec):
    settings = CalibrationSettings(budget=12, valid_size=4, final_size=16, jobs=2)
    result = calibrate(toy_spec, settings, root=tmp_path / "run")
    # Hill climbing finds "always 2", the best action, so it beats random on every case but
    # those where random also played 2.
    assert result.improved and result.margin > 0.5
    assert (result.budget, result.valid_size, result.final_size) == (12, 4, 16)
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["outcome"]["heldout_returns"] and record["budget"]["used"] == 12

    assert "level L3 -> L4" in record_calibration(toy_spec, result)
    again = EnvSpec.from_file(tmp_path / "toy.toml")
    assert again.level == "L4" and again.calibration.improved
    for key, value in result.model_dump().items():
        expected = value if isinstance(value, str) else pytest.approx(value, rel=1e-5)
        assert getattr(again.calibration, key) == expected, key
    assert check_spec(again).reached_level == "L4"
    # Recording again replaces the table instead of adding a second one.
    record_calibration(again, result.model_copy(update={"agent_mean": 6.0}))
    text = (tmp_path / "toy.toml").read_text()
    assert text.count("[calibration]") == 1
    assert tomllib.loads(text)["calibration"]["agent_mean"] == 6.0


def test_recording_keeps_the_rest_of_the_file_and_replaces_the_table_in_place(toy_spec):
    measured = default_registry().get("toy").calibration
    path = Path(toy_spec.source)
    text = path.read_text().replace('level = "L3"', 'level = "L3"  # raised by calibrate --record')
    text = text.replace("[anchors]", "# measured by hand\n[anchors]")
    path.write_text(f"# toy task\n{text}")
    assert "level L3 -> L4" in record_calibration(toy_spec, measured)
    first = path.read_text()
    assert first.startswith("# toy task\n") and "# measured by hand\n[anchors]" in first
    assert 'level = "L4"  # raised by calibrate --record' in first
    assert tomllib.loads(first)["calibration"]["agent_mean"] == measured.agent_mean

    # A [calibration] table followed by another table is replaced where it stands.
    moved = first.replace("# measured by hand\n", "").split("[calibration]")
    anchors = moved[0][moved[0].index("[anchors]") :]
    path.write_text(moved[0].replace(anchors, "") + "[calibration]" + moved[1] + "\n" + anchors)
    spec = EnvSpec.from_file(path)
    assert "level" not in record_calibration(spec, measured.model_copy(update={"agent_mean": 6.0}))
    again = path.read_text()
    assert again.count("[calibration]") == 1
    assert again.index("[calibration]") < again.index("[anchors]")
    assert tomllib.loads(again)["calibration"]["agent_mean"] == 6.0
    assert EnvSpec.from_file(path).anchors == toy_spec.anchors


@pytest.mark.slow
def test_check_envs_calibrates_live(toy_spec):
    row = check_spec(toy_spec.model_copy(update={"level": "L4"}), live=True)
    assert row.ok and row.reached_level == "L4"
    assert isinstance(row.calibration, Calibration) and row.calibration.improved


@pytest.mark.slow
def test_cli_exit_status_says_whether_the_agent_beat_random():
    def cli(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "evopolicygym.cli", "calibrate", "--env", "toy", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)

    # The random agent is no better than random: not calibrated, exit 1, numbers still printed.
    done = cli("--agent", "builtin:random", "--budget", "4", "--valid-size", "4")
    assert done.returncode == 1, done.stderr
    assert "NOT calibrated" in done.stderr
    result = Calibration.model_validate_json(done.stdout.strip().splitlines()[-1])
    assert result.agent == "builtin:random" and not result.improved


def test_the_calibration_doc_shows_every_recorded_calibration():
    doc = Path(__file__).parents[2] / "docs" / "envs" / "calibration.md"
    specs = sorted(default_registry().specs(), key=lambda s: (s.family, s.id))
    table = calibration_table(specs)
    assert render_into(doc.read_text(), table) == doc.read_text(), (
        "docs/envs/calibration.md is stale: python -m evopolicygym.readiness.calibration --markdown "
        "docs/envs/calibration.md"
    )
    for spec in specs:
        if spec.calibration:
            row = next(line for line in table.splitlines() if f"`{spec.id}`" in line)
            assert ("| yes |" in row) == spec.calibration.improved
            assert f"{spec.calibration.agent_mean:.4g}" in row


def test_rendering_needs_the_markers():
    with pytest.raises(ValueError, match="region"):
        render_into("# no markers\n", "| table |\n")
    text = f"intro\n{TABLE_START}\nold\n{TABLE_END}\noutro\n"
    assert render_into(text, "new\n") == f"intro\n{TABLE_START}\nnew\n{TABLE_END}\noutro\n"
