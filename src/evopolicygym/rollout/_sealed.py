"""The policy side of hidden evaluation: a pristine policy zygote, and the sealed policy
processes it forks.

A sealed worker forks its zygote before it builds an environment or receives a seed, so every
policy process starts from memory that never held hidden data. A policy process loads the
checkpoint, builds one ``Policy`` per slot (each with its own copy of the checkpoint's modules
and its own ``random``/NumPy global generator stream) and answers lock-step :class:`Step`
requests: no environment, no seed, no reward ever reach it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import mmap
import os
import random
import select
import signal
import socket
import struct
import sys
import tempfile
import time
from array import array
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from evopolicygym.envs.jsonsafe import plain_action
from evopolicygym.protocol import (
    Acted,
    ArrayBlock,
    EpisodeErrorKind,
    ForkPolicy,
    Load,
    PolicyEnded,
    PolicyForked,
    PolicyLoaded,
    PolicyRequest,
    SlotError,
    Step,
    WorkerConfig,
)
from evopolicygym.sandbox import (
    Channel,
    FrameError,
    die_with_parent,
    harden,
    lower_rlimits,
    reap,
    remove_path,
)

from ._capture import CappedWriter, PolicyTimeout, Watchdog, near_memory_limit
from ._loader import CheckpointLoader, describe_failure, write_checkpoint

# The marker, shared memory written by the policy process and read by its worker: which slot's
# policy call is running (-1: none), to blame the right episode after a crash; and how many calls
# have started (modulo CALLS), so that a call that outlives its limit is seen while the rest of
# its round waits.
MARKER = struct.Struct("=ii")
CALLS = 2**30
# The largest message a policy process may send its worker: a round's actions (and errors) for
# every slot (64). The largest legitimate one, 64 text actions of 4096 characters, is about
# 1 MiB; the worker, which has no memory limit, decodes a message into several times its size
# in Python objects, so the cap bounds what a policy can make it hold. One action may take a
# 128th of it (the errors and their tracebacks have the rest).
POLICY_MESSAGE_BYTES = 16 * 2**20
ACTION_BYTES = POLICY_MESSAGE_BYTES // 128
# Building extra Policy instances (one per lock-step slot) stops after this many seconds, or
# once the process holds this fraction of its memory limit (the episodes need the rest).
EXTRA_INSTANCES_S = 2.0
EXTRA_INSTANCES_MEMORY = 0.5


def read_marker(marker: mmap.mmap) -> int:
    """The slot whose call is running (-1: none)."""
    return MARKER.unpack_from(marker)[0]


def read_calls(marker: mmap.mmap) -> int:
    """How many calls the policy processes have started (modulo :data:`CALLS`)."""
    return MARKER.unpack_from(marker)[1]


class SlotRandomness:
    """Gives each slot its own ``random`` and NumPy legacy global generator, so that
    interleaved episodes draw the same numbers as they would one after the other.

    Policy code reaches a global generator two ways, and both lead to the current slot's
    (:meth:`select`): the module functions bound to the global instance (``random.random``,
    ``np.random.randint``, ``get_state``...) are replaced by proxies, and NumPy's global
    instance itself (``np.random.mtrand._rand``) is the current slot's: NumPy's plain module
    functions (``seed``, ``sample``, ``ranf``, ``get_bit_generator``...) and libraries (SciPy's
    and scikit-learn's ``check_random_state(None)``) look it up at each call. (Every public
    function of ``random`` is bound to its instance, so the proxies cover it.)

    Every episode reseeds its slot before ``reset`` (:meth:`seed`), so the generators' first
    state never matters: the zygote makes them once and its policy processes inherit them."""

    def __init__(self, slots: int):
        self.slots = slots
        self.python = [random.Random(0) for _ in range(slots)]
        self.numpy = [np.random.RandomState(0) for _ in range(slots)]
        self.current = [0]
        # NumPy's own: it also reseeds a bit generator the policy swapped in, as train does.
        self._seed_numpy = np.random.mtrand.seed

    def install(self) -> None:
        current = self.current
        python, numpy_states = self.python, self.numpy
        for name in dir(random):
            value = getattr(random, name)
            if getattr(value, "__self__", None) is random._inst:
                table = [getattr(generator, name) for generator in python]
                setattr(random, name, _proxy(table, current, name))
        legacy = np.random.mtrand._rand
        for module in (np.random, np.random.mtrand):
            for name in dir(module):
                value = getattr(module, name)
                if getattr(value, "__self__", None) is legacy:
                    table = [getattr(state, name) for state in numpy_states]
                    setattr(module, name, _proxy(table, current, name))
        self.select(0)

    def select(self, slot: int) -> None:
        """Make ``slot``'s generators the global ones (before any call of its policy code;
        the lock-step loop inlines this for its act calls)."""
        self.current[0] = slot
        np.random.mtrand._rand = self.numpy[slot]

    def seed(self, slot: int, episode_index: int) -> None:
        """Select ``slot`` and seed it as a train episode is seeded (``seed_policy_randomness``)."""
        self.select(slot)
        self.python[slot].seed(episode_index)
        self._seed_numpy(episode_index % 2**32)


def _proxy(table: list[Any], current: list[int], name: str):
    def proxy(*args, **kwargs):
        return table[current[0]](*args, **kwargs)

    proxy.__name__ = proxy.__qualname__ = name
    return proxy


# -- the policy process --------------------------------------------------------------------------


def run_policy_process(
    channel: Channel,
    marker: mmap.mmap,
    scratch: Path,
    slots: int,
    config: WorkerConfig,
    randomness: SlotRandomness,
) -> None:
    """Body of a sealed policy process (never returns normally); ``scratch`` is its own empty
    directory (the only place it may write), ``randomness`` is installed and bounds the slots.

    It is forked ahead of need: everything that does not depend on the checkpoint (hardening)
    is done before it waits for its :class:`Load`, so that a checkpoint waits only for its
    files to be written and imported."""
    slots = min(slots, randomness.slots)
    limits = config.limits
    watchdog = Watchdog()
    system = scratch / "system"
    # The file size limit comes after the write: it binds policy code, not the checkpoint's own
    # files (the snapshot cap bounds those).
    harden(
        {**limits, "file_size_bytes": None},
        scratch,
        landlock_abi=config.landlock_abi,
        seccomp=config.seccomp,
    )
    try:
        load = channel.recv()
    except FrameError:
        return
    if not isinstance(load, Load):
        return
    if load.episodes > 0:
        slots = min(slots, load.episodes)
    write_checkpoint(load.files, system)
    lower_rlimits(limits)
    os.chdir(system)
    loader = CheckpointLoader(system, load, watchdog, limits)
    first, failure, _out, _err = loader.first()
    if failure is not None:
        channel.send(failure)
        return
    instances = [first]
    silent = CappedWriter(0)  # nobody reads hidden-evaluation output
    sys.stdout = sys.stderr = silent
    # Extra instances only cut message round trips: stop when they get costly (results do not
    # depend on how many there are).
    budget = time.monotonic() + min(limits["init_timeout_s"] / 4, EXTRA_INSTANCES_S)
    while (
        len(instances) < slots
        and time.monotonic() < budget
        and not near_memory_limit(EXTRA_INSTANCES_MEMORY)
    ):
        watchdog.deadline = budget
        # What an instance keeps of the global generators (check_random_state(None)) is its own.
        randomness.select(len(instances))
        try:
            instances.append(loader.build())
        except BaseException:  # fewer slots, same results: stop building
            break
        finally:
            watchdog.deadline = math.inf
    channel.send(PolicyLoaded(instances=len(instances)))
    _answer(channel, marker, instances, randomness, watchdog, system)


def _answer(
    channel: Channel,
    marker: mmap.mmap,
    instances: list[Any],
    randomness: SlotRandomness,
    watchdog: Watchdog,
    system: Path,
) -> None:
    """Answer lock-step requests until the worker closes the channel."""
    running = memoryview(marker).cast("i")  # what MARKER packs: the slot being called, calls
    calls = running[1]
    select = randomness.select
    current, generators, mtrand = randomness.current, randomness.numpy, np.random.mtrand
    acts = [instance.act for instance in instances]
    clock = time.monotonic
    while True:
        try:
            step = channel.recv()
        except FrameError:
            return
        if not isinstance(step, Step):
            return
        errors: list[SlotError] = []
        failed: set[int] = set()
        spent: dict[int, float] = {}  # reset seconds by slot
        for slot, episode_index, seconds in step.resets:
            running[0] = slot
            running[1] = calls = (calls + 1) % CALLS
            randomness.seed(slot, episode_index)
            started = clock()
            error = _call(watchdog, seconds, instances[slot].reset, episode_index, system)
            spent[slot] = clock() - started
            if error is not None:
                failed.add(slot)
                errors.append(_slot_error(slot, "reset", error, EpisodeErrorKind.RESET_ERROR))
        actions: list[Any] = []
        took: list[float] = []
        if step.block is not None:
            given = _rows(step.block)
        else:
            given = [obs for _slot, obs, _seconds in step.acts]
        # One clock reading per call: each call's end is the next one's start.
        then = clock()
        for (slot, _obs, seconds), obs in zip(step.acts, given, strict=True):
            if slot in failed:
                actions.append(None)
                took.append(spent[slot])
                continue
            # select(slot), inlined: a method call here cost 2% of a sealed CartPole step.
            running[0] = current[0] = slot
            running[1] = calls = (calls + 1) % CALLS
            mtrand._rand = generators[slot]
            watchdog.deadline = then + seconds
            try:
                action = acts[slot](obs)
            except BaseException as exc:
                watchdog.deadline = math.inf
                action = None
                failure = _classify(exc, system, watchdog)
                errors.append(_slot_error(slot, "act", failure, EpisodeErrorKind.ACT_ERROR))
            watchdog.deadline = math.inf
            actions.append(action)
            now = clock()
            took.append(now - then + spent.get(slot, 0.0) if spent else now - then)
            then = now
        block = None if errors else float_rows(actions)
        # A round of Python ints of 64 bits (a discrete action space) is sendable as it is.
        if block is None and not _sendable_ints(actions):
            for number, (slot, _obs, seconds) in enumerate(step.acts):
                if actions[number] is None:
                    continue  # its call failed, or it returned nothing
                # Converting runs policy code (an object's __float__, tolist, repr): the marker
                # names its slot, and the rest of its call's limit binds it.
                running[0] = slot
                running[1] = calls = (calls + 1) % CALLS
                select(slot)
                started = clock()
                remaining = seconds - (took[number] - spent.get(slot, 0.0))
                watchdog.deadline = started + max(remaining, 0.0)
                try:
                    actions[number] = _sendable_action(actions[number], channel)
                except BaseException as exc:
                    watchdog.deadline = math.inf
                    actions[number] = None
                    failure = _classify(exc, system, watchdog)
                    errors.append(_slot_error(slot, "act", failure, EpisodeErrorKind.ACT_ERROR))
                finally:
                    watchdog.deadline = math.inf
                took[number] += clock() - started
        running[0] = -1
        channel.send(Acted([] if block is not None else actions, errors, took, block))


FLOAT64 = np.dtype(np.float64).str  # native byte order, as array("d") writes


def float_rows(actions: list[Any]) -> ArrayBlock | None:
    """The round's actions as one float64 block when every one is a non-empty list of Python
    floats, all of one length (what a policy for a vector action space returns); None
    otherwise. Checked with a few passes in C instead of a check per action."""
    if set(map(type, actions)) != {list}:
        return None
    width = len(actions[0])
    if not width or set(map(len, actions)) != {width}:
        return None
    flat = list(chain.from_iterable(actions))
    if set(map(type, flat)) != {float}:
        return None
    return ArrayBlock(FLOAT64, [len(actions), width], array("d", flat).tobytes())


def _sendable_ints(actions: list[Any]) -> bool:
    """Whether the round's actions are all Python ints that MessagePack can carry."""
    return set(map(type, actions)) == {int} and min(actions) >= -(2**63) and max(actions) < 2**64


