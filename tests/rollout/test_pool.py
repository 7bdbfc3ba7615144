"""Hostile and broken policies against real worker processes: every failure becomes a verdict or
an episode error with a reason, and the other episodes still run."""

import errno
import importlib.resources
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evopolicygym.envs import get_env
from evopolicygym.protocol import LimitsSection, Verdict
from evopolicygym.rollout import EpisodeTask, InitFailure, WorkerPool
from evopolicygym.rollout import _cpus as cpus_module
from evopolicygym.rollout import pool as pool_module
from evopolicygym.sandbox import probe
from support import constant_policy, job_from_dir, write_policy
from web_support import CLICK_BUTTON_SOLVER, needs_web

TOY = get_env("toy")
# These tests reach into the policy's process through files in tmp_path: they run at the
# `process` level, where the file system is shared (tests/security/ covers the others).
PROCESS = probe("process")


def run(
    tmp_path: Path,
    source: str,
    n: int = 3,
    jobs: int = 1,
    record: bool = True,
    sealed: bool = False,
    **limits,
):
    write_policy(tmp_path / "ck", source)
    pool = WorkerPool(
        TOY.model_dump(), jobs, LimitsSection(**limits), tmp_path / "workers.log", plan=PROCESS
    )
    try:
        job = job_from_dir(tmp_path / "ck", TOY, {"env": "toy"})
        return pool.run(
            job,
            [EpisodeTask(i, 100 + i, i) for i in range(n)],
            record=record,
            sealed=sealed,
            max_steps=1,
        )
    finally:
        pool.close()


def test_a_pool_describes_its_environment_from_the_world_its_first_worker_built(tmp_path):
    # The judge takes a run's schemas from the worker's report instead of building a world of
    # its own; that worker then plays the first submit as any warm worker does.
    spec = get_env("gym/cartpole")
    pool = WorkerPool(spec.model_dump(), 1, LimitsSection(), tmp_path / "workers.log", plan=PROCESS)
    try:
        assert pool.describe() == spec.describe()
        write_policy(tmp_path / "ck", constant_policy(1))
        job = job_from_dir(tmp_path / "ck", spec, {"env": spec.id})
        results = pool.run(job, [EpisodeTask(0, 5, 0)], record=False, max_steps=20)
        assert results[0].error is None and results[0].length > 5
    finally:
        pool.close()


def test_a_pool_whose_worker_cannot_build_the_environment_describes_nothing(tmp_path):
    # The judge then describes the environment itself, and raises what is missing.
    spec = get_env("gym/cartpole").model_copy(update={"imports": ["evopolicygym_absent_module"]})
    pool = WorkerPool(spec.model_dump(), 1, LimitsSection(), tmp_path / "workers.log", plan=PROCESS)
    try:
        assert pool.describe() is None
    finally:
        pool.close()


def test_an_exception_in_act_fails_only_its_episode_with_a_traceback(tmp_path):
    results = run(
        tmp_path,
        """
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): self.i = i
            def act(self, obs):
                if self.i == 1:
                    raise ValueError("bad observation")
                return 1
    """,
    )
    assert [r.error is None for r in results] == [True, False, True]
    error = results[1].error
    assert (error.category, error.message, error.step_index) == (
        "act_error",
        "ValueError: bad observation",
        0,
    )
    assert 'File "system/policy.py", line 7, in act' in error.traceback
    assert results[2].episode_return == 102 % 8 + 1


def test_a_slow_act_is_stopped_at_the_act_limit(tmp_path):
    results = run(
        tmp_path,
        """
        import time
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): self.i = i
            def act(self, obs):
                if self.i == 0:
                    time.sleep(30)
                return 0
    """,
        act_timeout_s=0.5,
    )
    assert results[0].error.category == "act_timeout" and results[0].timed_out
    assert "time.sleep(30)" in results[0].error.traceback
    assert results[1].error is None


def test_an_init_that_never_returns_gives_init_timeout(tmp_path):
    outcome = run(
        tmp_path,
        """
        class Policy:
            def __init__(self, *args):
                while True:
                    pass
    """,
        init_timeout_s=1,
    )
    assert isinstance(outcome, InitFailure) and outcome.verdict == "init_timeout"
    assert "while True" in outcome.traceback or "pass" in outcome.traceback


@pytest.mark.parametrize(
    ("source", "verdict", "text"),
    [
        (
            "import no_such_module_here\nclass Policy: pass\n",
            "import_error",
            "No module named 'no_such_module_here'",
        ),
        (
            "class Policy:\n    def __init__(self, *a):\n        raise RuntimeError('cannot start')\n",
            "init_error",
            "RuntimeError: cannot start",
        ),
        (
            "class Policy:\n    def __init__(self, *a):\n        self.x = bytearray(4 * 2**30)\n",
            "oom",
            "MemoryError",
        ),
    ],
)
def test_policies_that_cannot_start_fail_the_submit(tmp_path, source, verdict, text):
    outcome = run(tmp_path, source, memory_bytes=2 * 2**30)
    assert isinstance(outcome, InitFailure)
    assert outcome.verdict == verdict and text in outcome.message
    assert "system/policy.py" in outcome.traceback


def test_memory_hog_in_act_is_an_oom_episode(tmp_path):
    results = run(
        tmp_path,
        """
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): self.i = i
            def act(self, obs):
                if self.i == 0:
                    self.hog = bytearray(8 * 2**30)
                return 2
    """,
        memory_bytes=2 * 2**30,
    )
    assert results[0].error.category == "oom"
    assert [r.error for r in results[1:]] == [None, None]


def test_exit_and_signals_kill_only_their_worker(tmp_path):
    results = run(
        tmp_path,
        """
        import os, signal
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): self.i = i
            def act(self, obs):
                if self.i == 0:
                    os._exit(7)
                if self.i == 1:
                    os.kill(os.getpid(), signal.SIGSEGV)
                return 2
    """,
    )
    assert results[0].error.category == "worker_crash" and "status 7" in results[0].error.message
    assert results[1].error.category == "worker_crash" and "SIGSEGV" in results[1].error.message
    assert results[2].error is None and results[2].episode_return == 102 % 8 + 2


