"""Inside a run directory: its layout, the settings it keeps, the judge and the agent session,
finalize, and ``run.json``.

:func:`run_in_directory` is the second half of :func:`evopolicygym.runs.run_from_config`,
imported once the worker lanes are booting (this module's imports, NumPy and the agent adapters
among them, then load beside them).

Layout of ``<runs>/<model>/<env>/<exp_id>/`` (segments slugged)::

    run.json                 written once, atomically, at the end
    workspace/               the agent's cwd: AGENTS.md, system/, feedback/submit_NNN/
    checkpoints/submit_NNN/  snapshot of system/ per submit (+ metrics.json)
    logs/                    harness.log (JSONL events), agent transcripts, worker logs
    agent_state/             the agent CLI's session stores when it runs in the agent jail
    .judge/                  private: journal.jsonl, run_config.json, history.json, lock
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from evopolicygym.agents import (
    Launch,
    Resume,
    RunHistory,
    agent_jail,
    agents_md_sha256,
    agents_md_text,
    drive,
    make_harness,
)
from evopolicygym.cases import CaseSplits, load_splits, seed_split_hashes
from evopolicygym.display import SHOWN
from evopolicygym.envs import SELF_DESCRIBING_ADAPTERS, EnvSpec
from evopolicygym.judge import (
    Judge,
    JudgePaths,
    JudgeSettings,
    Ledger,
    Selection,
    interpreter_fingerprint,
    load_key,
    seal,
    utc_now,
    warm_digests,
    write_atomic,
)
from evopolicygym.protocol import (
    HARNESS_VERSION,
    AgentRecord,
    BudgetRecord,
    FingerprintRecord,
    LimitsSection,
    Outcome,
    ProtocolFingerprint,
    RunConfig,
    RunError,
    RunRecord,
    Timing,
)
from evopolicygym.rollout import WorkerPool, kept_off
from evopolicygym.run_lock import RunLock
from evopolicygym.sandbox import IsolationPlan


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def system(self) -> Path:
        return self.workspace / "system"

    @property
    def feedback(self) -> Path:
        return self.workspace / "feedback"

    @property
    def agents_md(self) -> Path:
        return self.workspace / "AGENTS.md"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def agent_state(self) -> Path:
        """The agent CLI's session stores, bound into the agent jail (see agents/_jail.py)."""
        return self.root / "agent_state"

    @property
    def private(self) -> Path:
        return self.root / ".judge"

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    def judge_paths(self) -> JudgePaths:
        return JudgePaths(self.system, self.feedback, self.checkpoints, self.private)

    def create(self) -> None:
        for directory in (self.system, self.feedback, self.checkpoints, self.logs, self.private):
            directory.mkdir(parents=True, exist_ok=True)
        self.private.chmod(0o700)  # the journal and its key: the judge's user only
        # The agent's files reach no other local user: in its jail the agent's uid maps to the
        # judge's, so a program it makes setuid would run as the judge's user.
        self.workspace.chmod(0o700)


