"""Runs the episodes of one checkpoint on a pool of policy worker processes.

Episodes are dealt to ``jobs`` lanes round-robin (episode ``i`` to lane ``i % jobs``), so the
assignment, and hence any policy state carried between a worker's episodes, does not depend on
timing. Each lane owns one worker process at a time; a worker that dies or overruns a limit is
killed (its whole process group), the episode gets an error saying which limit, and a fresh worker
takes the lane's remaining episodes. A policy that cannot be imported or constructed fails the
whole call with an :class:`InitFailure`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from evopolicygym.protocol import LimitsSection
from evopolicygym.sandbox import SIGNAL_VERDICTS, FrameError, FrameReader, FrameTimeout, write_frame

from ._results import EpisodeError, EpisodeResult, InitFailure

# Extra seconds the judge waits beyond a limit before it kills a worker: process start-up and
# environment construction for init, result serialization for episodes.
INIT_GRACE_S = 60.0
EPISODE_GRACE_S = 15.0
# Variables a worker inherits; everything else (including EVOPOLICYGYM_* run paths) is dropped.
INHERITED_VARIABLES = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "MUJOCO_GL",
    "PYOPENGL_PLATFORM",
    "MINIWOB_URL",
    "EVOPOLICYGYM_CHROMIUM",  # the web family's browser (envs/web.py)
    "PLAYWRIGHT_BROWSERS_PATH",
    "EVOPOLICYGYM_ENVSPECS",
    "VIRTUAL_ENV",
)


class EpisodeTask(NamedTuple):
    """One episode to run: ``index`` is its position in the batch, ``seed`` the case seed and
    ``episode_index`` the value passed to ``Policy.reset``."""

    index: int
    seed: int
    episode_index: int


class WorkerJob(NamedTuple):
    """Everything a worker needs to run a checkpoint (no path under the run root but
    ``checkpoint``, no seeds: those come one episode at a time)."""

    checkpoint: Path
    obs_space: dict[str, Any]
    action_space: dict[str, Any]
    env_meta: dict[str, Any]


def worker_environment(scratch: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in INHERITED_VARIABLES if k in os.environ}
    env.update(
        HOME=str(scratch),
        TMPDIR=str(scratch),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


class _Worker:
    """One live worker process and its pipes. It is started *warm*: it imports its libraries
    and builds the environment at once, then waits for a checkpoint, so that process start-up
    overlaps the agent's thinking time instead of delaying the next submit."""

    def __init__(self, env_spec: dict[str, Any], limits: LimitsSection, log_path: Path | None):
        self.scratch = Path(tempfile.mkdtemp(prefix="epg-scratch-"))
        with open(log_path or os.devnull, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "evopolicygym.rollout.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.scratch,
                env=worker_environment(self.scratch),
                start_new_session=True,
            )
        self.reader = FrameReader(self.process.stdout.fileno())
        self.limits = limits
        self.send({"op": "prepare", "env_spec": env_spec, "limits": limits.model_dump()})

    def start(self, job: WorkerJob, sealed: bool) -> None:
        self.send(
            {
                "op": "init",
                "sealed": sealed,
                "checkpoint": str(job.checkpoint),
                "scratch": str(self.scratch),
                "obs_space": job.obs_space,
                "action_space": job.action_space,
                "env_meta": job.env_meta,
            }
        )

    def send(self, header: dict[str, Any]) -> None:
        write_frame(self.process.stdin.fileno(), header)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def death_reason(self) -> tuple[str, str]:
        """Why the worker went away, as (category, message)."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.wait()
        if code < 0:
            sig = signal.Signals(-code)
            category = SIGNAL_VERDICTS.get(sig, "worker_crash")
            if category == "killed":
                category = "oom"  # not killed by us, so by the kernel: out of memory
            return category, f"policy worker was killed by {sig.name} ({category})"
        return (
            "worker_crash",
            f"policy worker exited with status {code} (did the policy call exit?)",
        )

    def close(self) -> threading.Thread:
        """Close the pipes (the worker exits on end of input) and reap it in the background;
        returns the reaping thread."""
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        reaper = threading.Thread(target=self._reap, daemon=True)
        reaper.start()
        return reaper

    def _reap(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self.kill()  # the whole group: processes the policy started die with their worker
        self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


class WorkerPool:
    """Executes the episodes of one environment in worker processes.

    ``jobs`` bounds the workers of one :meth:`run`. After each run the pool starts ``jobs``
    warm workers for the next one; :meth:`close` stops them. Calls to :meth:`run` must not
    overlap (the judge serializes them)."""

    def __init__(
        self,
        env_spec: dict[str, Any],
        jobs: int,
        limits: LimitsSection,
        log_path: Path | None = None,
    ):
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.env_spec = env_spec
        self.jobs = jobs
        self.limits = limits
        self.log_path = log_path
        self._warm: list[_Worker] = []
        self._sealed_idle: list[_Worker] = []
        self._reapers: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _spawn(self) -> _Worker:
        return _Worker(self.env_spec, self.limits, self.log_path)

    def prewarm(self) -> None:
        """Start workers until ``jobs`` are waiting (returns at once; they warm up in parallel)."""
        with self._lock:
            while len(self._warm) < self.jobs:
                self._warm.append(self._spawn())

    def _take(self, sealed: bool) -> _Worker:
        """For a sealed run, a worker that served sealed policies before (finalize's checkpoints
        then cost no process start-up); else a warm worker if one is waiting; else a new one."""
        with self._lock:
            if sealed and self._sealed_idle:
                return self._sealed_idle.pop()
            if self._warm:
                return self._warm.pop(0)
        return self._spawn()

    def close(self) -> None:
        """Stop the warm workers and wait until every worker of this pool is reaped."""
        with self._lock:
            warm, self._warm = self._warm + self._sealed_idle, []
            self._sealed_idle = []
        for worker in warm:
            worker.kill()
            self._reapers.append(worker.close())
        for reaper in self._reapers:
            reaper.join()
        self._reapers.clear()

    def run(
        self,
        job: WorkerJob,
        tasks: list[EpisodeTask],
        *,
        record: bool,
        obs_external: bool = False,
        compress_images: bool = False,
        max_steps: int,
        sealed: bool = False,
        on_episode: Callable[[EpisodeResult], None] | None = None,
    ) -> list[EpisodeResult] | InitFailure:
        """Run ``tasks``; results come back in task order, or an :class:`InitFailure` when the
        policy cannot start. ``sealed`` runs the policy in its own process, apart from the
        environment (hidden pools); ``on_episode`` is called (from lane threads) as episodes
        finish. ``obs_external`` and ``compress_images`` choose how recorded observations are
        stored (see the worker's ``_externalize``)."""
        storage = {"obs_external": obs_external, "compress_images": compress_images}
        lanes = [tasks[i :: self.jobs] for i in range(min(self.jobs, len(tasks)))]
        results: dict[int, EpisodeResult] = {}
        failures: dict[int, InitFailure] = {}
        lock = threading.Lock()

        def lane(number: int, lane_tasks: list[EpisodeTask]) -> None:
            for result in self._run_lane(
                job, lane_tasks, record, storage, max_steps, sealed, failures, number
            ):
                with lock:
                    results[result.index] = result
                if on_episode:
                    on_episode(result)

        threads = [
            threading.Thread(target=lane, args=(n, t), daemon=True) for n, t in enumerate(lanes)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.prewarm()
        if failures:
            return failures[min(failures)]
        return [results[task.index] for task in tasks]

    def _run_lane(self, job, tasks, record, storage, max_steps, sealed, failures, number):
        pending = list(tasks)
        started_once = False
        while pending:
            worker = self._take(sealed)
            reusable = False
            try:
                worker.start(job, sealed)
                failure = self._await_ready(worker)
                if failure is not None:
                    if not started_once:
                        failures[number] = failure
                        return
                    # It started before and fails now: charge the rest to the crash, don't loop.
                    for task in pending:
                        message = f"policy worker could not restart: {failure.message}"
                        yield _failed(task, "worker_crash", message)
                    return
                started_once = True
                while pending:
                    task = pending[0]
                    result = self._episode(worker, task, record, storage, max_steps)
                    pending.pop(0)
                    yield result
                    if result.error is not None and result.error.category in _FATAL:
                        break  # the worker is gone; start a fresh one for the rest
                else:
                    reusable = sealed
            finally:
                if reusable:
                    with self._lock:
                        self._sealed_idle.append(worker)
                else:
                    self._reapers.append(worker.close())

    def _await_ready(self, worker: _Worker) -> InitFailure | None:
        deadline = time.monotonic() + self.limits.init_timeout_s + INIT_GRACE_S
        try:
            header, _ = worker.reader.read(deadline)
        except FrameTimeout:
            worker.kill()
            return InitFailure(
                verdict="init_timeout",
                message=f"the policy did not start within {self.limits.init_timeout_s} s",
            )
        except (FrameError, OSError):
            category, message = worker.death_reason()
            verdict = "oom" if category == "oom" else "worker_crash"
            return InitFailure(verdict=verdict, message=message)
        if header.get("op") == "ready":
            return None
        if header.get("op") == "init_failed":
            try:
                return InitFailure.model_validate(header)
            except ValueError:
                pass
        worker.kill()
        return InitFailure(
            verdict="worker_crash",
            message="policy worker sent an unexpected message during start-up",
        )

    def _episode(self, worker, task, record, storage, max_steps) -> EpisodeResult:
        try:
            worker.send(
                {
                    "op": "episode",
                    "index": task.index,
                    "seed": task.seed,
                    "episode_index": task.episode_index,
                    "max_steps": max_steps,
                    "record": record,
                    **storage,
                }
            )
        except OSError:  # the worker died between episodes
            return _failed(task, *worker.death_reason())
        deadline = time.monotonic() + self.limits.rollout_wall_s + EPISODE_GRACE_S
        try:
            header, blobs = worker.reader.read(deadline)
        except FrameTimeout:
            worker.kill()
            return _failed(
                task,
                "episode_timeout",
                f"episode exceeded the {self.limits.rollout_wall_s} s limit and its worker was killed",
            )
        except (FrameError, OSError):
            return _failed(task, *worker.death_reason())
        try:
            if header.get("op") != "episode" or header.get("index") != task.index:
                raise ValueError("reply does not match the episode asked for")
            result = EpisodeResult.model_validate({**header, "return_": header.get("return")})
        except ValueError as exc:
            worker.kill()
            return _failed(
                task, "worker_crash", f"policy worker sent an invalid episode result: {exc}"
            )
        if record and len(blobs) == 2:
            result.trajectory, result.observations = blobs
        return result


_FATAL = {"episode_timeout", "oom", "cpu_limit", "file_size_limit", "worker_crash"}


def _failed(task: EpisodeTask, category: str, message: str) -> EpisodeResult:
    return EpisodeResult(
        index=task.index,
        return_=0.0,
        length=0,
        error=EpisodeError(category=category, message=message),
    )
