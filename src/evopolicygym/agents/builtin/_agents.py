"""The two built-in agents. They use only what any agent has: the judge URLs in the
environment, ``GET /info``, files under ``system/`` and ``POST /submit``."""

from __future__ import annotations

import dataclasses
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from . import policy_linear
from ._budget import BudgetView
from ._client import JudgeClient, SubmitAnswer
from ._hillclimb import Candidate, HillClimb, HillClimbState
from ._serve import CannotPlay

STATE_FILE = "search_state.json"
MAX_CONSTANT_SEEDS = 8
BIAS_STEP = 0.1


def _system_dir() -> Path:
    return Path(os.environ.get("EVOPOLICYGYM_SYSTEM", "system"))


def _policy_source(module: str) -> str:
    return resources.files(__package__).joinpath(module).read_text(encoding="utf-8")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _outcome(answer: SubmitAnswer) -> str:
    summary = answer.summary or {}
    mean = summary.get("mean_return")
    mean_text = "n/a" if mean is None else f"{mean:.3f}"
    return (
        f"submit {answer.body.get('submit_id')} -> {answer.verdict} (HTTP {answer.status_code}), "
        f"mean return {mean_text}, remaining budget {summary.get('remaining_budget')}"
    )


def _waiting(budget: BudgetView) -> str | None:
    """What to say instead of submitting when nothing needs doing (budget spent, run
    finalized). Raises :class:`CannotPlay`, naming the cause, when no submit can ever be valid."""
    if budget.finalized:
        return "The run is finalized; nothing left to do."
    if budget.remaining == 0:
        return "Budget spent; waiting for the judge to finalize the run."
    if budget.maximum < budget.minimum:
        raise CannotPlay(
            f"the judge asks for at least {budget.minimum} and at most {budget.maximum} "
            "episodes per submit, so no submit can be valid: the run's submit bounds are wrong"
        )
    if budget.remaining < budget.minimum:
        raise CannotPlay(
            f"{budget.remaining} of {budget.episode_budget} episodes remain, fewer than the "
            f"minimum submit size {budget.minimum}, so the rest of the budget cannot be spent"
        )
    return None


def initial_candidates(
    action_space: dict[str, Any], n_out: int, n_feat: int, *, seed: int
) -> list[list[float]]:
    """Where the search starts: a random linear map with zero bias, preceded by the simplest
    policies, worth one submit each: for a Discrete space of at most ``MAX_CONSTANT_SEEDS``
    actions every constant action (zero weights, one-hot bias); for any other space the zero
    map, which always plays the middle of the action bounds (often "do nothing": no control
    cost, which a random map's saturated actions pay in full)."""
    weights = np.random.default_rng(seed).normal(0.0, 1.0, n_out * n_feat)
    candidates = []
    if action_space.get("type") == "Discrete":
        if n_out <= MAX_CONSTANT_SEEDS:
            for action in range(n_out):
                constant = np.concatenate([np.zeros(n_out * n_feat), np.eye(n_out)[action]])
                candidates.append(constant)
    else:
        candidates.append(np.zeros(n_out * n_feat + n_out))
    candidates.append(np.concatenate([weights, np.zeros(n_out)]))
    return [c.tolist() for c in candidates]


def mutation_scales(n_out: int, n_feat: int) -> list[float]:
    """Per-parameter mutation scale: biases move ``BIAS_STEP`` times slower than weights, so a
    child mostly changes how the policy reacts to observations rather than its default action."""
    return [1.0] * (n_out * n_feat) + [BIAS_STEP] * n_out


class RandomAgent:
    """Writes the uniform random policy once, then spends the budget in the largest batches
    the judge allows: one submit per turn."""

    def __init__(self, client: JudgeClient, system: Path | None = None) -> None:
        self.client = client
        self.system = system or _system_dir()
        self.cursor = 0

    def turn(self) -> str:
        budget = BudgetView.from_info(self.client.info())
        waiting = _waiting(budget)
        if waiting:
            return waiting
        self.system.mkdir(parents=True, exist_ok=True)
        policy = self.system / "policy.py"
        if not policy.exists():
            _write_atomic(policy, _policy_source("policy_random.py"))
        size = budget.batch(budget.remaining)
        assert size is not None  # _waiting covered the case
        ids = [(self.cursor + i) % budget.n_instances for i in range(size)]
        self.cursor = (self.cursor + size) % budget.n_instances
        return "Random policy: " + _outcome(self.client.submit(ids))


