"""Disk cost of recorded pixel observations: ``observations.npy`` versus ``compress_images``.

For each environment, one episode of the uniform random policy is played (case seed 0) and its
observations are stored the way the policy worker stores them (``_externalize`` in
``evopolicygym.rollout.worker``): once in the reference format (a plain ``.npy``) and once with
the run option ``compress_images`` (a compressed ``.npz``). Prints bytes per step, the size ratio
and the time the worker spends writing the file.

Measured here (2026-12-03): Pong 100.8 vs 0.26 KB/step (389x), CarRacing 27.6 vs 0.95 KB/step
(29x); writing costs 0.1-0.3 s per 1000-step episode.

Target: pixel feedback of a 128-episode run fits in well under 1 GB, which the plain ``.npy``
(about 100 KB per Pong frame) does not. Run: ``uv run python benchmarks/observation_storage.py``.
"""

from __future__ import annotations

import argparse
import time

from evopolicygym.envs import get_env
from evopolicygym.rollout.worker import _externalize

ENVS = ["gym/pong", "gym/racing"]


def episode_frames(env_id: str, max_steps: int) -> list:
    """Raw observations of one random episode on case seed 0 (the reset observation first)."""
    world = get_env(env_id).make_world()
    frames = [world.reset(0)]
    for _ in range(max_steps - 1):
        turn = world.step(world.sample())
        frames.append(turn.obs)
        if turn.terminated or turn.truncated:
            break
    world.close()
    return frames


def stored(frames: list, compress: bool) -> tuple[int, float, str]:
    """(bytes, seconds, file kind) of the worker's observation file."""
    started = time.perf_counter()
    blob, kind = _externalize(frames, always=True, compress_images=compress)
    return len(blob), time.perf_counter() - started, kind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", help=f"environment id (default: {ENVS})")
    parser.add_argument("--max-steps", type=int, default=1000, help="steps per episode")
    args = parser.parse_args()
    header = f"{'env':<12} {'steps':>6} {'npy KB/step':>12} {'npz KB/step':>12} {'ratio':>7}"
    print(header + f" {'npy write s':>12} {'npz write s':>12}")
    for env_id in args.env or ENVS:
        frames = episode_frames(env_id, args.max_steps)
        plain, plain_s, plain_kind = stored(frames, compress=False)
        packed, packed_s, packed_kind = stored(frames, compress=True)
        assert (plain_kind, packed_kind) == ("npy", "npz")
        steps = len(frames)
        print(
            f"{env_id:<12} {steps:>6} {plain / steps / 1e3:>12.1f} {packed / steps / 1e3:>12.2f}"
            f" {plain / packed:>6.0f}x {plain_s:>12.2f} {packed_s:>12.2f}"
        )


if __name__ == "__main__":
    main()
