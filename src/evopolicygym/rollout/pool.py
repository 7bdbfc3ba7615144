"""Runs the episodes of checkpoints on a pool of sandboxed workers.

The pool has ``jobs`` lanes. A lane is one sandbox (:class:`~evopolicygym.sandbox.HostProcess`:
bubblewrap at the ``namespaced`` level) whose host forks workers: a warm train worker is always
waiting (environment built, no policy loaded), so a submit never waits for a process to start,
and a sealed worker serves hidden evaluation checkpoint after checkpoint (a lane goes on to
its share of the next checkpoint without waiting for the other lanes: :meth:`WorkerPool.evaluate`).

Episodes are dealt to lanes round-robin (episode ``i`` to lane ``i % jobs``), so the assignment,
and any policy state carried between a worker's episodes, does not depend on timing. A train
worker that dies, overruns a limit or sends what the judge refuses is killed, the episode gets
an error saying why, and a fresh worker takes the lane's remaining episodes. A policy that
cannot be imported or constructed fails the whole call with its :class:`LoadFailed` verdict.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from evopolicygym.envs import EnvSpec, SpaceSchemas
from evopolicygym.protocol import (
    CheckpointFile,
    EpisodeDone,
    EpisodeError,
    EpisodeErrorKind,
    LimitsSection,
    Load,
    Loaded,
    LoadFailed,
    RunEpisodes,
    Steps,
    Task,
    Verdict,
    WorkerConfig,
    WorkerReply,
    WorkerUp,
)
from evopolicygym.sandbox import (
    Channel,
    ChannelClosed,
    FrameError,
    FrameTimeout,
    HostError,
    HostProcess,
    IsolationPlan,
    SpawnRefused,
    probe,
)

from ._bounds import train_message_cap
from ._cpus import claim_cpus
from ._exits import describe_exit
from ._output import OutputDrain

# Extra seconds the judge waits beyond a limit before it kills a worker: environment
# construction for a load, result serialization for episodes.
INIT_GRACE_S = 60.0
EPISODE_GRACE_S = 15.0
# Pauses before asking a lane host again for a worker it could not fork (its process cap was
# full): a killed worker's processes and threads take a moment to exit.
SPAWN_PAUSES_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
# Seconds the judge waits for a lane host to report how a worker ended once its channel has
# closed (the report takes milliseconds); a worker not reported by then is still running.
EXIT_REPORT_S = 2.0
# Episodes a sealed worker steps in lock step (fewer when the envspec says so, when the policy
# is slow or large to build, or when there are fewer episodes): more of them share each message
# round trip. 64 against 32: CartPole's hidden episodes 3% faster, HalfCheetah's 8% (one worker,
# docs/performance.md); 128 no faster than 64 for HalfCheetah.
SEALED_SLOTS = 64
WORKER_MODULE = "evopolicygym.rollout.worker"
WORKER_ENTRY = f"{WORKER_MODULE}:serve"
# Modules every lane host imports before it forks workers; then it asks the worker module which
# modules the environment needs (``worker.runtime_modules``: the adapter, which imports its
# simulator, e.g. Gymnasium, and the environment's own module).
PRELOAD = ["numpy", WORKER_MODULE]
_FATAL = {
    EpisodeErrorKind.EPISODE_TIMEOUT,
    EpisodeErrorKind.OOM,
    EpisodeErrorKind.CPU_LIMIT,
    EpisodeErrorKind.FILE_SIZE_LIMIT,
    EpisodeErrorKind.WORKER_CRASH,
}

EpisodeTask = Task
EpisodeResult = EpisodeDone
InitFailure = LoadFailed


class WorkerJob(NamedTuple):
    """What a worker needs to run a checkpoint: its files (verified by the caller), their
    content hash, and the constructor arguments of ``Policy``; ``episodes`` (0: unknown) is
    how many episodes it will play on that worker (see :class:`Load`)."""

    files: list[CheckpointFile]
    tree_hash: str
    obs_space: dict[str, Any]
    action_space: dict[str, Any]
    env_meta: dict[str, Any]
    episodes: int = 0

    def load(self) -> Load:
        return Load(
            files=self.files,
            tree_hash=self.tree_hash,
            obs_space=self.obs_space,
            action_space=self.action_space,
            env_meta=self.env_meta,
            episodes=self.episodes,
        )


class WorkerDied(Exception):
    """The worker ended or stopped answering; ``kind``/``message`` say why."""

    def __init__(self, kind: EpisodeErrorKind, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


class WorkerLost(WorkerDied):
    """The worker was found dead before a checkpoint reached it (it died booting, or while it
    waited): no code of that checkpoint ran in it."""


class _Worker:
    """The judge's handle on one worker process."""

    def __init__(self, lane: _Lane, sealed: bool):
        self.lane = lane
        self.sealed = sealed
        pool = lane.pool
        config = WorkerConfig(
            env_spec=pool.env_spec,
            limits=pool.limits.model_dump(),
            sealed=sealed,
            core=lane.core,
            boot_cpus=pool.boot_cpus,
            slots=pool.sealed_slots if sealed else 1,
            landlock_abi=pool.plan.landlock_abi,
            seccomp=pool.plan.seccomp,
        )
        host = lane.ensure_host()
        child = host.spawn(WORKER_ENTRY, msgspec.msgpack.encode(config))
        self.host = host
        self.child = child.child
        self.key = next(pool.keys)
        self.channel = Channel.from_fd(child.channel_fd, WorkerReply)
        pool.output.add(
            self.key,
            child.stdout_fd,
            child.stderr_fd,
            pool.limits.output_bytes,
            f"{'sealed' if sealed else 'train'} worker {self.key} (lane {lane.number})",
        )
        self.up: WorkerUp | None = None
        self.closed = False

    def _recv(self, deadline: float) -> Any:
        try:
            return self.channel.recv(deadline)
        except FrameTimeout:  # a TimeoutError, hence an OSError: the caller's to handle
            raise
        except (ChannelClosed, OSError):
            raise WorkerDied(*self.death()) from None
        except FrameError as refused:
            raise WorkerDied(*self.refuse(refused)) from None

    def load(self, job: WorkerJob) -> Loaded | LoadFailed:
        """Send ``job``'s checkpoint and wait until its ``Policy`` is built. Raises
        :class:`WorkerLost` when the worker is found dead before the checkpoint reached it;
        every later failure is the checkpoint's :class:`LoadFailed`."""
        limits = self.lane.pool.limits
        deadline = time.monotonic() + limits.init_timeout_s + INIT_GRACE_S
        try:
            self._deliver(job, deadline)
            reply = self._recv(deadline)
        except FrameTimeout:
            self.kill()
            return LoadFailed(
                verdict=Verdict.INIT_TIMEOUT,
                message=f"the policy did not start within {limits.init_timeout_s} s",
            )
        except WorkerLost:
            raise
        except WorkerDied as died:
            return LoadFailed(verdict=_load_verdict(died.kind), message=died.message)
        if isinstance(reply, (Loaded, LoadFailed)):
            return reply
        self.kill()
        return LoadFailed(verdict=Verdict.WORKER_CRASH, message="the worker answered out of turn")

    def wait_up(self, deadline: float) -> WorkerUp:
        """The worker's report that it built its environment (received once). Raises
        :class:`WorkerLost` when it died first, :class:`WorkerDied` when it answered something
        else, ``FrameTimeout`` at ``deadline``."""
        if self.up is None:
            try:
                up = self._recv(deadline)
            except WorkerDied as died:
                raise WorkerLost(died.kind, died.message) from None
            if not isinstance(up, WorkerUp):
                self.kill()
                raise WorkerDied(EpisodeErrorKind.WORKER_CRASH, "the worker answered out of turn")
            self.up = up
        return self.up

    def _deliver(self, job: WorkerJob, deadline: float) -> None:
        """Send ``job``'s checkpoint once the worker has reported itself up."""
        self.wait_up(deadline)
        try:
            self.channel.send(job.load())
        except OSError:
            raise WorkerLost(*self.death()) from None

    def start_episodes(self, request: RunEpisodes) -> None:
        try:
            self.channel.send(request)
        except OSError:
            raise WorkerDied(*self.death()) from None

    def next_episode(self, wanted: set[int]) -> EpisodeDone:
        limits = self.lane.pool.limits
        wait = limits.rollout_wall_s + EPISODE_GRACE_S
        if self.sealed:
            # Episodes in lock step share the clock: each is charged its own time, so the first
            # of them may end only after every slot has spent its limit (the worker enforces
            # the limits; this only catches a worker that hangs).
            wait += self.lane.pool.sealed_slots * (limits.rollout_wall_s + limits.act_timeout_s)
        deadline = time.monotonic() + wait
        try:
            reply = self._recv(deadline)
        except FrameTimeout:
            self.kill()
            raise WorkerDied(
                EpisodeErrorKind.EPISODE_TIMEOUT,
                f"episode exceeded the {limits.rollout_wall_s} s limit and its worker was killed",
            ) from None
        if (
            not isinstance(reply, EpisodeDone)
            or reply.index not in wanted
            or not _steps_line_up(reply.steps)
        ):
            self.kill()
            raise WorkerDied(
                EpisodeErrorKind.WORKER_CRASH,
                "the policy worker sent an invalid episode result",
            )
        if not math.isfinite(reply.episode_return):
            _refuse_return(reply)
        if not self.sealed:
            out, err = self.lane.pool.output.cut(self.key)
            reply.stdout += out
            reply.stderr += err
        return reply

    def kill(self) -> None:
        self.host.kill(self.child)

    def death(self) -> tuple[EpisodeErrorKind, str]:
        """Why the worker's channel closed: how the worker ended, as its host reports within
        :data:`EXIT_REPORT_S`. A worker still running by then closed its channel itself (policy
        code can): it is killed, and that is what the error says."""
        exited = self.host.wait_exit(self.child, timeout=EXIT_REPORT_S)
        if exited is None and self.host.alive:
            self.kill()
            self.host.wait_exit(self.child, timeout=EXIT_REPORT_S)
            self.closed = True
            return (
                EpisodeErrorKind.WORKER_CRASH,
                "the policy worker closed its channel to the judge and was killed",
            )
        self.closed = True
        what = "sealed worker" if self.sealed else "policy worker"  # a sealed one runs no policy
        return describe_exit(exited.status if exited is not None else None, what)

    def refuse(self, problem: FrameError) -> tuple[EpisodeErrorKind, str]:
        """Kill a worker that sent a frame the judge refuses (malformed, or over the channel's
        cap). It is likely still running, since policy code can write to its channel: waiting
        for it to end would stall the lane. :meth:`close` collects its exit."""
        self.kill()
        return (
            EpisodeErrorKind.WORKER_CRASH,
            f"the policy worker sent a message the judge refuses ({problem}) and was killed",
        )

    def close(self) -> None:
        """Stop the worker (if running) and release its pipes."""
        if not self.closed:
            self.host.kill(self.child)
            self.host.wait_exit(self.child, timeout=10)
            self.closed = True
        self.release()

    def release(self) -> None:
        """Release the judge's ends of a worker that is gone (or whose host is gone)."""
        self.closed = True
        self.channel.close()
        self.lane.pool.output.remove(self.key)


