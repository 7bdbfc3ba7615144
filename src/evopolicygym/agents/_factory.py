"""Build the harness an ``[agent]`` config section asks for."""

from __future__ import annotations

import sys

from ..protocol import AgentSection
from ._claude import ClaudeHarness
from ._cli import CliHarness, CliOptions
from ._codex import CodexHarness
from ._command import CommandHarness
from ._kimi import KimiHarness
from ._session import AgentHarness

CLI_KINDS = ("codex", "claude", "kimi")
# The built-in agents (agents.builtin.BUILTIN_AGENTS, run as their own processes): named here
# so that the judge never imports their NumPy and CMA-ES code.
BUILTIN_NAMES = ("cmaes", "explore", "hillclimb", "random")
KINDS = ("command", *CLI_KINDS, *(f"builtin:{name}" for name in BUILTIN_NAMES))


def builtin_argv(name: str) -> list[str]:
    """The command that runs built-in agent ``name`` with this interpreter."""
    return [sys.executable, "-m", "evopolicygym.agents.builtin", name]


def make_harness(section: AgentSection) -> AgentHarness:
    """The harness for ``section.kind``: ``command`` (needs ``argv``), ``codex``, ``claude``,
    ``kimi`` or ``builtin:<name>``. Raises ``ValueError`` naming the valid kinds otherwise."""
    kind = section.kind
    if kind == "command":
        if not section.argv:
            raise ValueError(
                "agent kind 'command' needs argv, e.g. [agent] argv = ['python', 'agent.py'] "
                "or `evopolicygym run ... --agent command -- python agent.py`"
            )
        return CommandHarness(section.argv, name=section.name, turn_timeout=section.turn_timeout)
    if kind.startswith("builtin:"):
        name = kind.removeprefix("builtin:")
        if name not in BUILTIN_NAMES:
            raise ValueError(f"unknown built-in agent {name!r}; choose one of {', '.join(KINDS)}")
        return CommandHarness(
            builtin_argv(name), name=section.name, turn_timeout=section.turn_timeout
        )
    if kind in CLI_KINDS:
        return _cli_harness(section)
    raise ValueError(f"unknown agent kind {kind!r}; choose one of {', '.join(KINDS)}")


def _cli_harness(section: AgentSection) -> CliHarness:
    kind = section.kind
    options = CliOptions(
        binary=section.binary or kind,
        # "agent" is the generic default name: CLI adapters then log under their own name.
        name=kind if section.name == "agent" else section.name,
        model=section.model,
        args=list(section.args),
        turn_timeout=section.turn_timeout,
    )
    if kind == "codex":
        return CodexHarness(
            options, sandbox=section.sandbox, approval=section.approval, bypass=section.bypass
        )
    if kind == "claude":
        return ClaudeHarness(options, permission=section.permission, tools=section.tools)
    return KimiHarness(options)
