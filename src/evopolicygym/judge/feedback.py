"""Writes ``workspace/feedback/submit_NNN/``: drafted out of the agent's sight, made visible in
one rename once the journal has charged the submit."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any

import orjson

from evopolicygym.protocol import ErrorLine, Steps, SubmitSummary
from evopolicygym.rollout import EpisodeResult

from .ledger import publish_draft, submit_dirname, utc_now


def episode_statistics(results: list[EpisodeResult]) -> dict:
    """Summary fields computed from episode results (errored episodes count with the return they
    collected before the error)."""
    returns = [r.episode_return for r in results]
    lengths = [r.length for r in results]
    return {
        "returns": returns,
        "mean_return": statistics.fmean(returns),
        "std_return": statistics.pstdev(returns),
        "min_return": min(returns),
        "max_return": max(returns),
        "episode_lengths": lengths,
        "mean_episode_length": statistics.fmean(lengths),
        "errors": [i for i, r in enumerate(results) if r.error is not None],
        "timeouts": [i for i, r in enumerate(results) if r.timed_out],
    }


# What a trajectory row holds in place of a value nested too deep to write as JSON.
TOO_DEEP = "<not recorded: nested too deep for JSON>"


def trajectory_jsonl(steps: Steps | None) -> bytes:
    """``trajectory.jsonl``: one row per step (``t``, ``obs``, ``action``, ``reward``,
    ``terminated``, ``truncated``, ``info``); ``obs`` is null when stored in a file. Actions are
    what the policy returned, made JSON-safe only where JSON cannot hold them as they are."""
    if steps is None or not steps.actions:
        return b""
    column = steps.obs or [None] * len(steps.actions)
    lines = []
    for t, (obs, action, reward, terminated, truncated, info) in enumerate(
        zip(
            column,
            steps.actions,
            steps.rewards,
            steps.terminated,
            steps.truncated,
            steps.infos,
            strict=True,
        )
    ):
        row = {
            "t": t,
            "obs": obs,
            "action": action,
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "info": info,
        }
        try:
            lines.append(orjson.dumps(row))
        except TypeError:
            lines.append(_jsonsafe_row(row))
    return b"\n".join(lines) + b"\n"


def _jsonsafe_row(row: dict[str, Any]) -> bytes:
    """A row orjson cannot write as it is, made JSON-safe. A value nested deeper than JSON
    encoders go (orjson stops at 254 levels, ``to_jsonsafe`` at Python's recursion limit) is
    replaced by :data:`TOO_DEEP`: a policy's action is recorded as it returned it, and its
    episode's feedback must be written whatever it returned."""
    # Imported here: it loads NumPy, which the judge process otherwise never needs.
    from evopolicygym.envs.jsonsafe import to_jsonsafe

    try:
        return orjson.dumps(to_jsonsafe(row))
    except (TypeError, RecursionError):
        pass
    safe = {}
    for key, value in row.items():
        try:
            safe[key] = orjson.Fragment(orjson.dumps(to_jsonsafe(value)))
        except (TypeError, RecursionError):
            safe[key] = TOO_DEEP
    return orjson.dumps(safe)


def episode_error_line(local: int, result: EpisodeResult) -> ErrorLine:
    error = result.error
    return ErrorLine(
        timestamp=utc_now(),
        category=error.category,
        message=error.message,
        traceback=error.traceback,
        episode=local,
        step_index=error.step_index,
    )


class FeedbackDraft:
    """One submit's feedback while it is being judged, in the judge's private ``drafts``
    directory: a submit's results must not be readable before the journal has charged it.

    Episodes are written as they finish (from pool threads; each to its own directory) and their
    bulky bytes are released, so neither memory nor the final write grows with the submit.
    :meth:`seal` adds ``summary.json`` and ``errors.txt``; once the submit is charged,
    :meth:`publish` moves the directory into ``feedback/`` in one rename: the agent sees all of
    a submit's feedback or none of it. Episode directories are named ``ep_XXX`` by global
    episode number (``first_global_episode`` + local position)."""

    def __init__(
        self, drafts: Path, feedback: Path, index: int, *, first_global: int, episode_width: int
    ):
        self.feedback = feedback
        self.directory = drafts / submit_dirname(index)
        self.first_global = first_global
        self.episode_width = episode_width
        self.episode_errors: dict[int, ErrorLine] = {}
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)

    def add_episode(self, result: EpisodeResult) -> None:
        local = result.index
        number = self.first_global + local
        directory = self.directory / "episodes" / f"ep_{number:0{self.episode_width}d}"
        directory.mkdir(parents=True)
        (directory / "trajectory.jsonl").write_bytes(trajectory_jsonl(result.steps))
        (directory / "stdout.txt").write_text(result.stdout)
        (directory / "stderr.txt").write_text(result.stderr)
        if result.error is not None:
            line = episode_error_line(local, result)
            self.episode_errors[local] = line
            (directory / "error.txt").write_text(line.model_dump_json() + "\n")
        if result.obs_format and result.observations:
            (directory / f"observations.{result.obs_format}").write_bytes(result.observations)
        result.steps, result.observations = None, b""

    def seal(self, summary: SubmitSummary, errors: list[ErrorLine]) -> None:
        """Write the summary and the error lines (the submit's own, then its episodes')."""
        errors = errors + [self.episode_errors[i] for i in sorted(self.episode_errors)]
        (self.directory / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
        if errors:
            lines = "".join(e.model_dump_json() + "\n" for e in errors)
            (self.directory / "errors.txt").write_text(lines)

    def publish(self) -> Path:
        """Move the sealed draft to ``feedback/submit_NNN`` (see
        :func:`~evopolicygym.judge.ledger.publish_draft`); raises ``OSError`` when what the
        agent put in the way cannot be removed (the draft is published at the next start)."""
        return publish_draft(self.directory, self.feedback)


def dump_summary(summary: SubmitSummary) -> dict:
    return json.loads(summary.model_dump_json())


__all__ = ["FeedbackDraft", "dump_summary", "episode_statistics", "utc_now"]
