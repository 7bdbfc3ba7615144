"""The ledger: an append-only, fsynced journal of everything that changes a run's budget or
history, and the state derived from replaying it.

Every record is one JSON line. A submit writes ``submit_begin`` before it touches the disk and
``submit_commit`` after its feedback is in place; budget is charged by the commit alone. On
:meth:`Ledger.open` an unfinished submit is settled: rolled forward when its feedback directory
exists (the agent may have read it), rolled back (checkpoint removed, nothing charged) when not.
A torn last line (crash mid-write) is ignored, since its fsync never completed.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from evopolicygym.protocol import SubmitRecord


def utc_now() -> str:
    """ISO-8601 UTC with milliseconds and a ``Z`` suffix."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)
    fsync_directory(path.parent)


class Ledger:
    """Budget and submit history of one run, backed by ``journal.jsonl``.

    Not thread-safe by itself: the judge serializes submits with its own lock; ``append`` has a
    lock only so that finalize progress and submits never interleave bytes.
    """

    def __init__(self, path: Path, budget: int):
        self.path = path
        self.budget = budget
        self.submits: list[SubmitRecord] = []
        self.validation: dict[int, dict[str, Any]] = {}
        self.heldout: dict[str, Any] | None = None
        self.closed: dict[str, Any] | None = None
        self.opened_at: str | None = None
        self._pending: dict[str, Any] | None = None
        self._lock = threading.Lock()

    # -- derived state ----------------------------------------------------------------------------

    @property
    def used(self) -> int:
        return sum(s.cost for s in self.submits)

    @property
    def remaining(self) -> int:
        return self.budget - self.used

    @property
    def next_index(self) -> int:
        return len(self.submits)

    def ok_submits(self) -> list[SubmitRecord]:
        return [s for s in self.submits if s.status == "ok"]

    # -- journal ----------------------------------------------------------------------------------

    def append(self, record: dict[str, Any]) -> None:
        record = {"time": utc_now(), **record}
        line = json.dumps(record, sort_keys=True) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        self._apply(record)

    def _apply(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "open":
            self.opened_at = self.opened_at or record["time"]
        elif kind == "submit_begin":
            self._pending = record
        elif kind == "submit_commit":
            self.submits.append(SubmitRecord.model_validate(record["submit"]))
            self._pending = None
        elif kind == "submit_rollback":
            self._pending = None
        elif kind == "validation":
            self.validation[record["index"]] = record
        elif kind == "heldout":
            self.heldout = record
        elif kind == "closed":
            self.closed = record

    @classmethod
    def open(cls, path: Path, budget: int, *, checkpoints: Path, feedback: Path) -> Ledger:
        """Replay ``path`` (creating it if absent) and settle an interrupted submit."""
        ledger = cls(path, budget)
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # torn final line of a crashed append
                ledger._apply(record)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
        if ledger.closed is None:
            ledger.append(
                {"type": "open" if ledger.opened_at is None else "resume", "budget": budget}
            )
        ledger._settle(checkpoints, feedback)
        return ledger

    def _settle(self, checkpoints: Path, feedback: Path) -> None:
        pending = self._pending
        if pending is None:
            return
        index = pending["index"]
        summary = feedback / submit_dirname(index) / "summary.json"
        if summary.exists():
            self.append(
                {
                    "type": "submit_commit",
                    "index": index,
                    "submit": record_from_summary(
                        json.loads(summary.read_text()), checkpoints
                    ).model_dump(),
                    "recovered": True,
                }
            )
            return
        shutil.rmtree(checkpoints / submit_dirname(index), ignore_errors=True)
        for leftover in list(checkpoints.glob(f".{submit_dirname(index)}*")) + list(
            feedback.glob(f".{submit_dirname(index)}*")
        ):
            shutil.rmtree(leftover, ignore_errors=True)
        self.append({"type": "submit_rollback", "index": index})


def submit_dirname(index: int) -> str:
    return f"submit_{index:03d}"


def record_from_summary(summary: dict[str, Any], checkpoints: Path | None = None) -> SubmitRecord:
    """The history line of a submit, rebuilt from its ``summary.json``."""
    tree_hash = None
    if checkpoints is not None:
        metrics = checkpoints / submit_dirname(summary["submit_index"]) / "metrics.json"
        if metrics.exists():
            tree_hash = json.loads(metrics.read_text()).get("tree_hash")
    rejected = summary["status"] in ("budget_invalid", "invalid_env_instance")
    return SubmitRecord(
        index=summary["submit_index"],
        status=summary["status"],
        cost=0 if rejected else len(summary["env_instances"]),
        n_episodes=summary["n_episodes"],
        first_global_episode=summary.get("first_global_episode"),
        mean_return=summary.get("mean_return"),
        returns=summary.get("returns"),
        errors=len(summary.get("errors") or []),
        wall_time_seconds=summary.get("wall_time_seconds", 0.0),
        tree_hash=tree_hash,
    )
