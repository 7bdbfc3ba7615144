"""The real Snakemake workflow: the offline smoke suite end to end (twice: the second call has
nothing to do, also through `evopolicygym suite`), dry runs of every suite target, the
Kubernetes profile, and formatting. Every Snakemake call runs in a temporary working directory
against the repository's Snakefile, so the checkout stays clean."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]
EVOPOLICYGYM = [sys.executable, "-m", "evopolicygym.cli"]
# Workflow jobs call `evopolicygym`: put this environment's scripts first on PATH.
ENV = {
    **os.environ,
    "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
}


def snakemake(workdir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SNAKEMAKE, "--directory", str(workdir), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
    )


def job_counts(output: str) -> dict[str, int]:
    """The "Job stats" table Snakemake prints for a (dry) run: rule -> job count."""
    table = output.split("Job stats:", 1)[1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)}


@pytest.mark.slow
def test_smoke_suite_runs_reports_and_then_has_nothing_to_do(tmp_path):
    first = snakemake(tmp_path, "smoke", "--cores", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    output = first.stdout + first.stderr
    for job in ("000_toy_random_r00", "003_gym_cartpole_hillclimb_r00"):
        assert re.search(rf"run {job}: completed, score -?\d", output), output[-3000:]
    assert "smoke: 4 runs: 4 completed" in output  # the suite's final table

    results = tmp_path / "results" / "smoke"
    table = pd.read_parquet(results / "results.parquet")
    assert sorted(table["job"]) == [
        "000_toy_random_r00",
        "001_toy_hillclimb_r00",
        "002_gym_cartpole_random_r00",
        "003_gym_cartpole_hillclimb_r00",
    ]
    assert set(table["status"]) == {"completed"}
    assert table["final_score"].notna().all()
    assert all(len(curve) >= 2 for curve in table["curve_episodes"])  # several submits each
    leaderboard = (results / "leaderboard.md").read_text()
    assert "| random |" in leaderboard and "| hillclimb |" in leaderboard
    # One protocol, with intervals; the published budget-128 entrants stay out of it.
    assert "Runs under another protocol" not in leaderboard
    assert "rank score 95% CI" in leaderboard and re.search(
        r"\| \[-?\d+\.\d{3}, -?\d+\.\d{3}\] \|", leaderboard
    )
    assert "GPT-5.5" not in leaderboard and "not ranked here: their protocol differs" in leaderboard
    page = (results / "report.html").read_text()
    assert "<h2>Leaderboard</h2>" in page and "data:image/png;base64," in page
    assert (tmp_path / "runs/smoke/random/toy/000_toy_random_r00/workspace").is_dir()
    assert (tmp_path / "results/logs/run/smoke").is_dir()

    started = time.perf_counter()
    second = snakemake(tmp_path, "smoke", "--cores", "2")
    no_op = time.perf_counter() - started
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Nothing to be done" in second.stdout + second.stderr
    print(f"snakemake smoke no-op: {no_op:.1f} s")

    # One engine: the CLI drives the same workflow and sees the same finished jobs.
    again = subprocess.run(
        [*EVOPOLICYGYM, "suite", "--config", str(REPO / "config/smoke-suite.toml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Nothing to be done" in again.stdout + again.stderr

    # A changed run record rebuilds the report only, never a run. (A mere touch is not a
    # change: Snakemake compares the checksum it recorded for the file.)
    with (tmp_path / "runs/smoke/random/toy/000_toy_random_r00/run.json").open("a") as record:
        record.write("\n")
    plan = snakemake(tmp_path, "smoke", "-n")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert job_counts(plan.stdout) == {"report": 1, "smoke": 1, "total": 2}


@pytest.mark.slow
def test_every_suite_target_dry_runs(tmp_path):
    started = time.perf_counter()
    plan = snakemake(
        tmp_path,
        "-n",
        "suite_smoke",
        "suite_smoke8",
        "suite_main128_codex",
        "suite_main128_claude",
        "suite_main128_kimi",
    )
    elapsed = time.perf_counter() - started
    assert plan.returncode == 0, plan.stderr[-3000:]
    counts = job_counts(plan.stdout)
    assert counts["run_main128_codex"] == 16
    assert counts["run_main128_claude"] == 16
    assert counts["run_main128_kimi"] == 16
    assert counts["run_smoke8"] == 6
    assert counts["run_smoke"] == 4
    assert counts["data"] == 16  # the three main-128 suites share the seed-0 splits
    assert counts["report"] == 5
    assert "runs/main-128/codex/codex/gym_acrobot/000_gym_acrobot_codex_r00/run.json" in plan.stdout
    print(f"dry run of 58 runs in 5 suites: {elapsed:.1f} s")


@pytest.mark.slow
def test_data_rule_writes_the_seed_0_splits(tmp_path):
    split = "data/main-128/gym/acrobot"
    made = snakemake(tmp_path, f"{split}/valid.json", "--cores", "1")
    assert made.returncode == 0, made.stderr[-3000:]
    first = {
        name: json.loads((tmp_path / split / f"{name}.json").read_text())["cases"]
        for name in ("train", "valid", "heldout")
    }
    assert [len(first[n]) for n in ("train", "valid", "heldout")] == [1024, 64, 256]
    # Draws #1, #1025 and #1089 of random.Random(0).randrange(0, 2**31): the published splits.
    assert (first["train"][0], first["valid"][0], first["heldout"][0]) == (
        {"seed": 1654615998},
        {"seed": 1106378843},
        {"seed": 47113601},
    )


@pytest.mark.slow
def test_suite_command_plans_through_the_snakemake_api(tmp_path):
    plan = subprocess.run(
        [*EVOPOLICYGYM, "suite", "--config", str(REPO / "config/smoke-8-suite.toml"), "--dry-run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
    )
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert job_counts(plan.stdout + plan.stderr)["run_smoke8"] == 6
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_kubernetes") is None
    or importlib.util.find_spec("snakemake_storage_plugin_fs") is None,
    reason="the Kubernetes profile needs snakemake-executor-plugin-kubernetes and "
    "snakemake-storage-plugin-fs (uv sync --extra cluster)",
)
def test_kubernetes_profile_dry_runs(tmp_path):
    plan = snakemake(
        tmp_path,
        "-n",
        "suite_main128_codex",
        "--workflow-profile",
        str(REPO / "workflow/profiles/kubernetes"),
    )
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert job_counts(plan.stdout)["run_main128_codex"] == 16


@pytest.mark.slow
def test_lint_finds_only_the_missing_conda_or_container_declaration():
    """The rules run in the project's own environment (uv or the Nix dev shell; Snakemake has no
    Nix deployment method), so Snakemake's "specify a conda environment or container" lint is
    the one lint expected; anything else is a regression."""
    lint = subprocess.run(
        [*SNAKEMAKE, "--lint"], capture_output=True, text=True, timeout=300, env=ENV, cwd=REPO
    )
    output = lint.stdout + lint.stderr
    assert "Lints for snakefile" not in output, output
    titles = set(re.findall(r"^    \* (.+?):?$", output, re.MULTILINE))
    assert titles == {"Specify a conda environment or container for each rule."}, output


def shell_commands(text: str) -> list[str]:
    """The shell templates of a rule file: the string literals under each ``shell:``."""
    commands = []
    for block in re.findall(r"^(\s*)shell:\n((?:\1\s+.*\n?)+)", text, re.MULTILINE):
        commands.append("".join(re.findall(r"[\"'](.*)[\"']\s*$", block[1], re.MULTILINE)))
    return commands


def test_rules_are_shell_commands_with_quoted_values():
    """No rule has a `run:` block (a local job would parse the workflow again in a child
    Snakemake), and every value a shell template interpolates is shell-quoted with `:q`, except
    numbers that Snakemake or the suite model give (threads, split sizes, seed)."""
    numeric = {"threads", "params.seed", "params.train", "params.valid", "params.heldout"}
    files = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    commands = []
    for path in files:
        text = path.read_text()
        assert not re.search(r"^\s+run:\s*$", text, re.MULTILINE), f"{path.name} has a run: block"
        commands += shell_commands(text)
    assert len(commands) == 3  # data, check_env, run_<suite>
    for command in commands:
        for field in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", command):
            assert field.endswith(":q") or field in numeric, f"unquoted {{{field}}} in {command}"


def test_workflow_files_are_snakefmt_formatted():
    check = subprocess.run(
        [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "rules"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stderr


@pytest.mark.slow
def test_a_suite_whose_agent_cli_is_missing_stops_before_any_job(tmp_path):
    path_without_codex = os.pathsep.join(
        p for p in ENV["PATH"].split(os.pathsep) if not (Path(p) / "codex").exists()
    )
    started = time.perf_counter()
    result = subprocess.run(
        [*SNAKEMAKE, "--directory", str(tmp_path), "suite_main128_codex", "--cores", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**ENV, "PATH": path_without_codex},
    )
    elapsed = time.perf_counter() - started
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "preflight failed; no job was scheduled" in output
    assert "agent CLI 'codex' (codex) not found on PATH" in output
    assert not (tmp_path / "data").exists() and not (tmp_path / "runs").exists()
    assert "rule data" not in output and "localrule data" not in output
    print(f"preflight of 16 environments and 1 agent: {elapsed:.1f} s")
