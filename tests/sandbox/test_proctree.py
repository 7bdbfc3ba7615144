"""Waiting for a process to end: its status as soon as it exits, None while it runs."""

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
