"""Frozen published results (``archive/``): read-only comparison entrants for reports."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

ARCHIVE_COLUMNS = ["env", "label", "upstream", "family", "agent", "harness", "score"]


def published_archive() -> Path | None:
    """The checkout's frozen Core-16 table (``archive/core16/heldout_returns.csv``), or
    ``None`` when the package does not run from a checkout."""
    path = Path(__file__).resolve().parents[3] / "archive" / "core16" / "heldout_returns.csv"
    return path if path.is_file() else None


def read_archive(path: Path) -> pd.DataFrame:
    """The archived table (one row per env x agent). Raises ``FileNotFoundError`` or
    ``ValueError`` naming the missing columns."""
    table = pd.read_csv(path)
    missing = [c for c in ARCHIVE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: archive table lacks columns {missing}")
    return table


def archive_cells(archive: pd.DataFrame, envs: list[str], taken: set[str]) -> pd.DataFrame:
    """Archived (entrant, env) cells for the environments in ``envs``. An archived agent whose
    name equals a suite entrant is renamed ``<name> (published)`` so both stay visible."""
    shared = archive[archive["env"].isin(envs)]
    return pd.DataFrame(
        {
            "entrant": [a if a not in taken else f"{a} (published)" for a in shared["agent"]],
            "env": shared["env"].to_numpy(),
            "score": shared["score"].astype(float).to_numpy(),
            "family": shared["family"].to_numpy(),
            "source": "published",
        }
    )


def archive_families(archive: pd.DataFrame) -> dict[str, str]:
    return dict(zip(archive["env"], archive["family"], strict=True))
