"""Hostile (and some merely careless) policies against the sealed lock-step evaluation, the
worker channels and the scoring rules, with real worker processes.

Every test asserts what the harness promises (docs/SECURITY.md, docs/protocol/). A test marked
``xfail`` is a known gap, named in its reason; the mark is strict, so that closing the gap fails
the test until the mark goes. What tests/security/test_attacks.py and tests/rollout/test_pool.py
already cover is not repeated here.
"""

from __future__ import annotations

import ctypes
import json
import os
import time
from pathlib import Path

import pytest

from evopolicygym.cases import generate_splits
from evopolicygym.envs import get_env
from evopolicygym.judge import Judge, JudgeSettings, Ledger, feedback
from evopolicygym.protocol import LimitsSection
from evopolicygym.rollout import EpisodeTask, WorkerPool
from evopolicygym.run_session import EventLog, RunPaths
from evopolicygym.sandbox import probe
from support import available_levels, job_from_dir, write_policy

PROCESS = probe("process")


def play(
    tmp_path: Path,
    source: str,
    *,
    n: int = 3,
    sealed: bool = False,
    env: str = "toy",
    max_steps: int = 1,
    level: str = "process",
    **limits,
):
    """Episodes ``0..n-1`` (case seeds ``100 + i``) of ``source`` on a fresh one-lane pool."""
    spec = get_env(env)
    write_policy(tmp_path / "ck", source)
    pool = WorkerPool(
        spec.model_dump(), 1, LimitsSection(**limits), tmp_path / "w.log", plan=probe(level)
    )
    try:
        job = job_from_dir(tmp_path / "ck", spec, {"env": env})
        tasks = [EpisodeTask(i, 100 + i, i) for i in range(n)]
        return pool.run(job, tasks, record=not sealed, sealed=sealed, max_steps=max_steps)
    finally:
        pool.close()


def returns(results) -> list[float]:
    return [r.episode_return for r in results]


# -- messages a policy writes straight to its channel ----------------------------------------------

# A frame whose body is valid MessagePack nested deeper than the decoder's recursion limit, put
# where the message type allows any value (an observation of a recorded step, an action).
TOO_DEEP = 'b"\\x91" * 200000 + b"\\xc0"'

# Policy code that finds its train worker's channel to the judge (the worker's local variable).
FINDS_ITS_CHANNEL = """
import struct, sys
import msgspec

def judge_channel():
    frame = sys._getframe()
    while "channel" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals["channel"]

def send_to_judge(message):
    body = msgspec.msgpack.encode(message)
    judge_channel().sock.sendall(struct.pack(">I", len(body)) + body)
"""

DEEP_EPISODE_RESULT = f"""{FINDS_ITS_CHANNEL}
from evopolicygym.protocol import EpisodeDone, Steps

class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:
            steps = Steps(["HOLE"], [0], [0.0], [True], [False], [{{}}])
            body = msgspec.msgpack.encode(EpisodeDone(index=0, episode_return=0.0, length=1, steps=steps))
            body = body.replace(msgspec.msgpack.encode("HOLE"), {TOO_DEEP})
            judge_channel().sock.sendall(struct.pack(">I", len(body)) + body)
        return 2
"""


def test_a_train_reply_nested_too_deep_to_decode_is_refused_not_a_judge_failure(tmp_path):
    # Promise (_framing.py, SECURITY.md): the judge reads anything a worker sends as data and
    # refuses what is malformed; a broken worker costs its episode, never the submit. A frame
    # nested deeper than the decoder goes is malformed like any other (its RecursionError once
    # killed the lane thread: the submit answered 500 and was never charged).
    results = play(tmp_path, DEEP_EPISODE_RESULT, n=3)
    assert [r.error.category if r.error else None for r in results] == ["worker_crash", None, None]
    assert returns(results)[1:] == [101 % 8 + 2.0, 102 % 8 + 2.0]


DEEP_ACTED = f"""
import struct
import msgspec
from evopolicygym.protocol import Acted

class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:
            body = msgspec.msgpack.encode(Acted(["HOLE"], [], [0.0]))
            body = body.replace(msgspec.msgpack.encode("HOLE"), {TOO_DEEP})
            with open(3, "wb", closefd=False) as channel:
                channel.write(struct.pack(">I", len(body)) + body)
        return 2
"""


