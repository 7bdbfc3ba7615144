"""The run's own state against tampering: an edited journal, run.json or checkpoint is caught,
and a run whose interpreter was patched is never scored."""

from __future__ import annotations

import json
import os
import signal
import site
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evopolicygym.sandbox import IsolationUnavailable, probe

SCRIPTED = Path(__file__).parents[1] / "e2e" / "agents" / "scripted_agent.py"
SUBMIT_POLICY = Path(__file__).parent / "agents" / "submit_policy_agent.py"
CLI = [sys.executable, "-m", "evopolicygym.cli"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)


def _journal(root: Path) -> list[dict]:
    path = root / ".judge" / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _interrupted_after_one_submit(root: Path, command: list[str]) -> None:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not [r for r in _journal(root) if r["type"] == "submit_commit"]:
        assert time.monotonic() < deadline, "the run never committed a submit"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)


def test_an_edited_journal_stops_the_run_instead_of_refunding_budget(tmp_path):
    root = tmp_path / "run"
    command = [*CLI, "run", "--env", "toy", "--root", str(root), "--budget", "6", "--jobs", "1"]
    command += ["--agent", "command", "--", sys.executable, str(SCRIPTED), "--act-sleep", "1.0"]
    _interrupted_after_one_submit(root, command)
    journal = root / ".judge" / "journal.jsonl"
    lines = journal.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if '"submit_commit"' in line)
    record = json.loads(lines[number])
    record["submit"]["cost"] = 0  # the budget back, as an agent with a shell might try
    lines[number] = json.dumps(record, sort_keys=True)
    journal.write_text("\n".join(lines) + "\n")
    resumed = subprocess.run(
        [*command[:-2], "--act-sleep", "0"], capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 2
    assert (
        f"line {number + 1} (submit_commit) was changed after the judge wrote it" in resumed.stderr
    )
    assert not (root / "run.json").exists()


def test_a_run_resumed_with_other_libraries_is_refused_before_the_agent_starts(tmp_path):
    root = tmp_path / "run"
    command = [*CLI, "run", "--env", "toy", "--root", str(root), "--budget", "6", "--jobs", "1"]
    command += ["--agent", "command", "--", sys.executable, str(SCRIPTED), "--act-sleep", "1.0"]
    _interrupted_after_one_submit(root, command)
    sessions = (root / ".judge" / "history.json").read_text()
    planted = Path(site.getsitepackages()[0]) / "zz_evopolicygym_upgrade_probe.pth"
    planted.write_text("# an installation that changed between two sessions of a run\n")
    try:
        refused = subprocess.run(command, capture_output=True, text=True, timeout=600)
    finally:
        planted.unlink()
    assert refused.returncode == 2
    assert "was started with other libraries than the workers import now" in refused.stderr
    assert "--rerun" in refused.stderr
    assert not (root / "run.json").exists()
    assert (root / ".judge" / "history.json").read_text() == sessions  # no agent session
    resumed = subprocess.run(
        [*command[:-2], "--act-sleep", "0"], capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((root / "run.json").read_text())["outcome"]["status"] == "completed"


def test_verify_accepts_a_finished_run_and_rejects_edits(tmp_path):
    root = tmp_path / "run"
    done = _cli(
        "run", "--env", "toy", "--root", str(root), "--budget", "4", "--agent", "builtin:random"
    )
    assert done.returncode == 0, done.stderr
    verified = _cli("verify", str(root))
    assert verified.returncode == 0 and "FAIL" not in verified.stdout, verified.stdout
    run_json = root / "run.json"
    original = run_json.read_text()
    record = json.loads(original)
    record["outcome"]["final_score"] = 1000.0
    run_json.write_text(json.dumps(record, indent=2))
    verified = _cli("verify", str(root))
    assert verified.returncode == 1 and "seal does not match" in verified.stdout
    run_json.write_text(original)
    best = record["outcome"]["best_submit_index"]
    policy = root / "checkpoints" / f"submit_{best:03d}" / "policy.py"
    policy.write_text(policy.read_text() + "\n# edited\n")
    verified = _cli("verify", str(root))
    assert verified.returncode == 1 and f"checkpoint {best}: content" in verified.stdout


def _process_level() -> bool:
    try:
        probe("process")
    except IsolationUnavailable:
        return False
    return True


@pytest.mark.skipif(not _process_level(), reason="needs the process isolation level")
def test_a_patched_interpreter_is_never_scored(tmp_path):
    # At `process` level a policy can write into the virtual environment (at every other level
    # the environment is out of its reach: test_attacks.py). The judge notices and refuses to
    # score the run.
    planted = Path(site.getsitepackages()[0]) / "zz_evopolicygym_attack_probe.pth"
    policy = tmp_path / "attack.py"
    policy.write_text(
        f"open({str(planted)!r}, 'w').write('# a .pth line runs in every new interpreter\\n')\n"
        "class Policy:\n"
        "    def __init__(self, *args): pass\n"
        "    def reset(self, i): pass\n"
        "    def act(self, obs): return 2\n"
    )
    root = tmp_path / "run"
    try:
        done = _cli(
            "run",
            "--env",
            "toy",
            "--root",
            str(root),
            "--budget",
            "2",
            "--isolation",
            "process",
            "--agent",
            "command",
            "--",
            sys.executable,
            str(SUBMIT_POLICY),
            str(policy),
        )
    finally:
        if planted.exists():
            os.unlink(planted)
    assert done.returncode == 1, done.stderr  # a finished run with an error outcome
    outcome = json.loads((root / "run.json").read_text())["outcome"]
    assert outcome["status"] == "error" and outcome["final_score"] is None
    assert outcome["error"]["type"] == "interpreter_changed"


# Replaces AGENTS.md with a FIFO nobody writes (reading it blocks for ever); then, as
# submit_policy_agent.py, spends the budget on the policy file given (both run in the agent jail,
# which shows the agent its own script and its workspace only: the policy is written beside it).
REPLACES_AGENTS_MD = """
import os
os.remove("AGENTS.md")
os.mkfifo("AGENTS.md")
"""


def test_what_the_agent_puts_at_agents_md_neither_stalls_the_run_nor_changes_its_record(
    tmp_path,
):
    from evopolicygym.agents import agents_md_sha256

    agent = tmp_path / "agent.py"
    agent.write_text(REPLACES_AGENTS_MD + SUBMIT_POLICY.read_text())
    policy = (
        "class Policy:\n    def __init__(self, *a): pass\n"
        "    def reset(self, i): pass\n    def act(self, obs): return 2\n"
    )
    root = tmp_path / "run"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "given_policy.py").write_text(policy)
    command = [*CLI, "run", "--env", "toy", "--root", str(root), "--budget", "2", "--jobs", "1"]
    command += ["--agent", "command", "--", sys.executable, str(agent), "given_policy.py"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    record = json.loads((root / "run.json").read_text())
    assert record["outcome"]["status"] == "completed"
    assert record["versions"]["agents_md_hash"] == agents_md_sha256()
