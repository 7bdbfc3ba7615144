"""``check-envs``: readiness checks per environment, by level.

Levels (each includes the ones below):

- **L0 catalogued**: the spec is complete (upstream id, explicit step cap and its source, reward,
  a known family and extra).
- **L1 smoke**: the environment builds, describes its spaces as strict JSON, resets and steps
  with a JSON-safe observation that matches its schema, a sampled action passes coercion
  unchanged, and the same seed replays the same trajectory after another episode ran.
- **L2 tasked**: the task text has every required section and agrees with the spec and the
  schemas (step cap, space types, observation storage).
- **L3 scored**: a random anchor is recorded with its source, and hidden evaluation replays
  train: the built-in random policy's episodes, played by a train worker and by a sealed
  worker in lock step, are the same (:mod:`~evopolicygym.readiness.replay`).
- **L4 calibrated**: a built-in agent, run through a real judge, beats the uniform random policy
  on the same held-out cases by more than two standard errors (``evopolicygym calibrate``). The
  check reads the envspec's recorded ``[calibration]``; with ``live=True`` (``check-envs
  --calibrate``) it runs the agent instead.

Each check is a small function ``check(context) -> str`` returning a note, raising
:class:`CheckFailed` (or any exception) to fail. An environment is checked up to its declared
level; it fails when any of those checks fails. A failure to register or build is a failure
with the error shown, never a silently dropped row.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import json
import re
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import gymnasium
from pydantic import BaseModel, Field

from evopolicygym.envs import (
    BULK_PREFIX,
    Calibration,
    EnvSpec,
    Level,
    SpaceSchemas,
    World,
    default_registry,
    get_env,
)
from evopolicygym.envs.bulk import registered_plugins
from evopolicygym.envs.families import FAMILIES, family_of
from evopolicygym.envs.spaces import conformance_problems, schema_has_image
from evopolicygym.envs.tasktext import missing_sections, sections

from .calibration import calibrate
from .discover import bulk_ids
from .replay import REPLAY_SEEDS, REPLAY_STEPS, replay_differences

__all__ = [
    "CHECKS",
    "LEVELS",
    "CheckFailed",
    "CheckOutcome",
    "CheckReport",
    "EnvCheck",
    "check_env",
    "check_envs",
    "parse_level",
]

LEVELS: tuple[Level, ...] = get_args(Level)
DETERMINISM_STEPS = 40
# The episode run in between is longer: leftover state often shows only after a long episode.
INTERVENING_STEPS = 200
KNOWN_EXTRAS = {family.extra for family in FAMILIES.values()}
OUTPUT_TAIL = 2000


class CheckFailed(Exception):
    """A check found a problem; the message says what and, where possible, how to fix it."""


def parse_level(text: str) -> Level:
    """Accepts ``L2``, ``l2`` or ``2``."""
    value = text.strip().upper()
    value = value if value.startswith("L") else f"L{value}"
    if value not in LEVELS:
        raise ValueError(f"unknown level {text!r}; use one of {', '.join(LEVELS)}")
    return value  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# Reports


class CheckOutcome(BaseModel):
    name: str
    level: Level
    ok: bool
    message: str = ""


class EnvCheck(BaseModel):
    """The result for one environment."""

    env: str
    family: str = ""
    extra: str = ""
    core16: bool = False
    declared_level: Level = "L0"
    reached_level: Level | None = Field(
        None, description="Highest level whose checks and all lower ones passed."
    )
    ok: bool
    checks: list[CheckOutcome] = Field(default_factory=list)
    calibration: Calibration | None = Field(
        None, description="The L4 measurement the check used (recorded or live)."
    )
    error: str | None = Field(None, description="Why the env could not be checked at all.")
    seconds: float = 0.0
    stderr: str | None = Field(None, description="Tail of the child's stderr (--isolate).")


class CheckReport(BaseModel):
    """What ``check-envs --output FILE`` writes."""

    created_at: str
    total: int
    ok: int
    failed: int
    by_level: dict[str, int] = Field(description="Environments per reached level.")
    envs: list[EnvCheck]


# ---------------------------------------------------------------------------------------------
# Checks


@dataclass
class Context:
    spec: EnvSpec
    world: World | None = None
    schemas: SpaceSchemas | None = None
    live: bool = False
    calibration: Calibration | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def need_world(self) -> World:
        if self.world is None:
            self.world = self.spec.make_world()
        return self.world

    def need_schemas(self) -> SpaceSchemas:
        if self.schemas is None:
            self.schemas = self.spec.describe()
        return self.schemas


def spec_complete(ctx: Context) -> str:
    spec = ctx.spec
    problems = []
    if spec.adapter == "gymnasium" and not spec.upstream:
        problems.append("no upstream Gymnasium id")
    if not spec.step_cap_source.strip():
        problems.append("step_cap_source is empty: say where the step cap comes from")
    if not spec.reward.strip():
        problems.append("reward description is empty")
    if spec.family not in FAMILIES:
        problems.append(f"unknown family {spec.family!r} (known: {', '.join(FAMILIES)})")
    if spec.extra not in KNOWN_EXTRAS:
        problems.append(f"unknown extra {spec.extra!r} (known: {sorted(KNOWN_EXTRAS)})")
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"{spec.max_episode_steps} steps ({spec.step_cap_source})"


def builds(ctx: Context) -> str:
    world = ctx.need_world()
    if not isinstance(world, World):
        raise CheckFailed(f"{type(world).__name__} does not implement the World protocol")
    return type(world).__name__


def describes(ctx: Context) -> str:
    schemas = ctx.need_schemas()
    for name, schema in zip(("obs_space", "action_space"), schemas, strict=True):
        if not isinstance(schema, dict) or "type" not in schema:
            raise CheckFailed(f"{name} schema has no 'type': {schema!r:.200}")
        text = json.dumps(schema, allow_nan=False)
        if json.loads(text) != schema:
            raise CheckFailed(f"{name} schema does not survive a JSON round trip")
    return f"obs {schemas.obs_space['type']}, action {schemas.action_space['type']}"


def resets_and_steps(ctx: Context) -> str:
    world, schemas = ctx.need_world(), ctx.need_schemas()
    obs = world.observe(world.reset(12345))
    json.dumps(obs, allow_nan=False)
    problems = conformance_problems(schemas.obs_space, obs)
    if problems:
        raise CheckFailed("reset observation does not match obs_space: " + "; ".join(problems[:3]))
    action = world.sample()
    json.dumps(action, allow_nan=False)
    problems = conformance_problems(schemas.action_space, action)
    if problems:
        raise CheckFailed("sampled action does not match action_space: " + "; ".join(problems[:3]))
    turn = world.step(action)
    if type(turn.reward) is not float:
        raise CheckFailed(f"reward is {type(turn.reward).__name__}, expected float")
    if type(turn.terminated) is not bool or type(turn.truncated) is not bool:
        raise CheckFailed("terminated/truncated must be bools")
    json.dumps(turn.info, allow_nan=False)
    if turn.info.get("action_invalid"):
        raise CheckFailed("a JSON-safe sampled action was flagged action_invalid by coercion")
    problems = conformance_problems(schemas.obs_space, world.observe(turn.obs))
    if problems:
        raise CheckFailed("step observation does not match obs_space: " + "; ".join(problems[:3]))
    return f"reward {turn.reward:g}"


def _trajectory(world: World, seed: int, steps: int) -> list[Any]:
    rows: list[Any] = [world.observe(world.reset(seed))]
    for _ in range(steps):
        turn = world.step(world.sample())
        rows.append((world.observe(turn.obs), turn.reward, turn.terminated, turn.truncated))
        if turn.terminated or turn.truncated:
            break
    return rows


def seeded_determinism(ctx: Context) -> str:
    world = ctx.need_world()
    steps = min(DETERMINISM_STEPS, ctx.spec.max_episode_steps)
    first = _trajectory(world, 101, steps)
    other = _trajectory(world, 202, min(INTERVENING_STEPS, ctx.spec.max_episode_steps))
    again = _trajectory(world, 101, steps)
    if again != first:
        diverged = next(i for i, (a, b) in enumerate(zip(first, again, strict=False)) if a != b)
        raise CheckFailed(
            f"seed 101 replayed differently after another episode (first difference at step "
            f"{diverged}); set recreate_per_episode = true in the envspec if the env keeps "
            "state across resets"
        )
    note = f"{len(first) - 1} steps replayed"
    if other[: len(first)] == first and len(first) > 2:
        note += " (warning: seeds 101 and 202 gave identical episodes)"
    return note


def task_sections(ctx: Context) -> str:
    if not ctx.spec.task.strip():
        raise CheckFailed("no task text: write the .md file beside the envspec")
    missing = missing_sections(ctx.spec.task)
    if missing:
        raise CheckFailed("task text lacks sections: " + ", ".join(f"## {m}" for m in missing))
    return "all sections present"


def _types(schema: dict[str, Any]) -> set[str]:
    found = {schema.get("type", "")}
    children = schema.get("spaces")
    if isinstance(children, dict):
        children = list(children.values())
    for child in children or ():
        found |= _types(child)
    return found


def task_consistent(ctx: Context) -> str:
    spec, schemas = ctx.spec, ctx.need_schemas()
    parts = sections(spec.task)
    problems = []
    if not re.search(rf"(?<![\d.,]){spec.max_episode_steps}(?![\d]|[.,]\d)", spec.task):
        problems.append(f"the step cap {spec.max_episode_steps} is not mentioned")
    for section, schema in (("Observation", schemas.obs_space), ("Action", schemas.action_space)):
        named = {kind for kind in _types(schema) if kind in parts.get(section, "")}
        if not named:
            problems.append(f"## {section} names none of the schema types {sorted(_types(schema))}")
    if schema_has_image(schemas.obs_space) != (spec.obs_storage == "external"):
        problems.append(
            f"obs_storage = {spec.obs_storage!r} but the observation schema "
            f"{'has' if schema_has_image(schemas.obs_space) else 'has no'} Image"
        )
    if problems:
        raise CheckFailed("; ".join(problems))
    return "consistent with the schema"


def random_anchor(ctx: Context) -> str:
    anchors = ctx.spec.anchors
    if anchors.random is None:
        raise CheckFailed(
            "no random anchor: measure it with `python -m evopolicygym.readiness.anchors --env "
            f"{ctx.spec.id}` and record it under [anchors]"
        )
    if not anchors.random_source.strip():
        raise CheckFailed("anchors.random_source is empty: say how the anchor was measured")
    return f"random {anchors.random:g}"


def hidden_replays_train(ctx: Context) -> str:
    problems = replay_differences(ctx.spec, ctx.need_schemas())
    if problems:
        raise CheckFailed("hidden evaluation does not replay train: " + "; ".join(problems))
    return (
        f"{len(REPLAY_SEEDS)} random-policy episodes of up to {REPLAY_STEPS} steps: hidden = train"
    )


def expert_beats_random(ctx: Context) -> str:
    anchors = ctx.spec.anchors
    if anchors.expert is None:
        return "no expert reference recorded"
    if not anchors.expert_source.strip():
        raise CheckFailed("anchors.expert_source is empty: say where the expert number comes from")
    if anchors.random is not None and anchors.expert <= anchors.random:
        raise CheckFailed(f"expert {anchors.expert:g} does not beat random {anchors.random:g}")
    return f"expert {anchors.expert:g}"


def calibrated(ctx: Context) -> str:
    if ctx.live:
        ctx.calibration = calibrate(ctx.spec)
    elif ctx.spec.calibration is None:
        raise CheckFailed(
            "no calibration recorded: run `evopolicygym calibrate --env "
            f"{ctx.spec.id} --record` (or check live with --calibrate)"
        )
    else:
        ctx.calibration = ctx.spec.calibration
    result = ctx.calibration
    if not result.improved:
        raise CheckFailed(
            f"no clear improvement on random: {result.describe()}; the margin "
            f"{result.margin:.3g} is within two standard errors ({result.threshold:.3g})"
        )
    return result.describe()


CHECKS: tuple[tuple[Level, Callable[[Context], str]], ...] = (
    ("L0", spec_complete),
    ("L1", builds),
    ("L1", describes),
    ("L1", resets_and_steps),
    ("L1", seeded_determinism),
    ("L2", task_sections),
    ("L2", task_consistent),
    ("L3", random_anchor),
    ("L3", hidden_replays_train),
    ("L3", expert_beats_random),
    ("L4", calibrated),
)


def _short_error(exc: BaseException) -> str:
    if isinstance(exc, CheckFailed):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def check_spec(spec: EnvSpec, *, up_to: Level | None = None, live: bool = False) -> EnvCheck:
    """Run the checks of ``spec`` up to its declared level (or ``up_to``); ``live`` runs the
    L4 calibration instead of reading the recorded one."""
    limit = LEVELS.index(up_to or spec.level)
    started = time.perf_counter()
    ctx = Context(spec, live=live)
    outcomes: list[CheckOutcome] = []
    try:
        for level, check in CHECKS:
            if LEVELS.index(level) > limit:
                break
            try:
                outcomes.append(
                    CheckOutcome(name=check.__name__, level=level, ok=True, message=check(ctx))
                )
            except Exception as exc:
                outcomes.append(
                    CheckOutcome(
                        name=check.__name__, level=level, ok=False, message=_short_error(exc)
                    )
                )
    finally:
        if ctx.world is not None:
            ctx.world.close()
    reached: Level | None = None
    for level in LEVELS[: limit + 1]:
        if all(o.ok for o in outcomes if o.level == level):
            reached = level
        else:
            break
    return EnvCheck(
        env=spec.id,
        family=spec.family,
        extra=spec.extra,
        core16=spec.core16,
        declared_level=spec.level,
        reached_level=reached,
        ok=all(o.ok for o in outcomes),
        calibration=ctx.calibration,
        checks=outcomes,
        seconds=round(time.perf_counter() - started, 3),
    )


def check_env(
    env_id: str, *, bulk: bool = False, up_to: Level | None = None, live: bool = False
) -> EnvCheck:
    """Check one environment by id. Failing to resolve the id is a failed row, not an error."""
    started = time.perf_counter()
    if (
        bulk
        and up_to == "L0"
        and env_id.startswith(BULK_PREFIX)
        and env_id not in default_registry()
    ):
        return _catalogued(env_id)
    try:
        spec = get_env(env_id, bulk=bulk)
    except Exception as exc:
        return EnvCheck(
            env=env_id,
            ok=False,
            error=f"could not register: {_short_error(exc)}",
            checks=[
                CheckOutcome(name="registered", level="L0", ok=False, message=_short_error(exc))
            ],
            seconds=round(time.perf_counter() - started, 3),
        )
    return check_spec(spec, up_to=up_to, live=live)


def _catalogued(env_id: str) -> EnvCheck:
    """An L0 row for a discovered id: registered upstream, not built."""
    registered_plugins()
    upstream = env_id.removeprefix(BULK_PREFIX)
    if upstream not in gymnasium.registry:
        outcome = CheckOutcome(
            name="registered", level="L0", ok=False, message="not in the Gymnasium registry"
        )
        return EnvCheck(env=env_id, ok=False, checks=[outcome])
    family = family_of(upstream)
    outcome = CheckOutcome(name="registered", level="L0", ok=True, message=f"family {family}")
    return EnvCheck(
        env=env_id,
        family=family,
        extra=FAMILIES[family].extra,
        declared_level="L0",
        reached_level="L0",
        ok=True,
        checks=[outcome],
    )


# ---------------------------------------------------------------------------------------------
# Running many


@dataclass(frozen=True)
class Target:
    env: str
    bulk: bool = False
    up_to: Level | None = None
    live: bool = False


def select_targets(
    envs: Iterable[str] = (),
    *,
    bulk: bool = False,
    discover: bool = False,
    min_level: Level = "L0",
    live: bool = False,
) -> list[Target]:
    """Which environments to check: the given ids, or every curated env declared at
    ``min_level`` or above; ``bulk`` adds every installed non-curated id at L1; ``discover``
    adds them at L0 (catalogued in the installed registry). ``live``: calibrate L4 live."""
    registry = default_registry()
    explicit = list(envs)
    if explicit:
        return [
            Target(env, bulk=bulk or env.startswith(BULK_PREFIX), live=live) for env in explicit
        ]
    threshold = LEVELS.index(min_level)
    targets = [
        Target(spec.id, live=live)
        for spec in registry.specs()
        if LEVELS.index(spec.level) >= threshold
    ]
    if bulk or discover:
        curated_upstreams = {BULK_PREFIX + (spec.upstream or "") for spec in registry.specs()}
        extra_level: Level = "L1" if bulk else "L0"
        if LEVELS.index(extra_level) >= threshold:
            targets += [
                Target(env, bulk=True, up_to=extra_level)
                for env in bulk_ids()
                if env not in registry and env not in curated_upstreams
            ]
    return targets


def _run_isolated(target: Target, timeout: float | None) -> EnvCheck:
    command = [sys.executable, "-m", "evopolicygym.cli", "_check-one-env", "--env", target.env]
    if target.bulk:
        command.append("--bulk")
    if target.up_to:
        command += ["--up-to", target.up_to]
    if target.live:
        command.append("--calibrate")
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        tail = (exc.stderr or b"")[-OUTPUT_TAIL:]
        return EnvCheck(
            env=target.env,
            ok=False,
            error=f"check_timeout: no result within {timeout:g} s",
            seconds=round(time.perf_counter() - started, 3),
            stderr=tail.decode(errors="replace") if isinstance(tail, bytes) else tail,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    try:
        result = EnvCheck.model_validate_json(lines[-1])
    except (IndexError, ValueError):
        return EnvCheck(
            env=target.env,
            ok=False,
            error=f"check_crash: the child exited with {done.returncode} and no result line",
            seconds=round(time.perf_counter() - started, 3),
            stderr=done.stderr[-OUTPUT_TAIL:],
        )
    if not result.ok:
        result.stderr = done.stderr[-OUTPUT_TAIL:] or None
    return result


def _run_in_process(target: Target) -> EnvCheck:
    try:
        return check_env(target.env, bulk=target.bulk, up_to=target.up_to, live=target.live)
    except Exception as exc:  # a crash in one env must not hide the others
        return EnvCheck(
            env=target.env,
            ok=False,
            error="check_exception: " + traceback.format_exc(limit=5) + str(exc),
        )


def check_envs(
    targets: list[Target],
    *,
    isolate: bool = False,
    jobs: int = 1,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> CheckReport:
    """Check every target and collect a :class:`CheckReport`. With ``isolate`` each env runs
    in its own subprocess (``jobs`` at a time, killed after ``timeout`` seconds)."""
    results: list[EnvCheck | None] = [None] * len(targets)

    def finished(index: int, result: EnvCheck) -> None:
        results[index] = result
        if progress:
            count = sum(r is not None for r in results)
            status = "ok" if result.ok else "FAILED"
            level = result.reached_level or "-"
            line = f"[{count}/{len(targets)}] {result.env}: {status} (reached {level}, {result.seconds:.1f}s)"
            failures = [c for c in result.checks if not c.ok]
            if failures:
                line += "".join(f"\n    {c.level} {c.name}: {c.message}" for c in failures)
            elif result.error:
                line += f"\n    {result.error.splitlines()[0]}"
            progress(line)

    if isolate:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {pool.submit(_run_isolated, t, timeout): i for i, t in enumerate(targets)}
            for future in concurrent.futures.as_completed(futures):
                finished(futures[future], future.result())
    else:
        for index, target in enumerate(targets):
            finished(index, _run_in_process(target))
    rows = [r for r in results if r is not None]
    by_level = {level: sum(r.reached_level == level for r in rows) for level in LEVELS}
    by_level["none"] = sum(r.reached_level is None for r in rows)
    return CheckReport(
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        total=len(rows),
        ok=sum(r.ok for r in rows),
        failed=sum(not r.ok for r in rows),
        by_level=by_level,
        envs=rows,
    )


def check_one_env_main(env: str, bulk: bool, up_to: str | None, live: bool = False) -> int:
    """The hidden ``_check-one-env`` command: one JSON line on stdout, exit 0 if ok."""
    result = check_env(env, bulk=bulk, up_to=parse_level(up_to) if up_to else None, live=live)
    sys.stdout.write(result.model_dump_json() + "\n")
    sys.stdout.flush()
    return 0 if result.ok else 1


def check_envs_command(
    envs: list[str],
    *,
    bulk: bool,
    discover: bool,
    min_level: str,
    isolate: bool,
    jobs: int,
    timeout: float,
    output: str | None,
    calibrate: bool = False,
) -> int:
    """``evopolicygym check-envs``: progress on stderr, a one-line summary on stdout, the full
    report in ``output`` (JSON); exit status 1 if any environment failed."""
    targets = select_targets(
        envs, bulk=bulk, discover=discover, min_level=parse_level(min_level), live=calibrate
    )
    if not targets:
        raise ValueError(f"no environments declared at {min_level} or above")
    sys.stderr.write(f"checking {len(targets)} environment(s)\n")
    report = check_envs(
        targets,
        isolate=isolate,
        jobs=jobs,
        timeout=timeout or None,
        progress=lambda line: sys.stderr.write(line + "\n"),
    )
    if output:
        Path(output).write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    summary = {k: v for k, v in report.model_dump().items() if k != "envs"}
    summary["failed_envs"] = [row.env for row in report.envs if not row.ok]
    sys.stdout.write(json.dumps(summary) + "\n")
    return 1 if report.failed else 0
