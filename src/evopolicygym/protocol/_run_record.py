"""Model of ``run.json``: the complete, self-contained record of one finished run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._versions import HARNESS_VERSION, PROTOCOL_VERSION, SCHEMA_VERSION


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class RunError(_Record):
    type: str
    message: str
    traceback: str | None = None


class Outcome(_Record):
    """How the run ended.

    ``completed``: at least one ok checkpoint; ``best_submit_index`` won validation (highest mean,
    ties to the latest) and ``final_score`` is its held-out mean return. ``no_ok_submit``: no
    checkpoint could be evaluated; ``final_score`` is 0. ``error``: the run did not finish
    (agent gave up, turn limit with budget left, harness failure); ``final_score`` is null.
    """

    status: Literal["completed", "no_ok_submit", "error"]
    error: RunError | None = None
    final_score: float | None = None
    best_submit_index: int | None = None
    val_scores: dict[str, float] | None = None
    val_errors: dict[str, int] | None = None
    heldout_mean_return: float | None = None
    heldout_std_return: float | None = None
    heldout_returns: list[float] | None = None
    heldout_errors: int | None = None
    auxiliary: dict[str, Any] = Field(default_factory=dict)


class Timing(_Record):
    start_time: str
    end_time: str
    wall_time_seconds: float
    finalize_seconds: float | None = None


class BudgetRecord(_Record):
    limit: int
    used: int
    n_submits: int


class SubmitRecord(_Record):
    """One line of the submit history (enough for learning curves without reading feedback)."""

    index: int
    status: str
    cost: int
    n_episodes: int
    first_global_episode: int | None = None
    mean_return: float | None = None
    returns: list[float] | None = None
    errors: int = 0
    wall_time_seconds: float = 0.0
    tree_hash: str | None = None


class AgentRecord(_Record):
    """The agent's part of the run, summed over every start of the run (a resumed run
    continues its agent's session; ``sessions`` has one entry per start, in order).

    ``turns`` counts every prompt sent, retries and turns cut short by a kill included;
    ``usage`` sums the token counters the agent CLI reported (e.g. ``input_tokens``,
    ``output_tokens``), ``cost_usd`` its reported cost (None when it reports none) and
    ``wall_time_seconds`` the time the sessions ran. ``reason`` and ``session`` are those of
    the last session.
    """

    kind: str
    name: str
    reason: str | None = None
    turns: int = 0
    session: str | None = None
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    wall_time_seconds: float = 0.0
    sessions: list[dict[str, Any]] = Field(default_factory=list)


class RunRecord(_Record):
    """``run.json``, written once, atomically, when the run ends. ``isolation`` says how
    policy code was isolated (level, mechanisms, known gaps, limits); ``integrity`` holds the
    journal head it was written after and an HMAC over the rest (``evopolicygym verify``)."""

    schema_version: str = SCHEMA_VERSION
    protocol_version: str = PROTOCOL_VERSION
    harness_version: str = HARNESS_VERSION
    model: str
    env: str
    exp_id: str
    experiment_dimensions: dict[str, Any]
    timing: Timing
    outcome: Outcome
    budget: BudgetRecord
    submits: list[SubmitRecord] = Field(default_factory=list)
    agent: AgentRecord | None = None
    isolation: dict[str, Any] = Field(default_factory=dict)
    artifacts: dict[str, str] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    integrity: dict[str, str] | None = None
