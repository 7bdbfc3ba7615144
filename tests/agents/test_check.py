"""`evopolicygym agents check` against the fake CLIs (binary, version, a one-turn session)."""

from __future__ import annotations

import json
import subprocess
import sys

from evopolicygym.agents import check_agent
from fake_agent_clis import install_fake_cli


def agents_check(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evopolicygym.cli", "agents", "check", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_each_installed_cli_is_found_versioned_and_answers_one_turn(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    binaries = [
        f"--binary={k}={install_fake_cli(k, tmp_path / 'bin')}" for k in ("codex", "claude", "kimi")
    ]
    result = agents_check(*binaries, "--json")
    assert result.returncode == 0, result.stderr
    found = {r["kind"]: r for r in json.loads(result.stdout)}
    assert found["codex"]["version"] == "codex-cli 0.169.0"
    assert found["claude"]["version"] == "2.1.328 (Claude Code)"
    assert all(r["session"] is True and r["session_id"] for r in found.values())


def test_a_missing_cli_is_named_with_what_to_do(tmp_path):
    result = agents_check("--kind", "codex", "--binary", f"codex={tmp_path}/nowhere/codex")
    assert result.returncode == 1
    assert "NOT FOUND" in result.stdout and "npm install -g @openai/codex" in result.stdout


def test_a_cli_that_cannot_answer_fails_the_session_check(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FAKE_CLI_EXIT", "3")
    binary = install_fake_cli("claude", tmp_path / "bin")
    result = check_agent("claude", binary=str(binary), timeout=60)
    assert result.path == str(binary) and result.session is False and not result.ok
    assert "exit code 3" in result.detail and "logged in" in result.advice
    assert check_agent("claude", binary=str(binary), session=False).ok
