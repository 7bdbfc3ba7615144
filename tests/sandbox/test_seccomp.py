"""The seccomp filter refuses, with ``EPERM``, the calls it names (checked in a child process:
the filter cannot be removed once installed)."""

from __future__ import annotations

import errno
import json
import subprocess
import sys

import pytest

from evopolicygym.sandbox import _seccomp

pytestmark = pytest.mark.skipif(not _seccomp.supported(), reason="no filter for this machine")

# Memory outside RLIMIT_AS, or objects that outlive the process and leave its sandbox.
MEMORY_AND_IPC = [
    "memfd_create",
    "shmget",
    "shmat",
    "shmdt",
    "shmctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "mq_open",
]
# What the filter's owner does before it: a policy stays on the CPU its lane claimed.
SCHEDULING = ["sched_setaffinity"]

# Arguments (-1, 0, ...) that fail harmlessly if a call is let through: a bad pointer, a key
# without IPC_CREAT, an identifier that does not exist.
FILTERED = """
import ctypes, json, os, platform, sys
from evopolicygym.sandbox import _harden, _seccomp
_harden.no_new_privileges()
_seccomp.install_filter()
libc = ctypes.CDLL(None, use_errno=True)
numbers = _seccomp._ARCHES[platform.machine()][1]
errors = {}
for name in sys.argv[1:]:
    ctypes.set_errno(0)
    libc.syscall(numbers[name], -1, 0, 0, 0, 0)
    errors[name] = ctypes.get_errno()
os.close(os.dup(0))  # what is not named still works
print(json.dumps(errors))
"""


def test_memory_ipc_and_affinity_calls_are_refused_with_eperm():
    done = subprocess.run(
        [sys.executable, "-c", FILTERED, *MEMORY_AND_IPC, *SCHEDULING],
        capture_output=True,
        text=True,
        check=True,
    )
    errors = json.loads(done.stdout)
    assert {name for name, code in errors.items() if code != errno.EPERM} == set()
