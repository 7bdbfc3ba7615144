"""Configuration layering of one run: defaults < config file < flags."""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evopolicygym.run_config import RunConfigError, RunFlags, layered_run_config, read_config_file

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_flags_alone_fill_the_model_defaults():
    config = layered_run_config(RunFlags(budget=8, argv=("python", "agent.py")))
    assert config.run.env == "toy" and config.run.budget == 8
    assert config.run.model == "agent" and config.run.minimum == 1
    assert config.agent.kind == "command" and config.agent.argv == ["python", "agent.py"]
    assert config.server.bind == "127.0.0.1" and config.server.port == 0
    assert config.limits.act_timeout_s == 10.0


def test_the_file_replaces_defaults_and_flags_replace_the_file(tmp_path):
    file = write(
        tmp_path / "run.toml",
        '[run]\nenv = "gym/cartpole"\nbudget = 16\nmaximum = 8\n\n'
        '[agent]\nkind = "builtin:hillclimb"\nretries = 2\n\n[limits]\nact_timeout_s = 5.0\n',
    )
    config = layered_run_config(RunFlags(budget=32, retries=0, port=8765), file)
    assert config.run.env == "gym/cartpole" and config.run.maximum == 8  # from the file
    assert config.run.budget == 32 and config.agent.retries == 0  # flags win
    assert config.limits.act_timeout_s == 5.0 and config.limits.rollout_wall_s == 600.0
    assert config.server.port == 8765 and config.server.bind == "127.0.0.1"


def test_the_shipped_example_layers_under_flags():
    config = layered_run_config(
        RunFlags(exp_id="again", jobs=2), EXAMPLES / "cartpole-hillclimb.toml"
    )
    assert config.run.exp_id == "again" and config.run.jobs == 2
    assert config.run.model == "builtin-hillclimb" and config.agent.name == "hillclimb"


def test_flat_files_and_json_are_read_as_run_tables(tmp_path):
    flat = write(
        tmp_path / "flat.toml", 'env = "toy"\nbudget = 4\n[agent]\nkind = "builtin:random"\n'
    )
    assert read_config_file(flat) == {
        "run": {"env": "toy", "budget": 4},
        "agent": {"kind": "builtin:random"},
    }
    document = {"run": {"budget": 4}, "agent": {"kind": "builtin:random"}}
    as_json = write(tmp_path / "run.json", json.dumps(document))
    assert read_config_file(as_json) == document
    assert layered_run_config(RunFlags(), as_json).run.budget == 4


def test_a_builtin_agent_names_the_model_unless_the_file_or_a_flag_does(tmp_path):
    assert layered_run_config(RunFlags(budget=4, agent="builtin:hillclimb")).run.model == (
        "hillclimb"
    )
    assert layered_run_config(RunFlags(budget=4, agent="builtin:random", model="m")).run.model == (
        "m"
    )
    file = write(tmp_path / "run.toml", '[run]\nbudget = 4\nmodel = "mine"\n')
    assert layered_run_config(RunFlags(agent="builtin:random"), file).run.model == "mine"


def test_words_after_the_separator_are_argv_or_binary_and_args():
    command = layered_run_config(RunFlags(budget=4, argv=("python", "a.py", "-v")))
    assert command.agent.argv == ["python", "a.py", "-v"]
    codex = layered_run_config(RunFlags(budget=4, agent="codex", argv=("/opt/codex", "--x")))
    assert codex.agent.binary == "/opt/codex" and codex.agent.args == ["--x"]
    assert codex.agent.argv == []


def test_command_paths_relative_to_the_caller_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text("")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to("/bin/true")
    flags = RunFlags(budget=4, argv=("bin/python", "agent.py", "system/policy.py", "-v"))
    argv = layered_run_config(flags).agent.argv
    # the link stays a link (a venv's interpreter); a path that names nothing here is kept
    assert argv == [
        str(tmp_path / "bin" / "python"),
        str(tmp_path / "agent.py"),
        "system/policy.py",
        "-v",
    ]
    assert layered_run_config(RunFlags(budget=4, argv=("python", "x.py"))).agent.argv == [
        "python",
        "x.py",
    ]


def test_switch_flags_only_turn_settings_on(tmp_path):
    file = write(
        tmp_path / "run.toml", "[run]\nbudget = 4\nbulk = true\n[agent]\nkind = 'builtin:random'\n"
    )
    assert layered_run_config(RunFlags(), file).run.bulk is True
    on = layered_run_config(RunFlags(compress_images=True), file)
    assert on.run.compress_images is True and on.run.bulk is True


def test_missing_settings_name_the_flag_to_add(tmp_path):
    with pytest.raises(RunConfigError, match="needs its argv after `--`"):
        layered_run_config(RunFlags(budget=4))
    with pytest.raises(RunConfigError, match="--budget"):
        layered_run_config(RunFlags(agent="builtin:random"))
    file = write(tmp_path / "run.toml", "[agent]\nargv = ['python', 'a.py']\n")
    with pytest.raises(RunConfigError, match="--budget"):
        layered_run_config(RunFlags(), file)


def test_values_the_model_rejects_raise_validation_errors(tmp_path):
    with pytest.raises(ValidationError, match="budget"):
        layered_run_config(RunFlags(budget=-1, agent="builtin:random"))
    file = write(tmp_path / "run.toml", "[run]\nbudget = 4\nbudgett = 5\n")
    with pytest.raises(ValidationError, match="budgett"):
        layered_run_config(RunFlags(agent="builtin:random"), file)


def test_flag_names_are_the_cli_option_destinations():
    from evopolicygym.cli import build_parser

    args = build_parser().parse_args(["run", "--budget", "4", "--", "python", "a.py"])
    assert set(RunFlags.names()) <= set(vars(args))
