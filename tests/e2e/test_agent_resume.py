"""A run killed mid-turn and resumed continues the agent CLI's own session and counts every turn
(real CLI, real judge, the fake Codex/Claude/Kimi CLIs of tests/fake_agent_clis.py)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evopolicygym.agents._jail import bwrap_works
from fake_agent_clis import install_fake_cli

JAILED = bwrap_works() is None  # the default jail = auto is on where bubblewrap works


def _running(binary) -> list[int]:
    """Processes of this test's fake CLI that are still alive (not zombies)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(binary).encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


def _calls(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("kind", ["codex", "claude", "kimi"])
def test_a_killed_run_resumes_the_same_agent_session_and_counts_every_turn(tmp_path, kind):
    binary = install_fake_cli(kind, tmp_path / "bin")
    root = tmp_path / "run"
    # In the workspace: the agent runs in the jail (the default), which sees nothing else.
    calls = root / "workspace" / ".calls.jsonl"
    env = {**os.environ, "HOME": str(tmp_path / "home"), "FAKE_CLI_RECORD": str(calls)}
    command = [sys.executable, "-m", "evopolicygym.cli", "run", "--env", "toy", "--root", str(root),
               "--budget", "3", "--jobs", "1", "--agent", kind, "--retries", "1",
               "--retry-backoff", "0", "--", str(binary)]  # fmt: skip
    first = subprocess.Popen(
        command,
        env={**env, "FAKE_CLI_HANG_AT_TURN": "2"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_calls(calls)) < 2:
        time.sleep(0.05)
    time.sleep(6)  # the second turn hangs inside the CLI; the history heartbeat saves (5 s)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    # The jailed CLI dies with the harness (without the jail its own group would survive).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _running(binary):
        time.sleep(0.1)
    survivors = _running(binary)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not (JAILED and survivors)
    history = json.loads((root / ".judge" / "history.json").read_text())
    assert history["attempts"][0]["session"]["turns"] == 2  # the killed turn is counted

    resumed = subprocess.run(
        [sys.executable, "-m", "evopolicygym.cli", "run", "--resume", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr
    record = json.loads((root / "run.json").read_text())
    agent = record["agent"]
    sessions = agent["sessions"]
    own_id = sessions[0]["resume_id"]
    assert own_id and len(sessions) == 2 and sessions[1]["resumed"]
    assert sessions[1]["resume_id"] == own_id
    later = _calls(calls)[2:]
    assert later and all(own_id in call["argv"] for call in later)  # -S / --resume / resume
    prompt = later[0]["stdin"] or later[0]["argv"][-1]
    assert "interrupted" in prompt and "2 of 3 episodes remain" in prompt
    # Turns: 1 (submit), 2 (killed), then 3 and 4 (submits) in the same CLI session.
    assert agent["turns"] == 4 == sum(s["turns"] for s in sessions)
    assert record["budget"]["used"] == 3 and record["outcome"]["status"] == "completed"
    assert record["isolation"]["agent"]["level"] == ("bwrap" if JAILED else "none")
    assert agent["wall_time_seconds"] >= sessions[0]["wall_time_seconds"] > 5
    assert record["timing"]["wall_time_seconds"] >= sum(
        a["wall_time_seconds"]
        for a in json.loads((root / ".judge" / "history.json").read_text())["attempts"][:1]
    )
    answers = sorted((root / "logs" / f"{kind}_turns").glob("turn_*.txt"))
    assert [p.name for p in answers][-1] == "turn_003.txt"
    assert f"turn 4 of {own_id}" in answers[-1].read_text()
    if kind == "codex":
        assert agent["usage"]["output_tokens"] == 5 * 3
    if kind == "claude":
        assert agent["cost_usd"] == pytest.approx(0.0125 * 3)
