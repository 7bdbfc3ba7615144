"""The lock of a run directory (``.judge/lock``): one process at a time drives a run.

The lock file is held with ``fcntl.flock`` for as long as the run is open, where the file system
supports it, and records its owner: process id, host name and boot id. Taking the lock:

- another process holds the ``flock`` (on this host, or on a file system whose locks span hosts):
  refused;
- the record names another host: refused, whatever the ``flock`` says, because a lock that does
  not span hosts cannot tell a live owner there from a dead one; the message says how to clear it;
- the record names this host: stale, and taken over, when the ``flock`` was free (a live owner
  always holds it), when the boot id differs (the machine restarted), or, on a file system
  without ``flock``, when the process is gone;
- an unreadable record (an owner that died while writing it) is stale.

A clean exit removes the file. Locks written before hosts were recorded name no host; they are
read as this host's.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import socket
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

__all__ = ["LockOwner", "RunLock", "RunLockedError", "boot_id"]

BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")
# flock errors that mean "this file system cannot lock", not "someone holds the lock".
UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


class RunLockedError(RuntimeError):
    """Another process owns this run directory; the message names it and what to do."""


class LockOwner(BaseModel):
    """What ``.judge/lock`` records about the process that holds it."""

    pid: int = Field(description="Process id of the owner on its host.")
    host: str | None = Field(None, description="socket.gethostname() of the owner's host.")
    boot_id: str | None = Field(
        None, description="The host's boot id (Linux); another id means it restarted since."
    )
    created_at: str = Field("", description="When the lock was taken (UTC, ISO 8601).")

    @classmethod
    def current(cls) -> LockOwner:
        return cls(
            pid=os.getpid(),
            host=socket.gethostname(),
            boot_id=boot_id(),
            created_at=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        )

    def describe(self) -> str:
        return f"process {self.pid} on host {self.host or '?'} (since {self.created_at or '?'})"


def boot_id() -> str | None:
    """This machine's boot id, or None where the system has none to read."""
    try:
        return BOOT_ID_FILE.read_text().strip() or None
    except OSError:
        return None


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


class RunLock:
    """``with RunLock(path):`` holds the run lock at ``path`` or raises :class:`RunLockedError`.
    ``run`` names the run directory in messages."""

    def __init__(self, path: Path, run: Path | None = None):
        self.path = path
        self.run = run or path.parent.parent
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        for _ in range(3):  # another process may remove the file between our open and flock
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if self._acquire(fd):
                    self._fd = fd
                    return self
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        raise RunLockedError(f"could not lock {self.path}: it keeps being replaced")

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)  # before releasing: nobody locks a removed file
            os.close(self._fd)
            self._fd = None

    def _acquire(self, fd: int) -> bool:
        """Take the lock on ``fd``; False when the file was replaced meanwhile (try again)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            flocked = True
        except BlockingIOError:
            raise RunLockedError(self._held_by(self._owner(fd), live=True)) from None
        except OSError as exc:
            if exc.errno not in UNSUPPORTED:
                raise
            flocked = False  # no flock here: the record alone decides
        if not self._same_file(fd):
            return False
        owner = self._owner(fd)
        if owner is not None and not self._stale(owner, flocked):
            raise RunLockedError(self._held_by(owner, live=False))
        record = (LockOwner.current().model_dump_json() + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        os.fsync(fd)
        return True

    def _same_file(self, fd: int) -> bool:
        try:
            on_disk = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (mine.st_dev, mine.st_ino) == (on_disk.st_dev, on_disk.st_ino)

    @staticmethod
    def _owner(fd: int) -> LockOwner | None:
        """The recorded owner; None for an empty or unreadable record."""
        data = os.pread(fd, 4096, 0)
        if not data.strip():
            return None
        try:
            return LockOwner.model_validate(json.loads(data))
        except (ValueError, ValidationError):
            return None

    @staticmethod
    def _stale(owner: LockOwner, flocked: bool) -> bool:
        if owner.host is not None and owner.host != socket.gethostname():
            return False
        here = boot_id()
        if owner.boot_id and here and owner.boot_id != here:
            return True
        return flocked or not _process_exists(owner.pid)

    def _held_by(self, owner: LockOwner | None, *, live: bool) -> str:
        who = owner.describe() if owner else "another process"
        if owner is None or owner.host in (None, socket.gethostname()) or live:
            return f"{self.run} is in use by {who}; wait for it or stop it"
        return (
            f"{self.run} is in use by {who}; a lock from another host is never taken over: if "
            f"that run is no longer alive, delete {self.path} and start again"
        )
