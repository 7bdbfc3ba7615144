"""The agent side of a run across restarts: every start of the harness, its agent session, and
what each session spent (turns, tokens, cost, wall time).

Kept in the run's private state (``.judge/history.json``, rewritten atomically after every turn),
so that a run killed at any moment and resumed still counts every turn it sent and every second
it ran, and so that the resumed harness knows which agent session to continue.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ._session import AgentSession, Reply

# While a turn runs, the history is saved this often (bounds what a SIGKILL loses).
HEARTBEAT_SECONDS = 5.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class SessionRecord(BaseModel):
    """One agent session started by one harness start.

    ``turns`` counts every prompt sent (retries included; a turn cut short by a kill counts);
    ``resume_id`` is the agent CLI's own session id, which the next start continues; ``reason``
    is how the session ended (a transcript reason), None if the harness died first.
    ``usage`` sums the integer counters of every reply's ``data.usage`` (tokens) and
    ``cost_usd`` every ``data.cost_usd``.
    """

    key: str | None = None
    resume_id: str | None = None
    resumed: bool = False
    started_at: str = Field(default_factory=_now)
    turns: int = 0
    failed_turns: int = 0
    timed_out_turns: int = 0
    reason: str | None = None
    wall_time_seconds: float = 0.0
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None


class Attempt(BaseModel):
    """One start of the harness on this run (the first, then one per resume)."""

    started_at: str = Field(default_factory=_now)
    wall_time_seconds: float = 0.0
    session: SessionRecord | None = None


class RunHistory:
    """``.judge/history.json``; also the observer :func:`drive` reports turns to."""

    def __init__(self, path: Path, attempts: list[Attempt]):
        self.path = path
        self.attempts = attempts
        self._clock = time.monotonic()
        self._session_clock = 0.0
        self._lock = threading.Lock()
        self._turn_running = threading.Event()
        self._beat: threading.Thread | None = None

    @classmethod
    def open(cls, path: Path) -> RunHistory:
        """Load the history (empty when the file does not exist) and begin a new attempt."""
        attempts: list[Attempt] = []
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            attempts = [Attempt.model_validate(a) for a in data.get("attempts", [])]
        history = cls(path, attempts)
        history.attempts.append(Attempt())
        history.save()
        return history

    @property
    def current(self) -> Attempt:
        return self.attempts[-1]

    def previous_session(self) -> SessionRecord | None:
        """The latest session of an earlier attempt, if any."""
        for attempt in reversed(self.attempts[:-1]):
            if attempt.session is not None:
                return attempt.session
        return None

    def total_turns(self) -> int:
        return sum(a.session.turns for a in self.attempts if a.session is not None)

    def total_wall_seconds(self) -> float:
        self._tick()
        return round(sum(a.wall_time_seconds for a in self.attempts), 3)

    def save(self) -> None:
        with self._lock:
            self._tick()
            body = json.dumps({"attempts": [a.model_dump() for a in self.attempts]}, indent=2)
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".history.")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body + "\n")
            os.replace(temporary, self.path)

    def _heartbeat(self) -> None:
        """Save every ``HEARTBEAT_SECONDS`` while a turn runs, so that a SIGKILL mid-turn loses
        at most that much of the run's wall time."""
        while self._turn_running.is_set():
            time.sleep(HEARTBEAT_SECONDS)
            if self._turn_running.is_set():
                self.save()

    def _tick(self) -> None:
        self.current.wall_time_seconds = round(time.monotonic() - self._clock, 3)
        session = self.current.session
        if session is not None and session.reason is None and self._session_clock:
            session.wall_time_seconds = round(time.monotonic() - self._session_clock, 3)

    # -- observer of drive() ----------------------------------------------------------------------

    def session_started(self, session: AgentSession, resumed: bool) -> None:
        self._session_clock = time.monotonic()
        self.current.session = SessionRecord(
            key=session.key, resume_id=getattr(session, "resume_id", None), resumed=resumed
        )
        self.save()

    def turn_started(self) -> None:
        assert self.current.session is not None
        self.current.session.turns += 1
        self.save()
        self._turn_running.set()
        if self._beat is None or not self._beat.is_alive():
            self._beat = threading.Thread(target=self._heartbeat, name="history", daemon=True)
            self._beat.start()

    def turn_ended(self, session: AgentSession, reply: Reply | None) -> None:
        self._turn_running.clear()
        record = self.current.session
        assert record is not None
        record.key = session.key
        record.resume_id = getattr(session, "resume_id", None) or record.resume_id
        if reply is None or reply.needs_retry() or reply.stop:
            record.failed_turns += 1
        if reply is not None:
            if reply.data.get("timed_out") is True:
                record.timed_out_turns += 1
            _add_usage(record, reply.data)
        self.save()

    def session_ended(self, reason: str) -> None:
        if self.current.session is not None:
            self._tick()
            self.current.session.reason = reason
        self.save()

    # -- run.json ---------------------------------------------------------------------------------

    def agent_totals(self) -> dict[str, Any]:
        """Fields of ``run.json``'s ``agent``: sums over every session, and the sessions."""
        self._tick()
        sessions = [a.session for a in self.attempts if a.session is not None]
        usage: dict[str, int] = {}
        for record in sessions:
            for key, value in record.usage.items():
                usage[key] = usage.get(key, 0) + value
        costs = [r.cost_usd for r in sessions if r.cost_usd is not None]
        return {
            "turns": sum(r.turns for r in sessions),
            "usage": usage,
            "cost_usd": round(sum(costs), 6) if costs else None,
            "wall_time_seconds": round(sum(r.wall_time_seconds for r in sessions), 3),
            "sessions": [r.model_dump() for r in sessions],
        }


def _add_usage(record: SessionRecord, data: dict[str, Any]) -> None:
    usage = data.get("usage")
    if isinstance(usage, dict):
        for key, value in usage.items():
            if isinstance(value, int) and not isinstance(value, bool):
                record.usage[key] = record.usage.get(key, 0) + value
    cost = data.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        record.cost_usd = round((record.cost_usd or 0.0) + float(cost), 6)
