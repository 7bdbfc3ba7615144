"""Starting a lane host at an isolation level, and the judge's handle on it.

A :class:`HostProcess` is one sandbox: bubblewrap at ``namespaced``, a plain process otherwise,
placed in its own ``pids`` cgroup when the plan has one. The judge asks it for children
(:meth:`HostProcess.spawn`), kills them (:meth:`HostProcess.kill`) and learns how they ended
(:meth:`HostProcess.wait_exit`); a reader thread collects the host's messages.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from evopolicygym.protocol import Exited, HostReply, HostUp, Kill, Spawn, Spawned, SpawnFailed

from ._bwrap import bwrap_prefix
from ._framing import Channel, FrameError
from ._levels import IsolationLevel, IsolationPlan
from ._proctree import wait_exit

# Variables a sandboxed process inherits; everything else (including EVOPOLICYGYM_* run
# paths) is dropped.
INHERITED_VARIABLES = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "MUJOCO_GL",
    "PYOPENGL_PLATFORM",
    "MINIWOB_URL",
    "EVOPOLICYGYM_CHROMIUM",
    "PLAYWRIGHT_BROWSERS_PATH",
    "VIRTUAL_ENV",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)
# Processes of our own in a lane besides the policy's (host, workers, zygote, policy process).
_OWN_PROCESSES = 16
HOST_START_TIMEOUT_S = 120.0


class _Launcher:
    """Starts processes from one thread that lives as long as this process: a parent-death
    signal (``bwrap --die-with-parent``) fires when the *thread* that started a process ends,
    so processes started from short-lived worker threads would die with those threads."""

    def __init__(self) -> None:
        self._requests: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="launcher", daemon=True)
                self._thread.start()
        done: queue.Queue = queue.Queue(maxsize=1)
        self._requests.put((args, kwargs, done))
        ok, value = done.get()
        if not ok:
            raise value
        return value

    def _serve(self) -> None:
        while True:
            args, kwargs, done = self._requests.get()
            try:
                done.put((True, subprocess.Popen(*args, **kwargs)))
            except BaseException as exc:
                done.put((False, exc))


_LAUNCHER = _Launcher()


class HostError(RuntimeError):
    """The host is gone or did not answer in time."""


class SpawnRefused(HostError):
    """The host could not fork the child (its lane's process cap was full); the host is fine,
    and a later spawn may succeed."""


@dataclass
class SpawnedChild:
    """A child of a host: the judge's id for it, its pid in the sandbox, and the judge's ends
    of its channel and of its stdout/stderr pipes."""

    child: int
    pid: int
    channel_fd: int
    stdout_fd: int
    stderr_fd: int


def sandbox_environment(home: str) -> dict[str, str]:
    env = {key: os.environ[key] for key in INHERITED_VARIABLES if key in os.environ}
    env.update(
        HOME=home,
        TMPDIR=home,
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONNOUSERSITE="1",
        # One hash secret for every lane and run: str hashes, and so the order of a set of
        # strings, are part of what a deterministic policy does.
        PYTHONHASHSEED="0",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    return env


def _user_tasks() -> int:
    """Tasks (processes and threads) of this user: RLIMIT_NPROC counts them all."""
    uid = os.getuid()
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                continue
    return count


class HostProcess:
    """One lane's sandbox and its host. Thread-safe.

    The host imports ``preload``, then, when ``expand`` is ``("module:function", argument)``,
    the modules ``function(argument)`` returns (found inside the sandbox, so that the judge
    need not import a simulator to learn which modules it needs)."""

    def __init__(
        self,
        plan: IsolationPlan,
        *,
        preload: list[str],
        expand: tuple[str, str] | None = None,
        max_processes: int,
        log_path: Path | None,
        tmpfs_bytes: int = 2**30,
        cpus: list[int] | None = None,
    ):
        self.plan = plan
        self.scratch = Path(tempfile.mkdtemp(prefix="epg-lane-"))
        self._cgroup: Path | None = None
        judge_socket, host_socket = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        host_fd = host_socket.detach()
        # -P: the working directory (the lane's scratch, where policy processes keep theirs)
        # stays off the import path, hence off what Landlock lets policy code read
        # (``policy_paths``), and nobody can plant a module there.
        command = [sys.executable, "-P", "-m", "evopolicygym.sandbox.host"]
        command += ["--channel", str(host_fd)]
        command += ["--preload", ",".join(preload)]
        if expand is not None:
            command += ["--expand", expand[0], "--expand-argument", expand[1]]
        if cpus:
            command += ["--cpus", ",".join(map(str, cpus))]
        home = "/tmp" if plan.level is IsolationLevel.NAMESPACED else str(self.scratch)
        if plan.process_cap == "rlimit":
            base = 0 if plan.level is IsolationLevel.NAMESPACED else _user_tasks()
            command += ["--nproc", str(base + max_processes + _OWN_PROCESSES)]
        if plan.level is IsolationLevel.NAMESPACED:
            assert plan.bwrap is not None
            command = bwrap_prefix(plan.bwrap, tmpfs_bytes=tmpfs_bytes) + command
        if plan.process_cap == "cgroup" and plan.cgroup_parent:
            self._cgroup = Path(plan.cgroup_parent) / f"lane-{os.getpid()}-{id(self):x}"
            self._cgroup.mkdir()
            (self._cgroup / "pids.max").write_text(str(max_processes + _OWN_PROCESSES))
            procs = self._cgroup / "cgroup.procs"
            command = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs), *command]
        with open(log_path or os.devnull, "ab") as log:
            self.process = _LAUNCHER.popen(
                command,
                pass_fds=[host_fd],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.scratch,
                env=sandbox_environment(home),
                start_new_session=True,
            )
        os.close(host_fd)
        self.channel = Channel(judge_socket, HostReply)
        self._send_lock = threading.Lock()
        self._state = threading.Condition()
        self._spawned: dict[int, SpawnedChild | SpawnRefused] = {}
        self._exited: dict[int, Exited] = {}
        self._up = False
        self.modules: list[str] = []
        self._dead: str | None = None
        self._next_child = 0
        self._reader = threading.Thread(target=self._read, name="lane-host", daemon=True)
        self._reader.start()

    # -- messages --------------------------------------------------------------------------------

    def _read(self) -> None:
        try:
            while True:
                message = self.channel.recv()
                with self._state:
                    if isinstance(message, HostUp):
                        self._up = True
                        self.modules = message.modules
                    elif isinstance(message, Spawned):
                        channel, out, err = self.channel.take_fds(3)
                        self._spawned[message.child] = SpawnedChild(
                            message.child, message.pid, channel, out, err
                        )
                    elif isinstance(message, SpawnFailed):
                        self._spawned[message.child] = SpawnRefused(message.message)
                    elif isinstance(message, Exited):
                        self._exited[message.child] = message
                    self._state.notify_all()
        except (FrameError, OSError) as exc:
            with self._state:
                self._dead = f"the lane host ended ({exc})"
                self._state.notify_all()

    def _wait(self, ready, timeout: float):
        deadline = time.monotonic() + timeout
        with self._state:
            while True:
                value = ready()
                if value is not None:
                    return value
                if self._dead is not None:
                    raise HostError(self._dead)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise HostError("the lane host did not answer in time")
                self._state.wait(left)

    def wait_up(self, timeout: float = HOST_START_TIMEOUT_S) -> None:
        """Block until the host has imported its libraries."""
        self._wait(lambda: True if self._up else None, timeout)

    @property
    def alive(self) -> bool:
        return self._dead is None and self.process.poll() is None

    def spawn(self, entry: str, argument: bytes, timeout: float = HOST_START_TIMEOUT_S):
        """Fork a child running ``entry(channel_fd, argument)``; returns a :class:`SpawnedChild`
        (the caller owns its descriptors). Raises :class:`SpawnRefused` when the host could not
        fork, :class:`HostError` when the host is gone."""
        with self._state:
            self._next_child += 1
            child = self._next_child
        try:
            with self._send_lock:
                self.channel.send(Spawn(child=child, entry=entry, argument=argument))
        except OSError as exc:
            raise HostError(f"the lane host is gone ({exc})") from None
        spawned = self._wait(lambda: self._spawned.pop(child, None), timeout)
        if isinstance(spawned, SpawnRefused):
            raise spawned
        return spawned

    def kill(self, child: int) -> None:
        with contextlib.suppress(OSError), self._send_lock:
            self.channel.send(Kill(child=child))

    def wait_exit(self, child: int, timeout: float) -> Exited | None:
        """How ``child`` ended, or None if the host does not say so within ``timeout``."""
        try:
            return self._wait(lambda: self._exited.pop(child, None), timeout)
        except HostError:
            return None

    # -- shutdown --------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the host and everything in its sandbox, and remove its scratch directory."""
        with contextlib.suppress(OSError):
            self.channel.sock.shutdown(2)
        wait_exit(self.process, 5)
        self.terminate()

    def terminate(self) -> None:
        """Kill the whole sandbox at once (the host may be stuck or gone)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self._cgroup is not None:
            self._kill_cgroup()
        wait_exit(self.process, 10)
        self.channel.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _kill_cgroup(self) -> None:
        assert self._cgroup is not None
        for _ in range(100):
            try:
                pids = [int(p) for p in (self._cgroup / "cgroup.procs").read_text().split()]
            except OSError:
                return
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        with contextlib.suppress(OSError):
            self._cgroup.rmdir()
