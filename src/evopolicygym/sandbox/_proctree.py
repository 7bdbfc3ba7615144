"""Process-tree control on Linux: subreapers, parent-death signals, and killing every
descendant of a process whatever session or process group it moved to.

A process that calls :func:`become_subreaper` adopts every orphan among its descendants (a
double-forked daemon comes back to it instead of to init), so :func:`sweep_children` can find
and kill them. Children are listed from ``/proc/<pid>/task/<tid>/children``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
from collections.abc import Iterable

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl({option}): {os.strerror(errno)}")


def become_subreaper() -> None:
    """Orphaned descendants of this process are re-parented to it, not to init."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(parent: int) -> None:
    """Receive SIGKILL when the parent dies; exits at once if ``parent`` is already gone."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def forbid_inspection() -> None:
    """Make this process non-dumpable: other processes of the same user can no longer ptrace it
    or read ``/proc/<pid>/mem``; inherited by forks."""
    _prctl(_PR_SET_DUMPABLE, 0)


def children(pid: int) -> list[int]:
    """Live children of ``pid`` (empty when it is gone)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                found.extend(int(token) for token in handle.read().split())
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, parents before children."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        for child in children(current):
            if child not in found:
                found.append(child)
                frontier.append(child)
    return found


def kill_all(pids: Iterable[int]) -> tuple[int, set[int]]:
    """SIGKILL each pid (already-gone ones are skipped). Returns how many were signalled and
    the pids this process may not signal (under Landlock, those outside its domain)."""
    count = 0
    refused: set[int] = set()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            count += 1
        except ProcessLookupError:
            continue
        except PermissionError:
            refused.add(pid)
    return count, refused


def kill_descendants(pid: int, rounds: int = 64) -> int:
    """Kill every descendant of ``pid`` (not ``pid`` itself), repeating while a fork races
    the kill, until every one has exited (a zombie left for its parent to reap, which it can
    then do at once). Returns how many processes were killed."""
    killed: set[int] = set()
    for _ in range(rounds):
        found = _running(descendants(pid))
        if not found:
            break
        # Stop them first so that none can fork between the listing and the kill.
        for child in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGSTOP)
        targets = _running(descendants(pid)) or found
        _signalled, refused = kill_all(targets)
        killed.update(child for child in targets if child not in refused)
    return len(killed)


def _running(pids: list[int]) -> list[int]:
    """Those of ``pids`` that have not exited: a zombie stays listed among its parent's children
    until the parent reaps it, but can neither run nor fork."""
    running = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            running.append(pid)
    return running


def reap(pid: int = -1) -> list[tuple[int, int]]:
    """Reap ended children without blocking: ``[(pid, wait status), ...]``."""
    ended: list[tuple[int, int]] = []
    while True:
        try:
            found, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return ended
        if found == 0:
            return ended
        ended.append((found, status))
        if pid != -1:
            return ended


def childless() -> bool:
    """Whether this process has no child at all, running or ended: one system call, where
    listing children reads ``/proc`` (a train worker asks after every episode). In a subreaper,
    no child means no descendant: an orphan is re-parented to it before its parent can be
    reaped."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return False


def sweep_children(
    keep: set[int], rounds: int = 64, *, reap_others: bool = True
) -> tuple[int, list[tuple[int, int]]]:
    """Kill every child of this process that is not in ``keep`` (with its descendants), and
    every orphan that comes back to this subreaper meanwhile. Children this process may not
    signal (under Landlock: started outside the policy's domain, by the environment) are left
    alone. Returns the number killed and the ``(pid, status)`` pairs reaped on the way (with
    ``reap_others``, children in ``keep`` that ended are reaped too; without, their exit status
    is left to whoever waits for them)."""
    if childless():
        return 0, []
    killed = 0
    ended: list[tuple[int, int]] = []
    spared = set(keep)
    me = os.getpid()
    for _ in range(rounds):
        strays = [pid for pid in children(me) if pid not in spared]
        if not strays:
            break
        for stray in strays:
            killed += kill_descendants(stray)
        signalled, refused = kill_all(strays)
        killed += signalled
        spared |= refused
        for stray in strays:
            if stray in refused:
                continue
            with contextlib.suppress(ChildProcessError):
                found, status = os.waitpid(stray, 0)  # SIGKILLed: returns at once
                ended.append((found, status))
        if reap_others:
            ended += reap()
    return killed, ended


def wait_exit(process: subprocess.Popen, timeout: float) -> int | None:
    """Wait up to ``timeout`` seconds for ``process`` to end and reap it: its exit status, or
    None if it is still running. Woken by the exit itself (a pidfd), not by ``Popen.wait``'s
    polling, which sleeps up to 50 ms between looks."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfd here, or already reaped
        pidfd = None
    if pidfd is not None:
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            poller.poll(timeout * 1000)
        finally:
            os.close(pidfd)
    try:
        return process.wait(timeout=0 if pidfd is not None else timeout)
    except subprocess.TimeoutExpired:
        return None
