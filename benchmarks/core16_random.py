"""The uniform random policy on Core-16 against the published random column.

Regenerates the table "Random policy: measured here vs published" of docs/envs/core16.md and the
numbers of its notes. The random policy is the one of the envspec anchors
(:func:`evopolicygym.readiness.anchors.random_episode_return`: ``World.sample()`` every step, the
action space seeded with the case seed + 1, episodes capped at the envspec's steps); the pools
are those of the published split (:data:`evopolicygym.cases.PUBLISHED_SPLIT`, master seed 0);
the published values are ``archive/core16/heldout_returns.csv`` (harness ``none``).

    # measure (slow: hours for all sixteen on two cores; --env picks some) and print the table
    python benchmarks/core16_random.py measure --raw core16-random.json [--env ID ...]
        [--valid N] [--heldout N] [--size ID=VALID/HELDOUT ...]
    python benchmarks/core16_random.py table --raw core16-random.json
    # the notes: prefix means of the held-out returns against the published values
    python benchmarks/core16_random.py prefixes --raw core16-random.json
    # a mean over plain seeds, optionally uniform over a subset of discrete actions
    python benchmarks/core16_random.py seeds --env ID --seeds 0:2000 [--actions 0,1,2]

``measure`` adds to (or replaces entries of) the raw JSON file, so environments can be measured
in separate calls. Run it under ``nice`` on a shared machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

from evopolicygym.envs import EnvSpec, default_registry
from evopolicygym.readiness.anchors import pool_seeds, random_episode_return

ARCHIVE = Path(__file__).resolve().parents[1] / "archive" / "core16" / "heldout_returns.csv"
PREFIX = 8  # "first 8 held-out": the prefix that fits the published column (see the notes)
CLOSE_SE = 2.5


def published() -> dict[str, tuple[str, float]]:
    """env id -> (label, published uniform-random held-out score)."""
    with ARCHIVE.open(newline="") as handle:
        return {
            row["env"]: (row["label"], float(row["score"]))
            for row in csv.DictReader(handle)
            if row["harness"] == "none"
        }


def standard_error(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def play(spec: EnvSpec, seeds: list[int], actions: list[int] | None = None) -> list[float]:
    """Random returns on ``seeds``: ``World.sample()`` every step, or with ``actions`` a uniform
    choice among them (``random.Random(seed + 1)``)."""
    world = spec.make_world()
    returns = []
    try:
        for seed in seeds:
            if actions is None:
                returns.append(random_episode_return(world, seed, spec.max_episode_steps)[0])
                continue
            choose = random.Random(seed + 1).choice
            world.reset(seed % 2**32)
            total = 0.0
            for _ in range(spec.max_episode_steps):
                turn = world.step(choose(actions))
                total += turn.reward
                if turn.terminated or turn.truncated:
                    break
            returns.append(total)
    finally:
        world.close()
    return returns


def comparison(measured: list[float], value: float) -> str:
    mean, error = statistics.fmean(measured), standard_error(measured)
    if error == 0:
        return "identical" if mean == value else f"differs ({mean - value:+.3g})"
    z = (mean - value) / error
    if abs(z) <= CLOSE_SE:
        return "close"
    if abs(z) <= 3:
        return "close (within 3 SE)"
    return f"differs ({z:+.1f} SE)"


def measure(args: argparse.Namespace) -> int:
    registry = default_registry()
    reference = published()
    sizes = {
        env: tuple(int(n) for n in size.split("/"))
        for env, _, size in (item.partition("=") for item in args.size)
    }
    raw = json.loads(args.raw.read_text()) if args.raw.exists() else {}
    for env in args.env or list(reference):
        spec = registry.get(env)
        valid_n, heldout_n = sizes.get(env, (args.valid, args.heldout))
        started = time.perf_counter()
        valid = play(spec, pool_seeds("valid")[:valid_n])
        heldout = play(spec, pool_seeds("heldout")[:heldout_n])
        seconds = time.perf_counter() - started
        raw[env] = {"valid": valid, "heldout": heldout, "seconds": round(seconds, 1)}
        args.raw.write_text(json.dumps(raw, indent=1) + "\n")
        print(
            f"{env}: validation {statistics.fmean(valid):.2f} ({valid_n}), held-out "
            f"{statistics.fmean(heldout):.2f} ± {standard_error(heldout):.2f} ({heldout_n}), "
            f"{seconds:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    print(render(raw))
    return 0


def render(raw: dict[str, dict]) -> str:
    registry = default_registry()
    rows = [
        "| env | id | upstream | steps | obs storage | random, validation (N) | random, held-out ± SE (N) "
        "| random, first 8 held-out | published random (held-out 256) | comparison |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for env, (label, value) in published().items():
        if env not in raw:
            continue
        spec, valid, heldout = registry.get(env), raw[env]["valid"], raw[env]["heldout"]
        rows.append(
            f"| {label} | `{env}` | `{spec.upstream}` | {spec.max_episode_steps} "
            f"| {spec.obs_storage} | {statistics.fmean(valid):.2f} ({len(valid)}) "
            f"| {statistics.fmean(heldout):.2f} ± {standard_error(heldout):.2f} ({len(heldout)}) "
            f"| {statistics.fmean(heldout[:PREFIX]):.2f} | {value:g} "
            f"| {comparison(heldout, value)} |"
        )
    return "\n".join(rows)


def table(args: argparse.Namespace) -> int:
    print(render(json.loads(args.raw.read_text())))
    return 0


def prefixes(args: argparse.Namespace) -> int:
    """Per environment: the prefix lengths of the held-out returns whose mean equals the published
    value at its printed precision; how far the means over the first 8 to 16 cases and over all
    cases are from it, in standard errors of a mean of that many cases; and how many held-out
    episodes score above the pool's minimum."""
    raw = json.loads(args.raw.read_text())
    for env, (label, value) in published().items():
        if env not in raw:
            continue
        heldout = raw[env]["heldout"]
        decimals = len(str(value).partition(".")[2])
        equal = [
            n
            for n in range(1, len(heldout) + 1)
            if round(statistics.fmean(heldout[:n]), decimals) == value
        ]
        # The noise of an n-case mean, estimated from the spread of all the held-out returns.
        spread = statistics.stdev(heldout) or 1.0
        z_short = [
            (statistics.fmean(heldout[:n]) - value) / (spread / math.sqrt(n)) for n in range(8, 17)
        ]
        z_all = (statistics.fmean(heldout) - value) / (spread / math.sqrt(len(heldout)))
        above = sum(r > min(heldout) for r in heldout)
        print(
            f"{label}: published {value:g}; prefixes equal to it: {equal[:10] or 'none'}; "
            f"first 8..16 off by {min(z_short, key=abs):+.1f} to {max(z_short, key=abs):+.1f} SE; "
            f"all {len(heldout)} off by {z_all:+.1f} SE; {above} of {len(heldout)} above the "
            f"minimum {min(heldout):g}"
        )
    return 0


