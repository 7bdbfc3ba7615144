"""``EnvSpec``: everything known about one curated environment, read from its envspec file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._contract import SpaceSchemas, World
from ._runtime import RuntimeSpec

Level = Literal["L0", "L1", "L2", "L3", "L4"]
# The keys of ``_runtime.ADAPTERS``.
AdapterName = Literal["toy", "gymnasium", "web", "jax", "mario", "miniworld", "multi_objective"]


class Anchors(BaseModel):
    """Reference returns for reports: never used to select or score checkpoints."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    random: float | None = Field(None, description="Uniform random policy, validation-pool mean.")
    random_source: str = Field("", description="How and when the random anchor was measured.")
    expert: float | None = Field(None, description="A strong known policy's mean return.")
    expert_source: str = Field("", description="Where the expert number comes from.")


class Calibration(BaseModel):
    """A built-in agent's real run through the judge, against the uniform random policy on the
    same held-out cases: what readiness level L4 asks for. Written by ``evopolicygym calibrate
    --record``; ``check-envs`` recomputes :attr:`improved` from the numbers."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    agent: str = Field(..., description="Agent that ran, e.g. builtin:hillclimb.")
    budget: int = Field(..., gt=0, description="Train episodes the agent could spend.")
    valid_size: int = Field(..., gt=0, description="Validation cases used to pick a checkpoint.")
    final_size: int = Field(..., gt=0, description="Held-out cases scored (first N of the pool).")
    agent_mean: float = Field(..., description="Held-out mean return of the picked checkpoint.")
    agent_se: float = Field(..., ge=0, description="Standard error of agent_mean.")
    random_mean: float = Field(..., description="Uniform random policy on the same cases.")
    random_se: float = Field(..., ge=0, description="Standard error of random_mean.")
    margin_se: float = Field(
        ...,
        ge=0,
        description="Standard error of the per-case difference agent - random (same cases, "
        "so start states cancel out).",
    )
    seconds: float = Field(0.0, ge=0, description="Wall time of the agent run.")
    measured_at: str = Field("", description="UTC time of the measurement (ISO 8601).")
    versions: str = Field("", description="Simulator package versions it ran with.")

    @property
    def margin(self) -> float:
        """How much better than random the agent scored."""
        return self.agent_mean - self.random_mean

    @property
    def threshold(self) -> float:
        """Two standard errors of the paired difference: a smaller margin could be luck."""
        return 2.0 * self.margin_se

    @property
    def improved(self) -> bool:
        return self.margin > self.threshold

    def describe(self) -> str:
        return (
            f"{self.agent} {self.agent_mean:.4g} ± {self.agent_se:.2g} vs random "
            f"{self.random_mean:.4g} ± {self.random_se:.2g} on {self.final_size} held-out cases "
            f"(budget {self.budget}): margin {self.margin:+.4g}, two SE {self.threshold:.2g}"
        )


class EnvSpec(BaseModel):
    """One environment as the benchmark runs it. One source of truth: nothing about an
    environment is hard-coded outside its envspec file and its task text."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(..., description="Benchmark id, e.g. gym/cartpole.")
    upstream: str | None = Field(None, description="Gymnasium registry id, e.g. CartPole-v1.")
    family: str = Field(..., description="Environment family, e.g. classic_control, mujoco.")
    adapter: AdapterName = Field("gymnasium", description="World implementation.")
    extra: str = Field("", description="pyproject extra that installs it ('' = base install).")
    imports: list[str] = Field(
        default_factory=list, description="Modules to import so the upstream id registers."
    )
    version: str = Field("0.1", description="Version of this benchmark task (text + settings).")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="gymnasium.make kwargs.")
    max_episode_steps: int = Field(..., gt=0, description="Step cap the judge enforces.")
    step_cap_source: str = Field(..., description="Where the step cap comes from.")
    recreate_per_episode: bool = Field(
        False,
        description="Make a fresh environment per episode (for envs not reset-deterministic).",
    )
    obs_storage: Literal["inline", "external"] = Field(
        "inline", description="external: observations go to observations.npy/.npz files."
    )
    reward: str = Field(..., description="One-line reward description.")
    reward_weights: list[float] | None = Field(
        None,
        description="Multi-objective envs (adapter multi_objective): the weights of the linear "
        "scalarisation; the judge's reward is their dot product with the reward vector, which "
        "stays in info.vector_reward. None weighs every objective 1 (the sum).",
    )
    compress_images: bool = Field(
        False,
        description="Always store recorded pixel observations compressed (observations.npz, "
        "key obs), as the run option compress_images does: for frames too large to keep raw.",
    )
    helper_tasks: int = Field(
        0,
        ge=0,
        description="Processes and threads the environment's own helper processes may use (a "
        "browser, its driver and its pages): added to a lane's process cap, so that they never "
        "take from the policy's max_processes.",
    )
    hidden_slots: int | None = Field(
        None,
        gt=0,
        description="Most hidden episodes a sealed worker steps in lock step, each on a world of "
        "its own (None: the judge's default, 64). Lower it for environments whose every world "
        "holds a costly process (a browser page); results do not depend on it.",
    )
    level: Level = Field("L1", description="Readiness level reached (see check-envs).")
    core16: bool = Field(False, description="Part of the Core-16 paper suite.")
    train_cases: int = Field(64, gt=0, description="Visible train ids without a split dir.")
    valid_size: int = Field(64, gt=0, description="Validation cases without a split dir.")
    heldout_size: int = Field(256, gt=0, description="Held-out cases without a split dir.")
    anchors: Anchors = Field(default_factory=Anchors)
    calibration: Calibration | None = Field(
        None, description="A built-in agent's measured improvement on random (level L4)."
    )
    task: str = Field("", description="Task text (Markdown); loaded from the .md beside the TOML.")
    source: str = Field("", description="Path of the envspec file ('' for generated specs).")

    def runtime(self) -> RuntimeSpec:
        """This spec as workers get it (what the adapters are given)."""
        return RuntimeSpec(self.model_dump())

    def runtime_modules(self) -> list[str]:
        """Modules a worker imports to build this environment (see
        :meth:`RuntimeSpec.runtime_modules`)."""
        return self.runtime().runtime_modules()

    def make_world(self) -> World:
        """Instantiate the environment. Raises ``MissingExtraError`` naming the extra to
        install when an optional dependency is absent."""
        return self.runtime().make_world()

    def describe(self) -> SpaceSchemas:
        """The observation and action schemas (builds one world, then closes it)."""
        return self.runtime().describe()

    @classmethod
    def from_file(cls, path: Path) -> EnvSpec:
        import tomllib

        data = tomllib.loads(path.read_text(encoding="utf-8"))
        task_path = path.with_suffix(".md")
        if task_path.exists() and "task" not in data:
            data["task"] = task_path.read_text(encoding="utf-8")
        data.setdefault("source", str(path))
        return cls.model_validate(data)
