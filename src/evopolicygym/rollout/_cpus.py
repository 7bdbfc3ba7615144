"""Which CPUs a pool's lanes play on, and keeping everything else off them.

A lane's workers play on one CPU: a sealed worker and its policy process then hand a lock-step
round over with a context switch, and a train worker is never preempted by the judge's threads,
the agent, or the next warm worker booting beside it (on this project's two-core machine those
took 1.3-2.9 ms out of some of a submit's first episodes).

Concurrent runs on one machine (a suite's jobs) must not pick the same CPUs, so a lane's CPU is
*claimed*: an exclusive ``flock`` on one file per CPU in a per-user directory. The kernel drops a
lock when its process ends, however it ends, so a crashed run leaves no stale claim. A CPU that
another run holds is skipped; a lane left without a free CPU gets none and runs wherever the
scheduler puts it. Only the CPUs this process may run on (its affinity mask: a batch system's
allocation) are candidates, highest first (CPU 0 takes most of the machine's housekeeping), so
the runs that started earlier hold the highest CPUs and a claim sees theirs (``others``) before
it finds its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def claims_directory() -> Path:
    """Where this user's runs claim CPUs (one lock file per CPU)."""
    return Path(tempfile.gettempdir()) / f"evopolicygym-cpus-{os.getuid()}"


class CpuClaim:
    """The CPUs one pool holds: ``cores[n]`` is lane ``n``'s CPU (``None``: no free CPU was
    left for it); ``others`` are the CPUs it found held by other claims. Holds its locks until
    :meth:`release` (or the process's end)."""

    def __init__(self, cores: list[int | None], handles: list[int], others: set[int] | None = None):
        self.cores = cores
        self.others = others or set()
        self._handles = handles

    @property
    def held(self) -> set[int]:
        return {core for core in self.cores if core is not None}

    def free_cpus(self) -> set[int]:
        """The CPUs of this process's mask that no claim it saw holds (empty when none is)."""
        return os.sched_getaffinity(0) - self.held - self.others

    def release(self) -> None:
        """Drop the locks (idempotent): other runs may claim these CPUs again."""
        handles, self._handles = self._handles, []
        self.cores = [None] * len(self.cores)
        for handle in handles:
            os.close(handle)


def claim_cpus(lanes: int, directory: Path | None = None) -> CpuClaim:
    """Claim up to one free CPU per lane. When the claims directory cannot be used (a read-only
    temporary directory), lanes get distinct CPUs of the mask without locks, as if alone."""
    candidates = sorted(os.sched_getaffinity(0), reverse=True)
    directory = directory or claims_directory()
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        cores: list[int | None] = list(candidates[:lanes])
        return CpuClaim(cores + [None] * (lanes - len(cores)), [])
    cores, handles, others = [], [], set()
    for cpu in candidates:
        if len(cores) == lanes:
            break
        handle = _lock(directory / f"cpu-{cpu}.lock")
        if handle is None:
            others.add(cpu)
        else:
            cores.append(cpu)
            handles.append(handle)
    return CpuClaim(cores + [None] * (lanes - len(cores)), handles, others)


def _lock(path: Path) -> int | None:
    """An open descriptor holding ``path``'s exclusive lock, or ``None`` when another open file
    (another run, or another pool of this process) holds it, or the file cannot be opened."""
    try:
        handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(handle)
        return None
    return handle


@contextlib.contextmanager
def kept_off(cpus: set[int]) -> Iterator[None]:
    """Keep this process's threads, and the threads and processes they start, off ``cpus``
    while the block runs; the previous affinity comes back after it. Nothing changes when that
    would leave no CPU."""
    before = os.sched_getaffinity(0)
    rest = before - cpus
    if not cpus & before or not rest:
        yield
        return
    _set_every_thread(rest)
    try:
        yield
    finally:
        _set_every_thread(before)


def _set_every_thread(cpus: set[int]) -> None:
    for thread in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            os.sched_setaffinity(int(thread), cpus)
