"""The results table: one row per run, read from ``run.json`` files (never from the judge)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from ..protocol import RunRecord
from ..suites import Suite
from ._diagnostics import DIAGNOSTIC_COLUMNS, diagnostics, learning_curve, no_diagnostics
from ._protocol import fingerprint_of

# Statuses beyond run.json's outcome.status: the record is absent, or present but unreadable.
MISSING = "missing"
UNREADABLE = "unreadable"

COLUMNS = [
    "suite",
    "job",
    "index",
    "repeat",
    "env",
    "entrant",
    "model",
    "agent_kind",
    "status",
    "final_score",
    "best_submit_index",
    "best_val_score",
    "heldout_mean_return",
    "heldout_std_return",
    "n_submits",
    "n_ok_submits",
    "budget_limit",
    "budget_used",
    "agent_reason",
    "agent_turns",
    "wall_time_seconds",
    "finalize_seconds",
    "error",
    "harness_version",
    "isolation",
    "protocol",
    "fingerprint",
    "heldout_se",
    *DIAGNOSTIC_COLUMNS,
    "record_path",
    "curve_episodes",
    "curve_best",
    "heldout_returns",
]


def _row_from_record(record: RunRecord) -> dict:
    outcome = record.outcome
    episodes, best = learning_curve(record)
    val = outcome.val_scores or {}
    best_val = (
        val.get(str(outcome.best_submit_index)) if outcome.best_submit_index is not None else None
    )
    fingerprint = fingerprint_of(record)
    returns = [r for r in (outcome.heldout_returns or []) if r is not None]
    heldout_se = float(pd.Series(returns).sem()) if len(returns) > 1 else None
    error = ""
    if outcome.error is not None:
        error = f"{outcome.error.type}: {outcome.error.message}"
    return {
        "env": record.env,
        "model": record.model,
        "agent_kind": record.agent.kind if record.agent else "",
        "entrant": (record.agent.name if record.agent else "") or record.model,
        "status": outcome.status,
        "final_score": outcome.final_score,
        "best_submit_index": outcome.best_submit_index,
        "best_val_score": best_val,
        "heldout_mean_return": outcome.heldout_mean_return,
        "heldout_std_return": outcome.heldout_std_return,
        "n_submits": record.budget.n_submits,
        "n_ok_submits": sum(1 for s in record.submits if s.status == "ok"),
        "budget_limit": record.budget.limit,
        "budget_used": record.budget.used,
        "agent_reason": record.agent.reason if record.agent else None,
        "agent_turns": record.agent.turns if record.agent else None,
        "wall_time_seconds": record.timing.wall_time_seconds,
        "finalize_seconds": record.timing.finalize_seconds,
        "error": error,
        "harness_version": record.harness_version,
        # The level policy code ran at (records before schema 0.4 do not say).
        "isolation": str(record.isolation.get("level") or ""),
        "protocol": fingerprint.digest(per_env=False),
        "fingerprint": fingerprint.model_dump_json(),
        "heldout_se": heldout_se,
        "heldout_returns": returns if outcome.status == "completed" else [],
        "curve_episodes": episodes,
        "curve_best": best,
    }


def read_record(path: Path) -> RunRecord:
    """Parse one ``run.json``. Raises ``OSError``, ``json.JSONDecodeError`` or
    ``pydantic.ValidationError``."""
    return RunRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))


def record_row(path: Path) -> dict:
    """The table row of one run directory's record; a missing or unreadable record becomes a
    row with status ``missing``/``unreadable`` and the reason in ``error`` (never an exception),
    so one bad run cannot break a suite's report."""
    path = Path(path)
    row: dict = {
        "record_path": str(path),
        "curve_episodes": [],
        "curve_best": [],
        "heldout_returns": [],
        "episodes_per_submit": [],
        "churn_lines": [],
    }
    if not path.exists():
        return {**row, "status": MISSING, "error": f"{path} does not exist"}
    try:
        record = read_record(path)
    except (OSError, ValueError, ValidationError) as error:
        summary = str(error).splitlines()[0] if str(error) else type(error).__name__
        return {**row, "status": UNREADABLE, "error": f"{type(error).__name__}: {summary}"}
    try:
        found = diagnostics(record, path.parent)
    except Exception:  # the agent's files behind them: never the run's row
        found = no_diagnostics()
    return {**row, **_row_from_record(record), **found}


def results_table(paths: Iterable[Path] = (), *, suite: Suite | None = None) -> pd.DataFrame:
    """One row per run. With ``suite``, rows follow the suite's jobs (job name, index, repeat and
    the agent label as entrant come from the matrix) and ``paths``, if given, are the jobs'
    records in job order (Snakemake's local copies when a storage plugin moves files); otherwise
    one row per given ``run.json`` path with the entrant from the record's agent name or model.
    Raises ``ValueError`` when ``paths`` and the suite's jobs differ in number."""
    rows = []
    paths = [Path(p) for p in paths]
    if suite is not None:
        if paths and len(paths) != len(suite.jobs):
            raise ValueError(
                f"{len(paths)} record paths for {len(suite.jobs)} jobs of {suite.path}"
            )
        for job, path in zip(suite.jobs, paths or [j.record_path for j in suite.jobs], strict=True):
            row = record_row(path)
            row.update(
                suite=suite.name,
                job=job.name,
                index=job.index,
                repeat=job.repeat,
                env=job.env,
                entrant=job.agent_label,
                model=job.model,
            )
            row.setdefault("agent_kind", job.config.agent.kind)
            rows.append(row)
    else:
        for number, path in enumerate(paths):
            row = record_row(path)
            row.setdefault("job", path.parent.name)
            row.setdefault("index", number)
            row.setdefault("repeat", 0)
            rows.append(row)
    table = pd.DataFrame(rows, columns=COLUMNS)
    for column in (
        "final_score",
        "best_val_score",
        "heldout_mean_return",
        "heldout_std_return",
        "heldout_se",
        "val_heldout_gap",
    ):
        table[column] = pd.to_numeric(table[column], errors="coerce").astype("float64")
    for column in (
        "best_submit_index",
        "n_submits",
        "n_ok_submits",
        "budget_limit",
        "budget_used",
        "episodes_to_50",
        "episodes_to_80",
        "churn_total",
        "edits_parametric",
        "edits_structural",
        "edits_unchanged",
    ):
        table[column] = table[column].astype("Int64")
    for column in (
        "suite",
        "job",
        "env",
        "entrant",
        "model",
        "agent_kind",
        "status",
        "error",
        "protocol",
        "fingerprint",
    ):
        table[column] = table[column].fillna("").astype(str)
    return table
