"""The lane host: a pristine process inside a lane's sandbox that forks workers on request.

Started by :class:`~evopolicygym.sandbox.HostProcess` as ``python -m evopolicygym.sandbox.host``.
It imports every library the workers need (so a worker costs a ``fork``, not an interpreter
start), never builds an environment, never sees a seed and never runs policy code. It is a
subreaper: anything a worker leaves behind comes back to it and is killed when that worker ends.
Its only channel is to the judge (:mod:`evopolicygym.protocol` host messages); when the judge
closes it, or dies, the host kills everything and exits. Every worker gets a temporary directory
of its own (its ``TMPDIR``: where it and its policy code write), removed when it ends.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import resource
import select
import signal
import socket
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, NoReturn

from evopolicygym.protocol import Exited, HostRequest, HostUp, Kill, Spawn, Spawned, SpawnFailed

from ._framing import Channel, FrameError
from ._fstree import remove_path
from ._proctree import become_subreaper, die_with_parent, forbid_inspection, reap, sweep_children


class Host:
    def __init__(self, channel: Channel):
        self.channel = channel
        self.children: dict[int, int] = {}  # pid -> the judge's child id
        self.scratch: dict[int, Path] = {}  # pid -> its temporary directory
        self.wake_read, self.wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_write)

    def serve(self) -> None:
        poller = select.poll()
        poller.register(self.channel.fileno(), select.POLLIN)
        poller.register(self.wake_read, select.POLLIN)
        while True:
            self._reap()
            try:
                message = self.channel.recv_nowait()
            except FrameError:
                return
            if message is not None:
                self._handle(message)
                continue
            poller.poll()
            while True:
                try:
                    os.read(self.wake_read, 512)
                except BlockingIOError:
                    break

    def _handle(self, message: Any) -> None:
        if isinstance(message, Spawn):
            self._spawn(message)
        elif isinstance(message, Kill):
            pid = next((p for p, c in self.children.items() if c == message.child), None)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)

    def _spawn(self, request: Spawn) -> None:
        host = os.getpid()
        opened: list[int] = []
        scratch = None
        try:
            scratch = Path(tempfile.mkdtemp(prefix="worker-"))
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            opened += [ours.detach(), theirs.detach()]
            opened += os.pipe()
            opened += os.pipe()
            pid = os.fork()
        except OSError as exc:  # a full process cap, descriptor table or disk: this child only
            for fd in opened:
                os.close(fd)
            if scratch is not None:
                _remove(scratch)
            self.channel.send(
                SpawnFailed(child=request.child, message=f"could not start a worker: {exc}")
            )
            return
        ours_fd, theirs_fd, out_read, out_write, err_read, err_write = opened
        ours = socket.socket(fileno=ours_fd)
        theirs = socket.socket(fileno=theirs_fd)
        if pid == 0:  # the child never returns from here
            status = 1
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for fd in (self.channel.fileno(), self.wake_read, self.wake_write):
                    os.close(fd)
                ours.close()
                os.close(out_read)
                os.close(err_read)
                os.dup2(out_write, 1)
                os.dup2(err_write, 2)
                os.close(out_write)
                os.close(err_write)
                die_with_parent(host)
                tempfile.tempdir = os.environ["TMPDIR"] = str(scratch)
                status = _entry_point(request.entry)(theirs.detach(), request.argument) or 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        theirs.close()
        os.close(out_write)
        os.close(err_write)
        self.children[pid] = request.child
        self.scratch[pid] = scratch
        try:
            self.channel.send(
                Spawned(child=request.child, pid=pid), fds=[ours.fileno(), out_read, err_read]
            )
        finally:
            ours.close()
            os.close(out_read)
            os.close(err_read)

    def _reap(self) -> None:
        for pid, status in reap():
            self._ended(pid, status)

    def _ended(self, pid: int, status: int) -> None:
        child = self.children.pop(pid, None)
        if child is None:
            return  # a stray, already counted by the sweep that killed it
        strays, ended = sweep_children(set(self.children))
        self.channel.send(Exited(child=child, status=status, strays=strays))
        # Nothing of the worker runs any more: what it and its policy code wrote can go.
        _remove(self.scratch.pop(pid))
        for other, other_status in ended:
            if other in self.children:
                self._ended(other, other_status)

    def shutdown(self) -> None:
        sweep_children(set())


def _remove(path: Path) -> None:
    """Remove a worker's temporary directory; what cannot be removed goes with the lane's."""
    with contextlib.suppress(OSError):
        remove_path(path)


def _preload(modules: list[str]) -> None:
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception:  # the worker that needs it reports the real error
            print(f"preloading {module} failed:", file=sys.stderr)
            traceback.print_exc()


def _entry_point(entry: str) -> Any:
    """The function an entry point ``module:function`` names (importing the module)."""
    module, _, function = entry.partition(":")
    return getattr(importlib.import_module(module), function)


def _call(entry: str, argument: str) -> Any:
    try:
        return _entry_point(entry)(argument)
    except Exception:
        print(f"{entry} failed:", file=sys.stderr)
        traceback.print_exc()
        return None


def main(argv: list[str] | None = None) -> NoReturn:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--channel", type=int, required=True, help="descriptor of the channel")
    parser.add_argument("--preload", default="", help="comma-separated modules to import")
    parser.add_argument(
        "--expand", default="", help="then import the modules this module:function returns"
    )
    parser.add_argument("--expand-argument", default="", help="the argument of --expand")
    parser.add_argument("--nproc", type=int, default=0, help="RLIMIT_NPROC for the lane")
    parser.add_argument(
        "--cpus", default="", help="comma-separated CPUs to run on once the imports are done"
    )
    args = parser.parse_args(argv)
    # No parent-death signal here: the judge may start hosts from short-lived threads, and the
    # signal follows the thread. The end of the channel tells the host the judge is gone.
    become_subreaper()
    forbid_inspection()
    if args.nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (args.nproc, args.nproc))
    channel = Channel.from_fd(args.channel, HostRequest)
    _preload(list(filter(None, args.preload.split(","))))
    if args.expand:
        _preload(_call(args.expand, args.expand_argument) or [])
    gc.collect()
    gc.freeze()  # imported objects live for good: forks share their pages untouched
    host = Host(channel)
    modules = sorted(
        {
            file
            for module in list(sys.modules.values())
            if (file := getattr(module, "__file__", None))
        }
    )
    channel.send(HostUp(pid=os.getpid(), modules=modules))
    # Its forks (a worker's boot) happen while lanes play: off their CPUs from now on.
    if args.cpus:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {int(cpu) for cpu in args.cpus.split(",")})
    status = 1
    try:
        host.serve()
        status = 0
    except BaseException:
        traceback.print_exc()
    finally:
        host.shutdown()
        # Nothing is left to clean up, and tearing down everything the host imported takes
        # longer than the rest of closing a lane.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


if __name__ == "__main__":
    main()
