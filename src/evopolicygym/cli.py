"""The ``evopolicygym`` command line. Argument parsing only: every command calls a library
function and turns its errors into a one-line message and a non-zero exit.

Library modules are imported inside the command functions for start-up speed: ``--help`` and
each command load only what they use (gymnasium, Flask, pandas and Snakemake take seconds to
import together). The CLI is the top layer, so none of these imports hides a cycle."""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evopolicygym.protocol import RunConfig

Commands = argparse._SubParsersAction  # what add_subparsers() returns

DESCRIPTION = """\
EvoPolicyGym: measure whether a coding agent can improve an executable Python policy from
budget-limited environment feedback. A run starts a local HTTP judge, lets an agent edit
workspace/system/policy.py and submit rollouts until its episode budget is spent, then scores the
validation-selected checkpoint on hidden held-out cases and writes run.json."""

RUN_EPILOG = """\
examples:
  evopolicygym run --env gym/cartpole --agent builtin:hillclimb --budget 32 --runs runs
  evopolicygym run --env toy --runs runs --model script --exp-id smoke-001 --budget 8 \\
      --agent command -- python agent.py
  evopolicygym run --config docs/examples/cartpole-hillclimb.toml
  evopolicygym run --resume runs/hillclimb/gym_cartpole/default

Running the same command again continues an interrupted run from its journal (same budget,
same submit history); a finished run is left as it is. Impossible settings (budget below 1,
minimum above maximum or budget, pools larger than the split) are refused before anything is
written, and so is a run directory that was started with other settings: give a new --exp-id,
or pass --rerun to move the old directory aside (<dir>.archived-<time>) and start again."""


def _run_config(args: argparse.Namespace) -> RunConfig:
    """The run's settings from the one source the flags name: a run to resume, a suite job, or
    defaults < --config file < flags."""
    from evopolicygym.run_config import RunFlags, layered_run_config
    from evopolicygym.runs import load_saved_config
    from evopolicygym.suites import suite_job_config

    if args.resume:
        return load_saved_config(Path(args.resume))
    if args.suite:
        if not args.job:
            raise SystemExit(
                "--suite needs --job NAME (see `evopolicygym suite --config FILE --list`)"
            )
        try:
            return suite_job_config(args.suite, args.job, root=args.root, jobs=args.jobs)
        except KeyError as exc:
            raise SystemExit(f"evopolicygym: {exc.args[0]}") from None
    flags = {name: getattr(args, name) for name in RunFlags.names()}
    flags["argv"] = tuple(word for word in args.argv or () if word != "--")
    return layered_run_config(RunFlags(**flags), args.config)


def cmd_verify(args: argparse.Namespace) -> int:
    from evopolicygym.judge import verify_run

    checks = verify_run(Path(args.run_dir))
    for passed, text in checks:
        print(f"{'ok  ' if passed else 'FAIL'} {text}")
    return 0 if all(passed for passed, _ in checks) else 1


def cmd_run(args: argparse.Namespace) -> int:
    from evopolicygym.sandbox import probe_soon

    probe_soon(args.isolation or "auto")  # runs while the settings and libraries load
    from evopolicygym.display import RunDisplay
    from evopolicygym.runs import run_from_config, run_root

    config = _run_config(args)
    record = run_from_config(config, rerun=args.rerun, display=RunDisplay(verbose=args.verbose))
    outcome = record.outcome
    print(
        json.dumps(
            {
                "root": str(run_root(config)),
                "status": outcome.status,
                "final_score": outcome.final_score,
                "best_submit_index": outcome.best_submit_index,
                "budget_used": record.budget.used,
                "submits": record.budget.n_submits,
                "agent_reason": record.agent.reason if record.agent else None,
            },
            sort_keys=True,
        )
    )
    return 0 if outcome.status != "error" else 1


def cmd_data_make(args: argparse.Namespace) -> int:
    from evopolicygym.cases import make_splits
    from evopolicygym.envs import get_env

    spec = get_env(args.env, bulk=args.bulk)
    if args.private and args.seed is not None:
        raise SystemExit("--private draws every seed from the operating system; drop --seed")
    splits = make_splits(
        spec.id,
        Path(args.root),
        seed=args.seed or 0,
        private=args.private,
        train_size=args.train_size or spec.train_cases,
        valid_size=args.valid_size or spec.valid_size,
        heldout_size=args.heldout_size or spec.heldout_size,
        force=args.force,
    )
    print(
        json.dumps(
            {
                "env": spec.id,
                "root": args.root,
                "train": len(splits.train),
                "valid": len(splits.valid),
                "heldout": len(splits.heldout),
                "private": splits.private,
                "versions": splits.hashes,
            },
            sort_keys=True,
        )
    )
    return 0


