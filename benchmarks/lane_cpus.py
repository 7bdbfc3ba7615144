"""A lane on the CPU its pool claimed against a lane the scheduler places, taking turns.

Two one-worker pools of the same environment live side by side in this process: one claims its
lane's CPU (what every run does, ``rollout/_cpus.py``) and keeps this process's threads off it
while it plays (as a run keeps the judge and the agent off it); the other claims nothing, so its
workers run wherever the scheduler puts them (a sealed worker then picks the CPU it is on at
each checkpoint). They play the same episodes in turns (``--pairs`` times, the order swapped
every pair), train episodes back to back (each call's next warm worker boots during the next
call, as with an agent's back-to-back submits) or sealed ones. Printed: the fastest and the
median wall time of each, and the median of the pairs' ratios (claimed over placed; below 1:
the claimed CPU is faster).

Run: ``uv run python benchmarks/lane_cpus.py`` (``--env``, ``--episodes``, ``--pairs``,
``--sealed``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from judge_throughput import BATCH, POLICIES, hidden_seeds, train_seeds

from evopolicygym.envs import get_env
from evopolicygym.judge.checkpoint import files_hash, read_files
from evopolicygym.protocol import LimitsSection, Task
from evopolicygym.rollout import CpuClaim, WorkerJob, WorkerPool, kept_off
from evopolicygym.rollout import pool as pool_module


def placed_pool(spec_json: dict) -> WorkerPool:
    """A one-worker pool that claims no CPU."""
    claim = pool_module.claim_cpus
    pool_module.claim_cpus = lambda lanes: CpuClaim([None] * lanes, [])
    try:
        return WorkerPool(spec_json, 1, LimitsSection())
    finally:
        pool_module.claim_cpus = claim


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="gym/cartpole", choices=sorted(POLICIES))
    parser.add_argument(
        "--episodes", type=_positive, help="per call (default: one benchmark submit)"
    )
    parser.add_argument(
        "--pairs", type=_positive, default=20, help="turns of each pool (default 20)"
    )
    parser.add_argument("--sealed", action="store_true", help="hidden evaluation, not train")
    args = parser.parse_args()
    spec = get_env(args.env)
    checkpoint = Path(tempfile.mkdtemp(prefix="epg-lanes-"))
    (checkpoint / "policy.py").write_text(POLICIES[args.env])
    files = read_files(checkpoint)
    schemas = spec.describe()
    job = WorkerJob(files, files_hash(files), schemas.obs_space, schemas.action_space, {})
    count = args.episodes or BATCH[args.env]
    seeds = (hidden_seeds() if args.sealed else train_seeds(args.env))[:count]
    tasks = [Task(index=i, seed=seed, episode_index=i) for i, seed in enumerate(seeds)]
    pools = {
        "claimed": WorkerPool(spec.model_dump(), 1, LimitsSection()),
        "placed": placed_pool(spec.model_dump()),
    }

    def play(name: str) -> float:
        pool = pools[name]
        with kept_off(pool.lane_cpus):
            started = time.perf_counter()
            pool.run(
                job,
                tasks,
                record=not args.sealed,
                sealed=args.sealed,
                max_steps=spec.max_episode_steps,
            )
            return time.perf_counter() - started

    try:
        for pool in pools.values():
            pool.prewarm()
            if args.sealed:
                pool.prepare_hidden()
        for name in pools:  # builds a sealed worker's worlds; not measured
            play(name)
        times: dict[str, list[float]] = {name: [] for name in pools}
        for pair in range(args.pairs):
            for name in sorted(pools, reverse=bool(pair % 2)):
                times[name].append(play(name))
        claimed_cpus = sorted(pools["claimed"].lane_cpus)
    finally:
        for pool in pools.values():
            pool.close()
    ratios = [a / b for a, b in zip(times["claimed"], times["placed"], strict=True)]
    kind = "sealed" if args.sealed else "train"
    print(f"{args.env}, {count} {kind} episodes per call, {args.pairs} pairs")
    print("| lane | CPU | fastest s | median s |")
    print("|---|---|---|---|")
    for name, cpus in (("claimed", claimed_cpus), ("placed", "any")):
        runs = times[name]
        print(f"| {name} | {cpus} | {min(runs):.4f} | {statistics.median(runs):.4f} |")
    faster = sum(ratio < 1 for ratio in ratios)
    print(
        f"claimed / placed: {statistics.median(ratios):.3f} (median of the pairs' ratios; "
        f"the claimed lane faster in {faster} of {args.pairs})"
    )


if __name__ == "__main__":
    main()
