"""Hidden evaluation inside a sealed worker: several episodes stepped in lock step against one
sealed policy process, so that the process boundary is crossed once per round, not once per
episode step.

Each slot is one episode at a time on its own world with its own ``Policy`` instance. A round
sends the observations of every running slot in one :class:`Step` and gets every action back
in one :class:`Acted`. When the policy process dies or hangs, the slot whose call was running
(the shared-memory marker says which) gets the error; the other running episodes start again
from scratch on a fresh policy process, so every other episode's result is what it would have
been had nothing happened.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from evopolicygym.envs import World
from evopolicygym.protocol import (
    Acted,
    ArrayBlock,
    EpisodeDone,
    EpisodeError,
    EpisodeErrorKind,
    ForkPolicy,
    Load,
    Loaded,
    LoadFailed,
    PolicyEnded,
    PolicyForked,
    PolicyLoaded,
    PolicyReply,
    RunEpisodes,
    Step,
    Task,
    Verdict,
)
from evopolicygym.sandbox import Channel, FrameError, FrameTimeout, kill_descendants, sweep_children

from ._episode import timeout_error
from ._exits import describe_exit
from ._sealed import FLOAT64, MARKER, POLICY_MESSAGE_BYTES, read_calls, read_marker

# Seconds a policy process may take beyond the time limits of a round before it is killed
# (message encoding, interpreter overhead), and to build extra instances after the first.
GRACE_S = 5.0
# How often a worker waiting for a round's answer looks whether a policy call has started
# since it last looked (only rounds that take that long are looked at).
WATCH_S = 0.5
# Resident memory beyond which a sealed worker builds no more worlds (fewer slots, same results).
WORLDS_MEMORY_BYTES = 2 * 2**30


class Zygote:
    """The worker's end of its policy zygote: asks for policy processes ahead of need (a spare
    prepares while the previous checkpoint plays), learns how they ended."""

    def __init__(self, channel: Channel, pid: int):
        self.channel = channel
        self.pid = pid
        self.ended: dict[int, int] = {}
        self.abandoned: set[int] = set()  # killed on purpose: how they ended does not matter
        # Requested processes, in request order (the zygote answers in that order): their
        # channels, and the pids of those it has reported started.
        self.requested: deque[tuple[Channel, mmap.mmap]] = deque()
        self.started: deque[int] = deque()

    def request(self, slots: int) -> None:
        """Ask for a policy process that will build ``slots`` instances (does not wait), with a
        channel and a marker of its own."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        marker_fd = os.memfd_create("marker", os.MFD_CLOEXEC)
        try:
            os.ftruncate(marker_fd, MARKER.size)
            marker = mmap.mmap(marker_fd, MARKER.size)
            MARKER.pack_into(marker, 0, -1, 0)
            self.channel.send(ForkPolicy(slots=slots), fds=[theirs.fileno(), marker_fd])
        finally:
            theirs.close()
            os.close(marker_fd)
        channel = Channel(ours, PolicyReply, carries_fds=False, max_bytes=POLICY_MESSAGE_BYTES)
        self.requested.append((channel, marker))

    def take(self, slots: int) -> tuple[int, Channel, mmap.mmap]:
        """The oldest requested policy process (requested now if none is): its pid, channel and
        marker. Raises :class:`FrameTimeout` or :class:`FrameError` when the zygote does not
        answer."""
        if not self.requested:
            self.request(slots)
        deadline = time.monotonic() + 30
        while not self.started:
            self._note(self.channel.recv(deadline))
        channel, marker = self.requested.popleft()
        return self.started.popleft(), channel, marker

    def status(self, pid: int, timeout: float = 5.0) -> int | None:
        deadline = time.monotonic() + timeout
        while pid not in self.ended:
            try:
                self._note(self.channel.recv(deadline))
            except (FrameTimeout, FrameError):
                return None
        return self.ended.pop(pid)

    def abandon(self, pid: int) -> None:
        """Nobody will ask how ``pid`` ended: its report is dropped when it comes."""
        if self.ended.pop(pid, None) is None:
            self.abandoned.add(pid)

    def _note(self, reply: PolicyForked | PolicyEnded) -> None:
        if isinstance(reply, PolicyForked):
            self.started.append(reply.pid)
        elif reply.pid in self.abandoned:
            self.abandoned.discard(reply.pid)
        else:
            self.ended[reply.pid] = reply.status


