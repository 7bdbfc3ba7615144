"""Writes ``workspace/feedback/submit_NNN/``, made visible in one step (temporary dir + rename)."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import orjson

from evopolicygym.envs.jsonsafe import to_jsonsafe
from evopolicygym.protocol import ErrorLine, Steps, SubmitSummary
from evopolicygym.rollout import EpisodeResult

from .ledger import fsync_directory, submit_dirname, utc_now


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
            lines.append(orjson.dumps(to_jsonsafe(row)))
    return b"\n".join(lines) + b"\n"


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
    """One submit's feedback while it is being judged, in ``.submit_NNN.tmp``.

    Episodes are written as they finish (from pool threads; each to its own directory) and their
    bulky bytes are released, so neither memory nor the final write grows with the submit.
    :meth:`commit` adds ``summary.json`` and ``errors.txt`` and renames the directory into place:
    the agent sees all of a submit's feedback or none of it. Episode directories are named
    ``ep_XXX`` by global episode number (``first_global_episode`` + local position)."""

    def __init__(self, root: Path, index: int, *, first_global: int, episode_width: int):
        self.root = root
        self.final = root / submit_dirname(index)
        self.temporary = root / f".{self.final.name}.tmp"
        self.first_global = first_global
        self.episode_width = episode_width
        self.episode_errors: dict[int, ErrorLine] = {}
        shutil.rmtree(self.temporary, ignore_errors=True)
        self.temporary.mkdir(parents=True)

    def add_episode(self, result: EpisodeResult) -> None:
        local = result.index
        number = self.first_global + local
        directory = self.temporary / "episodes" / f"ep_{number:0{self.episode_width}d}"
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

    def commit(self, summary: SubmitSummary, errors: list[ErrorLine]) -> Path:
        errors = errors + [self.episode_errors[i] for i in sorted(self.episode_errors)]
        (self.temporary / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
        if errors:
            lines = "".join(e.model_dump_json() + "\n" for e in errors)
            (self.temporary / "errors.txt").write_text(lines)
        # One directory fsync: the rename must be on disk before the journal charges the
        # submit; the files inside need not be (after a machine crash the submit is redone).
        shutil.rmtree(self.final, ignore_errors=True)  # what such a crash may have left
        self.temporary.replace(self.final)
        fsync_directory(self.root)
        return self.final


def dump_summary(summary: SubmitSummary) -> dict:
    return json.loads(summary.model_dump_json())


__all__ = ["FeedbackDraft", "dump_summary", "episode_statistics", "utc_now"]