def cmd_agents_check(args: argparse.Namespace) -> int:
    from evopolicygym.agents import check_agent

    binaries = {}
    for item in args.binary or []:
        kind, _, path = item.partition("=")
        if kind not in ("codex", "claude", "kimi") or not path:
            raise SystemExit(
                f"--binary takes KIND=PATH with KIND codex, claude or kimi, not {item!r}"
            )
        binaries[kind] = path
    kinds = args.kind or ["codex", "claude", "kimi"]
    results = []
    for kind in kinds:
        if not args.json:
            print(f"checking {kind}...", file=sys.stderr, flush=True)
        results.append(
            check_agent(
                kind,
                binary=binaries.get(kind, ""),
                session=not args.no_session,
                timeout=args.timeout,
            )
        )
    if args.json:
        print(json.dumps([r.model_dump() for r in results], indent=2))
    else:
        for r in results:
            session = {None: "not tried", True: "ok", False: "FAILED"}[r.session]
            print(
                f"{r.kind:7} {'found ' + r.path if r.path else 'NOT FOUND (' + r.binary + ')'}"
                f"\n        version: {r.version or '-'}\n        one-turn session: {session}"
                + (f" ({r.session_id})" if r.session_id else "")
            )
            if r.detail:
                print(f"        problem: {r.detail}")
            if r.advice:
                print(f"        to fix: {r.advice}")
    return 0 if all(r.ok for r in results) else 1


def cmd_suite(args: argparse.Namespace) -> int:
    from evopolicygym.suites import load_suite
    from evopolicygym.workflow import run_suite_workflow

    if args.check:
        from evopolicygym.preflight import require_ready

        require_ready([load_suite(Path(args.config))])
        print(f"{args.config}: every agent and environment is ready", file=sys.stderr)
        return 0
    if args.list:
        for job in load_suite(Path(args.config)).jobs:
            print(f"{job.name}\t{job.env}\t{job.agent_label}\t{job.root}")
        return 0
    return 0 if run_suite_workflow(Path(args.config), cores=args.cores, dry_run=args.dry_run) else 1


def cmd_report(args: argparse.Namespace) -> int:
    from evopolicygym.report import ReportFiles, build_report, published_archive, run_line
    from evopolicygym.suites import load_suite

    if args.records:
        for path in args.records:
            print(run_line(Path(path)))
        return 0
    if not args.suite:
        raise SystemExit("give --suite FILE (a whole report) or RUN_JSON files (one line each)")
    suite = load_suite(Path(args.suite))
    output = Path(args.output) if args.output else Path("results") / suite.slug
    archive = (
        None if args.no_archive else Path(args.archive) if args.archive else published_archive()
    )
    report = build_report(suite, ReportFiles.in_dir(output), archive=archive)
    print(report.final_table())
    print(f"report: {output / 'report.html'}")
    if args.screenshot:
        from evopolicygym.report import ScreenshotError, screenshot

        try:
            print(f"screenshot: {screenshot(output / 'report.html', Path(args.screenshot))}")
        except ScreenshotError as exc:
            print(f"evopolicygym: {exc}", file=sys.stderr)
            return 2
    return 0


def cmd_check_envs(args: argparse.Namespace) -> int:
    from evopolicygym.readiness.checks import check_envs_command

    return check_envs_command(
        args.env or [],
        bulk=args.bulk,
        discover=args.discover,
        min_level=args.min_level,
        isolate=args.isolate,
        jobs=args.jobs,
        timeout=args.timeout,
        output=args.output,
        calibrate=args.calibrate,
    )


