"""OpenAI Codex CLI adapter: ``codex exec --json``, resumed with ``codex exec ... resume <id>``.

Output format (one JSON event per line): ``{"type": "thread.started", "thread_id": ...}``,
``{"type": "turn.started"}``, ``{"type": "item.completed", "item": {"type": "agent_message",
"text": ...}}`` (and other item types for commands and file edits), then ``turn.completed``
with ``usage`` or ``turn.failed`` with ``error``. Older Codex versions wrapped events as
``{"id": ..., "msg": {"type": "agent_message", "message": ...}}``; both are understood.
"""

from __future__ import annotations

from typing import Any

from ._cli import CliHarness, CliOptions, CliSession, TurnOutput, dedupe_consecutive, first_string

_SESSION_KEYS = ("thread_id", "session_id", "conversation_id")
_SESSION_NESTS = ("payload", "msg", "thread", "session")


class CodexHarness(CliHarness):
    """Codex with ``sandbox`` (``--sandbox``) and ``approval`` (``approval_policy``), or
    ``bypass`` = ``--dangerously-bypass-approvals-and-sandbox`` (needed in practice so the
    agent's shell can reach the judge on 127.0.0.1; it does not change how policies run)."""

    def __init__(
        self,
        options: CliOptions,
        *,
        sandbox: str = "workspace-write",
        approval: str = "never",
        bypass: bool = False,
    ) -> None:
        super().__init__(options)
        self.sandbox = sandbox
        self.approval = approval
        self.bypass = bypass

    def session_class(self) -> type[CliSession]:
        return CodexSession


class CodexSession(CliSession):
    session_field = "codex_session"
    harness: CodexHarness

    def command(self, message: str, turn: int) -> tuple[list[str], bool]:
        h = self.harness
        # Run directories are usually not git checkouts; codex exec refuses those without the flag.
        argv = [
            self.options.binary,
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--cd",
            str(self.launch.workspace),
        ]
        if h.bypass:
            argv.append("--dangerously-bypass-approvals-and-sandbox")
        else:
            argv += ["--sandbox", h.sandbox, "--config", f'approval_policy="{h.approval}"']
        if self.options.model:
            argv += ["--model", self.options.model]
        resumed = self.session_id is not None or self.continues(turn)
        if resumed:
            argv.append("resume")
        argv += self.options.args
        if resumed:
            argv.append(self.session_id if self.session_id else "--last")
        argv.append(message)
        return argv, False

    def discover_session(self, output: TurnOutput) -> str | None:
        found = first_string(output.events, _SESSION_KEYS, _SESSION_NESTS)
        return found or first_string(
            (e for e in output.events if e.get("type") == "thread.started"), ("id",), ("thread",)
        )

    def response_text(self, output: TurnOutput) -> str:
        parts: list[str] = []
        for event in output.events:
            item = event.get("item")
            if (
                event.get("type") == "item.completed"
                and isinstance(item, dict)
                and item.get("type") == "agent_message"
            ):
                parts.append(str(item.get("text") or ""))
            msg = event.get("msg")
            if isinstance(msg, dict):
                if msg.get("type") == "agent_message":
                    parts.append(str(msg.get("message") or ""))
                elif msg.get("type") == "task_complete":
                    parts.append(str(msg.get("last_agent_message") or ""))
        parts = dedupe_consecutive(parts)
        return "\n\n".join(parts) if parts else "\n".join(output.raw)

    def extra_data(self, output: TurnOutput) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for event in output.events:
            if event.get("type") == "turn.completed" and isinstance(event.get("usage"), dict):
                data["usage"] = event["usage"]
            if event.get("type") in ("turn.failed", "error"):
                error = event.get("error")
                message = error.get("message") if isinstance(error, dict) else event.get("message")
                data["error"] = str(message)
        return data
