"""The persistent JSONL command adapter, against real child processes."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time

import pytest

from evopolicygym.agents import AgentCommandError, CommandHarness, Launch, drive

ECHO_AGENT = """
import json, os, sys
for line in sys.stdin:
    prompt = json.loads(line)
    print(f"turn {prompt['turn']} in {os.getcwd()}", file=sys.stderr)
    reply = {
        "turn": prompt["turn"],
        "text": prompt["message"][:20],
        "data": {"api": os.environ["EVOPOLICYGYM_SUBMIT_URL"], "pid": os.getpid(),
                 "extra": os.environ.get("EXTRA_SETTING")},
    }
    print(json.dumps(reply))  # no flush: the adapter makes Python agents unbuffered
"""


@pytest.fixture
def launch(tmp_path) -> Launch:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return Launch(api_url="http://127.0.0.1:9", workspace=workspace, logs=tmp_path / "logs")


def agent(tmp_path, source: str) -> list[str]:
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(source))
    return [sys.executable, str(path)]


def transcript_rows(launch: Launch, name: str = "agent") -> list[dict]:
    lines = (launch.logs / f"{name}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_one_process_answers_every_turn_in_the_workspace(tmp_path, launch):
    harness = CommandHarness(agent(tmp_path, ECHO_AGENT), env={"EXTRA_SETTING": "on"})
    session = harness.start(launch)
    try:
        first = session.step("hello agent")
        second = session.step("second message")
    finally:
        session.close()
    assert (first.turn, first.text, first.stop) == (0, "hello agent", False)
    assert (second.turn, second.text) == (1, "second message")
    assert first.data["pid"] == second.data["pid"]
    assert session.key == f"agent:{first.data['pid']}"
    assert first.data["api"] == "http://127.0.0.1:9/submit"
    assert first.data["extra"] == "on"
    stderr = (launch.logs / "agent.stderr.txt").read_text()
    assert f"turn 0 in {launch.workspace}" in stderr and "turn 1 in" in stderr
    kinds = [(row["kind"], row["turn"]) for row in transcript_rows(launch)]
    assert kinds == [
        ("prompt", 0),
        ("stdout", 0),
        ("reply", 0),
        ("prompt", 1),
        ("stdout", 1),
        ("reply", 1),
        ("exit", 2),
    ]
    prompt_row = transcript_rows(launch)[0]
    assert prompt_row["message"] == "hello agent"


def test_reply_fields_are_normalized(tmp_path, launch):
    source = """
    import json, sys
    replies = iter([
        {"text": {"structured": 1}, "stop": 1, "data": None},
        {"turn": 41, "text": None},
    ])
    for line in sys.stdin:
        print(json.dumps(next(replies)), flush=True)
    """
    session = CommandHarness(agent(tmp_path, source)).start(launch)
    try:
        first, second = session.step("a"), session.step("b")
    finally:
        session.close()
    assert (first.turn, first.text, first.stop, first.data) == (0, '{"structured": 1}', True, {})
    assert (second.turn, second.text, second.stop) == (41, "", False)


def test_garbage_on_stdout_is_an_error_not_a_hang(tmp_path, launch):
    source = """
    import sys
    for line in sys.stdin:
        print("thinking about it...", flush=True)
    """
    session = CommandHarness(agent(tmp_path, source)).start(launch)
    try:
        with pytest.raises(AgentCommandError, match=r"not JSON.*stderr"):
            session.step("go")
    finally:
        session.close()


def test_non_object_reply_is_an_error(tmp_path, launch):
    source = """
    import sys
    for line in sys.stdin:
        print("[1, 2]", flush=True)
    """
    session = CommandHarness(agent(tmp_path, source)).start(launch)
    try:
        with pytest.raises(AgentCommandError, match="must be a JSON object"):
            session.step("go")
    finally:
        session.close()


def test_exit_before_reply_is_reported_with_the_exit_code(tmp_path, launch):
    source = """
    import sys
    sys.stdin.readline()
    print("giving up", file=sys.stderr)
    sys.exit(3)
    """
    session = CommandHarness(agent(tmp_path, source)).start(launch)
    try:
        with pytest.raises(AgentCommandError, match=r"exited before reply \(exit code 3\)"):
            session.step("go")
        # Later turns fail at once instead of waiting on a dead process.
        started = time.monotonic()
        with pytest.raises(AgentCommandError, match="exited before reply"):
            session.step("again")
        assert time.monotonic() - started < 1
    finally:
        session.close()
    assert "giving up" in (launch.logs / "agent.stderr.txt").read_text()


def test_missing_program_is_a_clear_error(launch):
    harness = CommandHarness(["/nonexistent/agent-binary"])
    with pytest.raises(AgentCommandError, match="cannot start the agent command"):
        harness.start(launch)


def test_turn_timeout_kills_the_group_and_a_new_process_resumes(tmp_path, launch):
    marker = tmp_path / "child.pid"
    source = f"""
    import json, os, subprocess, sys, time
    for line in sys.stdin:
        prompt = json.loads(line)
        if prompt["turn"] == 0:
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            open({str(marker)!r}, "w").write(str(child.pid))
            time.sleep(60)
        print(json.dumps({{"text": f"{{prompt['type']}} {{prompt['turn']}}", "data": {{"pid": os.getpid()}}}}), flush=True)
    """
    session = CommandHarness(agent(tmp_path, source), turn_timeout=1.0).start(launch)
    try:
        hung = session.step("slow")
        assert hung.data == {"timed_out": True, "timeout_seconds": 1.0}
        assert hung.needs_retry()
        child = int(marker.read_text())
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _alive(child):
            time.sleep(0.05)
        assert not _alive(child)  # the turn's whole group is gone
        answer = session.step("again")
        following = session.step("more")
    finally:
        session.close()
    assert (answer.text, following.text) == ("resume 1", "prompt 2")
    assert answer.data["pid"] == following.data["pid"]
    kinds = [row["kind"] for row in transcript_rows(launch)]
    assert kinds[:5] == ["prompt", "timeout", "restart", "resume", "stdout"]


def test_a_resumed_run_starts_the_command_agent_with_a_resume_line(tmp_path, launch):
    from evopolicygym.agents import Resume

    source = """
    import json, sys
    for line in sys.stdin:
        prompt = json.loads(line)
        print(json.dumps({"text": f"{prompt['type']} {prompt['turn']}"}), flush=True)
    """
    resumed = launch.model_copy(update={"resume": Resume(turns=5, remaining_budget=3, budget=8)})
    session = CommandHarness(agent(tmp_path, source)).start(resumed)
    try:
        first = session.step(resumed.first_prompt())
        second = session.step("go on")
    finally:
        session.close()
    assert (first.text, second.text) == ("resume 5", "prompt 6")
    assert "3 of 8 episodes remain" in transcript_rows(launch)[0]["message"]


def test_close_stops_a_stubborn_agent_and_its_children(tmp_path, launch):
    marker = tmp_path / "child.pid"
    source = f"""
    import json, signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    open({str(marker)!r}, "w").write(str(child.pid))
    for line in sys.stdin:
        print(json.dumps({{"text": "ok"}}), flush=True)
    time.sleep(60)  # ignores EOF and SIGTERM
    """
    session = CommandHarness(agent(tmp_path, source)).start(launch)
    assert session.step("hi").text == "ok"
    started = time.monotonic()
    session.close()
    session.close()  # idempotent
    assert time.monotonic() - started < 5
    child = int(marker.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_drive_with_a_real_command_agent_that_stops(tmp_path, launch):
    source = """
    import json, sys
    for line in sys.stdin:
        turn = json.loads(line)["turn"]
        print(json.dumps({"turn": turn, "text": "step", "stop": turn == 2}), flush=True)
    """
    transcript = drive(
        CommandHarness(agent(tmp_path, source), name="mine"),
        launch,
        done=lambda: False,
        limit=10,
    )
    assert transcript.reason == "session_stop" and transcript.turns == 3
    assert transcript.session.startswith("mine:")
    assert (launch.logs / "mine.jsonl").exists() and (launch.logs / "mine.stderr.txt").exists()


# Prints far more than a reply without a newline, then a valid reply for the next turn.
FLOODS_ITS_STDOUT = """
import json, sys
for line in sys.stdin:
    turn = json.loads(line)["turn"]
    if turn == 0:
        sys.stdout.write("x" * (64 * 2**20))
        sys.stdout.write("\\n")
    print(json.dumps({"turn": turn, "text": "ok"}), flush=True)
"""


def test_an_overlong_reply_line_fails_its_turn_without_the_judge_holding_it(tmp_path, launch):
    import resource

    harness = CommandHarness(agent(tmp_path, FLOODS_ITS_STDOUT))
    session = harness.start(launch)
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(AgentCommandError, match="longer than"):
            session.step("first")
        grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        # The turn's own reply line comes next, and the session goes on.
        assert session.step("second").text == "ok"
    finally:
        session.close()
    assert grown_kib < 32 * 1024  # the 64 MiB line was never held whole