def test_a_sealed_reply_nested_too_deep_to_decode_fails_only_the_slot_that_sent_it(tmp_path):
    # Promise (seeds-and-isolation.md): the sealed worker reads the policy's messages as data
    # only; when the policy process misbehaves, the episode whose call was running gets the
    # error and the others start again on a fresh policy process (a RecursionError in the
    # decoder once killed the sealed worker: every episode of its share was a worker_crash).
    results = play(tmp_path, DEEP_ACTED, n=4, sealed=True)
    assert results[0].error is not None
    assert [r.error for r in results[1:]] == [None, None, None]
    assert returns(results)[1:] == [(100 + i) % 8 + 2.0 for i in (1, 2, 3)]


OVERSIZED_EPISODE_RESULT = f"""{FINDS_ITS_CHANNEL}
from evopolicygym.protocol import EpisodeDone

class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:  # well formed, and 64 MiB longer than any toy episode's result
            send_to_judge(EpisodeDone(index=0, episode_return=99.0, length=1, stdout="x" * 2**26))
        return 2
"""


@pytest.mark.parametrize("level", available_levels("namespaced", "basic", "process"))
def test_a_train_frame_longer_than_the_runs_episodes_need_is_refused(tmp_path, level):
    # Promise (SECURITY.md): policy code must not make the judge hold what the run does not
    # need. It can write to its train worker's channel, whose frames the judge capped at 1 GiB
    # only (then decoded into several times that): it now refuses, before reading its body,
    # a frame longer than a recorded episode of the run's spaces and step cap can be (toy:
    # about 16 MiB). The episode is a worker_crash naming the cap; the others play.
    results = play(tmp_path, OVERSIZED_EPISODE_RESULT, n=3, level=level)
    error = results[0].error
    assert error is not None and error.category == "worker_crash", error
    assert "exceeds the" in error.message and "-byte cap" in error.message
    assert returns(results) == [0.0, 101 % 8 + 2.0, 102 % 8 + 2.0]


WRITES_GARBAGE_AND_PLAYS_ON = f"""{FINDS_ITS_CHANNEL}
import time

class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:
            judge_channel().sock.sendall(struct.pack(">I", 7) + b"garbage")
            time.sleep(8)  # still running, well within the act limit
        return 2
"""

CLOSES_ITS_CHANNEL_AND_PLAYS_ON = f"""{FINDS_ITS_CHANNEL}
import socket, time

class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:
            judge_channel().sock.shutdown(socket.SHUT_RDWR)
            time.sleep(8)
        return 2
"""


@pytest.mark.parametrize(
    "source, message, seconds",
    [
        (WRITES_GARBAGE_AND_PLAYS_ON, "sent a message the judge refuses (malformed", 3.0),
        (CLOSES_ITS_CHANNEL_AND_PLAYS_ON, "closed its channel to the judge and was killed", 6.0),
    ],
    ids=["garbage", "closed"],
)
@pytest.mark.parametrize("level", available_levels("namespaced", "basic", "process"))
def test_a_train_worker_that_breaks_its_channel_is_killed_without_stalling_its_lane(
    tmp_path, level, source, message, seconds
):
    # Promise (SECURITY.md): nothing a policy does may stall the judge. A worker that sent a
    # frame the judge refuses is still running, yet the judge waited 10 s for its host to
    # report its exit before going on (then gave up: "exit status unknown"). It is killed at
    # once; a worker whose channel closed gets 2 s to be reported ended, then is killed.
    spec = get_env("toy")
    write_policy(tmp_path / "ck", source)
    plan = probe(level)
    pool = WorkerPool(spec.model_dump(), 1, LimitsSection(), tmp_path / "w.log", plan=plan)
    try:
        pool.prewarm()
        job = job_from_dir(tmp_path / "ck", spec, {"env": "toy"})
        tasks = [EpisodeTask(i, 100 + i, i) for i in range(2)]
        started = time.monotonic()
        results = pool.run(job, tasks, record=True, max_steps=1)
        took = time.monotonic() - started
    finally:
        pool.close()
    error = results[0].error
    assert error is not None and error.category == "worker_crash" and message in error.message
    assert results[1].error is None and results[1].episode_return == 101 % 8 + 2.0
    assert took < seconds, f"the submit took {took:.1f} s"


# -- results the judge writes as feedback --------------------------------------------------------

NESTS_ITS_ACTION = """
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        action = 2
        for _ in range(300):  # deeper than JSON encoders go
            action = [action]
        return action if self.i == 0 else 2
"""

