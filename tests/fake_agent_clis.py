"""Fake Codex, Claude Code and Kimi Code CLIs for tests (the real ones need a login and a model).

``install_fake_cli(kind, bin_dir)`` writes an executable ``bin_dir/<kind>``. It parses the real
tool's argv, prints the real tool's output format (Codex ``exec --json`` events, Claude
``stream-json`` messages with ``usage`` and ``total_cost_usd``, Kimi ``stream-json`` messages),
and keeps its sessions where the real tool does, under ``$HOME``: Codex in
``~/.codex/sessions/<thread>.jsonl``, Claude in ``~/.claude/projects/<cwd slug>/<id>.jsonl``,
Kimi in ``~/.kimi-code/sessions/<id>.jsonl`` plus ``~/.kimi-code/session_index.jsonl``. Like the
real tools it resumes with ``exec ... resume <id>`` / ``resume --last`` (Codex), ``--resume <id>``
/ ``--continue`` (Claude) and ``-S <id>`` / ``-C`` (Kimi), and fails (exit 1, message on stderr)
when asked to resume a session it does not have. Its answer names the session and how many
turns it has had. It acts like an agent: it reads ``GET /info``, writes ``system/policy.py`` (a
constant policy for Discrete actions) and POSTs one submit through the ``EVOPOLICYGYM_*_URL``
variables. ``--version`` prints a version line in the real tool's format.

Knobs (environment): ``FAKE_CLI_RECORD`` (append one JSON line per call: argv, stdin, cwd, pid
and the EVOPOLICYGYM_* variables), ``FAKE_CLI_EXIT`` (exit code), ``FAKE_CLI_SLEEP`` (seconds to
hang before answering), ``FAKE_CLI_HANG_AT_TURN=N`` (hang for an hour at the session's N-th
turn, 1-based), ``FAKE_CLI_SUBMIT=0`` (do not touch the judge), ``FAKE_CLI_PROBE=PATH1:PATH2``
(try to read each path and report in the answer which it could read).
"""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = r'''
import json, os, sys, time, urllib.request, uuid
from pathlib import Path

KIND = "__KIND__"
HOME = Path.home()


def act_like_an_agent():
    """Write a constant policy and submit one episode; return a line describing it."""
    url = os.environ.get("EVOPOLICYGYM_INFO_URL")
    if not url or os.environ.get("FAKE_CLI_SUBMIT") == "0":
        return "no judge contacted"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            info = json.load(response)
    except OSError as exc:  # no judge (e.g. `agents check`): say so, as an agent would
        return f"judge unreachable ({exc})"
    if info["state"]["remaining_budget"] < 1 or info["state"]["is_finalized"]:
        return "budget spent"
    space = info["env_meta"]["action_space"]
    action = space.get("start", 0) + space["n"] - 1
    system = Path(os.environ["EVOPOLICYGYM_SYSTEM"])
    system.mkdir(exist_ok=True)
    (system / "policy.py").write_text(
        "class Policy:\n"
        "    def __init__(self, obs_space, action_space, env_meta):\n        pass\n"
        "    def reset(self, episode_index):\n        pass\n"
        f"    def act(self, obs):\n        return {action}\n"
    )
    request = urllib.request.Request(
        os.environ["EVOPOLICYGYM_SUBMIT_URL"],
        data=json.dumps({"env_instances": [0]}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        answer = json.load(response)
    return f"submitted constant action {action}: {answer['status']}"


def probe():
    """Which of the FAKE_CLI_PROBE paths this process can read."""
    readable = []
    for path in filter(None, os.environ.get("FAKE_CLI_PROBE", "").split(":")):
        try:
            if os.path.isdir(path):
                os.listdir(path)
            else:
                open(path, "rb").close()
            readable.append(path)
        except OSError:
            pass
    return readable


def emit(event):
    print(json.dumps(event), flush=True)


def option(argv, *names):
    for name in names:
        if name in argv:
            return argv[argv.index(name) + 1]
    return None


def fail(message):
    print(message, file=sys.stderr, flush=True)
    sys.exit(1)


def store():
    """Where this CLI keeps its sessions (as the real tool does, under $HOME)."""
    if KIND == "codex":
        return HOME / ".codex" / "sessions"
    if KIND == "claude":
        return HOME / ".claude" / "projects" / os.getcwd().replace("/", "-")
    return HOME / ".kimi-code" / "sessions"


def latest():
    files = sorted(store().glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    return files[-1].stem if files else None


def session_for(argv):
    """(session id, is new) from the resume flags; exits like the real tool on a bad id."""
    if KIND == "codex":
        if "resume" not in argv:
            return "th_" + uuid.uuid4().hex[:12], True
        wanted = argv[-2]
        found = latest() if wanted == "--last" else wanted
    elif KIND == "claude":
        if "--resume" in argv:
            found = wanted = option(argv, "--resume")
        elif "--continue" in argv:
            found, wanted = latest(), "the latest conversation"
        else:
            return str(uuid.uuid4()), True
    else:
        if "-S" in argv:
            found = wanted = option(argv, "-S")
        elif "-C" in argv:
            found, wanted = latest(), "the latest session"
        else:
            return "session_" + uuid.uuid4().hex[:8], True
    if not found or not (store() / f"{found}.jsonl").exists():
        fail(f"Error: no session found for {wanted}")
    return found, False


VERSIONS = {"codex": "codex-cli 0.169.0", "claude": "2.1.328 (Claude Code)", "kimi": "kimi, version 1.0.11"}


def main():
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print(VERSIONS[KIND])
        return 0
    stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    record = os.environ.get("FAKE_CLI_RECORD")
    if record:
        env = {k: v for k, v in os.environ.items() if k.startswith("EVOPOLICYGYM_")}
        with open(record, "a") as f:
            f.write(json.dumps({"kind": KIND, "argv": argv, "stdin": stdin, "cwd": os.getcwd(), "pid": os.getpid(), "env": env}) + "\n")
    if KIND == "codex":
        assert argv[:2] == ["exec", "--json"], argv
        prompt = argv[-1]
    elif KIND == "claude":
        assert argv[:4] == ["--print", "--output-format", "stream-json", "--verbose"], argv
        prompt = stdin
    else:
        prompt = option(argv, "-p")
    session, new = session_for(argv)
    log = store() / f"{session}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as f:
        f.write(json.dumps({"prompt": prompt}) + "\n")
    if KIND == "kimi" and new:
        index = HOME / ".kimi-code" / "session_index.jsonl"
        with index.open("a") as f:
            f.write(json.dumps({"sessionId": session, "workDir": os.getcwd()}) + "\n")
    turn = len(log.read_text().splitlines())
    time.sleep(float(os.environ.get("FAKE_CLI_SLEEP", "0")))
    if os.environ.get("FAKE_CLI_HANG_AT_TURN") == str(turn):
        time.sleep(3600)
    print(f"fake {KIND} starting", file=sys.stderr)
    done = act_like_an_agent()
    readable = probe()
    said = f"turn {turn} of {session} ({len(prompt)} chars): {done}"
    if readable:
        said += f"; could read {readable}"
    if KIND == "codex":
        emit({"type": "thread.started", "thread_id": session})
        emit({"type": "turn.started"})
        emit({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "thinking"}})
        emit({"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": "ls", "aggregated_output": "system\n", "exit_code": 0, "status": "completed"}})
        emit({"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": f"codex {said}"}})
        emit({"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5}})
    elif KIND == "claude":
        emit({"type": "system", "subtype": "init", "session_id": session, "tools": ["Bash"], "model": "fake"})
        emit({"type": "assistant", "message": {"id": "msg_1", "role": "assistant", "content": [{"type": "text", "text": "working"}]}, "session_id": session})
        usage = {"input_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 7, "output_tokens": 9}
        emit({"type": "result", "subtype": "success", "is_error": False, "result": f"claude {said}", "session_id": session, "total_cost_usd": 0.0125, "num_turns": 3, "usage": usage})
    else:
        emit({"role": "assistant", "content": "Let me look.", "tool_calls": [{"type": "function", "id": "tc_1", "function": {"name": "Shell", "arguments": "{\"command\": \"ls\"}"}}]})
        emit({"role": "tool", "tool_call_id": "tc_1", "content": "system"})
        emit({"role": "assistant", "content": [{"type": "text", "text": f"kimi {said}"}]})
    return int(os.environ.get("FAKE_CLI_EXIT", "0"))


sys.exit(main())
'''


def install_fake_cli(kind: str, bin_dir: Path) -> Path:
    """Write an executable fake ``kind`` CLI (codex, claude or kimi) into ``bin_dir``."""
    if kind not in ("codex", "claude", "kimi"):
        raise ValueError(f"no fake for {kind!r}")
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / kind
    path.write_text(f"#!{sys.executable}\n" + SCRIPT.replace("__KIND__", kind))
    path.chmod(0o755)
    return path
