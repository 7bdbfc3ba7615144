"""Suites check their agents and environments before scheduling anything."""

from __future__ import annotations

import pytest

from evopolicygym.preflight import PreflightError, require_ready, suite_problems
from evopolicygym.suites import load_suite
from fake_agent_clis import install_fake_cli


def suite_file(tmp_path, agent: str, env: str = "toy"):
    path = tmp_path / "s-suite.toml"
    path.write_text(
        f"[suite]\nroot='runs/s'\nname='s'\n[[run]]\nenv='{env}'\nbudget=1\n[[agent]]\n{agent}\n"
    )
    return load_suite(path)


def test_a_missing_agent_cli_is_named_once_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    suite = suite_file(tmp_path, "kind='codex'")
    with pytest.raises(PreflightError) as error:
        require_ready([suite])
    message = str(error.value)
    assert "no job was scheduled" in message and "agent CLI 'codex'" in message
    assert "npm install -g @openai/codex" in message and message.count("codex' (codex)") == 1


def test_found_clis_builtin_agents_and_buildable_envs_pass(tmp_path, monkeypatch):
    install_fake_cli("kimi", tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    assert suite_problems(suite_file(tmp_path, "kind='kimi'")) == []
    assert suite_problems(suite_file(tmp_path, "kind='builtin:random'", "gym/cartpole")) == []


def test_an_unknown_environment_is_a_problem(tmp_path):
    (problem,) = suite_problems(suite_file(tmp_path, "kind='builtin:random'", "gym/nope"))
    assert "environment 'gym/nope'" in problem
