"""Aggregate per-environment ``check-envs`` results into one readiness table."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ._format import markdown_table

READINESS_COLUMNS = [
    "env",
    "family",
    "core16",
    "declared_level",
    "reached_level",
    "ok",
    "failed_checks",
    "first_failure",
    "result_file",
]


def readiness_rows(path: Path) -> list[dict]:
    """Rows of one ``check-envs --output`` file (``{"envs": [{env, family, declared_level,
    reached_level, ok, checks: [{name, level, ok, message}]}]}``). An unreadable file yields one
    failed row that says why, so one broken check cannot hide the others."""
    path = Path(path)
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["envs"]
        rows = []
        for entry in entries:
            failed = [c for c in entry.get("checks", []) if not c.get("ok")]
            rows.append(
                {
                    "env": entry["env"],
                    "family": entry.get("family", ""),
                    "core16": bool(entry.get("core16")),
                    "declared_level": entry.get("declared_level", ""),
                    "reached_level": entry.get("reached_level") or "",
                    "ok": bool(entry.get("ok")),
                    "failed_checks": len(failed),
                    "first_failure": (
                        f"{failed[0].get('name', '')}: {failed[0].get('message', '')}"
                        if failed
                        else ""
                    ),
                    "result_file": str(path),
                }
            )
        return rows
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        return [
            {
                "env": path.stem,
                "family": "",
                "core16": False,
                "declared_level": "",
                "reached_level": "",
                "ok": False,
                "failed_checks": 1,
                "first_failure": f"unreadable result: {type(error).__name__}: {error}",
                "result_file": str(path),
            }
        ]


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