def _sendable_action(action: Any, channel: Channel) -> Any:
    """The action in the form its worker is sent (JSON-safe), checked to be sendable on its
    own: an int beyond 64 bits, text that is not UTF-8 or one larger than
    :data:`ACTION_BYTES` raise here, where its slot is known, not when the round's reply is
    sent."""
    action = plain_action(action)
    size = len(channel.encode(action))
    if size > ACTION_BYTES:
        raise ValueError(f"the action takes {size} bytes to send, more than {ACTION_BYTES}")
    return action


def _rows(block: ArrayBlock) -> list[Any]:
    """The observations of a :class:`ArrayBlock`, one list form per row."""
    return np.frombuffer(block.data, dtype=block.dtype).reshape(block.shape).tolist()


def _call(watchdog: Watchdog, seconds: float, function, argument, system: Path):
    watchdog.deadline = time.monotonic() + seconds
    try:
        function(argument)
    except BaseException as exc:
        watchdog.deadline = math.inf
        return _classify(exc, system, watchdog)
    finally:
        watchdog.deadline = math.inf
    return None


def _classify(
    exc: BaseException, system: Path, watchdog: Watchdog
) -> tuple[EpisodeErrorKind | None, str, str]:
    """``(kind, message, traceback)`` of a failed policy call; kind None means "the caller's
    default" (a plain exception in ``reset`` or ``act``)."""
    message, text = describe_failure(exc, system, watchdog)
    if isinstance(exc, PolicyTimeout):
        if near_memory_limit():
            return EpisodeErrorKind.OOM, "time limit reached while holding its memory limit", text
        return EpisodeErrorKind.ACT_TIMEOUT, "time limit reached", text
    if isinstance(exc, MemoryError):
        return EpisodeErrorKind.OOM, message, text
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:  # as in train episodes
        return EpisodeErrorKind.FILE_SIZE_LIMIT, message, text
    return None, message, text