class EventLog:
    """``logs/harness.log``: one JSON object per event. The events a plain log shows
    (:data:`evopolicygym.display.SHOWN`) also go to ``progress``."""

    def __init__(self, path: Path, progress: Callable[[str], None], label: str, display=None):
        self.path = path
        self.progress = progress
        self.label = label
        self.display = display  # a RunDisplay takes every event instead of the shown lines

    def __call__(self, event: str, **fields: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(
                json.dumps(
                    {"timestamp": utc_now(), "event": event, **fields}, sort_keys=True, default=str
                )
                + "\n"
            )
        if self.display is not None:
            self.display.event(self.label, event, fields)
        elif event in SHOWN:
            details = " ".join(f"{k}={_short(v)}" for k, v in fields.items())
            self.progress(f"[{self.label}] {event} {details}")


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _stage_agents_md(path: Path) -> None:
    """Write the rules to ``workspace/AGENTS.md``, unless a regular file is there already (a
    resumed run's: the agent may have edited its copy). What else an agent left at that name
    (a link, a FIFO, a socket) is removed, never followed; a directory is left alone."""
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(path).st_mode
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            return
        path.unlink()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(descriptor, "w", encoding="utf-8") as handle:
        handle.write(agents_md_text())


# Settings that change what a run's result means; a run directory keeps the ones it started with.
MEANINGFUL_SETTINGS = (
    "env",
    "budget",
    "minimum",
    "maximum",
    "valid_size",
    "final_size",
    "data",
    "bulk",
)


class SettingsChangedError(ValueError):
    """A run directory was started with other settings than the ones given now."""


class LibrariesChangedError(SettingsChangedError):
    """A run directory was started with other libraries (interpreter fingerprint) than the
    workers import now: resuming would score one run with two simulators."""


def _saved_settings(paths: RunPaths) -> dict | None:
    saved = paths.private / "run_config.json"
    return json.loads(saved.read_text()) if saved.exists() else None


def setting_differences(previous: dict, current: dict) -> list[str]:
    """``name OLD -> NEW`` for every meaningful setting (and the agent kind) that differs
    between two dumped run configs."""
    differences = [
        f"{key} {previous['run'].get(key)} -> {current['run'].get(key)}"
        for key in MEANINGFUL_SETTINGS
        if previous["run"].get(key) != current["run"].get(key)
    ]
    old_agent, new_agent = previous["agent"].get("kind"), current["agent"].get("kind")
    if old_agent != new_agent:
        differences.append(f"agent {old_agent} -> {new_agent}")
    return differences


def split_seed(config: RunConfig, spec: EnvSpec, splits: CaseSplits) -> int | None:
    """The generator seed of the run's cases: 0 for the built-in seed-0 splits; for a split
    directory, the seed its files name when ``data make`` with that seed gives the same bytes
    (``None`` for private or hand-made splits)."""
    if config.run.data is None:
        return 0
    try:
        document = json.loads((config.run.data / "train.json").read_text(encoding="utf-8"))
        seed = int(document["generator"]["seed"])
        pools = load_splits(config.run.data, spec.id)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    sizes = (len(pools.train), len(pools.valid), len(pools.heldout))
    return seed if seed_split_hashes(spec.id, seed, *sizes) == splits.hashes else None


def protocol_fingerprint(
    config: RunConfig, spec: EnvSpec, splits: CaseSplits, settings: JudgeSettings
) -> ProtocolFingerprint:
    """The fingerprint ``run.json`` records: what must match for scores to be compared."""
    return ProtocolFingerprint(
        env=spec.id,
        env_version=spec.version,
        budget=settings.budget,
        min_episodes_per_submit=settings.minimum,
        max_episodes_per_submit=settings.maximum,
        train_cases=len(splits.train),
        valid_size=len(splits.valid),
        heldout_size=len(splits.heldout),
        cases=splits.digest(),
        cases_seed=split_seed(config, spec, splits),
        max_episode_steps=spec.max_episode_steps,
        harness_version=HARNESS_VERSION,
    )


def _check_settings(paths: RunPaths, config: RunConfig) -> None:
    """Refuse to continue (or return) a run with settings that would change its meaning."""
    previous = _saved_settings(paths)
    if previous is None:
        return
    changed = setting_differences(previous, json.loads(config.model_dump_json()))
    if changed:
        state = "finished" if paths.run_json.exists() else "started"
        raise SettingsChangedError(
            f"{paths.root} was {state} with other settings ({'; '.join(changed)}): give the run "
            "a new --exp-id, or pass --rerun to archive that directory and start again"
        )


def _save_settings(paths: RunPaths, config: RunConfig) -> None:
    saved = paths.private / "run_config.json"
    if not saved.exists():
        current = json.loads(config.model_dump_json())
        write_atomic(saved, json.dumps(current, indent=2, sort_keys=True) + "\n")


def archive_run(root: Path) -> Path | None:
    """Move a run directory aside to ``<root>.archived-<UTC time>`` (``--rerun``); returns the
    new path, or ``None`` when there was nothing to move."""
    if not root.exists():
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = root.with_name(f"{root.name}.archived-{stamp}")
    root.rename(target)
    (target / ".judge" / "lock").unlink(missing_ok=True)
    return target


def run_in_directory(
    config: RunConfig,
    spec: EnvSpec,
    splits: CaseSplits,
    plan: IsolationPlan,
    root: Path,
    pool: WorkerPool,
    rerun: bool,
    progress,
    display,
) -> RunRecord:
    """Open (or create) the run directory ``root`` and run, resume or return the run in it, on
    ``pool`` (started, possibly still booting). See :func:`evopolicygym.runs.run_from_config`."""
    paths = RunPaths(root)
    if rerun:
        with RunLock(paths.private / "lock", paths.root) if paths.private.exists() else _nothing():
            archived = archive_run(paths.root)
        if archived is not None:
            progress(f"[run] archived the previous run to {archived}")
    _check_settings(paths, config)
    if paths.run_json.exists():
        progress(f"[run] {paths.root} is finished with these settings; run.json is unchanged")
        return RunRecord.model_validate_json(paths.run_json.read_text())
    paths.create()
    with RunLock(paths.private / "lock", paths.root):
        _check_settings(paths, config)  # another process may have started it meanwhile
        _save_settings(paths, config)
        _stage_agents_md(paths.agents_md)
        label = f"{config.run.model}/{spec.id}/{config.run.exp_id}"
        events = EventLog(paths.logs / "harness.log", progress, label, display)
        pool.log_to(paths.logs / "workers.log")
        finalize_progress = (
            (lambda step: display.finalize(label, step))
            if display is not None
            else (lambda step: progress(f"[{label}] finalize {step}"))
        )
        ledger = Ledger.open(
            paths.private / "journal.jsonl",
            config.run.budget,
            checkpoints=paths.checkpoints,
            feedback=paths.feedback,
        )
        return _drive_and_finish(
            config, spec, splits, paths, ledger, pool, events, label, progress, plan,
            finalize_progress,
        )  # fmt: skip


def _judge_settings(
    config: RunConfig, spec: EnvSpec, splits: CaseSplits, pool: WorkerPool, plan: IsolationPlan
) -> JudgeSettings:
    """The judge's settings. The spaces' schemas come from the world the first lane's worker
    built (this process then imports no simulator: building a HalfCheetah here took 0.7 s of
    a run's start on a slow machine), else from a world built here."""
    described = pool.describe() if spec.adapter in SELF_DESCRIBING_ADAPTERS else None
    return JudgeSettings(
        spec=spec,
        schemas=described or spec.describe(),
        splits=splits,
        budget=config.run.budget,
        minimum=config.run.minimum,
        maximum=config.run.maximum or max(config.run.budget, 1),
        limits=config.limits,
        jobs=pool.jobs,
        # Mario's frames are stored compressed whatever the run says (envspec).
        compress_images=config.run.compress_images or spec.compress_images,
        isolation=plan.level,
    )


@contextlib.contextmanager
def _nothing():
    yield


def site_directories() -> list[str]:
    """Directories whose ``.pth`` files a fresh interpreter of this environment reads."""
    import site

    return [d for d in site.getsitepackages() if os.path.isdir(d)]


def _last_agent_error(transcript) -> str | None:
    """The error the agent's last reply reported, if any."""
    if transcript is None or not transcript.replies:
        return None
    return transcript.replies[-1].data.get("error") or None


def _drive_and_finish(
    config,
    spec,
    splits,
    paths,
    ledger,
    pool,
    events,
    label,
    progress,
    plan,
    finalize_progress,
) -> RunRecord:
    """Let the agent spend the budget (if any is left), then finalize and write ``run.json``."""
    # Flask is imported here, not at the top, so that it loads while the lanes boot.
    from evopolicygym.judge import JudgeServer

    harness = make_harness(config.agent)
    jail, jail_record = agent_jail(config.agent, harness, paths.workspace, paths.agent_state)
    # The agent starts only once every lane host has imported its libraries, and their
    # fingerprint is journaled: a library the agent patches after that changes the fingerprint.
    digests = warm_digests()  # while the lane hosts boot
    pool.prewarm()
    digests.join()
    # The libraries the lanes imported and this process did not (a simulator), read while the
    # first worker builds its world.
    digests = warm_digests(pool.module_files())
    settings = _judge_settings(config, spec, splits, pool, plan)
    judge = Judge(settings, paths.judge_paths(), ledger, events, pool)
    digests.join()
    fingerprint = interpreter_fingerprint(pool.module_files(), site_directories())
    if ledger.fingerprint is not None and fingerprint != ledger.fingerprint:
        raise LibrariesChangedError(
            f"{paths.root} was started with other libraries than the workers import now "
            f"(fingerprint {ledger.fingerprint} at start, {fingerprint} now): resume it with the "
            "installation it started with, or pass --rerun to archive it and start again"
        )
    ledger.append(FingerprintRecord(value=fingerprint))
    # From here on this process, and the agent it starts, stay off the CPUs lanes play on
    # (this run's, and the other runs' it saw; when the machine has others): a worker playing
    # is never preempted by the judge.
    with kept_off(judge.pool.claimed_cpus):
        history = RunHistory.open(paths.private / "history.json")  # records this start of the run
        transcript = None  # no agent session when a resumed run has nothing left to spend
        if judge.phase == "open":
            with JudgeServer(judge, config.server.bind, config.server.port) as server:
                events(
                    "run.open",
                    url=server.origin,  # the secret stays out of the logs
                    budget=settings.budget,
                    remaining=ledger.remaining,
                    resumed=ledger.next_index > 0,
                )
                progress(
                    f"[{label}] judge at {server.origin}; {ledger.remaining}/{settings.budget} episodes left; agent {config.agent.kind}"
                )
                previous = history.previous_session()
                resume = None
                if previous is not None:
                    resume = Resume(
                        session=previous.resume_id,
                        turns=history.total_turns(),
                        n_submits=ledger.next_index,
                        remaining_budget=ledger.remaining,
                        budget=settings.budget,
                    )
                    events("agent.resume", session=previous.resume_id, turns=resume.turns)
                transcript = drive(
                    harness,
                    Launch(
                        api_url=server.url,
                        workspace=paths.workspace,
                        logs=paths.logs,
                        resume=resume,
                        jail=tuple(jail),
                    ),
                    done=lambda: judge.phase != "open",
                    limit=config.agent.limit or max(1, config.run.budget),
                    retries=config.agent.retries,
                    backoff=config.agent.retry_backoff,
                    log=lambda event, fields: events(event, **fields),
                    observer=history,
                )
        previous = history.previous_session()
        last = history.current.session or previous
        agent_record = AgentRecord(
            kind=config.agent.kind,
            name=config.agent.name,
            reason=transcript.reason if transcript else (last.reason if last else None),
            session=transcript.session if transcript else (last.key if last else None),
            **history.agent_totals(),
        )
        history.save()
        finalize_started = time.monotonic()
        if ledger.remaining > 0:
            unspent = f"{ledger.remaining} of {settings.budget} episodes unspent"
            why = f": {last_error}" if (last_error := _last_agent_error(transcript)) else ""
            outcome = Outcome(
                status="error",
                error=RunError(
                    type="agent_stopped",
                    message=f"the agent stopped ({agent_record.reason}) with {unspent}{why}",
                ),
            )
        else:
            if (changed := _interpreter_change(judge, ledger)) is None:
                events("run.finalize", ok_checkpoints=len(ledger.ok_submits()))
                selection = judge.finalize(finalize_progress)
                outcome = _outcome(selection)
                changed = _interpreter_change(judge, ledger)
            if changed is not None:
                outcome = Outcome(
                    status="error", error=RunError(type="interpreter_changed", message=changed)
                )
    record = _record(
        config,
        spec,
        splits,
        paths,
        ledger,
        outcome,
        agent_record,
        history.total_wall_seconds(),
        finalize_started,
        settings,
        plan,
    )
    record.isolation["agent"] = jail_record.model_dump()
    sealed = seal(
        load_key(paths.private, create=False), record.model_dump(mode="json"), ledger.head
    )
    write_atomic(paths.run_json, json.dumps(sealed, indent=2) + "\n", exclusive=True)
    record = RunRecord.model_validate(sealed)
    judge.close(outcome.model_dump())
    events(
        "run.close",
        outcome=outcome.status,
        final_score=outcome.final_score,
        best_submit_index=outcome.best_submit_index,
    )
    return record


def _outcome(selection: Selection) -> Outcome:
    scores = {str(k): v for k, v in selection.val_scores.items()}
    errors = {str(k): v for k, v in selection.val_errors.items()}
    auxiliary: dict[str, Any] = {}
    if selection.tampered:
        auxiliary["tampered_checkpoints"] = selection.tampered
    if selection.heldout_failed:
        auxiliary["heldout_failed_checkpoints"] = selection.heldout_failed
    heldout = selection.heldout
    if selection.best is None or heldout is None:
        return Outcome(
            status="no_ok_submit",
            final_score=0.0,
            val_scores=scores,
            val_errors=errors,
            auxiliary=auxiliary,
        )
    return Outcome(
        status="completed",
        final_score=heldout.mean,
        best_submit_index=selection.best,
        val_scores=scores,
        val_errors=errors,
        heldout_mean_return=heldout.mean,
        heldout_std_return=heldout.std,
        heldout_returns=heldout.returns,
        heldout_errors=heldout.errors,
        auxiliary=auxiliary,
    )


def isolation_record(plan: IsolationPlan, limits: LimitsSection) -> dict[str, Any]:
    """``run.json``'s ``isolation``: the level in force, what enforced it, what it does not
    stop, and the resource limits."""
    mechanisms = ["separate processes", "resource limits", "subreaper sweeps"]
    if plan.level == "namespaced":
        mechanisms.insert(0, "bubblewrap namespaces (user, pid, net, ipc, uts, mount)")
    if plan.landlock_abi:
        mechanisms.append(f"Landlock ABI {plan.landlock_abi}")
    if plan.seccomp:
        mechanisms.append("seccomp filter")
    return {
        "level": str(plan.level),
        "requested": plan.requested,
        "mechanisms": mechanisms,
        "process_cap": plan.process_cap,
        "gaps": plan.gaps(),
        "limits": limits.model_dump(),
    }


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _interpreter_change(judge: Judge, ledger: Ledger) -> str | None:
    """Why the run must not be scored, if the libraries the workers import changed since the
    run started (a patched simulator would change every score)."""
    now = interpreter_fingerprint(judge.pool.module_files(), site_directories())
    if ledger.fingerprint is None or now == ledger.fingerprint:
        return None
    return (
        "the interpreter or a library the workers import changed during the run (fingerprint "
        f"{ledger.fingerprint} at start, {now} now): the run is not scored; reinstall the "
        "environment and start a new run"
    )


def _record(
    config,
    spec,
    splits,
    paths,
    ledger,
    outcome,
    agent,
    wall_seconds,
    finalize_started,
    settings,
    plan,
) -> RunRecord:
    end = utc_now()
    versions = {
        "harness": HARNESS_VERSION,
        "env_version": spec.version,
        # The rules the judge staged: the workspace's copy is the agent's to change.
        "agents_md_hash": agents_md_sha256(),
        **splits.hashes,
        # private: seeds from the OS, hashes are commitments; public: computable from a seed
        "case_protocol": "private" if splits.private else "public",
    }
    gymnasium_version = _package_version("gymnasium")
    if gymnasium_version:
        versions["gymnasium"] = gymnasium_version
    if outcome.best_submit_index is not None:
        best = next(s for s in ledger.submits if s.index == outcome.best_submit_index)
        if best.tree_hash:
            versions["code_hash"] = best.tree_hash
    return RunRecord(
        model=config.run.model,
        env=spec.id,
        exp_id=config.run.exp_id,
        experiment_dimensions={
            "episode_budget": settings.budget,
            "min_episodes_per_submit": settings.minimum,
            "max_episodes_per_submit": settings.maximum,
            "n_env_instances": len(splits.train),
            "valid_size": len(splits.valid),
            "heldout_size": len(splits.heldout),
            "max_episode_steps": spec.max_episode_steps,
            "jobs": settings.jobs,
            "agent": config.agent.kind,
        },
        timing=Timing(
            start_time=ledger.opened_at or end,
            end_time=end,
            wall_time_seconds=wall_seconds,  # every start of the run, resumes included
            finalize_seconds=round(time.monotonic() - finalize_started, 3),
        ),
        outcome=outcome,
        budget=BudgetRecord(limit=settings.budget, used=ledger.used, n_submits=ledger.next_index),
        submits=ledger.submits,
        agent=agent,
        isolation=isolation_record(plan, config.limits),
        artifacts={
            "workspace": "workspace/",
            "feedback": "workspace/feedback/",
            "checkpoints": "checkpoints/",
            "logs_harness": "logs/harness.log",
        },
        versions=versions,
        protocol=protocol_fingerprint(config, spec, splits, settings),
    )
