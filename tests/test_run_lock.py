"""The run lock: a held flock refuses a second owner; a record from this host is stale when its
process is gone or the machine restarted; a record from another host is never taken over."""

import errno
import fcntl
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from evopolicygym.run_lock import LockOwner, RunLock, RunLockedError, boot_id


def dead_pid() -> int:
    """A process id that existed and is gone now."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def write_owner(path, **fields) -> None:
    owner = LockOwner.current().model_copy(update=fields)
    path.write_text(owner.model_dump_json() + "\n")


@pytest.fixture
def lock_path(tmp_path):
    (tmp_path / "run" / ".judge").mkdir(parents=True)
    return tmp_path / "run" / ".judge" / "lock"


@pytest.fixture
def no_flock(monkeypatch):
    """A file system without flock (NFS mounted nolock, say), which this machine does not have."""

    def unsupported(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", unsupported)


def test_the_lock_records_its_owner_and_a_clean_exit_removes_it(lock_path):
    with RunLock(lock_path):
        owner = LockOwner.model_validate(json.loads(lock_path.read_text()))
        assert owner.pid == os.getpid() and owner.host == socket.gethostname()
        assert owner.boot_id == boot_id() and owner.created_at
    assert not lock_path.exists()


def test_a_second_owner_is_refused_while_the_first_holds_the_flock(lock_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from pathlib import Path
                from evopolicygym.run_lock import RunLock
                with RunLock(Path({str(lock_path)!r})):
                    print("held", flush=True)
                    sys.stdin.readline()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match=f"in use by process {holder.pid} on host"):
            RunLock(lock_path).__enter__()
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    with RunLock(lock_path):  # released: free again
        pass


def test_the_same_process_cannot_open_a_run_twice(lock_path):
    with RunLock(lock_path), pytest.raises(RunLockedError, match=f"process {os.getpid()}"):
        RunLock(lock_path).__enter__()


def test_a_lock_left_on_this_host_is_taken_over(lock_path):
    write_owner(lock_path, pid=dead_pid())
    with RunLock(lock_path):
        assert json.loads(lock_path.read_text())["pid"] == os.getpid()
    # Alive but not holding the flock (its pid was reused, say): a live owner always holds it.
    write_owner(lock_path, pid=os.getppid())
    with RunLock(lock_path):
        pass


def test_a_lock_from_another_host_is_never_taken_over(lock_path):
    write_owner(lock_path, pid=dead_pid(), host="node-b.cluster")
    with pytest.raises(RunLockedError, match="another host is never taken over") as refused:
        RunLock(lock_path).__enter__()
    assert "node-b.cluster" in str(refused.value) and f"delete {lock_path}" in str(refused.value)
    assert json.loads(lock_path.read_text())["host"] == "node-b.cluster"  # left as it was


def test_unreadable_and_old_records_are_read_as_this_hosts(lock_path, no_flock):
    lock_path.write_text('{"pid": ')  # its owner died while writing it
    with RunLock(lock_path):
        pass
    lock_path.write_text(json.dumps({"pid": os.getppid(), "created_at": "2025-01-01"}))
    with pytest.raises(RunLockedError, match=f"process {os.getppid()} on host"):
        RunLock(lock_path).__enter__()


def test_without_flock_the_record_decides(lock_path, no_flock):
    write_owner(lock_path, pid=os.getppid())
    with pytest.raises(RunLockedError, match="wait for it or stop it"):
        RunLock(lock_path).__enter__()
    write_owner(lock_path, pid=dead_pid())
    with RunLock(lock_path):
        pass


@pytest.mark.skipif(boot_id() is None, reason="this system has no boot id")
def test_a_lock_from_before_a_restart_is_stale(lock_path, no_flock):
    write_owner(lock_path, pid=os.getppid(), boot_id="00000000-0000-0000-0000-000000000000")
    with RunLock(lock_path):
        assert json.loads(lock_path.read_text())["boot_id"] == boot_id()
