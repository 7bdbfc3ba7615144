"""Process trees: waiting for a process to end (its status as soon as it exits, None while it
runs), and telling a subreaper with no descendant left."""

from __future__ import annotations

import subprocess
import sys

from evopolicygym.sandbox import wait_exit


def test_wait_exit_returns_the_status_of_a_process_that_ends():
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time, sys; time.sleep(0.2); sys.exit(3)"]
    )
    assert wait_exit(proc, 30) == 3
    assert proc.returncode == 3  # reaped
    assert wait_exit(proc, 1) == 3  # already reaped: still its status


def test_wait_exit_gives_up_on_a_process_that_keeps_running():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert wait_exit(proc, 0.2) is None
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


CHILDLESS = """
import os, signal, time
from evopolicygym.sandbox._proctree import become_subreaper, childless, sweep_children
become_subreaper()
seen = [childless()]
if os.fork() == 0:  # a child that starts a grandchild and leaves it behind
    if os.fork() == 0:
        time.sleep(60)
    os._exit(0)
time.sleep(0.3)  # the child has exited; the grandchild came back to this subreaper
seen.append(childless())
killed, _ended = sweep_children(set())
seen.append(childless())
print(seen, killed)
"""


def test_a_subreaper_is_childless_only_once_every_descendant_is_gone():
    done = subprocess.run([sys.executable, "-c", CHILDLESS], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # The orphaned grandchild is found and killed; the exited child, a zombie until then, is
    # signalled and reaped with it.
    assert done.stdout.split() == ["[True,", "False,", "True]", "2"]


KILLS_A_CHILD = """
import os, subprocess
from evopolicygym.sandbox._proctree import kill_descendants
child = subprocess.Popen(["sleep", "300"])
killed = kill_descendants(os.getpid())
print(killed, os.waitpid(child.pid, os.WNOHANG)[0] == child.pid)
"""


def test_killed_descendants_have_exited_when_the_kill_returns():
    # The parent can reap its killed child at once, and the child counts once: a zombie stays
    # listed among the parent's children, but is not killed again and again.
    done = subprocess.run([sys.executable, "-c", KILLS_A_CHILD], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "True"]
