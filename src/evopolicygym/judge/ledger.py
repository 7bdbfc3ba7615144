"""The ledger: an append-only, fsynced, HMAC-chained journal of everything that changes a run's
budget or history (:mod:`evopolicygym.protocol` journal records), and the state derived from
replaying it.

A submit writes ``submit_begin`` before it touches the disk and ``submit_commit`` once its
feedback is complete, in the judge's private ``drafts/`` directory; budget is charged by the
commit alone, and only then is the feedback moved into the agent's ``feedback/``
(:func:`publish_draft`). So the agent never sees results that are not charged, and nothing it
writes in its workspace is read back. On :meth:`Ledger.open` what a crash interrupted is
settled from the journal alone: a submit begun but not committed is rolled back (checkpoint and
draft removed, nothing charged), and a committed submit's unpublished draft is published.

Replay is strict. A torn last line (a crash mid-write, never fsynced) is cut off and the run
continues; any other unreadable line, or a line whose MAC does not follow from the key and the
line before, means the journal was edited: :class:`JournalCorrupt`, and the run is neither
resumed nor scored.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from evopolicygym.protocol import (
    Closed,
    Evaluation,
    FingerprintRecord,
    JournalRecord,
    OpenRecord,
    SubmitBegin,
    SubmitCommit,
    SubmitRecord,
    SubmitRollback,
    Verdict,
)
from evopolicygym.sandbox import (
    TreeLimits,
    copy_tree,
    opened_directory,
    real_directory,
    remove_entry,
    remove_path,
)

from .integrity import chain_mac, load_key

_RECORD = TypeAdapter(JournalRecord)


class JournalCorrupt(RuntimeError):
    """The journal was changed outside the judge (or damaged); the message says where."""


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


def write_atomic(path: Path, text: str, *, exclusive: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename; with ``exclusive``,
    refuse (``FileExistsError``) when ``path`` exists: the file is written once."""
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    if exclusive:
        try:
            os.link(temporary, path)
        finally:
            temporary.unlink()
    else:
        temporary.replace(path)
    fsync_directory(path.parent)


def publish_draft(draft: Path, feedback: Path) -> Path:
    """Move the feedback directory ``draft`` to ``feedback/<its name>`` in one rename and
    return the new path. Every step goes through a descriptor of the workspace (which the
    agent cannot replace) and then of ``feedback``, so swapping ``feedback`` for a link
    meanwhile never redirects the judge. What the agent put in the way is removed first and
    never followed: an entry of that name (a symbolic link, a file or a directory, at any
    depth), and a ``feedback`` that is not a real directory. Raises ``OSError``, and only
    that, when this cannot be done (the draft then stays where it is)."""
    with opened_directory(feedback.parent) as workspace:
        directory = real_directory(workspace, feedback.name)
        try:
            _move_into(draft, directory)
            os.fsync(directory)
        finally:
            os.close(directory)
    return feedback / draft.name


def _move_into(draft: Path, feedback: int) -> None:
    """Move ``draft`` (a directory of the judge's) into the directory ``feedback``, replacing
    whatever has its name there."""
    name = draft.name
    remove_entry(feedback, name)
    try:
        os.replace(draft, name, dst_dir_fd=feedback)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        # The workspace on another file system: copied next to its place, then renamed.
        staging = f".{name}.publishing"
        remove_entry(feedback, staging)
        os.mkdir(staging, dir_fd=feedback)
        with (
            opened_directory(draft) as source,
            opened_directory(staging, feedback) as copy,
        ):
            copy_tree(source, copy, TreeLimits(), lambda _depth, _name: False)
        os.replace(staging, name, src_dir_fd=feedback, dst_dir_fd=feedback)
        remove_path(draft)


