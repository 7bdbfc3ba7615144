"""Whole runs through the real CLI: judge on loopback, a command agent, worker processes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

AGENT = Path(__file__).parent / "agents" / "scripted_agent.py"


def evopolicygym(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evopolicygym.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


def test_command_agent_run_end_to_end(tmp_path):
    # A relative --runs, resolved against the caller's cwd (workers run elsewhere).
    args = (
        "run",
        "--env",
        "toy",
        "--runs",
        "runs",
        "--model",
        "script",
        "--exp-id",
        "smoke-001",
        "--budget",
        "8",
        "--agent",
        "command",
        "--",
        sys.executable,
        str(AGENT),
    )
    result = evopolicygym(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    root = tmp_path / "runs" / "script" / "toy" / "smoke-001"
    assert summary["root"] == "runs/script/toy/smoke-001" and summary["status"] == "completed"
    record = json.loads((root / "run.json").read_text())
    assert record["budget"] == {"limit": 8, "used": 8, "n_submits": 4}
    assert record["outcome"]["best_submit_index"] == 3  # identical policies: ties go to the latest
    heldout = record["outcome"]["heldout_returns"]
    assert len(heldout) == 32 and record["outcome"]["final_score"] == pytest.approx(
        sum(heldout) / 32
    )
    assert record["agent"]["reason"] == "done"
    assert record["versions"]["agents_md_hash"].startswith("sha256:")
    assert (root / "workspace" / "AGENTS.md").exists()
    assert (root / "workspace").stat().st_mode & 0o077 == 0  # the agent's files are the run's
    assert [s["first_global_episode"] for s in record["submits"]] == [0, 2, 4, 6]
    events = [
        json.loads(line)["event"]
        for line in (root / "logs" / "harness.log").read_text().splitlines()
    ]
    assert events.count("submit.finish") == 4 and events[-1] == "run.close"
    again = evopolicygym(*args, cwd=tmp_path)
    assert again.returncode == 0 and "finished" in again.stderr
    assert json.loads((root / "run.json").read_text()) == record


def test_an_agent_that_quits_early_leaves_an_error_record(tmp_path):
    result = evopolicygym(
        "run",
        "--env",
        "toy",
        "--root",
        str(tmp_path / "run"),
        "--budget",
        "8",
        "--limit",
        "2",
        "--agent",
        "command",
        "--",
        sys.executable,
        str(AGENT),
    )
    assert result.returncode == 1
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (
        record["outcome"]["status"] == "error"
        and "4 of 8 episodes unspent" in record["outcome"]["error"]["message"]
    )
    assert record["agent"]["reason"] == "turn_limit"


def test_no_ok_submit_scores_zero(tmp_path):
    agent = tmp_path / "broken_agent.py"
    agent.write_text(AGENT.read_text().replace("class Policy:", "class Broken:"))
    result = evopolicygym(
        "run",
        "--env",
        "toy",
        "--root",
        str(tmp_path / "run"),
        "--budget",
        "4",
        "--agent",
        "command",
        "--",
        sys.executable,
        str(agent),
    )
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert result.returncode == 0
    assert record["outcome"]["status"] == "no_ok_submit" and record["outcome"]["final_score"] == 0.0
    errors = (tmp_path / "run" / "workspace" / "feedback" / "submit_000" / "errors.txt").read_text()
    assert "missing_policy" in errors and "class Policy" in errors


def _journal(root: Path) -> list[dict]:
    path = root / ".judge" / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


@pytest.mark.slow
def test_sigkill_mid_submit_then_resume_gives_exact_budget_and_history(tmp_path):
    root = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "evopolicygym.cli",
        "run",
        "--env",
        "toy",
        "--root",
        str(root),
        "--budget",
        "8",
        "--jobs",
        "1",
        "--agent",
        "command",
        "--",
        sys.executable,
        str(AGENT),
        "--act-sleep",
        "1.0",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        records = _journal(root)
        begun = [r for r in records if r["type"] == "submit_begin"]
        committed = [r for r in records if r["type"] == "submit_commit"]
        if len(committed) == 2 and len(begun) == 3:
            break
        time.sleep(0.05)
    else:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("the run never reached its third submit")
    time.sleep(0.5)  # inside the third submit: its first episode sleeps for 1 s
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    seen = {p: p.read_bytes() for p in (root / "workspace" / "feedback").rglob("*") if p.is_file()}
    assert len([p for p in seen if p.name == "summary.json"]) == 2
    assert _journal(root)[-1]["type"] == "submit_begin"

    resumed = subprocess.run(
        [*command[:-2], "--act-sleep", "0"], capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    record = json.loads((root / "run.json").read_text())
    assert record["budget"] == {"limit": 8, "used": 8, "n_submits": 4}
    assert [s["index"] for s in record["submits"]] == [0, 1, 2, 3]
    assert [s["first_global_episode"] for s in record["submits"]] == [0, 2, 4, 6]
    for path, data in seen.items():
        assert path.read_bytes() == data, f"{path} changed after the crash"
    types = [r["type"] for r in _journal(root)]
    assert "submit_rollback" in types and types.count("submit_commit") == 4


def _descendants(pid: int) -> set[int]:
    listed = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    parents = dict((int(c), int(p)) for c, p in (line.split() for line in listed.splitlines()))
    found, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, p in parents.items() if p in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    stat = subprocess.run(["ps", "-p", str(pid), "-o", "stat="], capture_output=True, text=True)
    return stat.stdout.strip() not in ("", "Z")


def test_sigterm_stops_every_process_and_the_run_resumes(tmp_path):
    # What scancel, a Snakemake interrupt or a Kubernetes eviction does to a run.
    root = tmp_path / "run"
    command = [sys.executable, "-m", "evopolicygym.cli", "run", "--env", "toy", "--root", str(root)]
    command += ["--budget", "8", "--jobs", "2", "--agent", "command", "--"]
    command += [sys.executable, str(AGENT), "--act-sleep", "1.0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if [r for r in _journal(root) if r["type"] == "submit_commit"]:
            break
        time.sleep(0.05)
    time.sleep(0.5)  # inside the second submit
    started = _descendants(process.pid)  # the agent and the policy workers
    assert len(started) >= 3
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "interrupted; run the same command again to resume" in stderr
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in started if _alive(pid)], "processes outlived the run"

    resumed = subprocess.run(
        [*command[:-2], "--act-sleep", "0"], capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    record = json.loads((root / "run.json").read_text())
    assert record["budget"]["used"] == 8
    assert [s["index"] for s in record["submits"]] == list(range(len(record["submits"])))


def test_a_run_on_private_splits_records_their_commitments(tmp_path):
    made = evopolicygym(
        "data", "make", "--env", "toy", "--root", "data", "--private", "--train-size", "8",
        "--valid-size", "4", "--heldout-size", "4", cwd=tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["private"] is True
    refused = evopolicygym(
        "data", "make", "--env", "toy", "--root", "d2", "--private", "--seed", "3", cwd=tmp_path
    )
    assert refused.returncode != 0 and "drop --seed" in refused.stderr
    result = evopolicygym(
        "run", "--env", "toy", "--root", "run", "--data", "data", "--budget", "2",
        "--agent", "builtin:random", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    versions = json.loads((tmp_path / "run" / "run.json").read_text())["versions"]
    assert versions["case_protocol"] == "private"
    assert versions["data_heldout_hash"] == json.loads(made.stdout)["versions"]["data_heldout_hash"]
    seeds = [
        c["seed"] for c in json.loads((tmp_path / "data" / "heldout.json").read_text())["cases"]
    ]
    written = b"".join(p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert not any(str(seed).encode() in written for seed in seeds)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--budget", "0"], "budget: Input should be greater than or equal to 1 (got 0)"),
        (["--budget", "4", "--minimum", "5", "--maximum", "2"], "minimum 5 is above maximum 2"),
        (["--budget", "4", "--minimum", "8"], "minimum 8 episodes per submit is above the budget"),
        (["--budget", "4", "--valid-size", "17"], "valid size 17 exceeds the 16 cases"),
        (["--budget", "4", "--final-size", "999"], "heldout size 999 exceeds"),
    ],
)
def test_impossible_settings_are_refused_in_one_line_and_write_nothing(tmp_path, flags, says):
    result = evopolicygym(
        "run", "--env", "toy", "--agent", "builtin:random", "--runs", str(tmp_path / "runs"), *flags
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
    assert not (tmp_path / "runs").exists()


def test_a_finished_run_with_other_settings_is_refused_and_rerun_archives_it(tmp_path):
    runs = str(tmp_path / "runs")
    common = ("run", "--env", "toy", "--agent", "builtin:random", "--runs", runs)
    sizes = ("--valid-size", "2", "--final-size", "2")
    assert evopolicygym(*common, "--budget", "2", *sizes).returncode == 0
    root = tmp_path / "runs" / "random" / "toy" / "default"
    before = (root / "run.json").read_text()

    refused = evopolicygym(*common, "--budget", "3", *sizes)
    assert refused.returncode == 2
    line = refused.stderr.strip()
    assert "\n" not in line
    assert "budget 2 -> 3" in line and "--exp-id" in line and "--rerun" in line
    assert (root / "run.json").read_text() == before

    same = evopolicygym(*common, "--budget", "2", *sizes)
    assert same.returncode == 0 and (root / "run.json").read_text() == before

    rerun = evopolicygym(*common, "--budget", "3", *sizes, "--rerun")
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads((root / "run.json").read_text())["budget"]["limit"] == 3
    (archived,) = root.parent.glob("default.archived-*")
    assert (archived / "run.json").read_text() == before
    assert not (archived / ".judge" / "lock").exists()


@pytest.mark.slow
def test_progress_is_a_few_lines_in_a_log_and_every_event_with_verbose(tmp_path):
    common = ("run", "--env", "toy", "--agent", "builtin:hillclimb", "--budget", "16")
    quiet = evopolicygym(*common, "--runs", str(tmp_path / "a"))
    verbose = evopolicygym(*common, "--runs", str(tmp_path / "b"), "-v")
    assert quiet.returncode == 0 and verbose.returncode == 0
    quiet_lines = quiet.stderr.splitlines()
    assert len(quiet_lines) <= 8, quiet.stderr
    assert any("validation:" in line and "checkpoint" in line for line in quiet_lines)
    assert any("held-out:" in line for line in quiet_lines)
    assert sum("submit.finish" in line for line in verbose.stderr.splitlines()) == 16


@pytest.mark.slow
def test_a_one_env_suite_at_the_published_protocol_is_ranked_beside_the_published_entrants(
    tmp_path,
):
    suite = tmp_path / "one-suite.toml"
    suite.write_text(
        f"[suite]\nroot = '{tmp_path / 'runs'}'\nname = 'one'\nthreads = 2\n"
        "[[run]]\nenv = 'gym/acrobot'\nbulk = true\nbudget = 128\nmaximum = 128\n"
        f"data = '{tmp_path / 'data'}'\nvalid_size = 64\nfinal_size = 256\n"
        "[[agent]]\nkind = 'builtin:random'\nname = 'random'\n"
    )
    sizes = ("--train-size", "1024", "--valid-size", "64", "--heldout-size", "256")
    made = evopolicygym(
        "data", "make", "--env", "gym/acrobot", "--root", str(tmp_path / "data"), *sizes
    )
    assert made.returncode == 0, made.stderr
    job = "000_gym_acrobot_random_r00"
    ran = evopolicygym("run", "--suite", str(suite), "--job", job, "--jobs", "2")
    assert ran.returncode == 0, ran.stderr[-2000:]
    output = tmp_path / "report"
    report = evopolicygym("report", "--suite", str(suite), "--output", str(output))
    assert report.returncode == 0, report.stderr[-2000:]
    leaderboard = (output / "leaderboard.md").read_text()
    assert "ranked beside these runs on 1 environment(s)" in leaderboard
    for entrant in ("GPT-5.5 (Codex)", "uniform random", "random"):
        assert f"| {entrant} |" in leaderboard
    assert "Runs under another protocol" not in leaderboard


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_agent_runs_off_the_cpu_the_lane_plays_on(tmp_path):
    mask = os.sched_getaffinity(0)
    # The scripted agent, after noting the CPUs it may run on (its cwd is the workspace).
    agent = (
        "import os, runpy, sys\n"
        "open('agent_cpus.json', 'w').write(repr(sorted(os.sched_getaffinity(0))))\n"
        "sys.argv = [sys.argv[1]]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    root = tmp_path / "run"
    result = evopolicygym(
        "run", "--env", "toy", "--root", str(root), "--budget", "4", "--jobs", "1",
        "--agent", "command", "--", sys.executable, "-c", agent, str(AGENT),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    agent_cpus = set(eval((root / "workspace" / "agent_cpus.json").read_text()))
    assert agent_cpus < mask and len(agent_cpus) == len(mask) - 1
    assert os.sched_getaffinity(0) == mask


def test_the_judge_process_imports_no_simulator_and_no_numpy(tmp_path):
    # Environments are built in workers only: the run's schemas come from the world the first
    # worker built. A judge that built one too imported Gymnasium and MuJoCo (a HalfCheetah
    # run's judge held 98 MiB instead of 60) and spent 0.3-0.7 s of the run's start on it.
    loaded = tmp_path / "modules.json"
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: open(sys.argv[1], 'w').write(json.dumps(sorted(sys.modules))))\n"
        "from evopolicygym import cli\n"
        "cli.main(sys.argv[2:])\n"
    )
    command = [sys.executable, "-c", code, str(loaded), "run", "--env", "gym/cartpole"]
    command += ["--root", str(tmp_path / "run"), "--budget", "4", "--valid-size", "4"]
    command += ["--final-size", "4", "--jobs", "1", "--agent", "command", "--"]
    command += [sys.executable, str(AGENT), "--action", "1", "--batch", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["outcome"]["status"] == "completed"
    modules = {name.split(".")[0] for name in json.loads(loaded.read_text())}
    assert "evopolicygym" in modules and {"numpy", "gymnasium", "mujoco"}.isdisjoint(modules)
