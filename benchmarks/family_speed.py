"""Speed of one environment as the benchmark runs it: the curated world (adapter, wrappers and
all) stepped by the uniform random policy (``World.sample()``), in one process, without the
judge. Prints one JSON line: the time to build the world and for its first reset, steps per
second of ``world.step`` alone and with ``world.observe`` (the JSON-safe form a policy
receives), and episodes per second.

Each family runs in its own environment, so run this with that environment's interpreter, for
example ``.venv-jax/bin/python benchmarks/family_speed.py --env jax/cartpole``; the tables in
docs/envs/<family>.md come from this command (machine load is printed with the numbers, as a
busy machine slows every figure).
"""

from __future__ import annotations

import argparse
import json
import os
import time

from evopolicygym.envs import get_env


def measure(env_id: str, steps: int, observe: bool) -> dict[str, float]:
    """Step the world ``steps`` times with random actions, resetting with seeds 0, 1, ... as
    episodes end (or reach the envspec's step cap)."""
    spec = get_env(env_id)
    started = time.perf_counter()
    world = spec.make_world()
    built = time.perf_counter()
    world.reset(0)
    first_reset = time.perf_counter()
    episodes, length, seed = 0, 0, 0
    clock = time.perf_counter()
    for _ in range(steps):
        turn = world.step(world.sample())
        if observe:
            world.observe(turn.obs)
        length += 1
        if turn.terminated or turn.truncated or length >= spec.max_episode_steps:
            episodes, length, seed = episodes + 1, 0, seed + 1
            world.reset(seed)
    elapsed = time.perf_counter() - clock
    world.close()
    return {
        "build_s": round(built - started, 2),
        "first_reset_s": round(first_reset - built, 2),
        "steps_per_s": round(steps / elapsed, 1),
        "episodes_per_s": round(episodes / elapsed, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", required=True, help="curated environment id, e.g. jax/cartpole")
    parser.add_argument("--steps", type=int, default=2000, help="steps to time (default 2000)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    raw = measure(args.env, args.steps, observe=False)
    observed = measure(args.env, args.steps, observe=True)
    result = {
        "env": args.env,
        "steps": args.steps,
        "load_average_1min": round(load, 1),
        "cores": os.cpu_count(),
        **raw,
        "steps_per_s_with_observe": observed["steps_per_s"],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
