"""Is an agent usable here? ``evopolicygym agents check`` and the suites' preflight.

For each product CLI: is the binary on PATH, what does ``--version`` say, and does a one-turn
no-op session work (the CLI starts, reaches its model and answers; nothing is submitted: there
is no judge). Each failure comes with what to do about it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

from ..protocol import AgentSection
from ._launch import Launch

CLI_KINDS = ("codex", "claude", "kimi")

INSTALL_ADVICE = {
    "codex": "install it with `npm install -g @openai/codex`, then log in once with `codex login`",
    "claude": "install it with `npm install -g @anthropic-ai/claude-code`, then run `claude` "
    "once to log in (or export ANTHROPIC_API_KEY)",
    "kimi": "install the Kimi Code CLI (the `kimi` command of MoonshotAI's kimi-code project; "
    "not the archived kimi-cli package), then run `kimi` once to log in",
}
NOOP_PROMPT = (
    "This is a connectivity check of the EvoPolicyGym harness, not a task. Reply with the "
    "single word OK. Do not run any command and do not read or write any file."
)


class AgentCheck(BaseModel):
    """What ``agents check`` found for one agent CLI."""

    kind: str
    binary: str = Field(..., description="The binary looked for (a name on PATH or a path).")
    path: str | None = Field(None, description="Where it was found; None when missing.")
    version: str | None = Field(None, description="First line of `<binary> --version`.")
    session: bool | None = Field(
        None, description="Whether a one-turn no-op session answered (None: not tried)."
    )
    session_id: str | None = None
    detail: str = Field("", description="What failed, in one line.")
    advice: str = Field("", description="What to do about it.")

    @property
    def ok(self) -> bool:
        return self.path is not None and self.session is not False


def find_binary(section: AgentSection) -> tuple[str, str | None]:
    """(binary as configured, its resolved path or None) for a CLI or command agent."""
    if section.kind in CLI_KINDS:
        binary = section.binary or section.kind
    elif section.kind == "command" and section.argv:
        binary = section.argv[0]
    else:
        return section.kind, section.kind  # built-in agents run with this interpreter
    return binary, shutil.which(binary)


def missing_agent_message(section: AgentSection) -> str | None:
    """One line naming the missing CLI or command and what to do, or None when it is found."""
    binary, path = find_binary(section)
    if path is not None:
        return None
    if section.kind in CLI_KINDS:
        return (
            f"agent CLI {binary!r} ({section.kind}) not found on PATH: "
            f"{INSTALL_ADVICE[section.kind]}; or set binary = '/path/to/{section.kind}' in the "
            "[[agent]] table. `evopolicygym agents check` tests it."
        )
    return f"agent command {binary!r} not found: check the [[agent]] argv"


def check_agent(
    kind: str, *, binary: str = "", session: bool = True, timeout: float = 180.0
) -> AgentCheck:
    """Check the CLI adapter ``kind``: binary, version and (with ``session``) a no-op turn."""
    from ._factory import make_harness

    section = AgentSection(kind=kind, binary=binary, turn_timeout=timeout)
    name, path = find_binary(section)
    result = AgentCheck(kind=kind, binary=name, path=path)
    if path is None:
        result.detail = f"{name!r} is not on PATH"
        result.advice = INSTALL_ADVICE[kind] + (
            f" (or pass --binary {kind}=/path/to/{kind})" if not binary else ""
        )
        return result
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        lines = (done.stdout or done.stderr).strip().splitlines()
        result.version = lines[0][:200] if lines else None
    except (OSError, subprocess.TimeoutExpired) as exc:
        result.detail = f"`{name} --version` failed: {exc}"
    if not session:
        return result
    with tempfile.TemporaryDirectory(prefix="evopolicygym-agent-check-") as scratch:
        workspace = Path(scratch) / "workspace"
        (workspace / "system").mkdir(parents=True)
        launch = Launch(
            api_url="http://127.0.0.1:9/no-judge", workspace=workspace, logs=Path(scratch) / "logs"
        )
        agent = make_harness(section).start(launch)
        try:
            reply = agent.step(NOOP_PROMPT)
        except Exception as exc:  # a launch failure is a finding, not a crash
            result.session, result.detail = False, f"{type(exc).__name__}: {exc}"
        else:
            error = reply.data.get("error")
            result.session = not reply.stop and not error and bool(reply.text.strip())
            result.session_id = getattr(agent, "resume_id", None)
            if not result.session:
                stderr = _last_stderr(Path(scratch) / "logs")
                why = error or (f"exit code {reply.data.get('exit_code')}" + stderr)
                if reply.data.get("timed_out"):
                    why = f"no answer within {timeout:g} s"
                result.detail = f"the one-turn session failed: {why}"
                result.advice = (
                    f"run `{name}` by hand in a terminal: it must be logged in and reach its model "
                    "API from this machine"
                )
        finally:
            agent.close()
    return result


def _last_stderr(logs: Path) -> str:
    files = sorted(logs.rglob("*.stderr.txt"))
    if not files:
        return ""
    text = files[-1].read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return f" ({text[-1][:200]})" if text else ""
