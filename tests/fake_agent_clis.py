"""Fake Codex, Claude Code and Kimi Code CLIs for tests (the real ones need a login and a model).

``install_fake_cli(kind, bin_dir)`` writes an executable ``bin_dir/<kind>``. It parses the real
tool's argv, prints the real tool's output format (Codex ``exec --json`` events, Claude
``stream-json`` messages, Kimi ``stream-json`` messages), keeps a session id across resumed
turns, and acts like an agent: it reads ``GET /info``, writes ``system/policy.py`` (a constant
policy for Discrete actions) and POSTs one submit through the ``EVOPOLICYGYM_*_URL`` variables.

Knobs (environment): ``FAKE_CLI_RECORD`` (append one JSON line per call: argv, stdin, cwd and
the EVOPOLICYGYM_* variables), ``FAKE_CLI_EXIT`` (exit code), ``FAKE_CLI_SLEEP`` (seconds to
hang before answering), ``FAKE_CLI_SUBMIT=0`` (do not touch the judge).
"""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = r'''
import json, os, sys, time, urllib.request, uuid
from pathlib import Path

KIND = "__KIND__"


def act_like_an_agent():
    """Write a constant policy and submit one episode; return a line describing it."""
    url = os.environ.get("EVOPOLICYGYM_INFO_URL")
    if not url or os.environ.get("FAKE_CLI_SUBMIT") == "0":
        return "no judge contacted"
    with urllib.request.urlopen(url, timeout=30) as response:
        info = json.load(response)
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


def emit(event):
    print(json.dumps(event), flush=True)


def option(argv, *names):
    for name in names:
        if name in argv:
            return argv[argv.index(name) + 1]
    return None


def main():
    argv = sys.argv[1:]
    stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    record = os.environ.get("FAKE_CLI_RECORD")
    if record:
        env = {k: v for k, v in os.environ.items() if k.startswith("EVOPOLICYGYM_")}
        with open(record, "a") as f:
            f.write(json.dumps({"kind": KIND, "argv": argv, "stdin": stdin, "cwd": os.getcwd(), "env": env}) + "\n")
    time.sleep(float(os.environ.get("FAKE_CLI_SLEEP", "0")))
    print(f"fake {KIND} starting", file=sys.stderr)
    done = act_like_an_agent()
    if KIND == "codex":
        assert argv[:2] == ["exec", "--json"], argv
        prompt = argv[-1]
        thread = argv[-2] if "resume" in argv and argv[-2] != "--last" else "th_" + uuid.uuid4().hex[:12]
        emit({"type": "thread.started", "thread_id": thread})
        emit({"type": "turn.started"})
        emit({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "thinking"}})
        emit({"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": "ls", "aggregated_output": "system\n", "exit_code": 0, "status": "completed"}})
        emit({"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": f"codex turn done ({len(prompt)} chars): {done}"}})
        emit({"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5}})
    elif KIND == "claude":
        assert argv[:4] == ["--print", "--output-format", "stream-json", "--verbose"], argv
        session = option(argv, "--resume") or str(uuid.uuid4())
        emit({"type": "system", "subtype": "init", "session_id": session, "tools": ["Bash"], "model": "fake"})
        emit({"type": "assistant", "message": {"id": "msg_1", "role": "assistant", "content": [{"type": "text", "text": "working"}]}, "session_id": session})
        emit({"type": "result", "subtype": "success", "is_error": False, "result": f"claude turn done ({len(stdin)} chars): {done}", "session_id": session, "total_cost_usd": 0.0125, "num_turns": 3})
    else:
        prompt = option(argv, "-p")
        session = option(argv, "-S")
        if session is None:
            index = Path.home() / ".kimi-code" / "session_index.jsonl"
            session = "session_" + uuid.uuid4().hex[:8]
            if "-C" in argv and index.exists():
                session = json.loads(index.read_text().splitlines()[-1])["sessionId"]
            index.parent.mkdir(parents=True, exist_ok=True)
            with index.open("a") as f:
                f.write(json.dumps({"sessionId": session, "workDir": os.getcwd()}) + "\n")
        emit({"role": "assistant", "content": "Let me look.", "tool_calls": [{"type": "function", "id": "tc_1", "function": {"name": "Shell", "arguments": "{\"command\": \"ls\"}"}}]})
        emit({"role": "tool", "tool_call_id": "tc_1", "content": "system"})
        emit({"role": "assistant", "content": [{"type": "text", "text": f"kimi turn done ({len(prompt)} chars): {done}"}]})
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