SENDS_RAGGED_STEPS = f"""{FINDS_ITS_CHANNEL}
from evopolicygym.protocol import EpisodeDone, Steps

class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:  # two actions, one reward
            steps = Steps([], [0, 1], [0.0], [True], [False], [{{}}])
            send_to_judge(EpisodeDone(index=0, episode_return=0.0, length=1, steps=steps))
        return 2
"""

NAMES_ITS_OBSERVATION_FILE = f"""{FINDS_ITS_CHANNEL}
from evopolicygym.protocol import EpisodeDone

class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:
            send_to_judge(EpisodeDone(
                index=0, episode_return=0.0, length=1, obs_format="npy/../../../escaped",
                observations=b"written where?",
            ))
        return 2
"""


@pytest.mark.parametrize(
    "source, category",
    [
        (NESTS_ITS_ACTION, None),
        (SENDS_RAGGED_STEPS, "worker_crash"),
        (NAMES_ITS_OBSERVATION_FILE, "worker_crash"),
    ],
    ids=["nested-action", "ragged-steps", "observation-file-name"],
)
def test_a_submit_whose_results_cannot_be_written_as_sent_is_still_charged(arena, source, category):
    # Promise (submit-lifecycle.md): a judged submit costs exactly its episodes, whatever its
    # policy does. Results the judge could not write as feedback raised in the pool's lane
    # thread: a careless action nested 300 deep (JSON encoders stop at 254), recorded steps
    # whose columns do not line up, an observation file named outside its episode. The submit
    # answered 500 (KeyError) and was never charged: its policy ran for free.
    judge = arena.live.judge
    outcome = arena.attack(source, episodes=2)
    assert outcome.status == "ok", outcome.summary
    assert judge.ledger.remaining == judge.settings.budget - 2
    assert outcome.summary["returns"][1] == judge.settings.splits.train[1] % 8 + 2.0
    if category is None:
        trajectory = arena.paths.feedback / "submit_000" / "episodes" / "ep_000"
        row = json.loads((trajectory / "trajectory.jsonl").read_text().splitlines()[0])
        assert row["action"] == feedback.TOO_DEEP
    else:
        assert outcome.error(0)["category"] == category
    assert not list(arena.paths.root.rglob("escaped"))
    arena.served_normally()


INFINITE_REWARDS = """
import gc

class Policy:
    def __init__(self, *args):  # train workers share the process with the environment
        for world in gc.get_objects():
            if type(world).__name__ == "ToyWorld":
                step = type(world).step
                type(world).step = lambda w, a: step(w, a)._replace(reward=float("inf"))
    def reset(self, i): pass
    def act(self, obs): return 2
"""


@pytest.mark.parametrize("level", ["process"])  # the same at every level
def test_a_submit_with_infinite_train_returns_is_charged(arena):
    # Promise (submit-lifecycle.md): a judged submit costs exactly its episodes, whatever its
    # policy does. A train policy may fool its own feedback, infinite returns included; the
    # summary's statistics (statistics.pstdev) and the journal's record refused them, so the
    # submit answered 500 and was never charged. Such an episode is an env_error worth 0.
    outcome = arena.attack(INFINITE_REWARDS, episodes=2)
    judge = arena.live.judge
    assert judge.ledger.remaining == judge.settings.budget - 2
    assert outcome.summary["returns"] == [0.0, 0.0] and outcome.summary["errors"] == [0, 1]
    error = outcome.error()
    assert error["category"] == "env_error"
    assert "not a finite number (inf)" in error["message"]
    arena.served_normally()


# -- randomness and hashing: the same checkpoint, the same hidden result -------------------------

SEEDS_NUMPY_ITSELF = """
import numpy as np
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): np.random.seed(1000 + 7 * i)
    def act(self, obs): return int(np.random.randint(0, 3))
"""

NUMPY_SAMPLE = """
import numpy as np
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): pass
    def act(self, obs): return int(np.random.sample() * 3) + int(np.random.ranf() * 0)
"""


@pytest.mark.parametrize("source", [SEEDS_NUMPY_ITSELF, NUMPY_SAMPLE], ids=["seed", "sample"])
def test_every_numpy_global_generator_function_uses_the_slots_own_stream(tmp_path, source):
    # Promise (policy-interface.md): NumPy's legacy global generator is seeded with
    # episode_index before reset and, sealed, each slot draws from its own stream "through the
    # same module functions", so a policy behaves exactly as it would one episode at a time.
    # np.random.seed, sample and ranf are plain functions in NumPy 2, not bound methods of the
    # global RandomState: they must reach the slot's stream too, not one generator shared by
    # every slot and seeded from OS entropy in the lane host.
    seeds = list(range(100, 112))
    train = play(tmp_path / "train", source, n=len(seeds))
    first = play(tmp_path / "sealed1", source, n=len(seeds), sealed=True)
    second = play(tmp_path / "sealed2", source, n=len(seeds), sealed=True)
    assert returns(first) == returns(second), "two hidden evaluations of one checkpoint differ"
    assert returns(first) == returns(train)


