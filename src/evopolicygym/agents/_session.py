"""The session contract every agent adapter implements (reference spec §4.1)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from ._launch import Launch

# Seconds one turn may take unless [agent] turn_timeout says otherwise: a hung CLI is killed
# (with its process group) and the turn counts as failed and is retried.
DEFAULT_TURN_TIMEOUT = 7200.0


class Reply(BaseModel):
    """The end of one agent turn (not of the session).

    ``stop`` means the session cannot continue. ``data`` carries adapter facts; the loop
    retries a turn whose data has ``retryable: true``, ``timed_out: true`` or a non-zero
    integer ``exit_code``.
    """

    turn: int
    text: str = ""
    stop: bool = False
    data: dict[str, Any] = Field(default_factory=dict)

    def needs_retry(self) -> bool:
        exit_code = self.data.get("exit_code")
        return (
            self.data.get("retryable") is True
            or self.data.get("timed_out") is True
            or (isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0)
        )


class AgentSession(Protocol):
    """One logical agent session; each start of a run's harness starts one, continuing the
    previous one when the adapter can (see :class:`Launch` ``resume``). Adapters that can resume
    also expose ``resume_id``: the agent's own session id, or None."""

    key: str

    def step(self, message: str) -> Reply:
        """Send ``message`` and block until the agent ends its turn. May raise on failure."""
        ...

    def close(self) -> None:
        """Release every process and file of the session. Safe to call twice."""
        ...


class SessionObserver(Protocol):
    """Hears what :func:`drive` does with a session (see :class:`RunHistory`)."""

    def session_started(self, session: AgentSession, resumed: bool) -> None: ...

    def turn_started(self) -> None: ...

    def turn_ended(self, session: AgentSession, reply: Reply | None) -> None:
        """``reply`` is None when the step raised."""
        ...

    def session_ended(self, reason: str) -> None: ...


class AgentHarness(Protocol):
    """Starts sessions of one kind of agent."""

    name: str

    def start(self, launch: Launch) -> AgentSession: ...


TranscriptReason = Literal["done", "turn_limit", "session_stop", "retry_exhausted"]


class Transcript(BaseModel):
    """How the agent loop ended.

    ``done``: the run finished (budget spent or run closed). ``turn_limit``: the turn guard ran
    out first. ``session_stop``: the agent said it cannot continue. ``retry_exhausted``: a turn
    kept failing after every retry. ``session`` is the session key, or None when no session was
    started.
    """

    reason: TranscriptReason
    turns: int
    session: str | None
    replies: list[Reply] = Field(default_factory=list)
