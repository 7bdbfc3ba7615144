"""One benchmark run, start to finish: ``run_from_config`` is what ``evopolicygym run`` and every
Snakemake run job call.

It is idempotent: a finished run (``run.json`` present) is returned as is, and an interrupted one
is resumed from its journal with exactly the budget and history it had (see
:mod:`evopolicygym.judge.ledger`). This module starts the worker lanes as early as it can, then
hands over to :mod:`evopolicygym.run_session` (the run directory, the judge, the agent,
``run.json``), whose libraries load while the lanes boot.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from evopolicygym.cases import CaseSplits, generate_splits, load_splits
from evopolicygym.envs import EnvSpec, get_env
from evopolicygym.protocol import RunConfig, RunRecord
from evopolicygym.rollout import WorkerPool
from evopolicygym.sandbox import probe

Progress = Callable[[str], None]


def stderr_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def slug(text: str) -> str:
    """A path segment: alphanumerics and ``._-`` kept, everything else ``_``, ends trimmed."""
    value = re.sub(r"[^A-Za-z0-9._-]", "_", text).strip("._-")
    if not value:
        raise ValueError(f"cannot make a directory name from {text!r}")
    return value


def run_root(config: RunConfig) -> Path:
    run = config.run
    if run.root is not None:
        return run.root
    if run.runs is None:
        raise ValueError(
            "give the run a directory: --root DIR or --runs BASE (or root/runs in [run])"
        )
    return run.runs / slug(run.model) / slug(run.env) / slug(run.exp_id)


def run_splits(config: RunConfig, spec: EnvSpec) -> CaseSplits:
    """The case seeds a run plays: its split directory, else the seed-0 splits of the spec's
    default sizes; hidden pools trimmed to the configured sizes."""
    run = config.run
    if run.data is not None:
        splits = load_splits(run.data, spec.id)
    else:
        splits = generate_splits(0, spec.train_cases, spec.valid_size, spec.heldout_size)
    return splits.trimmed(run.valid_size, run.final_size)


def load_saved_config(root: Path) -> RunConfig:
    """The config an existing run was started with (for ``evopolicygym run --resume ROOT``)."""
    saved = root / ".judge" / "run_config.json"
    if not saved.exists():
        raise FileNotFoundError(
            f"{root} has no saved run config: it is not an EvoPolicyGym run directory"
        )
    config = RunConfig.model_validate_json(saved.read_text())
    config.run.root = root
    return config


def run_from_config(
    config: RunConfig,
    *,
    progress: Progress = stderr_progress,
    rerun: bool = False,
    display=None,
) -> RunRecord:
    """Run (or resume, or just return) the run described by ``config``.

    Everything that can be refused is refused before anything is written: an unknown
    environment, pools larger than the split, and (:class:`~evopolicygym.run_session.SettingsChangedError`) a run
    directory that was started or finished with other settings. ``rerun`` first moves an
    existing run directory aside (:func:`~evopolicygym.run_session.archive_run`) and starts afresh. ``display`` (an
    :class:`evopolicygym.display.RunDisplay`) replaces ``progress`` with phase progress."""
    if display is not None:
        progress = display.line
    root = run_root(config).resolve()  # workers get absolute checkpoint paths
    spec = get_env(config.run.env, bulk=config.run.bulk)
    splits = run_splits(config, spec)
    plan = probe(config.run.isolation)  # an unavailable level stops here, before any file
    jobs = config.run.jobs or os.cpu_count() or 1
    # The lanes boot (an interpreter and its libraries per sandbox) while this process imports
    # the judge, the agent adapters and the HTTP server, checks the settings and starts the
    # agent: a fast agent's first submit then finds warm workers. They write nothing until the
    # run directory exists.
    pool = WorkerPool(spec.model_dump(), jobs, config.limits, None, plan=plan)
    pool.start()
    try:
        from evopolicygym.run_session import run_in_directory

        return run_in_directory(config, spec, splits, plan, root, pool, rerun, progress, display)
    finally:
        pool.close()
        if display is not None:
            display.close()
