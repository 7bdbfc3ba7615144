"""Results table rows from run.json files, including failed, missing and corrupt records."""

from __future__ import annotations

from evopolicygym.report import learning_curve, record_row, results_table, run_line
from evopolicygym.suites import load_suite

from .conftest import make_record, write_record


def test_learning_curve_counts_charged_submits_and_keeps_the_best_ok_mean():
    record = make_record(
        "toy",
        "m",
        submits=[
            ("budget_invalid", 0, None),
            ("import_error", 2, None),
            ("ok", 1, 3.0),
            ("ok", 3, 2.0),
            ("ok", 2, 5.0),
        ],
        budget=8,
    )
    assert learning_curve(record) == ([2, 3, 6, 8], [None, 3.0, 3.0, 5.0])


def test_rows_follow_the_suite_matrix_and_survive_bad_records(smoke_like_suite):
    suite = load_suite(smoke_like_suite)
    random_toy, hill_toy, random_cart, hill_cart = suite.jobs
    write_record(random_toy.record_path, make_record("toy", "random", final_score=4.5))
    write_record(hill_toy.record_path, make_record("toy", "hillclimb", status="error", submits=[]))
    random_cart.record_path.parent.mkdir(parents=True)
    random_cart.record_path.write_text("{not json")
    table = results_table(suite=suite)
    assert list(table["job"]) == [j.name for j in suite.jobs]
    assert list(table["status"]) == ["completed", "error", "unreadable", "missing"]
    assert list(table["entrant"]) == ["random", "hillclimb", "random", "hillclimb"]
    assert list(table["env"]) == ["toy", "toy", "gym/cartpole", "gym/cartpole"]
    assert table.loc[0, "final_score"] == 4.5
    assert table.loc[1, "error"] == "AgentError: agent exited with code 1"
    assert table["final_score"].isna().tolist() == [False, True, True, True]
    assert "JSONDecodeError" in table.loc[2, "error"]
    assert hill_cart.record_path.name in table.loc[3, "error"]


def test_record_row_without_suite_uses_the_record(tmp_path):
    path = write_record(tmp_path / "r" / "run.json", make_record("toy", "alpha", final_score=2.0))
    row = record_row(path)
    assert (row["env"], row["entrant"], row["status"], row["final_score"]) == (
        "toy",
        "alpha",
        "completed",
        2.0,
    )
    table = results_table([path])
    assert table.loc[0, "job"] == "r" and table.loc[0, "n_ok_submits"] == 1


def test_run_line_reports_score_or_error(tmp_path):
    ok = write_record(tmp_path / "a" / "run.json", make_record("toy", "m", final_score=5.5))
    assert (
        run_line(ok)
        == "run a: completed, score 5.500, best submit 0, 1 submits, 2/4 episodes, 5.0 s"
    )
    failed = write_record(
        tmp_path / "b" / "run.json", make_record("toy", "m", status="error", submits=[])
    )
    assert run_line(failed).endswith("; AgentError: agent exited with code 1")
    assert run_line(tmp_path / "c" / "run.json").startswith("run c: missing")
