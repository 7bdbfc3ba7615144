"""Rank score as defined for the published Core-16 results."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from evopolicygym.report import place_entrants, rank_scores, read_archive

ARCHIVE = Path(__file__).resolve().parents[2] / "archive/core16/heldout_returns.csv"


def cells(rows):
    return pd.DataFrame(
        [
            {"entrant": e, "env": env, "score": s, "family": f, "source": "suite"}
            for e, env, s, f in rows
        ]
    )


def test_archive_reproduces_the_published_aggregates():
    archive = read_archive(ARCHIVE)
    board = rank_scores(
        pd.DataFrame(
            {
                "entrant": archive["agent"],
                "env": archive["env"],
                "score": archive["score"],
                "family": archive["family"],
                "source": "published",
            }
        )
    )
    published = {
        "GPT-5.5 (Codex)": 0.891,
        "Claude Opus 4.7": 0.750,
        "MiniMax-M3": 0.531,
        "DeepSeek-V4-Pro": 0.359,
        "uniform random": 0.109,
    }
    assert list(board["entrant"]) == list(published)
    for entrant, value in published.items():
        row = board[board["entrant"] == entrant].iloc[0]
        assert round(row["rank_score"], 3) == value
        assert row["envs"] == 16
    assert board["wins"].sum() >= 16  # ties share first place (MiniGrid zeros)
    assert {c for c in board.columns if c.startswith("family: ")} == {
        f"family: {f}" for f in archive["family"].unique()
    }


def test_ties_share_the_better_place_and_missing_scores_come_last():
    placed = place_entrants(
        cells(
            [
                ("a", "e", 1.0, "f"),
                ("b", "e", 1.0, "f"),
                ("c", "e", 0.5, "f"),
                ("d", "e", math.nan, "f"),
            ]
        )
    ).set_index("entrant")
    assert placed["place"].to_dict() == {"a": 1, "b": 1, "c": 3, "d": 4}
    assert placed.loc["a", "env_score"] == 1.0
    assert placed.loc["c", "env_score"] == pytest.approx(1 / 3)
    assert placed.loc["d", "env_score"] == 0.0


def test_rank_score_is_the_mean_over_environments_with_wins_and_top_two():
    board = rank_scores(
        cells(
            [
                ("a", "e1", 3.0, "x"),
                ("b", "e1", 2.0, "x"),
                ("c", "e1", 1.0, "x"),
                ("a", "e2", 0.0, "y"),
                ("b", "e2", 5.0, "y"),
                ("c", "e2", 1.0, "y"),
            ]
        )
    ).set_index("entrant")
    assert board.loc["a", "rank_score"] == pytest.approx(0.5)
    assert board.loc["b", "rank_score"] == pytest.approx(0.75)
    assert board.loc["b", "wins"] == 1 and board.loc["b", "top_two"] == 2
    assert board.loc["a", "family: x"] == 1.0 and board.loc["a", "family: y"] == 0.0
    assert list(board.index) == ["b", "a", "c"]


def test_unscored_cells_earn_nothing_even_when_nobody_scored():
    board = rank_scores(cells([("a", "e", math.nan, "f"), ("b", "e", math.nan, "f")]))
    assert list(board["rank_score"]) == [0.0, 0.0]
    assert list(board["wins"]) == [0, 0] and list(board["top_two"]) == [0, 0]


def test_single_entrant_has_no_rank_score():
    board = rank_scores(cells([("a", "e", 1.0, "f")]))
    assert math.isnan(board.loc[0, "rank_score"])