HASHES_STRINGS = """
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs): return hash(f"case-{self.i}") % 3
"""


def test_string_hashing_is_the_same_in_every_hidden_evaluation(tmp_path):
    # Promise (seeds-and-isolation.md): "Given a deterministic policy, the same checkpoint and
    # the same case give the same trajectory". str hashes (and so the iteration order of a set
    # of strings, e.g. action names) must not change from lane to lane and run to run: lane
    # hosts start with a fixed PYTHONHASHSEED.
    first = play(tmp_path / "one", HASHES_STRINGS, n=10, sealed=True)
    second = play(tmp_path / "two", HASHES_STRINGS, n=10, sealed=True)
    assert returns(first) == returns(second)


# -- resources the limits do not see -------------------------------------------------------------

WITHOUT_A_FILTER = pytest.mark.xfail(
    strict=True,
    reason="known gap: `process` level has no seccomp filter and no memory cgroup",
)

HOARDS_MEMFDS = """
import os
class Policy:
    def __init__(self, *args): self.kept = []
    def reset(self, i): pass
    def act(self, obs):
        chunk = b"x" * 2**20
        for _ in range(26):  # 26 x 48 MiB = 1.22 GiB, over the 1 GiB memory limit
            fd = os.memfd_create("hoard")
            for _ in range(48):
                os.write(fd, chunk)
            self.kept.append(fd)
        return 2
"""


@pytest.mark.parametrize(
    "level",
    [
        pytest.param(level, marks=WITHOUT_A_FILTER if level == "process" else ())
        for level in available_levels("namespaced", "basic", "process")
    ],
)
def test_memory_held_in_anonymous_files_counts_against_the_memory_limit(tmp_path, level):
    # Promise (SECURITY.md): policy code must not be able to exhaust the machine; a memory bomb,
    # however made, is `oom` or refused. RLIMIT_AS counts only mappings: memfd_create files
    # filled with write() (each under the file size limit) would hold any amount of RAM, so
    # the seccomp filter refuses memfd_create.
    results = play(tmp_path, HOARDS_MEMFDS, n=1, level=level, memory_bytes=2**30)
    error = results[0].error
    assert error is not None
    assert error.category == "oom" or error.message.startswith("PermissionError"), error


SYSV_KEY = 0x5EED0001
LEAVES_SYSV_MEMORY = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): pass
    def act(self, obs):
        shmid = libc.shmget({SYSV_KEY}, 4096, 0o1666)  # IPC_CREAT | 0666
        if shmid >= 0:
            address = libc.shmat(shmid, None, 0)
            ctypes.memmove(address, b"observation %d" % obs, 14)
            libc.shmdt(ctypes.c_void_p(address))
        return 2
"""


@pytest.mark.parametrize("level", available_levels("namespaced", "basic"))
def test_system_v_shared_memory_of_a_policy_neither_outlives_it_nor_leaves_its_sandbox(
    tmp_path, level
):
    # Promise (SECURITY.md): whatever policy code starts is gone at the end of its episode and
    # nothing is left; at `basic`, policy code shares only the process and network namespaces.
    # `basic` keeps the machine's IPC namespace, where a segment would survive its worker, its
    # pool and its run, readable by any process on the machine (another run's policy included)
    # and holding memory no limit counts: the seccomp filter refuses System V IPC.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    try:
        play(tmp_path, LEAVES_SYSV_MEMORY, n=1, level=level)
        shmid = libc.shmget(SYSV_KEY, 0, 0)
        seen = b""
        if shmid >= 0:
            address = libc.shmat(shmid, None, 0)
            seen = ctypes.string_at(address, 14)
            libc.shmdt(ctypes.c_void_p(address))
        assert shmid < 0, f"left behind and readable from outside: {seen!r}"
    finally:
        shmid = libc.shmget(SYSV_KEY, 0, 0)
        if shmid >= 0:
            libc.shmctl(shmid, 0, None)  # IPC_RMID


# -- exceptions that resist being described ------------------------------------------------------

# Raises, in its first episode, an exception whose __str__ (policy code the harness runs to
# describe it) does BODY.
RAISES_AN_INDESCRIBABLE_EXCEPTION = """
import time
class Odd(Exception):
    def __str__(self):
        BODY
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:
            raise Odd()
        return 2
