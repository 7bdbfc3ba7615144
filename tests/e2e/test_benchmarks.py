"""Cheap end-to-end runs of the benchmark scripts whose numbers the docs quote."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "judge_throughput.py"
SPREAD = re.compile(
    r"^\| gym/cartpole \| 1 \| ([\d.]+)-([\d.]+) \| ([\d.]+)-([\d.]+) \| [\d.]+-[\d.]+ \| "
    r"[\d.]+-[\d.]+ \|$",
    re.M,
)
ROW = re.compile(r"^\| gym/cartpole \| 1 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", re.M)


def test_the_throughput_benchmark_prints_its_table_and_the_toy_run_phases_per_level():
    command = [sys.executable, str(SCRIPT), "--env", "gym/cartpole", "--jobs", "1"]
    command += ["--repeats", "1", "--isolation", "basic", "--isolation", "process"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    basic, process = done.stdout.split("\n\nisolation: process;")
    assert basic.startswith("isolation: basic; medians of 1 interleaved repeats")
    assert ROW.search(process), process  # the same tables for the second level
    row = ROW.search(basic)
    assert row, done.stdout
    submits, finalize, finalize_s, whole_s = map(float, row.groups())
    assert submits > 0
    assert finalize > 0
    assert 0 < finalize_s < whole_s
    spread = SPREAD.search(basic)
    assert spread, basic
    low, high = map(float, spread.groups()[:2])
    assert low == high == submits  # one repeat: no spread, and the same ratio as the table
    toy = float(re.search(r"toy run, budget 8: ([\d.]+) s", basic).group(1))
    line = basic.split("toy run phases (medians): ")[1].splitlines()[0]
    phases = {name: float(seconds) for name, seconds in re.findall(r"([a-z -]+) ([\d.]+) s", line)}
    assert [name.strip() for name in phases] == [
        "start-up",
        "agent start",
        "submits",
        "agent end",
        "finalize",
        "close",
    ]
    assert all(seconds >= 0 for seconds in phases.values())
    assert abs(sum(phases.values()) - toy) < 0.05  # the phases tile the whole run
    # The targets this run measured (1 worker of CartPole, the toy run), from the same medians.
    targets = dict(re.findall(r"^\| (.+?) \| ([\d.]+) \| [01] of 1 \| (?:yes|no) \|$", basic, re.M))
    assert targets == {
        "gym/cartpole 1 worker: submits >= 0.7": f"{submits:.2f}",
        "gym/cartpole 1 worker: finalize >= 0.7": f"{finalize:.2f}",
        "toy 1 worker: run < 1.0": f"{toy:.2f}",
    }
    verdict = re.search(
        r"^\| toy 1 worker: run < 1.0 \| [\d.]+ \| ([01]) of 1 \| (yes|no) \|$", basic, re.M
    )
    assert verdict.groups() == (("1", "yes") if toy < 1.0 else ("0", "no"))


def run_once_on_cartpole(script: str) -> subprocess.CompletedProcess:
    """``benchmarks/<script> --env gym/cartpole --repeats 1``, which must succeed."""
    command = [sys.executable, str(SCRIPT.with_name(script)), "--env", "gym/cartpole"]
    done = subprocess.run([*command, "--repeats", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def test_the_episode_loop_benchmark_prints_harness_over_plain_for_the_same_episodes():
    done = run_once_on_cartpole("episode_loop.py")
    row = re.search(
        r"^\| gym/cartpole \| 16 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", done.stdout, re.M
    )
    assert row, done.stdout
    plain, harness, ratio = map(float, row.groups())
    assert plain > 0 and harness > 0
    assert abs(ratio - harness / plain) < 0.01 + 0.001 / plain  # rounding of the printed seconds


def test_the_train_step_benchmark_builds_the_loop_up_from_a_plain_one_rung_by_rung():
    done = run_once_on_cartpole("train_step_costs.py")
    assert "gym/cartpole: 16 episodes, 8000 steps, fastest of 1" in done.stdout
    rows = re.findall(
        r"^\| ([^|]+?) \| ([\d.]+) \| ([+-][\d.]+) \| ([\d.]+) \|$", done.stdout, re.M
    )
    assert [name for name, *_ in rows] == [
        "plain",
        "innermost step",
        "+ observation as list",
        "+ action coercion",
        "+ info conversion",
        "world.step",
        "play_episode",
        "+ recording",
    ]
    plain = float(rows[0][1])
    assert rows[0][2:] == ("+0.00", "1.000")
    for _name, per_step, over, ratio in rows:
        assert abs(float(over) - (float(per_step) - plain)) < 0.016  # three roundings
        assert abs(float(ratio) - float(per_step) / plain) < 0.002


@pytest.mark.parametrize("kind", [[], ["--sealed"]], ids=["train", "sealed"])
def test_the_lane_cpu_benchmark_compares_a_claimed_lane_with_a_placed_one(kind):
    script = SCRIPT.with_name("lane_cpus.py")
    command = [sys.executable, str(script), "--episodes", "4", "--pairs", "2", *kind]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"gym/cartpole, 4 {'sealed' if kind else 'train'} episodes per call, 2 pairs"
    )
    claimed = re.search(r"^\| claimed \| \[(\d+)\] \| ([\d.]+) \| ([\d.]+) \|$", done.stdout, re.M)
    placed = re.search(r"^\| placed \| any \| ([\d.]+) \| ([\d.]+) \|$", done.stdout, re.M)
    assert claimed and placed, done.stdout
    assert int(claimed.group(1)) in os.sched_getaffinity(0)
    fastest, median = map(float, claimed.groups()[1:])
    assert 0 < fastest <= median
    summary = re.search(r"claimed / placed: ([\d.]+) .* faster in (\d) of 2\)", done.stdout)
    assert summary and float(summary.group(1)) > 0 and int(summary.group(2)) <= 2


@pytest.mark.parametrize(
    "flags, says", [(["--pairs", "0"], "must be at least 1"), (["--env", "toy"], "invalid choice")]
)
def test_the_lane_cpu_benchmark_refuses_bad_arguments_in_one_line(flags, says):
    script = SCRIPT.with_name("lane_cpus.py")
    done = subprocess.run([sys.executable, str(script), *flags], capture_output=True, text=True)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr


def test_the_speedup_target_is_the_median_of_each_repeats_own_ratio(capsys):
    # A slow phase that hits one repeat's two runs alike leaves that repeat's ratio alone.
    spec = importlib.util.spec_from_file_location("judge_throughput", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    one = [{"finalize": s, "submits": 1.0, "run": 9.0} for s in (2.0, 3.0, 6.0)]
    two = [{"finalize": s, "submits": 1.0, "run": 9.0} for s in (1.0, 1.8, 2.5)]
    cells = {("gym/cartpole", 1): one, ("gym/cartpole", 2): two}
    assert bench.speedups(cells, "gym/cartpole") == [2.0, 3.0 / 1.8, 2.4]
    bench.print_targets(cells, {"gym/cartpole": [(0.5, 1.5)] * 3}, [])
    line = next(x for x in capsys.readouterr().out.splitlines() if "speedup" in x)
    # The medians' ratio would be 3.0 / 1.8 = 1.67; the second repeat's own ratio is that too.
    assert line == "| gym/cartpole 2 workers: speedup >= 1.8 | 2.00 | 2 of 3 | yes |"
