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
