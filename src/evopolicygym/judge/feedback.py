"""Writes ``workspace/feedback/submit_NNN/`` in one atomic step (temporary dir + rename)."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

from evopolicygym.protocol import ErrorLine, SubmitSummary
from evopolicygym.rollout import EpisodeResult

from .ledger import fsync_directory, submit_dirname, utc_now


def episode_statistics(results: list[EpisodeResult]) -> dict:
    """Summary fields computed from episode results (errored episodes count with the return they
    collected before the error)."""
    returns = [r.return_ for r in results]
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


def episode_error_lines(results: list[EpisodeResult], timestamp: str) -> dict[int, ErrorLine]:
    return {
        i: ErrorLine(
            timestamp=timestamp,
            category=r.error.category,
            message=r.error.message,
            traceback=r.error.traceback,
            episode=i,
            step_index=r.error.step_index,
        )
        for i, r in enumerate(results)
        if r.error is not None
    }


def write_feedback(
    root: Path,
    summary: SubmitSummary,
    errors: list[ErrorLine],
    episodes: list[EpisodeResult],
    *,
    episode_width: int,
) -> Path:
    """Write one submit's feedback and rename it into place; returns the final directory.

    ``episodes`` are named ``ep_XXX`` by global episode number (``first_global_episode`` + local
    position), zero-padded to ``episode_width``."""
    final = root / submit_dirname(summary.submit_index)
    temporary = root / f".{final.name}.tmp"
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    (temporary / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
    if errors:
        (temporary / "errors.txt").write_text("".join(e.model_dump_json() + "\n" for e in errors))
    by_episode = {e.episode: e for e in errors if e.episode is not None}
    for local, result in enumerate(episodes):
        number = (summary.first_global_episode or 0) + local
        directory = temporary / "episodes" / f"ep_{number:0{episode_width}d}"
        directory.mkdir(parents=True)
        (directory / "trajectory.jsonl").write_bytes(result.trajectory)
        (directory / "stdout.txt").write_text(result.stdout)
        (directory / "stderr.txt").write_text(result.stderr)
        if local in by_episode:
            (directory / "error.txt").write_text(by_episode[local].model_dump_json() + "\n")
        if result.obs_format and result.observations:
            (directory / f"observations.{result.obs_format}").write_bytes(result.observations)
    fsync_directory(temporary)
    temporary.replace(final)
    fsync_directory(root)
    return final


def dump_summary(summary: SubmitSummary) -> dict:
    return json.loads(summary.model_dump_json())


__all__ = ["dump_summary", "episode_error_lines", "episode_statistics", "utc_now", "write_feedback"]