class _Lane:
    """One sandbox and the workers it hosts."""

    def __init__(self, pool: WorkerPool, number: int):
        self.pool = pool
        self.number = number
        # The CPU this lane's workers play on (see _cpus.py); None: wherever the scheduler
        # puts them (a sealed worker then picks the CPU it runs on at each checkpoint).
        self.core = pool.cpus.cores[number]
        self.host: HostProcess | None = None
        self.warm: _Worker | None = None
        self.sealed: _Worker | None = None
        self.lock = threading.Lock()
        self.host_lock = threading.Lock()

    def ensure_host(self) -> HostProcess:
        with self.host_lock:  # a submit and a background prewarm may both need it first
            return self._ensure_host()

    def _ensure_host(self) -> HostProcess:
        if self.host is not None and not self.host.alive:
            self.host.terminate()
            self.host = None
        if self.host is None:
            pool = self.pool
            self.host = HostProcess(
                pool.plan,
                preload=PRELOAD,
                expand=(f"{WORKER_MODULE}:runtime_modules", pool.env_spec_json),
                max_processes=pool.lane_tasks,
                log_path=pool.log_path,
                cpus=pool.boot_cpus,
            )
            self.host.wait_up()
        return self.host

    def prewarm(self) -> None:
        """Make sure a warm train worker waits (spawned outside the lock: a submit never waits
        for it)."""
        with self.lock:
            if self.warm is not None or self.sealed is not None:
                return
        worker = self._spawn(sealed=False)
        with self.lock:
            if self.warm is None and self.sealed is None:
                self.warm = worker
                return
        worker.close()

    def _spawn(self, sealed: bool) -> _Worker:
        """A new worker. A host that cannot fork (the lane's process cap is full: a policy's
        processes or threads have not all exited yet) is asked again after growing pauses; a
        host that is gone or does not answer is replaced once."""
        replaced = False
        pauses = iter(SPAWN_PAUSES_S)
        while True:
            try:
                return _Worker(self, sealed)
            except SpawnRefused:
                pause = next(pauses, None)
                if pause is None:
                    raise
                time.sleep(pause)
            except HostError:
                if replaced:
                    raise
                replaced = True
                with self.host_lock:
                    if self.host is not None:
                        self.host.terminate()
                        self.host = None

    def take_train(self, max_bytes: int) -> _Worker:
        """The warm train worker (one started now if none waits), reading frames of at most
        ``max_bytes`` (policy code can write to its channel). The caller starts the next one
        (:meth:`prewarm`, in the background) once this one's checkpoint is loaded."""
        with self.lock:
            worker, self.warm = self.warm, None
        worker = worker or self._spawn(sealed=False)
        worker.channel.max_bytes = max_bytes
        return worker

    def take_sealed(self) -> _Worker:
        with self.lock:
            if self.warm is not None:  # hidden evaluation has begun: no more submits
                self.pool.background(self.warm.close)
                self.warm = None
            if self.sealed is None or self.sealed.closed:
                self.sealed = self._spawn(sealed=True)
            return self.sealed

    def drop_sealed(self) -> None:
        with self.lock:
            if self.sealed is not None:
                self.sealed.close()
                self.sealed = None

    def close(self) -> None:
        """Stop the host, which kills every worker it forked, then release their pipes."""
        with self.lock:
            workers = [w for w in (self.warm, self.sealed) if w is not None]
            self.warm = self.sealed = None
        with self.host_lock:
            host, self.host = self.host, None
        if host is not None:
            host.close()
        for worker in workers:
            worker.release()


