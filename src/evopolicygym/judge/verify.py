"""Checking a finished (or interrupted) run directory after the fact: ``evopolicygym verify``."""

from __future__ import annotations

import hmac
import json
import statistics
from pathlib import Path

from .checkpoint import files_hash, read_files
from .integrity import IntegrityError, load_key, seal_matches
from .ledger import JournalCorrupt, Ledger, submit_dirname


def verify_run(root: Path) -> list[tuple[bool, str]]:
    """Re-check a run directory: the journal's chain, every ok checkpoint against the hash
    journaled at its submit, ``run.json``'s seal, and that its score is the mean of its
    journaled held-out returns. Returns ``(passed, description)`` per check."""
    checks: list[tuple[bool, str]] = []
    private = root / ".judge"
    try:
        key = load_key(private, create=False)
        # Read-only: a live judge may be writing the journal's last line.
        ledger = Ledger.replay(private / "journal.jsonl", key, repair=False)
    except (IntegrityError, JournalCorrupt, FileNotFoundError) as exc:
        return [(False, f"journal: {exc}")]
    checks.append((True, f"journal: {ledger.lines} records, HMAC chain intact"))
    for submit in ledger.ok_submits():
        directory = root / "checkpoints" / submit_dirname(submit.index)
        if not directory.is_dir():
            checks.append((False, f"checkpoint {submit.index}: {directory} is missing"))
            continue
        actual = files_hash(read_files(directory))
        if submit.tree_hash and hmac.compare_digest(actual, submit.tree_hash):
            checks.append((True, f"checkpoint {submit.index}: content matches its submit"))
        else:
            checks.append(
                (
                    False,
                    f"checkpoint {submit.index}: content {actual} != journaled {submit.tree_hash}",
                )
            )
    run_json = root / "run.json"
    if not run_json.exists():
        checks.append((True, "run.json: not written yet (the run is not finished)"))
        return checks
    record = json.loads(run_json.read_text())
    if not seal_matches(key, record):
        checks.append(
            (False, "run.json: its seal does not match: it was edited after the judge wrote it")
        )
        return checks
    checks.append((True, "run.json: seal intact"))
    head = (record.get("integrity") or {}).get("journal_mac")
    if head not in ledger.macs:
        checks.append((False, "run.json: written after a journal state that does not exist"))
    outcome = record.get("outcome") or {}
    heldout = ledger.heldout
    if outcome.get("status") == "completed":
        returns = outcome.get("heldout_returns") or []
        agrees = (
            heldout is not None
            and heldout.index == outcome.get("best_submit_index")
            and heldout.returns == returns
            and returns
            and outcome.get("final_score") == statistics.fmean(returns)
        )
        checks.append(
            (
                bool(agrees),
                "score: final_score is the mean of the journaled held-out returns"
                if agrees
                else "score: final_score does not match the journaled held-out evaluation",
            )
        )
    return checks
