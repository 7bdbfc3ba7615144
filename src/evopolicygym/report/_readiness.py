"""Aggregate per-environment ``check-envs`` results into one readiness table."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ._format import markdown_table

READINESS_COLUMNS = ["env", "level", "family", "ok", "issues", "first_issue", "result_file"]


def readiness_rows(path: Path) -> list[dict]:
    """Rows of one check-envs output file (``{"envs": [...]}``). An unreadable file yields one
    failed row that says why, so one broken check cannot hide the others."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = document["envs"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return [
            {
                "env": Path(path).stem,
                "level": "",
                "family": "",
                "ok": False,
                "issues": 1,
                "first_issue": f"unreadable result: {type(error).__name__}: {error}",
                "result_file": str(path),
            }
        ]
    rows = []
    for entry in entries:
        issues = entry.get("issues") or []
        first = issues[0] if issues else None
        rows.append(
            {
                "env": entry.get("name") or entry.get("id") or Path(path).stem,
                "level": entry.get("level", ""),
                "family": entry.get("family", ""),
                "ok": bool(entry.get("ok")),
                "issues": len(issues),
                "first_issue": (
                    f"{first.get('code', '')}: {first.get('message', '')}"
                    if isinstance(first, dict)
                    else (str(first) if first else "")
                ),
                "result_file": str(path),
            }
        )
    return rows


def readiness_table(paths: Iterable[Path]) -> pd.DataFrame:
    rows = [row for path in paths for row in readiness_rows(Path(path))]
    return pd.DataFrame(rows, columns=READINESS_COLUMNS)


def write_readiness(paths: Iterable[Path], markdown: Path, csv: Path) -> pd.DataFrame:
    """Write the aggregated table as Markdown and CSV; returns it."""
    table = readiness_table(paths)
    markdown.parent.mkdir(parents=True, exist_ok=True)
    passed = int(table["ok"].sum())
    markdown.write_text(
        f"# Environment readiness\n\n{passed} of {len(table)} environments pass.\n\n"
        + markdown_table(table.drop(columns=["result_file"])),
        encoding="utf-8",
    )
    table.to_csv(csv, index=False)
    return table
