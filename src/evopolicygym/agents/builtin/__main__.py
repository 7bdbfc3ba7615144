"""``python -m evopolicygym.agents.builtin {random,hillclimb} [--seed N]``: a JSONL command
agent for ``evopolicygym run --agent builtin:<name>``."""

import argparse

from . import BUILTIN_AGENTS, JudgeClient, serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evopolicygym.agents.builtin",
        description="Run a built-in offline agent speaking the JSONL command protocol on "
        "stdin/stdout. Needs EVOPOLICYGYM_INFO_URL and EVOPOLICYGYM_SUBMIT_URL, as exported "
        "by `evopolicygym run`.",
    )
    parser.add_argument("name", choices=sorted(BUILTIN_AGENTS), help="which built-in agent")
    parser.add_argument("--seed", type=int, default=0, help="seed of the search (default 0)")
    args = parser.parse_args(argv)
    client = JudgeClient.from_environ()
    if args.name == "random":
        return serve(BUILTIN_AGENTS[args.name](client))
    return serve(BUILTIN_AGENTS[args.name](client, seed=args.seed))


if __name__ == "__main__":
    raise SystemExit(main())
