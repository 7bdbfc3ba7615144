"""Every shell command shown in README.md, docs/ and the example configs is checked here.

Commands are taken from fenced code blocks marked ``sh`` (or ``bash``/``console``/``shell``;
every fence must name a language, so no command can hide in an unmarked block) and from ``#   <command>`` lines in ``docs/examples/*.toml``. Each is dispatched on its program:
``evopolicygym`` arguments must parse with the real CLI parser (and named config files must
exist), Snakemake targets and profiles must exist, ``uv`` extras must be declared, ``setup.sh``
must accept its arguments (run with ``--dry-run --no-system``), and ``nix develop`` shells must be
ones the flake defines. A command no checker knows fails the test, so a new kind of command in the
docs needs a checker here (or, for third-party tools, an entry in ``EXTERNAL``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from evopolicygym.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
QUICK_START = (
    "uv run snakemake smoke --cores 2                                    # main job, offline: "
    "smoke suite with built-in agents -> results/smoke/report.html",
    "uv run --extra core --extra atari --extra web --extra dev pytest    # the tests",
)
SHELL_FENCES = {"sh", "bash", "console", "shell"}
# Commands of other tools that the docs show for completeness; nothing of ours to check.
EXTERNAL = {"git", "pip", "nix-instantiate"}


def documents() -> list[Path]:
    docs = [p for p in (REPO / "docs").rglob("*.md") if "envs" not in p.relative_to(REPO).parts]
    return [REPO / "README.md", *sorted(docs)]


def _logical_lines(lines: list[str]) -> Iterator[str]:
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield pending + line
        pending = ""


def shown_commands() -> list[tuple[str, str]]:
    """(where, command) for every command line in the docs and example configs."""
    found: list[tuple[str, str]] = []
    for path in documents():
        fence: str | None = None
        block: list[str] = []
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith("```"):
                if fence is None:
                    fence, block = stripped[3:].strip(), []
                else:
                    if fence in SHELL_FENCES:
                        name = path.relative_to(REPO)
                        found += [
                            (str(name), c.strip()) for c in _logical_lines(block) if c.strip()
                        ]
                    fence = None
                continue
            if fence is not None:
                block.append(line)
    for path in sorted((REPO / "docs" / "examples").glob("*.toml")):
        lines = [
            line[1:].strip() for line in path.read_text().splitlines() if line.startswith("#   ")
        ]
        found += [(str(path.relative_to(REPO)), c) for c in _logical_lines(lines)]
    return found


COMMANDS = shown_commands()


def split(command: str) -> list[str]:
    """argv of a shown command: comments dropped, leading VAR=value assignments dropped,
    ``$PWD`` expanded to the repository."""
    uncommented = re.sub(r"(^|\s)#.*$", "", command)  # not shlex's: it cuts `.#core` too
    words = shlex.split(uncommented.replace("$PWD", str(REPO)))
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words.pop(0)
    return words


def strip_uv_run(words: list[str]) -> list[str]:
    """``uv run [--extra X]... [--no-sync] prog args`` -> ``prog args`` (extras checked)."""
    rest = words[2:]
    while rest and rest[0].startswith("--"):
        option = rest.pop(0)
        if option == "--extra":
            check_extras([rest.pop(0)])
    return rest


def declared_extras() -> set[str]:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    return set(pyproject["project"]["optional-dependencies"])


def check_extras(extras: list[str]) -> None:
    unknown = set(extras) - declared_extras()
    assert not unknown, f"extras {sorted(unknown)} are not declared in pyproject.toml"


def check_evopolicygym(args: list[str]) -> None:
    parser = build_parser()
    try:
        parsed = parser.parse_args(args)
    except SystemExit as exc:
        raise AssertionError(f"the CLI rejects: evopolicygym {shlex.join(args)}") from exc
    assert getattr(parsed, "handler", None), f"no subcommand in: evopolicygym {shlex.join(args)}"
    for option in ("config", "suite"):
        value = getattr(parsed, option, None)
        if value:
            assert (REPO / value).is_file(), f"--{option} {value} does not exist"


def snakemake_targets() -> set[str]:
    """Target rules: named rules of the Snakefile and rules/, plus suite_<slug> per suite file
    (built by the same code the Snakefile uses)."""
    from evopolicygym.suites import load_suites

    config = (REPO / "config" / "config.yaml").read_text()
    smoke = re.search(r"^smoke_suite:\s*(\S+)", config, re.M).group(1)
    patterns = re.findall(r"^  - (\S+)", config.split("suites:", 1)[1], re.M)
    suites = load_suites([*patterns, smoke], base=REPO)
    rules = set()
    for path in [REPO / "Snakefile", *(REPO / "rules").glob("*.smk")]:
        rules |= set(re.findall(r"^rule (\w+):", path.read_text(), re.M))
    return rules | {f"suite_{suite.slug}" for suite in suites.values()}


def check_snakemake(args: list[str]) -> None:
    targets = [a for a in args if not a.startswith("-")]
    valued = (
        "--workflow-profile",
        "--profile",
        "--cores",
        "--jobs",
        "--configfile",
        "--container-image",
    )
    for option in valued:
        if option in args:
            value = args[args.index(option) + 1]
            targets.remove(value) if value in targets else None
            if "profile" in option:
                assert (REPO / value).is_dir(), f"{option} {value} does not exist"
    known = snakemake_targets()
    for target in targets:
        assert target in known, f"snakemake target {target!r} does not exist ({sorted(known)})"


def check_benchmark(args: list[str]) -> None:
    """A benchmark script: it exists, and its (sub)command with these options parses."""
    script = REPO / args[0]
    assert script.is_file(), f"{args[0]} does not exist"
    command = [a for a in args[1:2] if not a.startswith("-")]
    proc = subprocess.run(
        [sys.executable, str(script), *command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for option in (a for a in args[1:] if a.startswith("--")):
        assert option in proc.stdout, f"{args[0]} {' '.join(command)} has no option {option}"


def check_setup_script(args: list[str]) -> None:
    proc = subprocess.run(
        [
            "bash",
            str(REPO / "workflow" / "scripts" / "setup.sh"),
            *args,
            "--dry-run",
            "--no-system",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


def flake_shells() -> set[str]:
    text = (REPO / "flake.nix").read_text()
    shells = set(re.findall(r"\b(\w+) = mkFamilyShell pkgs", text))
    return shells | {"default"}


def check_nix(args: list[str]) -> None:
    if args[0] == "develop":
        target = args[1] if len(args) > 1 else ".#default"
        assert target.startswith(".#"), target
        assert target[2:] in flake_shells(), f"flake has no shell {target[2:]}"
    else:
        assert args[:2] in (["flake", "lock"], ["flake", "check"]), f"unchecked: nix {args}"


def check(words: list[str]) -> None:
    program, args = words[0], words[1:]
    if program == "uv" and args[:1] == ["run"]:
        check(strip_uv_run(words))
    elif program == "uv" and args[:1] == ["sync"]:
        check_extras([args[i + 1] for i, a in enumerate(args) if a == "--extra"])
    elif program == "evopolicygym":
        check_evopolicygym(args)
    elif program == "snakemake":
        check_snakemake(args)
    elif program == "pytest":
        pass  # this very test suite
    elif program in ("ruff", "snakefmt", "lint-imports"):
        pass  # linters over the repository
    elif program == "python" and args and args[0].endswith("docs/examples/agent.py"):
        assert Path(args[0]).is_file()
    elif program == "python" and args and args[0].startswith("benchmarks/"):
        check_benchmark(args)
    elif program == "nice":
        check(words[3:] if args[:1] == ["-n"] else args)
    elif program.endswith("workflow/scripts/setup.sh"):
        check_setup_script(args)
    elif program == "nix":
        check_nix(args)
    elif program in EXTERNAL:
        pass
    else:
        raise AssertionError(f"no checker for this command: {shlex.join(words)}")


def test_readme_quick_start_is_exactly_the_two_commands():
    lines = (REPO / "README.md").read_text().splitlines()
    start = lines.index("## Quick start")
    block = lines[start:]
    fence = block.index("```sh")
    assert tuple(block[fence + 1 : fence + 3]) == QUICK_START
    assert block[fence + 3] == "```"


def test_every_code_fence_names_its_language():
    for path in documents():
        opening = True
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip().startswith("```"):
                if opening:
                    assert line.strip() != "```", (
                        f"{path.relative_to(REPO)}:{number}: add a language"
                    )
                opening = not opening


def test_the_docs_show_commands():
    places = {where for where, _ in COMMANDS}
    assert "README.md" in places
    assert "docs/operations.md" in places
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[c for _, c in COMMANDS])
def test_shown_command_is_valid(where, command):
    words = split(command)
    assert words, f"{where}: empty command {command!r}"
    # `a && b` chains: check each part.
    parts: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            parts.append([])
        else:
            parts[-1].append(word)
    for part in parts:
        check(part)


def test_unknown_commands_and_bad_flags_are_caught():
    with pytest.raises(AssertionError, match="no checker"):
        check(split("make all"))
    with pytest.raises(AssertionError, match="CLI rejects"):
        check(split("uv run evopolicygym run --no-such-flag"))
    with pytest.raises(AssertionError, match="not declared"):
        check(split("uv sync --extra nonexistent"))
    with pytest.raises(AssertionError, match="does not exist"):
        check(split("uv run snakemake suite_nonexistent --cores 2"))
    with pytest.raises(AssertionError, match="no shell"):
        check(split("nix develop .#nonexistent"))
