"""Per-run diagnostics: budget use, learning speed, code churn and the kind of each edit."""

from __future__ import annotations

from evopolicygym.report._diagnostics import (
    diagnostics,
    edit_kind,
    episodes_to_fraction,
    lines_changed,
)

from .conftest import make_record

POLICY = "class Policy:\n    def act(self, obs):\n        return 1 if obs[0] > 0.5 else 0\n"


def test_a_changed_constant_is_a_parametric_edit_and_a_new_branch_a_structural_one():
    before = {"policy.py": POLICY, "params.json": '{"w": 1}'}
    tuned = {"policy.py": POLICY.replace("0.5", "0.25"), "params.json": '{"w": 2}'}
    branched = {"policy.py": POLICY.replace("return 1 if", "return 2 if obs[1] else 1 if")}
    assert edit_kind(before, dict(before)) == "unchanged"
    assert edit_kind(before, {**before, "params.json": '{"w": 3}'}) == "parametric"
    assert edit_kind(before, tuned) == "parametric"
    assert edit_kind(before, {**before, **branched}) == "structural"
    assert edit_kind(before, {**before, "helpers.py": "X = 1\n"}) == "structural"
    assert edit_kind(before, {**before, "policy.py": "class Policy(:\n"}) == "structural"


def test_lines_changed_counts_added_and_removed_lines_of_every_file():
    before = {"policy.py": "a\nb\nc\n"}
    after = {"policy.py": "a\nB\nc\nd\n", "notes.md": "x\ny\n"}
    assert lines_changed(before, after) == 2 + 1 + 2  # b -> B, + d, + two lines of notes.md
    assert lines_changed(after, after) == 0


def test_episodes_to_a_share_of_the_rise_of_the_best_train_mean():
    episodes, best = [4, 8, 12, 16, 20], [None, -100.0, -60.0, -10.0, 0.0]
    assert episodes_to_fraction(episodes, best, 0.5) == 16  # halfway from -100 to 0 is -50
    assert episodes_to_fraction(episodes, best, 0.3) == 12
    assert episodes_to_fraction([4, 8], [None, 5.0], 0.8) == 8  # never rose: first ok submit
    assert episodes_to_fraction([4], [None], 0.5) is None


def test_diagnostics_read_the_checkpoints_of_a_run(tmp_path):
    record = make_record("toy", "m", submits=[("ok", 2, 1.0), ("ok", 3, 2.0), ("ok", 1, 2.0)])
    for index, threshold in enumerate(("0.5", "0.7", "0.7")):
        folder = tmp_path / "checkpoints" / f"submit_{index:03d}"
        folder.mkdir(parents=True)
        (folder / "policy.py").write_text(POLICY.replace("0.5", threshold))
    found = diagnostics(record, tmp_path)
    assert found["episodes_per_submit"] == [2, 3, 1]
    assert found["churn_lines"] == [2, 0] and found["churn_total"] == 2
    assert (found["edits_parametric"], found["edits_structural"], found["edits_unchanged"]) == (
        1,
        0,
        1,
    )


def test_an_elif_chain_too_deep_to_walk_is_a_structural_edit_not_a_failure():
    # About 250 branches already passed the parser's and the tree walk's recursion limits.
    chain = "def f(x):\n    if x == 0:\n        return 0\n" + "".join(
        f"    elif x == {i}:\n        return {i}\n" for i in range(1, 3000)
    )
    assert edit_kind({"policy.py": POLICY}, {"policy.py": chain}) == "structural"


def test_checkpoints_are_read_without_following_links_and_within_bounds(tmp_path):
    record = make_record("toy", "m", submits=[("ok", 1, 1.0), ("ok", 1, 1.0)])
    for index in range(2):
        folder = tmp_path / "run" / "checkpoints" / f"submit_{index:03d}"
        folder.mkdir(parents=True)
        (folder / "policy.py").write_text(POLICY)
        # Links to files outside the run, whose contents differ: never read, so no churn.
        secret = tmp_path / f"secret-{index}.txt"
        secret.write_text(f"not the agent's, {index}\n")
        (folder / "peek.txt").symlink_to(secret)
        # A long file whose every other line changes: a diff of it takes quadratic time.
        lines = [f"w{i} = {i}.{5 if i % 2 or index == 0 else 25}" for i in range(40000)]
        (folder / "weights.py").write_text("\n".join(lines) + "\n")
        (folder / "big.bin").write_bytes(bytes(2**20 + index))
    found = diagnostics(record, tmp_path / "run")
    # 20 000 weights changed, and big.bin, read as its size: each a line removed and one added.
    assert found["churn_lines"] == [2 * 20000 + 2]
    assert found["edits_structural"] == 0 and found["edits_parametric"] == 1


def test_a_run_whose_checkpoints_cannot_be_read_keeps_its_row(tmp_path, monkeypatch):
    from evopolicygym.report import _table

    record = make_record("toy", "m", submits=[("ok", 1, 1.0)])
    path = tmp_path / "run.json"
    path.write_text(record.model_dump_json())

    def fails(*_args):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(_table, "diagnostics", fails)
    row = _table.record_row(path)
    assert row["status"] == record.outcome.status and row["churn_lines"] == []
