"""Per-run diagnostics from ``run.json`` and the run's checkpoints: how the budget was spent,
how well validation predicted held-out, how fast the train returns rose, and how the code
changed between consecutive checkpoints.

Checkpoints hold what an agent wrote, so reading them is bounded: regular files only (a
symbolic link is never followed), each read up to :data:`MAX_READ_BYTES` and a checkpoint up to
:data:`MAX_CHECKPOINT_BYTES` (larger files count as one changed line when their size changes),
files longer than :data:`MAX_DIFF_LINES` compared as multisets of lines, and a syntax tree too
deep to walk counts as a structural edit."""

from __future__ import annotations

import ast
import difflib
import math
import os
import stat
from collections import Counter
from pathlib import Path

from ..protocol import RunRecord

# The judge's own files at a checkpoint's top level.
IGNORED = {"metrics.json", "_meta.json", ".keep"}
MAX_READ_BYTES = 2**20  # as the judge's own parse (judge/checkpoint.py)
MAX_CHECKPOINT_BYTES = 16 * 2**20
MAX_DIFF_LINES = 5000

DIAGNOSTIC_COLUMNS = [
    "episodes_per_submit",
    "val_heldout_gap",
    "episodes_to_50",
    "episodes_to_80",
    "churn_lines",
    "churn_total",
    "edits_parametric",
    "edits_structural",
    "edits_unchanged",
]


def learning_curve(record: RunRecord) -> tuple[list[int], list[float | None]]:
    """Best-so-far train mean return after each submit, against episodes spent so far.

    Every charged submit advances the x axis by its cost (failed ones too: they spent budget);
    only ``ok`` submits with a mean can raise the best. ``None`` until the first ok submit.
    """
    episodes: list[int] = []
    best: list[float | None] = []
    spent = 0
    current: float | None = None
    for submit in sorted(record.submits, key=lambda s: s.index):
        if submit.cost == 0:
            continue  # rejected requests spend nothing
        spent += submit.cost
        if submit.status == "ok" and submit.mean_return is not None:
            current = submit.mean_return if current is None else max(current, submit.mean_return)
        episodes.append(spent)
        best.append(current)
    return episodes, best


def episodes_to_fraction(
    episodes: list[int], best: list[float | None], fraction: float
) -> int | None:
    """Training episodes spent when the best-so-far train mean first covered ``fraction`` of
    its rise from the first ok submit to its final value (the first ok submit's episodes when
    it never rose); ``None`` without an ok submit."""
    points = [(x, y) for x, y in zip(episodes, best, strict=True) if y is not None]
    if not points:
        return None
    start, final = points[0][1], points[-1][1]
    target = start + fraction * (final - start)
    return next(x for x, y in points if y >= target - 1e-12)


def _files(checkpoint: Path) -> dict[str, str]:
    """The text of each regular file below ``checkpoint`` (not following links), or a
    placeholder naming its size when it is binary or beyond the read limits."""
    if not checkpoint.is_dir() or checkpoint.is_symlink():
        return {}
    out: dict[str, str] = {}
    budget = MAX_CHECKPOINT_BYTES
    for directory, names, files in os.walk(checkpoint):
        names[:] = sorted(n for n in names if n != "__pycache__")
        for name in sorted(files):
            path = Path(directory, name)
            relative = path.relative_to(checkpoint)
            if str(relative) in IGNORED:
                continue
            try:
                status = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(status.st_mode):
                continue
            if status.st_size > min(MAX_READ_BYTES, budget):
                out[str(relative)] = f"<{status.st_size} bytes, not read>"
                continue
            budget -= status.st_size
            try:
                with open(path, "rb", opener=_no_follow) as handle:
                    out[str(relative)] = handle.read(MAX_READ_BYTES).decode("utf-8")
            except (UnicodeDecodeError, OSError):
                out[str(relative)] = f"<binary {status.st_size} bytes>"
    return out


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)


def lines_changed(before: dict[str, str], after: dict[str, str]) -> int:
    """Lines added plus lines removed over every file of two checkpoints. Files longer than
    :data:`MAX_DIFF_LINES` are compared as multisets of lines (a diff takes quadratic time):
    moved lines then count as unchanged."""
    total = 0
    for name in sorted(set(before) | set(after)):
        old = before.get(name, "").splitlines()
        new = after.get(name, "").splitlines()
        if max(len(old), len(new)) > MAX_DIFF_LINES:
            old_lines, new_lines = Counter(old), Counter(new)
            total += (old_lines - new_lines).total() + (new_lines - old_lines).total()
            continue
        for line in difflib.unified_diff(old, new, lineterm="", n=0):
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---")):
                total += 1
    return total


class _Shape(ast.NodeTransformer):
    """Replaces every constant by one placeholder: two trees with the same shape differ only
    in constants."""

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        return ast.copy_location(ast.Constant(value="<constant>"), node)


def _shape(source: str) -> str | None:
    """The syntax tree of ``source`` up to constants; None when it does not parse, or is too
    deep for the parser or this walk (a long ``elif`` chain)."""
    try:
        return ast.dump(_Shape().visit(ast.parse(source)), include_attributes=False)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def edit_kind(before: dict[str, str], after: dict[str, str]) -> str:
    """``unchanged`` (same files), ``parametric`` (every Python file has the same syntax tree
    up to constants; data files such as ``params.json`` may differ) or ``structural`` (a
    Python file was added, removed, or changed shape, or does not parse)."""
    if before == after:
        return "unchanged"
    python = {n for n in set(before) | set(after) if n.endswith(".py")}
    for name in python:
        if name not in before or name not in after:
            return "structural"
        if before[name] != after[name]:
            old, new = _shape(before[name]), _shape(after[name])
            if old is None or new is None or old != new:
                return "structural"
    return "parametric"


def no_diagnostics() -> dict:
    """The diagnostic columns of a run whose checkpoints could not be read."""
    return {
        **dict.fromkeys(DIAGNOSTIC_COLUMNS),
        "val_heldout_gap": math.nan,
        "churn_lines": [],
        "episodes_per_submit": [],
    }


def diagnostics(record: RunRecord, run_dir: Path) -> dict:
    """The diagnostic columns of one run (see :data:`DIAGNOSTIC_COLUMNS`)."""
    charged = [s for s in sorted(record.submits, key=lambda s: s.index) if s.cost > 0]
    episodes, best = learning_curve(record)
    outcome = record.outcome
    val = (outcome.val_scores or {}).get(str(outcome.best_submit_index))
    gap = (
        val - outcome.heldout_mean_return
        if val is not None and outcome.heldout_mean_return is not None
        else math.nan
    )
    churn, kinds, previous = [], [], None
    for submit in charged:
        files = _files(run_dir / "checkpoints" / f"submit_{submit.index:03d}")
        if previous is not None:
            churn.append(lines_changed(previous, files))
            kinds.append(edit_kind(previous, files))
        previous = files
    return {
        "episodes_per_submit": [s.cost for s in charged],
        "val_heldout_gap": gap,
        "episodes_to_50": episodes_to_fraction(episodes, best, 0.5),
        "episodes_to_80": episodes_to_fraction(episodes, best, 0.8),
        "churn_lines": churn,
        "churn_total": sum(churn),
        "edits_parametric": kinds.count("parametric"),
        "edits_structural": kinds.count("structural"),
        "edits_unchanged": kinds.count("unchanged"),
    }
