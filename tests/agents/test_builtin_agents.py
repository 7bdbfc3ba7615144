"""The built-in agents' turns against a live judge (real Flask server, real policy workers)."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from evopolicygym.agents.builtin import HillClimbAgent, JudgeClient, RandomAgent
from evopolicygym.agents.builtin import policy_linear as linear

# Each submit runs real policy workers: a few seconds per test.
pytestmark = pytest.mark.slow


def client_for(live_judge) -> JudgeClient:
    return JudgeClient(f"{live_judge.url}/info", f"{live_judge.url}/submit")


def summaries(live_judge) -> list[dict]:
    folders = sorted(live_judge.paths.feedback.glob("submit_*"))
    return [json.loads((f / "summary.json").read_text()) for f in folders]


def idle(text: str) -> bool:
    """The agent's answer once nothing can be submitted (budget spent or run finalized)."""
    return text.startswith(("Budget spent", "The run is finalized"))


def linear_action(params_file, obs):
    weights, bias = linear.load_params(params_file)
    features = linear.Features({"type": "Discrete", "n": 8})
    actions = linear.Actions({"type": "Discrete", "n": 3})
    return actions(weights @ features(obs) + bias)


@pytest.mark.judge(env="toy", budget=6, maximum=4)
def test_random_agent_spends_the_budget_in_the_largest_batches(live_judge):
    system = live_judge.paths.workspace / "system"
    agent = RandomAgent(client_for(live_judge), system)
    texts = [agent.turn(), agent.turn()]
    assert [s["n_episodes"] for s in summaries(live_judge)] == [4, 2]
    assert all(s["status"] == "ok" for s in summaries(live_judge))
    assert summaries(live_judge)[1]["env_instances"] == [4, 5]
    assert "remaining budget 0" in texts[1]
    source = resources.files("evopolicygym.agents.builtin").joinpath("policy_random.py")
    assert (system / "policy.py").read_text() == source.read_text()
    assert idle(agent.turn())
    assert len(summaries(live_judge)) == 2


@pytest.mark.judge(env="toy", budget=8)
def test_hillclimb_agent_finds_always_two_on_toy(live_judge):
    system = live_judge.paths.workspace / "system"
    agent = HillClimbAgent(client_for(live_judge), system)
    texts = [agent.turn() for _ in range(8)]
    done = summaries(live_judge)
    assert len(done) == 8 and all(s["status"] == "ok" for s in done)
    assert [s["n_episodes"] for s in done] == [1] * 8
    assert "seed measured" in texts[0] and "final measured" in texts[-1]
    # The three constant policies come first; the checkpoints keep their parameters.
    checkpoints = live_judge.paths.checkpoints
    for index in range(3):
        params = json.loads((checkpoints / f"submit_{index:03d}" / "params.json").read_text())
        assert params["bias"] == [float(a == index) for a in range(3)]
    # The policy left in system/ (the best parameters) plays 2 in every state.
    assert [linear_action(system / "params.json", s) for s in range(8)] == [2] * 8
    state = json.loads((system / "search_state.json").read_text())
    # 3 constant seeds + 1 random linear seed, 3 children, then the final re-measure.
    assert state["untried"] == [] and state["generation"] == 3
    assert idle(agent.turn())
    assert len(summaries(live_judge)) == 8


@pytest.mark.judge(env="toy", budget=8)
def test_hillclimb_agent_resumes_its_search_from_system(live_judge):
    system = live_judge.paths.workspace / "system"
    first = HillClimbAgent(client_for(live_judge), system)
    for _ in range(5):
        first.turn()
    saved = json.loads((system / "search_state.json").read_text())
    # A new process (e.g. after a crash of the run) picks the search up where it was.
    second = HillClimbAgent(client_for(live_judge), system)
    text = second.turn()
    assert "child 2" in text
    assert second.search is not None and second.search.state.cursor == saved["cursor"]
    assert summaries(live_judge)[-1]["submit_index"] == 5


@pytest.mark.judge(env="toy", budget=32)
def test_cmaes_agent_plays_generations_then_single_policies(live_judge):
    from evopolicygym.agents.builtin import CmaesAgent

    system = live_judge.paths.workspace / "system"
    agent = CmaesAgent(client_for(live_judge), system)
    texts = []
    while not idle(text := agent.turn()):
        texts.append(text)
    done = summaries(live_judge)
    assert sum(s["n_episodes"] for s in done) == 32 and all(s["status"] == "ok" for s in done)
    plan = agent.state.plan
    generations = done[: agent.state.generations]
    # Every member of a generation plays the same train case; the case moves every generation.
    assert all(len(set(s["env_instances"])) == 1 for s in generations)
    assert len({s["env_instances"][0] for s in generations}) == len(generations)
    assert all(s["n_episodes"] == plan.popsize for s in generations)
    assert len(done) - len(generations) == plan.final_submits == 3
    # The wide and the narrow search take turns; the finals are the best candidate seen, then
    # each search's mean.
    assert [("wide" in t, "narrow" in t) for t in texts[:4]] == [(True, False), (False, True)] * 2
    assert [t.split(":")[0] for t in texts[-3:]] == [
        "CMA-ES final (best candidate)",
        "CMA-ES final (wide search's mean)",
        "CMA-ES final (narrow search's mean)",
    ]
    checkpoints = live_judge.paths.checkpoints
    first = json.loads((checkpoints / "submit_000" / "params.json").read_text())
    last = json.loads((checkpoints / f"submit_{len(done) - 1:03d}" / "params.json").read_text())
    assert len(first["population"]) == plan.popsize and "population" not in last
    # The search state lives in the workspace, outside every checkpoint.
    assert (system.parent / "cmaes_state.pkl").exists()
    assert not list(checkpoints.glob("*/cmaes_state.pkl"))


@pytest.mark.judge(env="toy", budget=16)
def test_explore_agent_searches_rules_and_ends_with_the_incumbent(live_judge):
    from evopolicygym.agents.builtin import ExploreAgent

    system = live_judge.paths.workspace / "system"
    agent = ExploreAgent(client_for(live_judge), system)
    while not idle(agent.turn()):
        pass
    done = summaries(live_judge)
    assert sum(s["n_episodes"] for s in done) == 16 and all(s["status"] == "ok" for s in done)
    source = resources.files("evopolicygym.agents.builtin").joinpath("policy_explore.py")
    assert (system / "policy.py").read_text() == source.read_text()
    final = json.loads((system / "params.json").read_text())
    assert len(final["preference"]) == 3 and "population" not in final


def test_cmaes_budget_plan_keeps_generations_of_both_searches_and_three_final_submits():
    from evopolicygym.agents.builtin import BudgetView
    from evopolicygym.agents.builtin._cmaes import MIN_GENERATIONS, SPREADS, plan_budget

    plan = plan_budget(108, BudgetView(128, 1, 128, 1024, False, 128), (6, 17))
    search = 128 - plan.final_submits * plan.final_size
    assert plan.final_submits == 3 and plan.final_size == 4
    assert search // plan.popsize >= MIN_GENERATIONS * len(SPREADS) and plan.popsize == 9
    tiny = plan_budget(108, BudgetView(4, 1, 2, 8, False, 4), (6, 17))
    assert tiny.popsize <= 2
