"""The persistent JSONL command adapter (reference spec §4.2).

One long-lived child process per run. Each turn the adapter writes one line
``{"message": ..., "turn": n, "type": "prompt"}`` to the child's stdin and reads exactly one
JSON object from its stdout: ``{"turn": n, "text": "...", "stop": false, "data": {...}}``
(every field optional). Anything else the child wants to say goes to stderr, which is appended
to ``logs/<name>.stderr.txt``; the conversation is recorded in ``logs/<name>.jsonl``.

The first line a process receives has ``"type": "resume"`` instead of ``"prompt"`` when it
continues a run that an earlier process worked on: after the harness restarted an interrupted
run, or after a turn overran ``turn_timeout``, which kills the process group (the turn counts as
failed and is retried, by a fresh process, with the recovery prompt).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ._launch import Launch
from ._process import signal_group, stop_group
from ._session import DEFAULT_TURN_TIMEOUT, Reply

# Seconds close() waits after closing stdin, then after SIGTERM, before SIGKILL.
_CLOSE_GRACE_SECONDS = 1.0
_EOF = object()
# What the judge holds of an agent's stdout: a reply line of at most this many characters (a
# longer one is dropped as it is read, and its turn fails), and this many lines not yet asked
# for (then the agent's writes wait). An agent printing without end cannot fill the judge's
# memory.
MAX_REPLY_CHARS = 2**20
_QUEUED_LINES = 64
_TOO_LONG = object()


class AgentCommandError(RuntimeError):
    """The agent process could not be started, exited, or broke the JSONL protocol."""


class CommandHarness:
    """Starts one :class:`CommandSession` running ``argv``.

    ``turn_timeout`` (seconds) bounds how long one turn may take; a turn that overruns gets a
    ``timed_out`` reply (which the loop retries) and its process group is killed; the next turn
    starts a new process with a ``resume`` line. ``env`` is added to the inherited environment,
    below the launch variables.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str = "agent",
        turn_timeout: float | None = DEFAULT_TURN_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if not argv:
            raise ValueError("the command agent needs an argv, e.g. ['python', 'agent.py']")
        self.argv = list(argv)
        self.name = name
        self.turn_timeout = turn_timeout
        self.env = dict(env or {})

    def start(self, launch: Launch) -> CommandSession:
        return CommandSession(self, launch)


