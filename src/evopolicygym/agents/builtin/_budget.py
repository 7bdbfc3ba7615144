"""Budget arithmetic shared by the built-in agents, read from ``GET /info``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BudgetView:
    remaining: int
    minimum: int
    maximum: int
    n_instances: int
    finalized: bool
    episode_budget: int = 0

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> BudgetView:
        state = info["state"]
        return cls(
            remaining=int(state["remaining_budget"]),
            minimum=int(info["min_episodes_per_submit"]),
            maximum=int(info["max_episodes_per_submit"]),
            n_instances=int(info["env_meta"]["n_env_instances"]),
            finalized=bool(state.get("is_finalized")),
            episode_budget=int(info.get("episode_budget", 0)),
        )

    def batch(self, desired: int) -> int | None:
        """A submit size close to ``desired`` that the judge accepts and that never strands a
        remainder smaller than the minimum; None when nothing can be submitted."""
        cap = min(self.maximum, self.remaining)
        if cap < self.minimum:
            return None
        size = max(self.minimum, min(desired, cap))
        leftover = self.remaining - size
        if 0 < leftover < self.minimum:
            if self.remaining <= self.maximum:
                size = self.remaining
            elif self.remaining - self.minimum >= self.minimum:
                size = min(self.maximum, self.remaining - self.minimum)
        return size
