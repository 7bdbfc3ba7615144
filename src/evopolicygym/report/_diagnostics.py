"""Per-run diagnostics from ``run.json`` and the run's checkpoints: how the budget was spent,
how well validation predicted held-out, how fast the train returns rose, and how the code
changed between consecutive checkpoints."""

from __future__ import annotations

import ast
import difflib
import math
from pathlib import Path

from ..protocol import RunRecord

IGNORED = {"metrics.json", "_meta.json", ".keep"}

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
    if not checkpoint.is_dir():
        return {}
    out = {}
    for path in sorted(checkpoint.rglob("*")):
        relative = path.relative_to(checkpoint)
        if not path.is_file() or path.name in IGNORED or "__pycache__" in relative.parts:
            continue
        try:
            out[str(relative)] = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            out[str(relative)] = f"<binary {path.stat().st_size} bytes>"
    return out


def lines_changed(before: dict[str, str], after: dict[str, str]) -> int:
    """Lines added plus lines removed over every file of two checkpoints."""
    total = 0
    for name in sorted(set(before) | set(after)):
        old = before.get(name, "").splitlines()
        new = after.get(name, "").splitlines()
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
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return ast.dump(_Shape().visit(tree), include_attributes=False)


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