def seeds(args: argparse.Namespace) -> int:
    start, _, stop = args.seeds.partition(":")
    chosen = list(range(int(start), int(stop)))
    actions = [int(a) for a in args.actions.split(",")] if args.actions else None
    spec = default_registry().get(args.env)
    started = time.perf_counter()
    returns = play(spec, chosen, actions)
    print(
        json.dumps(
            {
                "env": args.env,
                "seeds": args.seeds,
                "actions": actions or "World.sample()",
                "mean": round(statistics.fmean(returns), 4),
                "se": round(standard_error(returns), 4),
                "above_minimum": sum(r > min(returns) for r in returns),
                "minimum": min(returns),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("measure", help="play the pools and print the table")
    run.add_argument("--raw", type=Path, required=True, help="JSON file of the returns")
    run.add_argument("--env", action="append", help="Core-16 id (default: all sixteen)")
    run.add_argument("--valid", type=int, default=64, help="validation cases (default 64)")
    run.add_argument("--heldout", type=int, default=256, help="held-out cases (default 256)")
    run.add_argument(
        "--size", action="append", default=[], metavar="ID=VALID/HELDOUT", help="per env"
    )
    run.set_defaults(handler=measure)
    show = commands.add_parser("table", help="print the table from a raw file")
    show.add_argument("--raw", type=Path, required=True)
    show.set_defaults(handler=table)
    prefix = commands.add_parser("prefixes", help="held-out prefix means vs published")
    prefix.add_argument("--raw", type=Path, required=True)
    prefix.set_defaults(handler=prefixes)
    plain = commands.add_parser("seeds", help="mean return over plain seeds A:B")
    plain.add_argument("--env", required=True)
    plain.add_argument("--seeds", required=True, metavar="A:B")
    plain.add_argument("--actions", help="uniform over these discrete actions, e.g. 0,1,2")
    plain.set_defaults(handler=seeds)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
