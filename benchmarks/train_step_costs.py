"""Where a train step's time goes: the train episode loop built up one piece at a time from a
plain Gymnasium loop, in one process (no HTTP, no sandbox, no process boundary).

Each rung plays the train episodes of one ``judge_throughput.py`` submit (same seeds, same
policy) and adds one piece of what a train worker does every step:

1. ``plain``: ``gymnasium.make`` and ``env.step`` on the raw observation (the baseline of
   ``judge_throughput.py`` and ``episode_loop.py``);
2. ``innermost step``: the environment's own ``step``, past the wrappers ``gymnasium.make``
   added (``direct_step``, what the world calls);
3. ``+ observation as list``: the policy is given the observation's JSON-safe form;
4. ``+ action coercion``: the policy's action is coerced to the action space;
5. ``+ info conversion``: the step's info is converted to JSON-safe values;
6. ``world.step``: the world's whole step (coercion, time limit, flags, info, its turn) in
   place of 2, 4 and 5;
7. ``play_episode``: the train episode loop (act deadline, clock, captured output);
8. ``+ recording``: the episode recorded as a train worker records it.

The rungs take turns ``--repeats`` times (the machine's speed drifts) and the fastest of each
is reported: microseconds a step, what that adds to the plain loop, and the ratio.

Run: ``uv run python benchmarks/train_step_costs.py`` (``--env``, ``--repeats``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium
from episode_loop import policy_class
from judge_throughput import BATCH, episode_loop_arguments, train_seeds

from evopolicygym.envs import get_env
from evopolicygym.envs.gymnasium_adapter import direct_step
from evopolicygym.envs.jsonsafe import to_jsonsafe
from evopolicygym.envs.spaces import action_coercer
from evopolicygym.protocol import LimitsSection, Task
from evopolicygym.rollout import EpisodeRecorder, Watchdog, play_episode


def rungs(env_id: str, seeds: list[int], watchdog: Watchdog) -> dict[str, Callable[[], float]]:
    """Each rung: a function playing ``seeds`` and returning its seconds."""
    spec = get_env(env_id)
    steps, policy = spec.max_episode_steps, policy_class(env_id)({}, {}, {})
    plain_env = gymnasium.make(spec.upstream, **spec.kwargs)
    world = spec.make_world()
    inner, _limit = direct_step(world.env)
    observe, coerce = world.observe, action_coercer(world.env.action_space)
    limits = LimitsSection().model_dump()

    def plain() -> float:
        started = time.perf_counter()
        for index, seed in enumerate(seeds):
            obs, _ = plain_env.reset(seed=seed)
            policy.reset(index)
            for _ in range(steps):
                obs, _r, terminated, truncated, _i = plain_env.step(policy.act(obs))
                if terminated or truncated:
                    break
        return time.perf_counter() - started

    def stepping(
        step: Callable[[object], tuple], as_list: bool, coerced: bool, converted: bool
    ) -> Callable[[], float]:
        """Episodes stepped by ``step`` (the innermost one, or the world's whole step)."""

        def play() -> float:
            started = time.perf_counter()
            for index, seed in enumerate(seeds):
                obs = world.reset(seed)
                policy.reset(index)
                for _ in range(steps):
                    action = policy.act(observe(obs) if as_list else obs)
                    if coerced:
                        action, _invalid = coerce(action)
                    obs, _r, terminated, truncated, info = step(action)
                    if converted:
                        to_jsonsafe(info)
                    if terminated or truncated:
                        break
            return time.perf_counter() - started

        return play

    def episodes(record: bool) -> Callable[[], float]:
        def play() -> float:
            started = time.perf_counter()
            for index, seed in enumerate(seeds):
                recorder = None
                if record:
                    recorder = EpisodeRecorder(observe, obs_external=False, compress_images=False)
                task = Task(index=index, seed=seed, episode_index=index)
                play_episode(
                    world,
                    policy,
                    task,
                    max_steps=steps,
                    limits=limits,
                    watchdog=watchdog,
                    recorder=recorder,
                )
            return time.perf_counter() - started

        return play

    return {
        "plain": plain,
        "innermost step": stepping(inner, False, False, False),
        "+ observation as list": stepping(inner, True, False, False),
        "+ action coercion": stepping(inner, True, True, False),
        "+ info conversion": stepping(inner, True, True, True),
        "world.step": stepping(world.step, True, False, False),
        "play_episode": episodes(False),
        "+ recording": episodes(True),
    }


def count_steps(env_id: str, seeds: list[int]) -> int:
    """Steps the benchmark's policy plays on ``seeds`` (episodes may end early)."""
    spec = get_env(env_id)
    env, policy = gymnasium.make(spec.upstream, **spec.kwargs), policy_class(env_id)({}, {}, {})
    total = 0
    for index, seed in enumerate(seeds):
        obs, _ = env.reset(seed=seed)
        policy.reset(index)
        for _ in range(spec.max_episode_steps):
            total += 1
            obs, _r, terminated, truncated, _i = env.step(policy.act(obs))
            if terminated or truncated:
                break
    env.close()
    return total


def main() -> None:
    args = episode_loop_arguments(__doc__, "turns of every rung")
    watchdog = Watchdog()
    for env_id in args.env:
        seeds = train_seeds(env_id)[: BATCH[env_id]]
        steps = count_steps(env_id, seeds)
        ladder = rungs(env_id, seeds, watchdog)
        fastest = dict.fromkeys(ladder, float("inf"))
        for _ in range(args.repeats):
            for name, play in ladder.items():
                fastest[name] = min(fastest[name], play())
        plain = fastest["plain"]
        print(f"\n{env_id}: {len(seeds)} episodes, {steps} steps, fastest of {args.repeats}")
        print("| rung | µs a step | over plain, µs | / plain |")
        print("|---|---|---|---|")
        for name, seconds in fastest.items():
            print(
                f"| {name} | {seconds / steps * 1e6:.2f} | "
                f"{(seconds - plain) / steps * 1e6:+.2f} | {seconds / plain:.3f} |"
            )
    Watchdog.stop()


if __name__ == "__main__":
    main()
