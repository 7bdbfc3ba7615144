"""Agent adapters: how a coding agent is started, prompted and driven through one run.

:func:`drive` runs the loop of one session; :func:`make_harness` builds the harness for an
``[agent]`` section: the persistent JSONL ``command`` adapter, the Codex / Claude Code / Kimi
Code CLI adapters, or a built-in offline agent (``builtin:random``, ``builtin:hillclimb``).
"""

from ._check import AgentCheck, check_agent, missing_agent_message
from ._claude import ClaudeHarness
from ._cli import CliHarness, CliOptions, CliSession, TurnOutput
from ._codex import CodexHarness
from ._command import AgentCommandError, CommandHarness, CommandSession
from ._factory import KINDS, builtin_argv, make_harness
from ._history import RunHistory, SessionRecord
from ._jail import Jail, JailRecord, JailUnavailable, agent_jail
from ._kimi import KimiHarness
from ._launch import Launch, Resume
from ._loop import drive
from ._rules import agents_md_sha256, agents_md_text
from ._session import (
    DEFAULT_TURN_TIMEOUT,
    AgentHarness,
    AgentSession,
    Reply,
    SessionObserver,
    Transcript,
)

__all__ = [
    "DEFAULT_TURN_TIMEOUT",
    "KINDS",
    "AgentCheck",
    "AgentCommandError",
    "AgentHarness",
    "AgentSession",
    "ClaudeHarness",
    "CliHarness",
    "CliOptions",
    "CliSession",
    "CodexHarness",
    "CommandHarness",
    "CommandSession",
    "Jail",
    "JailRecord",
    "JailUnavailable",
    "KimiHarness",
    "Launch",
    "Reply",
    "Resume",
    "RunHistory",
    "SessionObserver",
    "SessionRecord",
    "Transcript",
    "TurnOutput",
    "agent_jail",
    "agents_md_sha256",
    "agents_md_text",
    "builtin_argv",
    "check_agent",
    "drive",
    "make_harness",
    "missing_agent_message",
]
