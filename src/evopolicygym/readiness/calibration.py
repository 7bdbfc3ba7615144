"""Readiness level L4: does a built-in agent improve on the uniform random policy within a budget?

A calibration is a real benchmark run: the judge on loopback, a built-in agent spending the
budget through ``POST /submit``, finalize picking a checkpoint on the validation cases and scoring
it on the held-out cases. The uniform random policy (``World.sample()`` every step, as for the
random anchor) then plays the same held-out cases. The environment is *calibrated* when the
agent's held-out mean beats random by more than two standard errors of the per-case
difference (:attr:`Calibration.improved`; both play the same cases, so start states cancel out): the task gives a learning signal that a simple search can follow
within the budget, so a coding agent's score on it measures something.

Hidden pools are cut to their first cases (8 validation, 32 held-out by default) because
finalize replays every checkpoint on the validation pool.

``evopolicygym calibrate --env gym/cartpole --record`` measures one environment and writes the
result into its envspec's ``[calibration]`` table; ``check-envs --calibrate`` measures live
instead of reading the recorded numbers. ``python -m evopolicygym.readiness.calibration
--markdown docs/envs/calibration.md`` regenerates the table of recorded calibrations.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import statistics
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import tomlkit

from evopolicygym.envs import Calibration, EnvSpec, default_registry
from evopolicygym.protocol import AgentSection, RunConfig, RunSection
from evopolicygym.runs import Progress, run_from_config, run_splits, stderr_progress

from .anchors import random_episode_return

__all__ = [
    "CalibrationError",
    "CalibrationSettings",
    "calibrate",
    "calibration_table",
    "record_calibration",
]

# Simulator distributions worth naming in a measurement, by their import name.
SIMULATORS = {
    "mujoco": "mujoco",
    "Box2D": "box2d",
    "minigrid": "minigrid",
    "highway_env": "highway-env",
    "gymnasium_robotics": "gymnasium-robotics",
    "ale_py": "ale-py",
}


class CalibrationError(RuntimeError):
    """The agent run ended without a scored checkpoint; the message says why."""


@dataclass(frozen=True)
class CalibrationSettings:
    """How to calibrate. The defaults keep a CartPole calibration under a minute on 2 cores."""

    agent: str = "builtin:hillclimb"
    """Agent kind, as for ``evopolicygym run --agent``."""
    budget: int = 32
    """Train episodes the agent may spend."""
    valid_size: int = 8
    """Validation cases (first N of the pool) that pick the checkpoint."""
    final_size: int = 32
    """Held-out cases (first N of the pool) that score it and the random policy."""
    jobs: int | None = None
    """Policy workers of the judge; default: number of cores."""


def _standard_error(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def _versions() -> str:
    names = ["gymnasium"] + [dist for module, dist in SIMULATORS.items() if module in sys.modules]
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def random_returns(spec: EnvSpec, seeds: list[int]) -> list[float]:
    """Uniform random returns on ``seeds`` (one episode each, capped at the spec's steps)."""
    world = spec.make_world()
    try:
        return [random_episode_return(world, seed, spec.max_episode_steps)[0] for seed in seeds]
    finally:
        world.close()


def calibrate(
    spec: EnvSpec,
    settings: CalibrationSettings = CalibrationSettings(),
    *,
    root: Path | None = None,
    progress: Progress = stderr_progress,
) -> Calibration:
    """Run ``settings.agent`` on ``spec`` through a real judge and compare its held-out score
    with the random policy on the same cases. The run lands in ``root`` (kept) or in a temporary
    directory (removed). Raises :class:`CalibrationError` when the run scores no checkpoint."""
    with tempfile.TemporaryDirectory(prefix="evopolicygym-calibrate-") as scratch:
        config = RunConfig(
            run=RunSection(
                env=spec.id,
                budget=settings.budget,
                root=root or Path(scratch) / "run",
                bulk=spec.source == "",
                model="calibration",
                exp_id=settings.agent.replace(":", "-"),
                valid_size=settings.valid_size,
                final_size=settings.final_size,
                jobs=settings.jobs,
            ),
            agent=AgentSection(kind=settings.agent, name="calibration"),
        )
        record = run_from_config(config, progress=progress)
    outcome = record.outcome
    if outcome.status != "completed" or not outcome.heldout_returns:
        reason = outcome.error.message if outcome.error else outcome.status
        raise CalibrationError(f"{settings.agent} on {spec.id} scored no checkpoint: {reason}")
    splits = run_splits(config, spec)
    progress(f"[calibrate] {spec.id}: random policy on the same {len(splits.heldout)} cases")
    baseline = random_returns(spec, splits.heldout)
    agent = outcome.heldout_returns
    return Calibration(
        agent=settings.agent,
        budget=settings.budget,
        valid_size=len(splits.valid),
        final_size=len(splits.heldout),
        agent_mean=statistics.fmean(agent),
        agent_se=_standard_error(agent),
        random_mean=statistics.fmean(baseline),
        random_se=_standard_error(baseline),
        margin_se=_standard_error([x - y for x, y in zip(agent, baseline, strict=True)]),
        seconds=round(record.timing.wall_time_seconds, 1),
        measured_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        versions=_versions(),
    )


def _toml_value(value: object) -> object:
    if isinstance(value, float):
        return float(f"{value:.6g}")  # six significant digits are plenty for a reader
    return value


def record_calibration(spec: EnvSpec, calibration: Calibration) -> str:
    """Write ``calibration`` into the envspec file as its ``[calibration]`` table (replacing an
    earlier one where it stands), and raise a declared L3 to L4 when it improved. The rest of
    the file, comments included, is kept as it was. Returns what changed."""
    if not spec.source:
        raise ValueError(f"{spec.id} has no envspec file to record into (a bulk id?)")
    path = Path(spec.source)
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    table = tomlkit.table()
    for key, value in calibration.model_dump().items():
        table.add(key, _toml_value(value))
    if "calibration" in document:
        document["calibration"] = table
    else:
        document.add("calibration", table)
    changes = [f"recorded [calibration] in {path}"]
    if calibration.improved and spec.level == "L3":
        document["level"] = "L4"
        changes.append("level L3 -> L4")
    text = tomlkit.dumps(document)
    Calibration.model_validate(tomllib.loads(text)["calibration"])  # it reads back the same
    path.write_text(text, encoding="utf-8")
    return "; ".join(changes)


TABLE_START = "<!-- calibration-table:start (python -m evopolicygym.readiness.calibration --markdown FILE) -->"
TABLE_END = "<!-- calibration-table:end -->"


def calibration_table(specs: list[EnvSpec]) -> str:
    """The recorded calibrations as a Markdown table, one row per envspec (in the given order);
    envspecs without one show what is missing."""
    lines = [
        "| env | level | agent | budget | held-out N | agent mean ± SE | random mean ± SE "
        "| margin (2 SE) | calibrated | agent run (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for spec in specs:
        c = spec.calibration
        if c is None:
            lines.append(f"| `{spec.id}` | {spec.level} | not measured |  |  |  |  |  |  |  |")
            continue
        lines.append(
            f"| `{spec.id}` | {spec.level} | {c.agent} | {c.budget} | {c.final_size} "
            f"| {c.agent_mean:.4g} ± {c.agent_se:.2g} | {c.random_mean:.4g} ± {c.random_se:.2g} "
            f"| {c.margin:+.4g} ({c.threshold:.2g}) | {'yes' if c.improved else 'no'} "
            f"| {c.seconds:.0f} |"
        )
    return "\n".join(lines) + "\n"


def render_into(text: str, table: str) -> str:
    """``text`` with the region between the table markers replaced by ``table``."""
    head, start, rest = text.partition(TABLE_START)
    _, end, tail = rest.partition(TABLE_END)
    if not start or not end:
        raise ValueError(f"the file has no {TABLE_START} ... {TABLE_END} region")
    return f"{head}{TABLE_START}\n{table}{TABLE_END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evopolicygym.readiness.calibration",
        description="Write the table of recorded calibrations (every curated envspec) into the "
        "marked region of a Markdown file, e.g. docs/envs/calibration.md.",
    )
    parser.add_argument("--markdown", required=True, type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    table = calibration_table(sorted(default_registry().specs(), key=lambda s: (s.family, s.id)))
    args.markdown.write_text(render_into(args.markdown.read_text(), table), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
