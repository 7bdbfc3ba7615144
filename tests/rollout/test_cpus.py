"""CPU claims between concurrent pools and runs, and keeping a process off its lanes' CPUs."""

import os
import subprocess
import sys
import threading

import pytest

from evopolicygym.rollout import claim_cpus, kept_off

MASK = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(MASK) < 2, reason="needs two CPUs in this process's mask")


def test_claims_of_two_pools_never_share_a_cpu_and_come_back_on_release(tmp_path):
    first = claim_cpus(1, tmp_path)
    second = claim_cpus(len(MASK), tmp_path)
    assert first.cores == [max(MASK)]  # highest first: CPU 0 takes the housekeeping
    assert sorted(c for c in second.cores if c is not None) == MASK[:-1]
    assert second.cores[-1] is None  # no free CPU was left for the last lane
    first.release()
    first.release()  # idempotent
    assert claim_cpus(1, tmp_path).cores == [max(MASK)]


@needs_two
def test_a_claim_knows_the_cpus_earlier_claims_hold_and_which_are_free(tmp_path):
    first = claim_cpus(1, tmp_path)
    second = claim_cpus(1, tmp_path)
    assert first.cores == [MASK[-1]] and second.cores == [MASK[-2]]
    assert first.others == set() and second.others == {MASK[-1]}
    assert second.free_cpus() == set(MASK[:-2])
    assert first.free_cpus() == set(MASK[:-1])  # it claimed before the second one


def test_a_cpu_another_process_holds_is_skipped_until_that_process_dies(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib\n"
            "from evopolicygym.rollout import claim_cpus\n"
            "claim = claim_cpus(1, pathlib.Path(sys.argv[1]))\n"
            "print(claim.cores[0], flush=True)\n"
            "sys.stdin.read()\n",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        held = int(holder.stdout.readline())
        mine = claim_cpus(1, tmp_path)
        assert mine.cores[0] != held
        mine.release()
    finally:
        holder.kill()  # the kernel drops its lock, whatever way it ends
        holder.wait()
    assert claim_cpus(1, tmp_path).cores == [held]


def test_without_a_usable_claims_directory_lanes_still_get_distinct_cpus(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    claim = claim_cpus(len(MASK) + 1, blocker / "claims")
    assert sorted(c for c in claim.cores if c is not None) == MASK
    assert claim.cores[-1] is None


def _affinities() -> list[set[int]]:
    return [os.sched_getaffinity(int(tid)) for tid in os.listdir("/proc/self/task")]


@needs_two
def test_kept_off_moves_every_thread_and_what_starts_inside_then_restores():
    before = os.sched_getaffinity(0)
    waiting = threading.Event()
    older = threading.Thread(target=waiting.wait)  # started before: moved as well
    older.start()
    try:
        with kept_off({MASK[-1]}):
            assert all(MASK[-1] not in cpus for cpus in _affinities())
            child = subprocess.run(
                [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                capture_output=True,
                text=True,
                check=True,
            )
            assert MASK[-1] not in eval(child.stdout)
        assert all(cpus == before for cpus in _affinities())
    finally:
        waiting.set()
        older.join()


def test_kept_off_changes_nothing_when_no_cpu_would_be_left():
    before = os.sched_getaffinity(0)
    with kept_off(set(MASK)):
        assert os.sched_getaffinity(0) == before
    with kept_off(set()):
        assert os.sched_getaffinity(0) == before