def cmd_check_one_env(args: argparse.Namespace) -> int:
    from evopolicygym.readiness.checks import check_one_env_main

    return check_one_env_main(args.env, args.bulk, args.up_to, args.calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from evopolicygym.envs import get_env
    from evopolicygym.readiness.calibration import (
        CalibrationError,
        CalibrationSettings,
        calibrate,
        record_calibration,
    )

    spec = get_env(args.env, bulk=args.bulk)
    settings = CalibrationSettings(
        agent=args.agent,
        budget=args.budget,
        valid_size=args.valid_size,
        final_size=args.final_size,
        jobs=args.jobs,
    )
    try:
        result = calibrate(spec, settings, root=Path(args.root) if args.root else None)
    except CalibrationError as exc:
        print(f"evopolicygym: {exc}", file=sys.stderr)
        return 2
    print(result.model_dump_json())
    verdict = "calibrated" if result.improved else "NOT calibrated (margin within 2 SE)"
    sys.stderr.write(f"[calibrate] {spec.id}: {verdict}: {result.describe()}\n")
    if args.record:
        sys.stderr.write(f"[calibrate] {record_calibration(spec, result)}\n")
    return 0 if result.improved else 1


def cmd_discover_envs(args: argparse.Namespace) -> int:
    from evopolicygym.readiness.discover import discover_envs_command

    return discover_envs_command(args.output, args.markdown)


def _add_run(commands: Commands) -> None:
    """``run``: one benchmark run, from flags, a config file, a suite job or a run to resume."""
    run = commands.add_parser(
        "run",
        help="run (or resume) one benchmark run",
        description="Run one agent on one environment until its budget is spent, then score it.",
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = run.add_argument_group("where the settings come from")
    source.add_argument(
        "--config",
        type=Path,
        help="run config file (TOML or JSON; [run] [agent] [server] [limits]); flags override it",
    )
    source.add_argument(
        "--resume",
        metavar="ROOT",
        help="continue the run in ROOT with the settings it was started with",
    )
    source.add_argument("--suite", metavar="FILE", help="suite config; run the job named by --job")
    source.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print every progress event (default: one updating line per phase on a terminal, "
        "a plain line per phase every 15 s elsewhere)",
    )
    source.add_argument(
        "--rerun",
        action="store_true",
        help="move an existing run directory aside (<dir>.archived-<time>) and start afresh",
    )
    source.add_argument("--job", metavar="NAME", help="job name within --suite")
    where = run.add_argument_group("run")
    where.add_argument("--env", help="environment id (default toy); see `evopolicygym check-envs`")
    where.add_argument(
        "--bulk", action="store_true", help="allow any installed Gymnasium id as gymnasium/<id>"
    )
    where.add_argument("--root", type=Path, help="explicit run directory")
    where.add_argument(
        "--runs", type=Path, help="base directory: the run goes to RUNS/<model>/<env>/<exp-id>"
    )
    where.add_argument(
        "--data",
        type=Path,
        help="split directory from `data make` (default: seed-0 splits of the env's sizes)",
    )
    where.add_argument("--model", help="model label (default: agent)")
    where.add_argument("--exp-id", "--exp", dest="exp_id", help="experiment id (default: default)")
    where.add_argument("--budget", type=int, help="episodes the agent may spend")
    where.add_argument("--minimum", type=int, help="fewest episodes per submit (default 1)")
    where.add_argument("--maximum", type=int, help="most episodes per submit (default: the budget)")
    where.add_argument("--valid-size", type=int, help="validation cases (first N of the pool)")
    where.add_argument("--final-size", type=int, help="held-out cases (first N of the pool)")
    where.add_argument(
        "--compress-images",
        action="store_true",
        help="store pixel observations in feedback as compressed observations.npz (key 'obs') "
        "instead of the reference's observations.npy",
    )
    where.add_argument(
        "--jobs", type=int, help="policy worker processes (default: number of cores)"
    )
    where.add_argument(
        "--isolation",
        choices=["auto", "namespaced", "basic", "process"],
        help="how policy code is isolated: namespaced (bubblewrap + Landlock + seccomp), basic "
        "(Landlock + seccomp), process (processes and limits only); auto (default) = the "
        "strongest that works here. A level that does not work stops the run, saying why",
    )
    where.add_argument("--bind", help="judge address (default 127.0.0.1)")
    where.add_argument("--port", type=int, help="judge port (default 0: any free port)")
    agent = run.add_argument_group("agent")
    agent.add_argument(
        "--agent",
        help="command | codex | claude | kimi | builtin:random | builtin:hillclimb | "
        "builtin:cmaes | builtin:explore",
    )
    agent.add_argument("--agent-name", help="log and session name")
    agent.add_argument(
        "--agent-jail",
        choices=["auto", "on", "off"],
        help="run the agent inside bubblewrap, seeing only its workspace, CLI and configuration "
        "(default auto: where bubblewrap works)",
    )
    agent.add_argument("--limit", type=int, help="turn limit (default: the budget)")
    agent.add_argument("--retries", type=int, help="extra attempts per failed turn")
    agent.add_argument(
        "--retry-backoff", type=float, help="seconds before the first retry; doubles each time"
    )
    agent.add_argument(
        "argv",
        nargs=argparse.REMAINDER,
        help="after --: the command agent's argv, or the CLI binary and extra args",
    )
    run.set_defaults(handler=cmd_run)


def _add_agents(commands: Commands) -> None:
    """``agents check``: is each agent CLI usable here?"""
    agents = commands.add_parser("agents", help="agent CLIs").add_subparsers(
        dest="agents_command", metavar="ACTION", required=True
    )
    agents_check = agents.add_parser(
        "check",
        help="is each agent CLI installed, which version, does a one-turn session work?",
        description="For the codex, claude and kimi adapters: find the CLI on PATH, print its "
        "--version, and run one no-op turn (the CLI must be logged in and reach its model; no "
        "judge is involved and nothing is submitted). Prints what to do about each failure; "
        "exits 1 when any checked CLI is not usable.",
    )
    agents_check.add_argument(
        "--kind", action="append", choices=["codex", "claude", "kimi"], help="check only these"
    )
    agents_check.add_argument(
        "--binary", action="append", metavar="KIND=PATH", help="use this binary for KIND"
    )
    agents_check.add_argument(
        "--no-session", action="store_true", help="only look for the binary and its version"
    )
    agents_check.add_argument(
        "--timeout", type=float, default=180.0, help="seconds for the one-turn session (180)"
    )
    agents_check.add_argument("--json", action="store_true", help="print the results as JSON")
    agents_check.set_defaults(handler=cmd_agents_check)


def _add_verify(commands: Commands) -> None:
    """``verify``: a run directory's integrity."""
    verify = commands.add_parser(
        "verify",
        help="check a run directory's integrity",
        description="Re-check a run directory with its private key: the journal's HMAC chain, "
        "every ok checkpoint against the hash journaled at its submit, run.json's seal, and "
        "that the final score is the mean of the journaled held-out returns. Exit status 0 when "
        "every check passes, 1 otherwise.",
    )
    verify.add_argument("run_dir", help="the run directory (holds run.json and .judge/)")
    verify.set_defaults(handler=cmd_verify)


def _add_data(commands: Commands) -> None:
    """``data make``: seed split files."""
    data = commands.add_parser("data", help="case split files").add_subparsers(
        dest="data_command", metavar="ACTION", required=True
    )
    make = data.add_parser(
        "make",
        help="write train/valid/heldout.json seed splits",
        description="Draw distinct seeds from random.Random(SEED).randrange(0, 2**31): train first, then validation, then held-out.",
    )
    make.add_argument("--env", required=True, help="environment id")
    make.add_argument("--bulk", action="store_true", help="allow gymnasium/<id> ids")
    make.add_argument("--root", required=True, help="directory for the three files")
    make.add_argument("--seed", type=int, help="master seed (default 0: the public protocol)")
    make.add_argument(
        "--private",
        action="store_true",
        help="draw every seed from the operating system's randomness (no master seed): nobody "
        "can compute the hidden cases; the hidden files are mode 0600 and hold a nonce, so "
        "their SHA-256 in run.json is a commitment",
    )
    make.add_argument("--train-size", type=int, help="default: the env's train_cases")
    make.add_argument("--valid-size", type=int, help="default: the env's valid_size")
    make.add_argument("--heldout-size", type=int, help="default: the env's heldout_size")
    make.add_argument("--force", action="store_true", help="overwrite existing files")
    make.set_defaults(handler=cmd_data_make)


def _add_suite(commands: Commands) -> None:
    """``suite``: a whole suite through the Snakemake workflow."""
    suite = commands.add_parser(
        "suite",
        help="run a suite through the Snakemake workflow",
        description="Run every job of a suite (env x agent x repeat) and its report through the same Snakemake workflow as `snakemake suite_<slug>` (Snakemake's Python API, in the current directory). Finished runs are never re-run; interrupted ones resume.",
    )
    suite.add_argument(
        "--config", required=True, help="suite file (TOML: [suite] [[run]] [[agent]] ...)"
    )
    suite.add_argument(
        "--cores", type=int, help="cores for Snakemake (default: the suite's jobs x threads)"
    )
    suite.add_argument(
        "--dry-run", "-n", action="store_true", help="only show the jobs that would run"
    )
    suite.add_argument(
        "--list",
        action="store_true",
        help="print the suite's jobs (name, env, agent, run directory) and exit",
    )
    suite.add_argument(
        "--check",
        action="store_true",
        help="only run the preflight the workflow runs before scheduling: every agent CLI on "
        "PATH, every environment buildable",
    )
    suite.set_defaults(handler=cmd_suite)


def _add_report(commands: Commands) -> None:
    """``report``: a suite's report, or one line per run record."""
    report = commands.add_parser(
        "report",
        help="results table, leaderboard, curves and HTML from run.json files",
        description="With --suite: read every run.json of the suite and write results.parquet, leaderboard.md/.csv (rank score), curves.png and report.html. With RUN_JSON files: print one status line per run.",
    )
    report.add_argument(
        "records", nargs="*", metavar="RUN_JSON", help="run.json files to summarize one line each"
    )
    report.add_argument("--suite", help="suite file whose runs to report")
    report.add_argument(
        "--output", help="directory for the report files (default results/<suite slug>)"
    )
    report.add_argument(
        "--archive",
        help="published results to rank against on shared environments (default: the checkout's archive/core16/heldout_returns.csv)",
    )
    report.add_argument("--no-archive", action="store_true", help="rank the suite's agents only")
    report.add_argument(
        "--screenshot",
        metavar="PNG",
        help="also render report.html in headless Chromium at 1366x900 and save it as PNG",
    )
    report.set_defaults(handler=cmd_report)


def _add_check_envs(commands: Commands) -> None:
    """``check-envs`` and its hidden per-environment child ``_check-one-env``."""
    check = commands.add_parser(
        "check-envs",
        help="readiness checks per environment (levels L0-L4)",
        description="Check environments up to their declared readiness level: L0 catalogued (spec complete), L1 smoke (build, reset, step, seeded determinism, schema round trip), L2 tasked (task text complete and consistent), L3 scored (random anchor recorded), L4 calibrated (a built-in agent beats random; `evopolicygym calibrate`). Progress goes to stderr, a summary line to stdout; exit status 1 if any environment fails.",
    )
    check.add_argument(
        "--env",
        action="append",
        metavar="ID",
        help="check only this id (repeatable; default: every curated env)",
    )
    check.add_argument(
        "--bulk",
        action="store_true",
        help="also check every installed Gymnasium id as gymnasium/<id> (L1)",
    )
    check.add_argument(
        "--discover",
        action="store_true",
        help="also list every installed Gymnasium id at L0 (registered, not built)",
    )
    check.add_argument(
        "--min-level",
        default="L0",
        help="only environments declared at this level or above (L0-L4; default L0)",
    )
    check.add_argument(
        "--isolate",
        action="store_true",
        help="one subprocess per environment (a crash or hang fails only that env)",
    )
    check.add_argument(
        "--jobs", type=int, default=1, help="parallel subprocesses with --isolate (default 1)"
    )
    check.add_argument(
        "--timeout",
        type=float,
        default=0,
        help="seconds per environment with --isolate (default 0: none)",
    )
    check.add_argument(
        "--calibrate",
        action="store_true",
        help="L4: run the built-in agent live (about a minute per env and more on slow ones) instead of reading the recorded [calibration]",
    )
    check.add_argument("--output", metavar="FILE", help="write the full JSON report here")
    check.set_defaults(handler=cmd_check_envs)
    one = commands.add_parser("_check-one-env")  # internal: the child process of --isolate
    one.add_argument("--env", required=True)
    one.add_argument("--bulk", action="store_true")
    one.add_argument("--up-to")
    one.add_argument("--calibrate", action="store_true")
    one.set_defaults(handler=cmd_check_one_env)


def _add_calibrate(commands: Commands) -> None:
    """``calibrate``: readiness level L4 of one environment."""
    calibration = commands.add_parser(
        "calibrate",
        help="L4: does a built-in agent beat the random policy within a budget?",
        description=(
            "Readiness level L4. Run a built-in agent on one environment through a real judge\n"
            "(small hidden pools), then play the uniform random policy on the same held-out\n"
            "cases. Prints the measurement as JSON on stdout; exit status 0 when the agent beats\n"
            "random by more than two standard errors of the per-case difference, 1 otherwise."
        ),
        epilog="example:\n  evopolicygym calibrate --env gym/cartpole --record",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    calibration.add_argument("--env", required=True, metavar="ID", help="environment id")
    calibration.add_argument("--bulk", action="store_true", help="allow gymnasium/<id> ids")
    calibration.add_argument(
        "--agent", default="builtin:hillclimb", help="agent kind (default builtin:hillclimb)"
    )
    calibration.add_argument("--budget", type=int, default=32, help="train episodes (default 32)")
    calibration.add_argument(
        "--valid-size", type=int, default=8, help="validation cases (default 8)"
    )
    calibration.add_argument(
        "--final-size", type=int, default=32, help="held-out cases (default 32)"
    )
    calibration.add_argument("--jobs", type=int, help="policy workers (default: cores)")
    calibration.add_argument("--root", help="keep the agent's run here (default: a temp dir)")
    calibration.add_argument(
        "--record",
        action="store_true",
        help="write the result into the envspec's [calibration] table (and L3 -> L4 if it improved)",
    )
    calibration.set_defaults(handler=cmd_calibrate)


def _add_discover_envs(commands: Commands) -> None:
    """``discover-envs``: installed packages and the registry by family."""
    discover = commands.add_parser(
        "discover-envs",
        help="installed environment packages and the Gymnasium registry by family",
        description="Import the optional environment packages, then list every registered Gymnasium id grouped by family, marking ids covered by curated envspecs.",
    )
    discover.add_argument(
        "--output",
        metavar="FILE",
        help="write the JSON here (e.g. docs/envs/discovered.json); default: print it",
    )
    discover.add_argument(
        "--markdown",
        metavar="FILE",
        help="also write a Markdown checklist (e.g. docs/envs/env_list.md)",
    )
    discover.set_defaults(handler=cmd_discover_envs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evopolicygym",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_run(commands)
    _add_verify(commands)
    _add_agents(commands)
    _add_data(commands)
    _add_suite(commands)
    _add_report(commands)
    _add_check_envs(commands)
    _add_calibrate(commands)
    _add_discover_envs(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    # SIGTERM (scancel, Snakemake, Kubernetes) unwinds like Ctrl-C: workers stopped, journal
    # closed, run lock released, so the run can be resumed.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        return args.handler(args)
    except KeyboardInterrupt as exc:
        print("evopolicygym: interrupted; run the same command again to resume", file=sys.stderr)
        signum = exc.args[0] if exc.args and isinstance(exc.args[0], int) else signal.SIGINT
        return 128 + signum
    except Exception as exc:
        return _report_error(exc)


def _report_error(exc: Exception) -> int:
    """Print an error the user can act on as one line and return the exit status (1 for a
    missing setting, 2 otherwise); anything else is a bug and propagates with its traceback.
    The error classes are imported here, not up front: ``run`` starts its isolation probe
    before it imports pydantic, and its worker lanes before the judge and the agent adapters."""
    from pydantic import ValidationError

    from evopolicygym.agents import AgentCommandError, JailUnavailable
    from evopolicygym.cases import SplitError
    from evopolicygym.envs import MissingExtraError, UnknownEnvironmentError
    from evopolicygym.judge import IntegrityError, JournalCorrupt
    from evopolicygym.preflight import PreflightError
    from evopolicygym.protocol import settings_problem
    from evopolicygym.run_config import RunConfigError
    from evopolicygym.run_lock import RunLockedError
    from evopolicygym.sandbox import IsolationUnavailable

    if isinstance(exc, RunConfigError):  # a missing --budget or agent argv
        print(f"evopolicygym: {exc}", file=sys.stderr)
        return 1
    if isinstance(exc, ValidationError):
        print(f"evopolicygym: invalid settings: {settings_problem(exc)}", file=sys.stderr)
        return 2
    expected = (
        AgentCommandError,
        SplitError,
        MissingExtraError,
        UnknownEnvironmentError,
        RunLockedError,
        PreflightError,
        JailUnavailable,
        IsolationUnavailable,
        JournalCorrupt,
        IntegrityError,
        FileNotFoundError,
        ValueError,
    )
    if not isinstance(exc, expected):
        raise exc
    print(f"evopolicygym: {exc}", file=sys.stderr)
    return 2


def run_cli() -> None:
    """The console entry point: :func:`main`, then an immediate exit once output is flushed
    (a finished run has closed everything; tearing down a thousand modules costs a tenth of
    a second that a suite of runs pays every time)."""
    code = main()
    atexit._run_exitfuncs()  # what registered itself (a browser driver) still stops
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(signum)


if __name__ == "__main__":
    run_cli()