class CommandSession:
    """A running command agent; see the module docstring for the protocol."""

    resume_id = None  # the process is the session: nothing to continue after it died

    def __init__(self, harness: CommandHarness, launch: Launch) -> None:
        self._name = harness.name
        self._timeout = harness.turn_timeout
        self._argv = [*launch.jail, *harness.argv]
        launch.logs.mkdir(parents=True, exist_ok=True)
        self._stderr_path = launch.logs / f"{self._name}.stderr.txt"
        self._stderr = self._stderr_path.open("ab")
        self._transcript = (launch.logs / f"{self._name}.jsonl").open("a", encoding="utf-8")
        self._cwd = launch.workspace
        # Unbuffered Python agents answer at once even when they forget to flush stdout.
        self._env = {**os.environ, "PYTHONUNBUFFERED": "1", **harness.env, **launch.environ()}
        self._turn = launch.resume.turns if launch.resume else 0
        self._next_type = "resume" if launch.resume else "prompt"
        self._exited = False
        self._closed = False
        try:
            self._spawn()
        except AgentCommandError:
            self._stderr.close()
            self._transcript.close()
            raise
        self.key = f"{self._name}:{self._proc.pid}"

    def _spawn(self) -> None:
        try:
            self._proc = subprocess.Popen(
                self._argv,
                cwd=self._cwd,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
                start_new_session=True,
            )
        except OSError as exc:
            raise AgentCommandError(
                f"cannot start the agent command {self._argv!r}: {exc}. "
                "Check that the program exists and is executable."
            ) from exc
        self._lines: queue.Queue[Any] = queue.Queue(maxsize=_QUEUED_LINES)
        self._reader = threading.Thread(
            target=self._read_stdout, args=(self._proc, self._lines), daemon=True
        )
        self._reader.start()
        self._killed = False

    @staticmethod
    def _read_stdout(proc: subprocess.Popen, lines: queue.Queue) -> None:
        stdout = proc.stdout
        assert stdout is not None
        while line := stdout.readline(MAX_REPLY_CHARS + 1):
            if len(line) > MAX_REPLY_CHARS:
                while (rest := stdout.readline(MAX_REPLY_CHARS)) and not rest.endswith("\n"):
                    pass  # the rest of an overlong line, dropped as it comes
                line = _TOO_LONG
            lines.put(line)
        lines.put(_EOF)

    def _record(self, row: dict[str, Any]) -> None:
        self._transcript.write(json.dumps(row, sort_keys=True, default=str) + "\n")
        self._transcript.flush()

    def _exited_error(self) -> AgentCommandError:
        self._exited = True
        try:
            code = self._proc.wait(timeout=_CLOSE_GRACE_SECONDS)
            what = f"exited before reply (exit code {code})"
        except subprocess.TimeoutExpired:
            what = "closed its stdout before reply"
        return AgentCommandError(
            f"agent command {what}; its stderr is in logs/{self._stderr_path.name}"
        )

    def step(self, message: str) -> Reply:
        """Send one prompt and wait for the reply line. Raises :class:`AgentCommandError` when
        the process has exited or prints something that is not a JSON object."""
        turn = self._turn
        self._turn += 1
        if self._killed:  # the last turn overran its timeout: a new process takes over
            self._spawn()
            self._next_type = "resume"
            self._record({"kind": "restart", "turn": turn, "pid": self._proc.pid})
        if self._exited:
            raise self._exited_error()
        kind, self._next_type = self._next_type, "prompt"
        self._record({"kind": kind, "turn": turn, "message": message})
        prompt = {"message": message, "turn": turn, "type": kind}
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(prompt, sort_keys=True) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise self._exited_error() from exc
        try:
            line = self._lines.get(timeout=self._timeout)
        except queue.Empty:
            self._record({"kind": "timeout", "turn": turn, "seconds": self._timeout})
            self._kill()
            return Reply(turn=turn, data={"timed_out": True, "timeout_seconds": self._timeout})
        if line is _EOF:
            raise self._exited_error()
        if line is _TOO_LONG:
            self._record({"kind": "stdout", "turn": turn, "line": None, "too_long": True})
            raise AgentCommandError(
                f"agent printed a line longer than {MAX_REPLY_CHARS} characters: print one "
                "short JSON object per turn on stdout and write logs to stderr."
            )
        line = line.rstrip("\n")
        self._record({"kind": "stdout", "turn": turn, "line": line})
        reply = _to_reply(_parse_reply_line(line), turn)
        self._record({"kind": "reply", **reply.model_dump()})
        return reply

    def _kill(self) -> None:
        """Kill the process group of a hung turn at once (it is not asked to stop)."""
        signal_group(self._proc, signal.SIGKILL)
        self._proc.wait()
        self._reader.join(timeout=_CLOSE_GRACE_SECONDS)
        self._killed = True

    def close(self) -> None:
        """Close stdin, then wait, SIGTERM, wait, SIGKILL the agent's process group."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        except OSError:
            pass
        stop_group(self._proc, _CLOSE_GRACE_SECONDS)
        self._reader.join(timeout=_CLOSE_GRACE_SECONDS)
        self._record({"kind": "exit", "turn": self._turn, "exit_code": self._proc.returncode})
        self._transcript.close()
        self._stderr.close()


def _parse_reply_line(line: str) -> dict[str, Any]:
    try:
        payload = json.loads(line)
    except json.JSONDecodeError as exc:
        raise AgentCommandError(
            f"agent printed a line that is not JSON: {line[:200]!r}. Print exactly one JSON "
            "object per turn on stdout and write logs to stderr."
        ) from exc
    if not isinstance(payload, dict):
        raise AgentCommandError(
            f"agent reply must be a JSON object, got {type(payload).__name__}: {line[:200]!r}"
        )
    return payload


def _to_reply(payload: dict[str, Any], turn: int) -> Reply:
    text = payload.get("text")
    if text is None:
        text = ""
    elif not isinstance(text, str):
        text = json.dumps(text, sort_keys=True)
    data = payload.get("data")
    if data is not None and not isinstance(data, dict):
        raise AgentCommandError(f"agent reply field 'data' must be an object, got {data!r}")
    reply_turn = payload.get("turn")
    if isinstance(reply_turn, bool) or not isinstance(reply_turn, int):
        reply_turn = turn
    return Reply(turn=reply_turn, text=text, stop=bool(payload.get("stop")), data=data or {})
