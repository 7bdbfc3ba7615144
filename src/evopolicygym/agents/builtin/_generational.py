"""The turn loop shared by the built-in agents that spend the budget in generations and then in
final submits (builtin:cmaes, builtin:explore), and their pickled search state."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, ClassVar

from ._agents import _system_dir, _waiting
from ._budget import BudgetView
from ._client import JudgeClient


class GenerationalAgent:
    """One submit per turn: a generation while the budget left covers a whole generation and
    the final submits still to come, else the next final submit.

    Subclasses set ``STATE_FILE`` and implement ``_start`` (a fresh state: an object with
    ``plan.popsize``, ``plan.final_size``, ``plan.final_submits`` and ``finals_done``),
    ``_generation`` and ``_final`` (each plays one submit and returns the turn's text). The state
    is pickled to ``STATE_FILE`` in the workspace after every turn (outside ``system/``, so in no
    checkpoint), and a resumed session continues the same search from it."""

    STATE_FILE: ClassVar[str]

    def __init__(self, client: JudgeClient, system: Path | None = None, *, seed: int = 0) -> None:
        self.client = client
        self.system = system or _system_dir()
        self.seed = seed
        self.state: Any = None

    @property
    def state_file(self) -> Path:
        return self.system.parent / self.STATE_FILE

    def turn(self) -> str:
        info = self.client.info()
        budget = BudgetView.from_info(info)
        return _waiting(budget) or self._play(info, budget)

    def _play(self, info: dict[str, Any], budget: BudgetView) -> str:
        if self.state is None:
            self.state = self._restore() or self._start(info, budget)
        state, plan = self.state, self.state.plan
        finals_left = plan.final_submits - state.finals_done
        searching = budget.remaining - finals_left * plan.final_size >= plan.popsize
        text = self._generation(budget) if searching else self._final(budget)
        self._save()
        return text

    def _restore(self) -> Any:
        """The state an earlier session of this run saved, or None."""
        if not self.state_file.exists():
            return None
        with open(self.state_file, "rb") as handle:
            return pickle.load(handle)

    def _save(self) -> None:
        temporary = self.state_file.with_name(self.state_file.name + ".tmp")
        with open(temporary, "wb") as handle:
            pickle.dump(self.state, handle)
        temporary.replace(self.state_file)

    def _start(self, info: dict[str, Any], budget: BudgetView) -> Any:
        raise NotImplementedError

    def _generation(self, budget: BudgetView) -> str:
        raise NotImplementedError

    def _final(self, budget: BudgetView) -> str:
        raise NotImplementedError
