"""Fail fast: before a suite schedules any job, check that every agent it names can be started
here and that every environment it names can be built.

The Snakemake workflow calls :func:`require_ready` from its ``onstart`` handler for the suites
whose run jobs are about to run, so a suite whose agent CLI is missing stops with one message
naming the CLI instead of generating data and failing every run (and its retries).
"""

from __future__ import annotations

from collections.abc import Iterable

from .suites import Suite


class PreflightError(RuntimeError):
    """A suite cannot run here; the message lists every problem, one per line."""


def suite_problems(suite: Suite, *, envs: bool = True) -> list[str]:
    """Problems of one suite: missing agent CLIs or commands, unknown environments, and (with
    ``envs``) environments that cannot be built (a missing extra, a broken install)."""
    from .agents import missing_agent_message

    problems: list[str] = []
    seen_agents: set[str] = set()
    seen_envs: set[tuple[str, bool]] = set()
    for job in suite.jobs:
        agent = job.config.agent
        message = missing_agent_message(agent)
        if message and message not in seen_agents:
            seen_agents.add(message)
            problems.append(f"{suite.path}: {message}")
        key = (job.config.run.env, job.config.run.bulk)
        if envs and key not in seen_envs:
            seen_envs.add(key)
            problem = env_problem(*key)
            if problem:
                problems.append(f"{suite.path}: environment {key[0]!r}: {problem}")
    return problems


def env_problem(env_id: str, bulk: bool) -> str | None:
    """Why ``env_id`` cannot be built here (one line), or None. Builds one world and closes it."""
    from .envs import get_env

    try:
        get_env(env_id, bulk=bulk).describe()
    except Exception as exc:  # any failure here would fail every run of the environment
        return f"{type(exc).__name__}: {exc}".splitlines()[0][:400]
    return None


def require_ready(suites: Iterable[Suite], *, envs: bool = True) -> None:
    """Raise :class:`PreflightError` when any of ``suites`` has a problem."""
    problems = [problem for suite in suites for problem in suite_problems(suite, envs=envs)]
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise PreflightError(
            f"preflight failed; no job was scheduled. Fix these and start again:\n{lines}"
        )
