"""The agent loop: one session per run, one continue prompt per turn, retries with backoff."""

from __future__ import annotations

import time
from collections.abc import Callable

from ._launch import Launch
from ._session import AgentHarness, AgentSession, Reply, SessionObserver, Transcript

Log = Callable[[str, dict], None]

# How often a backoff wait re-checks whether the run finished meanwhile.
_DONE_POLL_SECONDS = 0.2


def drive(
    harness: AgentHarness,
    launch: Launch,
    *,
    done: Callable[[], bool],
    limit: int,
    retries: int = 0,
    backoff: float = 1.0,
    log: Log | None = None,
    observer: SessionObserver | None = None,
) -> Transcript:
    """Run the agent until the run is done, the turn limit is reached or the session stops.

    ``done()`` is checked before starting the session, before and after every turn and while
    waiting to retry. A failed turn (an exception, or a reply that asks for a retry, see
    :meth:`Reply.needs_retry`) is retried up to ``retries`` times after sleeping
    ``backoff * 2**attempt`` seconds, with the recovery prompt. ``log(event, fields)`` receives
    ``agent.retry`` and ``agent.retry.exhausted``. The session is always closed. Exceptions of
    ``harness.start`` propagate (the agent could not be launched at all).

    The first message is :meth:`Launch.first_prompt` (the resume prompt when ``launch.resume``
    is set). ``observer`` hears of the session's start, of every prompt sent (retries included)
    and of the end, so that a run killed mid-turn still knows what its agent spent.
    """
    if limit < 1:
        raise ValueError(f"turn limit must be at least 1, got {limit}")
    emit = log or (lambda event, fields: None)
    if done():
        return Transcript(reason="done", turns=0, session=None)
    session = harness.start(launch)
    if observer is not None:
        observer.session_started(session, resumed=launch.resume is not None)
        session = _Observed(session, observer)
    replies: list[Reply] = []

    def finish(reason) -> Transcript:
        if observer is not None:
            observer.session_ended(reason)
        return Transcript(reason=reason, turns=len(replies), session=session.key, replies=replies)

    try:
        message = launch.first_prompt()
        for turn in range(limit):
            if done():
                return finish("done")
            reply, exhausted = _step_with_retries(
                session,
                message,
                launch,
                turn=turn,
                done=done,
                retries=retries,
                backoff=backoff,
                log=emit,
            )
            if reply is None:
                return finish("done" if done() else "retry_exhausted")
            replies.append(reply)
            if reply.stop:
                return finish("retry_exhausted" if exhausted else "session_stop")
            if done():
                return finish("done")
            message = launch.continue_prompt()
        return finish("turn_limit")
    finally:
        session.close()


def _step_with_retries(
    session: AgentSession,
    message: str,
    launch: Launch,
    *,
    turn: int,
    done: Callable[[], bool],
    retries: int,
    backoff: float,
    log: Log,
) -> tuple[Reply | None, bool]:
    """Loop turn ``turn`` with retries. Returns ``(reply, exhausted)``; the reply is None when the run
    finished while waiting to retry."""
    attempt = 0
    while True:
        try:
            reply = session.step(message)
        except Exception as exc:
            failure = {"error": f"{type(exc).__name__}: {exc}"}
            if attempt >= retries:
                log("agent.retry.exhausted", {"attempt": attempt, **failure})
                data = {**failure, "retry_exhausted": True}
                return Reply(turn=turn, stop=True, data=data), True
        else:
            if not reply.needs_retry():
                return reply, False
            failure = {"reply": reply.model_dump()}
            if attempt >= retries:
                log("agent.retry.exhausted", {"attempt": attempt, **failure})
                return reply, True
        delay = backoff * 2**attempt
        log("agent.retry", {"attempt": attempt, "delay_seconds": delay, **failure})
        if _wait_unless_done(delay, done):
            return None, False
        attempt += 1
        message = launch.recovery_prompt()


def _wait_unless_done(seconds: float, done: Callable[[], bool]) -> bool:
    """Sleep ``seconds``; return True as soon as ``done()`` holds (also before sleeping)."""
    deadline = time.monotonic() + seconds
    while True:
        if done():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(left, _DONE_POLL_SECONDS))


class _Observed:
    """A session that reports every step to an observer."""

    def __init__(self, session: AgentSession, observer: SessionObserver):
        self._session = session
        self._observer = observer

    @property
    def key(self) -> str:
        return self._session.key

    def step(self, message: str) -> Reply:
        self._observer.turn_started()
        reply = None
        try:
            reply = self._session.step(message)
            return reply
        finally:
            self._observer.turn_ended(self._session, reply)

    def close(self) -> None:
        self._session.close()
