"""make_harness: from an [agent] section to a harness."""

from __future__ import annotations

import sys

import pytest

from evopolicygym.agents import (
    KINDS,
    ClaudeHarness,
    CodexHarness,
    CommandHarness,
    KimiHarness,
    make_harness,
)
from evopolicygym.protocol import AgentSection


def test_command_kind_uses_argv_name_and_timeout():
    harness = make_harness(
        AgentSection(kind="command", argv=["python", "agent.py"], name="mine", turn_timeout=5)
    )
    assert isinstance(harness, CommandHarness)
    assert (harness.argv, harness.name, harness.turn_timeout) == (["python", "agent.py"], "mine", 5)


def test_command_kind_without_argv_says_how_to_give_one():
    with pytest.raises(ValueError, match=r"-- python agent\.py"):
        make_harness(AgentSection(kind="command"))


@pytest.mark.parametrize("name", ["random", "hillclimb"])
def test_builtin_agents_are_command_agents_of_this_interpreter(name):
    harness = make_harness(AgentSection(kind=f"builtin:{name}"))
    assert isinstance(harness, CommandHarness)
    assert harness.argv == [sys.executable, "-m", "evopolicygym.agents.builtin", name]
    assert harness.name == "agent"


def test_cli_kinds_default_binary_and_name():
    codex = make_harness(AgentSection(kind="codex", bypass=True))
    assert isinstance(codex, CodexHarness)
    assert (codex.options.binary, codex.name, codex.bypass) == ("codex", "codex", True)
    claude = make_harness(AgentSection(kind="claude", name="sonnet", binary="/opt/claude"))
    assert isinstance(claude, ClaudeHarness)
    assert (claude.options.binary, claude.name) == ("/opt/claude", "sonnet")
    assert isinstance(make_harness(AgentSection(kind="kimi")), KimiHarness)


@pytest.mark.parametrize("kind", ["builtin:genius", "gemini"])
def test_unknown_kinds_list_the_valid_ones(kind):
    with pytest.raises(ValueError, match="builtin:hillclimb"):
        make_harness(AgentSection(kind=kind))
    assert "builtin:random" in KINDS


def test_the_judge_names_exactly_the_built_in_agents_there_are():
    from evopolicygym.agents._factory import BUILTIN_NAMES
    from evopolicygym.agents.builtin import BUILTIN_AGENTS

    assert sorted(BUILTIN_NAMES) == sorted(BUILTIN_AGENTS)