def test_cpu_and_file_size_limits_are_named(tmp_path):
    results = run(
        tmp_path,
        """
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): self.i = i
            def act(self, obs):
                if self.i == 0:
                    open("big.bin", "wb").write(b"x" * 4 * 2**20)
                if self.i == 1:
                    while True:
                        pass
                return 2
    """,
        file_size_bytes=2**20,
        cpu_seconds=4,
        act_timeout_s=60,
    )
    assert results[0].error.category == "file_size_limit"
    assert results[1].error.category == "cpu_limit"
    assert results[2].error is None


def test_a_policy_that_swallows_the_timeout_is_killed_by_the_judge(tmp_path, monkeypatch):
    monkeypatch.setattr(pool_module, "EPISODE_GRACE_S", 1.0)
    started = time.monotonic()
    results = run(
        tmp_path,
        """
        import time
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): self.i = i
            def act(self, obs):
                while self.i == 0:
                    try:
                        time.sleep(60)
                    except BaseException:
                        pass
                return 2
    """,
        act_timeout_s=0.5,
        rollout_wall_s=1.0,
    )
    assert results[0].error.category == "episode_timeout" and "killed" in results[0].error.message
    assert results[1].error is None
    assert time.monotonic() - started < 30


def test_output_is_captured_per_episode_and_capped(tmp_path):
    results = run(
        tmp_path,
        """
        import os, sys
        class Policy:
            def __init__(self, *args):
                print("hello from init")
            def reset(self, i): self.i = i
            def act(self, obs):
                print("x" * 5000)
                print("warn", file=sys.stderr)
                os.write(1, b"raw bytes on fd 1 must not corrupt the protocol")
                return 2
    """,
        n=2,
        output_bytes=1000,
    )
    first = results[0]
    assert first.stdout.startswith("hello from init\nxxx")
    assert "characters cut" in first.stdout and len(first.stdout) < 1300
    assert first.stderr == "warn\n"
    assert not results[1].stdout.startswith("hello")
    # Raw writes to a descriptor are part of the episode's output, capped like the rest.
    assert "raw bytes on fd 1 must not corrupt the protocol" in first.stdout


def test_workers_see_no_run_paths_and_leave_no_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("EVOPOLICYGYM_WORKSPACE", "/secret/workspace")
    marker = tmp_path / "sleeper.pid"
    results = run(
        tmp_path,
        f"""
        import os, subprocess
        class Policy:
            def __init__(self, *args):
                assert not [k for k in os.environ if k.startswith("EVOPOLICYGYM_") and k != "EVOPOLICYGYM_ENVSPECS"]
                assert os.path.basename(os.getcwd()) == "system" and "{tmp_path}" not in os.getcwd()
                child = subprocess.Popen(["sleep", "300"])
                open("{marker}", "w").write(str(child.pid))
            def reset(self, i): pass
            def act(self, obs):
                open("scratch-file.txt", "w").write("runtime files stay in the scratch copy")
                return 2
    """,
        n=2,
        jobs=1,
    )
    assert [r.error for r in results] == [None, None]
    assert not (tmp_path / "ck" / "scratch-file.txt").exists()
    pid = int(marker.read_text())
    for _ in range(100):
        if subprocess.run(
            ["ps", "-p", str(pid), "-o", "stat="], capture_output=True, text=True
        ).stdout.strip() in ("", "Z"):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail("a process started by the policy outlived its worker")


def test_episodes_are_dealt_round_robin_and_results_keep_task_order(tmp_path):
    results = run(
        tmp_path,
        """
        import os
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                print(os.getpid())
                return 2
    """,
        n=6,
        jobs=3,
    )
    assert [r.index for r in results] == list(range(6))
    pids = [r.stdout.strip() for r in results]
    assert pids[0] == pids[3] and pids[1] == pids[4] and pids[2] == pids[5] and len(set(pids)) == 3


def test_an_exception_in_a_lane_thread_is_raised_as_itself_once_the_lanes_have_stopped(tmp_path):
    # Promise (WorkerPool.run): a fault of the harness in a lane thread (here the feedback
    # writer's full disk, in on_episode) is raised to the caller as itself with its traceback
    # (it was lost, and the caller got a KeyError for the lane's missing results), and only
    # once every lane has stopped: the pool serves the next call as if nothing happened.
    write_policy(tmp_path / "ck", constant_policy(2))
    pool = WorkerPool(TOY.model_dump(), 2, LimitsSection(), tmp_path / "w.log", plan=PROCESS)
    seen = []

    def disk_full(result):
        seen.append(result.index)
        if result.index == 2:
            raise OSError(errno.ENOSPC, "No space left on device")

    try:
        job = job_from_dir(tmp_path / "ck", TOY, {"env": "toy"})
        tasks = [EpisodeTask(i, 100 + i, i) for i in range(6)]
        with pytest.raises(OSError, match="No space left on device") as raised:
            pool.run(job, tasks, record=True, max_steps=1, on_episode=disk_full)
        assert raised.traceback[-1].name == "disk_full"
        assert 4 not in seen  # lane 0 stopped at its failure
        again = pool.run(job, tasks, record=True, max_steps=1)
        assert [r.episode_return for r in again] == [(100 + i) % 8 + 2.0 for i in range(6)]
    finally:
        pool.close()


TAMPERING_POLICY = """
    import gc

    from evopolicygym.envs import Turn


    class Policy:
        def __init__(self, *args):
            for obj in gc.get_objects():
                if type(obj).__name__ == "ToyWorld":
                    type(obj).step = lambda world, action: Turn(0, 1000.0, True, False, {})

        def reset(self, i):
            pass

        def act(self, obs):
            return 0
"""


def test_sealed_policies_cannot_tamper_with_the_environment(tmp_path):
    # In a train episode the policy shares the worker with the environment (documented): it can
    # patch it. In a sealed (hidden-pool) evaluation it is a separate process and cannot.
    tampered = run(tmp_path / "open", TAMPERING_POLICY, record=False)
    sealed = run(tmp_path / "sealed", TAMPERING_POLICY, record=False, sealed=True)
    assert [r.episode_return for r in tampered] == [1000.0] * 3
    assert [r.episode_return for r in sealed] == [(100 + i) % 8 + 0.0 for i in range(3)]


