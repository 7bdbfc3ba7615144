"""Shared machinery of the product CLI adapters (Codex, Claude Code, Kimi Code).

A CLI agent runs one OS process per turn; the logical session continues across turns through
the CLI's own resume flag and the session id discovered in its output. Every turn leaves five
files in ``logs/<name>_turns/``: ``turn_NNN.prompt.txt``, ``turn_NNN.command.json`` (argv),
``turn_NNN.stream.jsonl`` (raw stdout), ``turn_NNN.stderr.txt`` and ``turn_NNN.txt`` (a
readable summary: header, ``## response``, ``## stderr``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._command import AgentCommandError
from ._launch import Launch
from ._process import signal_group
from ._session import DEFAULT_TURN_TIMEOUT, Reply

# Exit code reported for a turn killed by its timeout (what coreutils `timeout` uses).
TIMEOUT_EXIT_CODE = 124


@dataclass
class TurnOutput:
    """What one CLI process produced. ``events`` are the stdout lines that are JSON objects,
    ``raw`` the other non-empty lines."""

    exit_code: int
    timed_out: bool
    duration_seconds: float
    events: list[dict[str, Any]] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    stderr: str = ""


@dataclass
class CliOptions:
    """Settings shared by the CLI adapters; the rest come from :class:`AgentSection`."""

    binary: str
    name: str
    model: str = ""
    args: list[str] = field(default_factory=list)
    turn_timeout: float | None = DEFAULT_TURN_TIMEOUT


class CliHarness(ABC):
    """Base of the Codex/Claude/Kimi harnesses: checks the binary, starts a :class:`CliSession`."""

    def __init__(self, options: CliOptions) -> None:
        self.options = options
        self.name = options.name

    def start(self, launch: Launch) -> CliSession:
        if shutil.which(self.options.binary) is None:
            raise AgentCommandError(
                f"agent CLI {self.options.binary!r} not found on PATH. Install it and log in, "
                "or set [agent] binary (or --agent <kind> -- /path/to/binary) to its path."
            )
        return self.session_class()(self, launch)

    @abstractmethod
    def session_class(self) -> type[CliSession]: ...


class CliSession(ABC):
    """One logical CLI session; subclasses build the argv and read the event stream."""

    #: key of the adapter-specific session id in ``Reply.data``
    session_field = "session"

    def __init__(self, harness: CliHarness, launch: Launch) -> None:
        self.harness = harness
        self.options = harness.options
        self.launch = launch
        self.turns_dir = launch.logs / f"{self.options.name}_turns"
        self.turns_dir.mkdir(parents=True, exist_ok=True)
        resume = launch.resume
        # A resumed run continues the CLI's own session, numbering turns on from the last start.
        self.session_id: str | None = resume.session if resume else None
        self.first_turn = resume.turns if resume else 0
        self._label = uuid.uuid4().hex
        self._turn = self.first_turn
        self._closed = False

    @property
    def key(self) -> str:
        return f"{self.options.name}:{self.session_id or self._label}"

    @property
    def resume_id(self) -> str | None:
        """The CLI's own session id (what a resumed run continues), once known."""
        return self.session_id

    def continues(self, turn: int) -> bool:
        """Whether turn ``turn`` continues an earlier turn of this start (when the CLI never
        named its session, adapters then ask it for the latest one in the workspace)."""
        return turn > self.first_turn

    @abstractmethod
    def command(self, message: str, turn: int) -> tuple[list[str], bool]:
        """The argv of this turn, and whether the prompt goes to stdin (else /dev/null)."""

    @abstractmethod
    def discover_session(self, output: TurnOutput) -> str | None:
        """The CLI's session id found in this turn's output, if any."""

    @abstractmethod
    def response_text(self, output: TurnOutput) -> str:
        """The agent's answer for this turn."""

    def extra_data(self, output: TurnOutput) -> dict[str, Any]:
        """Adapter facts added to ``Reply.data`` (cost, usage, ...)."""
        return {}

    def step(self, message: str) -> Reply:
        if self._closed:
            raise AgentCommandError(f"session {self.key} is closed")
        turn = self._turn
        self._turn += 1
        argv, prompt_on_stdin = self.command(message, turn)
        env = {
            **os.environ,
            **self.launch.environ(),
            "EVOPOLICYGYM_AGENT": self.options.name,
            "EVOPOLICYGYM_SESSION": self.session_id or self._label,
        }
        stem = self.turns_dir / f"turn_{turn:03d}"
        prompt_path = Path(f"{stem}.prompt.txt")
        prompt_path.write_text(message, encoding="utf-8")
        Path(f"{stem}.command.json").write_text(json.dumps(argv) + "\n", encoding="utf-8")
        output = run_turn_process(
            [*self.launch.jail, *argv],
            cwd=self.launch.workspace,
            env=env,
            stdin_path=prompt_path if prompt_on_stdin else None,
            stdout_path=Path(f"{stem}.stream.jsonl"),
            stderr_path=Path(f"{stem}.stderr.txt"),
            timeout=self.options.turn_timeout,
        )
        found = self.discover_session(output)
        if found:
            self.session_id = found
        text = self.response_text(output)
        data: dict[str, Any] = {
            "exit_code": output.exit_code,
            "timed_out": output.timed_out,
            "duration_seconds": round(output.duration_seconds, 3),
            self.session_field: self.session_id,
            **self.extra_data(output),
        }
        _write_turn_summary(Path(f"{stem}.txt"), turn, self.key, argv, output, text)
        stop = output.timed_out or output.exit_code != 0
        return Reply(turn=turn, text=text, stop=stop, data=data)

    def close(self) -> None:
        """End the session: later steps raise. No process outlives a turn, so nothing else
        needs stopping."""
        self._closed = True


