"""The JSONL side of a built-in agent: read one prompt per line, play one turn, reply."""

from __future__ import annotations

import json
import sys
import traceback
from typing import IO, Protocol


class CannotPlay(Exception):
    """The agent cannot act in this environment at all (e.g. its policy cannot produce the
    action type). Ends the session at once instead of retrying every turn."""


class TurnTaker(Protocol):
    def turn(self) -> str:
        """Play one turn (a few submits at most) and describe it in one or two lines. Raises
        :class:`CannotPlay` when no turn can ever succeed in this environment."""
        ...


def serve(agent: TurnTaker, stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout) -> int:
    """Answer every prompt line with one reply line until stdin closes. A turn that raises is
    reported as retryable (the traceback goes to stderr) instead of killing the session, except
    :class:`CannotPlay`, which is reported with ``stop`` set and ends the session."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            turn = int(json.loads(line).get("turn", 0))
        except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
            turn = 0
        try:
            reply = {"turn": turn, "text": agent.turn(), "stop": False}
        except CannotPlay as exc:
            print(f"stopping: {exc}", file=sys.stderr)
            reply = {"turn": turn, "text": f"stopping: {exc}", "stop": True}
            reply["data"] = {"error": str(exc), "retryable": False}
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            reply = {
                "turn": turn,
                "text": f"turn failed: {type(exc).__name__}: {exc}",
                "stop": False,
                "data": {"retryable": True, "error": f"{type(exc).__name__}: {exc}"},
            }
        stdout.write(json.dumps(reply, sort_keys=True) + "\n")
        stdout.flush()
    return 0
