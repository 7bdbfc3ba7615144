"""Rank score, as in the published Core-16 results.

Within each environment the N entrants are placed by score: ``place = 1 + number of entrants
strictly better`` (ties share the better place); the environment score is
``(N - place) / (N - 1)``; an entrant's rank score is the mean over the environments it has.
An entrant without a completed run on an environment (error, no ok submit, missing) is placed
behind every entrant with a score there and earns 0 for it (never a win or a top-two place): a
recorded ``final_score`` of 0 for ``no_ok_submit`` would otherwise beat every real return on
environments with negative rewards.
"""

from __future__ import annotations

import math

import pandas as pd

from ._stats import cell_errors

CELL_COLUMNS = ["entrant", "env", "score", "family", "source"]


def cells_from_runs(table: pd.DataFrame, families: dict[str, str]) -> pd.DataFrame:
    """One row per (entrant, env): the mean ``final_score`` over completed runs (NaN when none
    completed), its standard errors over held-out cases and over repeats, the pooled per-case
    held-out returns (``returns``, for bootstrap intervals), and counts of runs and failures."""
    rows = []
    for (entrant, env), group in table.groupby(["entrant", "env"], sort=False):
        done = group[(group["status"] == "completed") & group["final_score"].notna()]
        completed = done["final_score"]
        per_run = [list(r) for r in done["heldout_returns"] if r is not None and len(r)]
        _mean, se_cases, se_repeats = cell_errors(per_run)
        rows.append(
            {
                "entrant": entrant,
                "env": env,
                "score": float(completed.mean()) if len(completed) else math.nan,
                "std": float(completed.std(ddof=0)) if len(completed) > 1 else math.nan,
                "se_cases": se_cases,
                "se_repeats": se_repeats,
                "returns": [x for run in per_run for x in run] or None,
                "runs": len(group),
                "completed": len(completed),
                "failed": int((group["status"] != "completed").sum()),
                "family": families.get(env, ""),
                "source": "suite",
            }
        )
    extra = ["std", "se_cases", "se_repeats", "returns", "runs", "completed", "failed"]
    return pd.DataFrame(rows, columns=[*CELL_COLUMNS, *extra])


def place_entrants(cells: pd.DataFrame) -> pd.DataFrame:
    """Add ``n``, ``place`` and ``env_score`` to every (entrant, env) cell."""
    cells = cells.copy()
    places, counts = [], []
    for _, row in cells.iterrows():
        rivals = cells[cells["env"] == row["env"]]["score"]
        counts.append(len(rivals))
        if math.isnan(row["score"]):
            places.append(1 + int(rivals.notna().sum()))
        else:
            places.append(1 + int((rivals > row["score"]).sum()))
    cells["n"] = counts
    cells["place"] = places
    cells["env_score"] = [
        math.nan if n < 2 else 0.0 if math.isnan(score) else (n - place) / (n - 1)
        for n, place, score in zip(cells["n"], cells["place"], cells["score"], strict=True)
    ]
    return cells


def rank_scores(cells: pd.DataFrame) -> pd.DataFrame:
    """Leaderboard: per entrant the rank score (mean env score), wins (first places), top-two
    count, environments ranked, and one ``family: <name>`` column per family; best first."""
    placed = place_entrants(cells)
    families = sorted(f for f in placed["family"].unique() if f)
    rows = []
    for entrant, group in placed.groupby("entrant", sort=False):
        row = {
            "entrant": entrant,
            "source": group["source"].iloc[0],
            "rank_score": group["env_score"].mean(),
            "wins": int(((group["place"] == 1) & group["score"].notna()).sum()),
            "top_two": int(((group["place"] <= 2) & group["score"].notna()).sum()),
            "envs": len(group),
        }
        for family in families:
            in_family = group[group["family"] == family]["env_score"]
            row[f"family: {family}"] = in_family.mean() if len(in_family) else math.nan
        rows.append(row)
    board = pd.DataFrame(rows)
    return board.sort_values(
        ["rank_score", "wins", "entrant"], ascending=[False, False, True], na_position="last"
    ).reset_index(drop=True)
