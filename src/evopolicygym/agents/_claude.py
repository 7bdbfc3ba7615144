"""Claude Code adapter: ``claude --print --output-format stream-json --verbose`` with the
prompt on stdin, resumed with ``--resume <session_id>``.

Output format: ``{"type": "system", "subtype": "init", "session_id": ...}``, then
``{"type": "assistant", "message": {"content": [{"type": "text", "text": ...}, ...]}}`` and
``{"type": "user", ...}`` (tool results), then a final ``{"type": "result", "result": ...,
"session_id": ..., "total_cost_usd": ..., "num_turns": ..., "is_error": ...}``.
"""

from __future__ import annotations

from typing import Any

from ._cli import CliHarness, CliOptions, CliSession, TurnOutput, dedupe_consecutive, first_string

DEFAULT_TOOLS = ("Bash", "Read", "Edit", "Write", "Glob", "Grep")
_SESSION_KEYS = ("session_id", "sessionId")
_SESSION_NESTS = ("message", "payload", "result", "session")


class ClaudeHarness(CliHarness):
    """Claude Code with ``permission`` (``--permission-mode``) and ``tools``
    (``--allowedTools``, default Bash, Read, Edit, Write, Glob, Grep)."""

    def __init__(
        self,
        options: CliOptions,
        *,
        permission: str = "bypassPermissions",
        tools: list[str] | None = None,
    ) -> None:
        super().__init__(options)
        self.permission = permission
        self.tools = list(tools) if tools else list(DEFAULT_TOOLS)

    def session_class(self) -> type[CliSession]:
        return ClaudeSession


class ClaudeSession(CliSession):
    session_field = "claude_session"
    harness: ClaudeHarness

    def command(self, message: str, turn: int) -> tuple[list[str], bool]:
        argv = [self.options.binary, "--print", "--output-format", "stream-json", "--verbose"]
        if self.session_id:
            argv += ["--resume", self.session_id]
        elif self.continues(turn):
            argv.append("--continue")
        argv += ["--permission-mode", self.harness.permission]
        argv += ["--allowedTools", ",".join(self.harness.tools)]
        if self.options.model:
            argv += ["--model", self.options.model]
        argv += self.options.args
        return argv, True

    def discover_session(self, output: TurnOutput) -> str | None:
        return first_string(output.events, _SESSION_KEYS, _SESSION_NESTS)

    def response_text(self, output: TurnOutput) -> str:
        results = [e for e in output.events if e.get("type") == "result"]
        if results and isinstance(results[-1].get("result"), str):
            return results[-1]["result"]
        parts: list[str] = []
        for event in output.events:
            message = event.get("message")
            if event.get("type") != "assistant" or not isinstance(message, dict):
                continue
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "text":
                    parts.append(str(block.get("text") or ""))
        parts = dedupe_consecutive(parts)
        return "\n\n".join(parts) if parts else "\n".join(output.raw)

    def extra_data(self, output: TurnOutput) -> dict[str, Any]:
        results = [e for e in output.events if e.get("type") == "result"]
        if not results:
            return {}
        last = results[-1]
        data: dict[str, Any] = {
            "cost_usd": last.get("total_cost_usd"),
            "inner_turns": last.get("num_turns"),
        }
        if isinstance(last.get("usage"), dict):
            data["usage"] = last["usage"]
        if last.get("is_error"):
            data["error"] = str(last.get("result") or last.get("subtype") or "error")
        return data
