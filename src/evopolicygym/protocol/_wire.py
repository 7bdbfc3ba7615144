"""Models of the HTTP API: ``GET /info``, ``POST /submit`` and error bodies."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._feedback import SubmitSummary
from ._versions import PROTOCOL_VERSION, SCHEMA_VERSION


class _Open(BaseModel):
    """Wire models accept unknown fields so that MINOR protocol additions stay readable."""

    model_config = ConfigDict(extra="allow")


class RunState(_Open):
    """The public state of a run.

    ``phase`` is ``open`` while submits are accepted, ``finalizing`` while the judge evaluates
    hidden cases after the budget is spent, and ``closed`` when ``run.json`` is written.
    ``is_finalized`` is true as soon as the phase is no longer ``open``: the agent has nothing
    left to do (in the reference protocol the last submit returned after finalization).
    """

    remaining_budget: int
    n_submits: int
    is_finalized: bool
    phase: Literal["open", "finalizing", "closed"] = "open"


class EnvMeta(_Open):
    """What the agent and the policy may know about the environment."""

    env: str
    env_version: str
    n_env_instances: int
    max_episode_steps: int
    obs_space: dict[str, Any]
    action_space: dict[str, Any]
    obs_storage: Literal["inline", "external"] = "inline"
    reward_components: dict[str, str] | None = None
    artifacts: dict[str, bool] | None = None


class ResourceLimits(_Open):
    """Limits applied to every policy worker; ``None`` means unlimited."""

    init_timeout_s: float | None = None
    act_timeout_s: float | None = None
    rollout_wall_s: float | None = None
    memory_bytes: int | None = None
    cpu_seconds: int | None = None
    max_processes: int | None = None
    file_size_bytes: int | None = None
    output_bytes: int | None = None


class InfoResponse(_Open):
    """Body of ``GET /info``."""

    protocol_version: str = PROTOCOL_VERSION
    schema_version: str = SCHEMA_VERSION
    state: RunState
    env_meta: EnvMeta
    episode_budget: int
    min_episodes_per_submit: int
    max_episodes_per_submit: int
    resource_limits: ResourceLimits = Field(default_factory=ResourceLimits)
    isolation: str = "process"


class SubmitRequest(BaseModel):
    """Body of ``POST /submit``: ids of visible train cases, as a list or a range string
    such as ``"0-3,7"``. Order and duplicates are kept; each id costs one episode."""

    model_config = ConfigDict(extra="forbid")

    env_instances: list[int] | str


class SubmitResponse(_Open):
    """Body of every judged ``POST /submit`` answer (200 when charged, 400 when rejected)."""

    submit_id: int
    status: str
    summary: SubmitSummary


class ApiErrorDetail(_Open):
    code: str
    message: str


class ApiError(_Open):
    """Body of every 4xx answer that judged nothing: ``status`` is a machine-readable reason
    (``bad_request``, ``unsupported_media_type``, ``payload_too_large``, ``budget_invalid``,
    ``run_closed``, ``not_found``, ``method_not_allowed``) and ``error.message`` says what to do."""

    status: str
    error: ApiErrorDetail