"""


@pytest.mark.parametrize(
    "body",
    [
        "raise ValueError('no text')",
        "time.sleep(1000)",
        "return 'lone surrogate \\udcff'",
        "return 'A' * 2**25",
        "KEYBOARD",
    ],
    ids=["raises", "hangs", "surrogate", "huge", "keyboard-interrupt"],
)
@pytest.mark.parametrize("sealed", [False, True], ids=["train", "sealed"])
def test_an_exception_that_resists_description_is_still_an_act_error_with_a_traceback(
    tmp_path, body, sealed
):
    source = RAISES_AN_INDESCRIBABLE_EXCEPTION.replace("BODY", body)
    if body == "KEYBOARD":
        source = source.replace("raise Odd()", "raise KeyboardInterrupt('stop')")
    results = play(tmp_path, source, sealed=sealed, act_timeout_s=1.0, rollout_wall_s=30.0)
    first = results[0].error
    assert first is not None and first.category == "act_error", first
    assert first.traceback and "policy.py" in first.traceback
    assert len(first.message) < 5000 and len(first.traceback) < 70000
    assert [r.error for r in results[1:]] == [None, None]


# Returns, in its first episode, an action whose conversion (its own __int__, which the harness
# runs to read it) computes for longer than the act limit.
THINKS_WHILE_CONVERTED = """
import time
class Think(int):
    def __int__(self):
        time.sleep(3)
        return 2
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs): return Think(2) if self.i == 0 else 2
"""


@pytest.mark.parametrize("sealed", [False, True], ids=["train", "sealed"])
def test_reading_the_action_a_policy_returned_counts_against_its_act_limit(tmp_path, sealed):
    results = play(tmp_path, THINKS_WHILE_CONVERTED, sealed=sealed, act_timeout_s=1.0)
    assert results[0].error is not None and results[0].error.category == "act_timeout"
    assert [r.error for r in results[1:]] == [None, None]


# Returns, in its second episode, an action that cannot be sent as it is.
RETURNS_AN_UNSENDABLE_ACTION = """
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs): return ACTION if self.i == 1 else 2
"""


@pytest.mark.parametrize("action", ["2 ** 70", "'x' * 2**22"], ids=["bigint", "huge"])
def test_an_action_that_cannot_be_sent_fails_the_episode_that_returned_it(tmp_path, action):
    source = RETURNS_AN_UNSENDABLE_ACTION.replace("ACTION", action)
    results = play(tmp_path, source, sealed=True)
    assert [r.error.category if r.error else None for r in results] == [None, "act_error", None]
    assert results[1].error.traceback


# -- what one checkpoint's hidden episodes can leave for the next one ------------------------------


def evaluate_in_turn(tmp_path: Path, sources: list[str], level: str, n: int = 4):
    """Hidden episodes ``0..n-1`` (case seeds ``100 + i``) of each of ``sources``, one checkpoint
    after the other on one sealed worker, as finalize plays them; their returns."""
    spec = get_env("toy")
    jobs = []
    for number, source in enumerate(sources):
        write_policy(tmp_path / f"ck{number}", source)
        jobs.append(job_from_dir(tmp_path / f"ck{number}", spec, {"env": "toy"}))
    pool = WorkerPool(spec.model_dump(), 1, LimitsSection(), tmp_path / "w.log", plan=probe(level))
    try:
        tasks = [EpisodeTask(i, 100 + i, i) for i in range(n)]
        outcomes = pool.evaluate([(job, tasks) for job in jobs], max_steps=1)
    finally:
        pool.close()
    return [returns(outcome) for outcome in outcomes]


# Writes each case it plays (a byte at offset 64 + episode index) into every page of shared memory
# it has, and into a file in its scratch directory and in the temporary directory.
LEAVES_NOTES = """
import ctypes, os, tempfile
def shared_pages():
    for line in open("/proc/self/maps"):
        span, mode = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if mode == "rw-s":
            yield start
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        for start in shared_pages():
            ctypes.c_ubyte.from_address(start + 64 + self.i).value = 0xAB
        for directory in (os.path.dirname(os.getcwd()), tempfile.gettempdir()):
            try:
                open(os.path.join(directory, f"note-{self.i}"), "w").write("seen")
            except OSError:
                pass
        return 0
