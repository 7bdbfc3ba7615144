"""Run configuration: the ``[run]``, ``[agent]``, ``[server]`` and ``[limits]`` tables of a run
config file (TOML or JSON), also built from CLI flags. Every field documents itself."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class RunSection(_Strict):
    env: str = Field("toy", description="Environment id from the registry, e.g. gym/cartpole.")
    budget: int = Field(
        ..., ge=1, description="Training episodes the agent may spend (at least 1)."
    )
    root: Path | None = Field(None, description="Explicit run directory (wins over runs).")
    runs: Path | None = Field(
        None, description="Base directory; the run lands in runs/<model>/<env>/<exp_id>."
    )
    data: Path | None = Field(
        None, description="Split directory with train/valid/heldout.json (data make)."
    )
    bulk: bool = Field(False, description="Allow gymnasium/<id> names from the live registry.")
    key: str = Field("", description="Run key; defaults to the run directory name.")
    model: str = Field("agent", description="Model label (directory and report name).")
    exp_id: str = Field("default", alias="exp_id", description="Experiment id (directory name).")
    minimum: int = Field(1, gt=0, description="Fewest episodes per submit.")
    maximum: int | None = Field(None, gt=0, description="Most episodes per submit; default budget.")
    valid_size: int | None = Field(
        None, ge=1, description="Validation cases (first N of the pool)."
    )
    final_size: int | None = Field(None, ge=1, description="Held-out cases (first N of the pool).")
    jobs: int | None = Field(None, ge=1, description="Policy workers; default: number of cores.")
    isolation: Literal["auto", "namespaced", "basic", "process"] = Field(
        "auto",
        description="Isolation of policy workers: namespaced (bubblewrap + Landlock + seccomp), "
        "basic (Landlock + seccomp, no namespaces), process (separate processes and limits "
        "only); auto is the strongest that works on this machine. An explicit level that does "
        "not work stops the run before it starts.",
    )
    compress_images: bool = Field(
        False,
        description="Store recorded uint8 observation stacks (pixels) as a compressed "
        "observations.npz with key 'obs' instead of observations.npy. Off by default: the "
        "reference format is .npy, which agents may expect.",
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _submit_bounds_fit(self):
        """Refuse submit bounds no submit can meet: the agent would burn its turns and leave a
        finished error record instead of a result."""
        if self.maximum is not None and self.minimum > self.maximum:
            raise ValueError(
                f"minimum {self.minimum} is above maximum {self.maximum} episodes per submit"
            )
        if self.minimum > self.budget:
            raise ValueError(
                f"minimum {self.minimum} episodes per submit is above the budget {self.budget}"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _alias_exp(cls, data):
        if isinstance(data, dict) and "exp" in data and "exp_id" not in data:
            data = {**data, "exp_id": data["exp"]}
            del data["exp"]
        return data


class AgentSection(_Strict):
    kind: str = Field(
        "command",
        description="command | codex | claude | kimi | builtin:<name> (random, hillclimb, cmaes, explore).",
    )
    argv: list[str] = Field(default_factory=list, description="Command adapter argv.")
    name: str = Field("agent", description="Log and session name.")
    limit: int | None = Field(None, gt=0, description="Turn limit; default max(1, budget).")
    retries: int = Field(0, ge=0, description="Extra attempts for a failed turn.")
    retry_backoff: float = Field(1.0, ge=0, description="Seconds; doubles every attempt.")
    turn_timeout: float | None = Field(
        7200.0,
        gt=0,
        description="Seconds one turn may take (every adapter); an overrunning turn's process "
        "group is killed and the turn counts as failed (retried up to retries).",
    )
    binary: str = Field("", description="Agent CLI binary (codex, claude, kimi).")
    model: str = Field("", description="Model passed to the agent CLI.")
    sandbox: str = Field("workspace-write", description="Codex --sandbox value.")
    approval: str = Field("never", description="Codex approval policy.")
    bypass: bool = Field(False, description="Codex --dangerously-bypass-approvals-and-sandbox.")
    permission: str = Field("bypassPermissions", description="Claude --permission-mode.")
    tools: list[str] = Field(default_factory=list, description="Claude --allowedTools.")
    args: list[str] = Field(default_factory=list, description="Extra CLI arguments.")
    jail: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Agent jail: run every agent process inside bubblewrap, seeing only its "
        "workspace (read-write), its CLI, configuration directory and system files (read-only) "
        "and a private /tmp; auto = on where bubblewrap works, on = stop the run when it does "
        "not, off = no jail. Recorded in run.json under isolation.agent.",
    )


class ServerSection(_Strict):
    bind: str = Field("127.0.0.1", description="Judge address; loopback only by default.")
    port: int = Field(0, ge=0, le=65535, description="Judge port; 0 picks a free one.")


class LimitsSection(_Strict):
    init_timeout_s: float = Field(60.0, gt=0, description="Import + Policy() per worker.")
    act_timeout_s: float = Field(10.0, gt=0, description="One reset() or act() call.")
    rollout_wall_s: float = Field(600.0, gt=0, description="One whole episode.")
    memory_bytes: int = Field(4 * 2**30, gt=0, description="Address space per worker.")
    cpu_seconds: int = Field(3600, gt=0, description="CPU time per worker process.")
    max_processes: int = Field(
        256,
        gt=0,
        description="Processes and threads a lane may run (a pids cgroup, else RLIMIT_NPROC), "
        "plus the envspec's helper_tasks for the environment's own processes.",
    )
    file_size_bytes: int = Field(64 * 2**20, gt=0, description="Largest file a policy may write.")
    output_bytes: int = Field(64 * 1024, gt=0, description="stdout/stderr kept per episode.")


class RunConfig(_Strict):
    """A whole run config file. Flat files (keys at top level) are accepted for ``[run]``."""

    run: RunSection
    agent: AgentSection = Field(default_factory=AgentSection)
    server: ServerSection = Field(default_factory=ServerSection)
    limits: LimitsSection = Field(default_factory=LimitsSection)


def settings_problem(error: ValidationError) -> str:
    """One line naming every invalid setting of a config ``error`` (``budget: Input should be
    greater than or equal to 1 (got 0)``), for messages where a pydantic dump would bury it."""
    problems = []
    for issue in error.errors():
        where = ".".join(str(p) for p in issue["loc"] if p != "run")
        message = str(issue["msg"]).removeprefix("Value error, ")
        if where:
            given = issue.get("input")
            shown = "" if isinstance(given, dict) else f" (got {given!r})"
            message = f"{where.replace('_', '-')}: {message}{shown}"
        problems.append(message)
    return "; ".join(problems)
