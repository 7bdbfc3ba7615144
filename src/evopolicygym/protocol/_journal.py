"""Records of ``.judge/journal.jsonl``: everything that changes a run's budget or history, one
JSON line each, in the order it happened.

Every line also carries ``time`` and ``mac``, an HMAC-SHA256 (keyed by the run's private
``.judge/key``) of the previous line's ``mac`` and this record: a line edited, removed or
reordered breaks the chain, and the judge refuses to resume or score such a run.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._run_record import SubmitRecord


class _Journal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    time: str = ""
    mac: str = ""


class OpenRecord(_Journal):
    """The run started (``resume``: continued after an interruption)."""

    type: Literal["open", "resume"]
    budget: int


class FingerprintRecord(_Journal):
    """The interpreter and libraries the workers import, as found when a session's lane hosts
    came up (``judge.integrity.interpreter_fingerprint``); the run's first one is the
    reference every later check compares with."""

    type: Literal["fingerprint"] = "fingerprint"
    value: str


class SubmitBegin(_Journal):
    """A submit was accepted for judging; ``n_episodes`` ids were requested."""

    type: Literal["submit_begin"] = "submit_begin"
    index: int
    n_episodes: int


class SubmitCommit(_Journal):
    """A submit's feedback is in place and its cost charged (``recovered``: settled on resume
    from feedback already written)."""

    type: Literal["submit_commit"] = "submit_commit"
    index: int
    submit: SubmitRecord
    recovered: bool = False


class SubmitRollback(_Journal):
    """An interrupted submit whose feedback never became visible: nothing charged."""

    type: Literal["submit_rollback"] = "submit_rollback"
    index: int


class Evaluation(_Journal):
    """One hidden evaluation of checkpoint ``index``: validation or held-out. ``failure`` is a
    verdict when the checkpoint could not be evaluated (then ``mean`` is None and ``errors``
    -1): it did not start, or its content no longer matched its hash (``tampered``)."""

    type: Literal["validation", "heldout"]
    index: int
    mean: float | None
    std: float | None = None
    returns: list[float] = Field(default_factory=list)
    errors: int = 0
    failure: str | None = None
    message: str | None = None


class Closed(_Journal):
    """The run ended; ``outcome`` is the ``outcome`` of ``run.json``."""

    type: Literal["closed"] = "closed"
    outcome: dict[str, Any]


JournalRecord = Annotated[
    OpenRecord
    | FingerprintRecord
    | SubmitBegin
    | SubmitCommit
    | SubmitRollback
    | Evaluation
    | Closed,
    Field(discriminator="type"),
]
