import json

from evopolicygym.judge import Ledger


def _submit(index, cost, status="ok"):
    return {"index": index, "status": status, "cost": cost, "n_episodes": cost, "mean_return": 1.0}


def test_replay_restores_budget_and_history(tmp_path):
    journal = tmp_path / "journal.jsonl"
    ledger = Ledger.open(journal, 10, checkpoints=tmp_path, feedback=tmp_path)
    for index, cost in enumerate([3, 0, 4]):
        ledger.append({"type": "submit_begin", "index": index})
        ledger.append(
            {
                "type": "submit_commit",
                "index": index,
                "submit": _submit(index, cost, "ok" if cost else "budget_invalid"),
            }
        )
    ledger.append({"type": "validation", "index": 0, "mean": 2.0, "errors": 0})
    again = Ledger.open(journal, 10, checkpoints=tmp_path, feedback=tmp_path)
    assert (again.used, again.remaining, again.next_index) == (7, 3, 3)
    assert [s.index for s in again.ok_submits()] == [0, 2]
    assert again.validation[0]["mean"] == 2.0


def test_a_torn_last_line_is_ignored(tmp_path):
    journal = tmp_path / "journal.jsonl"
    ledger = Ledger.open(journal, 5, checkpoints=tmp_path, feedback=tmp_path)
    ledger.append({"type": "submit_begin", "index": 0})
    ledger.append({"type": "submit_commit", "index": 0, "submit": _submit(0, 2)})
    with open(journal, "a") as handle:
        handle.write('{"type": "submit_commit", "index": 1, "sub')
    assert Ledger.open(journal, 5, checkpoints=tmp_path, feedback=tmp_path).remaining == 3


def test_an_uncommitted_submit_without_feedback_is_rolled_back(tmp_path):
    journal, checkpoints, feedback = (
        tmp_path / "journal.jsonl",
        tmp_path / "checkpoints",
        tmp_path / "feedback",
    )
    checkpoints.mkdir()
    feedback.mkdir()
    ledger = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    ledger.append({"type": "submit_begin", "index": 0})
    (checkpoints / "submit_000").mkdir()
    (feedback / ".submit_000.tmp").mkdir()
    again = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    assert (again.remaining, again.next_index) == (5, 0)
    assert not (checkpoints / "submit_000").exists() and not (feedback / ".submit_000.tmp").exists()
    assert json.loads(journal.read_text().splitlines()[-1])["type"] == "submit_rollback"


def test_an_uncommitted_submit_whose_feedback_exists_is_rolled_forward(tmp_path):
    journal, checkpoints, feedback = (
        tmp_path / "journal.jsonl",
        tmp_path / "checkpoints",
        tmp_path / "feedback",
    )
    (feedback / "submit_000").mkdir(parents=True)
    checkpoints.mkdir()
    ledger = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    ledger.append({"type": "submit_begin", "index": 0})
    summary = {
        "submit_index": 0,
        "status": "ok",
        "env_instances": [1, 2],
        "n_episodes": 2,
        "first_global_episode": 0,
        "mean_return": 4.0,
        "returns": [3.0, 5.0],
        "errors": [],
        "wall_time_seconds": 0.5,
    }
    (feedback / "submit_000" / "summary.json").write_text(json.dumps(summary))
    again = Ledger.open(journal, 5, checkpoints=checkpoints, feedback=feedback)
    assert (again.remaining, again.next_index) == (3, 1)
    assert again.submits[0].returns == [3.0, 5.0]