def test_sealed_evaluation_matches_in_process_results_and_survives_failures(tmp_path):
    source = """
        import os, time
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): self.i = i
            def act(self, obs):
                if self.i == 1:
                    time.sleep(30)
                if self.i == 2:
                    raise KeyError("missing")
                if self.i == 3:
                    os._exit(1)
                return 2
    """
    results = run(tmp_path, source, n=6, record=False, sealed=True, act_timeout_s=0.5)
    assert [r.error.category if r.error else None for r in results] == [
        None,
        "act_timeout",
        "act_error",
        "worker_crash",
        None,
        None,
    ]
    assert (
        "KeyError: 'missing'" in results[2].error.message
        and "system/policy.py" in results[2].error.traceback
    )
    assert [results[i].episode_return for i in (0, 4, 5)] == [
        (100 + i) % 8 + 2.0 for i in (0, 4, 5)
    ]


SLOW_ON_EPISODE_3 = """
    import time
    class Policy:
        def __init__(self, *args): pass
        def reset(self, i): self.pause = 0.012 if i == 3 else 0.002
        def act(self, obs):
            time.sleep(self.pause)
            return 1 if obs[2] + 0.5 * obs[3] > 0 else 0
"""


# Plays 2 (the best action) only while its process holds at most 3 instances of it.
COUNTS_ITS_INSTANCES = """
import builtins

class Policy:
    def __init__(self, *args):
        built = builtins.__dict__.setdefault("instances_built", [0])
        built[0] += 1

    def reset(self, i):
        pass

    def act(self, obs):
        return 2 if builtins.instances_built[0] <= 3 else 0
"""


def test_a_sealed_policy_process_builds_one_instance_per_episode_it_will_play(tmp_path):
    # Three hidden episodes need three Policy instances, not one per lock-step slot (64).
    train = run(tmp_path / "train", COUNTS_ITS_INSTANCES, n=3, record=False)
    sealed = run(tmp_path / "sealed", COUNTS_ITS_INSTANCES, n=3, record=False, sealed=True)
    assert [r.error for r in sealed] == [None] * 3
    assert [r.episode_return for r in sealed] == [r.episode_return for r in train]


def test_sealed_episodes_are_charged_their_own_wall_time_not_their_neighbours(tmp_path):
    # 12 episodes in lock step: a round takes about 12 act calls, but each episode is charged
    # only its own (100 steps x 2 ms = 0.2 s, under the 0.6 s limit), as when it plays alone.
    # Episode 3 takes 12 ms a step: it reaches the limit by itself, about step 50.
    cartpole = get_env("gym/cartpole")
    write_policy(tmp_path / "ck", SLOW_ON_EPISODE_3)
    job = job_from_dir(tmp_path / "ck", cartpole, {})
    tasks = [EpisodeTask(i, 700 + i, i) for i in range(12)]
    limits = LimitsSection(rollout_wall_s=0.6)
    pool = WorkerPool(cartpole.model_dump(), 1, limits, None, plan=PROCESS)
    try:
        results = pool.run(job, tasks, record=False, sealed=True, max_steps=100)
    finally:
        pool.close()
    assert [r.error.category if r.error else None for r in results] == [
        "episode_timeout" if i == 3 else None for i in range(12)
    ]
    assert [r.length for r in results if r.error is None] == [100] * 11
    assert 25 <= results[3].length <= 55, results[3].length


MISREPORTS_ITS_TIME = """
    import time
    from evopolicygym.rollout import _sealed
    honest = _sealed.Acted
    def claims(actions, errors, seconds, block=None):
        return honest(actions, errors, [CLAIM] * len(seconds), block)
    _sealed.Acted = claims
    class Policy:
        def __init__(self, *args): pass
        def reset(self, i): pass
        def act(self, obs):
            time.sleep(0.01)
            return 1 if obs[2] + 0.5 * obs[3] > 0 else 0
"""


@pytest.mark.parametrize("claim", ["0.0", "float('nan')", "-1e9", "1e9"])
def test_a_policy_process_that_misreports_its_time_is_still_charged(tmp_path, claim):
    # Whatever it says its calls took, each episode is charged at least an even share of every
    # round (2 x 10 ms per step for 2 episodes), so both reach the 0.6 s limit near step 60.
    cartpole = get_env("gym/cartpole")
    write_policy(tmp_path / "ck", MISREPORTS_ITS_TIME.replace("CLAIM", claim))
    job = job_from_dir(tmp_path / "ck", cartpole, {})
    tasks = [EpisodeTask(i, 700 + i, i) for i in range(2)]
    pool = WorkerPool(
        cartpole.model_dump(), 1, LimitsSection(rollout_wall_s=0.6), None, plan=PROCESS
    )
    try:
        results = pool.run(job, tasks, record=False, sealed=True, max_steps=200)
    finally:
        pool.close()
    assert [r.error.category if r.error else None for r in results] == ["episode_timeout"] * 2
    assert all(40 <= r.length <= 62 for r in results), [r.length for r in results]


def test_sealed_init_failures_keep_their_verdict(tmp_path):
    outcome = run(tmp_path, "raise ImportError('nope')\nclass Policy: pass\n", sealed=True)
    assert isinstance(outcome, InitFailure) and outcome.verdict == "import_error"
    assert "ImportError: nope" in outcome.message


def test_sealed_workers_serve_the_next_checkpoint_without_restarting(tmp_path):
    pool = WorkerPool(TOY.model_dump(), 2, LimitsSection(), tmp_path / "workers.log", plan=PROCESS)
    try:
        returns = {}
        for action in (0, 2):
            checkpoint = tmp_path / f"ck{action}"
            write_policy(
                checkpoint,
                f"""
                import os
                class Policy:
                    def __init__(self, *args):
                        open("{tmp_path}/parent-{action}-" + str(os.getpid()), "w").write(str(os.getppid()))
                    def reset(self, i): pass
                    def act(self, obs): return {action}
            """,
            )
            job = job_from_dir(checkpoint, TOY, {"env": "toy"})
            tasks = [EpisodeTask(i, 100 + i, i) for i in range(4)]
            results = pool.run(job, tasks, record=False, sealed=True, max_steps=1)
            returns[action] = [r.episode_return for r in results]
    finally:
        pool.close()
    assert returns == {a: [(100 + i) % 8 + float(a) for i in range(4)] for a in (0, 2)}
    parents = {a: {p.read_text() for p in tmp_path.glob(f"parent-{a}-*")} for a in (0, 2)}
    assert len(parents[0]) == 2 and parents[0] == parents[2]