class PolicyGone(Exception):
    """The policy process died or hung during a round; ``slot`` was running (or -1)."""

    def __init__(self, slot: int, kind: EpisodeErrorKind, message: str):
        super().__init__(message)
        self.slot = slot
        self.kind = kind
        self.message = message


class SealedPolicy:
    """One sealed policy process, seen from its worker: the zygote's oldest spare, pinned to
    ``cpu`` (when given) before it is sent its checkpoint."""

    def __init__(
        self,
        zygote: Zygote,
        slots: int,
        limits,
        cpu: int | None,
        spared: frozenset[int],
    ):
        self.zygote = zygote
        self.spared = spared
        self.limits = limits
        self.pid, self.channel, self.marker = zygote.take(slots)
        self.alive = True
        if cpu is not None:
            with contextlib.suppress(OSError):  # it may have died already: the load says so
                os.sched_setaffinity(self.pid, {cpu})

    def load(self, request: Load) -> PolicyLoaded | LoadFailed:
        limit = self.limits["init_timeout_s"]
        deadline = time.monotonic() + limit * 1.25 + GRACE_S
        try:
            self.channel.send(request)
            reply = self.channel.recv(deadline)
        except FrameTimeout:
            self.kill()
            return LoadFailed(
                verdict=Verdict.INIT_TIMEOUT,
                message=f"import + Policy() took longer than {limit} s",
            )
        except (FrameError, OSError):
            kind, message = describe_exit(self._end(), "policy process")
            verdict = Verdict.OOM if kind is EpisodeErrorKind.OOM else Verdict.WORKER_CRASH
            return LoadFailed(verdict=verdict, message=message)
        if isinstance(reply, (PolicyLoaded, LoadFailed)):
            return reply
        self.kill()
        return LoadFailed(
            verdict=Verdict.WORKER_CRASH, message="the policy process answered out of turn"
        )

    def step(self, request: Step, deadline: float) -> Acted:
        try:
            self.channel.send(request)
            reply = self._reply(deadline)
        except FrameTimeout:
            slot = read_marker(self.marker)
            self.kill()
            raise PolicyGone(slot, EpisodeErrorKind.ACT_TIMEOUT, "") from None
        except (FrameError, OSError):
            slot = read_marker(self.marker)
            kind, message = describe_exit(self._end(), "policy process")
            raise PolicyGone(slot, kind, message) from None
        count = len(request.acts)
        if not isinstance(reply, Acted) or len(reply.seconds) != count:
            answered = -1
        elif reply.block is not None:
            answered = _block_rows(reply.block)
        else:
            answered = len(reply.actions)
        if answered != count:
            self.kill()
            raise PolicyGone(
                -1, EpisodeErrorKind.WORKER_CRASH, "the policy process answered out of turn"
            )
        return reply

    def _reply(self, deadline: float) -> Any:
        """The policy process's answer to a round, by ``deadline`` (the whole round's budget).
        Raises :class:`FrameTimeout` sooner once no call has started for the act limit plus
        :data:`GRACE_S` (looked at every :data:`WATCH_S`): one call has outlived its limit
        (its watchdog signal blocked or ignored), whatever else the round holds."""
        patience = self.limits["act_timeout_s"] + GRACE_S
        calls, since = read_calls(self.marker), time.monotonic()
        while True:
            try:
                return self.channel.recv(min(deadline, time.monotonic() + WATCH_S))
            except FrameTimeout:
                now = time.monotonic()
                if now >= deadline:
                    raise
                started = read_calls(self.marker)
                if started != calls:
                    calls, since = started, now
                elif now - since >= patience:
                    raise

    def sweep(self) -> None:
        """Kill whatever the policy process started (it keeps running): its descendants, and
        the orphans that came back to this worker, a subreaper (every child but ``spared``:
        the zygote and the environment's own processes)."""
        kill_descendants(self.pid)
        sweep_children(self.spared)

    def kill(self) -> None:
        """Kill the process and whatever it started. Does not wait for the zygote to report its
        end (a few milliseconds per checkpoint): after SIGKILL it runs no more code, and nothing
        needs its exit status."""
        if self.alive:
            self.alive = False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            kill_descendants(self.pid)
            self.zygote.abandon(self.pid)
            self.channel.close()

    def _end(self) -> int | None:
        """How the process ended (None: unknown). One still running (it sent something
        malformed or too large) is killed: it could run on through later checkpoints."""
        self.alive = False
        kill_descendants(self.pid)
        status = self.zygote.status(self.pid)
        if status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self.zygote.abandon(self.pid)
        self.channel.close()
        return status


