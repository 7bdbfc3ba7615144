"""The agent jail: a full run through each adapter with the agent inside bubblewrap, which can
read its workspace and its CLI configuration but no hidden file (real CLI, real judge, the fake
Codex/Claude/Kimi CLIs and a command agent that probe the file system from inside)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evopolicygym.agents._jail import bwrap_works
from fake_agent_clis import install_fake_cli

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or bwrap_works() is not None,
    reason=f"bubblewrap does not work here: {bwrap_works() if shutil.which('bwrap') else 'missing'}",
)

COMMAND_AGENT = """
import json, os, sys, urllib.request
for line in sys.stdin:
    readable = []
    for path in os.environ["FAKE_CLI_PROBE"].split(":"):
        try:
            os.listdir(path) if os.path.isdir(path) else open(path, "rb").close()
            readable.append(path)
        except OSError:
            pass
    system = os.environ["EVOPOLICYGYM_SYSTEM"]
    with open(os.path.join(system, "policy.py"), "w") as f:
        f.write("class Policy:\\n    def __init__(self, o, a, m): pass\\n"
                "    def reset(self, i): pass\\n    def act(self, obs): return 1\\n")
    request = urllib.request.Request(os.environ["EVOPOLICYGYM_SUBMIT_URL"],
        data=b'{"env_instances": [0]}', headers={"Content-Type": "application/json"})
    status = json.load(urllib.request.urlopen(request))["status"]
    print(json.dumps({"text": f"{status}; could read {readable}"}), flush=True)
"""


def evopolicygym(*args, env, cwd):
    return subprocess.run(
        [sys.executable, "-m", "evopolicygym.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=cwd,
    )


@pytest.mark.parametrize("kind", ["codex", "claude", "kimi", "command"])
def test_a_jailed_run_completes_and_cannot_read_any_hidden_file(tmp_path, kind):
    home = tmp_path / "home"
    for directory in (".codex", ".claude", ".kimi-code"):
        (home / directory).mkdir(parents=True)
        (home / directory / "auth.json").write_text('{"token": "test"}')
    env = {**os.environ, "HOME": str(home)}
    made = evopolicygym(
        "data", "make", "--env", "toy", "--root", "data", "--private", "--train-size", "4",
        "--valid-size", "4", "--heldout-size", "4", env=env, cwd=tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    other = tmp_path / "runs" / "other"
    (other / ".judge").mkdir(parents=True)
    (other / "run.json").write_text("{}")
    run = tmp_path / "runs" / "mine"
    workspace = run / "workspace"
    secret_paths = [
        run / ".judge",
        run / ".judge" / "journal.jsonl",
        run / "logs",
        run / "checkpoints",
        tmp_path / "data" / "heldout.json",
        tmp_path / "data" / "valid.json",
        other / "run.json",
        REPO / "README.md",
        REPO / "config",
        Path(os.environ.get("HOME", "/root")) / ".bash_history",
    ]
    visible = [workspace / "AGENTS.md", home / f".{'kimi-code' if kind == 'kimi' else kind}"]
    env["FAKE_CLI_PROBE"] = ":".join(str(p) for p in [*secret_paths, *visible])
    if kind == "command":
        script = tmp_path / "agent.py"
        script.write_text(textwrap.dedent(COMMAND_AGENT))
        agent = ["--agent", "command", "--", sys.executable, str(script)]
    else:
        agent = ["--agent", kind, "--", str(install_fake_cli(kind, tmp_path / "bin"))]
    result = evopolicygym(
        "run", "--env", "toy", "--root", str(run), "--data", "data", "--budget", "2",
        "--jobs", "1", "--agent-jail", "on", *agent, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((run / "run.json").read_text())
    assert record["outcome"]["status"] == "completed" and record["budget"]["used"] == 2
    assert record["isolation"]["agent"]["level"] == "bwrap"
    assert record["isolation"]["agent"]["requested"] == "on"
    if kind == "command":
        answers = [
            json.loads(line)["text"]
            for line in (run / "logs" / "agent.jsonl").read_text().splitlines()
            if json.loads(line)["kind"] == "reply"
        ]
    else:
        answers = [
            p.read_text()
            for p in sorted((run / "logs" / f"{kind}_turns").glob("turn_[0-9][0-9][0-9].txt"))
        ]
    assert len(answers) >= 2
    for answer in answers:
        for path in secret_paths:
            assert f"'{path}'" not in answer, f"the jailed agent could read {path}"
        assert f"'{workspace / 'AGENTS.md'}'" in answer  # the probe itself works
        if kind != "command":
            assert f"'{visible[1]}'" in answer  # its configuration directory is visible
    if kind != "command":
        # Sessions live in the run's agent_state, never in the real configuration directory.
        turns = [p for p in answers if "turn 2 of" in p]
        assert turns, answers
        store = {
            "codex": ".codex/sessions",
            "claude": ".claude/projects",
            "kimi": ".kimi-code/sessions",
        }[kind]
        assert list((run / "agent_state" / store).rglob("*.jsonl"))
        assert not (home / store).exists() or not list((home / store).rglob("*.jsonl"))