def _evaluate(tmp_path: Path, sources: list[str], jobs: int, n: int = 2, **callbacks):
    """Hidden evaluation of one checkpoint per source (toy episodes of one step)."""
    pool = WorkerPool(TOY.model_dump(), jobs, LimitsSection(), tmp_path / "w.log", plan=PROCESS)
    try:
        checkpoints = []
        for number, source in enumerate(sources):
            write_policy(tmp_path / f"ck{number}", source)
            job = job_from_dir(tmp_path / f"ck{number}", TOY, {"env": "toy"})
            checkpoints.append((job, [EpisodeTask(i, 100 + i, i) for i in range(n)]))
        return pool.evaluate(checkpoints, max_steps=1, **callbacks)
    finally:
        pool.close()


def test_a_lane_validates_its_share_of_the_next_checkpoint_without_waiting_for_the_others(
    tmp_path,
):
    # Episode 0 of the first checkpoint (lane 0's share) takes a second; lane 1 goes on to
    # the second checkpoint meanwhile, and that checkpoint's outcome waits only for lane 0.
    slow_first = """
        import time
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i):
                if i == 0: time.sleep(1.0)
            def act(self, obs): return 1
    """
    fast = """
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs): return 2
    """
    ended, settled = [], []
    outcomes = _evaluate(
        tmp_path,
        [slow_first, fast],
        jobs=2,
        on_episode=lambda number, result: ended.append((number, result.index)),
        on_outcome=lambda number, outcome: settled.append((number, threading.current_thread())),
    )
    assert ended.index((1, 1)) < ended.index((0, 0))
    # Outcomes are reported by the calling thread (the judge journals them there).
    assert settled == [(0, threading.current_thread()), (1, threading.current_thread())]
    assert [[r.episode_return for r in outcome] for outcome in outcomes] == [
        [(100 + i) % 8 + float(action) for i in range(2)] for action in (1, 2)
    ]


def test_a_checkpoint_that_cannot_start_fails_alone(tmp_path):
    good = """
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs): return 0
    """
    settled = {}
    broken, played, again = _evaluate(
        tmp_path,
        ["raise ImportError('nope')\nclass Policy: pass\n", good, good],
        jobs=2,
        n=3,
        on_outcome=lambda number, outcome: settled.setdefault(number, outcome),
    )
    assert isinstance(broken, InitFailure) and broken.verdict == Verdict.IMPORT_ERROR
    assert [r.episode_return for r in played] == [(100 + i) % 8 for i in range(3)]
    assert [r.episode_return for r in again] == [r.episode_return for r in played]
    assert settled == {0: broken, 1: played, 2: again}


def _children(pid: int) -> list[int]:
    listed = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True
    )
    return [int(line) for line in listed.stdout.split()]


def _descendants(pid: int) -> list[int]:
    found = _children(pid)
    return found + [grandchild for child in found for grandchild in _descendants(child)]


def _gone(pid: int) -> bool:
    stat = subprocess.run(["ps", "-p", str(pid), "-o", "stat="], capture_output=True, text=True)
    return stat.stdout.strip() in ("", "Z")


def test_workers_die_with_the_judge_even_mid_episode(tmp_path):
    # A judge process killed with SIGKILL cannot stop its workers: each lane host sees its
    # channel close and kills its workers, whose zygotes and policy processes follow them.
    marker = tmp_path / "acting"
    write_policy(
        tmp_path / "ck",
        f"""
        import os, time
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                open("{marker}", "a").write(f"{{os.getpid()}} ")
                time.sleep(60)
                return 0
    """,
    )
    judge = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parents[1])!r})
from pathlib import Path
from evopolicygym.envs import get_env
from evopolicygym.protocol import LimitsSection, Verdict
from evopolicygym.rollout import EpisodeTask, WorkerPool
from evopolicygym.sandbox import probe
from support import job_from_dir
toy = get_env("toy")
pool = WorkerPool(toy.model_dump(), 2, LimitsSection(act_timeout_s=120), None, plan=probe("process"))
job = job_from_dir(Path({str(tmp_path / "ck")!r}), toy, {{}})
pool.run(job, [EpisodeTask(0, 1, 0), EpisodeTask(1, 2, 1)], record=True, sealed=True, max_steps=1)
"""
    process = subprocess.Popen([sys.executable, "-c", judge])
    deadline = time.monotonic() + 120
    while (
        not marker.exists() or len(marker.read_text().split()) < 2
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    policies = [int(pid) for pid in marker.read_text().split()]
    hosts = _children(process.pid)
    assert len(hosts) == 2 and len(policies) == 2 and not set(policies) & set(hosts)
    workers = hosts + [pid for host in hosts for pid in _descendants(host)]
    assert set(policies) <= set(workers)
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [pid for pid in workers if not _gone(pid)]
    for pid in survivors:
        os.killpg(pid, 9)
    assert not survivors, "workers outlived their judge"


RANDOM_AND_GLOBAL_STATE = """
    import random

    import numpy as np

    STEPS = 0  # module state reset with every episode (one module per instance when sealed)


    class Policy:
        def __init__(self, *args):
            pass

        def reset(self, i):
            global STEPS
            STEPS = 0

        def act(self, obs):
            global STEPS
            STEPS += 1
            draw = random.random() + float(np.random.rand()) + np.random.randint(0, 3)
            lean = obs[2] + 0.5 * obs[3] > 0
            return int(lean) if (draw * 10 + STEPS) % 3 < 1 else int(draw * 100) % 2
