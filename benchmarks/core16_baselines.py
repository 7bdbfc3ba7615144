"""Measure the built-in agents on Core-16 at the published protocol, cheapest runs first.

    nice -n 10 uv run python benchmarks/core16_baselines.py run [--skip gym/racing] [--repeats N]
    uv run python benchmarks/core16_baselines.py table --output docs/baselines.md

``run`` plays the jobs of ``config/core16-builtin-suite.toml`` (and, for the sparse-reward
environments, ``config/core16-explore-suite.toml``) one at a time with ``evopolicygym run --suite
--job``, ordered by repeat and then by estimated cost (the environment's recorded calibration
time times a per-agent factor), so that an interrupted measurement has the most cells filled.
Finished runs are skipped, interrupted ones resume. ``table`` writes the Markdown table of
``docs/baselines.md`` from whatever run records exist: the mean held-out return per agent
(with its standard error over held-out cases, and over repeats when there are several) beside
the published columns, and the rank score each agent would get among the published entrants.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITES = [
    REPO / "config" / "core16-builtin-suite.toml",
    REPO / "config" / "core16-explore-suite.toml",
]
# Episodes a budget-128 run plays relative to a calibration run (budget 32, 8 + 32 hidden
# cases): train + validation of every ok checkpoint + held-out.
AGENT_COST = {"random": 1.3, "cmaes": 2.6, "explore": 2.6, "hillclimb": 7.0}


def _calibration_seconds(env: str) -> float:
    from evopolicygym.envs import get_env

    spec = get_env(env, bulk=True)
    for path in (REPO / "envspecs").rglob("*.toml"):
        document = tomllib.loads(path.read_text(encoding="utf-8"))
        if document.get("id") == spec.id:
            return float(document.get("calibration", {}).get("seconds", 600.0))
    return 600.0


def _jobs(repeats: int, skip: set[str], first: list[str] | None = None):
    from evopolicygym.suites import load_suite

    jobs = []
    for path in SUITES:
        if not path.exists():
            continue
        suite = load_suite(path.relative_to(REPO))
        for job in suite.jobs:
            if job.repeat >= repeats or job.env in skip:
                continue
            cost = _calibration_seconds(job.env) * AGENT_COST.get(job.agent_label, 3.0)
            jobs.append((job.repeat, cost, suite, job))
    first = first or []

    def priority(item) -> tuple:
        job = item[3]
        matches = [i for i, text in enumerate(first) if text in job.name]
        return (min(matches) if matches else len(first), item[0], item[1])

    return sorted(jobs, key=priority)


def _ensure_data(suite, job) -> None:
    for request in suite.data_requests():
        if request.root != job.config.run.data or (request.root / "heldout.json").exists():
            continue
        subprocess.run(
            [
                "evopolicygym", "data", "make", "--env", request.env, "--bulk",
                "--root", str(request.root), "--seed", str(request.seed),
                "--train-size", str(request.train_size), "--valid-size", str(request.valid_size),
                "--heldout-size", str(request.heldout_size), "--force",
            ],
            check=True,
        )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    os.chdir(REPO)
    jobs = _jobs(args.repeats, set(args.skip), args.first)
    print(f"{len(jobs)} jobs, cheapest first", flush=True)
    for number, (_repeat, cost, suite, job) in enumerate(jobs, 1):
        if job.record_path.exists():
            continue
        _ensure_data(suite, job)
        log = REPO / "results" / "logs" / "core16-baselines" / f"{job.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        print(f"[{number}/{len(jobs)}] {job.name} (estimated {cost:.0f} s)", flush=True)
        with open(log, "w") as handle:
            subprocess.run(
                ["evopolicygym", "run", "--suite", str(suite.path), "--job", job.name,
                 "--jobs", str(args.jobs)],
                stdout=handle, stderr=subprocess.STDOUT, check=False,
            )  # fmt: skip
        from evopolicygym.report import run_line

        print(f"    {run_line(job.record_path)} ({time.monotonic() - started:.0f} s)", flush=True)
    return 0


BEGIN, END = "<!-- table: begin -->", "<!-- table: end -->"


def table(args: argparse.Namespace) -> int:
    """Print the table, or write it between the table markers of ``--output``."""
    from evopolicygym.report import baseline_markdown

    output = Path(args.output).resolve() if args.output else None
    os.chdir(REPO)
    text = baseline_markdown([p.relative_to(REPO) for p in SUITES if p.exists()])
    if output is None:
        sys.stdout.write(text)
        return 0
    page = output.read_text(encoding="utf-8")
    head, rest = page.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    output.write_text(f"{head}{BEGIN}\n{text}{END}{tail}", encoding="utf-8")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    play = commands.add_parser("run", help="play the jobs, cheapest first")
    play.add_argument("--repeats", type=int, default=3, help="repeats to play (default 3)")
    play.add_argument("--skip", action="append", default=[], help="environment id to leave out")
    play.add_argument("--jobs", type=int, default=2, help="policy workers per run (default 2)")
    play.add_argument(
        "--first",
        action="append",
        metavar="TEXT",
        help="play jobs whose name contains TEXT first, in the order given (repeatable)",
    )
    play.set_defaults(handler=run)
    write = commands.add_parser("table", help="write the measured table (Markdown)")
    write.add_argument("--output", help="file to write (default: print)")
    write.set_defaults(handler=table)
    args = parser.parse_args()
    return args.handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
