"""The hill-climb search and the budget arithmetic of the built-in agents (pure logic)."""

from __future__ import annotations

import numpy as np
import pytest

from evopolicygym.agents.builtin import BudgetView, HillClimb
from evopolicygym.agents.builtin._hillclimb import FAILURE_FACTOR, SUCCESS_FACTOR


def view(remaining, minimum=1, maximum=100, n=8):
    return BudgetView(remaining, minimum, maximum, n, finalized=False)


@pytest.mark.parametrize(
    ("budget", "desired", "expected"),
    [
        (view(10), 3, 3),
        (view(2), 3, 2),  # capped by the remaining budget
        (view(10, maximum=2), 3, 2),  # capped by the maximum
        (view(10, minimum=4), 1, 4),  # raised to the minimum
        (view(5, minimum=2), 4, 5),  # 4 would strand 1 < minimum: take all 5
        (view(9, minimum=4, maximum=6), 6, 5),  # 6 would strand 3: leave exactly 4
        (view(1, minimum=2), 1, None),  # nothing can be submitted
    ],
)
def test_batch_sizes_never_strand_budget(budget, desired, expected):
    assert budget.batch(desired) == expected


def toy_returns(params, ids):
    """Return of the toy task for a 3-action linear policy on a one-number observation."""
    w, b = np.asarray(params[:3]), np.asarray(params[3:])
    states = [(7 * i + 3) % 8 for i in ids]
    return [float(s + np.argmax(w * (s - 3.5) / 3.5 + b)) for s in states]


def constant(action):
    return [0.0, 0.0, 0.0, *np.eye(3)[action]]


def test_seeds_first_then_children_on_the_same_probe():
    search = HillClimb.fresh(
        [constant(0), constant(1), constant(2)], seed=1, batch=2, n_instances=8
    )
    kinds = []
    for _ in range(3):
        candidate = search.propose(2, final=False)
        kinds.append(candidate.kind)
        assert candidate.ids == [0, 1]
        search.observe(candidate, toy_returns(candidate.params, candidate.ids))
    assert kinds == ["seed"] * 3
    assert search.state.parent == constant(2)  # the best constant action
    assert search.state.parent_returns == dict(
        zip([0, 1], toy_returns(constant(2), [0, 1]), strict=True)
    )
    child = search.propose(2, final=False)
    assert child.kind == "child" and child.ids == [0, 1] and child.params != constant(2)


def test_step_size_follows_success_and_failure():
    search = HillClimb.fresh([[0.0] * 6], seed=0, batch=1, n_instances=8)
    seed = search.propose(1, final=False)
    search.observe(seed, [5.0])
    child = search.propose(1, final=False)
    search.observe(child, [6.0])  # better: accepted, step grows
    assert search.state.parent == child.params and search.state.sigma == SUCCESS_FACTOR
    child = search.propose(1, final=False)
    search.observe(child, [2.0])  # worse: rejected, step shrinks
    assert search.state.parent != child.params
    assert search.state.sigma == pytest.approx(SUCCESS_FACTOR * FAILURE_FACTOR)
    child = search.propose(1, final=False)
    search.observe(child, None)  # a failed submit counts as worse
    assert search.state.parent != child.params
    tied = search.propose(1, final=False)
    search.observe(tied, [6.0])  # a tie keeps the parent and the step
    assert search.state.parent != tied.params
    assert search.state.sigma == pytest.approx(SUCCESS_FACTOR * FAILURE_FACTOR**2)


def test_probe_rotates_and_parent_is_measured_again():
    search = HillClimb.fresh([[0.0] * 6], seed=0, batch=2, n_instances=5)
    search.rotate_every = 2
    plan = []
    for _ in range(6):
        candidate = search.propose(2, final=False)
        plan.append((candidate.kind, candidate.ids))
        search.observe(candidate, [1.0] * len(candidate.ids))
    assert plan == [
        ("seed", [0, 1]),
        ("child", [0, 1]),
        ("child", [0, 1]),
        ("parent", [2, 3]),
        ("child", [2, 3]),
        ("child", [2, 3]),
    ]
    final = search.propose(3, final=True)
    assert final.kind == "final" and final.ids == [4, 0, 1] and final.params == search.state.parent


def test_search_finds_always_two_on_the_toy_task():
    search = HillClimb.fresh([constant(a) for a in range(3)], seed=0, batch=1, n_instances=8)
    for _ in range(12):
        candidate = search.propose(1, final=False)
        search.observe(candidate, toy_returns(candidate.params, candidate.ids))
    best = search.state.parent
    assert toy_returns(best, range(8)) == [s + 2.0 for s in toy_returns(constant(0), range(8))]


def test_the_agents_stop_naming_the_real_cause_when_no_submit_can_be_valid():
    from evopolicygym.agents.builtin import CannotPlay
    from evopolicygym.agents.builtin._agents import _waiting

    with pytest.raises(CannotPlay, match="at least 5 and at most 2 episodes per submit"):
        _waiting(BudgetView(4, 5, 2, 16, False, 4))
    with pytest.raises(CannotPlay, match=r"1 of 9 episodes remain, fewer than the minimum .* 2"):
        _waiting(BudgetView(1, 2, 9, 16, False, 9))
    assert _waiting(BudgetView(0, 1, 4, 16, False, 4)).startswith("Budget spent")


def test_goal_progress_reads_the_share_of_the_goal_distance_closed(tmp_path):
    from evopolicygym.agents.builtin._explore import goal_progress, is_goal_task

    achieved = np.array([[0.0, 0.0, 0.0], [0.02, 0.0, 0.0], [0.06, 0.0, 0.0]])
    desired = np.tile([0.1, 0.0, 0.0], (3, 1))
    np.savez_compressed(tmp_path / "observations.npz", achieved_goal=achieved, desired_goal=desired)
    closed, moved = goal_progress(tmp_path)
    assert closed == pytest.approx(0.6) and moved == pytest.approx(0.06)
    assert goal_progress(tmp_path / "missing") is None
    goal = {"type": "Dict", "spaces": {"achieved_goal": {}, "desired_goal": {}, "observation": {}}}
    assert is_goal_task({"obs_space": goal, "action_space": {"type": "Box"}})
    assert not is_goal_task({"obs_space": goal, "action_space": {"type": "Discrete"}})
