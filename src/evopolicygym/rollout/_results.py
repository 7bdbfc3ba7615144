"""What the judge reads back from workers, validated: a worker runs untrusted code, so every
field it sends is checked before use."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class EpisodeError(BaseModel):
    model_config = ConfigDict(extra="ignore")

    category: str
    message: str
    traceback: str | None = None
    step_index: int | None = None


class EpisodeResult(BaseModel):
    """One finished (or failed) episode. ``trajectory`` holds ``trajectory.jsonl`` bytes and
    ``observations`` the ``.npy``/``.npz`` bytes when the episode was recorded."""

    model_config = ConfigDict(extra="ignore")

    index: int
    return_: float
    length: int
    error: EpisodeError | None = None
    stdout: str = ""
    stderr: str = ""
    obs_format: Literal["npy", "npz"] | None = None
    trajectory: bytes = b""
    observations: bytes = b""

    @property
    def timed_out(self) -> bool:
        return self.error is not None and self.error.category in ("act_timeout", "episode_timeout")


class InitFailure(BaseModel):
    """The policy could not be loaded or constructed: the whole submit gets ``verdict``."""

    verdict: str
    message: str
    traceback: str | None = None
    stdout: str = ""
    stderr: str = ""