def _slot_error(
    slot: int, call: str, error: tuple[EpisodeErrorKind | None, str, str], default: EpisodeErrorKind
) -> SlotError:
    kind, message, text = error
    return SlotError(slot, call, kind or default, message, text)


# -- the zygote -----------------------------------------------------------------------------------


def run_zygote(channel: Channel, config: WorkerConfig, worker: int) -> None:
    """Body of a sealed worker's policy zygote: fork a policy process per :class:`ForkPolicy`,
    each with a scratch directory of its own, report each one's end and remove its directory
    (what a checkpoint wrote must neither fill the lane's disk for the next ones nor reach
    them). Never returns normally."""
    die_with_parent(worker)
    # The zygote never calls these generators; its policy processes do.
    randomness = SlotRandomness(config.slots)
    randomness.install()
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    poller = select.poll()
    poller.register(channel.fileno(), select.POLLIN)
    poller.register(wake_read, select.POLLIN)
    zygote = os.getpid()
    scratches: dict[int, Path] = {}
    while True:
        for pid, status in reap():
            channel.send(PolicyEnded(pid=pid, status=status))
            if pid in scratches:
                with contextlib.suppress(OSError):
                    remove_path(scratches.pop(pid))
        try:
            request = channel.recv_nowait()
        except FrameError:
            return
        if request is None:
            poller.poll()
            while True:
                try:
                    os.read(wake_read, 512)
                except BlockingIOError:
                    break
            continue
        if not isinstance(request, ForkPolicy):
            return
        fd, marker_fd = channel.take_fds(2)
        scratch = Path(tempfile.mkdtemp(prefix="policy-"))
        pid = os.fork()
        if pid == 0:
            _become_policy_process(fd, marker_fd, zygote)
            status = 1
            try:
                policy_channel = Channel(socket.socket(fileno=3), PolicyRequest, carries_fds=False)
                marker = mmap.mmap(4, MARKER.size)
                run_policy_process(
                    policy_channel, marker, scratch, request.slots, config, randomness
                )
                status = 0
            except BaseException:
                pass
            finally:
                os._exit(status)
        os.close(fd)
        os.close(marker_fd)
        scratches[pid] = scratch
        channel.send(PolicyForked(pid=pid))


def _become_policy_process(fd: int, marker_fd: int, zygote: int) -> None:
    """In the fresh child: keep only the policy channel (as fd 3) and the marker (as fd 4), and
    silence stdio."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    die_with_parent(zygote)
    # Out of the way first: either may have arrived as 3 or 4.
    fd, marker_fd = (fcntl.fcntl(f, fcntl.F_DUPFD, 5) for f in (fd, marker_fd))
    os.dup2(fd, 3)
    os.dup2(marker_fd, 4)
    devnull = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    os.closerange(5, os.sysconf("SC_OPEN_MAX"))  # the zygote's channels among them
