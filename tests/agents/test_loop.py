"""The agent loop (drive): one session, continue prompts, stops, retries, done checks."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from evopolicygym.agents import Launch, Reply, drive

Behaviour = Callable[[int, str], Reply]


class ScriptedSession:
    """A session whose turns follow ``script``: each entry is a Reply, an exception to raise,
    or a callable of (turn, message)."""

    def __init__(self, script: list) -> None:
        self.key = "scripted:1"
        self.script = list(script)
        self.messages: list[str] = []
        self.closed = 0

    def step(self, message: str) -> Reply:
        turn = len(self.messages)
        self.messages.append(message)
        entry = self.script.pop(0) if self.script else Reply(turn=turn, text="idle")
        if isinstance(entry, Exception):
            raise entry
        if callable(entry):
            return entry(turn, message)
        return entry

    def close(self) -> None:
        self.closed += 1


class ScriptedHarness:
    name = "scripted"

    def __init__(self, script: list) -> None:
        self.script = script
        self.sessions: list[ScriptedSession] = []

    def start(self, launch: Launch) -> ScriptedSession:
        session = ScriptedSession(self.script)
        self.sessions.append(session)
        return session


@pytest.fixture
def launch(tmp_path) -> Launch:
    return Launch(api_url="http://127.0.0.1:9", workspace=tmp_path / "ws", logs=tmp_path / "logs")


def run(harness, launch, *, done=lambda: False, limit=5, retries=0, backoff=0.0):
    events: list[tuple[str, dict]] = []
    transcript = drive(
        harness,
        launch,
        done=done,
        limit=limit,
        retries=retries,
        backoff=backoff,
        log=lambda event, fields: events.append((event, fields)),
    )
    return transcript, events


def test_done_before_start_never_starts_a_session(launch):
    harness = ScriptedHarness([])
    transcript, _ = run(harness, launch, done=lambda: True)
    assert (transcript.reason, transcript.turns, transcript.session) == ("done", 0, None)
    assert harness.sessions == []


def test_one_session_initial_then_continue_prompts_until_turn_limit(launch):
    harness = ScriptedHarness([])
    transcript, events = run(harness, launch, limit=3)
    assert transcript.reason == "turn_limit" and transcript.turns == 3
    [session] = harness.sessions
    assert transcript.session == session.key
    assert session.messages == [
        launch.initial_prompt(),
        launch.continue_prompt(),
        launch.continue_prompt(),
    ]
    assert session.closed == 1 and events == []


def test_done_after_a_turn_ends_the_loop(launch):
    submits = []

    def spend(turn, message):
        submits.append(turn)
        return Reply(turn=turn, text="submitted")

    harness = ScriptedHarness([spend, spend, spend])
    transcript, _ = run(harness, launch, done=lambda: len(submits) >= 2, limit=10)
    assert transcript.reason == "done" and transcript.turns == 2
    assert [r.text for r in transcript.replies] == ["submitted", "submitted"]


def test_stop_reply_ends_the_session(launch):
    harness = ScriptedHarness([Reply(turn=0), Reply(turn=1, text="cannot go on", stop=True)])
    transcript, _ = run(harness, launch)
    assert transcript.reason == "session_stop" and transcript.turns == 2
    assert harness.sessions[0].closed == 1


def test_failed_turns_are_retried_with_the_recovery_prompt_and_backoff(launch):
    harness = ScriptedHarness(
        [
            RuntimeError("network blip"),
            Reply(turn=1, data={"exit_code": 1}, stop=True),
            Reply(turn=2, data={"timed_out": True}),
            Reply(turn=3, text="recovered"),
        ]
    )
    started = time.monotonic()
    transcript, events = run(harness, launch, limit=1, retries=3, backoff=0.05)
    elapsed = time.monotonic() - started
    assert transcript.reason == "turn_limit" and transcript.turns == 1
    assert transcript.replies[0].text == "recovered"
    session = harness.sessions[0]
    assert session.messages[0] == launch.initial_prompt()
    assert session.messages[1:] == [launch.recovery_prompt()] * 3
    assert [e for e, _ in events] == ["agent.retry"] * 3
    assert [f["attempt"] for _, f in events] == [0, 1, 2]
    assert [f["delay_seconds"] for _, f in events] == [0.05, 0.1, 0.2]
    assert events[0][1]["error"] == "RuntimeError: network blip"
    assert events[1][1]["reply"]["data"] == {"exit_code": 1}
    assert elapsed >= 0.35


def test_retryable_flag_and_exit_code_zero(launch):
    harness = ScriptedHarness(
        [Reply(turn=0, data={"retryable": True}), Reply(turn=1, data={"exit_code": 0})]
    )
    transcript, events = run(harness, launch, limit=1, retries=1)
    assert transcript.replies[0].data == {"exit_code": 0}
    assert [e for e, _ in events] == ["agent.retry"]


def test_exceptions_past_the_retries_exhaust_the_loop(launch):
    harness = ScriptedHarness([ValueError("bad"), ValueError("bad again")])
    transcript, events = run(harness, launch, retries=1)
    assert transcript.reason == "retry_exhausted" and transcript.turns == 1
    assert transcript.replies[0].stop
    assert transcript.replies[0].data == {"error": "ValueError: bad again", "retry_exhausted": True}
    assert [e for e, _ in events] == ["agent.retry", "agent.retry.exhausted"]
    assert harness.sessions[0].closed == 1


def test_a_failing_stop_reply_past_the_retries_exhausts_the_loop(launch):
    failing = Reply(turn=0, stop=True, data={"exit_code": 2})
    harness = ScriptedHarness([failing, failing])
    transcript, events = run(harness, launch, retries=1)
    assert transcript.reason == "retry_exhausted"
    assert transcript.replies[-1].data == {"exit_code": 2}
    assert events[-1][0] == "agent.retry.exhausted"


def test_a_retryable_reply_without_stop_past_the_retries_lets_the_loop_go_on(launch):
    harness = ScriptedHarness([Reply(turn=0, data={"timed_out": True}), Reply(turn=1)])
    transcript, _ = run(harness, launch, limit=2, retries=0)
    assert transcript.reason == "turn_limit" and transcript.turns == 2


def test_done_while_waiting_to_retry_ends_the_loop_early(launch):
    finished_at = time.monotonic() + 0.3
    harness = ScriptedHarness([RuntimeError("down")] * 5)
    started = time.monotonic()
    transcript, events = run(
        harness, launch, done=lambda: time.monotonic() > finished_at, retries=4, backoff=10.0
    )
    assert transcript.reason == "done" and transcript.turns == 0
    assert time.monotonic() - started < 5
    assert [e for e, _ in events] == ["agent.retry"]
    assert harness.sessions[0].closed == 1


def test_session_is_closed_when_the_loop_itself_fails(launch):
    def explode():
        raise KeyboardInterrupt

    harness = ScriptedHarness([lambda turn, message: explode()])
    with pytest.raises(KeyboardInterrupt):
        run(harness, launch)
    assert harness.sessions[0].closed == 1


def test_turn_limit_must_be_positive(launch):
    with pytest.raises(ValueError, match="at least 1"):
        run(ScriptedHarness([]), launch, limit=0)
