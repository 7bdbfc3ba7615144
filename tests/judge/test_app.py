"""The HTTP judge, served for real on loopback, with real policy worker processes."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from evopolicygym.judge import MAX_BODY_BYTES
from evopolicygym.protocol import Evaluation
from support import constant_policy, write_policy


def test_info_and_task_describe_the_run_without_hidden_cases(live_judge):
    info = live_judge.request("GET", "/info").body
    assert info["state"] == {
        "remaining_budget": 6,
        "n_submits": 0,
        "is_finalized": False,
        "phase": "open",
    }
    assert info["env_meta"]["n_env_instances"] == 8
    assert info["env_meta"]["action_space"] == {"type": "Discrete", "n": 3}
    assert info["resource_limits"]["act_timeout_s"] == 10.0
    task = live_judge.request("GET", "/task").body
    assert "## Policy Contract" in task and "## Submit Notes" in task and "0..7" in task
    hidden = [
        str(seed)
        for seed in live_judge.judge.settings.splits.valid
        + live_judge.judge.settings.splits.heldout
    ]
    assert not any(seed in json.dumps(info) or seed in task for seed in hidden)


@pytest.mark.parametrize(
    ("kwargs", "status", "code"),
    [
        ({"raw": b"{not json"}, 400, "bad_request"),
        ({"raw": b"[1, 2]"}, 400, "bad_request"),
        ({"body": {"cases": [1]}}, 400, "bad_request"),
        ({"body": {"env_instances": [1], "extra": 1}}, 400, "bad_request"),
        ({"body": {"env_instances": "1-"}}, 400, "budget_invalid"),
        ({"body": {"env_instances": 3}}, 400, "budget_invalid"),
        (
            {"body": {"env_instances": [0]}, "content_type": "text/plain"},
            415,
            "unsupported_media_type",
        ),
        (
            {"raw": b'{"env_instances": "' + b"1," * MAX_BODY_BYTES + b'1"}'},
            413,
            "payload_too_large",
        ),
    ],
)
def test_malformed_requests_get_a_reason_and_cost_nothing(live_judge, kwargs, status, code):
    response = live_judge.request("POST", "/submit", **kwargs)
    assert response.status == status
    assert response.body["status"] == code and response.body["error"]["message"]
    assert live_judge.judge.ledger.remaining == 6 and live_judge.judge.ledger.next_index == 0


def test_unknown_paths_and_finalize_are_refused(live_judge):
    assert live_judge.request("GET", "/nope").status == 404
    assert live_judge.request("POST", "/finalize", {}).body["status"] == "method_not_allowed"
    assert live_judge.request("GET", "/health").body == {"status": "ok", "phase": "open"}


def test_rejects_write_a_summary_but_cost_nothing(live_judge):
    out_of_range = live_judge.submit([0, 8])
    too_many = live_judge.submit("0-6")
    assert (out_of_range.status, out_of_range.body["status"]) == (400, "invalid_env_instance")
    assert (too_many.status, too_many.body["status"]) == (400, "budget_invalid")
    assert too_many.body["summary"]["n_episodes"] == 0
    feedback = live_judge.paths.feedback
    assert (
        json.loads((feedback / "submit_001" / "summary.json").read_text())["status"]
        == "budget_invalid"
    )
    assert "1..6" in (feedback / "submit_001" / "errors.txt").read_text()
    assert live_judge.judge.ledger.remaining == 6
    assert not (live_judge.paths.checkpoints / "submit_000").exists()


def test_an_ok_submit_writes_complete_feedback(live_judge):
    write_policy(
        live_judge.paths.system,
        """
        class Policy:
            def __init__(self, obs_space, action_space, env_meta):
                print("init for", env_meta["env"], env_meta["n_episodes_this_submit"])
            def reset(self, episode_index):
                self.i = episode_index
            def act(self, obs):
                print("seen", obs)
                return 2
    """,
    )
    response = live_judge.submit("0-2")
    assert response.status == 200
    summary = response.body["summary"]
    seeds = live_judge.judge.settings.splits.train
    assert summary["returns"] == [seeds[i] % 8 + 2.0 for i in range(3)]
    assert summary["first_global_episode"] == 0 and summary["remaining_budget"] == 3
    folder = live_judge.paths.feedback / "submit_000"
    assert json.loads((folder / "summary.json").read_text()) == summary
    rows = [
        json.loads(line)
        for line in (folder / "episodes" / "ep_000" / "trajectory.jsonl").read_text().splitlines()
    ]
    assert rows == [
        {
            "t": 0,
            "obs": seeds[0] % 8,
            "action": 2,
            "reward": seeds[0] % 8 + 2.0,
            "terminated": True,
            "truncated": False,
            "info": {},
        }
    ]
    assert (
        (folder / "episodes" / "ep_000" / "stdout.txt")
        .read_text()
        .startswith("init for toy 3\nseen")
    )
    assert (live_judge.paths.checkpoints / "submit_000" / "metrics.json").exists()
    second = live_judge.submit([5])
    assert second.body["summary"]["first_global_episode"] == 3
    assert (live_judge.paths.feedback / "submit_001" / "episodes" / "ep_003").is_dir()


@pytest.mark.judge(budget=20, maximum=3)
def test_concurrent_submits_never_overdraw(live_judge):
    write_policy(live_judge.paths.system, constant_policy(1))
    with ThreadPoolExecutor(max_workers=16) as pool:
        responses = list(
            pool.map(lambda i: live_judge.submit([i % 8, (i + 1) % 8, (i + 2) % 8]), range(16))
        )
    charged = [r for r in responses if r.status == 200]
    assert (
        len(charged) == 6
    )  # 6 x 3 = 18 episodes; the rest cannot fit in the 2 left or the run closed
    assert all(r.status in (400, 409) for r in responses if r.status != 200)
    assert live_judge.judge.ledger.used == 18
    assert sorted(r.body["summary"]["first_global_episode"] for r in charged) == [
        0,
        3,
        6,
        9,
        12,
        15,
    ]
    indexes = sorted(r.body["submit_id"] for r in responses if "submit_id" in r.body)
    assert indexes == list(range(len(indexes)))


def test_spending_the_budget_closes_submits(live_judge):
    write_policy(live_judge.paths.system, constant_policy(2))
    assert live_judge.submit("0-5").status == 200
    closed = live_judge.submit([0])
    assert (closed.status, closed.body["status"]) == (409, "run_closed")
    state = live_judge.request("GET", "/info").body["state"]
    assert state["phase"] == "finalizing" and state["is_finalized"]


def test_selection_prefers_the_best_validation_mean_and_ties_go_to_the_latest(live_judge):
    write_policy(live_judge.paths.system, constant_policy(0))
    live_judge.submit([0])
    write_policy(live_judge.paths.system, constant_policy(2))
    live_judge.submit([0])
    live_judge.submit([1])
    write_policy(live_judge.paths.system, constant_policy(1))
    live_judge.submit("2-4")
    selection = live_judge.judge.finalize()
    valid = live_judge.judge.settings.splits.valid
    mean = lambda action: sum(s % 8 + action for s in valid) / len(valid)  # noqa: E731
    assert selection.val_scores == {0: mean(0), 1: mean(2), 2: mean(2), 3: mean(1)}
    assert selection.best == 2
    heldout = live_judge.judge.settings.splits.heldout
    assert selection.heldout.mean == sum(s % 8 + 2 for s in heldout) / len(heldout)
    assert "return 2" in (live_judge.paths.system / "policy.py").read_text().replace(
        "self.action", "return 2"
    )
    assert (live_judge.paths.system / "policy.py").read_text() == (
        live_judge.paths.checkpoints / "submit_002" / "policy.py"
    ).read_text()


def test_finalize_resumes_from_journaled_validation_scores(live_judge):
    write_policy(live_judge.paths.system, constant_policy(0))
    live_judge.submit([0])
    live_judge.submit([1])
    # As if a crash hit after submit 0 was validated: its journaled score is reused, not redone.
    live_judge.judge.ledger.append(
        Evaluation(type="validation", index=0, mean=99.0, std=0.0, returns=[], errors=0)
    )
    selection = live_judge.judge.finalize()
    assert selection.val_scores[0] == 99.0 and selection.best == 0
    valid = live_judge.judge.settings.splits.valid
    assert selection.val_scores[1] == sum(s % 8 for s in valid) / len(valid)
    assert sorted(live_judge.judge.ledger.validation) == [0, 1]
