"""Measure the uniform random anchor of an environment.

The random policy plays ``World.sample()`` every step: the action space is seeded with the case
seed + 1 at reset, so every episode is reproducible. Episodes stop at termination, truncation,
or the envspec's step cap, exactly as the judge runs them. The anchor stored in an envspec is the
mean return on the validation pool of the published split
(:data:`~evopolicygym.cases.PUBLISHED_SPLIT`, master seed 0); for Core-16 the held-out pool is
also measured to compare with the published random column.

Usage: ``python -m evopolicygym.readiness.anchors --env gym/acrobot --pool valid [--episodes N]``
prints one JSON object (pydantic :class:`AnchorMeasurement`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from typing import Literal

from pydantic import BaseModel

from evopolicygym.cases import PUBLISHED_SPLIT, generate_splits
from evopolicygym.envs import EnvSpec, get_env

__all__ = ["AnchorMeasurement", "measure_random", "pool_seeds", "random_episode_return"]

Pool = Literal["valid", "heldout"]


class AnchorMeasurement(BaseModel):
    env: str
    pool: Pool
    seeds: int
    episodes: int
    mean_return: float
    std_return: float
    mean_length: float
    returns: list[float]
    seconds: float
    measured_at: str


def pool_seeds(pool: Pool, *, master_seed: int = 0) -> list[int]:
    """Seeds of ``pool`` in the published split (:data:`~evopolicygym.cases.PUBLISHED_SPLIT`)."""
    splits = generate_splits(master_seed, *PUBLISHED_SPLIT)
    return splits.valid if pool == "valid" else splits.heldout


def random_episode_return(world, seed: int, max_steps: int) -> tuple[float, int]:
    """Return and length of one uniform-random episode on ``world`` for case ``seed``."""
    world.reset(seed % 2**32)
    total = 0.0
    for step in range(1, max_steps + 1):
        turn = world.step(world.sample())
        total += turn.reward
        if turn.terminated or turn.truncated:
            return total, step
    return total, max_steps


def measure_random(spec: EnvSpec, pool: Pool, episodes: int | None = None) -> AnchorMeasurement:
    """Mean uniform-random return over the first ``episodes`` cases of ``pool`` (all by default)."""
    seeds = pool_seeds(pool)
    chosen = seeds[:episodes] if episodes else seeds
    world = spec.make_world()
    started = time.perf_counter()
    returns: list[float] = []
    lengths: list[int] = []
    try:
        for seed in chosen:
            value, length = random_episode_return(world, seed, spec.max_episode_steps)
            returns.append(value)
            lengths.append(length)
    finally:
        world.close()
    return AnchorMeasurement(
        env=spec.id,
        pool=pool,
        seeds=len(seeds),
        episodes=len(chosen),
        mean_return=statistics.fmean(returns),
        std_return=statistics.pstdev(returns),
        mean_length=statistics.fmean(lengths),
        returns=returns,
        seconds=time.perf_counter() - started,
        measured_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evopolicygym.readiness.anchors",
        description="Measure the uniform random policy's mean return on a seed-0 pool.",
    )
    parser.add_argument("--env", required=True, help="environment id, e.g. gym/acrobot")
    parser.add_argument("--pool", choices=["valid", "heldout"], default="valid")
    parser.add_argument("--episodes", type=int, help="only the first N cases of the pool")
    parser.add_argument("--bulk", action="store_true", help="allow gymnasium/<id> bulk ids")
    args = parser.parse_args(argv)
    result = measure_random(get_env(args.env, bulk=args.bulk), args.pool, args.episodes)
    sys.stdout.write(result.model_dump_json() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
