"""What a process does to itself right before it runs policy code: resource limits,
``no_new_privs``, no capabilities, then (by isolation level) Landlock and the seccomp filter.

Applied by the process itself, never through ``preexec_fn`` (the judge is a threaded server).
Limits only ever go down.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import _landlock, _seccomp

_libc = ctypes.CDLL(None, use_errno=True)
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAP_LAST = 63

# rlimit -> LimitsSection field
_RLIMITS = {
    resource.RLIMIT_AS: "memory_bytes",
    resource.RLIMIT_CPU: "cpu_seconds",
    resource.RLIMIT_FSIZE: "file_size_bytes",
}
# Read-only system locations a policy process may need after start-up (shared libraries loaded
# late, time zones, name service files); everything else of /etc, /home, /root, /proc stays out.
_SYSTEM_READABLE = (
    "/usr",
    "/lib",
    "/lib64",
    "/bin",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
)
_DEVICES_WRITABLE = ("/dev/null", "/dev/full")


def lower_rlimits(limits: Mapping[str, Any]) -> None:
    """Lower memory, CPU and file-size limits to ``limits`` (a ``LimitsSection`` dump) and
    disable core dumps. ``RLIMIT_CPU`` keeps a 1 s margin between SIGXCPU and SIGKILL."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for which, field in _RLIMITS.items():
        value = limits.get(field)
        if value is None:
            continue
        _soft, hard = resource.getrlimit(which)
        new_hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
        if which == resource.RLIMIT_CPU and new_hard == value:
            new_hard = value + 1
        resource.setrlimit(which, (min(value, new_hard), new_hard))


def no_new_privileges() -> None:
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """Empty the bounding, effective, permitted and inheritable capability sets (a process
    started as root keeps its uid but loses every privilege that comes with it)."""
    for cap in range(_CAP_LAST + 1):
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the kernel's last capability (EINVAL), or not permitted
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def policy_paths(scratch: Path) -> tuple[list[Path], list[Path]]:
    """(readable, writable) for Landlock: the interpreter, its libraries and import path,
    system libraries, and the policy's own scratch directory."""
    readable = {Path(sys.base_prefix), Path(sys.prefix), Path(sys.executable).resolve().parent}
    # This process's import path: libraries only (a lane host starts with -P, which keeps its
    # working directory, where policy processes keep their scratch directories, off it).
    readable |= {Path(entry) for entry in sys.path if entry and os.path.isabs(entry)}
    readable |= {Path(path) for path in _SYSTEM_READABLE}
    # Its own /proc entry only: the worker lists its children there to sweep them.
    readable.add(Path(f"/proc/{os.getpid()}"))
    writable = [scratch, *(Path(path) for path in _DEVICES_WRITABLE)]
    return sorted(readable), writable


def harden(
    limits: Mapping[str, Any],
    writable: Path,
    *,
    landlock_abi: int,
    seccomp: bool,
    cpus: set[int] | None = None,
) -> None:
    """Everything this process must not be able to do once it runs policy code, applied in
    the order the kernel requires: limits, ``no_new_privs``, no capabilities, Landlock (when
    ``landlock_abi`` > 0: reads of the interpreter and system libraries, writes below
    ``writable`` only, no TCP, no signals out), the seccomp filter (when ``seccomp``). With
    ``cpus``, the process moves there last, right before the filter, which forbids any later
    change of CPU affinity (a failed move leaves it where it is). Raises ``OSError`` when a
    step fails: the caller must then not run policy code."""
    lower_rlimits(limits)
    no_new_privileges()
    if os.geteuid() == 0:
        drop_capabilities()
    if landlock_abi:
        readable, writable_paths = policy_paths(writable)
        _landlock.restrict(readable, writable_paths, landlock_abi)
    program = _seccomp.compile_filter() if seccomp else None
    if cpus:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cpus)
    if program is not None:
        _seccomp.install_filter(program)