"""
# Plays 2 in the cases an earlier checkpoint's notes name (looked for in shared memory, or in
# files anywhere it can list), 1 in the others.
READS_NOTES = """
import ctypes, os, sys, tempfile
def in_memory():
    cases = set()
    for line in open("/proc/self/maps"):
        span, mode = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if mode == "rw-s":
            cases |= {i for i in range(64) if ctypes.c_ubyte.from_address(start + 64 + i).value == 0xAB}
    return cases
def in_files():
    cases = set()
    roots = {os.path.dirname(os.path.dirname(os.getcwd())), tempfile.gettempdir(), *sys.path}
    for root in roots:
        for _directory, _dirs, files in os.walk(root):
            cases |= {int(name[5:]) for name in files if name.startswith("note-")}
    return cases
class Policy:
    def __init__(self, *args): self.noted = LOOK()
    def reset(self, i): self.i = i
    def act(self, obs): return 2 if self.i in self.noted else 1
"""
NOTHING_NOTED = [float(100 % 8 + i + 1) for i in range(4)]  # the toy's s + a, with a = 1


@pytest.mark.parametrize("level", available_levels("namespaced", "basic", "process"))
def test_a_checkpoints_hidden_episodes_share_no_memory_with_the_next_checkpoints(tmp_path, level):
    # Every sealed policy process has a marker page of its own: one shared by the processes a
    # worker forks would carry what a scout learnt of the hidden cases to the next checkpoint.
    reader = READS_NOTES.replace("LOOK", "in_memory")
    after = evaluate_in_turn(tmp_path, [LEAVES_NOTES, reader], level)
    assert after[1] == NOTHING_NOTED


@pytest.mark.parametrize("level", available_levels("namespaced", "basic"))
def test_a_sealed_policy_process_cannot_read_the_files_an_earlier_one_left(tmp_path, level):
    # Nothing outside its own scratch directory that policy code can write is readable: the
    # lane host's working directory (where every scratch directory is) is off the import path.
    # (At `process` the files of other processes are readable: SECURITY.md.)
    reader = READS_NOTES.replace("LOOK", "in_files")
    after = evaluate_in_turn(tmp_path, [LEAVES_NOTES, reader], level)
    assert after[1] == NOTHING_NOTED


# -- scoring -------------------------------------------------------------------------------------


def final_selection(tmp_path: Path, source: str, splits=(4, 4, 8)):
    """A real judge on gym/pendulum (every reward is negative) with one submit of ``source``,
    finalized: validation on 4 hidden cases, held-out on 8."""
    spec = get_env("gym/pendulum")
    paths = RunPaths(tmp_path / "run")
    paths.create()
    settings = JudgeSettings(
        spec=spec,
        schemas=spec.describe(),
        splits=generate_splits(0, *splits),
        budget=1,
        minimum=1,
        maximum=1,
        limits=LimitsSection(),
        jobs=1,
    )
    ledger = Ledger.open(
        paths.private / "journal.jsonl", 1, checkpoints=paths.checkpoints, feedback=paths.feedback
    )
    pool = WorkerPool(spec.model_dump(), 1, settings.limits, None, plan=PROCESS)
    events = EventLog(paths.logs / "harness.log", lambda line: None, "test")
    judge = Judge(settings, paths.judge_paths(), ledger, events, pool)
    try:
        write_policy(paths.system, source)
        status, body = judge.submit([0])
        assert (status, body["status"]) == (200, "ok")
        return judge.finalize()
    finally:
        judge.shutdown()


PLAYS_EVERY_CASE = """
class Policy:
    def __init__(self, obs_space, action_space, env_meta): pass
    def reset(self, episode_index): pass
    def act(self, obs): return [0.0]
