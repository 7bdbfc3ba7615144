"""Kimi Code adapter: ``kimi [-S <id> | -C] --output-format stream-json -p <prompt>``.

Output format: one message per line, ``{"role": "assistant", "content": ..., "tool_calls":
[...]}`` and ``{"role": "tool", "tool_call_id": ..., "content": ...}``; ``content`` is a string
or a list of ``{"type": "text", "text": ...}`` parts. The stream may not name the session, so
the id is also looked up in Kimi's session index (``~/.kimi-code/session_index.jsonl``): the
last entry whose ``workDir`` is the workspace. No approval flags: Kimi rejects ``--yolo`` and
``--auto`` in ``-p`` mode.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._cli import CliHarness, CliOptions, CliSession, TurnOutput

_SESSION_KEYS = ("sessionId", "sessionID", "session_id")


def default_session_index() -> Path:
    return Path.home() / ".kimi-code" / "session_index.jsonl"


class KimiHarness(CliHarness):
    """Kimi Code; ``session_index`` overrides where Kimi records its sessions."""

    def __init__(self, options: CliOptions, *, session_index: Path | None = None) -> None:
        super().__init__(options)
        self.session_index = session_index

    def session_class(self) -> type[CliSession]:
        return KimiSession


class KimiSession(CliSession):
    session_field = "kimi_session"
    harness: KimiHarness

    def command(self, message: str, turn: int) -> tuple[list[str], bool]:
        argv = [self.options.binary]
        if self.session_id:
            argv += ["-S", self.session_id]
        elif self.continues(turn):
            argv.append("-C")
        argv += ["--output-format", "stream-json"]
        if self.options.model:
            argv += ["-m", self.options.model]
        argv += self.options.args
        argv += ["-p", message]
        return argv, False

    def discover_session(self, output: TurnOutput) -> str | None:
        for event in output.events:
            found = _find_session(event)
            if found:
                return found
        return self._from_index()

    def _from_index(self) -> str | None:
        index = self.harness.session_index or default_session_index()
        try:
            lines = index.read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        workspace = self.launch.workspace.resolve()
        found = None
        for line in lines:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(entry, dict):
                continue
            workdir = entry.get("workDir") or entry.get("workdir")
            if not isinstance(workdir, str) or Path(workdir).resolve() != workspace:
                continue
            session = _find_session(entry) or entry.get("id")
            if isinstance(session, str) and session:
                found = session
        return found

    def response_text(self, output: TurnOutput) -> str:
        answers = [
            _content_text(e.get("content"))
            for e in output.events
            if e.get("role") == "assistant" and _content_text(e.get("content"))
        ]
        if answers:
            return answers[-1]
        return "\n".join(output.raw)

    def extra_data(self, output: TurnOutput) -> dict[str, Any]:
        calls = sum(len(e.get("tool_calls") or []) for e in output.events)
        return {"tool_calls": calls}


def _find_session(value: Any) -> str | None:
    """Depth-first search for a session id key, or an ``id`` that looks like ``session_...``."""
    if isinstance(value, dict):
        for key in _SESSION_KEYS:
            if isinstance(value.get(key), str) and value[key]:
                return value[key]
        ident = value.get("id")
        if isinstance(ident, str) and ident.startswith("session_"):
            return ident
        children = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return None
    for child in children:
        found = _find_session(child)
        if found:
            return found
    return None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return "".join(texts)
    return ""
