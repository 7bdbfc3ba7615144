"""Models of the feedback the judge writes into ``workspace/feedback/submit_NNN/``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ._versions import SCHEMA_VERSION


class SubmitSummary(BaseModel):
    """``summary.json``: one per judged submit, rejects included.

    Field names follow the reference protocol. ``returns`` and the statistics are present
    whenever episodes ran (they include episodes that ended in an error, with the return
    collected until the error); ``errors`` lists the 0-based positions of those episodes in
    this submit and ``timeouts`` the subset that hit a time limit. ``message`` explains a
    verdict other than ``ok`` in one line; the full text and traceback are in ``errors.txt``.
    """

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    submit_index: int
    env: str
    status: str
    message: str | None = None
    n_episodes: int
    first_global_episode: int | None
    env_instances: list[int]
    remaining_budget: int
    submit_started_at: str
    submit_completed_at: str
    wall_time_seconds: float
    returns: list[float] | None = None
    mean_return: float | None = None
    std_return: float | None = None
    min_return: float | None = None
    max_return: float | None = None
    episode_lengths: list[int] | None = None
    mean_episode_length: float | None = None
    timeouts: list[int] | None = None
    errors: list[int] | None = None
    reward_components_mean: dict[str, float] | None = None
    reward_components_per_episode: list[dict[str, float]] | None = None


class ErrorLine(BaseModel):
    """One JSON line of ``errors.txt`` (per submit) or ``ep_XXX/error.txt`` (per episode).

    ``category`` is a verdict (submit-level failure) or an episode error kind. ``message`` holds
    the exception type and text, ``traceback`` the formatted traceback of the policy code when
    one exists. ``episode`` is the 0-based position in the submit and ``step_index`` the step
    at which an episode failed.
    """

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    timestamp: str
    category: str
    message: str
    traceback: str | None = None
    episode: int | None = None
    step_index: int | None = None


class TrajectoryRow(BaseModel):
    """One line of ``trajectory.jsonl``. ``obs`` is the observation given to ``act`` at step
    ``t`` (``None`` when stored in ``observations.npy``/``.npz``, row ``t`` = array index ``t``);
    ``action`` is what the policy returned, before coercion."""

    model_config = ConfigDict(extra="allow")

    t: int
    obs: Any
    action: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
