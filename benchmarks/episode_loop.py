"""The train episode loop in one process against a plain Gymnasium loop: how much the harness's
own per-step work (the world's wrapper, the observation's list form, the recording, the clock)
adds, without process boundaries, HTTP or the sandbox.

For each environment it plays the train episodes of one ``judge_throughput.py`` submit (16
CartPole or 4 HalfCheetah-v5 episodes, same seeds, same policy) with ``play_episode`` and a
recorder, exactly as a train worker does, and in a plain loop (one ``gymnasium.make`` instance,
the policy called on the raw observation), alternating the two ``--repeats`` times. The machine's
speed drifts, so the minimum of each is compared: ``harness / plain`` is the loop's own cost
(1.0 would be free).

Run: ``uv run python benchmarks/episode_loop.py`` (``--env``, ``--repeats``).
"""

from __future__ import annotations

import time

from judge_throughput import BATCH, POLICIES, episode_loop_arguments, plain_seconds, train_seeds

from evopolicygym.envs import get_env
from evopolicygym.protocol import LimitsSection, Task
from evopolicygym.rollout import EpisodeRecorder, Watchdog, play_episode


def policy_class(env_id: str) -> type:
    namespace: dict = {}
    exec(POLICIES[env_id], namespace)
    return namespace["Policy"]


def harness_seconds(env_id: str, seeds: list[int], watchdog: Watchdog) -> float:
    spec = get_env(env_id)
    # One world and one Policy instance for all the episodes, as in a train worker.
    world, policy = spec.make_world(), policy_class(env_id)({}, {}, {})
    limits = LimitsSection().model_dump()
    started = time.perf_counter()
    for index, seed in enumerate(seeds):
        recorder = EpisodeRecorder(world.observe, obs_external=False, compress_images=False)
        task = Task(index=index, seed=seed, episode_index=index)
        play_episode(
            world,
            policy,
            task,
            max_steps=spec.max_episode_steps,
            limits=limits,
            watchdog=watchdog,
            recorder=recorder,
        )
    elapsed = time.perf_counter() - started
    world.close()
    return elapsed


def main() -> None:
    args = episode_loop_arguments(__doc__, "alternations")
    watchdog = Watchdog()
    print("| env | episodes | plain s (min) | harness s (min) | harness / plain |")
    print("|---|---|---|---|---|")
    for env_id in args.env:
        seeds = train_seeds(env_id)[: BATCH[env_id]]
        plain, harness = [], []
        for _ in range(args.repeats):
            plain.append(plain_seconds(env_id, seeds))
            harness.append(harness_seconds(env_id, seeds, watchdog))
        print(
            f"| {env_id} | {len(seeds)} | {min(plain):.4f} | {min(harness):.4f} | "
            f"{min(harness) / min(plain):.2f} |"
        )
    Watchdog.stop()


if __name__ == "__main__":
    main()