"""


def train_then_sealed(
    tmp_path, env_id: str, source: str, seeds: list[int], max_steps: int, record: bool = False
):
    """``(train results, sealed results)`` of ``source`` on one worker of ``env_id``: the same
    episodes played one after the other (recorded if ``record``), then in lock step."""
    spec = get_env(env_id)
    write_policy(tmp_path / "ck", source)
    job = job_from_dir(tmp_path / "ck", spec, {})
    tasks = [EpisodeTask(i, seed, i) for i, seed in enumerate(seeds)]
    pool = WorkerPool(spec.model_dump(), 1, LimitsSection(), None, plan=PROCESS)
    try:
        train = pool.run(job, tasks, record=record, max_steps=max_steps)
        sealed = pool.run(job, tasks, record=False, sealed=True, max_steps=max_steps)
    finally:
        pool.close()
    return train, sealed


def assert_sealed_replays_train(train: list, sealed: list) -> None:
    """Every sealed episode ran without error and returned what its train episode returned;
    the episodes all differ, so that equal returns say something."""
    assert [r.error for r in sealed] == [None] * len(train)
    assert [r.episode_return for r in sealed] == [r.episode_return for r in train]
    assert len({r.episode_return for r in train}) == len(train)


def test_lock_step_hidden_evaluation_gives_what_one_episode_at_a_time_gives(tmp_path):
    # Sealed evaluation plays 12 episodes side by side on one worker; each slot has its own
    # module globals and random streams, so every return equals the train worker's, which
    # plays them one after the other in one process.
    seeds = [500 + i for i in range(12)]
    sequential, side_by_side = train_then_sealed(
        tmp_path, "gym/cartpole", RANDOM_AND_GLOBAL_STATE, seeds, 200
    )
    assert [r.error for r in side_by_side] == [None] * len(seeds)
    assert [r.episode_return for r in side_by_side] == [r.episode_return for r in sequential]
    assert len({r.episode_return for r in sequential}) > 3  # the episodes do differ


HOLDS_EVERY_PROCESS_SLOT = """
import threading, time
class Policy:
    def __init__(self, *args):  # holds every task the lane's cap allows, for two seconds
        try:
            while True:
                threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
        except RuntimeError:
            pass
    def reset(self, i): pass
    def act(self, obs): return 2
"""


@pytest.mark.skipif(PROCESS.process_cap == "none", reason="no process cap here")
def test_a_full_process_cap_delays_the_next_worker_and_keeps_the_lane(tmp_path):
    # The judge starts the next worker once a checkpoint has loaded. While this policy held
    # every slot of the lane's process cap, the lane host's fork failed and the host died,
    # taking every worker of the lane with it; now it says it could not fork, keeps serving,
    # and the judge asks again after a pause.
    pool = WorkerPool(
        TOY.model_dump(), 1, LimitsSection(max_processes=48), tmp_path / "w.log", plan=PROCESS
    )
    try:
        tasks = [EpisodeTask(0, 100, 0)]
        for name, source in (("holder", HOLDS_EVERY_PROCESS_SLOT), ("honest", constant_policy(2))):
            write_policy(tmp_path / name, source)
        holder = job_from_dir(tmp_path / "holder", TOY, {"env": "toy"})
        held = pool.run(holder, tasks, record=True, max_steps=1)
        host = pool.lanes[0].host
        time.sleep(0.5)  # the next worker's first fork fails meanwhile
        honest = job_from_dir(tmp_path / "honest", TOY, {"env": "toy"})
        played = pool.run(honest, tasks, record=True, max_steps=1)
        assert [r.error for r in held + played] == [None, None]
        assert played[0].episode_return == 100 % 8 + 2.0
        assert pool.lanes[0].host is host and host.alive
    finally:
        pool.close()
    assert "Traceback" not in (tmp_path / "w.log").read_text()


def _kill_the_workers(pool: WorkerPool) -> None:
    """SIGKILL every worker of the pool's one lane (at `process` level, its host's children)
    and wait until the host has reaped them."""
    host = pool.lanes[0].host.process.pid
    children = Path(f"/proc/{host}/task/{host}/children")
    for pid in children.read_text().split():
        os.kill(int(pid), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while children.read_text().split() and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("sealed", [False, True], ids=["train", "sealed"])
def test_a_worker_found_dead_before_its_checkpoint_arrives_is_replaced(tmp_path, sealed):
    # A waiting worker can die of what no checkpoint did (the machine's OOM killer, a process
    # cap filled by the policy before). Its death was the next checkpoint's verdict: an honest
    # submit was charged `oom`, and an honest checkpoint failed its hidden evaluation.
    write_policy(tmp_path / "ck", constant_policy(2))
    job = job_from_dir(tmp_path / "ck", TOY, {"env": "toy"})
    pool = WorkerPool(TOY.model_dump(), 1, LimitsSection(), tmp_path / "w.log", plan=PROCESS)
    try:
        pool.prewarm()
        if sealed:
            pool.prepare_hidden()
            deadline = time.monotonic() + 30
            while pool.lanes[0].sealed is None and time.monotonic() < deadline:
                time.sleep(0.01)
        _kill_the_workers(pool)
        played = pool.run(
            job, [EpisodeTask(0, 100, 0)], record=not sealed, sealed=sealed, max_steps=1
        )
    finally:
        pool.close()
    assert [(r.error, r.episode_return) for r in played] == [(None, 100 % 8 + 2.0)]
    kind = "sealed" if sealed else "train"
    assert (
        f"[pool] lane 0: a {kind} worker was found dead before a checkpoint"
        in (tmp_path / "w.log").read_text()
    )


KILLS_ITS_SEALED_WORKER = """
import os, signal
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 2 and not os.path.exists({flag!r}):
            if {once}:
                open({flag!r}, "w").close()
            zygote = os.getppid()  # its parent is the sealed worker
            with open(f"/proc/{{zygote}}/stat") as stat:
                worker = int(stat.read().rsplit(")", 1)[1].split()[1])
            os.kill(worker, signal.SIGKILL)
        return 2