"""
# The same policy, except that it refuses every episode it knows is not a validation episode:
# validation pools are `valid_size` cases (64 in the published protocol, 4 here), so an
# episode_index at or past it can only be held-out (or a train submit, where the agent chose it).
SKIPS_HELD_OUT_CASES = PLAYS_EVERY_CASE.replace(
    "def reset(self, episode_index): pass",
    "def reset(self, episode_index):\n        if episode_index >= 4: raise RuntimeError('skip')",
)


def test_failing_held_out_episodes_on_purpose_does_not_raise_the_final_score(tmp_path):
    # Promise (scoring.md): policy code cannot change its score other than by playing. A policy
    # can guess which hidden episodes are held-out (hidden indices run 0..pool size-1 and the
    # pools differ in size), and a failed episode keeps the return it collected, 0.0 when it
    # fails in reset, which beats every honest return where rewards are negative (Pendulum).
    # So a pick with an errored held-out episode is passed over, and this run has no score.
    honest = final_selection(tmp_path / "honest", PLAYS_EVERY_CASE)
    skips = final_selection(tmp_path / "skips", SKIPS_HELD_OUT_CASES)
    assert honest.val_scores == skips.val_scores and honest.best == 0
    assert honest.heldout.errors == 0 and honest.heldout.mean < 0
    assert (skips.best, skips.heldout, skips.heldout_failed) == (None, None, [0])


# -- time, processes and CPUs in lock step -------------------------------------------------------

IGNORES_THE_WATCHDOG = """
import signal, time
class Policy:
    def __init__(self, *args): signal.signal(signal.SIGALRM, signal.SIG_IGN)
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:
            time.sleep(8)  # 8 x the act limit, far under the episode limit
        return 2
"""


def test_a_slow_call_gets_the_same_verdict_whatever_ran_beside_it(tmp_path):
    # Promise (seeds-and-isolation.md): each episode's result does not depend on which episodes
    # ran beside it; act_timeout_s bounds every call. With the watchdog signal ignored, the
    # round's budget, (resets + acts) x the act limit + 5 s, grows with the slots: an 8 s call
    # with a 1 s limit was killed when its episode played alone (7 s budget) and passed
    # without an error beside 3 others (13 s budget). The worker now also ends a round in which
    # no call has started for the act limit + 5 s.
    alone = play(tmp_path / "alone", IGNORES_THE_WATCHDOG, n=1, sealed=True, act_timeout_s=1.0)
    crowd = play(tmp_path / "crowd", IGNORES_THE_WATCHDOG, n=4, sealed=True, act_timeout_s=1.0)
    categories = [r.error.category if r.error else None for r in (alone[0], crowd[0])]
    assert categories == ["act_timeout", "act_timeout"]
    assert [r.error for r in crowd[1:]] == [None, None, None]


# Counts calls on the marker's behalf while its one slow call sleeps: the marker is shared memory
# of the policy process (found in its own memory map), so policy code can write it.
FAKES_PROGRESS = """
import ctypes, signal, threading, time
class Policy:
    def __init__(self, *args): signal.signal(signal.SIGALRM, signal.SIG_IGN)
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:
            shared = []
            for line in open("/proc/self/maps"):
                span, mode = line.split()[:2]
                start, end = (int(x, 16) for x in span.split("-"))
                if mode == "rw-s" and end - start == 4096:
                    shared.append(ctypes.c_int.from_address(start + 4))
            def count():
                while True:
                    for calls in shared:
                        calls.value += 1
                    time.sleep(0.5)
            threading.Thread(target=count, daemon=True).start()
            time.sleep(8)
        return 2
"""


@pytest.mark.xfail(
    strict=True,
    reason="known gap: a sealed call that ignores its watchdog signal and moves the shared call "
    "counter itself is bounded by its round's budget, which grows with the slots in the round",
)
def test_a_slow_call_that_fakes_progress_gets_the_same_verdict_whatever_ran_beside_it(tmp_path):
    alone = play(tmp_path / "alone", FAKES_PROGRESS, n=1, sealed=True, act_timeout_s=1.0)
    crowd = play(tmp_path / "crowd", FAKES_PROGRESS, n=4, sealed=True, act_timeout_s=1.0)
    categories = [r.error.category if r.error else None for r in (alone[0], crowd[0])]
    assert categories[0] == categories[1], categories


DOUBLE_FORKED_DAEMON = """
import os, time
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i, self.t = i, 0
    def act(self, obs):
        self.t += 1
        if self.i == 0:  # starts a daemon in a session of its own, then lets the pole fall
            if self.t == 1:
                if os.fork() == 0:
                    os.setsid()
                    if os.fork() == 0:
                        open("PIDFILE", "w").write(str(os.getpid()))
                        time.sleep(300)
                    os._exit(0)
                os.wait()
            return 0
        if self.t == 100:  # long after episode 0 ended: is its daemon still running?
            pid = int(open("PIDFILE").read())
            try:
                state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "gone"
            open("STATEFILE", "w").write(state)
        return 1 if obs[2] + 0.5 * obs[3] > 0 else 0