class HillClimbAgent:
    """Writes the linear policy and improves ``system/params.json`` by a (1+1) evolution
    strategy on the train returns (see :mod:`._hillclimb`). One submit per turn; the search
    state is kept in ``system/search_state.json`` so a resumed run continues the search."""

    def __init__(self, client: JudgeClient, system: Path | None = None, *, seed: int = 0) -> None:
        self.client = client
        self.system = system or _system_dir()
        self.seed = seed
        self.search: HillClimb | None = None
        self.shapes: tuple[int, int] | None = None

    def _start(self, info: dict[str, Any], budget: BudgetView) -> HillClimb:
        meta = info["env_meta"]
        features = policy_linear.Features(meta["obs_space"])
        try:
            actions = policy_linear.Actions(meta["action_space"])
        except ValueError as exc:
            raise CannotPlay(
                f"builtin:hillclimb cannot play {meta['env']}: {exc}; "
                "use builtin:random or an agent CLI"
            ) from None
        self.shapes = (actions.size, features.size)
        n_params = actions.size * features.size + actions.size
        episode_budget = int(info["episode_budget"])
        # One episode per candidate up to budget 63: more candidates beat less noisy ones here.
        desired = max(1, min(4, episode_budget // 32))
        batch = budget.batch(desired) or budget.minimum
        self.system.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.system / "policy.py", _policy_source("policy_linear.py"))
        saved = self.system / STATE_FILE
        if saved.exists():
            data = json.loads(saved.read_text(encoding="utf-8"))
            data["parent_returns"] = {int(k): v for k, v in data["parent_returns"].items()}
            state = HillClimbState(**data)
            if len(state.parent) == n_params:
                return HillClimb(state, batch=batch, n_instances=budget.n_instances)
        return HillClimb.fresh(
            initial_candidates(meta["action_space"], *self.shapes, seed=self.seed),
            seed=self.seed,
            batch=batch,
            n_instances=budget.n_instances,
            scales=mutation_scales(*self.shapes),
        )

    def _write_params(self, candidate: Candidate) -> None:
        assert self.shapes is not None
        n_out, n_feat = self.shapes
        flat = np.asarray(candidate.params)
        params = {
            "weights": flat[: n_out * n_feat].reshape(n_out, n_feat).round(6).tolist(),
            "bias": flat[n_out * n_feat :].round(6).tolist(),
        }
        _write_atomic(self.system / "params.json", json.dumps(params, indent=1) + "\n")

    def _save_state(self) -> None:
        assert self.search is not None
        state = dataclasses.asdict(self.search.state)
        _write_atomic(self.system / STATE_FILE, json.dumps(state, indent=1) + "\n")

    def turn(self) -> str:
        info = self.client.info()
        budget = BudgetView.from_info(info)
        waiting = _waiting(budget)
        if waiting:
            return waiting
        if self.search is None:
            self.search = self._start(info, budget)
        search = self.search
        last_batch = budget.remaining <= max(search.batch, budget.minimum)
        size = budget.batch(budget.remaining if last_batch else search.batch)
        assert size is not None  # _waiting covered the case
        candidate = search.propose(size, final=size == budget.remaining)
        self._write_params(candidate)
        answer = self.client.submit(candidate.ids)
        if answer.status_code == 200:
            summary = answer.summary or {}
            ok = answer.verdict == "ok" and summary.get("returns") is not None
            note = search.observe(candidate, summary["returns"] if ok else None)
        else:
            note = "rejected by the judge; nothing learned"
        if candidate.kind == "child" and search.state.parent != candidate.params:
            # Leave the best parameters in system/ between turns.
            self._write_params(Candidate("parent", search.state.parent, []))
        self._save_state()
        return f"Hill climb: {_outcome(answer)}; {note}"
