"""Codex, Claude Code and Kimi Code adapters, against fake CLIs that print the real formats."""

from __future__ import annotations

import json

import pytest

from evopolicygym.agents import AgentCommandError, Launch, Resume, drive, make_harness
from evopolicygym.protocol import AgentSection
from fake_agent_clis import install_fake_cli


@pytest.fixture
def launch(tmp_path) -> Launch:
    workspace = tmp_path / "workspace"
    (workspace / "system").mkdir(parents=True)
    return Launch(api_url="http://127.0.0.1:9", workspace=workspace, logs=tmp_path / "logs")


@pytest.fixture
def record(tmp_path, monkeypatch):
    """Where the fakes log their calls; also keeps them away from any judge and real HOME."""
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_CLI_RECORD", str(path))
    monkeypatch.setenv("FAKE_CLI_SUBMIT", "0")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return lambda: [json.loads(line) for line in path.read_text().splitlines()]


def harness_for(kind: str, tmp_path, **fields):
    binary = install_fake_cli(kind, tmp_path / "bin")
    return make_harness(AgentSection(kind=kind, binary=str(binary), **fields))


def two_turns(harness, launch):
    session = harness.start(launch)
    try:
        return session, session.step("first prompt"), session.step("second prompt")
    finally:
        session.close()


def turn_files(launch: Launch, name: str, turn: int) -> dict[str, str]:
    folder = launch.logs / f"{name}_turns"
    suffixes = ("prompt.txt", "command.json", "stream.jsonl", "stderr.txt", "txt")
    return {s: (folder / f"turn_{turn:03d}.{s}").read_text() for s in suffixes}


def test_codex_argv_resume_and_session_discovery(tmp_path, launch, record):
    harness = harness_for("codex", tmp_path, model="gpt-test", args=["--profile", "bench"])
    session, first, second = two_turns(harness, launch)
    calls = record()
    binary = str(tmp_path / "bin" / "codex")
    common = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--cd",
        str(launch.workspace),
        "--sandbox",
        "workspace-write",
        "--config",
        'approval_policy="never"',
        "--model",
        "gpt-test",
    ]
    thread = first.data["codex_session"]
    assert thread.startswith("th_")
    assert calls[0]["argv"] == [*common, "--profile", "bench", "first prompt"]
    assert calls[1]["argv"] == [*common, "resume", "--profile", "bench", thread, "second prompt"]
    assert second.data["codex_session"] == thread and session.key == f"codex:{thread}"
    assert first.text == f"codex turn 1 of {thread} (12 chars): no judge contacted"
    assert second.text.startswith(f"codex turn 2 of {thread}")
    assert first.data["usage"]["output_tokens"] == 5
    assert (first.stop, first.data["exit_code"], first.data["timed_out"]) == (False, 0, False)
    assert calls[0]["stdin"] == "" and calls[0]["cwd"] == str(launch.workspace)
    assert calls[0]["env"]["EVOPOLICYGYM_AGENT"] == "codex"
    assert calls[1]["env"]["EVOPOLICYGYM_SESSION"] == thread
    assert calls[0]["env"]["EVOPOLICYGYM_SUBMIT_URL"] == "http://127.0.0.1:9/submit"
    files = turn_files(launch, "codex", 1)
    assert files["prompt.txt"] == "second prompt"
    assert json.loads(files["command.json"]) == [binary, *calls[1]["argv"]]
    assert '"thread.started"' in files["stream.jsonl"]
    assert "fake codex starting" in files["stderr.txt"]
    assert "## response\ncodex turn 2 of" in files["txt"] and "exit_code: 0" in files["txt"]


def test_codex_bypass_replaces_sandbox_and_approval(tmp_path, launch, record):
    harness = harness_for("codex", tmp_path, bypass=True, name="gpt-5")
    two_turns(harness, launch)
    argv = record()[0]["argv"]
    assert "--dangerously-bypass-approvals-and-sandbox" in argv
    assert "--sandbox" not in argv and not any("approval_policy" in a for a in argv)
    # A configured name renames the log folder.
    assert (launch.logs / "gpt-5_turns" / "turn_000.txt").exists()


def test_claude_prompt_on_stdin_resume_cost_and_turns(tmp_path, launch, record):
    harness = harness_for("claude", tmp_path, tools=["Bash", "Read"], model="opus")
    session, first, second = two_turns(harness, launch)
    calls = record()
    session_id = first.data["claude_session"]
    head = ["--print", "--output-format", "stream-json", "--verbose"]
    tail = ["--permission-mode", "bypassPermissions", "--allowedTools", "Bash,Read"]
    assert calls[0]["argv"] == [*head, *tail, "--model", "opus"]
    assert calls[1]["argv"] == [*head, "--resume", session_id, *tail, "--model", "opus"]
    assert [c["stdin"] for c in calls] == ["first prompt", "second prompt"]
    assert calls[1]["env"]["EVOPOLICYGYM_SESSION"] == session_id
    assert second.data["claude_session"] == session_id and session.key == f"claude:{session_id}"
    assert first.text == f"claude turn 1 of {session_id} (12 chars): no judge contacted"
    assert first.data["cost_usd"] == 0.0125 and first.data["inner_turns"] == 3
    assert first.data["usage"]["output_tokens"] == 9


