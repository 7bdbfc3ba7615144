"""Environment workers: processes forked by a lane host that build an environment and play
episodes of one checkpoint at a time. Entry point: :func:`serve` (``Spawn.entry``).

A worker talks to the judge only through its channel (:mod:`evopolicygym.protocol` worker
messages); its stdout and stderr are pipes the judge drains and caps. It is a subreaper:
whatever policy code starts comes back to it and is killed after every episode.

* A **train** worker (submits) loads the checkpoint into its own process, after hardening
  itself (limits, ``no_new_privs``, Landlock, seccomp: :func:`evopolicygym.sandbox.harden`), and
  plays episodes one after the other, recording them. Policy code shares the process with the
  environment, so the judge uses a train worker for one checkpoint only.
* A **sealed** worker (hidden evaluation) never runs policy code: before it builds anything it
  forks a pristine policy zygote, which forks one sealed policy process per checkpoint; the
  worker steps several episodes in lock step against it (``_lockstep``). It serves any number
  of checkpoints, one after the other.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import socket
import tempfile
import traceback
from pathlib import Path

import msgspec

from evopolicygym.envs import RuntimeSpec, World
from evopolicygym.envs.jsonsafe import to_jsonsafe
from evopolicygym.protocol import (
    EpisodeDone,
    EpisodeError,
    EpisodeErrorKind,
    ForkPolicy,
    Load,
    Loaded,
    LoadFailed,
    RunEpisodes,
    Task,
    Verdict,
    WorkerConfig,
    WorkerRequest,
    WorkerUp,
    ZygoteReply,
)
from evopolicygym.sandbox import (
    Channel,
    FrameError,
    become_subreaper,
    children,
    harden,
    lower_rlimits,
    sweep_children,
)

from ._capture import Watchdog
from ._episode import play_episode
from ._loader import CheckpointLoader, rehearse_load, write_checkpoint
from ._lockstep import LockstepRunner, Zygote
from ._recorder import EpisodeRecorder
from ._sealed import run_zygote

# Steps a warm train worker plays with random actions before its checkpoint arrives (_rehearse),
# for adapters whose environments are plain simulators (a web environment rehearsed this way
# failed its next reset in a hardened worker).
REHEARSAL_STEPS = 8
REHEARSED_ADAPTERS = frozenset({"gymnasium", "toy"})


def serve(fd: int, argument: bytes) -> int:
    """Run a worker on channel ``fd`` with the msgpack-encoded :class:`WorkerConfig`."""
    config = msgspec.msgpack.decode(argument, type=WorkerConfig)
    # A worker often boots while its lane plays: off the lanes' CPUs until it is warm.
    _take_cpus(config.boot_cpus)
    channel = Channel.from_fd(fd, WorkerRequest, enc_hook=to_jsonsafe)
    become_subreaper()
    if config.sealed:
        return _serve_sealed(channel, config)
    return _serve_train(channel, config)


def runtime_modules(spec_json: str) -> list[str]:
    """Modules a worker imports to build the environment of ``spec_json`` (an ``EnvSpec`` as
    JSON): its lane host imports them before it forks workers. A missing extra is not an error
    here (the worker that builds the environment reports it)."""
    return RuntimeSpec(json.loads(spec_json)).runtime_modules()


def _build(config: WorkerConfig):
    """``(spec, world, None)`` or ``(spec, None, error text)``: a broken environment is the
    harness's fault, reported as ``env_error``, not a crash."""
    spec = RuntimeSpec(config.env_spec)
    try:
        return spec, spec.make_world(), None
    except Exception as exc:
        return spec, None, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"


def _worker_up(world: World | None, problem: str | None) -> WorkerUp:
    """What a train worker reports once up: its world's schemas too, when it can say."""
    describe = getattr(world, "describe", None)
    if describe is None:
        return WorkerUp(env_error=problem)
    try:
        obs_space, action_space = describe()
    except Exception:  # the judge then describes the environment itself, and shows why
        return WorkerUp(env_error=problem)
    return WorkerUp(env_error=problem, obs_space=obs_space, action_space=action_space)


def _take_cpus(cpus: set[int] | list[int] | None) -> None:
    """Run on ``cpus`` from now on (nothing when None)."""
    if cpus:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cpus)


def _env_failure(problem: str) -> LoadFailed:
    return LoadFailed(verdict=Verdict.ENV_ERROR, message=problem.splitlines()[0], traceback=problem)