class _Running:
    """One slot's episode in progress (the world's methods bound once: called every step).
    ``used`` is the wall time charged to it so far (see :meth:`LockstepRunner.run`)."""

    __slots__ = ("advance", "obs", "observe", "steps", "task", "total", "used", "world")

    def __init__(self, task: Task, world: World, obs: Any):
        self.task = task
        self.world = world
        self.observe = world.observe
        self.advance = getattr(world, "advance", None) or _advance_by_step(world)
        self.obs = obs
        self.used = 0.0
        self.total = 0.0
        self.steps = 0


class LockstepRunner:
    """Hidden-evaluation episodes of one checkpoint at a time, in lock step."""

    def __init__(
        self,
        make_world: Callable[[], World],
        zygote: Zygote,
        limits,
        slots: int,
        core: int | None = None,
        environment: frozenset[int] = frozenset(),
    ):
        self.make_world = make_world
        self.zygote = zygote
        # Children sweeps leave alone: the zygote, and the processes the environment started
        # for itself (a browser driver) before any policy code ran in this worker.
        self.spared = frozenset({zygote.pid, *environment})
        self.limits = limits
        self.wanted = slots
        self.core = core
        self.worlds: list[World] = []
        self.instances = 0  # Policy instances the current policy process built
        self.policy: SealedPolicy | None = None
        self.load_request: Load | None = None
        self._request_spare()  # prepares while the first checkpoint is on its way

    def load(self, request: Load) -> Loaded | LoadFailed:
        self.close_policy()
        self.load_request = request
        outcome = self._start()
        if isinstance(outcome, LoadFailed):
            return outcome
        return Loaded(instances=outcome)

    def _start(self) -> int | LoadFailed:
        assert self.load_request is not None
        cpu = self._pin()
        self.policy = SealedPolicy(self.zygote, self.wanted, self.limits, cpu, self.spared)
        reply = self.policy.load(self.load_request)
        self._request_spare()  # for the next checkpoint, or a restart
        if isinstance(reply, LoadFailed):
            self.policy.kill()
            self.policy = None
            return reply
        self.instances = reply.instances
        return reply.instances

    def _request_spare(self) -> None:
        """Have the zygote fork the next policy process now: it prepares while this one plays
        (the zygote is not pinned: on an idle CPU when there is one). A zygote that is gone is
        noticed when that process is needed."""
        with contextlib.suppress(OSError):
            self.zygote.request(self.wanted)

    def _pin(self) -> int | None:
        """Pin this worker to the CPU its next policy process will share (returned, None if
        unknown): a lock-step round then hands over with a context switch instead of waking
        another core (several times slower in a virtual machine). The CPU is the lane's when
        the pool gave one, else the one this worker runs on now (so that concurrent runs
        spread over the machine)."""
        cpu = self.core if self.core is not None else _current_cpu()
        if cpu is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, {cpu})
        return cpu

    def close_policy(self) -> None:
        if self.policy is not None:
            self.policy.kill()
            self.policy = None
        sweep_children(self.spared)

    def run(self, request: RunEpisodes, send: Callable[[EpisodeDone], None]) -> None:
        """Play ``request.tasks``, sending each :class:`EpisodeDone` as it ends.

        Wall time is charged per episode, as if it had run alone: each round's time goes to the
        slots whose calls took it (the policy process reports each slot's seconds; the worker
        bounds what it believes by the round's own duration), and what no call took (stepping
        the worlds, the messages) is shared evenly. A policy that misreports only moves time
        between its own episodes; the act limit bounds every call regardless."""
        limits = self.limits
        act_limit, wall_limit = limits["act_timeout_s"], limits["rollout_wall_s"]
        max_steps = request.max_steps
        queue = deque(request.tasks)
        running: dict[int, _Running] = {}
        fresh: set[int] = set()
        self._grow(len(queue))
        # Episodes charged at least ``tight`` seconds have less than a whole act limit left: a
        # round with one of them gives each call its own limit, every other round one for all.
        tight = wall_limit - act_limit
        crowded = tight <= 0.0

        def finish(slot: int, error: EpisodeError | None) -> None:
            state = running.pop(slot)
            fresh.discard(slot)
            send(
                EpisodeDone(
                    index=state.task.index,
                    episode_return=state.total,
                    length=state.steps,
                    error=error,
                )
            )

        while queue or running:
            if self.policy is None:
                restarted = self._start() if self.load_request is not None else None
                if not isinstance(restarted, int):
                    reason = restarted.message if restarted is not None else "no checkpoint"
                    for task in [*(s.task for s in running.values()), *queue]:
                        send(
                            _failed(
                                task,
                                EpisodeErrorKind.WORKER_CRASH,
                                f"the policy process could not restart: {reason}",
                            )
                        )
                    return
            policy = self.policy
            assert policy is not None
            started = time.monotonic()
            capacity = min(self.instances, len(self.worlds))
            if queue and len(running) < capacity:
                for slot in range(capacity):
                    if slot in running or not queue:
                        continue
                    task = queue.popleft()
                    world = self.worlds[slot]
                    try:
                        obs = world.reset(task.seed)
                    except Exception as exc:
                        message = f"{type(exc).__name__}: {exc}"
                        send(_failed(task, EpisodeErrorKind.ENV_ERROR, message))
                        continue
                    running[slot] = _Running(task, world, obs)
                    fresh.add(slot)
            if not running:
                continue
            block = self._block([state.obs for state in running.values()])
            if crowded:
                acts = [
                    (
                        slot,
                        None if block is not None else state.observe(state.obs),
                        max(min(act_limit, wall_limit - state.used), 0.0),
                    )
                    for slot, state in running.items()
                ]
            elif block is not None:
                acts = [(slot, None, act_limit) for slot in running]
            else:
                acts = [
                    (slot, state.observe(state.obs), act_limit) for slot, state in running.items()
                ]
            resets = (
                [
                    (slot, running[slot].task.episode_index, seconds)
                    for slot, _obs, seconds in acts
                    if slot in fresh
                ]
                if fresh
                else []
            )
            budget = (len(resets) + len(acts)) * act_limit
            try:
                round_request = Step(resets, acts, block)
                acted = policy.step(round_request, time.monotonic() + budget + GRACE_S)
            except PolicyGone as gone:
                sent = {slot: seconds for slot, _obs, seconds in acts}
                self._recover(gone, running, queue, finish, sent)
                fresh.clear()
                continue
            fresh.clear()
            failed = {error.slot: error for error in acted.errors} if acted.errors else None
            actions, coerced = self._actions(acted)
            any_ended = False  # what the policy started goes before its next call
            for (slot, _obs, seconds), action in zip(acts, actions, strict=True):
                state = running[slot]
                if failed is not None and slot in failed:
                    error = failed[slot]
                    kind, message = error.category, error.message
                    if kind is EpisodeErrorKind.ACT_TIMEOUT:
                        if seconds < act_limit:  # the call had what was left of the episode
                            kind = EpisodeErrorKind.EPISODE_TIMEOUT
                        message = timeout_error(kind, error.call, limits)
                    finish(slot, EpisodeError(kind, message, error.traceback, state.steps))
                    any_ended = True
                    continue
                try:
                    obs, reward, ended = state.advance(action, coerced)
                except Exception as exc:
                    message = f"{type(exc).__name__}: {exc}"
                    error = EpisodeError(EpisodeErrorKind.ENV_ERROR, message, None, state.steps)
                    finish(slot, error)
                    continue
                state.total += reward
                state.steps = steps = state.steps + 1
                state.obs = obs
                if ended or steps >= max_steps:
                    finish(slot, None)
                    any_ended = True
            elapsed = time.monotonic() - started
            over, crowded = _charge(running, acts, acted.seconds, elapsed, wall_limit, tight)
            for slot in over:
                message = timeout_error(EpisodeErrorKind.EPISODE_TIMEOUT, "act", limits)
                steps = running[slot].steps
                finish(slot, EpisodeError(EpisodeErrorKind.EPISODE_TIMEOUT, message, None, steps))
                any_ended = True
            if any_ended:  # once per round: the episodes of a round often end together
                policy.sweep()
            crowded = crowded or tight <= 0.0

    def _block(self, observations: list[Any]) -> ArrayBlock | None:
        """The round's observations as one :class:`ArrayBlock` when the worlds can stack them."""
        stack = getattr(self.worlds[0], "observe_stack", None) if self.worlds else None
        stacked = stack(observations) if stack is not None else None
        if stacked is None:
            return None
        return ArrayBlock(stacked.dtype.str, list(stacked.shape), stacked.tobytes())

    def _actions(self, acted: Acted) -> tuple[list[Any], bool]:
        """The round's actions, and whether they come coerced (members of the action space, for
        ``World.advance``): a block of float rows is coerced at once where the worlds can."""
        if acted.block is None:
            return acted.actions, False
        values = np.frombuffer(acted.block.data, dtype=FLOAT64).reshape(acted.block.shape)
        coerce_rows = getattr(self.worlds[0], "coerce_rows", None)
        if coerce_rows is None:
            return values.tolist(), False
        return coerce_rows(values), True

    def _grow(self, wanted: int) -> None:
        """Build worlds up to ``wanted`` (bounded by the policy's instances): worlds are kept
        from checkpoint to checkpoint. Stops early once this process holds
        :data:`WORLDS_MEMORY_BYTES` (always at least one world)."""
        wanted = min(wanted, self.instances)
        while len(self.worlds) < wanted:
            if self.worlds and _resident_bytes() > WORLDS_MEMORY_BYTES:
                break
            self.worlds.append(self.make_world())

    def _recover(
        self,
        gone: PolicyGone,
        running: dict[int, _Running],
        queue: deque,
        finish,
        limits_sent: dict[int, float],
    ) -> None:
        """The policy process is gone: blame the slot that was running, replay the others."""
        culprit = gone.slot if gone.slot in running else min(running)
        state = running[culprit]
        kind, message = gone.kind, gone.message
        if kind is EpisodeErrorKind.ACT_TIMEOUT:
            if limits_sent.get(culprit, 0.0) < self.limits["act_timeout_s"]:
                kind = EpisodeErrorKind.EPISODE_TIMEOUT
            message = timeout_error(kind, "act", self.limits) + " and the policy process was killed"
        finish(culprit, EpisodeError(kind, message, None, state.steps))
        for slot in sorted(running, reverse=True):
            queue.appendleft(running.pop(slot).task)
        self.policy = None
        sweep_children(self.spared)


