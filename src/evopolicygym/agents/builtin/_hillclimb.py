"""The search of builtin:hillclimb: a (1+1) evolution strategy on a linear policy.

Candidates are compared on the same train ids (a *probe* set), so that differences between
start states do not drown differences between policies: every train id is a fixed seed, so a
deterministic environment gives the same return for the same policy. The step size follows the
1/5th success rule. Every ``rotate_every`` children the probe moves to the next train ids and
the parent is re-measured there, so the search does not overfit a handful of start states.
The last submit of the budget re-measures the parent, so the final policy file holds the best
parameters found.

The search starts from a few *seed* candidates measured on the first probe: for a small
Discrete action space, the constant policies (one per action), which are the simplest
hypotheses and cost one submit each; otherwise the zero map (the middle of the action bounds),
then one random linear map. The best seed becomes the first parent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Kind = Literal["seed", "parent", "child", "final"]

SIGMA_MIN, SIGMA_MAX = 0.02, 4.0
SUCCESS_FACTOR = 1.5
FAILURE_FACTOR = SUCCESS_FACTOR ** (-0.25)  # 1/5th rule: steady at one success in five


@dataclass
class Candidate:
    kind: Kind
    params: list[float]
    ids: list[int]


@dataclass
class HillClimbState:
    """Everything the search needs to continue; saved as JSON between turns (and runs)."""

    parent: list[float]
    untried: list[list[float]] = field(default_factory=list)
    scales: list[float] = field(default_factory=list)
    sigma: float = 1.0
    probe: list[int] = field(default_factory=list)
    parent_returns: dict[int, float] = field(default_factory=dict)
    cursor: int = 0
    children_on_probe: int = 0
    generation: int = 0
    accepted: int = 0
    seed: int = 0


class HillClimb:
    """Plans the next candidate and learns from its returns.

    ``batch`` is the episodes per candidate; ``n_instances`` the number of visible train ids.
    """

    def __init__(
        self, state: HillClimbState, *, batch: int, n_instances: int, rotate_every: int = 4
    ) -> None:
        self.state = state
        self.batch = batch
        self.n_instances = n_instances
        self.rotate_every = rotate_every
        if not state.probe:
            state.probe = self._take_ids(batch)

    @classmethod
    def fresh(
        cls,
        seeds: list[list[float]],
        *,
        seed: int,
        batch: int,
        n_instances: int,
        scales: list[float] | None = None,
    ) -> HillClimb:
        """A new search that first measures ``seeds`` (at least one parameter vector).
        ``scales`` multiplies the mutation of each parameter (default 1)."""
        state = HillClimbState(
            parent=list(seeds[0]),
            untried=[list(p) for p in seeds],
            scales=list(scales or []),
            seed=seed,
        )
        return cls(state, batch=batch, n_instances=n_instances)

    def _take_ids(self, count: int) -> list[int]:
        ids = [(self.state.cursor + i) % self.n_instances for i in range(count)]
        self.state.cursor = (self.state.cursor + count) % self.n_instances
        return ids

    def propose(self, size: int, *, final: bool) -> Candidate:
        """The next candidate to submit with ``size`` episodes (``final``: the last submit)."""
        s = self.state
        if final:
            return Candidate("final", list(s.parent), self._take_ids(size))
        if s.untried:
            return Candidate("seed", list(s.untried[0]), list(s.probe))
        if s.children_on_probe >= self.rotate_every:
            s.probe = self._take_ids(size)
            s.parent_returns = {}
            s.children_on_probe = 0
        if any(i not in s.parent_returns for i in s.probe):
            return Candidate("parent", list(s.parent), list(s.probe))
        rng = np.random.default_rng([s.seed, s.generation])
        scales = np.asarray(s.scales) if s.scales else 1.0
        child = np.asarray(s.parent) + s.sigma * scales * rng.normal(0.0, 1.0, len(s.parent))
        return Candidate("child", child.tolist(), list(s.probe))

    def observe(self, candidate: Candidate, returns: list[float] | None) -> str:
        """Learn from a judged candidate (``returns`` None: the submit failed). Returns a
        one-line account of what happened."""
        s = self.state
        if candidate.kind == "seed":
            s.untried.pop(0)
            known = [s.parent_returns[i] for i in candidate.ids if i in s.parent_returns]
            if returns is not None and (not known or np.mean(returns) > np.mean(known)):
                s.parent = list(candidate.params)
                s.parent_returns = dict(zip(candidate.ids, returns, strict=True))
            return f"seed measured on {candidate.ids}: mean {_mean(returns)}"
        if candidate.kind != "child":
            if returns is not None and candidate.kind == "parent":
                s.parent_returns = dict(zip(candidate.ids, returns, strict=True))
            return f"{candidate.kind} measured on {candidate.ids}: mean {_mean(returns)}"
        s.generation += 1
        s.children_on_probe += 1
        parent_mean = float(np.mean([s.parent_returns[i] for i in candidate.ids]))
        child_mean = None if returns is None else float(np.mean(returns))
        if child_mean is not None and child_mean > parent_mean:
            s.parent = list(candidate.params)
            s.parent_returns = dict(zip(candidate.ids, returns, strict=True))
            s.accepted += 1
            s.sigma = min(SIGMA_MAX, s.sigma * SUCCESS_FACTOR)
            verdict = "improved, accepted"
        elif child_mean is not None and child_mean == parent_mean:
            # A tie proves nothing; keeping the parent keeps what earlier probes showed.
            verdict = "tied, parent kept"
        else:
            s.sigma = max(SIGMA_MIN, s.sigma * FAILURE_FACTOR)
            verdict = "worse, rejected"
        return (
            f"child {s.generation}: mean {child_mean} vs parent {parent_mean:.3f} on "
            f"{candidate.ids}: {verdict}; step size {s.sigma:.3f}"
        )


def _mean(returns: list[float] | None) -> str:
    return "n/a (submit failed)" if not returns else f"{float(np.mean(returns)):.3f}"