def _serve_train(channel: Channel, config: WorkerConfig) -> int:
    watchdog = Watchdog()
    limits = config.limits
    spec, world, problem = _build(config)
    # Warm: it waits for its checkpoint on the CPU it will play on (moving there once the
    # checkpoint has arrived would put the move on the submit's path).
    lane_cpu = {config.core} if config.core is not None else None
    if problem is None:
        if spec.adapter in REHEARSED_ADAPTERS:
            _rehearse(world, limits, watchdog, channel.encode)
        rehearse_load(watchdog, limits)
        # Processes the environment started for itself (a browser driver): never the policy's.
        environment = set(children(os.getpid()))
        system = Path(tempfile.mkdtemp(prefix="policy-")) / "system"
        # Hardened while warm, so that a submit waits only for its files to be written and
        # imported. The move to the lane's CPU comes last, right before the seccomp filter
        # that forbids the policy any other (the rest stays on the boot CPUs, off a submit
        # that may be playing on the lane's). The file size limit comes after the write: it
        # binds policy code, not the checkpoint's own files (the snapshot cap bounds those).
        harden(
            {**limits, "file_size_bytes": None},
            Path(tempfile.gettempdir()),
            landlock_abi=config.landlock_abi,
            seccomp=config.seccomp,
            cpus=lane_cpu,
        )
    else:
        _take_cpus(lane_cpu)
    channel.send(_worker_up(world, problem))
    try:
        load = channel.recv()
    except FrameError:
        return 0  # a warm worker that was never used
    if not isinstance(load, Load):
        return 0
    if problem is not None:
        channel.send(_env_failure(problem))
        return 0
    write_checkpoint(load.files, system)
    lower_rlimits(limits)
    os.chdir(system)
    policy, failure, out, err = CheckpointLoader(system, load, watchdog, limits).first()
    if failure is not None:
        channel.send(failure)
        return 0
    # Everything loaded so far lives as long as the worker: keep it out of the collector's way.
    gc.freeze()
    channel.send(Loaded())
    pending = (out, err)
    while True:
        try:
            request = channel.recv()
        except FrameError:
            return 0
        if not isinstance(request, RunEpisodes):
            return 0
        for task in request.tasks:
            recorder = None
            if request.record:
                recorder = EpisodeRecorder(
                    world.observe,
                    obs_external=request.obs_external,
                    compress_images=request.compress_images,
                )
            done = play_episode(
                world,
                policy,
                task,
                max_steps=request.max_steps,
                limits=limits,
                watchdog=watchdog,
                recorder=recorder,
                system=system,
                prefix_output=pending,
            )
            pending = ("", "")
            # Nothing the policy started outlives its episode (orphans come back to this
            # subreaper, whatever session they moved to).
            sweep_children(environment, reap_others=False)
            try:
                channel.send(done)
            except (OverflowError, TypeError, ValueError) as exc:  # what encoding refuses
                channel.send(_unsendable(done, exc))


def _unsendable(done: EpisodeDone, exc: Exception) -> EpisodeDone:
    """``done`` without its record and output, which cannot be sent (an action the policy
    returned as an int beyond 64 bits): the episode keeps its return and fails, named."""
    error = done.error or EpisodeError(
        EpisodeErrorKind.ACT_ERROR,
        f"the episode's record cannot be sent to the judge ({type(exc).__name__}: {exc}): "
        "return actions as plain numbers or lists",
        None,
        done.length,
    )
    return EpisodeDone(
        index=done.index, episode_return=done.episode_return, length=done.length, error=error
    )


class _Sampler:
    """The rehearsal's policy: the world's own seeded random actions."""

    def __init__(self, world):
        self.act = lambda _obs: world.sample()

    def reset(self, episode_index: int) -> None:
        pass


def _rehearse(world, limits: dict, watchdog: Watchdog, encode) -> None:
    """Play a few recorded steps of random actions before any checkpoint arrives, store their
    observations as a file would be, and ``encode`` the result as a reply. A forked worker's
    first touch of each page it shares with its host copies that page; doing it now takes
    several milliseconds off the first episode of a submit. Every episode reseeds the world, so
    nothing of this carries over. A failure here is left to the real episodes."""
    recorder = EpisodeRecorder(world.observe, obs_external=True, compress_images=False)
    task = Task(index=0, seed=0, episode_index=0)
    done = play_episode(
        world,
        _Sampler(world),
        task,
        max_steps=REHEARSAL_STEPS,
        limits=limits,
        watchdog=watchdog,
        recorder=recorder,
    )
    encode(done)  # the bytes are dropped: this warms the encoder's path, not the channel


def _serve_sealed(channel: Channel, config: WorkerConfig) -> int:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    worker = os.getpid()
    pid = os.fork()
    if pid == 0:  # the zygote: forked before any environment or seed exists in this process
        status = 1
        try:
            ours.close()
            channel.close()
            run_zygote(Channel(theirs, ForkPolicy), config, worker)
            status = 0
        finally:
            os._exit(status)
    theirs.close()
    zygote = Zygote(Channel(ours, ZygoteReply), pid)
    spec, world, problem = _build(config)
    # Processes the environment started for itself (a browser driver), listed before any policy
    # process exists: sweeps spare them (killing the driver hung the next browser call).
    environment = frozenset(children(worker)) - {pid}
    channel.send(WorkerUp(env_error=problem))
    if problem is not None:
        return _refuse_all(channel, problem)
    # Further slots' worlds share what the first one's never changes, where it can say.
    sibling = getattr(world, "sibling", None) or spec.make_world
    worlds = iter([world])
    runner = LockstepRunner(
        lambda: next(worlds, None) or sibling(),
        zygote,
        config.limits,
        config.slots,
        config.core,
        environment,
    )
    try:
        while True:
            try:
                request = channel.recv()
            except FrameError:
                return 0
            if isinstance(request, Load):
                channel.send(runner.load(request))
            elif isinstance(request, RunEpisodes):
                runner.run(request, channel.send)
            else:
                return 0
    finally:
        runner.close_policy()
        sweep_children(set())


def _refuse_all(channel: Channel, problem: str) -> int:
    while True:
        try:
            request = channel.recv()
        except FrameError:
            return 0
        if isinstance(request, Load):
            channel.send(_env_failure(problem))
        else:
            return 0
