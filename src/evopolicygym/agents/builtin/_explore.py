"""builtin:explore: search for sparse-reward tasks, where a random walk rarely reaches a reward
and the return alone gives a search no gradient to follow.

Goal tasks with continuous actions (observations with ``achieved_goal`` and ``desired_goal``,
such as Fetch): CMA-ES over the linear policy as in builtin:cmaes, ranking members by their
return plus a shaped score read from their feedback: the share of the goal distance the episode
closed, and whether it moved the achieved goal at all (novelty: a policy that touches the object
is worth refining even before it earns a reward). See :class:`GoalCmaesAgent`.

Discrete actions (MiniGrid): the count-based exploration rules of ``policy_explore.py``. The policy explores systematically by itself
(it prefers untried actions and rarely seen observations within an episode); the agent searches
the rule's few parameters (a preference per action, the weight ``beta`` of next-observation
counts) with the budget:

- One generation is one submit: the incumbent plus fresh and mutated rules, every member on the
  same train case (common random numbers). A member replaces the incumbent only when it earns
  more than the incumbent did on that case, so with no reward anywhere the search keeps the
  plain rule (no preferences, ``beta`` 1) instead of wandering.
- The budget split is builtin:cmaes's (``plan_budget``): generations, then the final submits of
  the incumbent alone, which finalization validates on hidden cases like every ok checkpoint.

The search state is pickled to ``explore_state.pkl`` in the workspace (outside ``system/``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._agents import _outcome, _policy_source, _write_atomic
from ._budget import BudgetView
from ._client import JudgeClient
from ._cmaes import CmaesAgent, CmaesPlan, plan_budget
from ._generational import GenerationalAgent
from ._serve import CannotPlay

MUTATION = 0.5
GOAL_KEYS = ("achieved_goal", "desired_goal")
CLOSED_WEIGHT = 25.0  # return points for closing the whole initial goal distance
MOVED_WEIGHT = 10.0  # return points for moving the achieved goal by MOVED_SCALE or more
MOVED_SCALE = 0.05


def is_goal_task(meta: dict[str, Any]) -> bool:
    obs, action = meta["obs_space"], meta["action_space"]
    spaces = obs.get("spaces", {}) if obs.get("type") == "Dict" else {}
    return action.get("type") == "Box" and all(key in spaces for key in GOAL_KEYS)


def goal_progress(episode: Path) -> tuple[float, float] | None:
    """(share of the initial goal distance closed, distance the achieved goal moved) of one
    feedback episode, from its stored observations; None when they cannot be read."""
    try:
        stored = np.load(episode / "observations.npz")
        achieved, desired = stored["achieved_goal"], stored["desired_goal"]
    except (OSError, KeyError, ValueError):
        return None
    if len(achieved) == 0:
        return None
    start = float(np.linalg.norm(achieved[0] - desired[0]))
    end = float(np.linalg.norm(achieved[-1] - desired[-1]))
    moved = float(np.linalg.norm(achieved[-1] - achieved[0]))
    return (start - end) / max(start, 1e-6), moved


class GoalCmaesAgent(CmaesAgent):
    """builtin:cmaes with a shaped score for goal tasks (see the module text)."""

    def scores(self, answer, returns):
        base = super().scores(answer, returns)
        folder = self.system.parent / "feedback" / f"submit_{answer.body.get('submit_id', 0):03d}"
        episodes = sorted((folder / "episodes").glob("ep_*"))
        if len(episodes) != len(base):
            return base
        shaped = []
        for score, episode in zip(base, episodes, strict=True):
            progress = goal_progress(episode)
            if progress is None or not math.isfinite(score):
                shaped.append(score)
                continue
            closed, moved = progress
            shaped.append(
                score + CLOSED_WEIGHT * closed + MOVED_WEIGHT * min(moved / MOVED_SCALE, 1.0)
            )
        return shaped


@dataclass
class ExploreState:
    plan: CmaesPlan
    n_actions: int
    incumbent: dict[str, Any]
    cursor: int = 0
    generations: int = 0
    replaced: int = 0
    finals_done: int = 0
    history: list[str] = field(default_factory=list)


def plain_rule(n_actions: int) -> dict[str, Any]:
    return {"preference": [0.0] * n_actions, "beta": 1.0, "jitter": 0.1}


class ExploreAgent(GenerationalAgent):
    """One submit per turn: a generation of rules, or a final submit of the incumbent (goal
    tasks: a turn of :class:`GoalCmaesAgent`)."""

    STATE_FILE = "explore_state.pkl"
    state: ExploreState

    def __init__(self, client: JudgeClient, system: Path | None = None, *, seed: int = 0) -> None:
        super().__init__(client, system, seed=seed)
        self.goal_search: GoalCmaesAgent | None = None

    def _start(self, info: dict[str, Any], budget: BudgetView) -> ExploreState:
        meta = info["env_meta"]
        action_space = meta["action_space"]
        if action_space.get("type") != "Discrete":
            raise CannotPlay(
                f"builtin:explore plays goal tasks with Box actions and tasks with Discrete "
                f"actions; {meta['env']} has {action_space.get('type')} actions and no "
                "achieved/desired goal: use builtin:cmaes"
            )
        n_actions = int(action_space["n"])
        plan = plan_budget(n_actions + 1, budget, (n_actions, 0))
        return ExploreState(plan=plan, n_actions=n_actions, incumbent=plain_rule(n_actions))

    def _write_policy(self, population: list[dict[str, Any]]) -> None:
        self.system.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.system / "policy.py", _policy_source("policy_explore.py"))
        params = population[0] if len(population) == 1 else {"population": population}
        _write_atomic(self.system / "params.json", json.dumps(params) + "\n")

    def _candidates(self, count: int) -> list[dict[str, Any]]:
        state = self.state
        rng = np.random.default_rng([self.seed, state.generations])
        members = [state.incumbent]
        for number in range(count - 1):
            if number % 2 == 0:  # fresh rule
                preference = rng.normal(0.0, 1.0, state.n_actions)
                beta = float(rng.uniform(0.0, 2.0))
            else:  # mutation of the incumbent
                preference = np.asarray(state.incumbent["preference"]) + rng.normal(
                    0.0, MUTATION, state.n_actions
                )
                beta = max(0.0, state.incumbent["beta"] + float(rng.normal(0.0, MUTATION)))
            members.append(
                {"preference": preference.round(4).tolist(), "beta": round(beta, 4), "jitter": 0.1}
            )
        return members

    def _play(self, info: dict[str, Any], budget: BudgetView) -> str:
        if self.goal_search is None and self.state is None and is_goal_task(info["env_meta"]):
            self.goal_search = GoalCmaesAgent(self.client, self.system, seed=self.seed)
        if self.goal_search is not None:
            text = self.goal_search._play(info, budget)
            return text.replace("CMA-ES", "Goal-shaped CMA-ES", 1)
        return super()._play(info, budget)

    def _generation(self, budget: BudgetView) -> str:
        state = self.state
        population = self._candidates(state.plan.popsize)
        case = state.cursor % budget.n_instances
        state.cursor += 1
        self._write_policy(population)
        answer = self.client.submit([case] * len(population))
        state.generations += 1
        returns = (answer.summary or {}).get("returns") if answer.verdict == "ok" else None
        if not returns or len(returns) != len(population):
            return f"Explore generation {state.generations}: {_outcome(answer)}; nothing learned"
        scores = [r if r is not None else -math.inf for r in returns]
        best = int(np.argmax(scores))
        verdict = "incumbent kept"
        if scores[best] > scores[0]:
            state.incumbent = population[best]
            state.replaced += 1
            verdict = f"member {best} replaces the incumbent ({scores[best]:.3f} > {scores[0]:.3f})"
        return (
            f"Explore generation {state.generations} ({len(population)} rules on case {case}): "
            f"{_outcome(answer)}; {verdict}"
        )

    def _final(self, budget: BudgetView) -> str:
        state, plan = self.state, self.state.plan
        last = state.finals_done + 1 >= plan.final_submits
        size = budget.batch(budget.remaining if last else plan.final_size)
        assert size is not None  # _waiting covered the case
        # The second final plays the plain rule when the search replaced it: validation then
        # decides between the searched rule and the plain one on hidden cases.
        rule = state.incumbent
        if state.finals_done == 1 and state.replaced:
            rule = plain_rule(state.n_actions)
        self._write_policy([rule])
        ids = [(state.cursor + i) % budget.n_instances for i in range(size)]
        state.cursor += size
        answer = self.client.submit(ids)
        state.finals_done += 1
        return f"Explore final: {_outcome(answer)}"