def test_claude_default_tools(tmp_path, launch, record):
    two_turns(harness_for("claude", tmp_path), launch)
    argv = record()[0]["argv"]
    assert argv[argv.index("--allowedTools") + 1] == "Bash,Read,Edit,Write,Glob,Grep"


def test_kimi_session_from_its_index_then_resumed_with_S(tmp_path, launch, record):
    harness = harness_for("kimi", tmp_path, model="kimi-code/kimi-for-coding")
    session, first, _ = two_turns(harness, launch)
    calls = record()
    session_id = first.data["kimi_session"]
    assert session_id.startswith("session_")
    model = ["-m", "kimi-code/kimi-for-coding"]
    assert calls[0]["argv"] == ["--output-format", "stream-json", *model, "-p", "first prompt"]
    assert calls[1]["argv"] == [
        "-S",
        session_id,
        "--output-format",
        "stream-json",
        *model,
        "-p",
        "second prompt",
    ]
    assert first.text == f"kimi turn 1 of {session_id} (12 chars): no judge contacted"
    assert first.data["tool_calls"] == 1
    assert session.key == f"kimi:{session_id}"


def test_kimi_without_a_session_id_continues_with_C(tmp_path, launch, record):
    # Point the adapter at an index that never names this workspace.
    harness = harness_for("kimi", tmp_path)
    harness.session_index = tmp_path / "elsewhere.jsonl"
    _, first, _ = two_turns(harness, launch)
    assert first.data["kimi_session"] is None
    assert record()[1]["argv"][0] == "-C"


def test_non_zero_exit_stops_the_turn_and_is_retried(tmp_path, launch, record, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_EXIT", "7")
    harness = harness_for("claude", tmp_path)
    events = []
    transcript = drive(
        harness,
        launch,
        done=lambda: False,
        limit=3,
        retries=1,
        backoff=0.0,
        log=lambda event, fields: events.append(event),
    )
    assert transcript.reason == "retry_exhausted"
    assert transcript.replies[-1].data["exit_code"] == 7
    assert events == ["agent.retry", "agent.retry.exhausted"]
    # The retry resumed the same session with the recovery prompt.
    calls = record()
    assert "--resume" in calls[1]["argv"] and "interrupted" in calls[1]["stdin"]


def test_turn_timeout_kills_the_process_and_reports_124(tmp_path, launch, record, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_SLEEP", "30")
    harness = harness_for("codex", tmp_path, turn_timeout=0.5)
    session = harness.start(launch)
    try:
        reply = session.step("slow")
    finally:
        session.close()
    assert reply.stop and reply.data["timed_out"] is True and reply.data["exit_code"] == 124
    assert reply.data["duration_seconds"] < 10
    assert "timed_out: true" in turn_files(launch, "codex", 0)["txt"]


def test_missing_cli_fails_at_start_with_advice(launch):
    harness = make_harness(AgentSection(kind="codex", binary="/nonexistent/codex"))
    with pytest.raises(AgentCommandError, match="not found on PATH"):
        harness.start(launch)


def test_closed_session_refuses_turns(tmp_path, launch, record):
    session = harness_for("kimi", tmp_path).start(launch)
    session.close()
    with pytest.raises(AgentCommandError, match="closed"):
        session.step("late")


@pytest.mark.parametrize(
    ("kind", "flag"), [("codex", "resume"), ("claude", "--resume"), ("kimi", "-S")]
)
def test_a_resumed_run_continues_the_cli_session(tmp_path, launch, record, kind, flag):
    harness = harness_for(kind, tmp_path)
    session = harness.start(launch)
    try:
        first = session.step("first prompt")
    finally:
        session.close()
    own_id = session.resume_id
    assert own_id and first.text.startswith(f"{kind} turn 1 of {own_id}")
    resumed = launch.model_copy(update={"resume": Resume(session=own_id, turns=1)})
    later = harness.start(resumed)
    try:
        reply = later.step(resumed.first_prompt())
    finally:
        later.close()
    assert reply.text.startswith(f"{kind} turn 2 of {own_id}") and reply.data["exit_code"] == 0
    argv = record()[-1]["argv"]
    assert flag in argv and own_id in argv
    # Turn numbers go on, so the first start's log files are kept.
    assert "interrupted" in turn_files(launch, kind, 1)["prompt.txt"]
    assert turn_files(launch, kind, 0)["prompt.txt"] == "first prompt"


@pytest.mark.parametrize("kind", ["codex", "claude", "kimi"])
def test_resuming_a_session_the_cli_does_not_have_fails_like_the_real_cli(
    tmp_path, launch, record, kind
):
    resumed = launch.model_copy(update={"resume": Resume(session="gone-123", turns=4)})
    session = harness_for(kind, tmp_path).start(resumed)
    try:
        reply = session.step("hello")
    finally:
        session.close()
    assert reply.stop and reply.data["exit_code"] == 1
    assert "no session found for gone-123" in turn_files(launch, kind, 4)["stderr.txt"]


def test_cli_turns_have_a_default_timeout(tmp_path):
    harness = harness_for("codex", tmp_path)
    assert harness.options.turn_timeout == 7200.0
