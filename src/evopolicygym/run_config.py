"""Configuration layering for one run: defaults < config file < command-line flags.

``evopolicygym run`` builds its :class:`~evopolicygym.protocol.RunConfig` here unless it resumes
a run (:func:`evopolicygym.runs.load_saved_config`) or runs a suite job
(:func:`evopolicygym.suites.suite_job_config`). The defaults are the model's own
(:mod:`evopolicygym.protocol`); a config file (TOML or JSON, ``[run] [agent] [server] [limits]``
or flat ``[run]`` keys) replaces them key by key; a flag that was given replaces the file's key.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from evopolicygym.protocol import RunConfig

__all__ = ["RunConfigError", "RunFlags", "layered_run_config", "read_config_file"]

# Sections of a config file besides [run]; a file without [run] has its run keys at top level.
OTHER_SECTIONS = ("agent", "server", "limits")


class RunConfigError(ValueError):
    """The layered settings do not make a run; the message names the flag to add."""


@dataclass(frozen=True)
class RunFlags:
    """The settings given on the command line. ``None`` (``False``, empty) means the flag was not
    given, so the file's value or the default stands. Field names are the CLI's option names."""

    env: str | None = None
    """``[run] env``: environment id."""
    root: Path | None = None
    """``[run] root``: explicit run directory."""
    runs: Path | None = None
    """``[run] runs``: base directory of ``<model>/<env>/<exp_id>``."""
    data: Path | None = None
    """``[run] data``: split directory."""
    model: str | None = None
    """``[run] model``: model label; a ``builtin:<name>`` agent defaults it to ``<name>``."""
    exp_id: str | None = None
    """``[run] exp_id``: experiment id."""
    budget: int | None = None
    """``[run] budget``: episodes the agent may spend (required from the file or the flag)."""
    minimum: int | None = None
    """``[run] minimum``: fewest episodes per submit."""
    maximum: int | None = None
    """``[run] maximum``: most episodes per submit."""
    valid_size: int | None = None
    """``[run] valid_size``: validation cases."""
    final_size: int | None = None
    """``[run] final_size``: held-out cases."""
    jobs: int | None = None
    """``[run] jobs``: policy worker processes."""
    isolation: str | None = None
    """``[run] isolation``: how policy code is isolated (auto, namespaced, basic, process)."""
    bulk: bool = False
    """``[run] bulk = true`` when given; absent leaves the file's value."""
    compress_images: bool = False
    """``[run] compress_images = true`` when given; absent leaves the file's value."""
    agent: str | None = None
    """``[agent] kind``."""
    agent_name: str | None = None
    """``[agent] name``."""
    agent_jail: str | None = None
    """``[agent] jail``: the agent jail (auto, on, off)."""
    limit: int | None = None
    """``[agent] limit``: turn limit."""
    retries: int | None = None
    """``[agent] retries``."""
    retry_backoff: float | None = None
    """``[agent] retry_backoff``."""
    argv: tuple[str, ...] = ()
    """The words after ``--``: the command agent's ``argv``, or for a CLI agent (codex, claude,
    kimi) its ``binary`` followed by extra ``args``."""
    bind: str | None = None
    """``[server] bind``."""
    port: int | None = None
    """``[server] port``."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The field names, which are also the CLI's option destinations."""
        return tuple(field.name for field in fields(cls))


_RUN_KEYS = (
    "env",
    "root",
    "runs",
    "data",
    "model",
    "exp_id",
    "budget",
    "minimum",
    "maximum",
    "valid_size",
    "final_size",
    "jobs",
    "isolation",
)
_AGENT_KEYS = (
    ("agent_name", "name"),
    ("agent_jail", "jail"),
    ("limit", "limit"),
    ("retries", "retries"),
    ("retry_backoff", "retry_backoff"),
)


def read_config_file(path: Path) -> dict[str, Any]:
    """A run config file as ``{"run": ..., "agent": ..., ...}``: TOML for ``.toml``, JSON
    otherwise; a file without a ``[run]`` table has its run keys at top level. Raises
    ``FileNotFoundError``, ``tomllib.TOMLDecodeError`` or ``json.JSONDecodeError`` (both
    ``ValueError``)."""
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    if "run" not in data:
        data = {
            "run": {k: v for k, v in data.items() if k not in OTHER_SECTIONS},
            **{k: v for k, v in data.items() if k in OTHER_SECTIONS},
        }
    return data


def command_argv(argv: tuple[str, ...]) -> list[str]:
    """A command agent's argv with the paths given relative to the caller's directory made
    absolute: the agent runs in the run's workspace (and in the agent jail, which binds only
    absolute paths), where they would name nothing. The program counts when it contains a
    ``/`` (``.venv/bin/python``; a bare name is looked up on ``PATH``); an argument counts when it
    names an existing file here (``agent.py``). Symbolic links are kept, so a virtual
    environment's interpreter stays that environment's."""
    program, *arguments = argv
    if "/" in program and not os.path.isabs(program):
        program = os.path.abspath(program)
    return [
        program,
        *(
            os.path.abspath(a) if not os.path.isabs(a) and os.path.isfile(a) else a
            for a in arguments
        ),
    ]


def layered_run_config(flags: RunFlags, file: Path | None = None) -> RunConfig:
    """The run config of ``flags`` over ``file`` over the defaults. Raises
    :class:`RunConfigError` when the command agent has no argv or no budget is given, and
    ``pydantic.ValidationError`` for a value the model rejects."""
    data = read_config_file(file) if file else {"run": {}}
    run, agent = data.setdefault("run", {}), data.setdefault("agent", {})
    for key in _RUN_KEYS:
        value = getattr(flags, key)
        if value is not None:
            run[key] = value
    if flags.bulk:
        run["bulk"] = True
    if flags.compress_images:
        run["compress_images"] = True
    if flags.agent is not None:
        agent["kind"] = flags.agent
    if "model" not in run and agent.get("kind", "").startswith("builtin:"):
        run["model"] = agent["kind"].removeprefix("builtin:")  # runs/<agent>/<env>/... by default
    for flag, key in _AGENT_KEYS:
        value = getattr(flags, flag)
        if value is not None:
            agent[key] = value
    command_agent = agent.get("kind", "command") == "command"
    if flags.argv:
        if command_agent:
            agent["argv"] = command_argv(flags.argv)
        else:  # codex/claude/kimi: first token is the binary, the rest pass through
            agent["binary"], agent["args"] = flags.argv[0], list(flags.argv[1:])
    if command_agent and not agent.get("argv"):
        raise RunConfigError(
            "the command agent needs its argv after `--`, e.g. `-- python agent.py` (or use "
            "--agent builtin:hillclimb)"
        )
    if "budget" not in run:
        raise RunConfigError("give the run a --budget (episodes the agent may spend)")
    if flags.port is not None or flags.bind is not None:
        server = data.setdefault("server", {})
        if flags.port is not None:
            server["port"] = flags.port
        if flags.bind is not None:
            server["bind"] = flags.bind
    return RunConfig.model_validate(data)