def _advance_by_step(world: World) -> Callable[[Any, bool], tuple[Any, float, bool]]:
    """``World.advance`` for a world without one: its ``step`` (which coerces any action)."""
    step = world.step

    def advance(action: Any, _coerced: bool) -> tuple[Any, float, bool]:
        obs, reward, terminated, truncated, _info = step(action)
        return obs, reward, terminated or truncated

    return advance


def _charge(
    running: dict[int, _Running],
    acts: list[tuple[int, Any, float]],
    reported: list[float],
    elapsed: float,
    limit: float,
    tight: float,
) -> tuple[list[int], bool]:
    """Charge a round's ``elapsed`` seconds to the episodes still running: what the policy
    process says each slot's calls took (believed up to ``elapsed`` in total), plus an even share
    of the rest. Returns the slots that reached ``limit``, and whether any episode now has
    been charged ``tight`` seconds or more."""
    total = sum(reported)
    if not total <= elapsed or not min(reported, default=0.0) >= 0.0:  # NaN fails both
        reported = [_clamp(seconds, elapsed) for seconds in reported]
        total = sum(reported)
        if total > elapsed:
            reported = [seconds * elapsed / total for seconds in reported]
            total = elapsed
    share = (elapsed - total) / len(acts)
    over = []
    crowded = False
    for (slot, _obs, _seconds), seconds in zip(acts, reported, strict=True):
        state = running.get(slot)
        if state is not None:
            state.used = used = state.used + seconds + share
            if used >= tight:
                if used >= limit:
                    over.append(slot)
                else:
                    crowded = True
    return over, crowded