"""


@pytest.mark.parametrize("once", [True, False], ids=["once", "every_time"])
def test_a_sealed_worker_that_dies_mid_round_is_replaced_once(tmp_path, once):
    # A sealed worker runs no policy code, so its death (the machine's OOM killer; here a
    # policy at `process` level, which can reach it) must not fail an honest checkpoint's
    # hidden episodes: the unfinished ones play again on a new worker. A second death fails
    # them, as before.
    source = KILLS_ITS_SEALED_WORKER.format(flag=str(tmp_path / "killed"), once=once)
    results = run(tmp_path, source, n=4, sealed=True)
    log = (tmp_path / "workers.log").read_text()
    assert "[pool] lane 0: its sealed worker died (the sealed worker was killed by SIGKILL" in log
    assert "4 unfinished episodes play again on a new one" in log
    if once:
        assert [(r.error, r.episode_return) for r in results] == [
            (None, (100 + i) % 8 + 2.0) for i in range(4)
        ]
    else:
        assert {r.error.category for r in results} == {"oom"}
        assert {r.error.message for r in results} == {
            "the sealed worker was killed by SIGKILL (oom)"
        }


RANDOM_POLICY = (
    importlib.resources.files("evopolicygym.agents.builtin") / "policy_random.py"
).read_text()
ATARI = pytest.mark.skipif(
    importlib.util.find_spec("ale_py") is None, reason="the atari extra is not installed"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "env_id",
    [
        "gym/pendulum",  # Box actions: a round's actions travel as one float block
        "gym/blackjack",  # Tuple observations
        "gym/racing",  # image observations: one raw block per round
        "gym/humanoid5",  # MuJoCo siblings sharing one model; episodes of unequal length
        "gymnasium/FetchPush-v4",  # Dict observations
        "gymnasium/MiniGrid-DoorKey-16x16-v0",  # Dict with an image and a text mission
        "gymnasium/parking-v0",  # HighwayEnv
        pytest.param("gym/pong", marks=ATARI),
    ],
)
def test_hidden_evaluation_replays_train_in_every_family(tmp_path, env_id):
    # The built-in random policy replays its actions from the episode index: four episodes in
    # lock step give exactly what a train worker gives one after the other, whatever the
    # family's observations, actions and worlds are.
    train, sealed = train_then_sealed(tmp_path, env_id, RANDOM_POLICY, [11, 12, 13, 14], 60)
    assert [r.error for r in train] == [None] * 4
    assert [(r.error, r.episode_return, r.length) for r in sealed] == [
        (r.error, r.episode_return, r.length) for r in train
    ]


@needs_web
@pytest.mark.slow
def test_hidden_evaluation_runs_a_web_env_as_train_does(tmp_path):
    # A sealed worker's browser driver is the environment's: sweeping the policy's processes
    # at a checkpoint's load killed it, and the next page waited for it forever. Its pages fit
    # the lane's process cap beside the policy's (the envspec's helper_tasks and hidden_slots):
    # a second page in lock step had Chromium's renderers fail to start threads, and hang too.
    train, sealed = train_then_sealed(
        tmp_path, "browsergym/miniwob.click-button", CLICK_BUTTON_SOLVER, [1, 2, 3], 10
    )
    assert [r.error for r in train] == [None] * 3
    assert [r.episode_return for r in train] == [1.0] * 3  # the solver clicks the right button
    assert [(r.error, r.episode_return, r.length) for r in sealed] == [
        (r.error, r.episode_return, r.length) for r in train
    ]


WOBBLY = """
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): pass
    def act(self, obs):
        return 1 if obs[2] + 0.05 * obs[3] > 0.03 else 0
"""


def test_train_and_sealed_returns_equal_a_plain_gymnasium_loop(tmp_path):
    # A warm train worker rehearses a few random steps before its checkpoint arrives, and a
    # sealed worker reuses its worlds: neither may change what an episode gives.
    import gymnasium

    cartpole = get_env("gym/cartpole")
    namespace: dict = {}
    exec(WOBBLY, namespace)
    policy = namespace["Policy"]()
    env = gymnasium.make(cartpole.upstream, **cartpole.kwargs)
    seeds = [900 + 37 * i for i in range(8)]
    plain = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total = 0.0
        for _ in range(300):
            obs, reward, terminated, truncated, _ = env.step(policy.act(obs.tolist()))
            total += reward
            if terminated or truncated:
                break
        plain.append(total)
    train, sealed = train_then_sealed(tmp_path, "gym/cartpole", WOBBLY, seeds, 300, record=True)
    assert [r.episode_return for r in train] == plain
    assert [r.episode_return for r in sealed] == plain
    assert len(set(plain)) > 3  # the episodes do differ


@pytest.mark.parametrize("sealed", [False, True], ids=["train", "sealed"])
def test_the_file_size_limit_binds_policy_writes_not_checkpoint_files(tmp_path, sealed):
    # Policy processes are hardened before their checkpoint arrives; its files are written
    # before the file size limit is lowered.
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "weights.bin").write_bytes(b"w" * 2 * 2**20)
    results = run(
        tmp_path,
        """
        import os
        class Policy:
            def __init__(self, *args): self.size = os.path.getsize("weights.bin")
            def reset(self, i): self.i = i
            def act(self, obs):
                if self.i == 0:
                    open("copy.bin", "wb").write(b"x" * self.size)
                return 2
    """,
        n=2,
        sealed=sealed,
        record=not sealed,
        file_size_bytes=2**20,
    )
    assert not isinstance(results, InitFailure), results
    assert results[0].error.category == "file_size_limit"
    assert "File too large" in results[0].error.message
    assert results[1].error is None


def test_lane_hosts_find_and_import_the_simulator_so_the_judge_does_not(tmp_path):
    # The judge learns which modules an environment needs from the lane host (inside the
    # sandbox, in parallel): it never imports the simulator itself to start a lane.
    script = """
import json, sys
from evopolicygym.envs import get_env
from evopolicygym.protocol import LimitsSection, Verdict
from evopolicygym.rollout import WorkerPool
from evopolicygym.sandbox import probe
pool = WorkerPool(get_env("gym/cartpole").model_dump(), 1, LimitsSection(), plan=probe("process"))
try:
    pool.prewarm()
    files = pool.module_files()
finally:
    pool.close()
