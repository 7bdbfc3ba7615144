"""Landlock (Linux >= 5.13): unprivileged file-system, network and scope restrictions.

A process that calls :func:`restrict` can afterwards open only what the rules allow: read (and
execute) below ``readable``, anything below ``writable``; with ABI >= 4 it can neither bind nor
connect TCP sockets; with ABI >= 6 it can send signals only to processes in its own Landlock
domain (its own descendants) and cannot reach abstract Unix sockets outside it. Irreversible,
inherited by children.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # same on x86_64 and aarch64
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

_EXECUTE = 1 << 0
_WRITE_FILE = 1 << 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_TRUNCATE = 1 << 14
_IOCTL_DEV = 1 << 15
# Everything a directory rule can grant, by the ABI that introduced it.
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2

_libc = ctypes.CDLL(None, use_errno=True)


class LandlockUnavailable(RuntimeError):
    """The kernel has no Landlock, or refused the ruleset."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is unavailable."""
    version = _libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def _fs_rights(abi: int) -> int:
    return max(value for level, value in _FS_BY_ABI.items() if level <= abi)


def restrict(readable: list[Path], writable: list[Path], abi: int | None = None) -> int:
    """Apply the rules to this thread (and its future children); returns the ABI used.
    Paths that do not exist are skipped. Needs ``no_new_privs`` (or ``CAP_SYS_ADMIN``)."""
    abi = abi_version() if abi is None else abi
    if abi < 1:
        raise LandlockUnavailable("this kernel has no Landlock")
    handled = _fs_rights(abi)
    attr = _RulesetAttr(handled, 0, 0)
    size = ctypes.sizeof(ctypes.c_uint64)  # ABI 1-3 know only handled_access_fs
    if abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
        size = 2 * ctypes.sizeof(ctypes.c_uint64)
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = ctypes.sizeof(_RulesetAttr)
    ruleset = _libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise LandlockUnavailable(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        read_rights = _EXECUTE | _READ_FILE | _READ_DIR
        for path in readable:
            _allow(ruleset, path, read_rights)
        for path in writable:
            _allow(ruleset, path, handled)
        if _libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise LandlockUnavailable(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return abi


def _allow(ruleset: int, path: Path, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        if _libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise LandlockUnavailable(
                f"landlock_add_rule({path}): {os.strerror(ctypes.get_errno())}"
            )
    finally:
        os.close(fd)
