"""The whole report: Parquet table, leaderboard, curves and HTML from a suite's records."""

from __future__ import annotations

import base64
from pathlib import Path

import pandas as pd

from evopolicygym.report import ReportFiles, build_report
from evopolicygym.suites import load_suite

from .conftest import make_record, write_record

ARCHIVE = Path(__file__).resolve().parents[2] / "archive/core16/heldout_returns.csv"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_report_files_from_records_with_a_failed_run(smoke_like_suite, tmp_path):
    suite = load_suite(smoke_like_suite)
    scores = {"random": 4.0, "hillclimb": 5.5}
    for job in suite.jobs:
        if job.env == "gym/cartpole" and job.agent_label == "hillclimb":
            record = make_record(job.env, job.model, status="error", submits=[("ok", 2, 9.0)])
        else:
            record = make_record(
                job.env,
                job.model,
                final_score=scores[job.agent_label],
                submits=[("ok", 2, 1.0), ("init_error", 1, None), ("ok", 1, 2.0)],
            )
        write_record(job.record_path, record)
    files = ReportFiles.in_dir(tmp_path / "results")
    report = build_report(smoke_like_suite, files, archive=ARCHIVE)

    table = pd.read_parquet(files.table)
    assert len(table) == 4
    assert sorted(table["status"]) == ["completed", "completed", "completed", "error"]
    assert list(table.loc[0, "curve_episodes"]) == [2, 3, 4]

    board = pd.read_csv(files.scores).set_index("entrant")
    assert board.loc["hillclimb", "rank_score"] == 0.5  # wins toy, placed last on cartpole (error)
    assert board.loc["random", "rank_score"] == 0.5
    assert set(board.index) == {"random", "hillclimb"}  # no archived env in this suite

    markdown = files.leaderboard.read_text()
    assert "4 runs: 3 completed, 1 error" in markdown
    assert "— (1/1 not completed)" in markdown
    assert "AgentError: agent exited with code 1" in markdown

    assert files.curves.read_bytes().startswith(PNG_MAGIC)
    page = files.html.read_text()
    encoded = page.split('src="data:image/png;base64,')[1].split('"')[0]
    assert base64.b64decode(encoded).startswith(PNG_MAGIC)
    assert "<h2>Leaderboard</h2>" in page and 'class="failed"' in page
    assert "hillclimb" in report.final_table()


def test_published_entrants_join_on_shared_environments(tmp_path):
    path = tmp_path / "core-suite.toml"
    path.write_text(
        f"[suite]\nroot='{tmp_path / 'runs'}'\nname='core'\n"
        "[[run]]\nenv='gym/acrobot'\nbudget=4\nbulk=true\n"
        "[[run]]\nenv='toy'\nbudget=4\n"
        "[[agent]]\nkind='builtin:hillclimb'\nname='hillclimb'\n"
    )
    suite = load_suite(path)
    write_record(
        suite.jobs[0].record_path, make_record("gym/acrobot", "hillclimb", final_score=-90.0)
    )
    write_record(suite.jobs[1].record_path, make_record("toy", "hillclimb", final_score=5.0))
    report = build_report(suite, ReportFiles.in_dir(tmp_path / "out"), archive=ARCHIVE)
    board = report.board.set_index("entrant")
    # -90 is behind GPT-5.5 (-84.69) and Claude (-88.59), ahead of DeepSeek, MiniMax and random.
    acrobot = report.cells[report.cells["env"] == "gym/acrobot"]
    assert len(acrobot) == 6
    assert board.loc["hillclimb", "envs"] == 2
    assert board.loc["GPT-5.5 (Codex)", "source"] == "published"
    assert board.loc["GPT-5.5 (Codex)", "envs"] == 1
    assert board.loc["hillclimb", "family: Classic control"] == 3 / 5