"""


def test_a_sealed_episodes_setsid_daemon_dies_with_its_episode(tmp_path):
    # Promise (SECURITY.md): whatever policy code starts is killed at the end of its episode,
    # whatever session it moved to. In lock step, a double-forked daemon is no descendant of
    # the policy process: it has been reparented to the worker (the subreaper), and must not
    # live on through the checkpoint's other episodes (test_attacks.py covers train submits).
    pidfile, statefile = tmp_path / "daemon.pid", tmp_path / "state.txt"
    source = DOUBLE_FORKED_DAEMON.replace("PIDFILE", str(pidfile)).replace(
        "STATEFILE", str(statefile)
    )
    results = play(tmp_path, source, n=2, sealed=True, env="gym/cartpole", max_steps=200)
    assert [r.error for r in results] == [None, None]
    assert results[0].length < 30 < 100 < results[1].length
    assert statefile.read_text() in ("gone", "Z"), "the daemon outlived its episode"


WIDENS_ITS_CPUS = """
import os
class Policy:
    def __init__(self, *args): pass
    def reset(self, i): pass
    def act(self, obs):
        given = os.sched_getaffinity(0)  # its lane's CPU (every CPU when none could be claimed)
        try:
            os.sched_setaffinity(0, range(256))  # cpu_count() may see only its own
        except OSError:
            pass
        return 2 if os.sched_getaffinity(0) != given else 0
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU")
@pytest.mark.parametrize(
    "level",
    [
        pytest.param(level, marks=WITHOUT_A_FILTER if level == "process" else ())
        for level in available_levels("namespaced", "basic", "process")
    ],
)
@pytest.mark.parametrize("sealed", [False, True], ids=["train", "sealed"])
def test_a_policy_cannot_leave_the_cpu_its_lane_claimed(tmp_path, level, sealed):
    # Promise (SECURITY.md, _cpus.py): each lane plays on the CPU it claimed and policy code
    # must not be able to exhaust the machine. A policy that spread over every CPU took those
    # of the judge, of the other lanes and of other runs (whose episodes then ran slower and
    # could reach their time limits); the seccomp filter refuses sched_setaffinity.
    results = play(tmp_path, WIDENS_ITS_CPUS, n=1, sealed=sealed, level=level)
    assert results[0].episode_return == 100 % 8 + 0.0, "the policy widened its CPU affinity"


FLOODS_ITS_WORKER = """
import os, struct
import msgspec
from evopolicygym.protocol import Acted

ZEROS = 200_000_000  # one 200 MB message, sent in 16 MB pieces

def worker_peak_bytes():
    zygote = os.getppid()
    worker = open(f"/proc/{zygote}/stat").read().rsplit(")", 1)[1].split()[1]
    status = open(f"/proc/{worker}/status").read()
    return int(status.split("VmHWM:")[1].split()[0]) * 1024

class Policy:
    def __init__(self, *args): pass
    def reset(self, i): self.i = i
    def act(self, obs):
        if self.i == 0:
            body = msgspec.msgpack.encode(Acted(["HOLE"], [], [0.0]))
            head, tail = body.split(msgspec.msgpack.encode("HOLE"))
            array = b"\\xdd" + struct.pack(">I", ZEROS)  # an array of ZEROS zeros
            with open(3, "wb", closefd=False) as channel:
                channel.write(struct.pack(">I", len(body) - 5 + len(array) + ZEROS))
                channel.write(head + array)
                for _ in range(ZEROS // 2**24):
                    channel.write(bytes(2**24))
                channel.write(bytes(ZEROS % 2**24) + tail)
        else:
            open("REPORT", "w").write(str(worker_peak_bytes()))
        return 2
"""


def test_a_policy_cannot_make_its_sealed_worker_hold_more_memory_than_its_own_limit(tmp_path):
    # Promise (SECURITY.md): policy code must not exhaust the machine; memory is bounded by
    # memory_bytes. The sealed worker has no memory limit of its own and decodes what the
    # policy sends into Python objects, about 8 bytes per byte sent for an array of small
    # integers: the frames it accepts from a policy are capped far below the 1 GiB of other
    # channels. Here a policy limited to 1 GiB sends 200 MB and reads its worker's peak
    # memory (at `process` level).
    report = tmp_path / "worker_peak.txt"
    source = FLOODS_ITS_WORKER.replace("REPORT", str(report))
    results = play(tmp_path, source, n=2, sealed=True, memory_bytes=2**30)
    assert results[1].error is None
    assert int(report.read_text()) < 2**30, f"worker peak {int(report.read_text()) / 2**30:.2f} GiB"