def run_turn_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin_path: Path | None,
    stdout_path: Path,
    stderr_path: Path,
    timeout: float | None,
) -> TurnOutput:
    """Run one turn's process with stdout and stderr going straight to files (no pipe can fill
    up), kill its whole process group on timeout, and parse the stdout lines."""
    started = time.monotonic()
    stdin_file = stdin_path.open("rb") if stdin_path is not None else None
    timed_out = False
    try:
        with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
            try:
                proc = subprocess.Popen(
                    list(argv),
                    cwd=cwd,
                    env=env,
                    stdin=stdin_file if stdin_file is not None else subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as exc:
                raise AgentCommandError(f"cannot start {argv[0]!r}: {exc}") from exc
            try:
                exit_code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                signal_group(proc, signal.SIGKILL)
                proc.wait()
                exit_code = TIMEOUT_EXIT_CODE
            finally:
                # A CLI may leave helpers (shells, language servers) behind in its group; and a
                # harness stopped mid-turn (SIGTERM, Ctrl-C) must not leave the turn running.
                signal_group(proc, signal.SIGKILL)
    finally:
        if stdin_file is not None:
            stdin_file.close()
    events, raw = parse_stream(stdout_path.read_text(encoding="utf-8", errors="replace"))
    return TurnOutput(
        exit_code=exit_code,
        timed_out=timed_out,
        duration_seconds=time.monotonic() - started,
        events=events,
        raw=raw,
        stderr=stderr_path.read_text(encoding="utf-8", errors="replace"),
    )


def parse_stream(stdout: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Split stdout into JSON-object events and other (raw) non-empty lines."""
    events: list[dict[str, Any]] = []
    raw: list[str] = []
    for line in stdout.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            raw.append(line)
            continue
        if isinstance(value, dict):
            events.append(value)
        else:
            raw.append(line)
    return events, raw


def first_string(
    events: Iterable[dict[str, Any]], keys: Sequence[str], nests: Sequence[str] = ()
) -> str | None:
    """The first non-empty string under one of ``keys``, looking at each event's top level and
    then inside its ``nests`` sub-objects."""
    for event in events:
        scopes = [event] + [event[n] for n in nests if isinstance(event.get(n), dict)]
        for scope in scopes:
            for key in keys:
                value = scope.get(key)
                if isinstance(value, str) and value:
                    return value
    return None


def dedupe_consecutive(parts: Iterable[str]) -> list[str]:
    result: list[str] = []
    for part in parts:
        if part and (not result or result[-1] != part):
            result.append(part)
    return result


def _write_turn_summary(
    path: Path, turn: int, key: str, argv: Sequence[str], output: TurnOutput, text: str
) -> None:
    lines = [
        f"turn: {turn}",
        f"session: {key}",
        f"exit_code: {output.exit_code}",
        f"timed_out: {str(output.timed_out).lower()}",
        f"duration_seconds: {output.duration_seconds:.3f}",
        f"command: {json.dumps(list(argv))}",
        "",
        "## response",
        text,
        "",
        "## stderr",
        output.stderr,
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
