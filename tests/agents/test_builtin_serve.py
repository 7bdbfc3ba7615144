"""The JSONL loop of the built-in agents: one reply line per prompt line."""

from __future__ import annotations

import io
import json

from evopolicygym.agents.builtin import CannotPlay, serve


class Scripted:
    """A turn taker that plays the given outcomes in order (text, or an exception to raise)."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)

    def turn(self) -> str:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def replies(agent, prompts: int) -> list[dict]:
    stdin = io.StringIO("".join(json.dumps({"turn": n}) + "\n" for n in range(prompts)))
    stdout = io.StringIO()
    assert serve(agent, stdin, stdout) == 0
    return [json.loads(line) for line in stdout.getvalue().splitlines()]


def test_a_failing_turn_asks_for_a_retry_and_the_session_goes_on():
    first, second = replies(Scripted(RuntimeError("judge busy"), "submitted"), 2)
    assert first["stop"] is False and first["data"]["retryable"] is True
    assert first["data"]["error"] == "RuntimeError: judge busy"
    assert second == {"turn": 1, "text": "submitted", "stop": False}


def test_cannot_play_stops_the_session_without_a_retry():
    (reply,) = replies(Scripted(CannotPlay("no Text actions")), 1)
    assert reply["stop"] is True and reply["data"] == {
        "error": "no Text actions",
        "retryable": False,
    }
    assert reply["text"] == "stopping: no Text actions"