def _clamp(seconds: float, elapsed: float) -> float:
    """``seconds`` within ``[0, elapsed]``; NaN counts as 0."""
    if not seconds >= 0.0:
        return 0.0
    return seconds if seconds <= elapsed else elapsed


def _block_rows(block: ArrayBlock) -> int:
    """The rows of an action block from the policy process, or -1 unless it is what
    :func:`~._sealed.float_rows` makes: native float64, two dimensions, as many bytes as that."""
    shape = block.shape
    if block.dtype != FLOAT64 or len(shape) != 2 or min(shape) < 1:
        return -1
    return shape[0] if len(block.data) == shape[0] * shape[1] * 8 else -1


def _resident_bytes() -> int:
    """Resident memory of this process (second field of ``/proc/self/statm``, in pages)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * mmap.PAGESIZE
    except (OSError, IndexError, ValueError):
        return 0


def _current_cpu() -> int | None:
    """The CPU this process runs on now (field 39 of ``/proc/self/stat``)."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return int(fields[36])
    except (OSError, IndexError, ValueError):
        return None


def _failed(task: Task, kind: EpisodeErrorKind, message: str) -> EpisodeDone:
    return EpisodeDone(
        index=task.index,
        episode_return=0.0,
        length=0,
        error=EpisodeError(kind, message),
    )