class WorkerPool:
    """Executes the episodes of one environment in sandboxed worker processes.

    ``jobs`` bounds the workers of one :meth:`run`; ``plan`` is the isolation (default: the
    strongest level this machine offers). Each lane claims a CPU of its own for as long as the
    pool lives (:attr:`lane_cpus`; fewer when other runs hold the rest): its workers play there,
    and the owner may keep its own threads off them (``_cpus.kept_off``). Calls to :meth:`run`
    must not overlap (the judge serializes them); :meth:`close` stops everything."""

    def __init__(
        self,
        env_spec: dict[str, Any],
        jobs: int,
        limits: LimitsSection,
        log_path: Path | None = None,
        *,
        plan: IsolationPlan | None = None,
    ):
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.env_spec = env_spec
        self.jobs = jobs
        self.limits = limits
        self.log_path = log_path
        self.plan = plan or probe()
        # On the lane host's command line: without the task text, which it does not need.
        spec = EnvSpec.model_validate(env_spec)
        self.env_spec_json = spec.model_dump_json(exclude={"task"})
        self.sealed_slots = min(SEALED_SLOTS, spec.hidden_slots or SEALED_SLOTS)
        # The lane's process cap: the policy's, and what the environment's helpers need.
        self.lane_tasks = limits.max_processes + spec.helper_tasks
        self.output = OutputDrain(log_path)
        self.keys = itertools.count()
        self.cpus = claim_cpus(jobs)
        # Workers boot off every lane's CPU (this pool's and the other claims') when the
        # machine has others.
        self.boot_cpus = sorted(self.cpus.free_cpus()) or None
        self.lanes = [_Lane(self, number) for number in range(jobs)]
        # Housekeeping off the critical path: retiring used workers, starting warm ones.
        self._housekeeping = ThreadPoolExecutor(max_workers=2, thread_name_prefix="pool")
        self._starting: threading.Thread | None = None
        self._starting_lock = threading.Lock()
        self._start_failure: BaseException | None = None

    @property
    def lane_cpus(self) -> set[int]:
        """The CPUs this pool's lanes claimed."""
        return self.cpus.held

    @property
    def claimed_cpus(self) -> set[int]:
        """The CPUs claimed by this pool's lanes and by the other claims it saw: what its owner
        keeps its own threads off (``kept_off``)."""
        return self.cpus.held | self.cpus.others

    def start(self) -> None:
        """Start every lane's host and warm train worker in the background; :meth:`prewarm`
        then waits for them."""
        with self._starting_lock:
            if self._starting is None:
                self._starting = threading.Thread(
                    target=self._start_lanes, name="lanes", daemon=True
                )
                self._starting.start()

    def _start_lanes(self) -> None:
        try:
            self._prewarm_lanes()
        except BaseException as exc:  # re-raised by prewarm()
            self._start_failure = exc

    def prewarm(self) -> None:
        """Start every lane's host and warm train worker (in parallel; returns when done).
        Re-raises what went wrong starting them."""
        self.start()
        assert self._starting is not None
        self._starting.join()
        if self._start_failure is not None:
            raise self._start_failure

    def _prewarm_lanes(self) -> None:
        threads = [threading.Thread(target=lane.prewarm, daemon=True) for lane in self.lanes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def describe(self) -> SpaceSchemas | None:
        """The schemas of the environment's spaces as the first lane's warm worker reported
        them from the world it built (:meth:`prewarm` first, then waits for that worker); None
        when it could not build one, its world cannot say, or it died. Ask before any
        checkpoint was loaded on the pool: the report is trusted because no policy code has
        run in the lane yet."""
        self.prewarm()
        lane = self.lanes[0]
        with lane.lock:
            worker = lane.warm
        if worker is None:
            return None
        deadline = time.monotonic() + self.limits.init_timeout_s + INIT_GRACE_S
        try:
            up = worker.wait_up(deadline)
        except (WorkerDied, OSError):  # lost, out of turn or silent: the next submit sees it
            return None
        if up.env_error is not None or up.obs_space is None or up.action_space is None:
            return None
        return SpaceSchemas(up.obs_space, up.action_space)

    def prepare_hidden(self) -> None:
        """Start every lane's sealed worker now, in the background (call when the budget is
        spent: finalize then starts on warm workers)."""
        for lane in self.lanes:
            self.background(lane.take_sealed)

    def log_to(self, path: Path) -> None:
        """Where lanes started from now on, and worker output nobody claimed, are logged (a
        pool may start before its run directory exists)."""
        self.log_path = path
        self.output.log = path

    def background(self, task: Callable[[], Any]) -> None:
        self._housekeeping.submit(task)

    def note(self, text: str) -> None:
        """A line in the workers' log (once the pool has one): a fault that was not the policy's
        and what the pool did about it, which no verdict shows."""
        if self.log_path is not None:
            with open(self.log_path, "a", encoding="utf-8") as handle:
                handle.write(f"[pool] {text}\n")

    def close(self) -> None:
        """Stop every lane (in parallel) and wait until nothing of the pool is left."""
        if self._starting is not None:
            self._starting.join()
        self._housekeeping.shutdown(wait=True)
        closing = [threading.Thread(target=lane.close, daemon=True) for lane in self.lanes]
        for thread in closing:
            thread.start()
        for thread in closing:
            thread.join()
        self.output.close()
        self.cpus.release()

    def module_files(self) -> list[str]:
        """Files the lane hosts imported their libraries from (after :meth:`prewarm`)."""
        return sorted({f for lane in self.lanes if lane.host for f in lane.host.modules})

    def run(
        self,
        job: WorkerJob,
        tasks: list[Task],
        *,
        record: bool,
        obs_external: bool = False,
        compress_images: bool = False,
        max_steps: int,
        sealed: bool = False,
        on_episode: Callable[[EpisodeDone], None] | None = None,
    ) -> list[EpisodeDone] | LoadFailed:
        """Run ``tasks``; results come back in task order, or a :class:`LoadFailed` when the
        policy cannot start. ``sealed`` runs hidden evaluation (the policy in its own process,
        apart from the environment, several episodes in lock step: :meth:`evaluate` with one
        checkpoint); ``on_episode`` is called (from lane threads) as episodes finish.

        Whatever a policy does ends as an episode error or a :class:`LoadFailed`; a train
        worker's frames are capped at what its episodes can need (:func:`train_message_cap`).
        An exception raised in a lane thread (a fault of the harness or of ``on_episode``,
        such as a lane host that cannot start or a full disk) is re-raised here, as itself
        with its traceback, once every lane has stopped (the others after the episode they are
        playing). It is not turned into episode errors: that would charge the agent for the
        judge's fault. The judge answers such a submit 500 naming the exception, and, never
        having committed it, charges nothing (a submit that is not committed is rolled back:
        docs/protocol/submit-lifecycle.md)."""
        if sealed:
            report = (lambda _number, result: on_episode(result)) if on_episode else None
            return self.evaluate([(job, tasks)], max_steps=max_steps, on_episode=report)[0]
        request = RunEpisodes(
            tasks=[],
            max_steps=max_steps,
            record=record,
            obs_external=obs_external,
            compress_images=compress_images,
        )
        cap = train_message_cap(job.obs_space, job.action_space, max_steps, self.limits)
        shares = _shares(tasks, self.jobs)
        results: dict[int, EpisodeDone] = {}
        failures: dict[int, LoadFailed] = {}
        lock = threading.Lock()
        broken = threading.Event()  # a lane raised: the others stop after their episode

        def lane(number: int, share: list[Task]) -> None:
            played = self._run_train(self.lanes[number], job, share, request, failures, number, cap)
            try:
                with contextlib.closing(played):  # stopped early, it retires its worker
                    for result in played:
                        with lock:
                            results[result.index] = result
                        if on_episode:
                            on_episode(result)
                        if broken.is_set():
                            return
            except BaseException:
                broken.set()
                raise

        _in_threads(lane, enumerate(shares))
        if failures:
            return failures[min(failures)]
        return [results[task.index] for task in tasks]

    def evaluate(
        self,
        checkpoints: list[tuple[WorkerJob, list[Task]]],
        *,
        max_steps: int,
        on_episode: Callable[[int, EpisodeDone], None] | None = None,
        on_outcome: Callable[[int, list[EpisodeDone] | LoadFailed], None] | None = None,
    ) -> list[list[EpisodeDone] | LoadFailed]:
        """Hidden evaluation of several checkpoints: the outcome of each (its results in task
        order, or the :class:`LoadFailed` of a policy that cannot start), in the given order.

        Episodes are dealt as in :meth:`run` (a checkpoint's episode ``i`` to lane
        ``i % jobs``), and each lane plays its share of one checkpoint after the other without
        waiting for the other lanes in between: only the last checkpoint's shares end
        unevenly. ``on_episode(number, result)`` is called from lane threads as episodes end;
        ``on_outcome(number, outcome)`` from the calling thread, as soon as checkpoint
        ``number`` is done, so that nothing is reported once the caller is interrupted (lanes
        that are being stopped end their episodes with errors). A checkpoint that fails to
        load on one lane is skipped by the lanes that have not started it yet.

        An exception raised in a lane thread (a fault of the harness or of ``on_episode``) is
        re-raised here as itself, with its traceback, as soon as it happens: hidden evaluation
        cannot go on without that lane's share, and the caller ends the run (the other lanes
        stop when the pool is closed). It is never turned into episode errors, which would
        pass a harness fault off as the policy's."""
        request = RunEpisodes(tasks=[], max_steps=max_steps, record=False)
        lanes = min(self.jobs, max((len(tasks) for _, tasks in checkpoints), default=0))
        results: list[dict[int, EpisodeDone]] = [{} for _ in checkpoints]
        failures: list[dict[int, LoadFailed]] = [{} for _ in checkpoints]
        unfinished = [min(lanes, len(tasks)) for _, tasks in checkpoints]
        outcomes: list[list[EpisodeDone] | LoadFailed] = [[] for _ in checkpoints]
        settled: queue.SimpleQueue[int | BaseException] = queue.SimpleQueue()
        for number, left in enumerate(unfinished):
            if not left:  # no episodes: done before it starts
                settled.put(number)
        lock = threading.Lock()

        def settle(number: int) -> None:
            """Called under ``lock`` when a lane is done with checkpoint ``number``."""
            unfinished[number] -= 1
            if unfinished[number]:
                return
            job_failures, tasks = failures[number], checkpoints[number][1]
            if job_failures:
                outcomes[number] = job_failures[min(job_failures)]
            else:
                outcomes[number] = [results[number][task.index] for task in tasks]
            settled.put(number)

        def play(number: int) -> None:
            lane = self.lanes[number]
            try:
                for checkpoint, (job, tasks) in enumerate(checkpoints):
                    if number >= len(tasks):
                        continue
                    if not failures[checkpoint]:
                        share = _shares(tasks, lanes)[number]
                        played = self._run_sealed(
                            lane, job, share, request, failures[checkpoint], number
                        )
                        for result in played:
                            with lock:
                                results[checkpoint][result.index] = result
                            if on_episode:
                                on_episode(checkpoint, result)
                    with lock:
                        settle(checkpoint)
            except BaseException as exc:  # a bug: the caller raises it instead of waiting
                settled.put(exc)

        threads = [threading.Thread(target=play, args=(n,), daemon=True) for n in range(lanes)]
        for thread in threads:
            thread.start()
        for _ in checkpoints:
            number = settled.get()
            if isinstance(number, BaseException):
                raise number
            if on_outcome:
                on_outcome(number, outcomes[number])
        for thread in threads:
            thread.join()
        return outcomes

    def _run_train(self, lane: _Lane, job, share, request, failures, number, cap: int):
        pending = list(share)
        started_once = False
        while pending:
            worker, loaded = _load_on(
                lambda: lane.take_train(cap), lambda lost: self.background(lost.close), job
            )
            replaced = False
            try:
                if not isinstance(loaded, LoadFailed):
                    worker.start_episodes(msgspec.structs.replace(request, tasks=pending))
                # The replacement boots while these episodes play. Its spawn costs the judge
                # about a millisecond of Python: started with the load, it delayed the judge's
                # reading of the worker's answer by that much.
                self.background(lane.prewarm)
                replaced = True
                if isinstance(loaded, LoadFailed):
                    if not started_once:
                        failures[number] = loaded
                        return
                    # It started before and fails now: charge the rest to the crash.
                    for task in pending:
                        message = f"the policy worker could not restart: {loaded.message}"
                        yield _failed(task, EpisodeErrorKind.WORKER_CRASH, message)
                    return
                started_once = True
                wanted = {task.index for task in pending}
                while pending:
                    result = worker.next_episode(wanted)
                    pending = [task for task in pending if task.index != result.index]
                    wanted.discard(result.index)
                    yield result
                    if result.error is not None and result.error.category in _FATAL:
                        break
            except WorkerDied as died:
                yield _failed(pending.pop(0), died.kind, died.message)
            finally:
                self.background(worker.close)  # a train worker serves one checkpoint only
                if not replaced:
                    self.background(lane.prewarm)

    def _run_sealed(self, lane: _Lane, job, share, request, failures, number):
        """Hidden episodes of one checkpoint on the lane's sealed worker. A sealed worker runs
        no policy code (its policy processes do, and their faults are their episodes'), so its
        death is the machine's or the environment's doing: the episodes it had not finished
        play again, from their start, on a new sealed worker, once. A worker that hangs, or
        dies again, fails them."""

        def retire(_lost: _Worker) -> None:
            lane.drop_sealed()

        # Instances beyond the share's episodes would only cost the load (each 1 ms or more).
        job = job._replace(episodes=len(share))
        worker, loaded = _load_on(lane.take_sealed, retire, job)
        if isinstance(loaded, LoadFailed):
            failures[number] = loaded
            lane.drop_sealed()
            return
        wanted = {task.index for task in share}
        replayed = False
        while True:
            try:
                left = [task for task in share if task.index in wanted]
                worker.start_episodes(msgspec.structs.replace(request, tasks=left))
                while wanted:
                    result = worker.next_episode(wanted)
                    wanted.discard(result.index)
                    yield result
                return
            except WorkerDied as died:
                lane.drop_sealed()
                if not replayed and died.kind is not EpisodeErrorKind.EPISODE_TIMEOUT:
                    replayed = True
                    self.note(
                        f"lane {lane.number}: its sealed worker died ({died.message}); "
                        f"{len(wanted)} unfinished episodes play again on a new one"
                    )
                    worker, loaded = _load_on(lane.take_sealed, retire, job)
                    if not isinstance(loaded, LoadFailed):
                        continue
                    lane.drop_sealed()
                for task in left:
                    if task.index in wanted:
                        yield _failed(task, died.kind, died.message)
                return


def _load_on(
    take: Callable[[], _Worker], retire: Callable[[_Worker], None], job: WorkerJob
) -> tuple[_Worker, Loaded | LoadFailed]:
    """``job`` loaded on the worker ``take()`` gives: that worker and its load's answer. A
    worker found dead before the checkpoint reached it (it died booting, or while it waited:
    the machine's OOM killer, a full process cap) is retired and replaced once, since no code
    of the checkpoint ran in it; when the replacement is lost too, that is the load's failure."""
    worker = take()
    try:
        return worker, worker.load(job)
    except WorkerLost as lost:
        retire(worker)
        kind = "sealed" if worker.sealed else "train"
        worker.lane.pool.note(
            f"lane {worker.lane.number}: a {kind} worker was found dead before a checkpoint "
            f"reached it ({lost.message}); the checkpoint loads on a new one"
        )
    worker = take()
    try:
        return worker, worker.load(job)
    except WorkerLost as lost:
        return worker, LoadFailed(verdict=_load_verdict(lost.kind), message=lost.message)


def _shares(tasks: list[Task], lanes: int) -> list[list[Task]]:
    """Task ``i`` to lane ``i % lanes``: an assignment that does not depend on timing."""
    return [tasks[number::lanes] for number in range(min(lanes, len(tasks)))]


def _in_threads(target: Callable[..., None], arguments) -> None:
    """``target(*args)`` for each of ``arguments``, each in its own thread; returns when all
    are done, raising the first exception a thread raised (with its traceback) if any did."""
    raised: list[BaseException] = []

    def call(*args) -> None:
        try:
            target(*args)
        except BaseException as exc:
            raised.append(exc)

    threads = [threading.Thread(target=call, args=args, daemon=True) for args in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if raised:
        raise raised[0]


def _refuse_return(done: EpisodeDone) -> None:
    """Turn an episode whose return is not a finite number into an ``env_error`` with return 0
    (an error it already had stays). Summaries, journal records and scores hold finite numbers
    only; a train policy can make its rewards infinite (it shares its process with the
    environment), and the submit must still be charged, as any other."""
    value = done.episode_return
    done.episode_return = 0.0
    if done.error is None:
        done.error = EpisodeError(
            EpisodeErrorKind.ENV_ERROR,
            f"the episode's return is not a finite number ({value}); it counts as 0",
            None,
            done.length,
        )


def _steps_line_up(steps: Steps | None) -> bool:
    """Whether recorded ``steps`` have one entry per step in every column (``obs`` may be
    empty: the observations are in a file), as the judge writes them into rows."""
    if steps is None:
        return True
    count = len(steps.actions)
    columns = (steps.rewards, steps.terminated, steps.truncated, steps.infos)
    return all(len(column) == count for column in columns) and len(steps.obs) in (0, count)


def _load_verdict(kind: EpisodeErrorKind) -> Verdict:
    return Verdict.OOM if kind is EpisodeErrorKind.OOM else Verdict.WORKER_CRASH


def _failed(task: Task, kind: EpisodeErrorKind, message: str) -> EpisodeDone:
    return EpisodeDone(
        index=task.index, episode_return=0.0, length=0, error=EpisodeError(kind, message)
    )
