"""builtin:cmaes: CMA-ES (the ``cma`` package) over the linear policy of ``policy_linear.py``.

Plan of a run (fixed at the first turn from ``GET /info``):

- The policy family comes from the schemas: a linear map from the features to the action
  outputs; images are pooled onto a 4 x 4 grid per channel first (``image_grid``).
- One *generation* is one submit: ``params.json`` holds the whole population and episode ``i``
  plays member ``i``, so a generation of ``popsize`` candidates costs ``popsize`` episodes and one
  checkpoint. Every member of a generation plays the same train case (common random numbers):
  the ranking then compares policies, not start states. The case moves on every generation.
- Two searches share the budget, generation by generation, both from the zero map (in the spirit
  of BIPOP-CMA-ES's two regimes): a *wide* one (``SPREADS[0]``), which finds rewards that only a
  bold policy reaches (MountainCar's goal, a running gait), and a *narrow* one (``SPREADS[1]``),
  which improves on a zero map that is already good (Pusher and Ant lose to any large
  perturbation). Neither step size wins everywhere; together they do not lose much anywhere.
- The population size is CMA-ES's default ``4 + 3 ln n``, capped so that each search gets at
  least ``MIN_GENERATIONS`` generations of the budget and fits the submit bounds. Above
  ``DIAGONAL_ABOVE`` parameters the covariance is diagonal (sep-CMA), which learns faster from few
  samples.
- The last ``FINAL_SUBMITS`` submits play single policies: the best candidate seen and each
  search's mean. Finalization validates every ok checkpoint on hidden cases and keeps the best,
  so these are the candidates for the score; the generations before them rarely win (a population
  plays mostly unfinished candidates).

The search state is pickled to ``cmaes_state.pkl`` in the workspace (outside ``system/``, so it is
not part of any checkpoint); a resumed run continues the search.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import policy_linear
from ._agents import _outcome, _policy_source, _write_atomic
from ._budget import BudgetView
from ._generational import GenerationalAgent
from ._serve import CannotPlay

_REGIMES = ("wide", "narrow")
IMAGE_GRID = 4
# Initial step sizes of the wide and the narrow search: a candidate's pre-activations then have
# about this standard deviation whatever the number of features.
SPREADS = (0.5, 0.1)
MIN_GENERATIONS = 6  # per search
DIAGONAL_ABOVE = 100
FINAL_SUBMITS = 1 + len(SPREADS)  # the best candidate, then each search's mean


@dataclass
class CmaesPlan:
    """The budget split, fixed at the first turn."""

    popsize: int
    final_size: int
    final_submits: int
    shapes: tuple[int, int]


@dataclass
class CmaesState:
    """Everything the search needs to continue (pickled between turns)."""

    plan: CmaesPlan
    strategies: list[Any]
    cursor: int = 0
    generations: int = 0
    best_params: list[float] | None = None
    best_return: float = -math.inf
    finals_done: int = 0
    history: list[str] = field(default_factory=list)


def default_popsize(n_params: int) -> int:
    return 4 + int(3 * math.log(max(n_params, 1)))


def plan_budget(n_params: int, budget: BudgetView, shapes: tuple[int, int]) -> CmaesPlan:
    """Split the remaining budget into generations and final submits (see the module text).
    Raises :class:`CannotPlay` when the submit bounds leave no room for a search."""
    remaining, minimum, maximum = budget.remaining, budget.minimum, budget.maximum
    final_size = max(minimum, min(maximum, remaining // 32 or 1))
    finals = FINAL_SUBMITS if remaining - FINAL_SUBMITS * final_size >= 2 * minimum else 1
    search = remaining - finals * final_size
    generations = MIN_GENERATIONS * len(SPREADS)
    popsize = min(default_popsize(n_params), max(4, search // generations), maximum, search)
    popsize = max(popsize, minimum)
    if search < popsize:
        if remaining < minimum:
            raise CannotPlay(
                f"builtin:cmaes needs at least {minimum} episodes per submit but only "
                f"{remaining} remain"
            )
        popsize, finals, final_size = min(remaining, maximum), 0, 0
    return CmaesPlan(popsize=popsize, final_size=final_size, final_submits=finals, shapes=shapes)


class CmaesAgent(GenerationalAgent):
    """One submit per turn: a generation, or one of the final single-policy submits."""

    STATE_FILE = "cmaes_state.pkl"
    state: CmaesState

    def _start(self, info: dict[str, Any], budget: BudgetView) -> CmaesState:
        import cma

        meta = info["env_meta"]
        features = policy_linear.Features(meta["obs_space"], IMAGE_GRID)
        try:
            actions = policy_linear.Actions(meta["action_space"])
        except ValueError as exc:
            raise CannotPlay(
                f"builtin:cmaes cannot play {meta['env']}: {exc}; "
                "use builtin:random or an agent CLI"
            ) from None
        shapes = (actions.size, features.size)
        n_params = actions.size * features.size + actions.size
        plan = plan_budget(n_params, budget, shapes)
        options = {
            "popsize": plan.popsize,
            "seed": self.seed + 1,  # cma treats seed 0 as "draw one"
            "verbose": -9,
            "CMA_diagonal": n_params > DIAGONAL_ABOVE,
            # Cumulative step-size adaptation: the default for small populations (two-point
            # adaptation) injects samples that a population of 2 has no room for.
            "AdaptSigma": cma.sigma_adaptation.CMAAdaptSigmaCSA,
        }
        strategies = [
            cma.CMAEvolutionStrategy(
                np.zeros(n_params), spread / math.sqrt(features.size + 1), options
            )
            for spread in SPREADS
        ]
        return CmaesState(plan=plan, strategies=strategies)

    def _member(self, params) -> dict[str, list]:
        n_out, n_feat = self.state.plan.shapes
        flat = np.asarray(params, dtype=float)
        return {
            "weights": flat[: n_out * n_feat].reshape(n_out, n_feat).round(6).tolist(),
            "bias": flat[n_out * n_feat :].round(6).tolist(),
        }

    def _write_policy(self, population: list) -> None:
        self.system.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.system / "policy.py", _policy_source("policy_linear.py"))
        members = [self._member(p) for p in population]
        params: dict[str, Any] = {"image_grid": IMAGE_GRID}
        if len(members) == 1:
            params.update(members[0])
        else:
            params["population"] = members
        _write_atomic(self.system / "params.json", json.dumps(params) + "\n")

    def _next_case(self, n_instances: int) -> int:
        case = self.state.cursor % n_instances
        self.state.cursor += 1
        return case

    def scores(self, answer, returns: list[float | None]) -> list[float]:
        """What the search maximizes per member: the episode's return (-inf if it errored)."""
        return [r if r is not None else -math.inf for r in returns]

    def _generation(self, budget: BudgetView) -> str:
        state = self.state
        # The searches take turns, the wide one first.
        which = state.generations % len(state.strategies)
        strategy = state.strategies[which]
        population = strategy.ask()
        case = self._next_case(budget.n_instances)
        self._write_policy(population)
        answer = self.client.submit([case] * len(population))
        summary = answer.summary or {}
        returns = summary.get("returns") if answer.verdict == "ok" else None
        if returns is None or len(returns) != len(population):
            return f"CMA-ES generation: {_outcome(answer)}; nothing learned"
        # cma minimizes; an episode that errored has a null return and ranks last.
        scores = self.scores(answer, returns)
        worst = min((s for s in scores if math.isfinite(s)), default=0.0)
        strategy.tell(population, [-(s if math.isfinite(s) else worst - 1) for s in scores])
        state.generations += 1
        best = int(np.argmax(scores))
        if scores[best] > state.best_return:
            state.best_return, state.best_params = scores[best], list(population[best])
        finite = [s for s in scores if math.isfinite(s)]
        return (
            f"CMA-ES generation {state.generations}, {_REGIMES[which]} search "
            f"({len(population)} candidates on case {case}): {_outcome(answer)}; "
            f"best {max(finite, default=math.nan):.3f}, step size {strategy.sigma:.3f}"
        )

    def _final(self, budget: BudgetView) -> str:
        state, plan = self.state, self.state.plan
        size = budget.batch(
            budget.remaining if state.finals_done + 1 >= plan.final_submits else plan.final_size
        )
        assert size is not None  # _waiting covered the case
        # The best candidate first (when there is one), then the searches' means in turn.
        means = len(state.strategies)
        number = state.finals_done - (1 if state.best_params else 0)
        if number < 0:
            which, params = "best candidate", state.best_params
        else:
            search = number % means
            which = f"{_REGIMES[search]} search's mean"
            params = list(state.strategies[search].mean)
        self._write_policy([params])
        ids = [self._next_case(budget.n_instances) for _ in range(size)]
        answer = self.client.submit(ids)
        state.finals_done += 1
        return f"CMA-ES final ({which}): {_outcome(answer)}"