print(json.dumps({"judge_imported": "gymnasium" in sys.modules, "host": files}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["judge_imported"] is False
    assert any(path.endswith("classic_control/cartpole.py") for path in seen["host"])


def test_a_lane_host_imports_only_what_its_environment_needs(tmp_path):
    # The toy environment needs no simulator: its lane host imports no Gymnasium (a Gymnasium
    # environment's adapter brings it in; see the test above).
    pool = WorkerPool(TOY.model_dump(), 1, LimitsSection(), None, plan=PROCESS)
    try:
        pool.prewarm()
        files = pool.module_files()
    finally:
        pool.close()
    assert any(path.endswith("evopolicygym/envs/toy.py") for path in files)
    assert not [path for path in files if "/gymnasium/" in path]


PIXEL_DRIVER = """
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): pass
    def act(self, obs):
        assert type(obs[0][0][0]) is int  # the list form of a uint8 image, as in train episodes
        green = sum(pixel[1] for row in obs[60:70] for pixel in row[40:56])
        return [0.5 if green % 3 else -0.5, 0.2, 0.0]
"""


def test_sealed_evaluation_gives_image_observations_exactly_as_train_episodes_do(tmp_path):
    # A round's images travel as one block of bytes; the policy must see the same nested lists
    # of ints as in a train episode, so every return is the same.
    train, sealed = train_then_sealed(tmp_path, "gym/racing", PIXEL_DRIVER, [40, 41, 42], 60)
    assert [r.error for r in train] == [None] * 3
    assert [r.episode_return for r in sealed] == [r.episode_return for r in train]
    assert len({r.episode_return for r in train}) == 3


MIXED_ACTIONS = """
import math
import numpy as np
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i, self.t = i, 0
    def act(self, obs):
        self.t += 1
        torque = 3.0 * math.sin(self.t / 7 + self.i)  # beyond the bounds [-2, 2] at times
        if self.i == 3 and self.t % 50 == 0:
            return [float("nan")]
        if self.i == 5 and self.t % 40 == 0:
            return [1]  # an int: that round's actions travel as lists
        if self.i == 7 and self.t % 30 == 0:
            return np.array([torque])
        return [torque]
"""


CHEETAH = """
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): pass
    def act(self, obs):
        return [max(-1.0, min(1.0, 3.0 * value)) for value in obs[2:8]]
"""


def test_sealed_mujoco_slots_sharing_one_model_give_what_train_episodes_give(tmp_path):
    # The sealed worker's further slots share the first world's compiled MuJoCo model, each
    # with simulation data of its own: interleaved episodes stay those played alone.
    seeds = [40 + i for i in range(6)]
    train, sealed = train_then_sealed(tmp_path, "gym/halfcheetah5", CHEETAH, seeds, 120)
    assert_sealed_replays_train(train, sealed)


def test_sealed_float_actions_travel_as_one_block_and_step_as_they_do_in_train(tmp_path):
    # Lists of floats (most rounds) arrive as one float64 block, coerced together; other
    # rounds as lists. In range, clipped, NaN: every episode gives what the train worker gives.
    seeds = [700 + i for i in range(10)]
    train, sealed = train_then_sealed(tmp_path, "gym/pendulum", MIXED_ACTIONS, seeds, 200)
    assert_sealed_replays_train(train, sealed)


FORGED_BLOCK = """
import struct
import msgspec
from evopolicygym.protocol import Acted, ArrayBlock
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): pass
    def act(self, obs):
        # A reply written straight to the channel: a block whose bytes do not fill its shape.
        body = msgspec.msgpack.encode(Acted([], [], [0.0], ArrayBlock("<f8", [1, 3], b"x" * 8)))
        with open(3, "wb", closefd=False) as channel:
            channel.write(struct.pack(">I", len(body)) + body)
        return [0.0]
"""


def sealed_only(tmp_path, env_id: str, source: str, seeds: list[int], max_steps: int):
    """The sealed (lock-step) results of ``source`` on one worker of ``env_id``."""
    spec = get_env(env_id)
    write_policy(tmp_path / "ck", source)
    job = job_from_dir(tmp_path / "ck", spec, {})
    tasks = [EpisodeTask(i, seed, i) for i, seed in enumerate(seeds)]
    pool = WorkerPool(spec.model_dump(), 1, LimitsSection(), None, plan=PROCESS)
    try:
        return pool.run(job, tasks, record=False, sealed=True, max_steps=max_steps)
    finally:
        pool.close()


def test_a_forged_action_block_is_refused_and_the_episodes_fail_as_crashes(tmp_path):
    results = sealed_only(tmp_path, "gym/pendulum", FORGED_BLOCK, [40, 41, 42], 20)
    assert [r.error.category for r in results] == ["worker_crash"] * 3
    assert all("answered out of turn" in r.error.message for r in results)


LEAVES_A_CHILD = """
import builtins, subprocess
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i, self.t = i, 0
    def act(self, obs):
        self.t += 1
        if self.i == 0:  # starts a process, then lets the pole fall within a few steps
            if self.t == 1:
                builtins.LEFT_BEHIND = subprocess.Popen(["sleep", "300"])
            return 0
        child = getattr(builtins, "LEFT_BEHIND", None)
        if child is not None and child.poll() is not None and not hasattr(builtins, "SEEN"):
            builtins.SEEN = self.t
            open("SEEN_PATH", "w").write(str(self.t))
        return 1 if obs[2] + 0.5 * obs[3] > 0 else 0
"""


def test_what_a_sealed_episode_started_is_gone_before_the_policys_next_call(tmp_path):
    # Episode 0 starts a process and ends after a few steps; episode 1, in the next slot of the
    # same policy process, finds that process gone at its very next call.
    seen = tmp_path / "seen.txt"
    source = LEAVES_A_CHILD.replace("SEEN_PATH", str(seen))
    results = sealed_only(tmp_path, "gym/cartpole", source, [60, 61], 200)
    assert [r.error for r in results] == [None, None]
    first, second = results
    assert first.length < 30 < second.length
    assert int(seen.read_text()) == first.length + 1


@pytest.fixture
def own_cpu_claims(tmp_path, monkeypatch):
    """Pools claim CPUs in a directory of the test's own: a run elsewhere on the machine that
    holds a claim (another test session) would leave these pools without a CPU to claim."""
    monkeypatch.setattr(cpus_module, "claims_directory", lambda: tmp_path / "claims")


@pytest.mark.parametrize("sealed", [False, True], ids=["train", "sealed"])
def test_a_lanes_policy_plays_on_the_cpu_its_pool_claimed(tmp_path, own_cpu_claims, sealed):
    seen = tmp_path / "cpus.txt"
    write_policy(
        tmp_path / "ck",
        f"""
        import os
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                with open({str(seen)!r}, "a") as out:
                    out.write(f"{{sorted(os.sched_getaffinity(0))}}\\n")
                return 0
        """,
    )
    pool = WorkerPool(TOY.model_dump(), 1, LimitsSection(), tmp_path / "w.log", plan=PROCESS)
    try:
        (core,) = pool.lane_cpus
        job = job_from_dir(tmp_path / "ck", TOY, {"env": "toy"})
        tasks = [EpisodeTask(i, 100 + i, i) for i in range(2)]
        pool.run(job, tasks, record=not sealed, sealed=sealed, max_steps=1)
    finally:
        pool.close()
    assert seen.read_text() == f"[{core}]\n" * 2
    assert not pool.lane_cpus  # released with the pool


def _allowed_cpus(pid: int | str) -> set[int]:
    """The CPUs process ``pid`` may run on (its ``Cpus_allowed_list``, e.g. ``0-2,5``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    listed = re.search(r"^Cpus_allowed_list:\s*(\S+)$", status, re.M).group(1)
    cpus = set()
    for part in listed.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def test_a_warm_worker_waits_on_its_lanes_cpu_and_workers_boot_on_the_others(
    tmp_path, own_cpu_claims
):
    pool = WorkerPool(TOY.model_dump(), 1, LimitsSection(), tmp_path / "w.log", plan=PROCESS)
    try:
        pool.prewarm()
        (core,) = pool.lane_cpus
        assert pool.boot_cpus == (sorted(os.sched_getaffinity(0) - {core}) or None)
        host = pool.lanes[0].host.process.pid  # `process`: no pid namespace
        # The host forks workers while lanes play: once up, it stays off their CPUs too.
        assert _allowed_cpus(host) == set(pool.boot_cpus or os.sched_getaffinity(0))
        (worker,) = Path(f"/proc/{host}/task/{host}/children").read_text().split()
        allowed = []
        deadline = time.monotonic() + 30
        while {core} not in allowed and time.monotonic() < deadline:  # until it is warm
            allowed.append(_allowed_cpus(worker))
            time.sleep(0.001)
        assert allowed[-1] == {core}
    finally:
        pool.close()


@pytest.mark.parametrize(
    "source", [constant_policy(1), "import no_such_module_here\n"], ids=["plays", "fails_to_load"]
)
def test_a_replacement_train_worker_starts_once_the_checkpoint_has_loaded(
    tmp_path, monkeypatch, source
):
    # The next submit finds a warm worker whether this checkpoint played or failed to load;
    # the replacement is spawned after the load answered (spawning it during the load delayed
    # the judge's reading of the answer).
    events = []
    load, prewarm = pool_module._Worker.load, pool_module._Lane.prewarm

    def timed_load(worker, job):
        reply = load(worker, job)
        events.append(("loaded", worker))
        return reply

    def timed_prewarm(lane):
        events.append(("prewarm", None))
        prewarm(lane)

    monkeypatch.setattr(pool_module._Worker, "load", timed_load)
    monkeypatch.setattr(pool_module._Lane, "prewarm", timed_prewarm)
    write_policy(tmp_path / "ck", source)
    pool = WorkerPool(TOY.model_dump(), 1, LimitsSection(), tmp_path / "w.log", plan=PROCESS)
    try:
        pool.prewarm()
        first = pool.lanes[0].warm
        events.clear()
        job = job_from_dir(tmp_path / "ck", TOY, {"env": "toy"})
        pool.run(job, [EpisodeTask(0, 100, 0)], record=True, max_steps=1)
        deadline = time.monotonic() + 30
        while pool.lanes[0].warm is None and time.monotonic() < deadline:
            time.sleep(0.01)
        replacement = pool.lanes[0].warm
    finally:
        pool.close()
    assert events[:2] == [("loaded", first), ("prewarm", None)]
    assert replacement is not None and replacement is not first


# Writes a file into the temporary directory it is given (train: the worker's; sealed: its own
# scratch directory, the parent of its checkpoint's).
LEAVES_BALLAST = """
import os, tempfile
class Policy:
    def __init__(self, *args):
        here = tempfile.gettempdir() if SEALED is False else os.path.dirname(os.getcwd())
        open(os.path.join(here, f"ballast-{os.getpid()}"), "wb").write(b"x" * 2**20)
    def reset(self, i): pass
    def act(self, obs): return 2
"""


def _ballast(pool: WorkerPool) -> list[Path]:
    return sorted(pool.lanes[0].host.scratch.rglob("ballast-*"))


@pytest.mark.parametrize("sealed", [False, True], ids=["train", "sealed"])
def test_what_a_checkpoint_wrote_is_removed_when_its_process_ends(tmp_path, sealed):
    # A lane's temporary space (a 1 GiB tmpfs at `namespaced`) is shared by every process the
    # lane starts: left behind, a few large checkpoints filled it and later ones failed to load.
    write_policy(tmp_path / "ck", LEAVES_BALLAST.replace("SEALED", str(sealed)))
    pool = WorkerPool(TOY.model_dump(), 1, LimitsSection(), tmp_path / "w.log", plan=PROCESS)
    try:
        job = job_from_dir(tmp_path / "ck", TOY, {"env": "toy"})
        for submit in range(3):
            tasks = [EpisodeTask(i, 100 + i, i) for i in range(2)]
            results = pool.run(job, tasks, record=not sealed, sealed=sealed, max_steps=1)
            assert [r.error for r in results] == [None, None], submit
        # The last checkpoint's process may still run (a sealed one until the next checkpoint):
        # every earlier one's file is gone once it has ended.
        deadline = time.monotonic() + 10
        while len(_ballast(pool)) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_ballast(pool)) <= 1
    finally:
        pool.close()
