"""The whole report: Parquet table, leaderboard, curves and HTML from a suite's records."""

from __future__ import annotations

import base64
from pathlib import Path

import pandas as pd

from evopolicygym.protocol import ProtocolFingerprint
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
            record.isolation = {"level": "process"}
        else:
            record = make_record(
                job.env,
                job.model,
                final_score=scores[job.agent_label],
                submits=[("ok", 2, 1.0), ("init_error", 1, None), ("ok", 1, 2.0)],
            )
            record.isolation = {"level": "namespaced"}
        write_record(job.record_path, record)
    files = ReportFiles.in_dir(tmp_path / "results")
    report = build_report(smoke_like_suite, files, archive=ARCHIVE)

    table = pd.read_parquet(files.table)
    assert len(table) == 4
    assert sorted(table["status"]) == ["completed", "completed", "completed", "error"]
    assert list(table.loc[0, "curve_episodes"]) == [2, 3, 4]
    assert sorted(table["isolation"]) == ["namespaced"] * 3 + ["process"]

    board = pd.read_csv(files.scores).set_index("entrant")
    assert board.loc["hillclimb", "rank_score"] == 0.5  # wins toy, placed last on cartpole (error)
    assert board.loc["random", "rank_score"] == 0.5
    assert set(board.index) == {"random", "hillclimb"}  # no archived env in this suite

    markdown = files.leaderboard.read_text()
    assert "4 runs: 3 completed, 1 error; policy isolation: 3 namespaced, 1 process" in markdown
    assert "— (1/1 not completed)" in markdown
    assert "AgentError: agent exited with code 1" in markdown

    assert files.curves.read_bytes().startswith(PNG_MAGIC)
    page = files.html.read_text()
    encoded = page.split('src="data:image/png;base64,')[1].split('"')[0]
    assert base64.b64decode(encoded).startswith(PNG_MAGIC)
    assert "<h2>Leaderboard</h2>" in page and "Protocol " in page and 'class="failed"' in page
    assert "hillclimb" in report.final_table()


def _published_protocol(env: str, **changes) -> ProtocolFingerprint:
    """The fingerprint a run at the published Core-16 protocol records (seed-0 splits)."""
    from evopolicygym.cases import generate_splits
    from evopolicygym.envs import get_env

    fields = dict(
        env=env,
        env_version="0.1",
        budget=128,
        min_episodes_per_submit=1,
        max_episodes_per_submit=128,
        train_cases=1024,
        valid_size=64,
        heldout_size=256,
        cases=generate_splits(0, 1024, 64, 256).digest(),
        cases_seed=0,
        max_episode_steps=get_env(env, bulk=True).max_episode_steps,
        harness_version="0.2.0",
    )
    return ProtocolFingerprint(**{**fields, **changes})


def _core_suite(tmp_path):
    path = tmp_path / "core-suite.toml"
    path.write_text(
        f"[suite]\nroot='{tmp_path / 'runs'}'\nname='core'\n"
        "[[run]]\nenv='gym/acrobot'\nbudget=128\nbulk=true\n"
        "[[run]]\nenv='gym/continuouscar'\nbudget=128\nbulk=true\n"
        "[[agent]]\nkind='builtin:hillclimb'\nname='hillclimb'\n"
    )
    return load_suite(path)


def test_published_entrants_join_runs_of_their_protocol(tmp_path):
    suite = _core_suite(tmp_path)
    for job, score in zip(suite.jobs, (-90.0, 96.0), strict=True):
        record = make_record(job.env, "hillclimb", final_score=score)
        record.protocol = _published_protocol(job.env)
        record.outcome.heldout_returns = [score - 1.0, score + 1.0]
        write_record(job.record_path, record)
    report = build_report(suite, ReportFiles.in_dir(tmp_path / "out"), archive=ARCHIVE)
    assert len(report.comparisons) == 1
    board = report.board.set_index("entrant")
    # -90 is behind GPT-5.5 (-84.69) and Claude (-88.59), ahead of DeepSeek, MiniMax and random;
    # 96 is behind Claude (98.77) only.
    acrobot = report.cells[report.cells["env"] == "gym/acrobot"]
    assert len(acrobot) == 6
    assert board.loc["hillclimb", "envs"] == 2
    assert board.loc["GPT-5.5 (Codex)", "source"] == "published"
    assert board.loc["hillclimb", "family: Classic control"] == (3 / 5 + 4 / 5) / 2
    assert board.loc["hillclimb", "rank_ci"].startswith("[")
    assert "ranked beside these runs on 2 environment(s)" in report.main.published_note


def test_published_entrants_stay_out_of_other_protocols_and_say_why(tmp_path):
    suite = _core_suite(tmp_path)
    for job in suite.jobs:
        record = make_record(job.env, "hillclimb", final_score=-1.0)
        record.protocol = _published_protocol(job.env, budget=4, max_episodes_per_submit=4)
        write_record(job.record_path, record)
    report = build_report(suite, ReportFiles.in_dir(tmp_path / "out"), archive=ARCHIVE)
    assert set(report.board["entrant"]) == {"hillclimb"}
    assert "their protocol differs (budget: 4 vs 128" in report.main.published_note
    assert "not ranked here" in (tmp_path / "out" / "report.html").read_text()


def test_runs_of_two_protocols_are_ranked_apart_with_the_difference_named(tmp_path):
    suite = _core_suite(tmp_path)
    for job, heldout in zip(suite.jobs, (256, 32), strict=True):
        record = make_record(job.env, "hillclimb", final_score=-1.0)
        record.protocol = _published_protocol(job.env, heldout_size=heldout)
        write_record(job.record_path, record)
    report = build_report(suite, ReportFiles.in_dir(tmp_path / "out"), archive=ARCHIVE)
    assert len(report.comparisons) == 2
    apart = report.comparisons[1]
    assert apart.differences == ["heldout_size: 32 vs 256"] or apart.differences == [
        "heldout_size: 256 vs 32"
    ]
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "Runs under another protocol" in markdown and "Differs from" in markdown
