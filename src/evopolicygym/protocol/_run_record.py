"""Model of ``run.json``: the complete, self-contained record of one finished run."""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Literal

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


class ProtocolFingerprint(_Record):
    """What must be equal for two runs' scores to be compared. ``None`` means *not recorded*
    (published results do not give every field) and matches any value.

    ``cases`` identifies the case seeds played (train, validation, held-out, in order) by the
    SHA-256 of their list, so it names a seed-generated split and a private split alike;
    ``cases_seed`` is the generator seed when the split is known to come from one."""

    env: str
    env_version: str | None = None
    budget: int | None = None
    min_episodes_per_submit: int | None = None
    max_episodes_per_submit: int | None = None
    train_cases: int | None = None
    valid_size: int | None = None
    heldout_size: int | None = None
    cases: str | None = None
    cases_seed: int | None = None
    max_episode_steps: int | None = None
    harness_version: str | None = None

    # Fields that can differ between the environments of one comparison (each environment has
    # its own step cap and train pool, hence its own case lists); runs of one environment must
    # still agree on them.
    PER_ENV: ClassVar[tuple[str, ...]] = (
        "env",
        "env_version",
        "max_episode_steps",
        "train_cases",
        "cases",
    )

    def settings(self, *, per_env: bool = True) -> dict[str, Any]:
        """The fields that decide comparability (``cases_seed`` only labels ``cases``);
        ``per_env=False`` leaves out those that differ between environments."""
        data = self.model_dump(include=set(type(self).model_fields) - {"cases_seed"})
        if not per_env:
            data = {k: v for k, v in data.items() if k not in self.PER_ENV}
        return data

    def digest(self, *, per_env: bool = True) -> str:
        """Short stable name of :meth:`settings` (12 hex digits)."""
        text = json.dumps(self.settings(per_env=per_env), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def differences(self, other: ProtocolFingerprint, *, per_env: bool = True) -> list[str]:
        """``field: mine vs theirs`` for every recorded field that differs (``None`` on either
        side never differs)."""
        mine, theirs = self.settings(per_env=per_env), other.settings(per_env=per_env)
        return [
            f"{key}: {_short(mine[key])} vs {_short(theirs[key])}"
            for key in mine
            if mine[key] is not None and theirs[key] is not None and mine[key] != theirs[key]
        ]


def _short(value: Any) -> str:
    """Digests shortened to 12 hex digits for messages."""
    text = str(value)
    return text[:19] if text.startswith("sha256:") else text


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
    protocol: ProtocolFingerprint | None = Field(
        None,
        description="Since schema 0.4: the run's protocol fingerprint (None in older records).",
    )
    integrity: dict[str, str] | None = None
