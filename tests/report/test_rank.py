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


def test_the_bootstrap_statistic_ranks_exactly_like_the_leaderboard():
    from evopolicygym.report._stats import rank_intervals, rank_matrix

    archive = read_archive(ARCHIVE)
    entrants = list(dict.fromkeys(archive["agent"]))
    scores = rank_matrix(
        archive["score"].to_numpy(), list(archive["env"]), list(archive["agent"]), entrants
    )
    assert [round(float(s), 3) for s in scores] == [0.891, 0.750, 0.531, 0.359, 0.109]
    # Published cells have no episodes to resample: their intervals are points.
    cells = archive.rename(columns={"agent": "entrant"}).assign(returns=None)
    intervals = rank_intervals(cells, entrants)
    assert (
        round(intervals["GPT-5.5 (Codex)"].low, 3)
        == 0.891
        == round(intervals["GPT-5.5 (Codex)"].high, 3)
    )


def test_the_rank_interval_widens_when_the_episodes_do_not_separate_two_entrants():
    import numpy as np

    from evopolicygym.report._stats import rank_intervals

    rng = np.random.default_rng(0)
    close = list(rng.normal(0.0, 1.0, 30))
    cells = pd.DataFrame(
        {
            "entrant": ["a", "b", "a", "b"],
            "env": ["e1", "e1", "e2", "e2"],
            "returns": [
                close,
                [x + 0.01 for x in reversed(close)],  # the same episodes, 0.01 better
                list(rng.normal(5.0, 0.1, 30)),
                list(rng.normal(0.0, 0.1, 30)),
            ],
        }
    )
    cells["score"] = [float(np.mean(r)) for r in cells["returns"]]
    intervals = rank_intervals(cells, ["a", "b"])
    # e2 always goes to a; e1 is a coin toss: a's rank score is 0.5 or 1.
    assert intervals["a"].low == 0.5 and intervals["a"].high == 1.0
    assert intervals["b"].low == 0.0 and intervals["b"].high == 0.5