class Ledger:
    """Budget and submit history of one run, backed by ``journal.jsonl``.

    Not thread-safe by itself: the judge serializes submits with its own lock; ``append`` has a
    lock only so that finalize progress and submits never interleave bytes.
    """

    def __init__(self, path: Path, budget: int, key: bytes):
        self.path = path
        self.budget = budget
        self._key = key
        self.submits: list[SubmitRecord] = []
        self.validation: dict[int, Evaluation] = {}
        self.heldout: Evaluation | None = None  # the latest held-out evaluation
        self.heldouts: dict[int, Evaluation] = {}  # every held-out evaluation, by submit index
        self.closed: Closed | None = None
        self.opened_at: str | None = None
        self.fingerprint: str | None = None
        self.head = ""
        self.macs: set[str] = set()
        self.lines = 0
        self._pending: SubmitBegin | None = None
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
        return [s for s in self.submits if s.status == Verdict.OK]

    # -- journal ----------------------------------------------------------------------------------

    def append(self, record: Any, *, durable: bool = True) -> None:
        """Append one journal record and apply it. ``durable`` waits until the disk has it
        (fsync); without, it survives a crash of the judge but not of the machine, which is
        enough for a record whose loss leaves nothing to undo (``submit_begin``: the next
        submit of the same index clears what a lost one left)."""
        with self._lock:
            body = record.model_dump(mode="json")
            body["time"] = utc_now()
            body["mac"] = chain_mac(self._key, self.head, body)
            line = json.dumps(body, sort_keys=True) + "\n"
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                if durable:
                    os.fsync(handle.fileno())
            self._apply(_RECORD.validate_python(body))

    def _apply(self, record: Any) -> None:
        self.head = record.mac
        self.macs.add(record.mac)
        self.lines += 1
        if isinstance(record, OpenRecord):
            if self.opened_at is None:
                self.opened_at = record.time
                self.budget = self.budget or record.budget
        elif isinstance(record, FingerprintRecord):
            self.fingerprint = self.fingerprint or record.value
        elif isinstance(record, SubmitBegin):
            self._pending = record
        elif isinstance(record, SubmitCommit):
            self.submits.append(record.submit)
            self._pending = None
        elif isinstance(record, SubmitRollback):
            self._pending = None
        elif isinstance(record, Evaluation):
            if record.type == "validation":
                self.validation[record.index] = record
            else:
                self.heldout = self.heldouts[record.index] = record
        elif isinstance(record, Closed):
            self.closed = record

    @classmethod
    def replay(cls, path: Path, key: bytes, budget: int = 0, *, repair: bool = True) -> Ledger:
        """The ledger of an existing journal, verified line by line (a torn last line is cut
        off; left in place with ``repair=False``, for a reader that must change nothing, as a
        judge may be writing that line). Raises :class:`JournalCorrupt`."""
        ledger = cls(path, budget, key)
        data = path.read_bytes()
        lines = data.split(b"\n")
        complete = lines[:-1]  # the part after the last newline is empty or torn
        if lines[-1] and repair:
            with open(path, "r+b") as handle:
                handle.truncate(len(data) - len(lines[-1]))
        for number, raw in enumerate(complete, 1):
            try:
                body = json.loads(raw)
                record = _RECORD.validate_python(body)
            except (json.JSONDecodeError, ValidationError, TypeError) as exc:
                raise JournalCorrupt(
                    f"{path} line {number} is not a valid journal record ({exc.__class__.__name__}); "
                    "the run's history cannot be trusted: start a new run"
                ) from None
            expected = chain_mac(key, ledger.head, body)
            if body.get("mac") != expected:
                raise JournalCorrupt(
                    f"{path} line {number} ({body.get('type')}) was changed after the judge wrote "
                    "it (its MAC does not match): the run cannot be resumed or scored; start a new run"
                )
            ledger._apply(record)
        return ledger

    @classmethod
    def open(
        cls,
        path: Path,
        budget: int,
        *,
        checkpoints: Path,
        feedback: Path,
    ) -> Ledger:
        """Replay ``path`` (creating it and the run's key if absent), journal this session's
        start, and settle what a crash interrupted (see the module docstring). Feedback drafts
        live in ``drafts/`` beside the journal."""
        key = load_key(path.parent, create=not path.exists())
        if path.exists():
            ledger = cls.replay(path, key, budget)
            ledger.budget = budget
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            ledger = cls(path, budget, key)
        if ledger.closed is None:
            kind = "open" if ledger.opened_at is None else "resume"
            ledger.append(OpenRecord(type=kind, budget=budget))
        ledger._settle(checkpoints, feedback, drafts_directory(path.parent))
        return ledger

    def _settle(self, checkpoints: Path, feedback: Path, drafts: Path) -> None:
        """Publish committed drafts and roll back a pending submit. A draft that cannot be
        published (what the agent planted in ``feedback`` could not be cleared) stays in
        ``drafts`` for the next start: the run goes on without it."""
        committed = {s.index for s in self.submits}
        for draft in sorted(drafts.glob("submit_*")) if drafts.is_dir() else []:
            if _index_of(draft.name) in committed:
                with contextlib.suppress(OSError):
                    publish_draft(draft, feedback)
            else:
                remove_path(draft)
        pending = self._pending
        if pending is None:
            return
        name = submit_dirname(pending.index)
        for leftover in [checkpoints / name, *checkpoints.glob(f".{name}*")]:
            with contextlib.suppress(OSError):
                remove_path(leftover)
        self.append(SubmitRollback(index=pending.index))


def drafts_directory(private: Path) -> Path:
    """Where the judge writes submits' feedback until they are charged (out of the agent's
    workspace)."""
    return private / "drafts"


def _index_of(name: str) -> int | None:
    number = name.removeprefix("submit_")
    return int(number) if number.isdigit() else None


def submit_dirname(index: int) -> str:
    return f"submit_{index:03d}"


def record_from_summary(summary: dict[str, Any], tree_hash: str | None = None) -> SubmitRecord:
    """The history line of a submit, from its summary (as the judge made it); ``tree_hash`` is
    the content hash of its checkpoint (None for rejects, which have none)."""
    rejected = Verdict(summary["status"]).is_reject
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
